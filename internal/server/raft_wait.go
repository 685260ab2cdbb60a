package server

import (
	"container/heap"
	"sync"
)

// commitWaiters holds the connections waiting for their effects' commit (waitAck), ordered by
// the sequence number each waits for, so that a commit wakes only the connections it settles.
// A sync.Cond broadcast per commit woke every waiting connection on every commit: with 256
// connections and up to 8 batches in flight, about three wakeups per request where one is
// needed (hotkv-bench raft, docs/benchmarks.md). It is guarded by replState.waitMu.
type commitWaiters struct {
	h waiterHeap
}

type commitWaiter struct {
	target uint64
	ch     chan struct{}
}

type waiterHeap []commitWaiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].target < h[j].target }
func (h waiterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waiterHeap) Push(x any)        { *h = append(*h, x.(commitWaiter)) }
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = commitWaiter{}
	*h = old[:len(old)-1]
	return w
}

var waiterChans = sync.Pool{New: func() any { return make(chan struct{}, 1) }}

// wait parks the caller, which holds mu, until a wake covers target or wakeAll; it returns
// with mu held again. The caller rechecks its condition: a wakeAll wakes it regardless.
func (w *commitWaiters) wait(mu *sync.Mutex, target uint64) {
	ch := waiterChans.Get().(chan struct{})
	heap.Push(&w.h, commitWaiter{target: target, ch: ch})
	mu.Unlock()
	<-ch
	waiterChans.Put(ch)
	mu.Lock()
}

// wake wakes the waiters whose target is at most durable (mu held).
func (w *commitWaiters) wake(durable uint64) {
	for len(w.h) > 0 && w.h[0].target <= durable {
		heap.Pop(&w.h).(commitWaiter).ch <- struct{}{}
	}
}

// wakeAll wakes every waiter (mu held): leadership was lost, or everything settled.
func (w *commitWaiters) wakeAll() {
	for _, x := range w.h {
		x.ch <- struct{}{}
	}
	w.h = w.h[:0]
}

package store

import (
	"sync"
	"sync/atomic"
)

// Waiter is a client blocked on keys (BLPOP and friends) until one of them can serve it.
// Data is the command layer's own description of what the client waits for.
type Waiter struct {
	DB   int
	Keys []string
	Data any
	// Ready is signalled (once) when the waiter has been served or must retry; it is
	// buffered so that signalling never blocks.
	Ready chan struct{}
	done  bool // served or removed: no longer queued (guarded by Waiters.mu)
}

type waitKey struct {
	db  int
	key string
}

// Waiters is the registry of blocked clients, per database and key, in the order they
// blocked: a key that receives elements serves them first come, first served, as Redis does.
//
// Lock order: a shard lock, then mu. Add and Wake run with the keys' shard locks held, so an
// element pushed after a client checked its keys and found them empty cannot miss it; Remove
// needs no shard lock.
type Waiters struct {
	mu     sync.Mutex
	queues map[waitKey][]*Waiter
	count  atomic.Int64 // blocked clients, for a lock-free "anyone waiting?" on every push
}

// Any reports whether any client is blocked, so writers skip the registry when none is.
func (ws *Waiters) Any() bool { return ws.count.Load() > 0 }

// Count is the number of blocked clients (INFO blocked_clients).
func (ws *Waiters) Count() int64 { return ws.count.Load() }

// Add queues w on each of its keys.
func (ws *Waiters) Add(w *Waiter) {
	if w.Ready == nil {
		w.Ready = make(chan struct{}, 1)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.queues == nil {
		ws.queues = map[waitKey][]*Waiter{}
	}
	for _, k := range w.Keys {
		wk := waitKey{w.DB, k}
		ws.queues[wk] = append(ws.queues[wk], w)
	}
	w.done = false
	ws.count.Add(1)
}

// unlink removes w from all its queues. Caller holds mu.
func (ws *Waiters) unlink(w *Waiter) {
	for _, k := range w.Keys {
		wk := waitKey{w.DB, k}
		q := ws.queues[wk]
		for i, x := range q {
			if x == w {
				q = append(q[:i], q[i+1:]...)
				break
			}
		}
		if len(q) == 0 {
			delete(ws.queues, wk)
		} else {
			ws.queues[wk] = q
		}
	}
	w.done = true
	ws.count.Add(-1)
}

// Remove takes w out of the registry (timeout, disconnection) and reports whether it was
// still waiting; false means it was served (or told to retry) first, and Ready is signalled.
func (ws *Waiters) Remove(w *Waiter) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.done {
		return false
	}
	ws.unlink(w)
	return true
}

// Waiting reports whether some client is blocked on key in db.
func (ws *Waiters) Waiting(db int, key []byte) bool {
	if !ws.Any() {
		return false
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return len(ws.queues[waitKey{db, string(key)}]) > 0
}

// Wake offers key, which has just received elements, to the clients blocked on it, oldest
// first: serve is called for each until it returns false (nothing left for it to take); a
// waiter it returns true for is dequeued from all its keys and signalled. Caller holds the
// key's shard lock.
func (ws *Waiters) Wake(db int, key []byte, serve func(w *Waiter) bool) {
	if !ws.Any() {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	wk := waitKey{db, string(key)}
	for len(ws.queues[wk]) > 0 {
		w := ws.queues[wk][0]
		if !serve(w) {
			return
		}
		ws.unlink(w)
		w.Ready <- struct{}{}
	}
}

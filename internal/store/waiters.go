package store

import (
	"strings"
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

	// replaced are keys whose stream went while mu was busy (KeyReplaced): whoever holds mu
	// rechecks their waiters before letting it go (unlock). A stream can go while mu is held
	// by the same goroutine (a serve callback's lookup expiring one), so KeyReplaced never
	// waits for mu.
	pmu      sync.Mutex
	replaced []waitKey
	nrepl    atomic.Int64
}

// unlock releases mu after rechecking the waiters of streams replaced meanwhile; it takes mu
// again for stragglers that arrived after it let go, unless another holder will see them.
func (ws *Waiters) unlock() {
	for {
		if ws.nrepl.Load() > 0 {
			ws.pmu.Lock()
			keys := ws.replaced
			ws.replaced = nil
			ws.nrepl.Store(0)
			ws.pmu.Unlock()
			for _, k := range keys {
				ws.recheck(ws.queues[k], false)
			}
		}
		ws.mu.Unlock()
		if ws.nrepl.Load() == 0 || !ws.mu.TryLock() {
			return
		}
	}
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
	defer ws.unlock()
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
	defer ws.unlock()
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
	defer ws.unlock()
	return len(ws.queues[waitKey{db, string(key)}]) > 0
}

// WakeResult is a WakeEach callback's decision for one waiter.
type WakeResult int

const (
	// WakeSkip leaves the waiter queued and goes on to the next one: it waits for something
	// this key cannot give it now (an XREAD whose ID is ahead, a BLPOP on a stream key).
	WakeSkip WakeResult = iota
	// WakeServed dequeues the waiter from all its keys and signals it.
	WakeServed
	// WakeStop leaves the waiter queued and ends the wake: nothing is left for anyone.
	WakeStop
)

// WakeEach offers key to every client blocked on it, oldest first, letting serve skip waiters
// that cannot be served, which Wake cannot: every client blocked in XREAD on a stream gets the
// new entries, and a key's queue may mix clients waiting for different types, as in Redis.
// Caller holds the key's shard lock.
func (ws *Waiters) WakeEach(db int, key []byte, serve func(w *Waiter) WakeResult) {
	if !ws.Any() {
		return
	}
	ws.mu.Lock()
	defer ws.unlock()
	wk := waitKey{db, string(key)}
	for i := 0; i < len(ws.queues[wk]); {
		w := ws.queues[wk][i]
		switch serve(w) {
		case WakeServed:
			ws.unlink(w) // w leaves this queue: the next waiter is now at i
			w.Ready <- struct{}{}
		case WakeStop:
			return
		default:
			i++
		}
	}
}

// Rechecker is implemented by a waiter's Data when the client must look at its keys again
// after their values are deleted or replaced, not only when they receive elements: a blocked
// XREADGROUP fails once its stream is gone (Redis 7.0). Recheck returns true to have the waiter
// dequeued and signalled (it records that it must run again); whole says the whole database
// was flushed or swapped rather than one key deleted or overwritten.
type Rechecker interface {
	Recheck(whole bool) bool
}

// KeyReplaced tells the clients blocked on key in db that its stream was deleted or replaced.
// Caller holds the key's shard lock.
func (ws *Waiters) KeyReplaced(db int, key string) {
	if !ws.Any() {
		return
	}
	ws.pmu.Lock()
	ws.replaced = append(ws.replaced, waitKey{db, strings.Clone(key)}) // key aliases the entry
	ws.nrepl.Add(1)
	ws.pmu.Unlock()
	if ws.mu.TryLock() {
		ws.unlock()
	}
}

// DBReplaced tells every client blocked on a key of db that the database was flushed or
// swapped. It takes the registry's lock only.
func (ws *Waiters) DBReplaced(db int) {
	if !ws.Any() {
		return
	}
	ws.mu.Lock()
	defer ws.unlock()
	var hit []*Waiter
	for wk, q := range ws.queues {
		if wk.db == db {
			hit = append(hit, q...)
		}
	}
	ws.recheck(hit, true)
}

// recheck asks each waiter of q (a snapshot; unlinking changes the queues) whether it must run
// again. Caller holds mu.
func (ws *Waiters) recheck(q []*Waiter, whole bool) {
	q = append([]*Waiter(nil), q...)
	for _, w := range q {
		if w.done {
			continue
		}
		if r, ok := w.Data.(Rechecker); ok && r.Recheck(whole) {
			ws.unlink(w)
			w.Ready <- struct{}{}
		}
	}
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
	defer ws.unlock()
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

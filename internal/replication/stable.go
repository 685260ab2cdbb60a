package replication

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
)

// guardedStable is the StableStore handed to hashicorp/raft (raft-wal's, over its bolt meta
// database), guarded against use after Close. NetworkTransport answers heartbeats on its own
// goroutines, outside the Raft loop that Shutdown stops, so a heartbeat from a new leader can
// arrive while a node closes (a rebuild after lost leadership, a shutdown). If it carries a
// newer term, raft stores it, and raft panics when that write fails ("failed to save current
// term: database not open"), which took the whole server down in a chaos test. Once closed,
// writes are dropped: only that heartbeat path can still call them, a heartbeat carries no
// entries, and the term it would store is learned again by the node that reopens the log.
type guardedStable struct {
	s      raft.StableStore
	mu     sync.RWMutex
	closed bool
}

// close waits for the calls in progress and makes the later ones no-ops.
func (g *guardedStable) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

func (g *guardedStable) Set(key, val []byte) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.s.Set(key, val)
}

func (g *guardedStable) Get(key []byte) ([]byte, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil, errStableClosed
	}
	return g.s.Get(key)
}

func (g *guardedStable) SetUint64(key []byte, val uint64) error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return nil
	}
	return g.s.SetUint64(key, val)
}

func (g *guardedStable) GetUint64(key []byte) (uint64, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.closed {
		return 0, errStableClosed
	}
	return g.s.GetUint64(key)
}

// errStableClosed answers reads after close.
var errStableClosed = errors.New("the Raft node is closed")

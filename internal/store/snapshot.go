package store

import (
	"errors"
	"sort"
	"time"

	"github.com/hotkv/hotkv/internal/ratelimit"
)

// Snapshot support: a background save cannot fork (Go), and must not stop the world, so it
// walks the keyspace one shard at a time in the store's lock order (database, then shard),
// copying each shard's live entries under that shard's lock and doing its I/O with no lock
// held. A synchronous SAVE runs the same walk while its caller holds every lock.
//
// The cut is per shard: each shard is captured as of the moment the walk locks it. A write
// confined to one shard is therefore either wholly in the snapshot or wholly out of it.
//
// Multi-shard atomicity across a BGSAVE cut: a write that spans shards (RENAME, MSET,
// MOVE/COPY/SWAPDB across databases, EXEC touching several shards) must never be captured
// half-applied. The dispatcher guarantees it (command.Ctx's lock helpers): after taking its
// locks, a multi-shard write reads SnapshotProgress, and if the cut lies in (lowest, highest]
// of its shards it releases its locks, waits until the walk has passed its highest shard, and
// locks again. Progress is published before a shard is unlocked, so a writer holding a shard
// never mistakes a captured shard for an uncaptured one. Still open: named limiters are walked
// after the keyspace without this protocol, so an EXEC mixing limiter commands and key writes
// can be cut between the two (limiters take no shard locks).

// snapshotIdle is SnapshotProgress's "no walk" value.
const snapshotIdle = -1

// SnapshotProgress reports whether a snapshot walk is in progress and, if so, how many shards
// it has finished, counting in global lock order: shard j of database i is number
// i*NumShards()+j, and every shard numbered below done has been captured. It is safe to call
// with any locks held.
func (st *Store) SnapshotProgress() (walking bool, done int) {
	c := st.snapCut.Load()
	if c == snapshotIdle {
		return false, 0
	}
	return true, int(c)
}

// SnapshotWalks counts the walks that have ended (finished or not). It is raised before
// SnapshotProgress stops reporting a walk, so a reader that sees no walk and the same count as
// before one started knows it has not started, and a higher count that it has ended.
func (st *Store) SnapshotWalks() int64 { return st.snapWalks.Load() }

// ErrSnapshotBusy is SnapshotWalk's error when another walk is in progress.
var ErrSnapshotBusy = errors.New("store: a snapshot walk is already in progress")

// SnapshotWalk visits every live key (entries expired at now are skipped, not deleted) for a
// snapshot, database by database and shard by shard. Unless held is set (the caller already
// holds every shard lock, as SAVE does), each shard is locked only while visit runs on its
// entries; visit must not block or take other shard locks. after runs once per shard with no
// lock held (the writer flushes its buffer there); an error from it, or visit returning false,
// ends the walk with that error (visit's stop returns ErrWalkStopped).
//
// Only one walk runs at a time; its progress is published for SnapshotProgress.
func (st *Store) SnapshotWalk(now int64, held bool, visit func(db int, e *Entry) bool, after func() error) error {
	if !st.snapCut.CompareAndSwap(snapshotIdle, 0) {
		return ErrSnapshotBusy
	}
	defer func() {
		st.snapWalks.Add(1)
		st.snapCut.Store(snapshotIdle)
	}()
	idx := int64(0)
	// Without every lock held (BGSAVE), a shard's live entries are copied out under its lock
	// and encoded after it is released: copying costs a small fraction of encoding, so
	// commands on the shard wait for the copy only (raw string bytes are cloned, since
	// APPEND and SETRANGE change them in place; keys are immutable and shared).
	var scratch []Entry
	var arena []byte // raw string bytes of the shard being copied; self/next index into it
	for _, db := range st.dbs {
		for j := range db.shards {
			s := &db.shards[j]
			ok := true
			if held {
				s.EachUnordered(now, func(e *Entry) bool {
					ok = visit(db.ID, e)
					return ok
				})
				idx++
				st.snapCut.Store(idx)
			} else {
				s.Lock()
				scratch = scratch[:0]
				arena = arena[:0]
				s.EachUnordered(now, func(e *Entry) bool {
					c := Entry{kptr: e.kptr, klen: e.klen, expireAt: e.expireAt, Val: e.Val}
					if p, ok := e.Val.Obj().(Payloader); ok {
						// An aggregate is encoded now, under the lock, into the arena.
						start := len(arena)
						arena = p.AppendPayload(arena)
						c.self, c.next = int32(start), int32(len(arena)-start)
						c.Val = Value{Kind: e.Val.Kind, Raw: true}
					} else if b := e.Val.Bytes(); b != nil {
						// Raw bytes go into one arena per shard: no allocation per key
						// while the lock is held. The entry points into it below.
						c.self = int32(len(arena))
						c.next = int32(len(b))
						arena = append(arena, b...)
					} else {
						c.next = -1
					}
					scratch = append(scratch, c)
					return true
				})
				idx++
				// Publish progress before unlocking: a writer that locks this shard next
				// must already see it as captured (the dispatcher's straddle check).
				st.snapCut.Store(idx)
				s.Unlock()
				start := time.Now()
				for i := range scratch {
					c := &scratch[i]
					if c.next >= 0 {
						raw, kind := c.Val.Raw, c.Val.Kind
						c.Val.SetBytes(arena[c.self : c.self+c.next : c.self+c.next])
						c.Val.Raw, c.Val.Kind = raw, kind
					}
					if ok = visit(db.ID, c); !ok {
						break
					}
				}
				clear(scratch)
				// Half duty cycle: rest as long as the shard took to encode, so a background
				// save leaves the cores to the commands it runs beside (ARCHITECTURE.md §5:
				// snapshots must not stop the world, nor starve it).
				time.Sleep(time.Since(start))
			}
			if !ok {
				return ErrWalkStopped
			}
			if after != nil {
				if err := after(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ErrWalkStopped is returned by the walks when the visitor asked to stop.
var ErrWalkStopped = errors.New("store: walk stopped by the visitor")

// Restore adds a key read from a snapshot, reporting false if the key is already present
// (a snapshot never holds a key twice). It takes the key's shard lock itself.
func (db *DB) Restore(key []byte, v Value, expireAt, now int64) bool {
	s := db.ShardFor(key)
	s.Lock()
	defer s.Unlock()
	if db.Lookup(key, now) != nil {
		return false
	}
	db.Set(key, v, expireAt, false, now)
	return true
}

// LockAll locks every shard of every database in the store's lock order, for a server task
// that needs the whole keyspace still (the final save at shutdown). UnlockAll releases them.
func (st *Store) LockAll() {
	for _, db := range st.dbs {
		for j := range db.shards {
			db.shards[j].Lock()
		}
	}
}

// UnlockAll releases what LockAll took.
func (st *Store) UnlockAll() {
	for i := len(st.dbs) - 1; i >= 0; i-- {
		db := st.dbs[i]
		for j := len(db.shards) - 1; j >= 0; j-- {
			db.shards[j].Unlock()
		}
	}
}

// All returns every limiter sorted by name, for snapshots. Limiters created or dropped
// afterwards are not reflected.
func (ls *Limiters) All() []*Limiter {
	ls.mu.RLock()
	out := make([]*Limiter, 0, len(ls.byName))
	for _, l := range ls.byName {
		out = append(out, l)
	}
	ls.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// EachState visits every key with live state at nowMs: fn gets the TAT in ns (bucket
// limiters), the live sliding-window entries or the live concurrency leases (one of them
// non-nil), which alias the limiter's memory and are valid only during fn. Dead state is skipped, not reclaimed. Unless held (the caller holds
// LockState), the walk goes one internal shard at a time under that shard's lock, and after
// runs with no lock held after each shard; its error ends the walk.
func (l *Limiter) EachState(nowMs int64, held bool, fn func(key string, tat int64, entries []ratelimit.WindowEntry, leases []ratelimit.Lease), after func() error) error {
	now := nowMs * ratelimit.NsPerMs
	for i := range l.shards {
		s := &l.shards[i]
		if !held {
			s.mu.Lock()
		}
		cut := nowMs - l.WindowMs // read under the lock: RATELIMIT.UPDATE may change it
		for k, tat := range s.tat {
			if *tat > now {
				fn(k, *tat, nil, nil)
			}
		}
		for k, w := range s.log {
			j := 0
			for j < len(w.Entries) && w.Entries[j].TS <= cut {
				j++
			}
			if j < len(w.Entries) {
				fn(k, 0, w.Entries[j:], nil)
			}
		}
		for k, ls := range s.lease {
			j := 0
			for j < len(ls.Held) && ls.Held[j].TS <= cut {
				j++
			}
			if j < len(ls.Held) {
				fn(k, 0, nil, ls.Held[j:])
			}
		}
		if held {
			continue
		}
		s.mu.Unlock()
		if after != nil {
			if err := after(); err != nil {
				return err
			}
		}
	}
	return nil
}

// LockState freezes the limiter: every key's state and the totals (which change under the
// key's lock), for an exact snapshot of it (SAVE). UnlockState releases it.
func (l *Limiter) LockState() {
	for i := range l.shards {
		l.shards[i].mu.Lock()
	}
}

// UnlockState releases LockState.
func (l *Limiter) UnlockState() {
	for i := len(l.shards) - 1; i >= 0; i-- {
		l.shards[i].mu.Unlock()
	}
}

// RestoreState sets a key's state read from a snapshot, as SetState does without touching
// the totals, and reports false if the key already has state (a snapshot never holds a key
// twice). The limiter keeps entries.
func (l *Limiter) RestoreState(key []byte, tat int64, entries []ratelimit.WindowEntry) bool {
	s := l.shard(key)
	s.mu.Lock()
	_, dupTAT := s.tat[string(key)]
	_, dupLog := s.log[string(key)]
	_, dupLease := s.lease[string(key)]
	s.mu.Unlock()
	if dupTAT || dupLog || dupLease {
		return false
	}
	l.SetState(key, tat, entries, 0, 0)
	return true
}

// RestoreLeases is RestoreState for a concurrency key: leases (normalized, ascending ids)
// become the key's state and raise the shard's lease-id counter, so ids issued after a load
// stay above every loaded one.
func (l *Limiter) RestoreLeases(key []byte, leases []ratelimit.Lease) bool {
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.lease[string(key)]; dup {
		return false
	}
	s.setLeases(key, leases)
	return true
}

package store

import (
	"sync"
	"sync/atomic"
)

// Watcher is one client's WATCHed keys: MULTI/EXEC's optimistic lock. A write to any of them
// by anyone (the client itself included), their expiry, or a FLUSH or SWAPDB that changes them
// marks the watcher dirty, and its next EXEC fails with a null reply, as in Redis.
type Watcher struct {
	dirty atomic.Bool
	keys  []*watchedKey // guarded by Watches.mu
}

// watchedKey is one key of one watcher. expired records that the key was already logically
// expired (present but past its time) when WATCH ran: Redis 7.0 then treats its deletion as no
// change, since the client saw it as absent.
type watchedKey struct {
	w       *Watcher
	db      int
	key     string
	expired bool
}

// Dirty reports whether a watched key changed since WATCH.
func (w *Watcher) Dirty() bool { return w.dirty.Load() }

// Watching reports whether the watcher holds any key.
func (w *Watcher) Watching() bool { return len(w.keys) > 0 }

// Keys calls fn for each watched key (db, key); the caller holds no lock of the registry.
// EXEC uses it to lock the watched keys' shards along with the transaction's own.
func (ws *Watches) Keys(w *Watcher, fn func(db int, key string)) {
	ws.mu.Lock()
	keys := append([]*watchedKey(nil), w.keys...)
	ws.mu.Unlock()
	for _, k := range keys {
		fn(k.db, k.key)
	}
}

// Watches is the registry of watched keys, per database and key, as Redis's
// db->watched_keys. Writers call Touch for each key they change; when nobody watches anything
// (the common case) that is one atomic load.
//
// Lock order: a shard lock, then mu. Touch runs under the touched key's shard lock, so a
// write and the EXEC that checks the watcher (holding the watched keys' shards) are ordered.
type Watches struct {
	mu    sync.Mutex
	m     map[waitKey][]*watchedKey
	count atomic.Int64 // watched (client, key) pairs
}

// Any reports whether any key is watched, so writers skip Touch when none is.
func (ws *Watches) Any() bool { return ws.count.Load() > 0 }

// Watch adds key of db to w, unless w already watches it. The caller holds the key's shard
// lock, so that the key's expired-at-WATCH state is read consistently.
func (ws *Watches) Watch(w *Watcher, db *DB, key []byte, now int64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, k := range w.keys {
		if k.db == db.ID && k.key == string(key) {
			return
		}
	}
	if ws.m == nil {
		ws.m = map[waitKey][]*watchedKey{}
	}
	wk := &watchedKey{w: w, db: db.ID, key: string(key), expired: db.Stale(key, now)}
	w.keys = append(w.keys, wk)
	id := waitKey{db.ID, wk.key}
	ws.m[id] = append(ws.m[id], wk)
	ws.count.Add(1)
}

// Unwatch forgets every key of w and clears its dirty mark (UNWATCH, EXEC, DISCARD, RESET,
// disconnection).
func (ws *Watches) Unwatch(w *Watcher) {
	w.dirty.Store(false)
	if len(w.keys) == 0 {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, wk := range w.keys {
		id := waitKey{wk.db, wk.key}
		list := ws.m[id]
		for i, x := range list {
			if x == wk {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(ws.m, id)
		} else {
			ws.m[id] = list
		}
	}
	ws.count.Add(-int64(len(w.keys)))
	w.keys = nil
}

// Touch marks every watcher of key in db dirty: the key was written, deleted or expired. The
// caller holds the key's shard lock and calls it after the change, so that a key watched
// while already expired and now gone counts as unchanged (Redis 7.0's touchWatchedKey).
func (ws *Watches) Touch(db *DB, key []byte) {
	if !ws.Any() {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, wk := range ws.m[waitKey{db.ID, string(key)}] {
		if wk.expired {
			if !db.present(key) {
				wk.expired = false // the stale key it saw as absent is gone: no change
				continue
			}
		}
		wk.w.dirty.Store(true)
	}
}

// TouchAll marks dirty the watchers of emptied's keys that FLUSHDB/FLUSHALL (replaced nil) or
// SWAPDB (replaced: the database whose contents take emptied's place) changes, before the
// change, with every shard of both databases held; the rules are Redis 7.0's
// touchAllWatchedKeysInDb, stale keys included.
func (ws *Watches) TouchAll(emptied, replaced *DB, now int64) {
	if !ws.Any() {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for id, list := range ws.m {
		if id.db != emptied.ID {
			continue
		}
		key := []byte(id.key)
		inEmptied := emptied.present(key)
		inReplaced := replaced != nil && replaced.present(key)
		if !inEmptied && !inReplaced {
			continue
		}
		for _, wk := range list {
			switch {
			case wk.expired && !inReplaced:
				wk.expired = false // an expired key now deleted: no logical change
				continue
			case wk.expired && replaced.Stale(key, now):
				continue // an expired key replaced by another expired key
			case !wk.expired && !inEmptied && replaced.Stale(key, now):
				wk.expired = true // a missing key replaced by an expired one: still absent
				continue
			}
			wk.w.dirty.Store(true)
		}
	}
}

// ExpiredSince reports whether a key w watched live has expired by now (still present, past
// its time): EXEC then fails, as Redis's isWatchedKeyExpired. The caller holds the shard locks
// of every watched key.
func (ws *Watches) ExpiredSince(w *Watcher, st *Store, now int64) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, wk := range w.keys {
		if !wk.expired && st.DB(wk.db).Stale([]byte(wk.key), now) {
			return true
		}
	}
	return false
}

// present reports whether key is in db's table, expired or not. Caller holds the shard lock.
func (db *DB) present(key []byte) bool {
	h := db.store.Hash(key)
	return db.shards[db.store.shardOf(h)].dict.find(key, h) != nil
}

// Stale reports whether key is present but past its expiry time (Redis's keyIsExpired), without
// deleting it. Caller holds the shard lock.
func (db *DB) Stale(key []byte, now int64) bool {
	h := db.store.Hash(key)
	e := db.shards[db.store.shardOf(h)].dict.find(key, h)
	return e != nil && e.expireAt != 0 && now > e.expireAt
}

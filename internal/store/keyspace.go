package store

import "bytes"

// Cloner is implemented by aggregate values kept in Value.Obj (lists, hashes, sets ...) so that
// COPY can duplicate them: a copy must never share mutable structure with its source, or a
// write to one key would show through the other.
type Cloner interface{ Clone() any }

// ValueCloner is implemented by the views of packed and direct values (RegisterInline): their
// copy is a whole Value, not something to box.
type ValueCloner interface{ CloneValue() Value }

// CloneValue returns a copy of v that shares no mutable memory with it, for COPY. String bytes
// are copied; an Obj is duplicated through ValueCloner or Cloner. An Obj that does not implement Cloner is
// shared as is, which is only correct for immutable values: every mutable aggregate type must
// implement Cloner.
func CloneValue(v Value) Value {
	if b := v.Bytes(); b != nil {
		return BytesValue(bytes.Clone(b))
	}
	if cl, ok := v.Obj().(ValueCloner); ok {
		return cl.CloneValue()
	}
	if cl, ok := v.Obj().(Cloner); ok {
		return ObjValue(v.Kind, cl.Clone())
	}
	return v
}

// MoveEntry re-files e's value under key in dst, for RENAME (dst is db) and MOVE (another
// database), replacing whatever key held there, and deletes e. The value itself moves, not a
// copy, and the expiry and access statistics go with it, as Redis moves the object. It returns
// the new entry. Caller holds the locks of e's shard and of key's shard in dst; e must not be
// key's own entry in dst.
func (db *DB) MoveEntry(e *Entry, dst *DB, key []byte, now int64) *Entry {
	v, at, lru := e.Val, e.expireAt, e.lru
	db.Remove(e)
	ne := dst.Set(key, v, at, false, now)
	ne.lru = lru
	return ne
}

// LookupReadNoTouch is LookupRead for commands that inspect a key without using it (TTL, TYPE,
// EXISTS, OBJECT): it counts keyspace hits and misses but leaves the access time and frequency
// alone, as Redis's LOOKUP_NOTOUCH does. Caller holds the key's shard lock.
func (db *DB) LookupReadNoTouch(key []byte, now int64) *Entry {
	s, e := db.find(key, db.store.Hash(key), now)
	if e == nil {
		s.Misses++
	} else {
		s.Hits++
	}
	return e
}

// Clear deletes every key of the shard and reports how many there were (expired ones not yet
// reclaimed included). It is O(1): the old table is left to the garbage collector, which is
// what makes FLUSHDB ASYNC free. Caller holds the lock; Global commands that must not take
// locks behind a transaction's back use it instead of DB.Flush.
func (s *Shard) Clear() int {
	n := s.dict.count
	s.reset()
	return n
}

package store

import "math"

// Element expiry (Redis 7.4's hash field TTLs): a value whose elements expire on their own
// implements FieldExpirer through its Obj view. Like keys (ARCHITECTURE.md §4), expired
// elements go lazily, when a command touches the value (DB.ExpireFieldsIfDue), and actively:
// each shard files such keys in a second wheel by the second their earliest element is due,
// and the expiry cycle visits them in the same bounded steps as keys. A key whose elements all
// expired is deleted.

// FieldExpirer is implemented by the Obj views of values with expiring elements.
type FieldExpirer interface {
	// NextFieldExpiry returns the absolute Unix ms at which the earliest element expires, 0
	// when none has a TTL. It may be earlier than the truth (after the element went), never
	// later.
	NextFieldExpiry() int64
	// ExpireFields deletes the elements that expired at now (expiry < now, as keys), calling
	// deleted for each while its name is still valid, and returns the next expiry (0: none).
	ExpireFields(now int64, deleted func(field string)) int64
}

// watchFields files e in the field wheel for time at, unless it is filed at that second or
// earlier already (the earlier visit files it again at its real time). Caller holds the lock.
func (s *Shard) watchFields(e *Entry, at int64) {
	sec := at / 1000
	sec = min(max(sec, 0), math.MaxUint32-1)
	if cur, ok := s.fieldAt[e.self]; ok && int64(cur) <= sec {
		return
	}
	if s.fieldAt == nil {
		s.fieldAt = make(map[int32]uint32)
	}
	s.fields.add(sec, e.self)
	s.fieldAt[e.self] = uint32(sec)
	s.pending.Add(1)
}

// WatchFields tells the active cycle that an element of e's value expires at (absolute Unix
// ms): commands that set element TTLs call it. Caller holds the lock.
func (db *DB) WatchFields(e *Entry, at int64) {
	if at != 0 {
		db.shards[db.store.ShardIndex(keyBytes(e.Key()))].watchFields(e, at)
	}
}

// ExpireFieldsIfDue deletes e's expired elements when its earliest one is due at now,
// reporting each through OnFieldExpire, and deletes the key when that emptied it; it reports
// whether the key is gone. Commands on values with expiring elements call it before anything
// else, so that they never see an expired element. Caller holds the lock.
func (db *DB) ExpireFieldsIfDue(e *Entry, now int64) (gone bool) {
	fe, ok := e.Val.Obj().(FieldExpirer)
	if !ok {
		return false
	}
	if at := fe.NextFieldExpiry(); at == 0 || now <= at || db.readOnly {
		// A ReadOnlyView deletes nothing: the due fields stay visible until the leader's
		// expiry effects reach this replica (docs/replication.md, follower reads).
		return false
	}
	return db.expireFields(&db.shards[db.store.ShardIndex(keyBytes(e.Key()))], e, fe, now)
}

// expireFields runs fe's expiry and deletes the emptied key; otherwise it files the key again
// for its next expiry.
func (db *DB) expireFields(s *Shard, e *Entry, fe FieldExpirer, now int64) (gone bool) {
	key := e.Key()
	var deleted func(string)
	if f := db.store.OnFieldExpire; f != nil {
		deleted = func(field string) { f(db.ID, key, field) }
	}
	next := fe.ExpireFields(now, deleted)
	if lener, ok := fe.(interface{ Len() int }); ok && lener.Len() == 0 {
		s.remove(e)
		return true
	}
	if next != 0 {
		s.watchFields(e, next)
	}
	return false
}

// fieldStep is expireStep for the field wheel: it visits due keys and expires their due
// elements. Caller holds the lock.
func (db *DB) fieldStep(s *Shard, now int64, budget int) (examined, deleted int) {
	w := &s.fields
	for examined < budget {
		if w.cur == nil {
			if len(w.buckets) == 0 {
				w.buckets = nil
				return
			}
			if now <= w.cursor*1000+999 {
				return
			}
			keys, ok := w.buckets[w.cursor]
			if !ok {
				w.cursor++
				if w.misses++; w.misses > 64 {
					w.misses = 0
					first := int64(-1)
					for sec := range w.buckets {
						if first < 0 || sec < first {
							first = sec
						}
					}
					w.cursor = first
				}
				continue
			}
			w.misses = 0
			delete(w.buckets, w.cursor)
			w.cur, w.curSec, w.curIdx = keys, w.cursor, 0
			w.cursor++
		}
		idx := w.cur[w.curIdx]
		w.curIdx++
		if w.curIdx == len(w.cur) {
			w.cur = nil
		}
		examined++
		s.pending.Add(-1)
		if at, ok := s.fieldAt[idx]; !ok || int64(at) != w.curSec {
			continue // the key went, or is filed elsewhere: a stale registration
		}
		delete(s.fieldAt, idx)
		if int(idx) >= s.dict.used {
			continue
		}
		e := s.dict.at(idx)
		fe, ok := e.Val.Obj().(FieldExpirer)
		if e.next < 0 || !ok {
			continue
		}
		if e.expireAt != 0 && now > e.expireAt {
			db.expire(s, e) // the whole key expired meanwhile
			continue
		}
		if next := fe.NextFieldExpiry(); next != 0 && now <= next {
			s.watchFields(e, next)
			continue
		}
		if db.expireFields(s, e, fe, now) {
			deleted++
		}
	}
	return
}

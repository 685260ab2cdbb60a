package store

import (
	"context"
	"math"
	"time"
)

// wheel finds keys whose time has come without scanning the keyspace. Keys are filed by the
// second they expire in; the exact expiry stays in the entry, so a key is only ever "looked at
// around time T". When a key's expiry moves later (every allowed GCRA call does this) nothing
// happens here: the visit at the old second files it again at its real time. Only a move to an
// earlier second adds a registration. This keeps the rate-limit hot path free of wheel work
// (ARCHITECTURE.md §4).
//
// Registrations are slab indexes (4 bytes a key), not keys. A registration can outlive its
// key and even find the slot reused by another key; the visit then only acts on an entry whose
// own wheelAt names this very second, which means that entry is filed here anyway, so acting
// early on its behalf is harmless and the stale registration is simply dropped.
type wheel struct {
	buckets map[int64][]int32
	// cursor is the first second that may still hold registrations: every bucket below it is
	// empty.
	cursor int64
	// The bucket being drained, so a large bucket is processed over several short steps.
	cur    []int32
	curSec int64
	curIdx int
	misses int
}

func (w *wheel) add(sec int64, idx int32) {
	if w.buckets == nil {
		w.buckets = make(map[int64][]int32)
		w.cursor = sec
	}
	if sec < w.cursor {
		w.cursor = sec
	}
	w.buckets[sec] = append(w.buckets[sec], idx)
}

// setExpire sets e's expiry and files it in the wheel when needed.
func (s *Shard) setExpire(e *Entry, at int64) {
	if (e.expireAt == 0) != (at == 0) {
		if at != 0 {
			s.volatile++
		} else {
			s.volatile--
		}
	}
	e.expireAt = at
	if at == 0 {
		return // a pending registration finds no expiry and is dropped
	}
	sec := at / 1000
	if sec >= math.MaxUint32 {
		return // past the year 2106: lazy expiry only
	}
	if e.wheelAt != 0 && int64(e.wheelAt) <= sec {
		return
	}
	s.wheel.add(sec, e.self)
	e.wheelAt = uint32(sec)
	s.pending.Add(1)
}

// expireStep processes due wheel registrations until budget keys were examined or nothing is
// due at now. It returns how many keys it examined and deleted. Caller holds the lock.
func (db *DB) expireStep(s *Shard, now int64, budget int) (examined, deleted int) {
	w := &s.wheel
	for examined < budget {
		if w.cur == nil {
			if w.buckets == nil || len(w.buckets) == 0 {
				w.buckets = nil
				return
			}
			// A bucket is due once every time in its second has passed.
			if now <= w.cursor*1000+999 {
				return
			}
			keys, ok := w.buckets[w.cursor]
			if !ok {
				w.cursor++
				if w.misses++; w.misses > 64 {
					// Skip a long empty stretch (idle hours, or a clock set far back) at once.
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
		s.ExpireVisited++

		if int(idx) >= s.dict.used {
			continue // the table was emptied and shrank since
		}
		e := s.dict.at(idx)
		if e.next < 0 || int64(e.wheelAt) != w.curSec {
			continue // deleted, or filed again elsewhere: a stale registration
		}
		e.wheelAt = 0
		switch {
		case e.expireAt == 0:
		case now > e.expireAt:
			db.expire(s, e)
			deleted++
		default:
			s.setExpire(e, e.expireAt)
		}
	}
	return
}

// ExpireStats are the active expiry cycle's counters, for INFO stats.
type ExpireStats struct {
	Cycles          int64
	TimeCapReached  int64
	StalePercent    float64
	LastCycleMicros int64
}

// ActiveExpire runs the active expiry cycle until ctx is done: every period it visits every
// shard with due registrations and reclaims expired keys in steps of stepKeys, holding a
// shard's lock for one step at a time so that no command waits long. A cycle stops after
// budget (Redis gives its slow cycle 25% of a core: 25 ms per 100 ms) and resumes next period.
func (st *Store) ActiveExpire(ctx context.Context, period, budget time.Duration, stepKeys int, stats func(ExpireStats)) {
	t := time.NewTicker(period)
	defer t.Stop()
	var es ExpireStats
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		done := func() {}
		if g := st.ExpireGate; g != nil {
			var ok bool
			if done, ok = g(); !ok {
				continue
			}
		}
		start := time.Now()
		now := st.Clock.NowMs()
		var examined, deleted int
		capped := false
		for more := true; more && !capped; {
			more = false
			for _, db := range st.dbs {
				for i := range db.shards {
					s := &db.shards[i]
					if s.pending.Load() == 0 {
						continue
					}
					s.Lock()
					ex, del := db.expireStep(s, now, stepKeys)
					fex, fdel := db.fieldStep(s, now, stepKeys)
					s.Unlock()
					examined += ex + fex
					deleted += del + fdel
					if ex == stepKeys || fex == stepKeys {
						more = true
					}
				}
				if time.Since(start) > budget {
					capped = true
					break
				}
			}
		}
		es.Cycles++
		if es.Cycles%100 == 0 && st.Limiters != nil {
			// Dead limiter state is no state (spec §8.3); reclaim some of it about once a
			// second so limiters with many one-off keys do not grow without bound.
			st.Limiters.Sweep(now, 64)
		}
		done()
		if capped {
			es.TimeCapReached++
		}
		if examined > 0 {
			es.StalePercent = float64(deleted) * 100 / float64(examined)
		}
		es.LastCycleMicros = time.Since(start).Microseconds()
		if stats != nil {
			stats(es)
		}
	}
}

// ExpireNow runs expiry steps over every shard until nothing is due at the clock's time; tests
// and DEBUG use it to make reclamation deterministic.
func (st *Store) ExpireNow() int {
	now := st.Clock.NowMs()
	total := 0
	for _, db := range st.dbs {
		for i := range db.shards {
			s := &db.shards[i]
			for s.pending.Load() > 0 {
				s.Lock()
				ex, del := db.expireStep(s, now, 1024)
				fex, fdel := db.fieldStep(s, now, 1024)
				s.Unlock()
				total += del + fdel
				if ex < 1024 && fex < 1024 {
					break
				}
			}
		}
	}
	return total
}

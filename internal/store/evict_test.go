package store

import (
	"fmt"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
)

// volatileCount sums the shards' counts of keys with an expiry, and checks each against the
// entries themselves.
func volatileCount(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	for i := range db.shards {
		s := &db.shards[i]
		real := 0
		s.dict.each(func(e *Entry) bool {
			if e.expireAt != 0 {
				real++
			}
			return true
		})
		if real != s.volatile {
			t.Fatalf("shard %d: volatile %d, entries with an expiry %d", i, s.volatile, real)
		}
		n += real
	}
	return n
}

func TestVolatileCountFollowsExpiries(t *testing.T) {
	const now = int64(1_700_000_000_000)
	st := New(1, 4, clock.NewFake(now))
	db := st.DB(0)
	for i := range 100 {
		var at int64
		if i%2 == 0 {
			at = now + 60_000
		}
		db.Set([]byte(fmt.Sprint("k", i)), BytesValue([]byte("v")), at, false, now)
	}
	if n := volatileCount(t, db); n != 50 {
		t.Fatalf("volatile %d", n)
	}
	for i := 0; i < 20; i += 2 {
		e := db.Lookup([]byte(fmt.Sprint("k", i)), now)
		db.SetExpire(e, 0) // PERSIST
		e = db.Lookup([]byte(fmt.Sprint("k", i+1)), now)
		db.SetExpire(e, now+1000) // EXPIRE on a persistent key
		db.SetExpire(e, now+5000) // and later again (the wheel's fast path)
	}
	db.Set([]byte("k40"), BytesValue([]byte("v")), 0, false, now) // SET drops the TTL
	db.Delete([]byte("k42"), now)
	db.Delete([]byte("k43"), now)
	if n := volatileCount(t, db); n != 48 {
		t.Fatalf("volatile %d", n)
	}
	// Lazy expiry removes it too.
	if db.Lookup([]byte("k1"), now+6000) != nil {
		t.Fatal("k1 should have expired")
	}
	volatileCount(t, db)
	db.Shard(0).SwapWith(db.Shard(1))
	volatileCount(t, db)
	db.Flush()
	if n := volatileCount(t, db); n != 0 {
		t.Fatalf("volatile %d after flush", n)
	}
}

func TestLFUCounter(t *testing.T) {
	const now = int64(1_700_000_000_000)
	st := New(1, 1, clock.NewFake(now))
	st.Mem.SetPolicy(PolicyAllKeysLFU)
	db := st.DB(0)
	e := db.Set([]byte("k"), BytesValue([]byte("v")), 0, false, now)
	if f := st.Freq(e, now); f != lfuInitVal {
		t.Fatalf("new key freq %d", f)
	}
	for range 1000 {
		db.LookupRead([]byte("k"), now)
	}
	f := st.Freq(e, now)
	// 1000 accesses with factor 10 land around 18; never anywhere near linear.
	if f < 10 || f > 30 {
		t.Fatalf("freq after 1000 reads %d", f)
	}
	if g := st.Freq(e, now+5*60_000); g != f-5 {
		t.Fatalf("after 5 idle minutes %d, want %d", g, f-5)
	}
	st.Mem.SetLFU(10, 2)
	if g := st.Freq(e, now+5*60_000); g != f-2 {
		t.Fatalf("decay-time 2: after 5 idle minutes %d, want %d", g, f-2)
	}
	st.Mem.SetLFU(10, 0)
	if g := st.Freq(e, now+500*60_000); g != f {
		t.Fatalf("decay-time 0: %d, want %d", g, f)
	}
	st.Mem.SetLFU(0, 1)
	before := st.Freq(e, now)
	db.LookupRead([]byte("k"), now)
	if st.Freq(e, now) != before+1 {
		t.Fatal("log factor 0 increments every access")
	}
}

func TestEvictionPoolKeepsBest(t *testing.T) {
	var m Memory
	for i := range 40 {
		m.poolInsert(poolEntry{score: uint64((i * 7) % 40), key: fmt.Sprint("k", i)})
	}
	if len(m.pool) != evictPoolSize {
		t.Fatalf("pool size %d", len(m.pool))
	}
	for i, c := range m.pool {
		if c.score != uint64(40-evictPoolSize+i) {
			t.Fatalf("pool[%d] score %d: %v", i, c.score, m.pool)
		}
	}
	// A key already there is refreshed, not duplicated.
	m.poolInsert(poolEntry{score: 100, key: m.pool[0].key})
	if len(m.pool) != evictPoolSize || m.pool[evictPoolSize-1].score != 100 {
		t.Fatalf("refresh: %v", m.pool)
	}
}

func TestPerformEvictionsVolatileTTL(t *testing.T) {
	const now = int64(1_700_000_000_000)
	st := New(2, 4, clock.NewFake(now))
	var evicted []string
	st.OnEvict = func(db int, key string) {
		if st.DB(db).Lookup([]byte(key), now) != nil {
			t.Errorf("%s still there when OnEvict runs", key)
		}
		evicted = append(evicted, fmt.Sprint(db, " ", key))
	}
	for d := range 2 {
		db := st.DB(d)
		for i := range 50 {
			db.Set([]byte(fmt.Sprint("p", i)), BytesValue([]byte("v")), 0, false, now)
			db.Set([]byte(fmt.Sprint("v", i)), BytesValue([]byte("v")), now+int64(i+1)*1000, false, now)
		}
	}
	st.Mem.SetPolicy(PolicyVolatileTTL)
	st.Mem.SetTenacity(100)
	st.Mem.SetLimit(1)
	defer st.Mem.Close()
	if r := st.PerformEvictions(now); r != EvictFail {
		t.Fatalf("result %v", r)
	}
	if len(evicted) != 100 || st.Mem.Evicted() != 100 {
		t.Fatalf("evicted %d (%d)", len(evicted), st.Mem.Evicted())
	}
	for d := range 2 {
		if n := st.DB(d).Keys(); n != 50 {
			t.Fatalf("db %d keeps %d keys", d, n)
		}
		if volatileCount(t, st.DB(d)) != 0 {
			t.Fatal("a key with a TTL survived")
		}
	}
	st.Mem.SetPolicy(PolicyNoEviction)
	if r := st.PerformEvictions(now); r != EvictFail {
		t.Fatalf("noeviction result %v", r)
	}
	st.Mem.SetLimit(0)
	if r := st.PerformEvictions(now); r != EvictOK {
		t.Fatalf("no limit result %v", r)
	}
}

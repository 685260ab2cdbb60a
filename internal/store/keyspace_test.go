package store

import (
	"fmt"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
)

type cloneableList struct{ items []string }

func (l *cloneableList) Clone() any {
	return &cloneableList{items: append([]string(nil), l.items...)}
}

func TestCloneValueSharesNothing(t *testing.T) {
	v := BytesValue([]byte("abc"))
	c := CloneValue(v)
	c.Bytes()[0] = 'X'
	if string(v.Bytes()) != "abc" || string(c.Bytes()) != "Xbc" {
		t.Fatalf("string bytes shared: %q %q", v.Bytes(), c.Bytes())
	}
	if e := CloneValue(BytesValue([]byte{})); e.Kind != KindString || len(e.Bytes()) != 0 || e.IsInt {
		t.Fatal("an empty string changed")
	}
	i := CloneValue(Value{Kind: KindString, IsInt: true, Int: 42})
	if !i.IsInt || i.Int != 42 || i.Bytes() != nil {
		t.Fatalf("int value changed: %+v", i)
	}
	l := &cloneableList{items: []string{"a"}}
	lc := CloneValue(ObjValue(KindList, l))
	lc.Obj().(*cloneableList).items[0] = "b"
	if l.items[0] != "a" || lc.Kind != KindList {
		t.Fatal("Obj shared through CloneValue")
	}
}

func TestMoveEntryKeepsValueTTLAndAccess(t *testing.T) {
	clk := clock.NewFake(1_000_000)
	st := New(2, 4, clk)
	db0, db1 := st.DB(0), st.DB(1)
	now := clk.NowMs()
	e := db0.Set([]byte("src"), BytesValue([]byte("v")), now+5000, false, now)
	e.lru = 123
	db0.Set([]byte("dst"), BytesValue([]byte("old")), 0, false, now)

	// RENAME over an existing key, inside one database.
	ne := db0.MoveEntry(db0.Lookup([]byte("src"), now), db0, []byte("dst"), now)
	if db0.Lookup([]byte("src"), now) != nil {
		t.Fatal("source still present")
	}
	got := db0.Lookup([]byte("dst"), now)
	if got != ne || string(got.Val.Bytes()) != "v" || got.ExpireAt() != now+5000 || got.lru != 123 {
		t.Fatalf("dst = %+v", got)
	}

	// MOVE to another database; the wheel there must reclaim it at its time.
	db0.MoveEntry(got, db1, []byte("dst"), now)
	if db0.Lookup([]byte("dst"), now) != nil || db1.Lookup([]byte("dst"), now) == nil {
		t.Fatal("move failed")
	}
	clk.Advance(6000)
	if n := st.ExpireNow(); n != 1 || db1.Keys() != 0 {
		t.Fatalf("expired %d, db1 has %d keys", n, db1.Keys())
	}
}

func TestLookupReadNoTouchCountsButDoesNotTouch(t *testing.T) {
	clk := clock.NewFake(10_000)
	st := New(1, 1, clk)
	db := st.DB(0)
	e := db.Set([]byte("k"), BytesValue([]byte("v")), 0, false, 10_000)
	if db.LookupReadNoTouch([]byte("k"), 70_000) != e || db.LookupReadNoTouch([]byte("nope"), 70_000) != nil {
		t.Fatal("lookup")
	}
	s := db.Shard(0)
	if s.Hits != 1 || s.Misses != 1 {
		t.Fatalf("hits %d misses %d", s.Hits, s.Misses)
	}
	if e.IdleSeconds(70_000) != 60 || e.Freq() != 0 {
		t.Fatalf("touched: idle %d freq %d", e.IdleSeconds(70_000), e.Freq())
	}
	db.SetExpire(e, 80_000)
	if db.LookupReadNoTouch([]byte("k"), 80_001) != nil || s.Len() != 0 {
		t.Fatal("expired key not reclaimed")
	}
}

func TestShardClear(t *testing.T) {
	clk := clock.NewFake(1_000)
	st := New(1, 2, clk)
	db := st.DB(0)
	for i := range 100 {
		k := []byte(fmt.Sprint("k", i))
		db.Set(k, Value{Kind: KindString, IsInt: true, Int: int64(i)}, 5_000, false, 1_000)
	}
	total := 0
	for i := 0; i < db.NumShards(); i++ {
		s := db.Shard(i)
		s.Lock()
		total += s.Clear()
		s.Unlock()
	}
	if total != 100 || db.Keys() != 0 {
		t.Fatalf("cleared %d, %d left", total, db.Keys())
	}
	clk.Set(10_000)
	if n := st.ExpireNow(); n != 0 {
		t.Fatalf("wheel kept %d registrations after Clear", n)
	}
	db.Set([]byte("again"), BytesValue([]byte("x")), 0, false, 10_000)
	if db.Keys() != 1 {
		t.Fatal("shard unusable after Clear")
	}
}

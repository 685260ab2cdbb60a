package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/clock"
)

func TestDictGrowShrinkAndStablePointers(t *testing.T) {
	st := New(1, 1, clock.NewFake(0))
	db := st.DB(0)
	first := db.Set([]byte("k0"), BytesValue([]byte("v0")), 0, false, 0)
	for i := 1; i < 5000; i++ {
		db.Set([]byte(fmt.Sprint("k", i)), BytesValue([]byte(fmt.Sprint("v", i))), 0, false, 0)
	}
	if string(first.Val.Bytes()) != "v0" || first.Key() != "k0" {
		t.Fatal("entry pointer moved after inserts")
	}
	for i := 0; i < 5000; i++ {
		e := db.Lookup([]byte(fmt.Sprint("k", i)), 0)
		if e == nil || string(e.Val.Bytes()) != fmt.Sprint("v", i) {
			t.Fatalf("k%d missing", i)
		}
	}
	for i := 0; i < 4990; i++ {
		if !db.Delete([]byte(fmt.Sprint("k", i)), 0) {
			t.Fatalf("delete k%d", i)
		}
	}
	s := db.Shard(0)
	if s.Len() != 10 || len(s.dict.buckets) > 64 {
		t.Fatalf("len %d buckets %d", s.Len(), len(s.dict.buckets))
	}
	for i := 4990; i < 5000; i++ {
		if db.Lookup([]byte(fmt.Sprint("k", i)), 0) == nil {
			t.Fatalf("k%d lost in shrink", i)
		}
	}
}

func TestScanVisitsEveryKeyAcrossResizes(t *testing.T) {
	st := New(1, 1, clock.NewFake(0))
	db := st.DB(0)
	for i := 0; i < 1000; i++ {
		db.Set([]byte(fmt.Sprint("k", i)), Value{Kind: KindString}, 0, false, 0)
	}
	seen := map[string]bool{}
	var cursor uint64
	steps := 0
	for {
		cursor = db.Shard(0).Scan(cursor, 0, func(e *Entry) { seen[e.Key()] = true })
		steps++
		// Grow the table mid-scan: keys present throughout must still all be returned.
		if steps == 50 {
			for i := 1000; i < 5000; i++ {
				db.Set([]byte(fmt.Sprint("n", i)), Value{Kind: KindString}, 0, false, 0)
			}
		}
		if cursor == 0 {
			break
		}
	}
	for i := 0; i < 1000; i++ {
		if !seen[fmt.Sprint("k", i)] {
			t.Fatalf("k%d not returned by scan", i)
		}
	}
}

func TestLazyAndActiveExpiry(t *testing.T) {
	clk := clock.NewFake(1_000_000)
	st := New(2, 4, clk)
	db := st.DB(1)
	for i := 0; i < 3000; i++ {
		db.Shard(0) // shards are locked by callers in real use; single goroutine here
		db.Set([]byte(fmt.Sprint("k", i)), Value{Kind: KindString}, 1_000_000+int64(i%3)*1000+500, false, clk.NowMs())
	}
	db.Set([]byte("keep"), Value{Kind: KindString}, 0, false, clk.NowMs())
	// Lazy: exactly at the expiry the key lives (expired only when now > expireAt).
	clk.Set(1_000_500)
	if db.Lookup([]byte("k0"), clk.NowMs()) == nil {
		t.Fatal("expired too early")
	}
	clk.Set(1_000_501)
	if db.Lookup([]byte("k0"), clk.NowMs()) != nil {
		t.Fatal("lazy expiry missed")
	}
	clk.Set(1_002_000)
	n := st.ExpireNow()
	if n != 1999 { // k0 went lazily; k%3==2 expire at 1_002_500
		t.Fatalf("active expiry deleted %d", n)
	}
	clk.Set(1_003_001)
	st.ExpireNow()
	if got := db.Keys(); got != 1 {
		t.Fatalf("keys left %d", got)
	}
}

func TestExpiryMovedLaterAndEarlier(t *testing.T) {
	clk := clock.NewFake(10_000)
	st := New(1, 1, clk)
	db := st.DB(0)
	e := db.Set([]byte("g"), Value{Kind: KindString, IsInt: true}, 11_000, false, clk.NowMs())
	db.SetExpire(e, 20_000) // later: no new registration
	if st.DB(0).Shard(0).pending.Load() != 1 {
		t.Fatal("moving later must not register again")
	}
	clk.Set(12_500)
	st.ExpireNow()
	if db.Lookup([]byte("g"), clk.NowMs()) == nil {
		t.Fatal("key with later expiry reclaimed early")
	}
	e = db.Lookup([]byte("g"), clk.NowMs())
	db.SetExpire(e, 13_000) // earlier
	clk.Set(14_000)
	if st.ExpireNow() != 1 {
		t.Fatal("earlier expiry not honoured")
	}
}

func TestWheelSkipsLongGaps(t *testing.T) {
	clk := clock.NewFake(1_000)
	st := New(1, 1, clk)
	db := st.DB(0)
	db.Set([]byte("far"), Value{Kind: KindString}, 1_000_000_000, false, clk.NowMs())
	clk.Set(1_000_001_000)
	if st.ExpireNow() != 1 {
		t.Fatal("far key not reclaimed")
	}
}

func TestActiveExpireConcurrentWithWriters(t *testing.T) {
	clk := clock.NewFake(1_000_000)
	st := New(1, 8, clk)
	db := st.DB(0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		st.ActiveExpire(ctx, time.Millisecond, time.Millisecond, 16, nil)
		close(done)
	}()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				key := []byte(fmt.Sprint("g", g, ":", i%500))
				s := db.ShardFor(key)
				s.Lock()
				now := clk.NowMs()
				db.Set(key, Value{Kind: KindString, IsInt: true, Int: int64(i)}, now+int64(i%7)*100, false, now)
				s.Unlock()
				if i%100 == 0 {
					clk.Advance(50)
				}
			}
		}(g)
	}
	wg.Wait()
	clk.Advance(10_000)
	deadline := time.Now().Add(5 * time.Second)
	for db.Keys() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	if n := db.Keys(); n != 0 {
		t.Fatalf("%d keys left after their expiry", n)
	}
}

// TestReadOnlyViewDeletesNothing: a Raft follower's reads go through the read-only view, which
// reports an expired key as missing (Lookup, LookupRead, Random) and leaves it in place, so
// that only the replicated log changes a replica.
func TestReadOnlyViewDeletesNothing(t *testing.T) {
	st := New(2, 1, clock.NewFake(0))
	live := st.DB(1)
	view := live.ReadOnlyView()
	if !view.IsReadOnlyView() || live.IsReadOnlyView() || view.Live() != live || live.Live() != live || view.ReadOnlyView() != view {
		t.Fatal("view links")
	}
	live.Set([]byte("gone"), Value{Kind: KindString}, 100, false, 0)
	live.Set([]byte("kept"), Value{Kind: KindString}, 0, false, 0)
	if view.Lookup([]byte("gone"), 101) != nil || view.LookupRead([]byte("gone"), 101) != nil ||
		view.LookupReadNoTouch([]byte("gone"), 101) != nil {
		t.Fatal("the view returned an expired key")
	}
	for range 50 {
		if e := view.Random(view.Shard(0), 101); e == nil || e.Key() != "kept" {
			t.Fatalf("Random through the view: %v", e)
		}
	}
	if view.Lookup([]byte("kept"), 101) == nil {
		t.Fatal("the view lost a live key")
	}
	if got := live.Keys(); got != 2 {
		t.Fatalf("the view deleted a key: %d left", got)
	}
	if view.Shard(0).ExpiredKeys != 0 {
		t.Fatalf("expired_keys %d", view.Shard(0).ExpiredKeys)
	}
	if live.Lookup([]byte("gone"), 101) != nil || live.Keys() != 1 {
		t.Fatal("the live database's lazy expiry")
	}
}

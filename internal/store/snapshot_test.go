package store

import (
	"errors"
	"fmt"
	"sort"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/ratelimit"
)

func TestSnapshotWalkVisitsLiveKeysAndPublishesProgress(t *testing.T) {
	st := New(3, 8, clock.NewFake(0))
	const now = 10_000
	want := map[string]bool{}
	for d := 0; d < 3; d++ {
		db := st.DB(d)
		for i := 0; i < 200; i++ {
			key := fmt.Sprintf("k%d", i)
			exp := int64(0)
			switch i % 3 {
			case 1:
				exp = now + 1 // live
			case 2:
				exp = now - 1 // expired: skipped
			}
			s := db.ShardFor([]byte(key))
			s.Lock()
			db.Set([]byte(key), BytesValue([]byte("v")), exp, false, 0)
			s.Unlock()
			if i%3 != 2 {
				want[fmt.Sprint(d, "/", key)] = true
			}
		}
	}
	if walking, _ := st.SnapshotProgress(); walking {
		t.Fatal("progress reports a walk before any")
	}
	got := map[string]bool{}
	afters := 0
	lastDone := 0
	err := st.SnapshotWalk(now, false, func(db int, e *Entry) bool {
		got[fmt.Sprint(db, "/", e.Key())] = true
		return true
	}, func() error {
		afters++
		walking, done := st.SnapshotProgress()
		if !walking || done != lastDone+1 {
			return fmt.Errorf("after shard %d: progress %v %d", afters, walking, done)
		}
		lastDone = done
		// Nothing is locked between shards: a writer could take any shard here.
		for d := 0; d < 3; d++ {
			for j := 0; j < 8; j++ {
				if !st.DB(d).Shard(j).mu.TryLock() {
					return fmt.Errorf("shard %d/%d still locked between shards", d, j)
				}
				st.DB(d).Shard(j).mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if afters != 3*8 {
		t.Fatalf("after ran %d times, want one per shard (24)", afters)
	}
	if len(got) != len(want) {
		t.Fatalf("visited %d keys, want %d", len(got), len(want))
	}
	for k := range want {
		if !got[k] {
			t.Fatalf("live key %s not visited", k)
		}
	}
	if walking, _ := st.SnapshotProgress(); walking {
		t.Fatal("progress still reports a walk after it ended")
	}
	// The walk deleted nothing: expired keys are skipped, not reclaimed.
	if n := st.DB(0).Keys(); n != 200 {
		t.Fatalf("db0 has %d keys after the walk, want 200", n)
	}
}

func TestSnapshotWalkHeldStopAndBusy(t *testing.T) {
	st := New(1, 4, clock.NewFake(0))
	for i := 0; i < 50; i++ {
		st.DB(0).Set([]byte(fmt.Sprint(i)), BytesValue([]byte("v")), 0, false, 0)
	}
	st.LockAll()
	n := 0
	if err := st.SnapshotWalk(0, true, func(int, *Entry) bool { n++; return true }, nil); err != nil || n != 50 {
		t.Fatalf("held walk: %v, %d keys", err, n)
	}
	st.UnlockAll()

	stopped := st.SnapshotWalk(0, false, func(int, *Entry) bool { return false }, nil)
	if !errors.Is(stopped, ErrWalkStopped) {
		t.Fatalf("stopping visitor: %v", stopped)
	}
	boom := errors.New("boom")
	if err := st.SnapshotWalk(0, false, func(int, *Entry) bool { return true }, func() error { return boom }); err != boom {
		t.Fatalf("after's error: %v", err)
	}
	var inner error
	_ = st.SnapshotWalk(0, false, func(int, *Entry) bool { return true }, func() error {
		inner = st.SnapshotWalk(0, false, func(int, *Entry) bool { return true }, nil)
		return nil
	})
	if !errors.Is(inner, ErrSnapshotBusy) {
		t.Fatalf("a second concurrent walk: %v", inner)
	}
}

func TestRestoreRefusesDuplicates(t *testing.T) {
	st := New(1, 4, clock.NewFake(0))
	db := st.DB(0)
	if !db.Restore([]byte("k"), BytesValue([]byte("a")), 5000, 0) {
		t.Fatal("first restore refused")
	}
	if db.Restore([]byte("k"), BytesValue([]byte("b")), 0, 0) {
		t.Fatal("duplicate restore accepted")
	}
	s := db.ShardFor([]byte("k"))
	s.Lock()
	e := db.Lookup([]byte("k"), 0)
	s.Unlock()
	if e == nil || string(e.Val.Bytes()) != "a" || e.ExpireAt() != 5000 {
		t.Fatalf("restored entry: %+v", e)
	}
}

func TestLimiterEachStateAndRestore(t *testing.T) {
	ls := NewLimiters()
	sw := &Limiter{Name: "sw", Algo: SlidingWindow, Limit: 10, WindowMs: 1000}
	tb := &Limiter{Name: "tb", Algo: TokenBucket, Limit: 10, WindowMs: 1000, Rate: ratelimit.DefaultRate(10, 1000)}
	ls.Create(tb, 10)
	ls.Create(sw, 10)
	if names := []string{ls.All()[0].Name, ls.All()[1].Name}; names[0] != "sw" || names[1] != "tb" {
		t.Fatalf("All not sorted: %v", names)
	}
	const t0 = 1_000_000
	sw.Check([]byte("old"), 1, t0, 1024, true, nil)       // dead by t0+1000
	sw.Check([]byte("mixed"), 2, t0, 1024, true, nil)     // first entry dead at t0+1000
	sw.Check([]byte("mixed"), 3, t0+500, 1024, true, nil) // live
	tb.Check([]byte("a"), 10, t0, 1024, true, nil)        // TAT t0+1000 ms: dead at t0+1000
	tb.Check([]byte("b"), 10, t0+500, 1024, true, nil)    // live
	type state struct {
		tat     int64
		entries []ratelimit.WindowEntry
	}
	collect := func(l *Limiter, now int64) map[string]state {
		out := map[string]state{}
		flushes := 0
		if err := l.EachState(now, false, func(k string, tat int64, e []ratelimit.WindowEntry, _ []ratelimit.Lease) {
			out[k] = state{tat, append([]ratelimit.WindowEntry(nil), e...)}
		}, func() error { flushes++; return nil }); err != nil {
			t.Fatal(err)
		}
		if flushes != limiterShards {
			t.Fatalf("after ran %d times, want %d", flushes, limiterShards)
		}
		return out
	}
	got := collect(sw, t0+1000)
	if len(got) != 1 || len(got["mixed"].entries) != 1 || got["mixed"].entries[0] != (ratelimit.WindowEntry{TS: t0 + 500, Units: 3}) {
		t.Fatalf("sliding window live state: %+v", got)
	}
	gotTB := collect(tb, t0+1000)
	tb.LockState()
	held := 0
	_ = tb.EachState(t0+1000, true, func(string, int64, []ratelimit.WindowEntry, []ratelimit.Lease) { held++ }, nil)
	tb.UnlockState()
	if held != 1 {
		t.Fatalf("held walk saw %d keys", held)
	}
	if len(gotTB) != 1 || gotTB["b"].tat != (t0+1500)*ratelimit.NsPerMs {
		t.Fatalf("token bucket live state: %+v", gotTB)
	}

	// Restoring into fresh limiters gives the same live state, and duplicates are refused.
	sw2 := &Limiter{Name: "sw", Algo: SlidingWindow, Limit: 10, WindowMs: 1000}
	NewLimiters().Create(sw2, 1)
	if !sw2.RestoreState([]byte("mixed"), 0, got["mixed"].entries) || sw2.RestoreState([]byte("mixed"), 0, got["mixed"].entries) {
		t.Fatal("RestoreState: first must succeed, second must be refused")
	}
	if r, _ := sw2.Check([]byte("mixed"), 1, t0+1000, 1024, false, nil); r != (Result{1, 7, 0, 10, 3}) {
		t.Fatalf("restored sliding window peek: %v", r)
	}
	keys := make([]string, 0)
	for k := range collect(sw2, t0+1000) {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[mixed]" {
		t.Fatalf("restored keys %v", keys)
	}
	if a, d := sw2.Totals(); a != 0 || d != 0 {
		t.Fatalf("RestoreState touched the totals: %d %d", a, d)
	}
}

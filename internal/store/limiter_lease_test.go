package store

import (
	"testing"

	"github.com/hotkv/hotkv/internal/ratelimit"
)

// TestLimiterLeases covers the store side of concurrency limiters that the command tests see
// only indirectly: an emptied key is kept for reuse but is no state to any reader and is
// reclaimed by the sweep; RestoreLeases and SetStateLeases raise the shard's id counter, so a
// lease acquired afterwards, even with the clock behind, gets an id above the loaded ones.
func TestLimiterLeases(t *testing.T) {
	const now = int64(1_700_000_000_000)
	ls := NewLimiters()
	l := &Limiter{Name: "cc", Algo: Concurrency, Limit: 3, WindowMs: 1000}
	if !ls.Create(l, 10) {
		t.Fatal("create")
	}
	r, id, changed := l.CheckLease([]byte("u"), 1, now, 1024, true, nil)
	if r != (Result{1, 2, 0, 3, 0}) || id != now*ratelimit.LeaseIDsPerMs || !changed {
		t.Fatalf("check: %v %d %v", r, id, changed)
	}
	if released, _ := l.Release([]byte("u"), id, now, nil); !released {
		t.Fatal("release")
	}
	s := l.shard([]byte("u"))
	if s.lease["u"] == nil {
		t.Fatal("the emptied lease log was not kept for reuse")
	}
	if n := l.UniqueKeys(now); n != 0 {
		t.Fatalf("unique keys %d with no lease held", n)
	}
	if s.lease["u"] != nil {
		t.Fatal("the sweep kept an emptied key")
	}
	visited := 0
	_ = l.EachState(now, false, func(string, int64, []ratelimit.WindowEntry, []ratelimit.Lease) { visited++ }, nil)
	if visited != 0 || l.Reset([]byte("u"), now, nil) {
		t.Fatal("an emptied key is state")
	}

	// Loaded ids are above what the clock would give: new ids continue after them.
	loaded := []ratelimit.Lease{{ID: (now + 500) * ratelimit.LeaseIDsPerMs, TS: now + 500, Units: 1}}
	l2 := &Limiter{Name: "c2", Algo: Concurrency, Limit: 3, WindowMs: 1000}
	ls.Create(l2, 10)
	if !l2.RestoreLeases([]byte("v"), loaded) || l2.RestoreLeases([]byte("v"), loaded) {
		t.Fatal("restore, then a duplicate")
	}
	if _, id, _ := l2.CheckLease([]byte("v"), 1, now, 1024, true, nil); id != loaded[0].ID+1 {
		t.Fatalf("id after a restore: %d", id)
	}
	l2.SetStateLeases([]byte("w"), []ratelimit.Lease{{ID: (now + 900) * ratelimit.LeaseIDsPerMs, TS: now + 900, Units: 2}}, 5, 0, 0)
	if _, id, _ := l2.CheckLease([]byte("w"), 1, now, 1024, true, nil); id != (now+900)*ratelimit.LeaseIDsPerMs+1 {
		t.Fatalf("id after a state effect: %d", id)
	}
	if a, _ := l2.Totals(); a != 6 {
		t.Fatalf("allowed total %d", a)
	}
	// A state effect without leases deletes the key's state.
	l2.SetStateLeases([]byte("w"), nil, 0, 0, 0)
	if r, _ := l2.Check([]byte("w"), 1, now, 1024, false, nil); r != (Result{1, 3, 0, 3, 0}) {
		t.Fatalf("after LEASES 0: %v", r)
	}
}

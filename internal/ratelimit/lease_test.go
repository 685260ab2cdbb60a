package ratelimit

import (
	"math/rand/v2"
	"testing"
)

func TestNextLeaseID(t *testing.T) {
	const t0 = 1700000000000
	cases := []struct{ now, last, want int64 }{
		{t0, 0, t0 * LeaseIDsPerMs},
		{t0, t0 * LeaseIDsPerMs, t0*LeaseIDsPerMs + 1},
		{t0 - 5, t0 * LeaseIDsPerMs, t0*LeaseIDsPerMs + 1}, // the clock stepped back: ids still ascend
		{t0 + 1, t0*LeaseIDsPerMs + 7, (t0 + 1) * LeaseIDsPerMs},
		{0, 0, 1},
		{-3, 0, 1},
		{Max, 0, Max},  // beyond 2262: saturates
		{t0, Max, Max}, // nothing above the largest id
		{Max / LeaseIDsPerMs, 0, Max / LeaseIDsPerMs * LeaseIDsPerMs},
	}
	for _, c := range cases {
		if got := NextLeaseID(c.now, c.last); got != c.want {
			t.Errorf("NextLeaseID(%d, %d) = %d, want %d", c.now, c.last, got, c.want)
		}
	}
}

// TestLeasesModel runs random acquire, release and prune steps against a plain list of
// leases: the log stays ordered, its sum exact, a lease counts until exactly ts + W, and the
// retry walk is the sliding window's.
func TestLeasesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const w, limit = 100, 7
	var ls Leases
	type lease struct{ id, ts, units int64 }
	var model []lease
	now, last := int64(1000), int64(0)
	for step := 0; step < 20000; step++ {
		now += rng.Int64N(20)
		stamp := now - rng.Int64N(3) // a batch stamped a moment earlier
		// The model: live leases at now.
		live := model[:0]
		for _, m := range model {
			if m.ts > now-w {
				live = append(live, m)
			}
		}
		model = live
		var cur int64
		for _, m := range model {
			cur += m.units
		}
		ls.Prune(now, w)
		if ls.Sum != cur || len(ls.Held) != len(model) {
			t.Fatalf("step %d: sum %d/%d, %d/%d leases", step, ls.Sum, cur, len(ls.Held), len(model))
		}
		switch rng.IntN(3) {
		case 0, 1:
			cost := 1 + rng.Int64N(3)
			r := ls.Check(now, w, limit, cost)
			if r.Allowed != (cost <= limit-cur) || r.Current != cur {
				t.Fatalf("step %d: %+v with %d in flight, cost %d", step, r, cur, cost)
			}
			if !r.Allowed {
				need, sum := cur+cost-limit, int64(0)
				for _, m := range model {
					if sum += m.units; sum >= need {
						if r.RetryMs != m.ts+w-now || r.RetryMs < 1 {
							t.Fatalf("step %d: retry %d, want %d", step, r.RetryMs, m.ts+w-now)
						}
						break
					}
				}
				continue
			}
			id := NextLeaseID(stamp, last)
			last = id
			ts := stamp
			if n := len(model); n > 0 && model[n-1].ts > ts {
				ts = model[n-1].ts
			}
			ls.Acquire(id, stamp, cost, limit)
			model = append(model, lease{id, ts, cost})
		default:
			if len(model) == 0 || rng.IntN(4) == 0 {
				if ls.Release(last + 1 + rng.Int64N(5)) {
					t.Fatalf("step %d: released a lease never issued", step)
				}
				continue
			}
			i := rng.IntN(len(model))
			if !ls.Release(model[i].id) || ls.Release(model[i].id) {
				t.Fatalf("step %d: release of %d not exactly once", step, model[i].id)
			}
			model = append(model[:i], model[i+1:]...)
		}
		for i, m := range model {
			if ls.Held[i] != (Lease{m.id, m.ts, m.units}) {
				t.Fatalf("step %d: lease %d is %+v, want %+v", step, i, ls.Held[i], m)
			}
		}
		if int64(cap(ls.Held)) > limit {
			t.Fatalf("step %d: capacity %d above the limit", step, cap(ls.Held))
		}
	}
}

func TestNormalizeLeases(t *testing.T) {
	ls := []Lease{{1, 10, 1}, {2, 5, 2}, {9, 12, 1}}
	if sum, err := NormalizeLeases(ls); err != nil || sum != 4 || ls[1].TS != 10 {
		t.Fatalf("normalize: %d %v %+v", sum, err, ls)
	}
	for _, bad := range [][]Lease{{{0, 1, 1}}, {{1, 1, 0}}, {{2, 1, 1}, {2, 1, 1}}, {{3, 1, 1}, {2, 1, 1}}, {{1, 1, Max}, {2, 1, 1}}} {
		if _, err := NormalizeLeases(bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
}

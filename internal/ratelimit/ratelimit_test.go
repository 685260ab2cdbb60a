package ratelimit

import (
	"math/rand/v2"
	"testing"
)

const t0 = int64(1700000000000)

func ns(ms int64) int64 { return ms * NsPerMs }

// gcraSeq runs GCRA.LIMIT calls against one key, storing the TAT as the server does.
type gcraKey struct {
	tat     int64
	present bool
}

func (k *gcraKey) limit(nowMs, period, burst, count int64) GCRAReply {
	d, r := NewGCRAParams(period, burst).Limit(ns(nowMs), k.tat, k.present, count)
	if d.Allowed {
		k.tat, k.present = d.TAT, true
	}
	return r
}

func TestGCRAVectors(t *testing.T) {
	type call struct {
		at, p, b, c int64
		want        GCRAReply
	}
	cases := map[string][]call{
		"V1-V3c": {
			{t0, 60000, 10, 1, GCRAReply{0, 10, 9, -1, 6000}},
			{t0, 60000, 10, 1, GCRAReply{0, 10, 8, -1, 12000}},
			{t0, 60000, 10, 10, GCRAReply{1, 10, 0, 12000, 12000}},
			{t0 + 11999, 60000, 10, 10, GCRAReply{1, 10, 0, 1, 1}},
			{t0 + 12000, 60000, 10, 10, GCRAReply{0, 10, 0, -1, 60000}},
		},
		"V6": {
			{t0, 60000, 10, 10, GCRAReply{0, 10, 0, -1, 60000}},
			{t0 + 5999, 60000, 10, 1, GCRAReply{1, 10, 0, 1, 54001}},
			{t0 + 6000, 60000, 10, 1, GCRAReply{0, 10, 0, -1, 60000}},
			{t0 + 6000, 60000, 10, 1, GCRAReply{1, 10, 0, 6000, 60000}},
			{t0 + 18000, 60000, 10, 2, GCRAReply{0, 10, 0, -1, 60000}},
			{t0 + 30000, 60000, 10, 3, GCRAReply{1, 10, 0, 6000, 48000}},
		},
		"V7": {
			{t0, 60000, 10, 10, GCRAReply{0, 10, 0, -1, 60000}},
			{t0, 60000, 10, 11, GCRAReply{1, 10, 0, -1, 60000}},
			{t0 + 30000, 60000, 10, 11, GCRAReply{1, 10, 0, -1, 30000}},
			{t0 + 60000, 60000, 10, 11, GCRAReply{1, 10, 0, -1, 0}},
		},
		"V8": {{t0, 1000, 5, 6, GCRAReply{1, 5, 0, -1, 0}}},
		"V9": {
			{t0, 1000, 3, 1, GCRAReply{0, 3, 2, -1, 334}},
			{t0, 1000, 3, 1, GCRAReply{0, 3, 1, -1, 667}},
			{t0, 1000, 3, 1, GCRAReply{0, 3, 0, -1, 1000}},
			{t0, 1000, 3, 1, GCRAReply{1, 3, 0, 334, 1000}},
			{t0 + 333, 1000, 3, 1, GCRAReply{1, 3, 0, 1, 667}},
			{t0 + 334, 1000, 3, 1, GCRAReply{0, 3, 0, -1, 1000}},
			{t0 + 334, 1000, 3, 1, GCRAReply{1, 3, 0, 333, 1000}},
		},
		"V10": {
			{t0, 1, 1, 1, GCRAReply{0, 1, 0, -1, 1}},
			{t0, 1, 1, 1, GCRAReply{1, 1, 0, 1, 1}},
			{t0 + 1, 1, 1, 1, GCRAReply{0, 1, 0, -1, 1}},
		},
		"V12b": {
			{t0, 1, 2000000, 2000000, GCRAReply{0, 2000000, 0, -1, 2}},
			{t0, 1, 2000000, 1, GCRAReply{1, 2000000, 0, 1, 2}},
		},
		"V13": {{t0, 1, 1000000000000, 1, GCRAReply{0, 1000000000000, 999999999999, -1, 1}}},
		"V14": {
			{t0, 1000000000000, 1, 1, GCRAReply{0, 1, 0, -1, 1000000000000}},
			{t0, 1000000000000, 1, 1, GCRAReply{1, 1, 0, 1000000000000, 1000000000000}},
		},
		"V15": {
			{t0, 1000000000000, 3, 1, GCRAReply{0, 3, 2, -1, 333333333334}},
			{t0, 1000000000000, 3, 1, GCRAReply{0, 3, 1, -1, 666666666667}},
		},
		"V16": {{t0, 60000, Max, 1, GCRAReply{0, Max, Max - 1, -1, 1}}},
		"V24": {
			{t0, 60000, 10, 5, GCRAReply{0, 10, 5, -1, 30000}},
			{t0 + 1000, 1000, 10, 1, GCRAReply{1, 10, 0, 28100, 29000}},
			{t0 + 1000, 120000, 10, 1, GCRAReply{0, 10, 6, -1, 41000}},
		},
	}
	for name, calls := range cases {
		var k gcraKey
		for i, c := range calls {
			if got := k.limit(c.at, c.p, c.b, c.c); got != c.want {
				t.Errorf("%s call %d: got %v want %v", name, i, got, c.want)
			}
		}
	}
	// V14's stored state and V23's huge stored TAT.
	var k gcraKey
	k.limit(t0, 1000000000000, 1, 1)
	if k.tat != 2700000000000000000 {
		t.Errorf("V14 TAT %d", k.tat)
	}
	_, r := NewGCRAParams(60000, 10).Limit(ns(t0), Max, true, 1)
	if r != (GCRAReply{1, 10, 0, 7523371982855, 7523372036855}) {
		t.Errorf("V23: %v", r)
	}
}

func TestThrottleRedisCellTable(t *testing.T) {
	type row struct {
		at, q      int64
		cell, dfly ThrottleReply
	}
	rows := []row{
		{t0, 6, ThrottleReply{1, 5, 5, -1, 0}, ThrottleReply{1, 5, 5, -1, 0}},
		{t0, 1, ThrottleReply{0, 5, 4, -1, 1}, ThrottleReply{0, 5, 4, -1, 2}},
		{t0, 1, ThrottleReply{0, 5, 3, -1, 2}, ThrottleReply{0, 5, 3, -1, 3}},
		{t0, 1, ThrottleReply{0, 5, 2, -1, 3}, ThrottleReply{0, 5, 2, -1, 4}},
		{t0, 1, ThrottleReply{0, 5, 1, -1, 4}, ThrottleReply{0, 5, 1, -1, 5}},
		{t0, 1, ThrottleReply{0, 5, 0, -1, 5}, ThrottleReply{0, 5, 0, -1, 6}},
		{t0, 1, ThrottleReply{1, 5, 0, 1, 5}, ThrottleReply{1, 5, 0, 2, 6}},
		{t0 + 3000, 1, ThrottleReply{0, 5, 2, -1, 3}, ThrottleReply{0, 5, 2, -1, 4}},
		{t0 + 3100, 1, ThrottleReply{0, 5, 1, -1, 4}, ThrottleReply{0, 5, 1, -1, 4}},
		{t0 + 4000, 1, ThrottleReply{0, 5, 1, -1, 4}, ThrottleReply{0, 5, 1, -1, 5}},
		{t0 + 8000, 1, ThrottleReply{0, 5, 4, -1, 1}, ThrottleReply{0, 5, 4, -1, 2}},
		{t0 + 9500, 1, ThrottleReply{0, 5, 4, -1, 1}, ThrottleReply{0, 5, 4, -1, 2}},
		{t0 + 9500, 0, ThrottleReply{0, 5, 4, -1, 1}, ThrottleReply{0, 5, 4, -1, 2}},
		{t0 + 9500, 2, ThrottleReply{0, 5, 2, -1, 3}, ThrottleReply{0, 5, 2, -1, 4}},
		{t0 + 9500, 5, ThrottleReply{1, 5, 2, 3, 3}, ThrottleReply{1, 5, 2, 4, 4}},
		{t0 + 15000, 6, ThrottleReply{1, 5, 5, -1, 0}, ThrottleReply{1, 5, 5, -1, 0}},
	}
	for _, mode := range []Compat{CompatRedisCell, CompatDragonfly} {
		var k gcraKey
		for i, r := range rows {
			p, err := NewThrottleParams(4, 1, 1, ns(r.at))
			if err != nil {
				t.Fatal(err)
			}
			d, got := p.Throttle(ns(r.at), k.tat, k.present, r.q, mode)
			if d.Allowed && r.q > 0 {
				k.tat, k.present = d.TAT, true
			}
			want := r.cell
			if mode == CompatDragonfly {
				want = r.dfly
			}
			if got != want {
				t.Errorf("mode %d row %d: got %v want %v", mode, i, got, want)
			}
		}
	}
}

func TestThrottleErrors(t *testing.T) {
	now := ns(t0)
	cases := []struct {
		burst, count, period int64
		err                  error
	}{
		{1, 0, 1, ErrZeroRates}, {1, 1, 0, ErrZeroRates}, {0, 2000000000, 1, ErrZeroRates},
		{Max, 1, 1, ErrNotInt}, {0, 1, 9223372037, ErrNotInt}, {Max - 1, 1, 1, ErrNotInt},
		{7, 1, 1000000000, ErrNotInt},
	}
	for _, c := range cases {
		if _, err := NewThrottleParams(c.burst, c.count, c.period, now); err != c.err {
			t.Errorf("%v: got %v want %v", c, err, c.err)
		}
	}
	if _, err := NewThrottleParams(6, 1, 1000000000, now); err != nil {
		t.Errorf("DVT = 7*10^18 must be accepted: %v", err)
	}
}

func TestSlidingWindowVectors(t *testing.T) {
	// L2: CREATE a 3 1000.
	var w Window
	check := func(at, cost, k int64, record bool) WindowResult {
		w.Prune(at, 1000)
		return w.Check(at, 1000, 3, cost, k, record)
	}
	type step struct {
		at      int64
		allowed bool
		retry   int64
		current int64
	}
	for i, s := range []step{{0, true, 0, 0}, {100, true, 0, 1}, {200, true, 0, 2}, {300, false, 700, 3},
		{999, false, 1, 3}, {1000, true, 0, 2}, {1000, false, 100, 3}, {1100, true, 0, 2}} {
		r := check(s.at, 1, 1024, true)
		if r.Allowed != s.allowed || r.RetryMs != s.retry || r.Current != s.current {
			t.Errorf("L2 step %d: %+v", i, r)
		}
	}
	// L5: K = 2 merges conservatively.
	w = Window{}
	for _, at := range []int64{0, 100, 300} {
		check(at, 1, 2, true)
	}
	if len(w.Entries) != 2 || w.Entries[0] != (WindowEntry{100, 2}) || w.Entries[1] != (WindowEntry{300, 1}) {
		t.Fatalf("L5 merge: %+v", w.Entries)
	}
	if r := check(1000, 1, 2, true); r.Allowed || r.RetryMs != 100 {
		t.Fatalf("L5 t=1000: %+v", r)
	}
	if r := check(1100, 1, 2, true); !r.Allowed || r.Current != 1 {
		t.Fatalf("L5 t=1100: %+v", r)
	}
}

func TestRates(t *testing.T) {
	r, err := ParseRate("5", 20)
	if err != nil || r.IntervalNs != 200*NsPerMs || FormatRate(r.PerSec) != "5" {
		t.Fatalf("REFILL 5: %+v %v", r, err)
	}
	r, err = ParseRate("0.5", 2)
	if err != nil || r.IntervalNs != 2*NsPerSec || FormatRate(r.PerSec) != "0.5" {
		t.Fatalf("REFILL 0.5: %+v %v", r, err)
	}
	for _, bad := range []string{"0", "0.0", "-1", "+1", ".5", "5.", "1e3", "inf", "nan", " 1", "abc", "1.2.3", ""} {
		if _, err := ParseRate(bad, 10); err != ErrInvalidRate {
			t.Errorf("rate %q accepted", bad)
		}
	}
	if _, err := ParseRate("0.000000001", 10); err != ErrInvalidRate {
		t.Error("too slow rate accepted")
	}
	if _, err := ParseRate("0.00000001", 10); err != nil {
		t.Errorf("10*T = 10^18 must be accepted: %v", err)
	}
	d := DefaultRate(3, 1000)
	if d.IntervalNs != 333333333 || FormatRate(d.PerSec) != "3" {
		t.Fatalf("default rate: %+v", d)
	}
	if FormatRate(DefaultRate(1000, 3000).PerSec) != "333.3333333333333" {
		t.Fatal(FormatRate(DefaultRate(1000, 3000).PerSec))
	}
}

// TestGCRAProperties checks spec §3.6's invariants on random traffic: allowed replies are
// consistent, a denied call changes nothing, retrying after retry_after succeeds, and the
// admitted units conform (t_n - t_1 >= (n - B) * T for every run of admitted units).
func TestGCRAProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := 0; iter < 300; iter++ {
		period := 1 + rng.Int64N(100000)
		burst := 1 + rng.Int64N(50)
		p := NewGCRAParams(period, burst)
		tau := burst * p.Interval
		var k gcraKey
		now := t0
		var admitted []int64 // ns time of each admitted unit
		for step := 0; step < 200; step++ {
			now += rng.Int64N(period/int64(burst) + 2)
			count := 1 + rng.Int64N(burst+1)
			before := k
			d, r := p.Limit(ns(now), k.tat, k.present, count)
			if d.Allowed {
				k.tat, k.present = d.TAT, true
				if r[3] != -1 || r[2] < 0 || r[2] > burst-count || r[4] < 1 || r[4] > CeilMs(tau) {
					t.Fatalf("allowed reply %v (P=%d B=%d c=%d)", r, period, burst, count)
				}
				if CeilMs(k.tat-ns(now)) != r[4] {
					t.Fatalf("PTTL would be %d, reply reset %d", CeilMs(k.tat-ns(now)), r[4])
				}
				for i := int64(0); i < count; i++ {
					admitted = append(admitted, ns(now))
				}
				continue
			}
			if k != before || r[2] != 0 {
				t.Fatalf("denial changed state or reported remaining: %v", r)
			}
			if count > burst {
				if r[3] != -1 {
					t.Fatalf("count > burst must have retry -1: %v", r)
				}
				continue
			}
			if r[3] < 1 {
				t.Fatalf("denied with retry %d", r[3])
			}
			// Waiting retry_after ms is enough for the same call.
			if d2, _ := p.Limit(ns(now+r[3]), k.tat, k.present, count); !d2.Allowed {
				t.Fatalf("retry after %d ms still denied", r[3])
			}
		}
		n := int64(len(admitted))
		for i := int64(0); i < n; i++ {
			for j := i + burst; j < n; j++ {
				if admitted[j]-admitted[i] < (j-i+1-burst)*p.Interval {
					t.Fatalf("conformance broken: units %d..%d within %d ns (T=%d B=%d)", i, j, admitted[j]-admitted[i], p.Interval, burst)
				}
			}
		}
	}
}

// TestSlidingWindowNeverExceedsLimit checks §8.4's guarantee with merging forced on: no window
// of W ms ever holds more than L admitted units.
func TestSlidingWindowNeverExceedsLimit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := 0; iter < 200; iter++ {
		limit := 1 + rng.Int64N(20)
		windowMs := 1 + rng.Int64N(500)
		k := 1 + rng.Int64N(4)
		var w Window
		now := int64(0)
		var admitted []WindowEntry
		for step := 0; step < 300; step++ {
			now += rng.Int64N(windowMs/4 + 1)
			cost := 1 + rng.Int64N(limit)
			w.Prune(now, windowMs)
			if r := w.Check(now, windowMs, limit, cost, k, true); r.Allowed {
				admitted = append(admitted, WindowEntry{now, cost})
			}
			if int64(len(w.Entries)) > k {
				t.Fatalf("log has %d entries, K=%d", len(w.Entries), k)
			}
		}
		for i := range admitted {
			var sum int64
			for j := i; j < len(admitted) && admitted[j].TS < admitted[i].TS+windowMs; j++ {
				sum += admitted[j].Units
			}
			if sum > limit {
				t.Fatalf("%d units within %d ms, limit %d (K=%d)", sum, windowMs, limit, k)
			}
		}
	}
}

// TestSlidingWindowLateTimeKeepsOrder: a request decided with an earlier time than the log's
// last entry (its connection read the clock first, another took the key's lock first) joins
// the last entry, so the log's times stay strictly increasing, as RATELIMIT.SETSTATE requires
// when replicas and the append-only log replay the state. Before, it was appended out of
// order and every replay of the key's state failed with a syntax error.
func TestSlidingWindowLateTimeKeepsOrder(t *testing.T) {
	var w Window
	for _, now := range []int64{1000, 1002, 1001, 1002, 999} {
		if r := w.Check(now, 60000, 10, 1, 1024, true); !r.Allowed {
			t.Fatalf("request at %d denied", now)
		}
	}
	want := []WindowEntry{{TS: 1000, Units: 1}, {TS: 1002, Units: 4}}
	if len(w.Entries) != len(want) || w.Sum != 5 {
		t.Fatalf("entries %v sum %d, want %v sum 5", w.Entries, w.Sum, want)
	}
	for i := range want {
		if w.Entries[i] != want[i] {
			t.Fatalf("entries %v, want %v", w.Entries, want)
		}
	}
}

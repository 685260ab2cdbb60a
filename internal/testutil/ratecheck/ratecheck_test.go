package ratecheck

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func allowed(key string, burst int64, start, end time.Duration) Op {
	return Op{Key: key, Start: at(start), End: at(end), Reply: []int64{0, burst, 0, -1, 1000}}
}

func denied(key string, burst int64, start, end time.Duration) Op {
	return Op{Key: key, Start: at(start), End: at(end), Reply: []int64{1, burst, 0, 1000, 1000}}
}

// gcra is a reference limiter, the algorithm GCRA.LIMIT implements, with an optional
// forgetfulness: reset drops its state as a failover that lost admissions would.
type gcra struct {
	burst  int64
	period time.Duration
	tat    time.Time
}

func (g *gcra) limit(now time.Time, count int64) bool {
	T := g.period / time.Duration(g.burst)
	tat := g.tat
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(time.Duration(count) * T)
	if next.Sub(now) > g.period {
		return false
	}
	g.tat = next
	return true
}

// simulate runs clients against one limiter per key for d: each call is decided at an
// instant between its send and its reply (random latencies), as a server would. forget, if
// set, is called before each decision and may reset a limiter.
func simulate(rng *rand.Rand, clients int, d time.Duration, limits map[string]Limit, forget func(now time.Time, g *gcra)) []Op {
	// keys[0] is the hot key (the one with the largest burst), the others share a quarter.
	keys := make([]string, 0, len(limits))
	state := map[string]*gcra{}
	for k, l := range limits {
		keys = append(keys, k)
		state[k] = &gcra{burst: l.Burst, period: l.Period}
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(limits[b].Burst, limits[a].Burst); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	// Each client sends a call every 2-6 ms.
	type call struct {
		client        int
		key           string
		send, decided time.Time
	}
	var calls []call
	for c := 0; c < clients; c++ {
		for t := time.Duration(rng.Int64N(int64(time.Millisecond))); t < d; t += time.Duration(2000+rng.Int64N(4000)) * time.Microsecond {
			k := keys[0]
			if len(keys) > 1 && rng.IntN(4) == 0 {
				k = keys[1+rng.IntN(len(keys)-1)]
			}
			send := at(t)
			calls = append(calls, call{c, k, send, send.Add(time.Duration(rng.Int64N(int64(2 * time.Millisecond))))})
		}
	}
	// Decide in decision-time order.
	slices.SortFunc(calls, func(a, b call) int { return a.decided.Compare(b.decided) })
	ops := make([]Op, 0, len(calls))
	for _, c := range calls {
		g := state[c.key]
		if forget != nil {
			forget(c.decided, g)
		}
		ok := g.limit(c.decided, 1)
		reply := []int64{1, g.burst, 0, 1, 1}
		if ok {
			reply = []int64{0, g.burst, 0, -1, 1}
		}
		ops = append(ops, Op{Client: c.client, Key: c.key, Start: c.send, End: c.decided.Add(time.Duration(rng.Int64N(int64(2 * time.Millisecond)))), Reply: reply})
		if rng.IntN(200) == 0 { // an error whose outcome is unknown: it may have been admitted
			ops[len(ops)-1].Reply, ops[len(ops)-1].Err = nil, errors.New("TRYAGAIN decision outcome unknown")
		}
	}
	return ops
}

// The §5.3 shape: a hot key (burst 1000 per hour) and cold keys, 32 clients, 40 s.
func TestCorrectLimiterPasses(t *testing.T) {
	limits := map[string]Limit{"rl:{t}:hot": {1000, time.Hour}}
	for i := range 10 {
		limits["rl:{t}:k"+string(rune('0'+i))] = Limit{20, time.Hour}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ops := simulate(rng, 32, 40*time.Second, limits, nil)
	r := Check(ops, limits, Bound{Slack: 1})
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	hot := r.Keys["rl:{t}:hot"]
	// 1000 at once plus one per 3.6 s over 40 s; errors hide a few.
	if hot.Allowed < 1000 || hot.AdmittedUnits > 1011 {
		t.Fatalf("hot key: %+v", hot)
	}
	if hot.MaxExcess > 0 {
		t.Fatalf("an exact GCRA should reach at most the bound itself, excess %d", hot.MaxExcess)
	}
	if hot.Attempts < 100000 || hot.Failed == 0 {
		t.Fatalf("simulation too small to mean anything: %+v", hot)
	}
	t.Logf("hot: %d attempts, %d allowed, %d denied, %d failed, max excess %d", hot.Attempts, hot.Allowed, hot.Denied, hot.Failed, hot.MaxExcess)
}

// A failover that forgets the hot key's state halfway through refills the whole burst: the
// checker must catch it, and name a window that starts before the loss and ends at the first
// admission over the bound.
func TestForgetfulFailoverIsCaught(t *testing.T) {
	limits := map[string]Limit{"hot": {1000, time.Hour}, "cold": {20, time.Hour}}
	rng := rand.New(rand.NewPCG(3, 4))
	lost := at(20 * time.Second)
	done := false
	ops := simulate(rng, 32, 40*time.Second, limits, func(now time.Time, g *gcra) {
		if !done && g.burst == 1000 && !now.Before(lost) {
			g.tat = time.Time{} // the new leader never saw the old one's admissions
			done = true
		}
	})
	r := Check(ops, limits, Bound{Slack: 1})
	err := r.Err()
	if err == nil {
		t.Fatal("over-admission not detected")
	}
	var v *Violation
	if !errors.As(err, &v) || v.Key != "hot" {
		t.Fatalf("wrong report: %v", err)
	}
	if !v.To.After(lost) || v.From.After(lost) {
		t.Fatalf("window %s..%s should straddle the loss at %s", v.From, v.To, lost)
	}
	if v.Admitted <= v.Max || v.Admitted != v.Max+1 {
		// The first window over the bound is over by exactly one: the admission that broke it.
		t.Fatalf("admitted %d, max %d", v.Admitted, v.Max)
	}
	if int64(len(v.Ops)) != v.Admitted {
		t.Fatalf("%d ops listed for %d admitted", len(v.Ops), v.Admitted)
	}
	if r.Keys["cold"].Violation != nil || r.Keys["hot"].MaxExcess < 900 {
		t.Fatalf("cold %+v hot excess %d", r.Keys["cold"].Violation, r.Keys["hot"].MaxExcess)
	}
	msg := err.Error()
	if !strings.Contains(msg, `key "hot" (burst 1000 per 1h0m0s)`) || !strings.Contains(msg, "more") {
		t.Fatalf("message: %s", msg)
	}
	t.Log(msg)
}

// Two leaders at once (split brain) each admitting from their own copy of the state.
func TestSplitBrainIsCaught(t *testing.T) {
	l := Limit{10, 10 * time.Second} // T = 1 s
	var ops []Op
	a, b := &gcra{burst: 10, period: l.Period}, &gcra{burst: 10, period: l.Period}
	for ms := 0; ms < 3000; ms += 10 {
		now := at(time.Duration(ms) * time.Millisecond)
		for _, g := range []*gcra{a, b} {
			op := denied("k", 10, now.Sub(t0), now.Sub(t0))
			if g.limit(now, 1) {
				op = allowed("k", 10, now.Sub(t0), now.Sub(t0))
			}
			ops = append(ops, op)
		}
	}
	v := Check(ops, map[string]Limit{"k": l}, Bound{Slack: 1}).Keys["k"].Violation
	// Each admits one per 10 ms: after 50 ms, 12 > 10 + 0 + 1.
	if v == nil || !v.To.Equal(at(50*time.Millisecond)) || !v.From.Equal(t0) || v.Admitted != 12 || v.Max != 11 {
		t.Fatalf("%+v", v)
	}
}

func TestExactBoundaries(t *testing.T) {
	l := Limit{3, 3 * time.Second} // T = 1 s
	lim := map[string]Limit{"k": l}
	check := func(b Bound, ops ...Op) *KeyReport {
		t.Helper()
		r := Check(ops, lim, b)
		return r.Keys["k"]
	}
	burst := []Op{allowed("k", 3, 0, 0), allowed("k", 3, 0, 0), allowed("k", 3, 0, 0)}

	// A fourth admission half a T later is one too many...
	kr := check(Bound{}, append(burst, allowed("k", 3, 500*time.Millisecond, 500*time.Millisecond))...)
	if kr.Violation == nil || kr.Violation.Admitted != 4 || kr.Violation.Max != 3 || kr.MaxExcess != 1 {
		t.Fatalf("%+v %+v", kr, kr.Violation)
	}
	// ...unless the slack allows it,
	if kr := check(Bound{Slack: 1}, append(burst, allowed("k", 3, 500*time.Millisecond, 500*time.Millisecond))...); kr.Violation != nil {
		t.Fatal(kr.Violation)
	}
	// or a clock skew of up to one T does (⌈skew/T⌉ = 1),
	if kr := check(Bound{ClockSkew: 10 * time.Millisecond}, append(burst, allowed("k", 3, 500*time.Millisecond, 500*time.Millisecond))...); kr.Violation != nil {
		t.Fatal(kr.Violation)
	}
	// and exactly one T later it is within the bound.
	if kr := check(Bound{}, append(burst, allowed("k", 3, time.Second, time.Second))...); kr.Violation != nil || kr.MaxExcess != 0 {
		t.Fatalf("%+v %v", kr, kr.Violation)
	}
	// Slow replies widen the window they are charged to: four admissions all sent at 0 and
	// answered at 2 s may have been decided 2 s apart, so they prove nothing.
	slow := []Op{allowed("k", 3, 0, 2*time.Second), allowed("k", 3, 0, 2*time.Second), allowed("k", 3, 0, 2*time.Second), allowed("k", 3, 0, 2*time.Second)}
	if kr := check(Bound{}, slow...); kr.Violation != nil {
		t.Fatal(kr.Violation)
	}
	// Count weighs admissions: two calls of count 2 at once exceed a burst of 3.
	two := allowed("k", 3, 0, 0)
	two.Count = 2
	if kr := check(Bound{}, two, two); kr.Violation == nil || kr.Violation.Admitted != 4 || kr.AdmittedUnits != 4 {
		t.Fatalf("%+v", kr)
	}
	// Denials and failures are never counted.
	fail := Op{Key: "k", Start: t0, End: t0, Err: errors.New("timeout")}
	kr = check(Bound{}, append(burst, denied("k", 3, 0, 0), fail, fail)...)
	if kr.Violation != nil || kr.Allowed != 3 || kr.Denied != 1 || kr.Failed != 2 || kr.Attempts != 6 {
		t.Fatalf("%+v", kr)
	}
}

// The earliest-ending violation is the one reported, even when a later one is larger.
func TestFirstViolationIsReported(t *testing.T) {
	l := Limit{2, 2 * time.Second}
	var ops []Op
	for range 3 { // 3 at 1 s: over by one
		ops = append(ops, allowed("k", 2, time.Second, time.Second))
	}
	for range 10 { // 10 at 100 s: over by eight
		ops = append(ops, allowed("k", 2, 100*time.Second, 100*time.Second))
	}
	v := Check(ops, map[string]Limit{"k": l}, Bound{}).Keys["k"].Violation
	if v == nil || !v.To.Equal(at(time.Second)) || v.Admitted != 3 {
		t.Fatalf("%+v", v)
	}
}

func TestMalformedReplies(t *testing.T) {
	lim := map[string]Limit{"k": {3, time.Second}}
	bad := []Op{
		{Key: "k", Start: t0, End: t0, Reply: []int64{0, 3, 0}},                        // short
		{Key: "k", Start: t0, End: t0, Reply: []int64{0, 4, 0, -1, 0}},                 // another limit
		{Key: "k", Start: t0, End: t0, Reply: []int64{0, 3, -1, -1, 0}},                // remaining < 0
		{Key: "k", Start: t0, End: t0, Reply: []int64{0, 3, 1, 5, 0}},                  // allowed with a retry
		{Key: "k", Start: t0.Add(time.Second), End: t0, Reply: []int64{1, 3, 0, 1, 1}}, // time travel
		{Key: "other", Start: t0, End: t0, Reply: []int64{1, 3, 0, 1, 1}},              // no limit
	}
	r := Check(bad, lim, Bound{})
	if len(r.Problems) != len(bad) || r.Err() == nil {
		t.Fatalf("%d problems: %q", len(r.Problems), r.Problems)
	}
	if _, err := ReplyInts([]any{int64(0), "x"}); err == nil {
		t.Fatal("ReplyInts accepted a string")
	}
	if got, err := ReplyInts([]any{int64(0), int64(3), int64(2), int64(-1), int64(5)}); err != nil || len(got) != 5 || got[3] != -1 {
		t.Fatal(got, err)
	}
}

func TestBoundMax(t *testing.T) {
	l := Limit{1000, time.Hour}
	// §5.3: 40 s at T = 3.6 s is 11 more; +1 slack.
	if got := (Bound{Slack: 1}).Max(l, 40*time.Second); got != 1012 {
		t.Fatalf("Max = %d", got)
	}
	// 100 ms of skew is one more T's worth at most.
	if got := (Bound{ClockSkew: 100 * time.Millisecond}).Max(l, 0); got != 1001 {
		t.Fatalf("Max = %d", got)
	}
}

// TestSweepMatchesBruteForce compares the O(n log n) sweep with the definition, evaluated
// over every (start, end) pair, on many small random histories.
func TestSweepMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := 0; iter < 2000; iter++ {
		l := Limit{1 + rng.Int64N(4), time.Duration(1+rng.Int64N(5)) * time.Second}
		b := Bound{Slack: rng.Int64N(2)}
		n := 1 + rng.IntN(12)
		var ops []Op
		for range n {
			s := time.Duration(rng.Int64N(int64(6 * time.Second)))
			e := s + time.Duration(rng.Int64N(int64(time.Second)))*time.Duration(rng.IntN(2))
			op := allowed("k", l.Burst, s.Truncate(time.Millisecond), e.Truncate(time.Millisecond))
			op.Count = 1 + rng.Int64N(2)
			ops = append(ops, op)
		}
		kr := Check(append([]Op(nil), ops...), map[string]Limit{"k": l}, b).Keys["k"]

		wantExcess, wantTo := brute(ops, l, b)
		if kr.MaxExcess != wantExcess {
			t.Fatalf("iter %d: excess %d, brute force %d (%+v %+v)", iter, kr.MaxExcess, wantExcess, l, ops)
		}
		switch {
		case wantTo < 0 && kr.Violation != nil:
			t.Fatalf("iter %d: false violation %v", iter, kr.Violation)
		case wantTo >= 0 && (kr.Violation == nil || kr.Violation.To.Sub(t0) != wantTo):
			t.Fatalf("iter %d: violation %v, brute force ends at %v", iter, kr.Violation, wantTo)
		case kr.Violation != nil && kr.Violation.Admitted <= kr.Violation.Max:
			t.Fatalf("iter %d: reported window is within the bound: %v", iter, kr.Violation)
		}
	}
}

// brute returns the max excess and the earliest end of a violating window (-1 if none).
func brute(ops []Op, l Limit, b Bound) (int64, time.Duration) {
	best := int64(-1 << 62)
	firstTo := time.Duration(-1)
	for _, a := range ops {
		for _, z := range ops {
			from, to := a.Start, z.End
			if to.Before(from) {
				continue
			}
			var c int64
			for _, o := range ops {
				if !o.Start.Before(from) && !o.End.After(to) {
					c += o.units()
				}
			}
			w := to.Sub(from)
			ex := c - l.Burst - int64(w)*l.Burst/int64(l.Period)
			best = max(best, ex)
			if ex > b.extra(l) && (firstTo < 0 || to.Sub(t0) < firstTo) {
				firstTo = to.Sub(t0)
			}
		}
	}
	return best, firstTo
}

func TestHistoryConcurrent(t *testing.T) {
	var h History
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				h.Record(Op{Client: c, Key: "k", Start: t0, End: t0, Reply: []int64{1, 1, 0, 1, 1}})
				if i%100 == 0 {
					_ = len(h.Ops())
				}
			}
		}()
	}
	wg.Wait()
	if n := len(h.Ops()); n != 8000 {
		t.Fatal(n)
	}
}

package hotkv_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// The RATELIMIT tests reproduce the specification's vectors (§8.9) through the typed API.

func (e *env) wantStats(name string, want hotkv.RateLimitStats) {
	e.t.Helper()
	got, err := e.stats(name).Result()
	if err != nil {
		e.t.Fatalf("STATS %s: %v", name, err)
	}
	if got != want {
		e.t.Fatalf("STATS %s = %+v, want %+v", name, got, want)
	}
}

func (e *env) list() []string {
	e.t.Helper()
	names, err := do(e, func(c hotkv.Commands) *redis.StringSliceCmd { return c.RateLimitList(ctx) }).Result()
	if err != nil {
		e.t.Fatalf("LIST: %v", err)
	}
	return names
}

func (e *env) rlReset(name, key string) *redis.IntCmd {
	return do(e, func(c hotkv.Commands) *redis.IntCmd { return c.RateLimitReset(ctx, name, key) })
}

func (e *env) drop(name string) *redis.StatusCmd {
	return do(e, func(c hotkv.Commands) *redis.StatusCmd { return c.RateLimitDrop(ctx, name) })
}

func TestRateLimitProductExample(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// L1
		e.mustCreate("api", 100, time.Minute, nil)
		e.wantRL(e.check("api", "user:42", 1), [5]int64{1, 99, 0, 100, 0})
		e.wantRL(e.check("api", "user:42", 5), [5]int64{1, 94, 0, 100, 1})
		e.wantStats("api", hotkv.RateLimitStats{Name: "api", Algorithm: hotkv.SlidingWindow, Limit: 100, WindowMs: 60000,
			UniqueKeys: 1, TotalAllowed: 6})
		if n, err := e.rlReset("api", "user:42").Result(); err != nil || n != 1 {
			t.Fatalf("RESET = %v, %v", n, err)
		}
		if n, err := e.rlReset("api", "user:42").Result(); err != nil || n != 0 {
			t.Fatalf("RESET again = %v, %v", n, err)
		}
		if w := e.stats("api").Val().Window(); w != time.Minute {
			t.Fatalf("Window() = %v", w)
		}
	})
}

func TestRateLimitSlidingWindow(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// L2
		e.mustCreate("a", 3, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.SlidingWindow})
		steps := []struct {
			at   int64
			peek bool
			want [5]int64
		}{
			{0, false, [5]int64{1, 2, 0, 3, 0}},
			{100, false, [5]int64{1, 1, 0, 3, 1}},
			{200, false, [5]int64{1, 0, 0, 3, 2}},
			{300, false, [5]int64{0, 0, 700, 3, 3}},
			{300, true, [5]int64{0, 0, 700, 3, 3}},
			{999, false, [5]int64{0, 0, 1, 3, 3}},
			{1000, false, [5]int64{1, 0, 0, 3, 2}},
			{1000, false, [5]int64{0, 0, 100, 3, 3}},
			{1100, false, [5]int64{1, 0, 0, 3, 2}},
		}
		for _, s := range steps {
			e.at(s.at)
			if s.peek {
				e.wantRL(e.rlPeek("a", "u"), s.want)
			} else {
				e.wantRL(e.check("a", "u", 1), s.want)
			}
		}
		e.wantStats("a", hotkv.RateLimitStats{Name: "a", Algorithm: hotkv.SlidingWindow, Limit: 3, WindowMs: 1000,
			UniqueKeys: 1, TotalAllowed: 5, TotalDenied: 3})
		// One more denial, to check the helpers (not in the vector: it adds to total_denied).
		denied := e.check("a", "u", 1).Val()
		if denied.Allowed || denied.RetryAfter() != 100*time.Millisecond || denied.TooLarge() || denied.UnknownLimiter() {
			t.Fatalf("helpers on %+v", denied)
		}
		e.at(2200)
		e.wantStats("a", hotkv.RateLimitStats{Name: "a", Algorithm: hotkv.SlidingWindow, Limit: 3, WindowMs: 1000,
			UniqueKeys: 0, TotalAllowed: 5, TotalDenied: 4})

		// L3: no edge burst.
		e.at(0)
		e.mustCreate("b", 5, time.Second, nil)
		e.at(999)
		e.wantRL(e.check("b", "u", 5), [5]int64{1, 0, 0, 5, 0})
		e.at(1000)
		e.wantRL(e.check("b", "u", 1), [5]int64{0, 0, 999, 5, 5})
		e.at(1998)
		e.wantRL(e.check("b", "u", 1), [5]int64{0, 0, 1, 5, 5})
		e.at(1999)
		e.wantRL(e.check("b", "u", 5), [5]int64{1, 0, 0, 5, 0})
		tooLarge := e.check("b", "u", 6)
		e.wantRL(tooLarge, [5]int64{0, 0, -1, 5, 5})
		if r := tooLarge.Val(); !r.TooLarge() || r.RetryAfter() >= 0 {
			t.Fatalf("cost 6 of 5: TooLarge %v RetryAfter %v", r.TooLarge(), r.RetryAfter())
		}
		e.wantStats("b", hotkv.RateLimitStats{Name: "b", Algorithm: hotkv.SlidingWindow, Limit: 5, WindowMs: 1000,
			UniqueKeys: 1, TotalAllowed: 10, TotalDenied: 8})

		// L4: costs and retry.
		e.at(0)
		e.mustCreate("c", 10, time.Second, nil)
		for _, s := range []struct {
			at, cost int64
			want     [5]int64
		}{
			{0, 4, [5]int64{1, 6, 0, 10, 0}},
			{200, 4, [5]int64{1, 2, 0, 10, 4}},
			{400, 4, [5]int64{0, 2, 600, 10, 8}},
			{400, 2, [5]int64{1, 0, 0, 10, 8}},
			{500, 3, [5]int64{0, 0, 500, 10, 10}},
			{1000, 3, [5]int64{1, 1, 0, 10, 6}},
		} {
			e.at(s.at)
			e.wantRL(e.check("c", "u", s.cost), s.want)
		}
		e.wantRL(e.rlPeek("c", "u"), [5]int64{1, 1, 0, 10, 9})
	})
}

func TestRateLimitBoundedLog(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// L5
		e.raw("config", "set", "ratelimit.sliding-window-max-entries", "2")
		e.mustCreate("m", 3, time.Second, nil)
		for _, s := range []struct {
			at   int64
			peek bool
			want [5]int64
		}{
			{0, false, [5]int64{1, 2, 0, 3, 0}},
			{100, false, [5]int64{1, 1, 0, 3, 1}},
			{300, false, [5]int64{1, 0, 0, 3, 2}},
			{1000, false, [5]int64{0, 0, 100, 3, 3}},
			{1000, true, [5]int64{0, 0, 100, 3, 3}},
			{1100, false, [5]int64{1, 1, 0, 3, 1}},
		} {
			e.at(s.at)
			if s.peek {
				e.wantRL(e.rlPeek("m", "u"), s.want)
			} else {
				e.wantRL(e.check("m", "u", 1), s.want)
			}
		}
	})
}

func TestRateLimitTokenBucket(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// L6
		e.mustCreate("uploads", 20, 4*time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: 5})
		for _, s := range []struct {
			at, cost int64
			peek     bool
			want     [5]int64
		}{
			{0, 20, false, [5]int64{1, 0, 0, 20, 0}},
			{0, 1, false, [5]int64{0, 0, 200, 20, 20}},
			{199, 0, true, [5]int64{0, 0, 1, 20, 20}},
			{200, 1, false, [5]int64{1, 0, 0, 20, 19}},
			{200, 1, false, [5]int64{0, 0, 200, 20, 20}},
			{1000, 5, false, [5]int64{0, 4, 200, 20, 16}},
			{1000, 21, false, [5]int64{0, 4, -1, 20, 16}},
		} {
			e.at(s.at)
			if s.peek {
				e.wantRL(e.rlPeek("uploads", "u"), s.want)
			} else {
				e.wantRL(e.check("uploads", "u", s.cost), s.want)
			}
		}
		want := hotkv.RateLimitStats{Name: "uploads", Algorithm: hotkv.TokenBucket, Limit: 20, WindowMs: 4000,
			UniqueKeys: 1, TotalAllowed: 21, TotalDenied: 28, RefillPerSec: 5}
		e.wantStats("uploads", want)
		if r := e.stats("uploads").Val().Rate(); r != 5 {
			t.Fatalf("Rate() = %v", r)
		}
		e.at(5000)
		want.UniqueKeys = 0
		e.wantStats("uploads", want)
	})
}

// TestRateLimitBucketEquivalence is L7 and L8: default rates, and a leaky bucket replying
// exactly like a token bucket.
func TestRateLimitBucketEquivalence(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		for _, algo := range []hotkv.Algorithm{hotkv.TokenBucket, hotkv.LeakyBucket} {
			reset(t, e.admin)
			e.mustCreate("t", 3, time.Second, &hotkv.RateLimitOptions{Algorithm: algo})
			for _, want := range [][5]int64{{1, 2, 0, 3, 0}, {1, 1, 0, 3, 1}, {1, 0, 0, 3, 2}, {0, 0, 334, 3, 3}} {
				e.wantRL(e.check("t", "u", 1), want)
			}
			e.at(333)
			e.wantRL(e.check("t", "u", 1), [5]int64{0, 0, 1, 3, 3})
			e.at(334)
			e.wantRL(e.check("t", "u", 1), [5]int64{1, 0, 0, 3, 2})
			e.wantRL(e.rlPeek("t", "u"), [5]int64{0, 0, 333, 3, 3})
			want := hotkv.RateLimitStats{Name: "t", Algorithm: algo, Limit: 3, WindowMs: 1000,
				UniqueKeys: 1, TotalAllowed: 4, TotalDenied: 2}
			if algo == hotkv.TokenBucket {
				want.RefillPerSec = 3
			} else {
				want.DrainPerSec = 3
			}
			e.wantStats("t", want)
			if r := e.stats("t").Val().Rate(); r != 3 {
				t.Fatalf("%s Rate() = %v", algo, r)
			}
		}
	})
}

func TestRateLimitFractionalRates(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// L9
		e.mustCreate("h", 2, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: 0.5})
		e.wantRL(e.check("h", "u", 2), [5]int64{1, 0, 0, 2, 0})
		e.wantRL(e.check("h", "u", 1), [5]int64{0, 0, 2000, 2, 2})
		e.at(1999)
		e.wantRL(e.check("h", "u", 1), [5]int64{0, 0, 1, 2, 2})
		e.at(2000)
		e.wantRL(e.check("h", "u", 1), [5]int64{1, 0, 0, 2, 1})
		e.wantRL(e.rlPeek("h", "u"), [5]int64{0, 0, 2000, 2, 2})
		if r := e.stats("h").Val().RefillPerSec; r != 0.5 {
			t.Fatalf("refill_per_sec = %v", r)
		}
		// A default rate that is not a short decimal (1000 per 3 s): RESP2 sends
		// "333.3333333333333", RESP3 a double; both read back as the same float64.
		e.mustCreate("third", 1000, 3*time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.LeakyBucket})
		if r := e.stats("third").Val().DrainPerSec; r != 1000.0/3.0 {
			t.Fatalf("drain_per_sec = %v", r)
		}
		// The slowest rate the server accepts for limit 10 is written without an exponent.
		e.mustCreate("slow", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: 0.00000001})
		if r := e.stats("slow").Val().RefillPerSec; r != 0.00000001 {
			t.Fatalf("refill_per_sec = %v", r)
		}
		// Keywords and ALGO values are case-insensitive on the server.
		e.mustCreate("x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: "TOKEN_BUCKET", Refill: 2.5})
		e.wantStats("x", hotkv.RateLimitStats{Name: "x", Algorithm: hotkv.TokenBucket, Limit: 10, WindowMs: 1000, RefillPerSec: 2.5})
	})
}

func TestRateLimitFreshKeys(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// L10
		e.mustCreate("api", 100, time.Minute, nil)
		e.mustCreate("tb", 100, time.Minute, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket})
		e.wantRL(e.rlPeek("api", "x"), [5]int64{1, 100, 0, 100, 0})
		e.wantRL(e.rlPeek("tb", "x"), [5]int64{1, 100, 0, 100, 0})
		e.wantRL(e.check("api", "x", 101), [5]int64{0, 100, -1, 100, 0})
		e.wantStats("api", hotkv.RateLimitStats{Name: "api", Algorithm: hotkv.SlidingWindow, Limit: 100, WindowMs: 60000,
			TotalDenied: 101})
	})
}

func TestRateLimitErrorsAndAdministration(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// L11
		for _, cmd := range []*hotkv.RateLimitCmd{e.check("nolimiter", "u", 1), e.rlPeek("nolimiter", "u")} {
			e.wantRL(cmd, [5]int64{0, 0, 0, 0, 0})
			if !cmd.Val().UnknownLimiter() {
				t.Fatalf("%v: UnknownLimiter() = false", cmd.Args())
			}
		}
		wantErr(t, "cost 0", e.check("nolimiter", "u", 0).Err(), errCost)
		wantErr(t, "cost -1", e.check("nolimiter", "u", -1).Err(), errCost)

		e.mustCreate("api", 100, time.Minute, nil)
		wantErr(t, "create twice", e.create("api", 100, time.Minute, nil), errExists)
		wantErr(t, "reset unknown", e.rlReset("nolimiter", "u").Err(), errNotFound)
		wantErr(t, "stats unknown", e.stats("nolimiter").Err(), errNotFound)
		wantErr(t, "drop unknown", e.drop("nolimiter").Err(), errNotFound)
		if st, err := e.drop("api").Result(); err != nil || st != "OK" {
			t.Fatalf("DROP api = %q, %v", st, err)
		}
		e.wantRL(e.check("api", "user:42", 1), [5]int64{0, 0, 0, 0, 0})
		if names := e.list(); len(names) != 0 {
			t.Fatalf("LIST after DROP = %q", names)
		}

		for _, c := range []struct {
			label  string
			name   string
			limit  int64
			window time.Duration
			opts   *hotkv.RateLimitOptions
			want   string
		}{
			{"empty name", "", 10, time.Second, nil, errName},
			{"513-byte name", strings.Repeat("n", 513), 10, time.Second, nil, errName},
			{"limit 0", "x", 0, time.Second, nil, errLimit},
			{"limit -1", "x", -1, time.Second, nil, errLimit},
			{"limit 0 window 0", "x", 0, 0, nil, errLimit},
			{"window 0", "x", 10, 0, nil, errWindow},
			{"window sub-ms", "x", 10, time.Microsecond, nil, errWindow},
			{"window 10^12+1", "x", 10, 1000000000001 * time.Millisecond, nil, errWindow},
			{"unknown algo", "x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: "fixed_window"}, errSyntax},
			{"refill on sliding window", "x", 10, time.Second, &hotkv.RateLimitOptions{Refill: 5}, errSyntax},
			{"refill on leaky bucket", "x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.LeakyBucket, Refill: 5}, errSyntax},
			{"drain on token bucket", "x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Drain: 5}, errSyntax},
			{"negative rate", "x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: -1}, errRate},
			{"NaN rate", "x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: math.NaN()}, errRate},
			{"infinite rate", "x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: math.Inf(1)}, errRate},
			{"rate too slow", "x", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: 0.000000001}, errRate},
		} {
			wantErr(t, c.label, e.create(c.name, c.limit, c.window, c.opts), c.want)
		}

		// max-limiters
		e.mustCreate("api", 100, time.Minute, nil)
		e.raw("config", "set", "ratelimit.max-limiters", "1")
		wantErr(t, "max-limiters", e.create("other", 1, time.Second, nil), errExists)
		e.drop("api")
		e.mustCreate("other", 1, time.Second, nil)
		e.raw("config", "set", "ratelimit.max-limiters", "10000")

		// LIST is sorted bytewise.
		e.drop("other")
		for _, n := range []string{"b", "a", "B"} {
			e.mustCreate(n, 1, time.Second, nil)
		}
		if names := e.list(); strings.Join(names, ",") != "B,a,b" {
			t.Fatalf("LIST = %q", names)
		}
		// Limiters are not keys: FLUSHDB keeps them, FLUSHALL drops them.
		e.raw("flushdb")
		if names := e.list(); len(names) != 3 {
			t.Fatalf("LIST after FLUSHDB = %q", names)
		}
		e.raw("flushall")
		if names := e.list(); len(names) != 0 {
			t.Fatalf("LIST after FLUSHALL = %q", names)
		}
	})
}

func TestRateLimitResultHelpers(t *testing.T) {
	ok := hotkv.RateLimitResult{Allowed: true, Remaining: 99, Limit: 100}
	if ok.RetryAfter() != 0 || ok.TooLarge() || ok.UnknownLimiter() {
		t.Fatalf("allowed helpers: %v %v %v", ok.RetryAfter(), ok.TooLarge(), ok.UnknownLimiter())
	}
	st := hotkv.RateLimitStats{WindowMs: 1500, DrainPerSec: 2}
	if st.Window() != 1500*time.Millisecond || st.Rate() != 2 {
		t.Fatalf("stats helpers: %v %v", st.Window(), st.Rate())
	}
	if (hotkv.RateLimitStats{}).Rate() != 0 {
		t.Fatal("sliding window Rate() != 0")
	}
}

// TestStatsReplyShapes proves both parse paths run: RESP2 delivers RATELIMIT.STATS as a flat
// array with the rate as a bulk string, RESP3 as a map with the rate as a double.
func TestStatsReplyShapes(t *testing.T) {
	for _, proto := range []int{2, 3} {
		reset(t, newAdmin(t))
		c := hotkv.NewClient(&redis.Options{Addr: serverAddr, Protocol: proto})
		defer c.Close()
		if err := c.RateLimitCreate(ctx, "r", 1000, 3*time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket}).Err(); err != nil {
			t.Fatal(err)
		}
		cmd := c.RateLimitStats(ctx, "r")
		switch raw := cmd.Cmd().Val().(type) {
		case []any:
			// The rate is the spec's last field; HotKV's shadow fields follow it.
			if proto != 2 || len(raw) != 20 || raw[15] != "333.3333333333333" || raw[16] != "shadow" {
				t.Fatalf("RESP%d: flat array %v", proto, raw)
			}
		case map[any]any:
			if proto != 3 || raw["refill_per_sec"] != 1000.0/3.0 {
				t.Fatalf("RESP%d: map %v", proto, raw)
			}
		default:
			t.Fatalf("RESP%d: reply %T", proto, raw)
		}
		want := hotkv.RateLimitStats{Name: "r", Algorithm: hotkv.TokenBucket, Limit: 1000, WindowMs: 3000, RefillPerSec: 1000.0 / 3.0}
		if got, err := cmd.Result(); err != nil || got != want {
			t.Fatalf("RESP%d: %+v, %v", proto, got, err)
		}
	}
}

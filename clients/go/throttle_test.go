package hotkv_test

import (
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// The CL.THROTTLE tests reproduce the specification's vectors (§6.6) in both throttle-compat
// modes.

type throttleRow struct {
	at         int64
	q          int64
	cell, dfly [5]int64
}

// compatModes runs fn once per throttle-compat mode; want picks that mode's column.
func compatModes(e *env, fn func(want func(cell, dfly [5]int64) [5]int64)) {
	for _, mode := range []string{"redis-cell", "dragonfly"} {
		reset(e.t, e.admin)
		e.raw("config", "set", "throttle-compat", mode)
		fn(func(cell, dfly [5]int64) [5]int64 {
			if mode == "dragonfly" {
				return dfly
			}
			return cell
		})
	}
}

func TestCLThrottleRedisCellTable(t *testing.T) {
	// C1: CL.THROTTLE k 4 1 1 [q]: limit 5, one unit per second.
	rows := []throttleRow{
		{0, 6, [5]int64{1, 5, 5, -1, 0}, [5]int64{1, 5, 5, -1, 0}},
		{0, 1, [5]int64{0, 5, 4, -1, 1}, [5]int64{0, 5, 4, -1, 2}},
		{0, 1, [5]int64{0, 5, 3, -1, 2}, [5]int64{0, 5, 3, -1, 3}},
		{0, 1, [5]int64{0, 5, 2, -1, 3}, [5]int64{0, 5, 2, -1, 4}},
		{0, 1, [5]int64{0, 5, 1, -1, 4}, [5]int64{0, 5, 1, -1, 5}},
		{0, 1, [5]int64{0, 5, 0, -1, 5}, [5]int64{0, 5, 0, -1, 6}},
		{0, 1, [5]int64{1, 5, 0, 1, 5}, [5]int64{1, 5, 0, 2, 6}},
		{3000, 1, [5]int64{0, 5, 2, -1, 3}, [5]int64{0, 5, 2, -1, 4}},
		{3100, 1, [5]int64{0, 5, 1, -1, 4}, [5]int64{0, 5, 1, -1, 4}},
		{4000, 1, [5]int64{0, 5, 1, -1, 4}, [5]int64{0, 5, 1, -1, 5}},
		{8000, 1, [5]int64{0, 5, 4, -1, 1}, [5]int64{0, 5, 4, -1, 2}},
		{9500, 1, [5]int64{0, 5, 4, -1, 1}, [5]int64{0, 5, 4, -1, 2}},
		{9500, 0, [5]int64{0, 5, 4, -1, 1}, [5]int64{0, 5, 4, -1, 2}},
		{9500, 2, [5]int64{0, 5, 2, -1, 3}, [5]int64{0, 5, 2, -1, 4}},
		{9500, 5, [5]int64{1, 5, 2, 3, 3}, [5]int64{1, 5, 2, 4, 4}},
		{15000, 6, [5]int64{1, 5, 5, -1, 0}, [5]int64{1, 5, 5, -1, 0}},
	}
	forEachEnv(t, func(t *testing.T, e *env) {
		compatModes(e, func(want func(cell, dfly [5]int64) [5]int64) {
			for _, r := range rows {
				e.at(r.at)
				e.wantThrottle(e.throttle("k", 4, 1, time.Second, r.q), want(r.cell, r.dfly))
			}
		})
	})
}

func TestCLThrottleDragonflyTable(t *testing.T) {
	// C2: CL.THROTTLE foo 4 1 10 [q]: limit 5, one unit per 10 s.
	rows := []throttleRow{
		{0, 6, [5]int64{1, 5, 5, -1, 0}, [5]int64{1, 5, 5, -1, 0}},
		{0, 1, [5]int64{0, 5, 4, -1, 10}, [5]int64{0, 5, 4, -1, 11}},
		{0, 1, [5]int64{0, 5, 3, -1, 20}, [5]int64{0, 5, 3, -1, 21}},
		{0, 1, [5]int64{0, 5, 2, -1, 30}, [5]int64{0, 5, 2, -1, 31}},
		{0, 1, [5]int64{0, 5, 1, -1, 40}, [5]int64{0, 5, 1, -1, 41}},
		{0, 1, [5]int64{0, 5, 0, -1, 50}, [5]int64{0, 5, 0, -1, 51}},
		{0, 1, [5]int64{1, 5, 0, 10, 50}, [5]int64{1, 5, 0, 11, 51}},
		{30000, 1, [5]int64{0, 5, 2, -1, 30}, [5]int64{0, 5, 2, -1, 31}},
		{31000, 1, [5]int64{0, 5, 1, -1, 39}, [5]int64{0, 5, 1, -1, 40}},
		{40000, 1, [5]int64{0, 5, 1, -1, 40}, [5]int64{0, 5, 1, -1, 41}},
		{80000, 1, [5]int64{0, 5, 4, -1, 10}, [5]int64{0, 5, 4, -1, 11}},
		{95000, 1, [5]int64{0, 5, 4, -1, 10}, [5]int64{0, 5, 4, -1, 11}},
		{95000, 0, [5]int64{0, 5, 4, -1, 10}, [5]int64{0, 5, 4, -1, 11}},
		{95000, 2, [5]int64{0, 5, 2, -1, 30}, [5]int64{0, 5, 2, -1, 31}},
		{95000, 5, [5]int64{1, 5, 2, 30, 30}, [5]int64{1, 5, 2, 31, 31}},
	}
	forEachEnv(t, func(t *testing.T, e *env) {
		compatModes(e, func(want func(cell, dfly [5]int64) [5]int64) {
			for _, r := range rows {
				e.at(r.at)
				e.wantThrottle(e.throttle("foo", 4, 1, 10*time.Second, r.q), want(r.cell, r.dfly))
			}
			// Row 18: a 2 us interval.
			e.at(0)
			e.wantThrottle(e.throttle("bar", 4, 500000, time.Second, 2), want([5]int64{0, 5, 3, -1, 0}, [5]int64{0, 5, 3, -1, 1}))
			if got := e.raw("pttl", "bar"); got != int64(1) {
				t.Fatalf("C2 row 18 PTTL = %v", got)
			}
		})
	})
}

func TestCLThrottleExamples(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		compatModes(e, func(want func(cell, dfly [5]int64) [5]int64) {
			// C3
			e.wantThrottle(e.throttle("user123", 0, 1, 10*time.Second, 1), want([5]int64{0, 1, 0, -1, 10}, [5]int64{0, 1, 0, -1, 11}))
			e.wantThrottle(e.throttle("user123", 0, 1, 10*time.Second, 1), want([5]int64{1, 1, 0, 10, 10}, [5]int64{1, 1, 0, 11, 11}))
			e.at(1)
			cmd := e.throttle("user123", 0, 1, 10*time.Second, 1)
			e.wantThrottle(cmd, [5]int64{1, 1, 0, 10, 10})
			if r := cmd.Val(); r.Allowed() || r.TooLarge() || r.RetryAfter() != 10*time.Second || r.ResetAfter() != 10*time.Second {
				t.Fatalf("helpers: %v %v %v %v", r.Allowed(), r.TooLarge(), r.RetryAfter(), r.ResetAfter())
			}
			e.at(1000)
			e.wantThrottle(e.throttle("user123", 0, 1, 10*time.Second, 1), want([5]int64{1, 1, 0, 9, 9}, [5]int64{1, 1, 0, 10, 10}))

			e.at(0)
			e.wantThrottle(e.throttle("u2", 0, 1, 2*time.Second, 1), want([5]int64{0, 1, 0, -1, 2}, [5]int64{0, 1, 0, -1, 3}))
			e.at(1)
			e.wantThrottle(e.throttle("u2", 0, 1, 2*time.Second, 1), [5]int64{1, 1, 0, 2, 2})
			e.at(2000)
			e.wantThrottle(e.throttle("u2", 0, 1, 2*time.Second, 1), want([5]int64{0, 1, 0, -1, 2}, [5]int64{0, 1, 0, -1, 3}))

			e.at(0)
			e.wantThrottle(e.throttle("u3", 20, 120, time.Minute, 1), [5]int64{0, 21, 20, -1, 1})
			// quantity 0 only reports and writes nothing.
			e.wantThrottle(e.throttle("q0", 4, 1, time.Second, 0), [5]int64{0, 5, 5, -1, 0})
			if got := e.raw("exists", "q0"); got != int64(0) {
				t.Fatalf("quantity 0 EXISTS = %v", got)
			}
			e.wantThrottle(e.throttle("ns", 0, 1000000000, time.Second, 1), want([5]int64{0, 1, 0, -1, 0}, [5]int64{0, 1, 0, -1, 1}))
			e.wantThrottle(e.throttle("long", 6, 1, 1000000000*time.Second, 1), want([5]int64{0, 7, 6, -1, 1000000000}, [5]int64{0, 7, 6, -1, 1000000001}))

			// A quantity above the limit can never pass.
			tooLarge := e.throttle("big", 4, 1, time.Second, 6)
			if r := tooLarge.Val(); !r.TooLarge() || r.RetryAfter() >= 0 {
				t.Fatalf("quantity 6 of 5: TooLarge %v RetryAfter %v", r.TooLarge(), r.RetryAfter())
			}
		})
	})
}

func TestCLThrottleSharesGCRAState(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		compatModes(e, func(want func(cell, dfly [5]int64) [5]int64) {
			// C5
			e.wantGCRA(e.limit("x", 10*time.Second, 1, 1), [5]int64{0, 1, 0, -1, 10000})
			e.wantThrottle(e.throttle("x", 0, 1, 10*time.Second, 1), want([5]int64{1, 1, 0, 10, 10}, [5]int64{1, 1, 0, 11, 11}))
			e.at(10000)
			e.wantThrottle(e.throttle("x", 0, 1, 10*time.Second, 1), want([5]int64{0, 1, 0, -1, 10}, [5]int64{0, 1, 0, -1, 11}))
			if got := e.raw("get", "x"); got != "1700000020000000000" {
				t.Fatalf("C5 GET = %v", got)
			}
			e.wantGCRA(e.peek("x", 10*time.Second, 1, 1), [5]int64{1, 1, 0, 10000, 10000})
			e.at(0)
			e.wantThrottle(e.throttle("y", 9, 10, time.Minute, 3), want([5]int64{0, 10, 7, -1, 18}, [5]int64{0, 10, 7, -1, 19}))
			e.wantGCRA(e.limit("y", time.Minute, 10, 1), [5]int64{0, 10, 6, -1, 24000})
			// GCRA.RESET deletes CL.THROTTLE state too.
			if n := do(e, func(c hotkv.Commands) *redis.IntCmd { return c.GCRAReset(ctx, "y") }).Val(); n != 1 {
				t.Fatalf("GCRA.RESET y = %d", n)
			}
		})
	})
}

func TestCLThrottleErrors(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		for _, c := range []struct {
			label           string
			maxBurst, count int64
			period          time.Duration
			q               int64
			want            string
		}{
			{label: "max_burst -1", maxBurst: -1, count: 1, period: time.Second, q: 1, want: errRange},
			{label: "quantity -1", maxBurst: 1, count: 1, period: time.Second, q: -1, want: errRange},
			{label: "count 0", maxBurst: 1, count: 0, period: time.Second, q: 1, want: errZeroRate},
			{label: "period 0", maxBurst: 1, count: 1, period: 0, q: 1, want: errZeroRate},
			// The period is sent in whole seconds: under a second is 0, the zero-rate error.
			{label: "period 500ms", maxBurst: 1, count: 1, period: 500 * time.Millisecond, q: 1, want: errZeroRate},
			{label: "interval under 1 ns", maxBurst: 0, count: 2000000000, period: time.Second, q: 1, want: errZeroRate},
			{label: "limit overflows", maxBurst: math.MaxInt64, count: 1, period: time.Second, q: 1, want: errRange},
			{label: "DVT overflows", maxBurst: math.MaxInt64 - 1, count: 1, period: time.Second, q: 1, want: errRange},
			{label: "now + DVT overflows", maxBurst: 7, count: 1, period: 1000000000 * time.Second, q: 1, want: errRange},
		} {
			wantErr(t, c.label, e.throttle("k", c.maxBurst, c.count, c.period, c.q).Err(), c.want)
		}
		e.raw("set", "s", "hello")
		wantErr(t, "string key", e.throttle("s", 1, 1, time.Second, 1).Err(), errWrongType)
		if got := e.raw("get", "s"); got != "hello" {
			t.Fatalf("GET s = %v", got)
		}
		wantErr(t, "arguments first", e.throttle("s", 1, 0, time.Second, 1).Err(), errZeroRate)
	})
}

package hotkv_test

import (
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// The GCRA tests reproduce the specification's vectors (§3.5, §4, §5) through the typed API.
// Vector names are the specification's.

const minute = time.Minute

func TestGCRALimitVectors(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// V1-V3c
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{0, 10, 9, -1, 6000})
		if got := e.raw("pttl", "k"); got != int64(6000) {
			t.Fatalf("V1 PTTL = %v", got)
		}
		if got := e.raw("get", "k"); got != "1700000006000000000" {
			t.Fatalf("V1 GET = %v", got)
		}
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{0, 10, 8, -1, 12000})
		e.wantGCRA(e.limit("k", minute, 10, 10), [5]int64{1, 10, 0, 12000, 12000})
		if got := e.raw("get", "k"); got != "1700000012000000000" {
			t.Fatalf("V3 GET = %v", got)
		}
		if got := e.raw("pttl", "k"); got != int64(12000) {
			t.Fatalf("V3 PTTL = %v", got)
		}
		e.at(11999)
		e.wantGCRA(e.limit("k", minute, 10, 10), [5]int64{1, 10, 0, 1, 1})
		e.at(12000)
		e.wantGCRA(e.limit("k", minute, 10, 10), [5]int64{0, 10, 0, -1, 60000})
	})
}

func TestGCRALimitBurst(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// V4: ten calls in one batch (one pipeline or transaction in those modes).
		var cmds []*hotkv.GCRACmd
		e.run(func(c hotkv.Commands) {
			for range 10 {
				cmds = append(cmds, c.GCRALimit(ctx, "k", minute, 10, 1))
			}
		})
		for i, cmd := range cmds {
			e.wantGCRA(cmd, [5]int64{0, 10, int64(9 - i), -1, int64(6000 * (i + 1))})
		}
		// V4b, V4c
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{1, 10, 0, 6000, 60000})
		if got := e.raw("pttl", "k"); got != int64(60000) {
			t.Fatalf("V4b PTTL = %v", got)
		}
		e.at(1000)
		if got := e.raw("pttl", "k"); got != int64(59000) {
			t.Fatalf("V4c PTTL = %v", got)
		}
	})
}

func TestGCRALimitPerMillisecond(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// V5, V5b
		resets := []int64{6000, 11999, 17998, 23997, 29996, 35995, 41994, 47993, 53992, 59991}
		for i, reset := range resets {
			e.at(int64(i))
			e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{0, 10, int64(9 - i), -1, reset})
		}
		e.at(10)
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{1, 10, 0, 5990, 59990})
	})
}

func TestGCRALimitRefill(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// V6-V6f
		e.wantGCRA(e.limit("k", minute, 10, 10), [5]int64{0, 10, 0, -1, 60000})
		e.at(5999)
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{1, 10, 0, 1, 54001})
		e.at(6000)
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{0, 10, 0, -1, 60000})
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{1, 10, 0, 6000, 60000})
		e.at(18000)
		e.wantGCRA(e.limit("k", minute, 10, 2), [5]int64{0, 10, 0, -1, 60000})
		e.at(30000)
		e.wantGCRA(e.limit("k", minute, 10, 3), [5]int64{1, 10, 0, 6000, 48000})
	})
}

func TestGCRALimitTooLarge(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// V7, V7b
		e.wantGCRA(e.limit("k", minute, 10, 10), [5]int64{0, 10, 0, -1, 60000})
		cmd := e.limit("k", minute, 10, 11)
		e.wantGCRA(cmd, [5]int64{1, 10, 0, -1, 60000})
		if r := cmd.Val(); !r.TooLarge() || r.RetryAfter() >= 0 || r.Allowed() {
			t.Fatalf("V7 helpers: TooLarge %v RetryAfter %v Allowed %v", r.TooLarge(), r.RetryAfter(), r.Allowed())
		}
		e.at(30000)
		e.wantGCRA(e.limit("k", minute, 10, 11), [5]int64{1, 10, 0, -1, 30000})
		e.at(60000)
		e.wantGCRA(e.limit("k", minute, 10, 11), [5]int64{1, 10, 0, -1, 0})
		e.at(60001)
		if got := e.raw("exists", "k"); got != int64(0) {
			t.Fatalf("V7b EXISTS = %v", got)
		}
		// V8: never allowed, nothing written.
		e.at(0)
		e.wantGCRA(e.limit("v8", time.Second, 5, 6), [5]int64{1, 5, 0, -1, 0})
		if got := e.raw("exists", "v8"); got != int64(0) {
			t.Fatalf("V8 EXISTS = %v", got)
		}
	})
}

func TestGCRALimitSubMillisecondIntervals(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// V9, V9b
		for i, want := range [][5]int64{{0, 3, 2, -1, 334}, {0, 3, 1, -1, 667}, {0, 3, 0, -1, 1000}, {1, 3, 0, 334, 1000}} {
			_ = i
			e.wantGCRA(e.limit("k", time.Second, 3, 1), want)
		}
		e.at(333)
		e.wantGCRA(e.limit("k", time.Second, 3, 1), [5]int64{1, 3, 0, 1, 667})
		e.at(334)
		e.wantGCRA(e.limit("k", time.Second, 3, 1), [5]int64{0, 3, 0, -1, 1000})
		e.wantGCRA(e.limit("k", time.Second, 3, 1), [5]int64{1, 3, 0, 333, 1000})

		// V10
		e.at(0)
		e.wantGCRA(e.limit("v10", time.Millisecond, 1, 1), [5]int64{0, 1, 0, -1, 1})
		e.wantGCRA(e.limit("v10", time.Millisecond, 1, 1), [5]int64{1, 1, 0, 1, 1})
		e.at(1)
		e.wantGCRA(e.limit("v10", time.Millisecond, 1, 1), [5]int64{0, 1, 0, -1, 1})

		// V11
		e.at(0)
		for _, want := range [][5]int64{{0, 3, 2, -1, 1}, {0, 3, 1, -1, 1}, {0, 3, 0, -1, 1}, {1, 3, 0, 1, 1}} {
			e.wantGCRA(e.limit("v11", time.Millisecond, 3, 1), want)
		}
		// V12, V12b: the interval clamps to 1 ns.
		e.wantGCRA(e.limit("v12", time.Millisecond, 2000000, 1), [5]int64{0, 2000000, 1999999, -1, 1})
		e.wantGCRA(e.limit("v12b", time.Millisecond, 2000000, 2000000), [5]int64{0, 2000000, 0, -1, 2})
		e.wantGCRA(e.limit("v12b", time.Millisecond, 2000000, 1), [5]int64{1, 2000000, 0, 1, 2})
		// V13
		e.wantGCRA(e.limit("v13", time.Millisecond, 1000000000000, 1), [5]int64{0, 1000000000000, 999999999999, -1, 1})
	})
}

func TestGCRALimitExtremes(t *testing.T) {
	// The longest period the server accepts, 10^12 ms, still fits a time.Duration (10^18 ns).
	const longest = 1000000000000 * time.Millisecond
	forEachEnv(t, func(t *testing.T, e *env) {
		// V14
		e.wantGCRA(e.limit("v14", longest, 1, 1), [5]int64{0, 1, 0, -1, 1000000000000})
		e.wantGCRA(e.limit("v14", longest, 1, 1), [5]int64{1, 1, 0, 1000000000000, 1000000000000})
		if got := e.raw("get", "v14"); got != "2700000000000000000" {
			t.Fatalf("V14 GET = %v", got)
		}
		// V15
		e.wantGCRA(e.limit("v15", longest, 3, 1), [5]int64{0, 3, 2, -1, 333333333334})
		e.wantGCRA(e.limit("v15", longest, 3, 1), [5]int64{0, 3, 1, -1, 666666666667})
		// V16
		e.wantGCRA(e.limit("v16", minute, math.MaxInt64, 1), [5]int64{0, math.MaxInt64, math.MaxInt64 - 1, -1, 1})
		// V22: an integer value is state (a TAT in the past).
		for _, v := range []string{"123", "-5"} {
			e.raw("set", "n", v)
			e.wantGCRA(e.limit("n", minute, 10, 1), [5]int64{0, 10, 9, -1, 6000})
			if got := e.raw("get", "n"); got != "1700000006000000000" {
				t.Fatalf("V22 GET = %v", got)
			}
			if got := e.raw("pttl", "n"); got != int64(6000) {
				t.Fatalf("V22 PTTL = %v", got)
			}
		}
		// V23: a TAT far in the future is state too.
		e.raw("set", "big", "9223372036854775807")
		e.wantGCRA(e.limit("big", minute, 10, 1), [5]int64{1, 10, 0, 7523371982855, 7523372036855})
		if got := e.raw("get", "big"); got != "9223372036854775807" {
			t.Fatalf("V23 GET = %v", got)
		}
		if got := e.raw("pttl", "big"); got != int64(-1) {
			t.Fatalf("V23 PTTL = %v", got)
		}
		// V24: parameters apply per call.
		e.wantGCRA(e.limit("v24", minute, 10, 5), [5]int64{0, 10, 5, -1, 30000})
		e.at(1000)
		e.wantGCRA(e.limit("v24", time.Second, 10, 1), [5]int64{1, 10, 0, 28100, 29000})
		e.wantGCRA(e.limit("v24", 2*minute, 10, 1), [5]int64{0, 10, 6, -1, 41000})
	})
}

func TestGCRAErrors(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		for _, c := range []struct {
			period      time.Duration
			burst, cnt  int64
			want, label string
		}{
			{0, 10, 1, errPeriod, "V17 period 0"},
			{-time.Millisecond, 10, 1, errPeriod, "V17 period -1"},
			{1000000000001 * time.Millisecond, 10, 1, errPeriod, "V17 period 10^12+1"},
			// A sub-millisecond duration truncates to 0 and the server rejects it.
			{500 * time.Microsecond, 10, 1, errPeriod, "sub-ms period"},
			{minute, 0, 1, errBurst, "V18 burst 0"},
			{minute, -3, 1, errBurst, "V18 burst -3"},
			{minute, 10, 0, errCount, "V19 count 0"},
			{minute, 10, -1, errCount, "V19 count -1"},
			{0, 0, 0, errPeriod, "V20"},
		} {
			wantErr(t, c.label, e.limit("k", c.period, c.burst, c.cnt).Err(), c.want)
			wantErr(t, c.label+" (peek)", e.peek("k", c.period, c.burst, c.cnt).Err(), c.want)
		}
		// V21, V21b, V21c, V21d: keys that are not GCRA state are refused and left alone. The
		// server has only the string type so far, so a non-integer string stands in for the
		// vectors' list.
		e.raw("set", "l", "a")
		wantErr(t, "V21", e.limit("l", minute, 10, 1).Err(), errWrongType)
		if got := e.raw("get", "l"); got != "a" {
			t.Fatalf("V21 GET = %v", got)
		}
		wantErr(t, "V21d", e.limit("l", 0, 10, 1).Err(), errPeriod)
		e.raw("set", "s", "hello", "ex", 100)
		wantErr(t, "V21b", e.limit("s", minute, 10, 1).Err(), errWrongType)
		if got := e.raw("get", "s"); got != "hello" {
			t.Fatalf("V21b GET = %v", got)
		}
		if got := e.raw("ttl", "s"); got != int64(100) {
			t.Fatalf("V21b TTL = %v", got)
		}
		e.raw("set", "f", "1.5")
		e.raw("set", "e", "")
		wantErr(t, "V21c f", e.limit("f", minute, 10, 1).Err(), errWrongType)
		wantErr(t, "V21c e", e.limit("e", minute, 10, 1).Err(), errWrongType)
		// P5
		wantErr(t, "P5 list", e.peek("l", minute, 10, 1).Err(), errWrongType)
		wantErr(t, "P5 string", e.peek("s", minute, 10, 1).Err(), errWrongType)
		// A failed command's typed helpers return the zero result.
		if r := e.limit("s", minute, 10, 1).Val(); r != (hotkv.GCRAResult{}) {
			t.Fatalf("Val after error = %+v", r)
		}
	})
}

func TestGCRAPeekVectors(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// P1
		e.wantGCRA(e.peek("k", minute, 10, 1), [5]int64{0, 10, 9, -1, 6000})
		if got := e.raw("exists", "k"); got != int64(0) {
			t.Fatalf("P1 EXISTS = %v", got)
		}
		// P2
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{0, 10, 9, -1, 6000})
		e.wantGCRA(e.peek("k", minute, 10, 1), [5]int64{0, 10, 8, -1, 12000})
		if got := e.raw("get", "k"); got != "1700000006000000000" {
			t.Fatalf("P2 GET = %v", got)
		}
		if got := e.raw("pttl", "k"); got != int64(6000) {
			t.Fatalf("P2 PTTL = %v", got)
		}
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{0, 10, 8, -1, 12000})
		// P3 (after V4: ten units spent)
		e.wantGCRA(e.limit("k", minute, 10, 8), [5]int64{0, 10, 0, -1, 60000})
		e.wantGCRA(e.peek("k", minute, 10, 1), [5]int64{1, 10, 0, 6000, 60000})
		e.wantGCRA(e.peek("k", minute, 10, 10), [5]int64{1, 10, 0, 60000, 60000})
		e.wantGCRA(e.peek("k", minute, 10, 11), [5]int64{1, 10, 0, -1, 60000})
		// P4
		e.at(6000)
		e.wantGCRA(e.peek("k", minute, 10, 1), [5]int64{0, 10, 0, -1, 60000})
		e.wantGCRA(e.peek("k", minute, 10, 2), [5]int64{1, 10, 0, 6000, 54000})
		if got := e.raw("pttl", "k"); got != int64(54000) {
			t.Fatalf("P4 PTTL = %v", got)
		}
	})
}

func TestGCRAReset(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		reset := func(keys ...string) *redis.IntCmd {
			return do(e, func(c hotkv.Commands) *redis.IntCmd { return c.GCRAReset(ctx, keys...) })
		}
		// V26, V26b
		e.limit("k", minute, 10, 1)
		e.limit("j", minute, 10, 1)
		if n, err := reset("k", "j", "nokey", "k").Result(); err != nil || n != 2 {
			t.Fatalf("V26 GCRA.RESET = %v, %v", n, err)
		}
		e.wantGCRA(e.limit("k", minute, 10, 1), [5]int64{0, 10, 9, -1, 6000})
		e.at(7000)
		if n, err := reset("k").Result(); err != nil || n != 0 {
			t.Fatalf("V26b GCRA.RESET = %v, %v", n, err)
		}
		// R1: all or nothing.
		e.at(0)
		e.limit("k", minute, 10, 1)
		e.raw("set", "s", "hello")
		wantErr(t, "R1", reset("k", "s").Err(), errWrongType)
		if got := e.raw("exists", "k"); got != int64(1) {
			t.Fatalf("R1 EXISTS = %v", got)
		}
		// R2 (a non-integer string instead of a list, as in TestGCRAErrors)
		e.raw("set", "l", "a")
		wantErr(t, "R2", reset("nokey", "l").Err(), errWrongType)
		// R3
		e.raw("set", "n", "42")
		if n, err := reset("n").Result(); err != nil || n != 1 {
			t.Fatalf("R3 GCRA.RESET = %v, %v", n, err)
		}
		// R4
		e.raw("set", "x", "hello", "px", 1)
		e.at(2)
		if n, err := reset("x").Result(); err != nil || n != 0 {
			t.Fatalf("R4 GCRA.RESET = %v, %v", n, err)
		}
		// V27: no key is an arity error, with the server's text.
		wantErr(t, "V27", reset().Err(), "ERR wrong number of arguments for 'gcra.reset' command")
	})
}

// TestTransactionSharesOneTimeSample is V28: with the clock running, two GCRA.LIMIT calls in
// one TxPipelined see the same time, so the second's wait is exactly the period.
func TestTransactionSharesOneTimeSample(t *testing.T) {
	admin := newAdmin(t)
	reset(t, admin)
	if err := admin.Do(ctx, "debug", "clock", "reset").Err(); err != nil {
		t.Fatal(err)
	}
	c := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer c.Close()
	for i := range 20 {
		var a, b *hotkv.GCRACmd
		key := "v28:" + string(rune('a'+i))
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			x := hotkv.Wrap(p)
			a = x.GCRALimit(ctx, key, time.Second, 1, 1)
			b = x.GCRALimit(ctx, key, time.Second, 1, 1)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := gcraFive(a.Val()); got != [5]int64{0, 1, 0, -1, 1000} {
			t.Fatalf("first = %v", got)
		}
		if got := gcraFive(b.Val()); got != [5]int64{1, 1, 0, 1000, 1000} {
			t.Fatalf("second = %v", got)
		}
	}
}

func TestGCRAResultHelpers(t *testing.T) {
	allowed := hotkv.GCRAResult{Limit: 10, Remaining: 9, RetryAfterMs: -1, ResetAfterMs: 6000}
	if !allowed.Allowed() || allowed.TooLarge() || allowed.RetryAfter() != 0 || allowed.ResetAfter() != 6*time.Second {
		t.Fatalf("allowed helpers: %v %v %v %v", allowed.Allowed(), allowed.TooLarge(), allowed.RetryAfter(), allowed.ResetAfter())
	}
	denied := hotkv.GCRAResult{Denied: true, Limit: 10, RetryAfterMs: 6000, ResetAfterMs: 60000}
	if denied.Allowed() || denied.TooLarge() || denied.RetryAfter() != 6*time.Second || denied.ResetAfter() != time.Minute {
		t.Fatalf("denied helpers: %v %v %v %v", denied.Allowed(), denied.TooLarge(), denied.RetryAfter(), denied.ResetAfter())
	}
}

// TestPipelineNotExecuted checks that reading a typed command before its pipeline ran is an
// error rather than a zero result that looks like an allowed request.
func TestPipelineNotExecuted(t *testing.T) {
	c := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer c.Close()
	pipe := c.Pipeline()
	cmd := hotkv.Wrap(pipe).GCRALimit(ctx, "pending", minute, 10, 1)
	if err := cmd.Err(); err == nil {
		t.Fatal("no error before Exec")
	}
	reset(t, newAdmin(t))
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if got := gcraFive(cmd.Val()); got != [5]int64{0, 10, 9, -1, 6000} {
		t.Fatalf("after Exec = %v", got)
	}
	// The underlying go-redis command is the one Exec ran.
	if cmd.Cmd().Err() != nil || cmd.Name() != "gcra.limit" {
		t.Fatalf("Cmd() = %v", cmd.Cmd())
	}
}

// GCRA.LIMITALL and GCRA.REFUND: the vectors of docs/ratelimit.md (LA*, RF*) through the typed API.

func (e *env) limitAll(count int64, limits ...hotkv.GCRALimitSpec) *hotkv.GCRALimitAllCmd {
	return do(e, func(c hotkv.Commands) *hotkv.GCRALimitAllCmd { return c.GCRALimitAll(ctx, count, limits...) })
}

func (e *env) refund(key string, period time.Duration, burst, count int64) *hotkv.GCRACmd {
	return do(e, func(c hotkv.Commands) *hotkv.GCRACmd { return c.GCRARefund(ctx, key, period, burst, count) })
}

func (e *env) wantLimitAll(cmd *hotkv.GCRALimitAllCmd, denied bool, retry int64, want ...[5]int64) {
	e.t.Helper()
	r, err := cmd.Result()
	if err != nil {
		e.t.Fatalf("%v: %v", cmd.Args(), err)
	}
	if r.Denied != denied || r.RetryAfterMs != retry || len(r.Limits) != len(want) {
		e.t.Fatalf("%v = %+v, want denied %v retry %d and %d limits", cmd.Args(), r, denied, retry, len(want))
	}
	for i, w := range want {
		if got := gcraFive(r.Limits[i]); got != w {
			e.t.Fatalf("%v limit %d = %v, want %v", cmd.Args(), i, got, w)
		}
	}
}

func TestGCRALimitAllVectors(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		// The keys share a hash tag so that the cluster clients may send them together.
		u := hotkv.GCRALimitSpec{Key: "{a}u", Period: minute, Burst: 10}
		o := hotkv.GCRALimitSpec{Key: "{a}o", Period: time.Second, Burst: 2}
		e.wantLimitAll(e.limitAll(1, u, o), false, -1, [5]int64{0, 10, 9, -1, 6000}, [5]int64{0, 2, 1, -1, 500})
		e.wantLimitAll(e.limitAll(1, u, o), false, -1, [5]int64{0, 10, 8, -1, 12000}, [5]int64{0, 2, 0, -1, 1000})
		e.wantLimitAll(e.limitAll(1, u, o), true, 500, [5]int64{0, 10, 7, -1, 18000}, [5]int64{1, 2, 0, 500, 1000})
		if got := e.raw("get", "{a}u"); got != "1700000012000000000" {
			t.Fatalf("LA3 GET = %v (a denial records nothing)", got)
		}
		r := e.limitAll(3, u, o).Val()
		if !r.TooLarge() || r.RetryAfter() >= 0 {
			t.Fatalf("LA4-style count above a burst: %+v", r)
		}
		e.at(500)
		e.wantLimitAll(e.limitAll(1, u, o), false, -1, [5]int64{0, 10, 7, -1, 17500}, [5]int64{0, 2, 0, -1, 1000})
		if err := e.limitAll(1).Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'gcra.limitall' command" {
			t.Fatalf("no limits: %v", err)
		}
		if err := e.limitAll(0, u).Err(); err == nil || err.Error() != "ERR invalid count: must be a positive integer" {
			t.Fatalf("count 0: %v", err)
		}
	})
}

func TestGCRARefundVectors(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		e.wantGCRA(e.limit("k", minute, 10, 3), [5]int64{0, 10, 7, -1, 18000})
		e.wantGCRA(e.refund("k", minute, 10, 1), [5]int64{0, 10, 8, -1, 12000})
		if got := e.raw("pttl", "k"); got != int64(12000) {
			t.Fatalf("RF1 PTTL = %v", got)
		}
		e.wantGCRA(e.refund("k", minute, 10, 5), [5]int64{0, 10, 10, -1, 0})
		if got := e.raw("exists", "k"); got != int64(0) {
			t.Fatalf("RF2: a full key is deleted, EXISTS = %v", got)
		}
		e.wantGCRA(e.refund("k", minute, 10, 1), [5]int64{0, 10, 10, -1, 0})
		e.raw("set", "s", "hello")
		if err := e.refund("s", minute, 10, 1).Err(); err == nil || err.Error() != "WRONGTYPE Operation against a key holding the wrong kind of value" {
			t.Fatalf("WRONGTYPE: %v", err)
		}
	})
}

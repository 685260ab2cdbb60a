package tests

import (
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/testutil"
)

// effectLog records the effects a server journals.
type effectLog struct {
	mu      sync.Mutex
	effects []store.Effect
}

func (l *effectLog) Append(e store.Effect) {
	l.mu.Lock()
	l.effects = append(l.effects, store.CloneEffect(e)) // Args are valid only during the call
	l.mu.Unlock()
}

func (l *effectLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.effects)
}

// TestRateLimitEffectsReplay checks spec §10 end to end: allowed writes journal their effect
// with absolute times, denials journal nothing, and replaying the journal on another server at
// another time reproduces the state exactly.
func TestRateLimitEffectsReplay(t *testing.T) {
	a := testutil.StartServer(t)
	log := &effectLog{}
	a.StoreForTest().Journal = log
	ca := a.Client(t, 2)
	at := func(ms int64) { require.NoError(t, ca.Do(ctx, "DEBUG", "CLOCK", "SET", ms).Err()) }
	// do runs a command and checks whether it journaled exactly want effects.
	do := func(want int, args ...any) {
		t.Helper()
		before := log.len()
		ca.Do(ctx, args...)
		require.Equal(t, want, log.len()-before, "effects of %v", args)
	}
	t0 := testutil.T0
	at(t0)
	do(1, "GCRA.LIMIT", "k", 60000, 10)
	do(1, "GCRA.LIMIT", "k", 60000, 10)
	do(0, "GCRA.LIMIT", "k", 60000, 10, 10) // denied
	do(0, "GCRA.LIMIT", "k", 60000, 10, 11) // can never pass
	do(0, "GCRA.PEEK", "k", 60000, 10)
	do(1, "CL.THROTTLE", "c", 4, 1, 1)
	do(0, "CL.THROTTLE", "c", 4, 1, 1, 0) // quantity 0 reports only
	do(0, "GCRA.RESET", "missing")
	do(1, "GCRA.LIMIT", "j", 1000, 1)
	do(1, "GCRA.RESET", "j", "missing")
	do(1, "RATELIMIT.CREATE", "sw", 3, 1000)
	do(1, "RATELIMIT.CREATE", "tb", 20, 4000, "ALGO", "token_bucket", "REFILL", 5)
	do(0, "RATELIMIT.CREATE", "tb", 1, 1000) // exists
	do(1, "RATELIMIT.CHECK", "sw", "u")
	at(t0 + 100)
	do(1, "RATELIMIT.CHECK", "sw", "u", "COST", 2)
	do(0, "RATELIMIT.CHECK", "sw", "u") // denied: full
	do(0, "RATELIMIT.PEEK", "sw", "u")
	do(1, "RATELIMIT.CHECK", "tb", "u", "COST", 20)
	do(0, "RATELIMIT.CHECK", "tb", "u") // denied
	do(0, "RATELIMIT.CHECK", "nolimiter", "u")
	do(1, "RATELIMIT.CHECK", "sw", "v")
	do(1, "RATELIMIT.RESET", "sw", "v")
	do(0, "RATELIMIT.RESET", "sw", "v") // nothing to reset

	for _, e := range log.effects {
		switch string(e.Args[0]) {
		case "SET", "DEL", "RATELIMIT.CREATE", "RATELIMIT.SETSTATE", "RATELIMIT.RESET":
		default:
			t.Fatalf("time-dependent command journaled: %q", e.Args)
		}
	}
	require.Equal(t, "[SET k 1700000012000000000 PXAT 1700000012000]", fmt.Sprintf("%s", log.effects[1].Args))

	// Replay on a second server whose clock is elsewhere: nothing may be re-decided.
	b := testutil.StartServer(t)
	cb := b.Client(t, 2)
	require.NoError(t, cb.Do(ctx, "DEBUG", "CLOCK", "SET", t0+50).Err())
	for _, e := range log.effects {
		args := make([]any, len(e.Args))
		for i, a := range e.Args {
			args[i] = string(a)
		}
		require.NoError(t, cb.Do(ctx, args...).Err(), "replaying %q", e.Args)
	}

	for _, c := range []*redis.Client{ca, cb} {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", t0+100).Err())
	}
	for _, key := range []string{"k", "c", "j"} {
		require.Equal(t, ca.Get(ctx, key).Val(), cb.Get(ctx, key).Val(), key)
		require.Equal(t, ca.Do(ctx, "PEXPIRETIME", key).Val(), cb.Do(ctx, "PEXPIRETIME", key).Val(), key)
	}
	for _, q := range [][]any{
		{"RATELIMIT.PEEK", "sw", "u"}, {"RATELIMIT.PEEK", "sw", "v"}, {"RATELIMIT.PEEK", "tb", "u"},
		{"GCRA.PEEK", "k", 60000, 10}, {"CL.THROTTLE", "c", 4, 1, 1, 0}, {"RATELIMIT.LIST"},
	} {
		require.Equal(t, ca.Do(ctx, q...).Val(), cb.Do(ctx, q...).Val(), "%v", q)
	}
	statsA := ca.Do(ctx, "RATELIMIT.STATS", "sw").Val().([]any)
	statsB := cb.Do(ctx, "RATELIMIT.STATS", "sw").Val().([]any)
	require.Equal(t, statsA[11], statsB[11], "total_allowed")
	// Denials are not journaled: total_denied reaches a replica only inside the next effect of
	// the same limiter, so it may lag but never lead (spec §10).
	require.LessOrEqual(t, statsB[13].(int64), statsA[13].(int64))
	require.Equal(t, int64(1), statsB[13].(int64), "the denial before the CHECK of v travelled with it")
}

func TestSetStateRejectsMalformedEffects(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "RATELIMIT.CREATE", "sw", 3, 1000).Err())
		require.NoError(t, c.Do(ctx, "RATELIMIT.CREATE", "tb", 3, 1000, "ALGO", "token_bucket").Err())
		for _, args := range [][]any{
			{"RATELIMIT.SETSTATE", "sw", "u", "TAT", 5, "TOTALS", 0, 0},       // TAT on a window limiter
			{"RATELIMIT.SETSTATE", "tb", "u", "LOG", 0, "TOTALS", 0, 0},       // LOG on a bucket
			{"RATELIMIT.SETSTATE", "sw", "u", "LOG", 1, 5, 0, "TOTALS", 0, 0}, // zero units
			{"RATELIMIT.SETSTATE", "sw", "u", "LOG", 1, 5, 1, "TOTAL", 0, 0},
		} {
			require.EqualError(t, c.Do(ctx, args...).Err(), "ERR syntax error", "%v", args)
		}
		require.EqualError(t, c.Do(ctx, "RATELIMIT.SETSTATE", "nope", "u", "TAT", 5, "TOTALS", 0, 0).Err(), "ERR limiter not found")
		require.EqualError(t, c.Do(ctx, "RATELIMIT.SETSTATE", "sw", "TOTALS", -1, 0).Err(), "ERR value is not an integer or out of range")
		// The totals-only form takes an optional third total, total_shadow_denied.
		require.EqualError(t, c.Do(ctx, "RATELIMIT.SETSTATE", "sw", "TOTALS", 0, 0, -1).Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "RATELIMIT.SETSTATE", "sw", "u", "LOG", 1, 5, 1, "TOTALS", 0, 0, 0, 0).Err(), "ERR syntax error")
		for _, args := range [][]any{{"RATELIMIT.SETSTATE", "sw", "TOTALS", 0}, {"RATELIMIT.SETSTATE", "sw", "TOTALS", 0, 0, 0, 0},
			{"RATELIMIT.SETSTATE", "sw", "u", "LOG", 0, "TOTALS", 0}} {
			require.EqualError(t, c.Do(ctx, args...).Err(), "ERR wrong number of arguments for 'ratelimit.setstate' command", "%v", args)
		}
		// A late stamp in a log written by an earlier version joins the entry before it.
		require.Equal(t, "OK", c.Do(ctx, "RATELIMIT.SETSTATE", "sw", "late", "LOG", 3, testutil.T0+5, 1, testutil.T0+4, 1, testutil.T0+6, 1, "TOTALS", 0, 0).Val())
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+1005).Err())
		require.Equal(t, []any{int64(1), int64(2), int64(0), int64(3), int64(1)}, c.Do(ctx, "RATELIMIT.PEEK", "sw", "late").Val(),
			"the entry at +5 holds 2 units and leaves at +1005; the one at +6 stays")
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		// The totals-only form raises the totals (denied counts flushed by the server).
		require.Equal(t, "OK", c.Do(ctx, "RATELIMIT.SETSTATE", "tb", "TOTALS", 7, 9).Val())
		require.Equal(t, "OK", c.Do(ctx, "RATELIMIT.SETSTATE", "tb", "TOTALS", 5, 4).Val())
		st, err := c.Do(ctx, "RATELIMIT.STATS", "tb").Result()
		require.NoError(t, err)
		if m, ok := st.(map[any]any); ok { // RESP3
			require.Equal(t, []any{int64(7), int64(9)}, []any{m["total_allowed"], m["total_denied"]})
		} else {
			require.Equal(t, []any{"total_allowed", int64(7), "total_denied", int64(9)}, st.([]any)[10:14])
		}
		require.Equal(t, "OK", c.Do(ctx, "RATELIMIT.SETSTATE", "sw", "u", "LOG", 2, testutil.T0, 1, testutil.T0+5, 2, "TOTALS", 3, 0).Val())
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+10).Err())
		require.Equal(t, []any{int64(0), int64(0), int64(990), int64(3), int64(3)}, c.Do(ctx, "RATELIMIT.PEEK", "sw", "u").Val())
	})
}

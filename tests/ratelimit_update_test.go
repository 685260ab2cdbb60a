package tests

// RATELIMIT.UPDATE and shadow mode (docs/ratelimit.md, "RATELIMIT.UPDATE" and "Shadow mode"):
// the vectors of those sections as rlStep tables under DEBUG CLOCK, the validation order, and
// the changed definition, shadow flag and shadow total surviving a restart each way.

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

const (
	rlErrAlgoChange = "ERR invalid option: ALGO cannot be changed (drop and create the limiter)"
	rlErrAt         = "ERR invalid time: must be a non-negative integer (milliseconds)"
)

var rateLimitUpdateBlocks = []rlBlock{
	{"U1", []rlStep{ // sliding_window, smaller limit: a key above it waits for its entries to age out
		{"U1", 0, "CREATE a 5 1000", "OK"},
		{"", 0, "CHECK a u COST 4", "[1,1,0,5,0]"},
		{"", 100, "UPDATE a LIMIT 2", "OK"},
		{"", 100, "CHECK a u", "[0,0,900,2,4]"},
		{"", 100, "PEEK a u", "[0,0,900,2,4]"},
		{"", 999, "CHECK a u", "[0,0,1,2,4]"},
		{"", 1000, "CHECK a u", "[1,1,0,2,0]"},
		{"", 1000, "STATS a", "algo=sliding_window limit=2 window_ms=1000 unique_keys=1 total_allowed=5 total_denied=2 shadow=0 total_shadow_denied=0"},
	}},
	{"U2", []rlStep{ // sliding_window, the window: entries kept, counted under the new window
		{"U2", 0, "CREATE w 3 10000", "OK"},
		{"", 0, "CHECK w u COST 3", "[1,0,0,3,0]"},
		{"", 5000, "CHECK w u", "[0,0,5000,3,3]"},
		{"", 5000, "UPDATE w WINDOW 2000", "OK"},
		{"", 5000, "CHECK w u", "[1,2,0,3,0]"},
		{"", 5000, "UPDATE w WINDOW 10000", "OK"},
		{"", 14999, "CHECK w u", "[1,1,0,3,1]"},
		{"", 14999, "STATS w", "limit=3 window_ms=10000 unique_keys=1 total_allowed=5 total_denied=1"},
	}},
	{"U3", []rlStep{ // a larger window never revives entries the old window had aged out
		{"U3", 0, "CREATE z 1 1000", "OK"},
		{"", 0, "CHECK z u", "[1,0,0,1,0]"},
		{"", 1500, "UPDATE z WINDOW 5000", "OK"},
		{"", 1500, "CHECK z u", "[1,0,0,1,0]"},
		{"", 1500, "CHECK z u", "[0,0,5000,1,1]"},
	}},
	{"U4", []rlStep{ // token_bucket: units in use preserved, clamped to the new capacity
		{"U4", 0, "CREATE tb 10 1000 ALGO token_bucket", "OK"},
		{"", 0, "CHECK tb u COST 6", "[1,4,0,10,0]"},
		{"", 100, "PEEK tb u", "[1,5,0,10,5]"},
		{"U4a", 100, "UPDATE tb LIMIT 20", "OK"}, // default rate follows: T 100 ms -> 50 ms
		{"", 100, "PEEK tb u", "[1,15,0,20,5]"},
		{"", 100, "STATS tb", "limit=20 refill_per_sec=20"},
		{"U4b", 100, "UPDATE tb LIMIT 3", "OK"}, // 5 in use, clamped to 3
		{"", 100, "PEEK tb u", "[0,0,334,3,3]"},
		{"U4c", 100, "UPDATE tb REFILL 1", "OK"}, // 3 in use at 1 unit/s
		{"", 100, "PEEK tb u", "[0,0,1000,3,3]"},
		{"", 1100, "CHECK tb u", "[1,0,0,3,2]"},
		{"", 1100, "STATS tb", "limit=3 window_ms=1000 unique_keys=1 total_allowed=7 total_denied=0 refill_per_sec=1"},
		{"U4d", 1100, "UPDATE tb WINDOW 5000", "OK"}, // an explicit rate ignores the window
		{"", 1100, "PEEK tb u", "[0,0,1000,3,3]"},
		{"", 1100, "STATS tb", "window_ms=5000 refill_per_sec=1"},
	}},
	{"U5", []rlStep{ // leaky_bucket: the same conversion; a dead key stays dead
		{"U5", 0, "CREATE lb 4 1000 ALGO leaky_bucket", "OK"},
		{"", 0, "CHECK lb u COST 2", "[1,2,0,4,0]"},
		{"", 0, "CHECK lb v", "[1,3,0,4,0]"},
		{"", 250, "UPDATE lb DRAIN 2", "OK"}, // u: 1 in use (250 ms at 4/s) -> 500 ms at 2/s
		{"", 250, "PEEK lb u", "[1,3,0,4,1]"},
		{"", 250, "PEEK lb v", "[1,4,0,4,0]"},
		{"", 749, "PEEK lb u", "[1,3,0,4,1]"},
		{"", 750, "PEEK lb u", "[1,4,0,4,0]"},
		{"", 750, "STATS lb", "drain_per_sec=2 total_allowed=3"},
	}},
	{"U6", []rlStep{ // validation order
		{"U6", 0, "CREATE api 10 1000", "OK"},
		{"", 0, "CREATE tb 10 1000 ALGO token_bucket REFILL 0.00000001", "OK"},
		{"", 0, "UPDATE", rlArity("ratelimit.update")},
		{"", 0, "UPDATE nolimiter", rlErrSyntax},
		{"", 0, "UPDATE api", rlErrSyntax},
		{"", 0, "UPDATE nolimiter LIMIT 5", rlErrNotFound},
		{"", 0, "UPDATE nolimiter REFILL 5", rlErrNotFound},
		{"", 0, "UPDATE nolimiter LIMIT 0", rlErrLimit},
		{"", 0, "UPDATE api LIMIT", rlErrSyntax},
		{"", 0, "UPDATE api LIMIT 0", rlErrLimit},
		{"", 0, "UPDATE api LIMIT 9223372036854775808", rlErrLimit},
		{"", 0, "UPDATE api WINDOW 0", rlErrWindow},
		{"", 0, "UPDATE api WINDOW 1000000000001", rlErrWindow},
		{"", 0, "UPDATE api LIMIT 5 LIMIT 5", rlErrSyntax},
		{"", 0, "UPDATE api FOO 1", rlErrSyntax},
		{"", 0, "UPDATE api LIMIT 5 FOO", rlErrSyntax},
		{"", 0, "UPDATE api ALGO", rlErrSyntax},
		{"", 0, "UPDATE api ALGO token_bucket", rlErrAlgoChange},
		{"", 0, "UPDATE api ALGO sliding_window", rlErrAlgoChange},
		{"", 0, "UPDATE api LIMIT 0 ALGO token_bucket", rlErrLimit},
		{"", 0, "UPDATE api SHADOW", rlErrSyntax},
		{"", 0, "UPDATE api SHADOW maybe", rlErrSyntax},
		{"", 0, "UPDATE api SHADOW on SHADOW off", rlErrSyntax},
		{"", 0, "UPDATE api REFILL abc", rlErrRate},
		{"", 0, "UPDATE api REFILL 0", rlErrRate},
		{"", 0, "UPDATE api REFILL 5", rlErrSyntax},
		{"", 0, "UPDATE api DRAIN 5", rlErrSyntax},
		{"", 0, "UPDATE tb DRAIN 5", rlErrSyntax},
		{"", 0, "UPDATE tb REFILL 5 DRAIN 5", rlErrSyntax},
		{"", 0, "UPDATE api AT -1", rlErrAt},
		{"", 0, "UPDATE api AT x", rlErrAt},
		{"", 0, "UPDATE tb LIMIT 11", rlErrRate}, // 11 * 10^17 ns > 10^18 with the kept rate
		{"", 0, "UPDATE tb LIMIT 5 REFILL 0.000000001", rlErrRate},
		{"", 0, "STATS tb", "limit=10 refill_per_sec=0.00000001"},
		{"", 0, "STATS api", "limit=10 window_ms=1000 shadow=0"},
		{"", 0, "UPDATE api limit 20 window 2000 shadow ON", "OK"},
		{"", 0, "STATS api", "limit=20 window_ms=2000 shadow=1"},
		{"", 0, "DROP api", "OK"},
		{"", 0, "UPDATE api LIMIT 1", rlErrNotFound},
	}},
}

var rateLimitShadowBlocks = []rlBlock{
	{"S1", []rlStep{ // shadow mode records what the enforced limiter would, and lets all through
		{"S1", 0, "CREATE s 2 1000 SHADOW", "OK"},
		{"", 0, "CHECK s u", "[1,1,0,2,0]"},
		{"", 0, "CHECK s u", "[1,0,0,2,1]"},
		{"", 0, "CHECK s u", "[1,0,1000,2,2]"},
		{"", 0, "CHECK s u COST 3", "[1,0,-1,2,2]"},
		{"", 0, "PEEK s u", "[1,0,1000,2,2]"},
		{"", 0, "STATS s", "shadow=1 unique_keys=1 total_allowed=2 total_denied=4 total_shadow_denied=4"},
		{"S2", 0, "UPDATE s SHADOW off", "OK"},
		{"", 0, "CHECK s u", "[0,0,1000,2,2]"},
		{"", 0, "STATS s", "shadow=0 total_allowed=2 total_denied=5 total_shadow_denied=4"},
		{"", 1000, "CHECK s u", "[1,1,0,2,0]"},
		{"S3", 1000, "UPDATE s SHADOW on", "OK"},
		{"", 1000, "CHECK s u COST 2", "[1,1,1000,2,1]"},
		{"", 1000, "STATS s", "shadow=1 total_allowed=3 total_denied=7 total_shadow_denied=6"},
	}},
	{"S4", []rlStep{ // buckets too; SHADOW is a flag anywhere among CREATE's options
		{"S4", 0, "CREATE sb 1 1000 shadow ALGO token_bucket", "OK"},
		{"", 0, "CHECK sb u", "[1,0,0,1,0]"},
		{"", 0, "CHECK sb u", "[1,0,1000,1,1]"},
		{"", 0, "STATS sb", "algo=token_bucket shadow=1 total_allowed=1 total_denied=1 total_shadow_denied=1 refill_per_sec=1"},
		{"", 0, "CREATE x 1 1000 SHADOW SHADOW", rlErrSyntax},
		{"", 0, "CREATE x 1 1000 SHADOW 1", rlErrSyntax},
		{"", 0, "CREATE x 1 1000 ALGO SHADOW", rlErrSyntax},
		{"", 0, "CREATE x 1 1000 ALGO leaky_bucket SHADOW DRAIN 2", "OK"},
		{"", 0, "STATS x", "algo=leaky_bucket shadow=1 drain_per_sec=2"},
	}},
}

func TestRateLimitUpdateVectors(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, true, rateLimitUpdateBlocks)
	})
}

func TestRateLimitShadowVectors(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, true, rateLimitShadowBlocks)
	})
}

// TestRateLimitUpdateShadowRestart changes limiters in place and runs one in shadow mode, then
// requires the definitions, the converted state and the totals (total_shadow_denied included)
// back after a SAVE, a BGSAVE and a replay of the append-only log. Each limiter's last command
// is an allowed CHECK, whose effect carries the totals, so the log loses no denial.
func TestRateLimitUpdateShadowRestart(t *testing.T) {
	at := func(c *redis.Client, ms int64) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+ms).Err())
	}
	do := func(t *testing.T, c *redis.Client, args ...any) {
		t.Helper()
		require.NoError(t, c.Do(ctx, args...).Err(), "%v", args)
	}
	fill := func(t *testing.T, c *redis.Client) {
		at(c, 0)
		do(t, c, "RATELIMIT.CREATE", "sw", 5, 1000)
		do(t, c, "RATELIMIT.CREATE", "tb", 10, 1000, "ALGO", "token_bucket")
		do(t, c, "RATELIMIT.CREATE", "sh", 2, 1000, "ALGO", "leaky_bucket", "SHADOW")
		do(t, c, "RATELIMIT.CHECK", "sw", "u", "COST", 4)
		do(t, c, "RATELIMIT.CHECK", "tb", "u", "COST", 6)
		for range 4 {
			do(t, c, "RATELIMIT.CHECK", "sh", "u")
		}
		at(c, 100)
		do(t, c, "RATELIMIT.UPDATE", "sw", "LIMIT", 2, "WINDOW", 3000)
		do(t, c, "RATELIMIT.UPDATE", "tb", "LIMIT", 3, "REFILL", "2.5")
		do(t, c, "RATELIMIT.UPDATE", "sh", "DRAIN", "0.5")
		do(t, c, "RATELIMIT.CHECK", "sw", "v")
		do(t, c, "RATELIMIT.CHECK", "tb", "v")
		do(t, c, "RATELIMIT.CHECK", "sh", "v")
	}
	state := func(t *testing.T, c *redis.Client) []string {
		at(c, 200)
		var out []string
		for _, name := range []string{"sw", "tb", "sh"} {
			out = append(out, rlRender(c.Do(ctx, "RATELIMIT.STATS", name).Result()))
			for _, key := range []string{"u", "v"} {
				out = append(out, rlRender(c.Do(ctx, "RATELIMIT.PEEK", name, key).Result()))
			}
		}
		return out
	}
	restartThroughEachWay(t, fill, state, func(t *testing.T, c *redis.Client, before []string) {
		require.Equal(t, "[0,0,2800,2,4]", before[1], "sw u: 4 units above the new limit of 2, in a 3 s window")
		require.Equal(t, "[0,0,300,3,3]", before[4], "tb u: 5 units in use clamped to 3 (1.2 s at 2.5/s), 100 ms later")
		require.Contains(t, before[6], "total_shadow_denied")
	})
}

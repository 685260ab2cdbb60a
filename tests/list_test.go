package tests

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// Exact replies are compared with Redis in testdata/compat/lists.txt; these tests cover long
// lists (the ring buffer growing, wrapping and shrinking) against a slice model, and restarts.

func TestListAgainstModel(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		var model []string
		for i := range 3000 {
			v := fmt.Sprint(i)
			switch i % 7 {
			case 0, 1, 2:
				c.RPush(ctx, "l", v)
				model = append(model, v)
			case 3, 4:
				c.LPush(ctx, "l", v)
				model = append([]string{v}, model...)
			case 5:
				got := c.LPop(ctx, "l").Val()
				require.Equal(t, model[0], got)
				model = model[1:]
			case 6:
				got := c.RPop(ctx, "l").Val()
				require.Equal(t, model[len(model)-1], got)
				model = model[:len(model)-1]
			}
		}
		require.Equal(t, model, c.LRange(ctx, "l", 0, -1).Val())
		require.Equal(t, model[100], c.LIndex(ctx, "l", 100).Val())
		require.Equal(t, model[len(model)-5], c.LIndex(ctx, "l", -5).Val())
		// Pop most of it: the buffer shrinks, contents stay.
		popped, err := c.LPopCount(ctx, "l", len(model)-10).Result()
		require.NoError(t, err)
		require.Equal(t, model[:len(model)-10], popped)
		require.Equal(t, model[len(model)-10:], c.LRange(ctx, "l", 0, -1).Val())
		require.Equal(t, "quicklist", c.ObjectEncoding(ctx, "l").Val())
		require.Positive(t, c.MemoryUsage(ctx, "l").Val())
		// COPY gives an independent list.
		require.EqualValues(t, 1, c.Copy(ctx, "l", "l2", 0, false).Val())
		c.LSet(ctx, "l2", 0, "changed")
		require.NotEqual(t, "changed", c.LIndex(ctx, "l", 0).Val())
	})
}

func listState(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var out []string
	for _, k := range c.Keys(ctx, "*").Val() {
		out = append(out, fmt.Sprintf("%s %q ttl=%v", k, c.LRange(ctx, k, 0, -1).Val(), c.Do(ctx, "PEXPIRETIME", k).Val()))
	}
	sort.Strings(out)
	return out
}

// Every list write, journaled as its effect, replays to the same lists after a restart from
// the log, and snapshots hold lists too.
func TestListRestart(t *testing.T) {
	fill := func(t *testing.T, c *redis.Client) {
		c.RPush(ctx, "a", "1", "2", "3", "4", "5", "6")
		c.LPush(ctx, "a", "0")
		c.RPushX(ctx, "a", "7")
		c.LPushX(ctx, "a", "-1")
		c.LPushX(ctx, "none", "x")
		c.LPop(ctx, "a")
		c.RPopCount(ctx, "a", 2)
		c.LSet(ctx, "a", 1, "one")
		c.LInsertBefore(ctx, "a", "3", "2.5")
		c.LRem(ctx, "a", 1, "4")
		c.LTrim(ctx, "a", 0, 4)
		c.RPush(ctx, "b", strings.Split("x y z w", " "))
		c.LMove(ctx, "b", "c", "LEFT", "RIGHT")
		c.RPopLPush(ctx, "b", "c")
		c.Do(ctx, "LMPOP", 2, "none", "b", "RIGHT", "COUNT", 1)
		c.RPush(ctx, "ttl", "v")
		c.PExpireAt(ctx, "ttl", time.UnixMilli(testutil.T0+100000))
	}
	restartThroughEachWay(t, fill, listState, func(t *testing.T, _ *redis.Client, before []string) {
		require.Contains(t, before, `a ["0" "one" "2" "2.5" "3"] ttl=-1`)
	})
}

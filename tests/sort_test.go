package tests

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// The compat corpus (testdata/compat/sort.txt) compares SORT's replies with Redis; these tests
// cover what it cannot: RESP3, persistence of SORT ... STORE through every restart path, and
// WATCH on a STORE destination.

func TestSortRESP(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		c.RPush(ctx, "l", 3, 1, 2)
		c.MSet(ctx, "w_1", 30, "w_2", 10, "w_3", 20, "o_1", "one", "o_3", "three")
		require.Equal(t, []string{"1", "2", "3"}, c.Sort(ctx, "l", &redis.Sort{}).Val())
		require.Equal(t, []string{"2", "3", "1"}, c.Sort(ctx, "l", &redis.Sort{By: "w_*"}).Val())
		v, err := c.Do(ctx, "SORT", "l", "BY", "w_*", "GET", "o_*", "GET", "#").Result()
		require.NoError(t, err)
		require.Equal(t, []any{nil, "2", "three", "3", "one", "1"}, v)
		require.Equal(t, []string{"3", "2"}, c.SortRO(ctx, "l", &redis.Sort{Order: "DESC", Count: 2}).Val())
		require.EqualError(t, c.Do(ctx, "SORT_RO", "l", "STORE", "d").Err(), "ERR syntax error")
		c.RPush(ctx, "bad", "1", "x")
		require.EqualError(t, c.Sort(ctx, "bad", &redis.Sort{}).Err(), "ERR One or more scores can't be converted into double")
		c.Set(ctx, "str", "x", 0)
		require.EqualError(t, c.Sort(ctx, "str", &redis.Sort{}).Err(), "WRONGTYPE Operation against a key holding the wrong kind of value")
	})
}

func TestSortStoreSurvivesRestart(t *testing.T) {
	restartThroughEachWay(t, func(t *testing.T, c *redis.Client) {
		c.SAdd(ctx, "s", "b", "c", "a", "10", "9")
		c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "x"}, redis.Z{Score: 2, Member: "y"})
		c.Set(ctx, "w_a", 1, 0)
		require.Equal(t, int64(5), c.SortStore(ctx, "s", "sorted", &redis.Sort{Alpha: true}).Val())
		require.Equal(t, int64(2), c.SortStore(ctx, "z", "byz", &redis.Sort{By: "nosort", Order: "DESC"}).Val())
		// Equal ALPHA weights keep the iteration order: the log stores the result, not the command.
		require.Equal(t, int64(5), c.SortStore(ctx, "s", "ties", &redis.Sort{By: "w_*", Alpha: true}).Val())
		c.Set(ctx, "gone", "x", 0)
		require.Equal(t, int64(0), c.SortStore(ctx, "nokey", "gone", &redis.Sort{}).Val())
	}, func(t *testing.T, c *redis.Client) []string {
		var out []string
		for _, k := range []string{"sorted", "byz", "ties"} {
			out = append(out, k)
			out = append(out, c.LRange(ctx, k, 0, -1).Val()...)
		}
		out = append(out, c.Type(ctx, "gone").Val())
		return out
	}, func(t *testing.T, c *redis.Client, before []string) {
		require.Equal(t, []string{"sorted", "10", "9", "a", "b", "c"}, before[:6])
		require.Equal(t, "none", before[len(before)-1])
	})
}

func TestSortStoreTouchesWatch(t *testing.T) {
	s := testutil.StartServer(t)
	r, other := s.Dial(t), s.Dial(t)
	r.Do("LPUSH", "foo", "bar")
	r.Do("WATCH", "foo")
	// An empty result deletes the destination: a change, even though nothing is stored.
	require.Equal(t, ":0\r\n", other.Do("SORT", "emptylist", "STORE", "foo"))
	r.Do("MULTI")
	r.Do("PING")
	require.Equal(t, "*-1\r\n", r.Do("EXEC"))
	// Sorting a watched key without STORE is a read.
	r.Do("RPUSH", "src", "2", "1")
	r.Do("WATCH", "src")
	other.Do("SORT", "src", "STORE", "dst")
	r.Do("MULTI")
	r.Do("PING")
	require.Equal(t, "*1\r\n+PONG\r\n", r.Do("EXEC"))
}

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

// Small hashes' exact replies are compared with Redis in testdata/compat/hashes.txt; these
// tests cover what that corpus cannot: the table encoding (whose order differs from Redis's),
// the conversion between encodings, full HSCAN iterations, and restarts.

func TestHashTableEncoding(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		want := map[string]string{}
		for i := range 512 { // Redis 7.0's default hash-max-listpack-entries
			f, v := fmt.Sprintf("f%03d", i), fmt.Sprintf("v%d", i)
			want[f] = v
			require.EqualValues(t, 1, c.HSet(ctx, "h", f, v).Val())
		}
		require.Equal(t, "listpack", c.ObjectEncoding(ctx, "h").Val())
		want["f512"] = "v512"
		require.EqualValues(t, 1, c.HSet(ctx, "h", "f512", "v512").Val())
		require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "h").Val(), "513 fields: past hash-max-listpack-entries")
		require.Equal(t, want, c.HGetAll(ctx, "h").Val())
		require.EqualValues(t, 513, c.HLen(ctx, "h").Val())

		// HSCAN over the table: every field exactly as in HGETALL, cursor back to 0.
		got := map[string]string{}
		var cursor uint64
		for calls := 0; ; calls++ {
			require.Less(t, calls, 1000)
			kv, next, err := c.HScan(ctx, "h", cursor, "", 7).Result()
			require.NoError(t, err)
			for i := 0; i < len(kv); i += 2 {
				got[kv[i]] = kv[i+1]
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		require.Equal(t, want, got)
		var matched []string
		for cursor = 0; ; {
			kv, next, err := c.HScan(ctx, "h", cursor, "f12?", 1000).Result()
			require.NoError(t, err)
			matched = append(matched, kv...)
			if cursor = next; cursor == 0 {
				break
			}
		}
		require.Len(t, matched, 2*10, "f120 to f129: MATCH filters")

		// HRANDFIELD: distinct fields for a positive count, repeats for a negative one.
		fields, err := c.HRandField(ctx, "h", 50).Result()
		require.NoError(t, err)
		require.Len(t, fields, 50)
		seen := map[string]bool{}
		for _, f := range fields {
			require.Contains(t, want, f)
			require.False(t, seen[f], "duplicate %q", f)
			seen[f] = true
		}
		fields, err = c.HRandField(ctx, "h", -300).Result()
		require.NoError(t, err)
		require.Len(t, fields, 300)
		pairs, err := c.HRandFieldWithValues(ctx, "h", 5).Result()
		require.NoError(t, err)
		require.Len(t, pairs, 5)
		for _, p := range pairs {
			require.Equal(t, want[p.Key], p.Value)
		}

		// HDEL down to empty removes the key.
		for f := range want {
			require.EqualValues(t, 1, c.HDel(ctx, "h", f).Val())
		}
		require.EqualValues(t, 0, c.Exists(ctx, "h").Val())

		// A long value converts at once; a long field too.
		c.HSet(ctx, "v", "f", strings.Repeat("x", 64))
		require.Equal(t, "listpack", c.ObjectEncoding(ctx, "v").Val())
		c.HSet(ctx, "v", "g", strings.Repeat("x", 65))
		require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "v").Val())
		c.HSet(ctx, "w", strings.Repeat("k", 65), "1")
		require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "w").Val())
		require.EqualValues(t, 65, c.HStrLen(ctx, "v", "g").Val())
		require.Positive(t, c.MemoryUsage(ctx, "v").Val())

		// COPY gives an independent hash.
		require.True(t, c.Copy(ctx, "v", "v2", 0, false).Val() == 1)
		c.HSet(ctx, "v2", "f", "changed")
		require.Equal(t, strings.Repeat("x", 64), c.HGet(ctx, "v", "f").Val())
	})
}

// CONFIG SET hash-max-listpack-entries/-value decide when new hashes convert; the old
// ziplist names are aliases.
func TestHashPackLimitsConfig(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	t.Cleanup(func() {
		c.ConfigSet(ctx, "hash-max-listpack-entries", "128")
		c.ConfigSet(ctx, "hash-max-listpack-value", "64")
	})
	require.NoError(t, c.ConfigSet(ctx, "hash-max-ziplist-entries", "2").Err())
	require.Equal(t, map[string]string{"hash-max-listpack-entries": "2"}, c.ConfigGet(ctx, "hash-max-listpack-entries").Val())
	c.HSet(ctx, "h", "a", "1", "b", "2")
	require.Equal(t, "listpack", c.ObjectEncoding(ctx, "h").Val())
	c.HSet(ctx, "h", "c", "3")
	require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "h").Val())
	require.NoError(t, c.ConfigSet(ctx, "hash-max-listpack-value", "3").Err())
	c.HSet(ctx, "g", "a", "1234")
	require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "g").Val())
}

func hashState(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var out []string
	for _, k := range c.Keys(ctx, "*").Val() {
		m := c.HGetAll(ctx, k).Val()
		var pairs []string
		for f, v := range m {
			pairs = append(pairs, f+"="+v)
		}
		sort.Strings(pairs)
		out = append(out, fmt.Sprintf("%s %s %s ttl=%v", k, c.ObjectEncoding(ctx, k).Val(), strings.Join(pairs, ","), c.PExpireTime(ctx, k).Val()))
	}
	sort.Strings(out)
	return out
}

// Hashes of both encodings, with and without a TTL, come back after a restart from a snapshot
// (SAVE and BGSAVE) and from the append-only log.
func TestHashRestart(t *testing.T) {
	fill := func(t *testing.T, c *redis.Client) {
		c.HSet(ctx, "small", "a", "1", "b", "two", "", "empty")
		for i := range 200 {
			c.HSet(ctx, "big", fmt.Sprintf("f%d", i), strings.Repeat("v", i%80))
		}
		c.HIncrByFloat(ctx, "small", "f", 0.1)
		c.HIncrBy(ctx, "small", "n", 7)
		c.HSetNX(ctx, "small", "nx", "set")
		c.HDel(ctx, "big", "f0", "f1")
		c.HSet(ctx, "ttl", "x", "y")
		c.PExpireAt(ctx, "ttl", time.UnixMilli(testutil.T0+100000))
	}
	restartThroughEachWay(t, fill, hashState, nil)
}

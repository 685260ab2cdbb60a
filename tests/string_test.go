package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// strFreeze stops the server clock at ms through DEBUG CLOCK, so expiry is exact.
func strFreeze(t *testing.T, c *redis.Client, ms int64) {
	t.Helper()
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", ms).Err())
}

func strAdvance(t *testing.T, c *redis.Client, ms int64) {
	t.Helper()
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", ms).Err())
}

func TestStringSetFamily(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, redis.Nil, c.Get(ctx, "k").Err())
		require.Equal(t, "OK", c.Set(ctx, "k", "v", 0).Val())
		require.Equal(t, "v", c.Get(ctx, "k").Val())

		// SET options.
		require.Equal(t, redis.Nil, c.Do(ctx, "SET", "k", "x", "NX").Err())
		require.Equal(t, redis.Nil, c.Do(ctx, "SET", "nokey", "x", "XX").Err())
		require.Equal(t, "v", c.Do(ctx, "SET", "k", "v2", "GET").Val())
		require.Equal(t, "v2", c.Do(ctx, "SET", "k", "v3", "NX", "GET").Val())
		require.Equal(t, redis.Nil, c.Do(ctx, "SET", "new", "1", "NX", "GET").Err())
		require.Equal(t, "1", c.Get(ctx, "new").Val())
		require.EqualError(t, c.Do(ctx, "SET", "k", "v", "NX", "XX").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "SET", "k", "v", "EX", "1", "PX", "1").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "SET", "k", "v", "EX").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "SET", "k", "v", "EX", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "SET", "k", "v", "EX", "0").Err(), "ERR invalid expire time in 'set' command")
		require.EqualError(t, c.Do(ctx, "SET", "k").Err(), "ERR wrong number of arguments for 'set' command")

		// SETNX, SETEX, PSETEX.
		require.Equal(t, false, c.SetNX(ctx, "k", "x", 0).Val())
		require.Equal(t, true, c.SetNX(ctx, "nx", "x", 0).Val())
		require.Equal(t, int64(0), c.Do(ctx, "SETNX", "nx", "y").Val())
		require.Equal(t, "OK", c.SetEx(ctx, "ex", "v", 10*time.Second).Val())
		require.Equal(t, "OK", c.Do(ctx, "PSETEX", "px", "1500", "v").Val())
		require.EqualError(t, c.Do(ctx, "SETEX", "ex", "0", "v").Err(), "ERR invalid expire time in 'setex' command")
		require.EqualError(t, c.Do(ctx, "SETEX", "ex", "-5", "v").Err(), "ERR invalid expire time in 'setex' command")
		require.EqualError(t, c.Do(ctx, "PSETEX", "px", "9223372036854775807", "v").Err(), "ERR invalid expire time in 'psetex' command")
		require.EqualError(t, c.Do(ctx, "SETEX", "ex", "ten", "v").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "SETEX", "ex", "10").Err(), "ERR wrong number of arguments for 'setex' command")

		// GETSET, GETDEL, GETEX.
		require.Equal(t, "v2", c.GetSet(ctx, "k", "v4").Val(), "NX kept v2")
		require.Equal(t, redis.Nil, c.GetSet(ctx, "gs", "1").Err())
		require.Equal(t, "1", c.Get(ctx, "gs").Val())
		require.Equal(t, "v4", c.GetDel(ctx, "k").Val())
		require.Equal(t, redis.Nil, c.GetDel(ctx, "k").Err())
		require.Equal(t, int64(0), c.Exists(ctx, "k").Val())
		require.Equal(t, redis.Nil, c.GetEx(ctx, "k", 0).Err())
		require.Equal(t, redis.Nil, c.Do(ctx, "GETEX", "k", "EX", "bad").Err(), "a missing key is never validated")
		require.Equal(t, "x", c.Do(ctx, "GETEX", "nx", "PERSIST").Val())
		require.EqualError(t, c.Do(ctx, "GETEX", "nx", "EX", "bad").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "GETEX", "nx", "EX", "0").Err(), "ERR invalid expire time in 'getex' command")
		require.EqualError(t, c.Do(ctx, "GETEX", "nx", "KEEPTTL").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "GETEX", "nx", "NX").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "GETEX", "nx", "EX", "1", "PERSIST").Err(), "ERR syntax error")
		require.Equal(t, "x", c.Do(ctx, "GETEX", "nx", "EXAT", "1").Val(), "a past EXAT replies, then deletes")
		require.Equal(t, int64(0), c.Exists(ctx, "nx").Val())

		// MGET, MSET, MSETNX.
		require.Equal(t, "OK", c.MSet(ctx, "a", "1", "b", "two", "a", "3").Val())
		require.Equal(t, []any{"3", "two", nil}, c.MGet(ctx, "a", "b", "c").Val())
		require.Equal(t, false, c.MSetNX(ctx, "c", "1", "a", "2").Val())
		require.Equal(t, int64(0), c.Exists(ctx, "c").Val())
		require.Equal(t, true, c.MSetNX(ctx, "c", "1", "d", "2").Val())
		require.Equal(t, []any{"1", "2"}, c.MGet(ctx, "c", "d").Val())
		require.EqualError(t, c.Do(ctx, "MSET", "a", "1", "b").Err(), "ERR wrong number of arguments for 'mset' command")
		require.EqualError(t, c.Do(ctx, "MSETNX", "a").Err(), "ERR wrong number of arguments for 'msetnx' command")
		require.EqualError(t, c.Do(ctx, "MGET").Err(), "ERR wrong number of arguments for 'mget' command")
	})
}

func TestStringExpiryRules(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		strFreeze(t, c, testutil.T0)
		// In-place writes keep the TTL; SET-like writes clear it.
		keep := map[string][]any{
			"incr":     {"INCR", "incr"},
			"incrby":   {"INCRBY", "incrby", 5},
			"float":    {"INCRBYFLOAT", "float", "1.5"},
			"append":   {"APPEND", "append", "x"},
			"setrange": {"SETRANGE", "setrange", 0, "9"},
			"setbit":   {"SETBIT", "setbit", 100, 1},
			"bitfield": {"BITFIELD", "bitfield", "SET", "u8", 0, 65},
			"keepttl":  {"SET", "keepttl", "v", "KEEPTTL"},
			"getex":    {"GETEX", "getex"},
		}
		clear := map[string][]any{
			"set":    {"SET", "set", "v"},
			"getset": {"GETSET", "getset", "v"},
			"mset":   {"MSET", "mset", "v"},
			"bitop":  {"BITOP", "NOT", "bitop", "src"},
			"setex":  {"SETEX", "setex", 100, "v"}, // a new, longer TTL
		}
		require.NoError(t, c.Set(ctx, "src", "abc", 0).Err())
		for _, group := range []map[string][]any{keep, clear} {
			for key, cmd := range group {
				require.NoError(t, c.Set(ctx, key, "1", time.Second).Err())
				require.NoError(t, c.Do(ctx, cmd...).Err(), key)
			}
		}
		require.Equal(t, "OK", c.Do(ctx, "SET", "exat", "v", "PXAT", testutil.T0+1000).Val())
		require.Equal(t, "v", c.Do(ctx, "GETEX", "exat", "PX", "2000").Val())
		require.Equal(t, "OK", c.Do(ctx, "SET", "persist", "v", "PX", "1000").Val())
		require.Equal(t, "v", c.Do(ctx, "GETEX", "persist", "PERSIST").Val())

		strAdvance(t, c, 1000)
		require.Equal(t, "2", c.Get(ctx, "incr").Val(), "alive up to its last millisecond")
		strAdvance(t, c, 1)
		for key := range keep {
			require.Equal(t, int64(0), c.Exists(ctx, key).Val(), "%s must have kept its TTL", key)
		}
		for key := range clear {
			require.Equal(t, int64(1), c.Exists(ctx, key).Val(), "%s must have cleared its TTL", key)
		}
		require.Equal(t, "v", c.Get(ctx, "exat").Val())
		require.Equal(t, "v", c.Get(ctx, "persist").Val())
		strAdvance(t, c, 1000)
		require.Equal(t, redis.Nil, c.Get(ctx, "exat").Err())
		require.Equal(t, "v", c.Get(ctx, "persist").Val())
	})
}

func TestStringAppendAndRanges(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, int64(5), c.Append(ctx, "a", "hello").Val())
		require.Equal(t, int64(11), c.Append(ctx, "a", " world").Val())
		require.Equal(t, int64(11), c.StrLen(ctx, "a").Val())
		require.Equal(t, int64(0), c.StrLen(ctx, "nokey").Val())
		require.Equal(t, "ello wor", c.GetRange(ctx, "a", 1, -3).Val())
		require.Equal(t, "rld", c.GetRange(ctx, "a", -3, 100).Val())
		require.Equal(t, "", c.GetRange(ctx, "a", -1, -5).Val())
		require.Equal(t, "", c.GetRange(ctx, "a", 20, 30).Val())
		require.Equal(t, "", c.GetRange(ctx, "nokey", 0, -1).Val())
		require.Equal(t, "hello world", c.Do(ctx, "SUBSTR", "a", "0", "-1").Val())
		require.EqualError(t, c.Do(ctx, "GETRANGE", "a", "x", "1").Err(), "ERR value is not an integer or out of range")

		// Integers are stored compactly but read, appended to and measured as digits.
		require.NoError(t, c.Set(ctx, "n", -12345, 0).Err())
		require.Equal(t, int64(6), c.StrLen(ctx, "n").Val())
		require.Equal(t, "123", c.GetRange(ctx, "n", 1, 3).Val())
		require.Equal(t, int64(7), c.Append(ctx, "n", "6").Val())
		require.Equal(t, int64(-123455), c.Incr(ctx, "n").Val())

		require.Equal(t, int64(11), c.SetRange(ctx, "a", 6, "WORLD").Val())
		require.Equal(t, "hello WORLD", c.Get(ctx, "a").Val())
		require.Equal(t, int64(14), c.SetRange(ctx, "a", 12, "!!").Val())
		require.Equal(t, "hello WORLD\x00!!", c.Get(ctx, "a").Val())
		require.Equal(t, int64(14), c.SetRange(ctx, "a", 100, "").Val())
		require.Equal(t, int64(0), c.SetRange(ctx, "empty", 5, "").Val())
		require.Equal(t, int64(0), c.Exists(ctx, "empty").Val())
		require.Equal(t, int64(5), c.SetRange(ctx, "pad", 3, "ab").Val())
		require.Equal(t, "\x00\x00\x00ab", c.Get(ctx, "pad").Val())
		require.EqualError(t, c.SetRange(ctx, "a", -1, "x").Err(), "ERR offset is out of range")
		require.EqualError(t, c.Do(ctx, "SETRANGE", "a", "x", "x").Err(), "ERR value is not an integer or out of range")

		// The string size limit is proto-max-bulk-len (1mb here).
		require.Equal(t, int64(1<<20), c.SetRange(ctx, "big", 1<<20-1, "x").Val())
		require.EqualError(t, c.SetRange(ctx, "big", 1<<20, "x").Err(), "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		require.EqualError(t, c.Append(ctx, "big", "x").Err(), "ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		require.Equal(t, int64(1<<20), c.Append(ctx, "big", "").Val())
	}, "--proto-max-bulk-len", "1mb")
}

func TestIncrDecr(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, int64(1), c.Incr(ctx, "n").Val())
		require.Equal(t, int64(0), c.Decr(ctx, "n").Val())
		require.Equal(t, int64(-10), c.DecrBy(ctx, "n", 10).Val())
		require.Equal(t, int64(90), c.IncrBy(ctx, "n", 100).Val())
		require.Equal(t, "90", c.Get(ctx, "n").Val())
		require.Equal(t, int64(-1), c.Decr(ctx, "fresh").Val())

		require.NoError(t, c.Set(ctx, "max", "9223372036854775807", 0).Err())
		require.EqualError(t, c.Incr(ctx, "max").Err(), "ERR increment or decrement would overflow")
		require.EqualError(t, c.DecrBy(ctx, "max", -1).Err(), "ERR increment or decrement would overflow")
		require.NoError(t, c.Set(ctx, "min", "-9223372036854775808", 0).Err())
		require.EqualError(t, c.Decr(ctx, "min").Err(), "ERR increment or decrement would overflow")
		require.Equal(t, int64(-1), c.IncrBy(ctx, "min", 9223372036854775807).Val())
		require.EqualError(t, c.Do(ctx, "DECRBY", "n", "-9223372036854775808").Err(), "ERR decrement would overflow")
		require.EqualError(t, c.Do(ctx, "INCRBY", "n", "1.5").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "INCRBY", "n", "99999999999999999999").Err(), "ERR value is not an integer or out of range")
		for _, bad := range []string{"abc", " 1", "1 ", "007", "-0", "+1", "1.0", ""} {
			require.NoError(t, c.Set(ctx, "bad", bad, 0).Err())
			require.EqualError(t, c.Incr(ctx, "bad").Err(), "ERR value is not an integer or out of range", bad)
		}
		require.EqualError(t, c.Do(ctx, "INCR").Err(), "ERR wrong number of arguments for 'incr' command")
		require.EqualError(t, c.Do(ctx, "INCRBY", "n").Err(), "ERR wrong number of arguments for 'incrby' command")
	})
}

func TestIncrByFloat(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		// Exact strings as Redis 7.0 (80-bit long double, %.17Lf, trailing zeros trimmed).
		steps := []struct{ key, incr, want string }{
			{"a", "10.5", "10.5"},
			{"a", "0.1", "10.6"},
			{"b", "0.1", "0.1"},
			{"b", "0.2", "0.3"},
			{"c", "3.0e3", "3000"},
			{"c", "5.0e3", "8000"},
			{"d", "1.1e-10", "0.00000000011"},
			{"e", "1.23456789012345678901234", "1.23456789012345679"},
			{"f", "-0.0000000000000000001", "0"},
			{"g", "0x1.8p1", "3"},
			{"g", "+.5", "3.5"},
			{"h", "1e30", "1000000000000000000024696061952"},
		}
		for _, st := range steps {
			require.Equal(t, st.want, c.Do(ctx, "INCRBYFLOAT", st.key, st.incr).Val(), "%s += %s", st.key, st.incr)
		}
		require.NoError(t, c.Set(ctx, "i", "9223372036854775807", 0).Err())
		require.Equal(t, "9223372036854775808", c.Do(ctx, "INCRBYFLOAT", "i", "1").Val())
		require.Equal(t, "9223372036854775808", c.Get(ctx, "i").Val())

		require.EqualError(t, c.Do(ctx, "INCRBYFLOAT", "a", "inf").Err(), "ERR increment would produce NaN or Infinity")
		require.EqualError(t, c.Do(ctx, "INCRBYFLOAT", "a", "1e5000").Err(), "ERR value is not a valid float")
		for _, bad := range []string{"abc", "nan", " 1", "1 ", "", "1e", "0x", "1_0"} {
			require.EqualError(t, c.Do(ctx, "INCRBYFLOAT", "a", bad).Err(), "ERR value is not a valid float", bad)
		}
		require.NoError(t, c.Set(ctx, "s", "one", 0).Err())
		require.EqualError(t, c.Do(ctx, "INCRBYFLOAT", "s", "1").Err(), "ERR value is not a valid float")
		require.Equal(t, "10.6", c.Get(ctx, "a").Val(), "failed increments change nothing")
	})
}

func TestLCS(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.MSet(ctx, "a", "ohmytext", "b", "mynewtext").Err())
		require.Equal(t, "mytext", c.LCS(ctx, &redis.LCSQuery{Key1: "a", Key2: "b"}).Val().MatchString)
		require.Equal(t, int64(6), c.LCS(ctx, &redis.LCSQuery{Key1: "a", Key2: "b", Len: true}).Val().Len)

		idx, err := c.LCS(ctx, &redis.LCSQuery{Key1: "a", Key2: "b", Idx: true, WithMatchLen: true}).Result()
		require.NoError(t, err)
		require.Equal(t, int64(6), idx.Len)
		require.Equal(t, []redis.LCSMatchedPosition{
			{Key1: redis.LCSPosition{Start: 4, End: 7}, Key2: redis.LCSPosition{Start: 5, End: 8}, MatchLen: 4},
			{Key1: redis.LCSPosition{Start: 2, End: 3}, Key2: redis.LCSPosition{Start: 0, End: 1}, MatchLen: 2},
		}, idx.Matches)
		idx, err = c.LCS(ctx, &redis.LCSQuery{Key1: "a", Key2: "b", Idx: true, MinMatchLen: 3}).Result()
		require.NoError(t, err)
		require.Len(t, idx.Matches, 1)

		require.Equal(t, "", c.Do(ctx, "LCS", "x", "y").Val())
		require.EqualError(t, c.Do(ctx, "LCS", "a", "b", "LEN", "IDX").Err(), "ERR If you want both the length and indexes, please just use IDX.")
		require.EqualError(t, c.Do(ctx, "LCS", "a", "b", "MINMATCHLEN").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "LCS", "a", "b", "MINMATCHLEN", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "LCS", "a").Err(), "ERR wrong number of arguments for 'lcs' command")

		// The DP table is bounded by proto-max-bulk-len (1mb: 512x512 cells fit, 600x600 not).
		require.NoError(t, c.MSet(ctx, "l1", strings.Repeat("ab", 300), "l2", strings.Repeat("ba", 300)).Err())
		require.EqualError(t, c.Do(ctx, "LCS", "l1", "l2").Err(), "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		require.NoError(t, c.MSet(ctx, "l1", strings.Repeat("ab", 250), "l2", strings.Repeat("ba", 250)).Err())
		require.Equal(t, int64(499), c.Do(ctx, "LCS", "l1", "l2", "LEN").Val())
	}, "--proto-max-bulk-len", "1mb")
}

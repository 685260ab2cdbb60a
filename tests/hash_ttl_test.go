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

// Hash field expiration (Redis 7.4's HEXPIRE family). Redis 7.0, the compatibility baseline,
// has none of these commands, so the corpus cannot compare them: these tests pin 7.4's
// documented replies, under the DEBUG clock, in both encodings and both protocols.

// hashEncodings runs fn with packed hashes (listpack, listpackex) and with tables.
func hashEncodings(t *testing.T, fn func(t *testing.T, c *redis.Client, packed bool)) {
	for _, packed := range []bool{true, false} {
		name := map[bool]string{true: "listpack", false: "hashtable"}[packed]
		t.Run(name, func(t *testing.T) {
			testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
				if !packed {
					require.NoError(t, c.ConfigSet(ctx, "hash-max-listpack-entries", "0").Err())
				}
				require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
				fn(t, c, packed)
			})
		})
	}
}

func ints(t *testing.T, c *redis.Client, args ...any) []int64 {
	t.Helper()
	v, err := c.Do(ctx, args...).Int64Slice()
	require.NoError(t, err, "%v", args)
	return v
}

func TestHashFieldTTLReplies(t *testing.T) {
	hashEncodings(t, func(t *testing.T, c *redis.Client, packed bool) {
		// A missing key holds no field.
		require.Equal(t, []int64{-2, -2}, ints(t, c, "HEXPIRE", "h", 10, "FIELDS", 2, "a", "b"))
		require.Equal(t, []int64{-2}, ints(t, c, "HTTL", "h", "FIELDS", 1, "a"))
		require.Equal(t, []int64{-2}, ints(t, c, "HPERSIST", "h", "FIELDS", 1, "a"))
		require.EqualValues(t, 0, c.Exists(ctx, "h").Val())

		require.NoError(t, c.HSet(ctx, "h", "f1", "v1", "f2", "v2", "f3", "v3").Err())
		require.Equal(t, []int64{1, -2}, ints(t, c, "HEXPIRE", "h", 100, "FIELDS", 2, "f1", "nope"))
		wantEnc := "hashtable"
		if packed {
			wantEnc = "listpackex"
		}
		require.Equal(t, wantEnc, c.ObjectEncoding(ctx, "h").Val())
		require.Equal(t, []int64{100, -1, -2}, ints(t, c, "HTTL", "h", "FIELDS", 3, "f1", "f2", "nope"))
		require.Equal(t, []int64{100000, -1}, ints(t, c, "HPTTL", "h", "FIELDS", 2, "f1", "f2"))
		at := testutil.T0 + 100000
		require.Equal(t, []int64{(at + 999) / 1000, -1}, ints(t, c, "HEXPIRETIME", "h", "FIELDS", 2, "f1", "f2"))
		require.Equal(t, []int64{at, -1}, ints(t, c, "HPEXPIRETIME", "h", "FIELDS", 2, "f1", "f2"))

		// NX | XX | GT | LT: no TTL counts as an infinite one.
		require.Equal(t, []int64{0, 1}, ints(t, c, "HEXPIRE", "h", 50, "NX", "FIELDS", 2, "f1", "f2"))
		require.Equal(t, []int64{1, 0}, ints(t, c, "HPEXPIRE", "h", 200000, "XX", "FIELDS", 2, "f1", "f3"))
		require.Equal(t, []int64{0, 0}, ints(t, c, "HEXPIRE", "h", 150, "GT", "FIELDS", 2, "f1", "f3"))
		require.Equal(t, []int64{1, 1}, ints(t, c, "HEXPIRE", "h", 150, "LT", "FIELDS", 2, "f1", "f3"))
		require.Equal(t, []int64{1}, ints(t, c, "HEXPIREAT", "h", testutil.T0/1000+300, "GT", "FIELDS", 1, "f1"))
		require.Equal(t, []int64{300, 50, 150}, ints(t, c, "HTTL", "h", "FIELDS", 3, "f1", "f2", "f3"))
		require.Equal(t, []int64{1}, ints(t, c, "HPEXPIREAT", "h", testutil.T0+1500, "FIELDS", 1, "f3"))
		require.Equal(t, []int64{2}, ints(t, c, "HTTL", "h", "FIELDS", 1, "f3"), "1.5 s left rounds up")

		// HPERSIST: 1 removed, -1 none, -2 no field.
		require.Equal(t, []int64{1, -1, -2}, ints(t, c, "HPERSIST", "h", "FIELDS", 3, "f3", "f3", "nope"))

		// HSET overwriting a field clears its TTL; HINCRBY keeps it.
		require.NoError(t, c.HSet(ctx, "h", "n", "5").Err())
		require.Equal(t, []int64{1}, ints(t, c, "HEXPIRE", "h", 40, "FIELDS", 1, "n"))
		require.EqualValues(t, 8, c.HIncrBy(ctx, "h", "n", 3).Val())
		require.Equal(t, []int64{40}, ints(t, c, "HTTL", "h", "FIELDS", 1, "n"))
		require.InDelta(t, 8.5, c.HIncrByFloat(ctx, "h", "n", 0.5).Val(), 1e-9)
		require.Equal(t, []int64{40}, ints(t, c, "HTTL", "h", "FIELDS", 1, "n"))
		require.EqualValues(t, 0, c.HSet(ctx, "h", "f2", "new").Val())
		require.Equal(t, []int64{-1}, ints(t, c, "HTTL", "h", "FIELDS", 1, "f2"))

		// Time passes: expired fields are gone from every read; HLEN counts what is left.
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 40001).Err())
		require.Equal(t, redis.Nil, c.HGet(ctx, "h", "n").Err())
		require.False(t, c.HExists(ctx, "h", "n").Val())
		require.Equal(t, map[string]string{"f1": "v1", "f2": "new", "f3": "v3"}, c.HGetAll(ctx, "h").Val())
		require.EqualValues(t, 3, c.HLen(ctx, "h").Val())
		require.Equal(t, []int64{-2, 260}, ints(t, c, "HTTL", "h", "FIELDS", 2, "n", "f1"))

		// A time that is not in the future deletes the fields (2); the last one takes the key.
		require.Equal(t, []int64{2, 2}, ints(t, c, "HEXPIRE", "h", 0, "FIELDS", 2, "f2", "f3"))
		require.Equal(t, []int64{2}, ints(t, c, "HPEXPIREAT", "h", testutil.T0, "FIELDS", 1, "f1"))
		require.EqualValues(t, 0, c.Exists(ctx, "h").Val())

		// A condition that fails deletes nothing, even with a time in the past.
		require.NoError(t, c.HSet(ctx, "h", "a", "1", "b", "2").Err())
		require.Equal(t, []int64{1}, ints(t, c, "HEXPIRE", "h", 100, "FIELDS", 1, "b"))
		require.Equal(t, []int64{2, -2, 0}, ints(t, c, "HPEXPIREAT", "h", 1, "NX", "FIELDS", 3, "a", "c", "b"))
		require.Equal(t, map[string]string{"b": "2"}, c.HGetAll(ctx, "h").Val())
	})
}

func TestHashFieldTTLErrors(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.HSet(ctx, "h", "f", "v").Err())
		require.NoError(t, c.Set(ctx, "str", "x", 0).Err())
		for _, tc := range []struct {
			args []any
			err  string
		}{
			{[]any{"HEXPIRE", "h", 10, "FIELDS", 1}, "ERR wrong number of arguments for 'hexpire' command"},
			{[]any{"HEXPIRE", "str", 10, "FIELDS", 1, "f"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{[]any{"HEXPIRE", "h", "x", "FIELDS", 1, "f"}, "ERR value is not an integer or out of range"},
			{[]any{"HEXPIRE", "h", -1, "FIELDS", 1, "f"}, "ERR invalid expire time, must be >= 0"},
			{[]any{"HEXPIRE", "h", int64(1) << 46, "FIELDS", 1, "f"}, "ERR invalid expire time in 'hexpire' command"},
			{[]any{"HPEXPIRE", "h", int64(1) << 46, "FIELDS", 1, "f"}, "ERR invalid expire time in 'hpexpire' command"},
			{[]any{"HPEXPIREAT", "h", int64(1)<<46 - 1, "FIELDS", 1, "f"}, ""},
			{[]any{"HEXPIRE", "h", 10, "FIELD", 1, "f"}, "ERR Mandatory argument FIELDS is missing or not at the right position"},
			{[]any{"HEXPIRE", "h", 10, "NX", "XX", "FIELDS", 1, "f"}, "ERR Mandatory argument FIELDS is missing or not at the right position"},
			{[]any{"HEXPIRE", "h", 10, "FIELDS", 0, "f"}, "ERR Parameter `numFields` should be greater than 0"},
			{[]any{"HEXPIRE", "h", 10, "FIELDS", "x", "f"}, "ERR Parameter `numFields` should be greater than 0"},
			{[]any{"HEXPIRE", "h", 10, "FIELDS", 2, "f"}, "ERR The `numfields` parameter must match the number of arguments"},
			{[]any{"HEXPIRE", "h", 10, "FIELDS", 1, "f", "g"}, "ERR The `numfields` parameter must match the number of arguments"},
			{[]any{"HTTL", "h", "FIELDS", 1}, "ERR wrong number of arguments for 'httl' command"},
			{[]any{"HTTL", "h", "FIELDZ", 1, "f"}, "ERR Mandatory argument FIELDS is missing or not at the right position"},
			{[]any{"HTTL", "h", "FIELDS", 2, "f"}, "ERR The `numfields` parameter must match the number of arguments"},
			{[]any{"HTTL", "str", "FIELDS", 1, "f"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
			{[]any{"HPERSIST", "h", "FIELDS", -1, "f"}, "ERR Parameter `numFields` should be greater than 0"},
			{[]any{"HPEXPIRETIME", "h", "FIELDS", 3, "f"}, "ERR The `numfields` parameter must match the number of arguments"},
		} {
			err := c.Do(ctx, tc.args...).Err()
			if tc.err == "" {
				require.NoError(t, err, "%v", tc.args)
				continue
			}
			require.Error(t, err, "%v", tc.args)
			require.Equal(t, tc.err, err.Error(), "%v", tc.args)
		}
	})
}

// Listpackex keeps fields in expiry order, those without a TTL last, as Redis 7.4 orders it.
func TestHashFieldTTLPackedOrder(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		require.NoError(t, c.HSet(ctx, "h", "a", "1", "b", "2", "c", "3", "d", "4").Err())
		ints(t, c, "HEXPIRE", "h", 30, "FIELDS", 1, "c")
		ints(t, c, "HEXPIRE", "h", 20, "FIELDS", 1, "d")
		ints(t, c, "HEXPIRE", "h", 30, "FIELDS", 1, "a")
		require.Equal(t, []string{"d", "c", "a", "b"}, c.HKeys(ctx, "h").Val())
		ints(t, c, "HPERSIST", "h", "FIELDS", 1, "d")
		require.Equal(t, []string{"c", "a", "b", "d"}, c.HKeys(ctx, "h").Val())
		require.NoError(t, c.HSet(ctx, "h", "c", "new", "e", "5").Err())
		require.Equal(t, []string{"a", "b", "d", "c", "e"}, c.HKeys(ctx, "h").Val())
		require.Equal(t, "listpackex", c.ObjectEncoding(ctx, "h").Val())
	})
}

// The active cycle reclaims expired fields and deletes hashes they emptied, without any
// command touching them.
func TestHashFieldTTLActiveExpiry(t *testing.T) {
	hashEncodings(t, func(t *testing.T, c *redis.Client, packed bool) {
		for i := range 50 {
			k := fmt.Sprintf("h%d", i)
			require.NoError(t, c.HSet(ctx, k, "a", "1", "b", "2", "keep", "3").Err())
			ints(t, c, "HPEXPIRE", k, 1000+i*10, "FIELDS", 2, "a", "b")
			if i%2 == 0 {
				ints(t, c, "HPEXPIRE", k, 500, "FIELDS", 1, "keep")
			}
		}
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 5000).Err())
		require.Eventually(t, func() bool { return c.DBSize(ctx).Val() == 25 }, 5*time.Second, 20*time.Millisecond)
		for i := 1; i < 50; i += 2 {
			require.Equal(t, map[string]string{"keep": "3"}, c.HGetAll(ctx, fmt.Sprintf("h%d", i)).Val())
		}
	})
}

// RENAME and COPY keep field TTLs, and the active cycle still finds the renamed key.
func TestHashFieldTTLRenameCopy(t *testing.T) {
	hashEncodings(t, func(t *testing.T, c *redis.Client, packed bool) {
		require.NoError(t, c.HSet(ctx, "src", "a", "1", "b", "2").Err())
		ints(t, c, "HEXPIRE", "src", 10, "FIELDS", 2, "a", "b")
		require.NoError(t, c.Rename(ctx, "src", "dst").Err())
		require.NoError(t, c.Copy(ctx, "dst", "cp", 0, false).Err())
		require.Equal(t, []int64{10, 10}, ints(t, c, "HTTL", "dst", "FIELDS", 2, "a", "b"))
		require.Equal(t, []int64{10, 10}, ints(t, c, "HTTL", "cp", "FIELDS", 2, "a", "b"))
		ints(t, c, "HPERSIST", "cp", "FIELDS", 1, "a")
		require.Equal(t, []int64{10}, ints(t, c, "HTTL", "dst", "FIELDS", 1, "a"), "the copy shares nothing")
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 11000).Err())
		// Untouched, dst goes through the active cycle alone; cp keeps its persisted field.
		require.Eventually(t, func() bool { return c.DBSize(ctx).Val() == 1 }, 5*time.Second, 20*time.Millisecond)
		require.Equal(t, map[string]string{"a": "1"}, c.HGetAll(ctx, "cp").Val())
	})
}

// Field TTLs survive SAVE, BGSAVE and the append-only log; an expired field is not loaded.
func TestHashFieldTTLRestart(t *testing.T) {
	for _, packed := range []bool{true, false} {
		t.Run(map[bool]string{true: "listpack", false: "hashtable"}[packed], func(t *testing.T) {
			restartThroughEachWay(t, func(t *testing.T, c *redis.Client) {
				if !packed {
					require.NoError(t, c.ConfigSet(ctx, "hash-max-listpack-entries", "0").Err())
				}
				require.NoError(t, c.HSet(ctx, "h", "a", "1", "b", "2", "c", "3", "n", "1").Err())
				ints(t, c, "HEXPIRE", "h", 100, "FIELDS", 1, "a")
				ints(t, c, "HPEXPIREAT", "h", testutil.T0+5000, "FIELDS", 2, "b", "n")
				ints(t, c, "HPERSIST", "h", "FIELDS", 1, "b")
				c.HIncrByFloat(ctx, "h", "n", 1.5)
				require.NoError(t, c.HSet(ctx, "gone", "x", "1").Err())
				ints(t, c, "HEXPIRE", "gone", 1, "FIELDS", 1, "x")
				require.NoError(t, c.HSet(ctx, "plain", "p", "1").Err())
			}, func(t *testing.T, c *redis.Client) []string {
				var out []string
				for _, k := range []string{"h", "plain"} {
					m := c.HGetAll(ctx, k).Val()
					var fs []string
					for f := range m {
						fs = append(fs, f)
					}
					sort.Strings(fs)
					for _, f := range fs {
						at := ints(t, c, "HPEXPIRETIME", k, "FIELDS", 1, f)
						out = append(out, fmt.Sprintf("%s.%s=%s@%d", k, f, m[f], at[0]))
					}
				}
				return append(out, fmt.Sprint(c.Exists(ctx, "gone").Val()))
			}, func(t *testing.T, c *redis.Client, before []string) {
				require.Equal(t, "h.a=1@1700000100000 h.b=2@-1 h.c=3@-1 h.n=2.5@1700000005000 plain.p=1@-1 1",
					strings.Join(before, " "))
			})
		})
	}
}

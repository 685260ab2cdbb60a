package tests

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// freeze stops the server clock at ms through DEBUG CLOCK SET, so that TTL replies are exact.
func freeze(t *testing.T, c *redis.Client, ms int64) {
	t.Helper()
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", ms).Err())
}

func sorted(keys []string) []string {
	out := append([]string(nil), keys...)
	sort.Strings(out)
	return out
}

func TestDelExistsTypeTouch(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		for _, k := range []string{"a", "b", "c"} {
			require.NoError(t, c.Set(ctx, k, "v", 0).Err())
		}
		require.Equal(t, int64(3), c.Exists(ctx, "a", "a", "b", "nope").Val())
		require.Equal(t, int64(2), c.Touch(ctx, "a", "a", "nope").Val())
		require.Equal(t, "string", c.Type(ctx, "a").Val())
		require.Equal(t, "none", c.Type(ctx, "nope").Val())
		require.Equal(t, int64(2), c.Del(ctx, "a", "a", "b", "nope").Val())
		require.Equal(t, int64(1), c.Unlink(ctx, "c", "c").Val())
		require.Equal(t, int64(0), c.Exists(ctx, "a", "b", "c").Val())
		require.EqualError(t, c.Do(ctx, "DEL").Err(), "ERR wrong number of arguments for 'del' command")
		require.EqualError(t, c.Do(ctx, "EXISTS").Err(), "ERR wrong number of arguments for 'exists' command")
		require.EqualError(t, c.Do(ctx, "TYPE", "a", "b").Err(), "ERR wrong number of arguments for 'type' command")
	})
}

func TestExpireAndTTL(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		t0 := testutil.T0
		freeze(t, c, t0)
		do := func(args ...any) int64 {
			t.Helper()
			n, err := c.Do(ctx, args...).Int64()
			require.NoError(t, err, args)
			return n
		}
		require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
		require.Equal(t, int64(-1), do("TTL", "a"))
		require.Equal(t, int64(-1), do("PTTL", "a"))
		require.Equal(t, int64(-1), do("EXPIRETIME", "a"))
		require.Equal(t, int64(-1), do("PEXPIRETIME", "a"))
		for _, cmd := range []string{"TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"} {
			require.Equal(t, int64(-2), do(cmd, "nope"))
		}

		require.Equal(t, int64(1), do("EXPIRE", "a", 100))
		require.Equal(t, int64(100), do("TTL", "a"))
		require.Equal(t, int64(100000), do("PTTL", "a"))
		require.Equal(t, t0/1000+100, do("EXPIRETIME", "a"))
		require.Equal(t, t0+100000, do("PEXPIRETIME", "a"))
		freeze(t, c, t0+600) // 99.4 s left: TTL rounds to nearest
		require.Equal(t, int64(99), do("TTL", "a"))
		require.Equal(t, int64(99400), do("PTTL", "a"))
		freeze(t, c, t0+400)
		require.Equal(t, int64(100), do("TTL", "a"))

		// NX / XX / GT / LT on a key with a TTL (now t0+400 + ... expiry at t0+100000).
		require.Equal(t, int64(0), do("EXPIRE", "a", 10, "NX"))
		require.Equal(t, int64(1), do("PEXPIRE", "a", 50000, "xx"))
		require.Equal(t, t0+50400, do("PEXPIRETIME", "a"))
		require.Equal(t, int64(0), do("PEXPIREAT", "a", t0+50400, "GT"))
		require.Equal(t, int64(1), do("PEXPIREAT", "a", t0+50401, "GT"))
		require.Equal(t, int64(0), do("EXPIREAT", "a", t0/1000+60, "LT"))
		require.Equal(t, int64(1), do("EXPIREAT", "a", t0/1000+20, "LT", "XX"))
		require.Equal(t, t0+20000, do("PEXPIRETIME", "a"))
		require.Equal(t, int64(0), do("EXPIRE", "a", 10, "NX", "NX"))

		// PERSIST, then the options against "no TTL" (an infinite one).
		require.True(t, c.Persist(ctx, "a").Val())
		require.False(t, c.Persist(ctx, "a").Val())
		require.False(t, c.Persist(ctx, "nope").Val())
		require.Equal(t, int64(-1), do("TTL", "a"))
		require.Equal(t, int64(0), do("EXPIRE", "a", 10, "XX"))
		require.Equal(t, int64(0), do("EXPIRE", "a", 10, "GT"))
		require.Equal(t, int64(1), do("EXPIRE", "a", 10, "LT"))
		require.True(t, c.Persist(ctx, "a").Val())
		require.Equal(t, int64(1), do("EXPIRE", "a", 10, "NX"))
		require.Equal(t, int64(0), do("EXPIRE", "nope", 10))

		// Lazy expiry is exact to the millisecond: expired only once now > expireAt.
		require.Equal(t, int64(1), do("PEXPIREAT", "a", t0+1000))
		freeze(t, c, t0+1000)
		require.Equal(t, int64(0), do("PTTL", "a"))
		require.Equal(t, int64(0), do("TTL", "a"))
		require.Equal(t, "1", c.Get(ctx, "a").Val())
		freeze(t, c, t0+1001)
		require.Equal(t, int64(-2), do("PTTL", "a"))
		require.Equal(t, redis.Nil, c.Get(ctx, "a").Err())

		// A time in the past (or now) deletes the key and still replies 1.
		now := t0 + 1001
		for _, args := range [][]any{
			{"EXPIRE", "k", -1}, {"PEXPIRE", "k", 0}, {"EXPIREAT", "k", now / 1000}, {"PEXPIREAT", "k", now},
			{"PEXPIRE", "k", int64(-9223372036854775808)},
		} {
			require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
			require.Equal(t, int64(1), do(args...), args)
			require.Equal(t, int64(0), c.Exists(ctx, "k").Val(), args)
		}

		// Far expiries near the int64 limit, and Redis's rounding there.
		require.NoError(t, c.Set(ctx, "far", "v", 0).Err())
		require.Equal(t, int64(1), do("PEXPIREAT", "far", int64(9223372036854775807)))
		require.Equal(t, int64(9223372036854776), do("EXPIRETIME", "far"))
		require.Equal(t, int64(9223372036854775807), do("PEXPIRETIME", "far"))
		require.Equal(t, int64(1), do("EXPIREAT", "far", int64(9223372036854775)))
		require.Equal(t, int64(9223372036854775), do("EXPIRETIME", "far"))

		// SET ... EX and RENAME keep working with the same clock.
		require.NoError(t, c.Set(ctx, "ex", "v", 5*time.Second).Err())
		require.Equal(t, int64(5000), do("PTTL", "ex"))

		errs := map[string][]any{
			"ERR NX and XX, GT or LT options at the same time are not compatible": {
				"EXPIRE", "far", 10, "NX", "XX"},
			"ERR GT and LT options at the same time are not compatible": {"PEXPIRE", "far", 10, "gt", "lt"},
			"ERR Unsupported option foo":                                {"EXPIRE", "far", "x", "foo"},
			"ERR value is not an integer or out of range":               {"EXPIRE", "far", "x"},
			"ERR invalid expire time in 'expire' command":               {"EXPIRE", "far", int64(9999999999999999)},
			"ERR invalid expire time in 'pexpire' command":              {"PEXPIRE", "far", int64(9223372036854775807)},
			"ERR invalid expire time in 'expireat' command":             {"EXPIREAT", "far", int64(-9223372036854775808)},
			"ERR wrong number of arguments for 'expire' command":        {"EXPIRE", "far"},
			"ERR wrong number of arguments for 'ttl' command":           {"TTL"},
		}
		for want, args := range errs {
			require.EqualError(t, c.Do(ctx, args...).Err(), want, args)
		}
		require.EqualError(t, c.Do(ctx, "PEXPIRE", "far", 10, "NX", "LT").Err(),
			"ERR NX and XX, GT or LT options at the same time are not compatible")
		// Errors leave the key alone; a missing key with a bad time still errors.
		require.Equal(t, int64(9223372036854775), do("EXPIRETIME", "far"))
		require.EqualError(t, c.Do(ctx, "EXPIRE", "nope", int64(9999999999999999)).Err(),
			"ERR invalid expire time in 'expire' command")
	})
}

func TestKeysAndScan(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		keys, cur, err := c.Scan(ctx, 0, "", 10).Result()
		require.NoError(t, err)
		require.Empty(t, keys)
		require.Equal(t, uint64(0), cur, "an empty database scans in one call")
		require.Empty(t, c.Keys(ctx, "*").Val())

		var all []string
		for i := range 300 {
			k := fmt.Sprintf("user:%d", i)
			all = append(all, k)
			require.NoError(t, c.Set(ctx, k, i, 0).Err())
		}
		require.NoError(t, c.Set(ctx, "h?llo", "x", 0).Err())
		require.NoError(t, c.Set(ctx, "hello", "x", 0).Err())
		require.NoError(t, c.Set(ctx, "hallo", "x", 0).Err())

		require.Equal(t, []string{"h?llo", "hallo", "hello"}, sorted(c.Keys(ctx, "h*llo").Val()))
		require.Equal(t, []string{"h?llo"}, c.Keys(ctx, `h\?llo`).Val())
		require.Equal(t, []string{"hallo"}, c.Keys(ctx, "h[a]llo").Val())
		require.Len(t, c.Keys(ctx, "*").Val(), 303)
		require.Empty(t, c.Keys(ctx, "zzz*").Val())
		require.Equal(t, sorted(all), sorted(c.Keys(ctx, "user:*").Val()))

		// A full iteration with MATCH returns every matching key exactly once (no resizes here).
		var got []string
		calls := 0
		for cur := uint64(0); ; {
			keys, next, err := c.Scan(ctx, cur, "user:*", 20).Result()
			require.NoError(t, err)
			got = append(got, keys...)
			calls++
			if cur = next; cur == 0 {
				break
			}
		}
		require.Equal(t, sorted(all), sorted(got))
		require.Greater(t, calls, 1)

		// TYPE filters case-insensitively; an unknown type matches nothing.
		keys, _, err = c.ScanType(ctx, 0, "h*", 1000, "STRING").Result()
		require.NoError(t, err)
		require.Len(t, keys, 3)
		keys, cur, err = c.ScanType(ctx, 0, "", 1000000, "list").Result()
		require.NoError(t, err)
		require.Empty(t, keys)
		require.Equal(t, uint64(0), cur)

		// Cursors parse as Redis's strtoul does.
		for _, cur := range []string{"", "+5", "-1", "18446744073709551615", "-0"} {
			require.NoError(t, c.Do(ctx, "SCAN", cur).Err(), cur)
		}
		for _, cur := range []string{" 1", "1 ", "x", "18446744073709551616", "-", "+", "1.5"} {
			require.EqualError(t, c.Do(ctx, "SCAN", cur).Err(), "ERR invalid cursor", cur)
		}
		require.EqualError(t, c.Do(ctx, "SCAN", "x", "COUNT", "0").Err(), "ERR invalid cursor")
		require.EqualError(t, c.Do(ctx, "SCAN", "0", "COUNT", "0").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "SCAN", "0", "COUNT", "-1").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "SCAN", "0", "COUNT", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "SCAN", "0", "MATCH").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "SCAN", "0", "foo", "bar").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "KEYS").Err(), "ERR wrong number of arguments for 'keys' command")

		// The reply shape: [cursor as a bulk string, [keys]].
		r := s.Dial(t)
		require.Equal(t, "*2\r\n$1\r\n0\r\n*0\r\n", r.Do("SCAN", "0", "MATCH", "nomatch*", "COUNT", "1000000"))
	})
}

// TestScanWhileInserting checks SCAN's guarantee: every key present for the whole iteration is
// returned, while tables grow (inserts) and shrink (deletes) between calls.
func TestScanWhileInserting(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		pipeSet := func(prefix string, n int) {
			p := c.Pipeline()
			for i := range n {
				p.Set(ctx, fmt.Sprintf("%s:%d", prefix, i), i, 0)
			}
			_, err := p.Exec(ctx)
			require.NoError(t, err)
		}
		// Four shards of ~825 keys (1024 buckets each) shrink to a few hundred buckets as the
		// tmp keys go, while new keys keep arriving.
		pipeSet("base", 300)
		pipeSet("tmp", 3000)
		seen := map[string]bool{}
		added, deleted := 0, 0
		for cur := uint64(0); ; {
			keys, next, err := c.Scan(ctx, cur, "", 20).Result()
			require.NoError(t, err)
			for _, k := range keys {
				seen[k] = true
			}
			p := c.Pipeline()
			for range 20 {
				p.Set(ctx, fmt.Sprintf("new:%d", added), 1, 0)
				added++
			}
			for i := 0; i < 150 && deleted < 3000; i++ {
				p.Del(ctx, fmt.Sprintf("tmp:%d", deleted))
				deleted++
			}
			_, err = p.Exec(ctx)
			require.NoError(t, err)
			if cur = next; cur == 0 {
				break
			}
		}
		for i := range 300 {
			require.True(t, seen[fmt.Sprintf("base:%d", i)], "base:%d never returned", i)
		}
		require.Equal(t, 3000, deleted, "the tables shrank during the scan")
		require.Greater(t, added, 300, "and grew")
	}, "--shards", "4")
}

func TestRandomKey(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, redis.Nil, c.RandomKey(ctx).Err())
		want := map[string]bool{"a": true, "b": true, "c": true}
		for k := range want {
			require.NoError(t, c.Set(ctx, k, 1, 0).Err())
		}
		got := map[string]bool{}
		for range 200 {
			k, err := c.RandomKey(ctx).Result()
			require.NoError(t, err)
			require.True(t, want[k], k)
			got[k] = true
		}
		require.Equal(t, want, got, "every key turns up")

		// Expired keys are never returned, and are reclaimed on the way.
		freeze(t, c, testutil.T0)
		require.NoError(t, c.FlushDB(ctx).Err())
		require.NoError(t, c.Set(ctx, "gone", 1, time.Second).Err())
		require.NoError(t, c.Set(ctx, "stay", 1, 0).Err())
		freeze(t, c, testutil.T0+1001)
		for range 20 {
			require.Equal(t, "stay", c.RandomKey(ctx).Val())
		}
		require.NoError(t, c.Del(ctx, "stay").Err())
		require.Equal(t, redis.Nil, c.RandomKey(ctx).Err())
		require.Equal(t, int64(0), c.DBSize(ctx).Val())
	})
}

func TestRename(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		freeze(t, c, testutil.T0)
		require.EqualError(t, c.Rename(ctx, "nope", "b").Err(), "ERR no such key")
		require.EqualError(t, c.RenameNX(ctx, "nope", "b").Err(), "ERR no such key")
		require.EqualError(t, c.Rename(ctx, "nope", "nope").Err(), "ERR no such key")

		require.NoError(t, c.Set(ctx, "a", "va", 10*time.Second).Err())
		require.Equal(t, "OK", c.Rename(ctx, "a", "a").Val())
		require.False(t, c.RenameNX(ctx, "a", "a").Val())
		require.Equal(t, "OK", c.Rename(ctx, "a", "b").Val())
		require.Equal(t, int64(0), c.Exists(ctx, "a").Val())
		require.Equal(t, "va", c.Get(ctx, "b").Val())
		require.Equal(t, 10*time.Second, c.PTTL(ctx, "b").Val(), "the TTL moves with the value")

		// RENAME replaces the destination, its value and its TTL.
		require.NoError(t, c.Set(ctx, "c", "vc", 0).Err())
		require.Equal(t, "OK", c.Rename(ctx, "c", "b").Val())
		require.Equal(t, "vc", c.Get(ctx, "b").Val())
		require.Equal(t, time.Duration(-1), c.PTTL(ctx, "b").Val())

		require.NoError(t, c.Set(ctx, "d", "vd", 0).Err())
		require.False(t, c.RenameNX(ctx, "d", "b").Val())
		require.Equal(t, "vc", c.Get(ctx, "b").Val())
		require.True(t, c.RenameNX(ctx, "d", "e").Val())
		require.Equal(t, "vd", c.Get(ctx, "e").Val())

		// An expired source is missing; an expired destination is free.
		require.NoError(t, c.Set(ctx, "old", "x", time.Second).Err())
		require.NoError(t, c.Set(ctx, "src", "y", 0).Err())
		freeze(t, c, testutil.T0+1001)
		require.True(t, c.RenameNX(ctx, "src", "old").Val())
		require.Equal(t, time.Duration(-1), c.PTTL(ctx, "old").Val())
		require.NoError(t, c.Set(ctx, "x", "x", time.Second).Err())
		freeze(t, c, testutil.T0+3000)
		require.EqualError(t, c.Rename(ctx, "x", "z").Err(), "ERR no such key")
		require.EqualError(t, c.Do(ctx, "RENAME", "a").Err(), "ERR wrong number of arguments for 'rename' command")
	})
}

func TestCopyAndMove(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		freeze(t, c, testutil.T0)
		db1 := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: c.Options().Protocol, DB: 1,
			DisableIdentity: true})
		defer db1.Close()

		require.NoError(t, c.Set(ctx, "src", "hello", 10*time.Second).Err())
		require.EqualError(t, c.Copy(ctx, "src", "src", 0, false).Err(), "ERR source and destination objects are the same")
		require.Equal(t, int64(1), c.Copy(ctx, "src", "src", 1, false).Val(), "same name, other db")
		require.Equal(t, "hello", db1.Get(ctx, "src").Val())
		require.Equal(t, 10*time.Second, db1.PTTL(ctx, "src").Val())

		require.Equal(t, int64(1), c.Do(ctx, "COPY", "src", "dst").Val())
		require.Equal(t, 10*time.Second, c.PTTL(ctx, "dst").Val())
		require.Equal(t, int64(0), c.Do(ctx, "COPY", "nope", "dst").Val())
		require.NoError(t, c.Set(ctx, "other", "o", 0).Err())
		require.Equal(t, int64(0), c.Do(ctx, "COPY", "other", "dst").Val())
		require.Equal(t, "hello", c.Get(ctx, "dst").Val())
		require.Equal(t, int64(1), c.Do(ctx, "COPY", "other", "dst", "REPLACE").Val())
		require.Equal(t, "o", c.Get(ctx, "dst").Val())
		require.Equal(t, time.Duration(-1), c.PTTL(ctx, "dst").Val(), "REPLACE drops the old TTL")
		require.Equal(t, int64(1), c.Do(ctx, "COPY", "other", "dst", "replace", "DB", "0", "replace").Val())

		// The copy shares nothing with the source.
		require.NoError(t, c.Set(ctx, "src", "changed", 0).Err())
		require.Equal(t, "hello", db1.Get(ctx, "src").Val())

		for want, args := range map[string][]any{
			"ERR DB index is out of range":                       {"COPY", "src", "x", "DB", "16"},
			"ERR value is not an integer or out of range":        {"COPY", "src", "x", "DB", "x"},
			"ERR syntax error":                                   {"COPY", "src", "x", "DB"},
			"ERR wrong number of arguments for 'copy' command":   {"COPY", "src"},
			"ERR source and destination objects are the same":    {"MOVE", "src", "0"},
			"ERR wrong number of arguments for 'move' command":   {"MOVE", "src"},
			"ERR invalid first DB index":                         {"SWAPDB", "x", "0"},
			"ERR invalid second DB index":                        {"SWAPDB", "0", "99999999999"},
			"ERR wrong number of arguments for 'swapdb' command": {"SWAPDB", "0"},
		} {
			require.EqualError(t, c.Do(ctx, args...).Err(), want, args)
		}
		require.EqualError(t, c.Do(ctx, "COPY", "src", "x", "DB", "-1").Err(), "ERR DB index is out of range")
		require.EqualError(t, c.Do(ctx, "COPY", "src", "x", "foo").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "MOVE", "src", "16").Err(), "ERR DB index is out of range")
		require.EqualError(t, c.Do(ctx, "MOVE", "src", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "MOVE", "src", "4294967296").Err(), "ERR value is not an integer or out of range")

		// MOVE: refuses when the name is taken there, keeps the TTL otherwise.
		require.False(t, c.Move(ctx, "src", 1).Val())
		require.Equal(t, "changed", c.Get(ctx, "src").Val())
		require.False(t, c.Move(ctx, "nope", 1).Val())
		require.NoError(t, c.Set(ctx, "mv", "m", 5*time.Second).Err())
		require.True(t, c.Move(ctx, "mv", 1).Val())
		require.Equal(t, int64(0), c.Exists(ctx, "mv").Val())
		require.Equal(t, "m", db1.Get(ctx, "mv").Val())
		require.Equal(t, 5*time.Second, db1.PTTL(ctx, "mv").Val())
		require.True(t, db1.Move(ctx, "mv", 0).Val())
		require.Equal(t, "m", c.Get(ctx, "mv").Val())
	})
}

func TestSwapDBFlushAndDBSize(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		freeze(t, c, testutil.T0)
		db1 := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: c.Options().Protocol, DB: 1,
			DisableIdentity: true})
		defer db1.Close()
		for i := range 10 {
			require.NoError(t, c.Set(ctx, fmt.Sprint("zero:", i), i, 0).Err())
		}
		require.NoError(t, c.Set(ctx, "ttl", "t", 2*time.Second).Err())
		require.NoError(t, db1.Set(ctx, "one", "1", 0).Err())
		require.Equal(t, int64(11), c.DBSize(ctx).Val())
		require.Equal(t, int64(1), db1.DBSize(ctx).Val())

		require.Equal(t, "OK", c.Do(ctx, "SWAPDB", 0, 1).Val())
		require.Equal(t, int64(1), c.DBSize(ctx).Val(), "clients keep their index and see the other data")
		require.Equal(t, "1", c.Get(ctx, "one").Val())
		require.Equal(t, int64(11), db1.DBSize(ctx).Val())
		require.Equal(t, 2*time.Second, db1.PTTL(ctx, "ttl").Val())
		require.Equal(t, "OK", c.Do(ctx, "SWAPDB", 1, 1).Val())
		require.EqualError(t, c.Do(ctx, "SWAPDB", "0", "16").Err(), "ERR DB index is out of range")
		require.EqualError(t, c.Do(ctx, "SWAPDB", "-1", "0").Err(), "ERR DB index is out of range")

		// The wheel travels with the data: the swapped key is still reclaimed (the wheel is
		// coarse: a second's bucket is due once the whole second has passed).
		freeze(t, c, testutil.T0+3000)
		require.NoError(t, c.Do(ctx, "DEBUG", "EXPIRE-NOW").Err()) // or the active cycle got there first
		require.Equal(t, int64(10), db1.DBSize(ctx).Val())

		// DBSIZE counts expired keys not reclaimed yet, as Redis does.
		require.NoError(t, c.Set(ctx, "lazy", "x", time.Second).Err())
		freeze(t, c, testutil.T0+4500)
		require.Equal(t, int64(2), c.DBSize(ctx).Val())

		require.EqualError(t, c.Do(ctx, "FLUSHDB", "foo").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "FLUSHDB", "SYNC", "ASYNC").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "FLUSHALL", "now").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "DBSIZE", "x").Err(), "ERR wrong number of arguments for 'dbsize' command")
		require.Equal(t, "OK", c.Do(ctx, "FLUSHDB", "async").Val())
		require.Equal(t, int64(0), c.DBSize(ctx).Val())
		require.Equal(t, int64(10), db1.DBSize(ctx).Val())
		require.Equal(t, "OK", c.Do(ctx, "FLUSHDB", "SYNC").Val())
		require.NoError(t, c.Set(ctx, "again", "x", 0).Err())
		require.Equal(t, "OK", c.Do(ctx, "FLUSHALL", "ASYNC").Val())
		require.Equal(t, int64(0), c.DBSize(ctx).Val())
		require.Equal(t, int64(0), db1.DBSize(ctx).Val())
		require.NoError(t, db1.Set(ctx, "k", "v", 0).Err())
		require.Equal(t, "OK", c.FlushAll(ctx).Val())
		require.Equal(t, int64(0), db1.DBSize(ctx).Val())
		require.NoError(t, c.Set(ctx, "after", "x", 0).Err(), "the keyspace works after a flush")
		require.Equal(t, "x", c.Get(ctx, "after").Val())
	})
}

func TestObject(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		freeze(t, c, testutil.T0)
		require.NoError(t, c.Set(ctx, "small", "1", 0).Err())
		require.NoError(t, c.Set(ctx, "int", "99999", 0).Err())
		require.NoError(t, c.Set(ctx, "emb", "01234567890123456789012345678901234567890123", 0).Err())
		require.NoError(t, c.Set(ctx, "raw", "012345678901234567890123456789012345678901234", 0).Err())
		for k, enc := range map[string]string{"small": "int", "int": "int", "emb": "embstr", "raw": "raw"} {
			require.Equal(t, enc, c.ObjectEncoding(ctx, k).Val(), k)
		}
		require.Equal(t, int64(2147483647), c.ObjectRefCount(ctx, "small").Val(), "shared integer")
		require.Equal(t, int64(1), c.ObjectRefCount(ctx, "int").Val())
		require.Equal(t, int64(1), c.ObjectRefCount(ctx, "raw").Val())
		for _, sub := range []string{"ENCODING", "REFCOUNT", "IDLETIME", "FREQ"} {
			require.Equal(t, redis.Nil, c.Do(ctx, "OBJECT", sub, "nope").Err(), sub)
		}
		require.EqualError(t, c.Do(ctx, "OBJECT", "FREQ", "small").Err(),
			"ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")

		freeze(t, c, testutil.T0+10_000)
		require.Equal(t, 10*time.Second, c.ObjectIdleTime(ctx, "small").Val())
		require.Equal(t, time.Duration(-1), c.TTL(ctx, "small").Val())
		require.Equal(t, "string", c.Type(ctx, "small").Val())
		require.Equal(t, int64(1), c.Exists(ctx, "small").Val())
		require.Equal(t, 10*time.Second, c.ObjectIdleTime(ctx, "small").Val(), "TTL, TYPE, EXISTS, OBJECT do not touch")
		require.Equal(t, "1", c.Get(ctx, "small").Val())
		require.Equal(t, time.Duration(0), c.ObjectIdleTime(ctx, "small").Val(), "GET touches")

		help, err := c.Do(ctx, "OBJECT", "HELP").StringSlice()
		require.NoError(t, err)
		require.Len(t, help, 15)
		require.Equal(t, "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", help[0])
		require.Equal(t, "    Prints this help.", help[14])
		require.EqualError(t, c.Do(ctx, "OBJECT", "foo").Err(), "ERR unknown subcommand 'foo'. Try OBJECT HELP.")
		require.EqualError(t, c.Do(ctx, "OBJECT", "ENCODING").Err(), "ERR wrong number of arguments for 'object|encoding' command")
		require.EqualError(t, c.Do(ctx, "OBJECT").Err(), "ERR wrong number of arguments for 'object' command")
	})
}

// TestKeyspaceConcurrency runs the cross-shard and cross-database commands against each other
// (run it with -race). RENAMENX, MOVE and SWAPDB never lose or duplicate a value, so the values
// of the "k" keys across databases 0 and 1 must be exactly the ones written at the start:
// any torn move or swap would show.
func TestKeyspaceConcurrency(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		proto := c.Options().Protocol
		client := func(db int) *redis.Client {
			cl := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto, DB: db, PoolSize: 8,
				DisableIdentity: true, MaxRetries: -1})
			t.Cleanup(func() { _ = cl.Close() })
			return cl
		}
		dbs := []*redis.Client{client(0), client(1)}
		const values = 40
		for i := range values {
			require.NoError(t, c.Set(ctx, fmt.Sprint("k", i), fmt.Sprint("v", i), 0).Err())
		}
		var wg sync.WaitGroup
		done := make(chan struct{})
		for g := range 8 {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(uint64(g), 1))
				k := func() string { return fmt.Sprint("k", rnd.IntN(2*values)) }
				x := func() string { return fmt.Sprint("x", rnd.IntN(30)) }
				for range 250 {
					cl := dbs[rnd.IntN(2)]
					var err error
					switch rnd.IntN(12) {
					case 0:
						err = cl.RenameNX(ctx, k(), k()).Err()
					case 1:
						err = cl.Move(ctx, k(), rnd.IntN(2)).Err()
					case 2:
						err = cl.Do(ctx, "SWAPDB", 0, 1).Err()
					case 3:
						err = cl.Set(ctx, x(), "v", 0).Err()
					case 4:
						err = cl.Copy(ctx, x(), x(), rnd.IntN(2), rnd.IntN(2) == 0).Err()
					case 5:
						err = cl.Del(ctx, x(), x(), x()).Err()
					case 6:
						err = cl.Rename(ctx, x(), x()).Err()
					case 7:
						err = cl.Do(ctx, "SCAN", "0", "COUNT", "5").Err()
					case 8:
						err = cl.Keys(ctx, "x*").Err()
					case 9:
						err = cl.RandomKey(ctx).Err()
					case 10:
						err = cl.DBSize(ctx).Err()
					case 11:
						err = cl.Do(ctx, "COPY", k(), x(), "DB", rnd.IntN(2), "REPLACE").Err()
					}
					if err != nil && err != redis.Nil && err.Error() != "ERR no such key" &&
						err.Error() != "ERR source and destination objects are the same" {
						t.Errorf("unexpected error: %v", err)
						return
					}
				}
			}(g)
		}
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("deadlock: workers did not finish")
		}

		var vals []string
		for _, cl := range dbs {
			for _, key := range cl.Keys(ctx, "k*").Val() {
				v, err := cl.Get(ctx, key).Result()
				require.NoError(t, err)
				vals = append(vals, v)
			}
		}
		var want []string
		for i := range values {
			want = append(want, fmt.Sprint("v", i))
		}
		require.Equal(t, sorted(want), sorted(vals))
	})
}

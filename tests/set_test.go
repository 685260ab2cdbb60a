package tests

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// Small sets' exact replies are compared with Redis in testdata/compat/sets.txt; these tests
// cover what that corpus cannot: large hashtables (whose order differs from Redis's), full
// SSCAN iterations, the properties of random picks, set algebra against Go maps, multi-key
// commands under concurrency, and restarts.

func setSortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func setSorted(xs []string) []string {
	out := slices.Clone(xs)
	sort.Strings(out)
	return out
}

func TestSetLargeEncoding(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		want := map[string]bool{}
		var args []any
		for i := range 2000 {
			m := fmt.Sprintf("m%04d", i)
			want[m] = true
			args = append(args, m)
		}
		require.EqualValues(t, 2000, c.SAdd(ctx, "s", args...).Val())
		require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "s").Val())
		require.EqualValues(t, 2000, c.SCard(ctx, "s").Val())
		require.Equal(t, setSortedKeys(want), setSorted(c.SMembers(ctx, "s").Val()))

		// SSCAN: every member exactly once (no resize meanwhile), cursor back to 0.
		got := map[string]int{}
		var cursor uint64
		for calls := 0; ; calls++ {
			require.Less(t, calls, 5000)
			keys, next, err := c.SScan(ctx, "s", cursor, "", 7).Result()
			require.NoError(t, err)
			for _, k := range keys {
				got[k]++
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		require.Len(t, got, 2000)
		for k, n := range got {
			require.True(t, want[k], k)
			require.Equal(t, 1, n, k)
		}
		matched := map[string]bool{}
		cursor = 0
		for {
			keys, next, err := c.SScan(ctx, "s", cursor, "m19*", 50).Result()
			require.NoError(t, err)
			for _, k := range keys {
				matched[k] = true
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		require.Len(t, matched, 100, "m1900 to m1999: MATCH filters")

		// SRANDMEMBER: distinct members for a positive count, both below and above a third
		// of the set; the whole set past its size; repeats for a negative count.
		for _, n := range []int64{1, 10, 600, 1500, 1999, 2000, 5000} {
			members, err := c.SRandMemberN(ctx, "s", n).Result()
			require.NoError(t, err)
			require.Len(t, members, int(min(n, 2000)))
			seen := map[string]bool{}
			for _, m := range members {
				require.True(t, want[m], m)
				require.False(t, seen[m], "duplicate %q for count %d", m, n)
				seen[m] = true
			}
		}
		members, err := c.SRandMemberN(ctx, "s", -3000).Result()
		require.NoError(t, err)
		require.Len(t, members, 3000)
		distinct := map[string]bool{}
		for _, m := range members {
			require.True(t, want[m])
			distinct[m] = true
		}
		require.Less(t, len(distinct), 3000, "a negative count repeats members")
		require.Greater(t, len(distinct), 500, "picks spread over the set")

		// SPOP: a few (Redis's case 2), then most of what is left (case 3: the few that stay
		// move into a new set); popped members are distinct and gone, the TTL stays.
		require.True(t, c.Expire(ctx, "s", time.Hour).Val())
		left := setCopy(want)
		for _, n := range []int64{1, 300, 1500} {
			popped, err := c.SPopN(ctx, "s", n).Result()
			require.NoError(t, err)
			require.Len(t, popped, int(n))
			for _, m := range popped {
				require.True(t, left[m], "popped %q, not in the set", m)
				delete(left, m)
			}
			require.EqualValues(t, len(left), c.SCard(ctx, "s").Val())
			require.Equal(t, setSortedKeys(left), setSorted(c.SMembers(ctx, "s").Val()))
			require.Positive(t, c.TTL(ctx, "s").Val())
		}
		one, err := c.SPop(ctx, "s").Result()
		require.NoError(t, err)
		require.True(t, left[one])
		delete(left, one)
		rest, err := c.SPopN(ctx, "s", 1000).Result()
		require.NoError(t, err)
		require.Equal(t, setSortedKeys(left), setSorted(rest))
		require.EqualValues(t, 0, c.Exists(ctx, "s").Val())

		// An all-integer hashtable of which SPOP keeps a few comes back an intset, as in
		// Redis; an intset turns into a hashtable past 512 members and stays one.
		args = args[:0]
		for i := range 600 {
			args = append(args, i)
		}
		c.SAdd(ctx, "n", args...)
		require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "n").Val())
		require.Len(t, c.SPopN(ctx, "n", 590).Val(), 590)
		require.Equal(t, "intset", c.ObjectEncoding(ctx, "n").Val())
		require.EqualValues(t, 10, c.SCard(ctx, "n").Val())
		ints := c.SMembers(ctx, "n").Val()
		require.True(t, slices.IsSortedFunc(ints, func(a, b string) int {
			x, _ := strconv.Atoi(a)
			y, _ := strconv.Atoi(b)
			return x - y
		}), "an intset lists its members in numeric order: %v", ints)

		// COPY gives an independent set; MEMORY USAGE sees it.
		require.EqualValues(t, 1, c.Copy(ctx, "n", "n2", 0, false).Val())
		c.SAdd(ctx, "n2", "x")
		require.EqualValues(t, 10, c.SCard(ctx, "n").Val())
		require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "n2").Val())
		require.Equal(t, "intset", c.ObjectEncoding(ctx, "n").Val())
		require.Positive(t, c.MemoryUsage(ctx, "n2").Val())
	})
}

func setCopy(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SINTER, SUNION, SDIFF, SINTERCARD and the STORE forms on random sets of both encodings, some
// large, agree with the same algebra on Go maps; all-integer results of at most 512 members are
// intsets, listed in numeric order.
func TestSetAlgebraMatchesMaps(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 3)
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 30 {
		require.NoError(t, c.FlushAll(ctx).Err())
		keys := []string{"a", "b", "c", "d"}
		sets := map[string]map[string]bool{}
		for i, k := range keys {
			size := rng.IntN(1500)
			if round%3 == 0 {
				size = rng.IntN(40)
			}
			span := size*2 + 1
			m := map[string]bool{}
			var args []any
			for range size {
				var x string
				if i == round%4 && round%2 == 0 {
					x = fmt.Sprintf("x%d", rng.IntN(span)) // one set of strings in some rounds
				} else {
					x = strconv.Itoa(rng.IntN(span) - span/4)
				}
				m[x] = true
				args = append(args, x)
			}
			sets[k] = m
			if len(args) > 0 {
				c.SAdd(ctx, k, args...)
			}
		}
		pick := func() []string {
			n := 1 + rng.IntN(4)
			out := make([]string, n)
			for i := range out {
				out[i] = keys[rng.IntN(len(keys))]
			}
			if rng.IntN(5) == 0 {
				out = append(out, "missing")
			}
			return out
		}
		get := func(k string) map[string]bool { return sets[k] } // nil for missing
		inter := func(ks []string) map[string]bool {
			out := setCopy(get(ks[0]))
			for _, k := range ks[1:] {
				for m := range out {
					if !get(k)[m] {
						delete(out, m)
					}
				}
			}
			return out
		}
		union := func(ks []string) map[string]bool {
			out := map[string]bool{}
			for _, k := range ks {
				for m := range get(k) {
					out[m] = true
				}
			}
			return out
		}
		diff := func(ks []string) map[string]bool {
			out := setCopy(get(ks[0]))
			for _, k := range ks[1:] {
				for m := range get(k) {
					delete(out, m)
				}
			}
			return out
		}
		check := func(what string, ks []string, got []string, want map[string]bool) {
			t.Helper()
			require.Equal(t, setSortedKeys(want), setSorted(got), "round %d %s %v", round, what, ks)
			allInts := len(want) <= 512
			for m := range want {
				if _, err := strconv.ParseInt(m, 10, 64); err != nil {
					allInts = false
				}
			}
			if allInts && what == "SUNION" {
				require.True(t, slices.IsSortedFunc(got, func(a, b string) int {
					x, _ := strconv.ParseInt(a, 10, 64)
					y, _ := strconv.ParseInt(b, 10, 64)
					return int(x - y)
				}), "an intset result is listed in numeric order")
			}
		}
		for range 10 {
			ks := pick()
			check("SINTER", ks, c.SInter(ctx, ks...).Val(), inter(ks))
			check("SUNION", ks, c.SUnion(ctx, ks...).Val(), union(ks))
			check("SDIFF", ks, c.SDiff(ctx, ks...).Val(), diff(ks))
			require.EqualValues(t, len(inter(ks)), c.SInterCard(ctx, 0, ks...).Val())
			limit := int64(rng.IntN(20))
			card := int64(len(inter(ks)))
			if limit > 0 {
				card = min(card, limit)
			}
			require.EqualValues(t, card, c.SInterCard(ctx, limit, ks...).Val())
			for _, op := range []struct {
				name string
				fn   func(string, ...string) *redis.IntCmd
				want map[string]bool
			}{
				{"SINTERSTORE", func(d string, k ...string) *redis.IntCmd { return c.SInterStore(ctx, d, k...) }, inter(ks)},
				{"SUNIONSTORE", func(d string, k ...string) *redis.IntCmd { return c.SUnionStore(ctx, d, k...) }, union(ks)},
				{"SDIFFSTORE", func(d string, k ...string) *redis.IntCmd { return c.SDiffStore(ctx, d, k...) }, diff(ks)},
			} {
				c.Set(ctx, "dst", "old", time.Hour)
				require.EqualValues(t, len(op.want), op.fn("dst", ks...).Val(), op.name)
				if len(op.want) == 0 {
					require.EqualValues(t, 0, c.Exists(ctx, "dst").Val(), "an empty result deletes the destination")
					continue
				}
				require.Equal(t, setSortedKeys(op.want), setSorted(c.SMembers(ctx, "dst").Val()), op.name)
				require.EqualValues(t, -1, c.TTL(ctx, "dst").Val(), "the destination is replaced, TTL and all")
			}
		}
		// A STORE into one of its own sources.
		ks := pick()
		want := union(ks)
		c.SUnionStore(ctx, ks[0], ks...)
		if len(want) > 0 {
			require.Equal(t, setSortedKeys(want), setSorted(c.SMembers(ctx, ks[0]).Val()))
		}
	}
}

// Multi-key set commands hold every involved shard: members that only move between sets
// (SMOVE, and SUNIONSTORE+DEL inside MULTI) are always all there for SUNION, SINTERCARD
// and SCARD, which see the sets at one instant.
func TestSetMultiKeyAtomicity(t *testing.T) {
	s := testutil.StartServer(t)
	admin := s.Client(t, 2)
	keys := []string{"k:a", "k:b", "k:c", "k:d", "k:e", "k:f"}
	const n = 300
	var args []any
	for i := range n {
		args = append(args, fmt.Sprintf("m%d", i))
	}
	require.EqualValues(t, n, admin.SAdd(ctx, keys[0], args...).Val())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 16)
	for w := range 4 {
		c := s.Client(t, 2)
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				select {
				case <-stop:
					return
				default:
				}
				src, dst := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
				if rng.IntN(10) == 0 && src != dst {
					// Move a whole set atomically.
					_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.SUnionStore(ctx, dst, src, dst)
						p.Del(ctx, src)
						return nil
					})
					if err != nil {
						errs <- err
						return
					}
					continue
				}
				if err := c.SMove(ctx, src, dst, fmt.Sprintf("m%d", rng.IntN(n))).Err(); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	for range 300 {
		members, err := admin.SUnion(ctx, keys...).Result()
		require.NoError(t, err)
		require.Len(t, members, n, "SUNION saw a member in flight")
		require.EqualValues(t, 0, admin.SInterCard(ctx, 0, keys...).Val())
		cards, err := admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.SCard(ctx, k)
			}
			return nil
		})
		require.NoError(t, err)
		total := int64(0)
		for _, cmd := range cards {
			total += cmd.(*redis.IntCmd).Val()
		}
		require.EqualValues(t, n, total)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// SPOP journals the SREM of what it popped, or DEL when it popped everything; SMOVE and the
// STORE forms their own arguments; writes that change nothing journal nothing.
func TestSetEffects(t *testing.T) {
	s := testutil.StartServer(t)
	log := &effectLog{}
	s.StoreForTest().Journal = log
	c := s.Client(t, 2).Conn()
	t.Cleanup(func() { _ = c.Close() })
	expect := func(want []string, args ...any) {
		t.Helper()
		n := log.len()
		doOK(t, c, args...)
		var got []string
		for _, e := range log.since(n) {
			got = append(got, fmt.Sprintf("%d: %s", e.DB, effectString(e)))
		}
		require.Equal(t, want, got, "%v", args)
	}
	expect([]string{"0: SADD s 1 2 3"}, "SADD", "s", 1, 2, 3)
	expect(nil, "SADD", "s", 1, 2)
	expect(nil, "SREM", "s", 9)
	expect(nil, "SREM", "missing", 9)
	expect(nil, "SMOVE", "s", "s", 1)
	expect(nil, "SMOVE", "s", "t", 9)
	expect(nil, "SPOP", "missing")
	expect(nil, "SPOP", "s", 0)
	expect(nil, "SINTERSTORE", "d", "s", "missing")
	expect([]string{"0: SMOVE s t 1"}, "SMOVE", "s", "t", 1)
	n := log.len()
	popped := doOK(t, c, "SPOP", "s").(string)
	require.Equal(t, []string{"SREM s " + popped}, []string{effectString(log.since(n)[0])})
	require.Len(t, log.since(n), 1)
	expect([]string{"0: SUNIONSTORE d s t"}, "SUNIONSTORE", "d", "s", "t")
	n = log.len()
	doOK(t, c, "SADD", "p", 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	got := doOK(t, c, "SPOP", "p", 3).([]any)
	effs := log.since(n + 1)
	require.Len(t, effs, 1)
	require.Equal(t, "SREM", string(effs[0].Args[0]))
	var journaled, replied []string
	for _, a := range effs[0].Args[2:] {
		journaled = append(journaled, string(a))
	}
	for _, a := range got {
		replied = append(replied, a.(string))
	}
	require.Equal(t, setSorted(replied), setSorted(journaled))
	expect([]string{"0: DEL p"}, "SPOP", "p", 100)
	expect([]string{"0: SDIFFSTORE d t t"}, "SDIFFSTORE", "d", "t", "t")
	checkTimeFree(t, log.all())
}

func setState(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var out []string
	for _, k := range c.Keys(ctx, "*").Val() {
		out = append(out, fmt.Sprintf("%s %s %s ttl=%v", k, c.ObjectEncoding(ctx, k).Val(),
			strings.Join(setSorted(c.SMembers(ctx, k).Val()), ","), c.PExpireTime(ctx, k).Val()))
	}
	sort.Strings(out)
	return out
}

// Sets of both encodings, with and without a TTL, come back after a restart from a snapshot
// (SAVE and BGSAVE) and from the append-only log.
func TestSetRestart(t *testing.T) {
	fill := func(t *testing.T, c *redis.Client) {
		c.SAdd(ctx, "small", 3, 1, 2, -7, 6)
		c.SAdd(ctx, "mixed", "a", "", "bin\x00", 5)
		var args []any
		for i := range 512 {
			args = append(args, i*3)
		}
		c.SAdd(ctx, "ints512", args...)
		for i := range 700 {
			c.SAdd(ctx, "big", fmt.Sprintf("member:%d", i))
		}
		c.SRem(ctx, "big", "member:0", "member:1")
		c.SPopN(ctx, "big", 10)
		c.SMove(ctx, "small", "moved", 3)
		c.SInterStore(ctx, "inter", "ints512", "small")
		c.SUnionStore(ctx, "union", "small", "mixed")
		c.SDiffStore(ctx, "diff", "ints512", "small")
		c.SAdd(ctx, "ttl", "x", "y")
		c.PExpireAt(ctx, "ttl", time.UnixMilli(testutil.T0+100000))
	}
	restartThroughEachWay(t, fill, setState, func(t *testing.T, _ *redis.Client, before []string) {
		require.Len(t, before, 9)
	})
}

// CONFIG SET set-max-intset-entries decides when new integer sets convert.
func TestSetIntsetLimitConfig(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	t.Cleanup(func() { c.ConfigSet(ctx, "set-max-intset-entries", "512") })
	require.Equal(t, map[string]string{"set-max-intset-entries": "512"}, c.ConfigGet(ctx, "set-max-intset-entries").Val())
	require.NoError(t, c.ConfigSet(ctx, "set-max-intset-entries", "2").Err())
	c.SAdd(ctx, "s", 1, 2)
	require.Equal(t, "intset", c.ObjectEncoding(ctx, "s").Val())
	c.SAdd(ctx, "s", 3)
	require.Equal(t, "hashtable", c.ObjectEncoding(ctx, "s").Val())
}

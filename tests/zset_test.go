package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
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

// Small sorted sets' exact replies, and large ones', are compared with Redis in
// testdata/compat/zsets.txt; these tests cover what that corpus cannot: thousands of members
// against a sorted model (ranks, ranges, removals, pops and set operations on the skip list),
// full ZSCAN iterations, concurrent multi-key commands, and restarts.

type zmember struct {
	m string
	s float64
}

// zmodel is a sorted set as a sorted slice: the obvious implementation to compare with.
type zsetModel struct{ items []zmember }

func (md *zsetModel) sort() {
	sort.Slice(md.items, func(i, j int) bool {
		a, b := md.items[i], md.items[j]
		return a.s < b.s || (a.s == b.s && a.m < b.m)
	})
}

func (md *zsetModel) index(m string) int {
	for i, it := range md.items {
		if it.m == m {
			return i
		}
	}
	return -1
}

func (md *zsetModel) set(m string, s float64) {
	if i := md.index(m); i >= 0 {
		md.items[i].s = s
	} else {
		md.items = append(md.items, zmember{m, s})
	}
	md.sort()
}

func (md *zsetModel) remove(m string) bool {
	i := md.index(m)
	if i < 0 {
		return false
	}
	md.items = append(md.items[:i], md.items[i+1:]...)
	return true
}

func toZ(items []zmember) []redis.Z {
	out := make([]redis.Z, len(items))
	for i, it := range items {
		out[i] = redis.Z{Score: it.s, Member: it.m}
	}
	return out
}

func members(items []zmember) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.m
	}
	return out
}

func reversed(items []zmember) []zmember {
	out := make([]zmember, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return out
}

// inScore is the model's ZRANGEBYSCORE.
func (md *zsetModel) inScore(min, max float64, minEx, maxEx bool) []zmember {
	var out []zmember
	for _, it := range md.items {
		if (it.s > min || !minEx && it.s == min) && (it.s < max || !maxEx && it.s == max) {
			out = append(out, it)
		}
	}
	return out
}

func scoreArg(v float64, ex bool) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if math.IsInf(v, 1) {
		s = "+inf"
	} else if math.IsInf(v, -1) {
		s = "-inf"
	}
	if ex {
		return "(" + s
	}
	return s
}

func TestZSetSkiplistModel(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rng := rand.New(rand.NewPCG(7, 11))
		md := &zsetModel{}
		// 3000 members in batches, scores with many ties (so the member order matters).
		for b := 0; b < 30; b++ {
			var zs []redis.Z
			for range 100 {
				m := fmt.Sprintf("m:%05d", rng.IntN(4000))
				sc := float64(rng.IntN(500)) / 4
				zs = append(zs, redis.Z{Score: sc, Member: m})
			}
			require.NoError(t, c.ZAdd(ctx, "z", zs...).Err())
			for _, z := range zs {
				md.set(z.Member.(string), z.Score)
			}
		}
		require.Equal(t, "skiplist", c.ObjectEncoding(ctx, "z").Val())
		// Increments and removals move members around.
		for range 300 {
			m := md.items[rng.IntN(len(md.items))].m
			if rng.IntN(3) == 0 {
				require.EqualValues(t, 1, c.ZRem(ctx, "z", m).Val())
				md.remove(m)
				continue
			}
			by := float64(rng.IntN(41)-20) / 8
			got, err := c.ZIncrBy(ctx, "z", by, m).Result()
			require.NoError(t, err)
			i := md.index(m)
			require.Equal(t, md.items[i].s+by, got)
			md.set(m, got)
		}
		n := len(md.items)
		require.EqualValues(t, n, c.ZCard(ctx, "z").Val())
		require.Equal(t, toZ(md.items), c.ZRangeWithScores(ctx, "z", 0, -1).Val())

		for range 200 {
			start, stop := int64(rng.IntN(n+20)-10), int64(rng.IntN(n+20)-10)
			lo, hi := start, stop
			if lo < 0 {
				lo += int64(n)
			}
			if hi < 0 {
				hi += int64(n)
			}
			lo, hi = max(lo, 0), min(hi, int64(n-1))
			var want []zmember
			if lo <= hi && lo < int64(n) {
				want = md.items[lo : hi+1]
			}
			require.Equal(t, members(want), c.ZRange(ctx, "z", start, stop).Val(), "ZRANGE %d %d", start, stop)
			rev := reversed(md.items)
			var wantRev []zmember
			if lo <= hi && lo < int64(n) {
				wantRev = rev[lo : hi+1]
			}
			require.Equal(t, toZ(wantRev), c.ZRevRangeWithScores(ctx, "z", start, stop).Val(), "ZREVRANGE %d %d", start, stop)
		}
		for range 300 {
			i := rng.IntN(n)
			m := md.items[i].m
			require.EqualValues(t, i, c.ZRank(ctx, "z", m).Val(), m)
			require.EqualValues(t, n-1-i, c.ZRevRank(ctx, "z", m).Val(), m)
			require.Equal(t, md.items[i].s, c.ZScore(ctx, "z", m).Val())
		}
		for range 300 {
			min, max := float64(rng.IntN(140)-10)/1, float64(rng.IntN(140)-10)/1
			if rng.IntN(10) == 0 {
				min = math.Inf(-1)
			}
			if rng.IntN(10) == 0 {
				max = math.Inf(1)
			}
			minEx, maxEx := rng.IntN(2) == 0, rng.IntN(2) == 0
			want := md.inScore(min, max, minEx, maxEx)
			lo, hi := scoreArg(min, minEx), scoreArg(max, maxEx)
			require.EqualValues(t, len(want), c.ZCount(ctx, "z", lo, hi).Val(), "ZCOUNT %s %s", lo, hi)
			offset, count := int64(rng.IntN(30)), int64(rng.IntN(50)-5)
			page := want
			switch {
			case offset >= int64(len(page)):
				page = nil
			default:
				page = page[offset:]
			}
			if count >= 0 && int64(len(page)) > count {
				page = page[:count]
			}
			got := c.ZRangeByScoreWithScores(ctx, "z", &redis.ZRangeBy{Min: lo, Max: hi, Offset: offset, Count: count}).Val()
			if count == 0 {
				page = nil
			}
			require.Equal(t, toZ(page), got, "ZRANGEBYSCORE %s %s LIMIT %d %d", lo, hi, offset, count)
			revPage := reversed(want)
			if offset >= int64(len(revPage)) {
				revPage = nil
			} else {
				revPage = revPage[offset:]
			}
			if count >= 0 && int64(len(revPage)) > count {
				revPage = revPage[:count]
			}
			gotRev := c.ZRevRangeByScore(ctx, "z", &redis.ZRangeBy{Min: lo, Max: hi, Offset: offset, Count: count}).Val()
			if count == 0 {
				revPage = nil
			}
			require.Equal(t, members(revPage), gotRev, "ZREVRANGEBYSCORE %s %s LIMIT %d %d", hi, lo, offset, count)
		}

		// ZSCAN: every member exactly once with its score (nothing changes meanwhile), and
		// MATCH filters.
		seen := map[string]float64{}
		var cursor uint64
		for calls := 0; ; calls++ {
			require.Less(t, calls, 10000)
			kv, next, err := c.ZScan(ctx, "z", cursor, "", 20).Result()
			require.NoError(t, err)
			for i := 0; i < len(kv); i += 2 {
				_, dup := seen[kv[i]]
				require.False(t, dup, "ZSCAN returned %s twice", kv[i])
				f, err := strconv.ParseFloat(kv[i+1], 64)
				require.NoError(t, err)
				seen[kv[i]] = f
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
		require.Len(t, seen, n)
		for _, it := range md.items {
			require.Equal(t, it.s, seen[it.m], it.m)
		}

		// Removals by rank and score on copies, compared with the model.
		require.EqualValues(t, 1, c.Copy(ctx, "z", "r", 0, false).Val())
		require.EqualValues(t, 100, c.ZRemRangeByRank(ctx, "r", 1000, 1099).Val())
		rest := append(append([]zmember{}, md.items[:1000]...), md.items[1100:]...)
		require.Equal(t, toZ(rest), c.ZRangeWithScores(ctx, "r", 0, -1).Val())
		inRange := md.inScore(20, 40, true, false)
		require.EqualValues(t, len(inRange), c.ZRemRangeByScore(ctx, "z", "(20", "40").Val())
		for _, it := range inRange {
			md.remove(it.m)
		}
		require.Equal(t, toZ(md.items), c.ZRangeWithScores(ctx, "z", 0, -1).Val())

		// Pops from both ends.
		popped := c.ZPopMin(ctx, "z", 25).Val()
		require.Equal(t, toZ(md.items[:25]), popped)
		md.items = md.items[25:]
		popped = c.ZPopMax(ctx, "z", 25).Val()
		require.Equal(t, toZ(reversed(md.items[len(md.items)-25:])), popped)
		md.items = md.items[:len(md.items)-25]
		require.Equal(t, toZ(md.items), c.ZRangeWithScores(ctx, "z", 0, -1).Val())

		// Set operations against the model: the union with "r" sums common scores.
		union := map[string]float64{}
		for _, it := range md.items {
			union[it.m] += it.s
		}
		inter := map[string]float64{}
		for _, it := range rest {
			if _, ok := union[it.m]; ok {
				inter[it.m] = union[it.m] + it.s
			}
			union[it.m] += it.s
		}
		um := &zsetModel{}
		for m, sc := range union {
			um.items = append(um.items, zmember{m, sc})
		}
		um.sort()
		im := &zsetModel{}
		for m, sc := range inter {
			im.items = append(im.items, zmember{m, sc})
		}
		im.sort()
		require.EqualValues(t, len(um.items), c.ZUnionStore(ctx, "u", &redis.ZStore{Keys: []string{"z", "r"}}).Val())
		require.Equal(t, toZ(um.items), c.ZRangeWithScores(ctx, "u", 0, -1).Val())
		require.Equal(t, toZ(im.items), c.ZInterWithScores(ctx, &redis.ZStore{Keys: []string{"z", "r"}}).Val())
		require.EqualValues(t, len(im.items), c.ZInterCard(ctx, 0, "z", "r").Val())
		require.EqualValues(t, 10, c.ZInterCard(ctx, 10, "z", "r").Val())

		// ZRANDMEMBER: distinct members for a positive count, repeats for a negative one.
		rm := c.ZRandMember(ctx, "z", 500).Val()
		require.Len(t, rm, 500)
		distinct := map[string]bool{}
		for _, m := range rm {
			require.GreaterOrEqual(t, md.index(m), 0)
			require.False(t, distinct[m])
			distinct[m] = true
		}
		require.Len(t, c.ZRandMember(ctx, "z", -5000).Val(), 5000)
		withScores := c.ZRandMemberWithScores(ctx, "z", 50).Val()
		require.Len(t, withScores, 50)
		for _, z := range withScores {
			require.Equal(t, md.items[md.index(z.Member.(string))].s, z.Score)
		}
	})
}

// Lexicographic ranges on a large set of equal scores, against the model.
func TestZSetLexModel(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rng := rand.New(rand.NewPCG(3, 5))
		var all []string
		var zs []redis.Z
		for i := range 1500 {
			m := fmt.Sprintf("%c%04d", 'a'+rng.IntN(26), i)
			all = append(all, m)
			zs = append(zs, redis.Z{Score: 0, Member: m})
		}
		sort.Strings(all)
		require.NoError(t, c.ZAdd(ctx, "lex", zs...).Err())
		require.Equal(t, "skiplist", c.ObjectEncoding(ctx, "lex").Val())
		bound := func() (string, func(string) int) {
			switch rng.IntN(10) {
			case 0:
				return "-", func(string) int { return 1 }
			case 1:
				return "+", func(string) int { return -1 }
			}
			v := fmt.Sprintf("%c%d", 'a'+rng.IntN(26), rng.IntN(10))
			return v, func(m string) int { return strings.Compare(m, v) }
		}
		for range 300 {
			minV, minCmp := bound()
			maxV, maxCmp := bound()
			minEx, maxEx := rng.IntN(2) == 0, rng.IntN(2) == 0
			arg := func(v string, ex bool) string {
				if v == "-" || v == "+" {
					return v
				}
				if ex {
					return "(" + v
				}
				return "[" + v
			}
			lo, hi := arg(minV, minEx), arg(maxV, maxEx)
			if minV == "-" || minV == "+" {
				minEx = true
			}
			if maxV == "-" || maxV == "+" {
				maxEx = true
			}
			var want []string
			for _, m := range all {
				a, b := minCmp(m), maxCmp(m)
				if (a > 0 || !minEx && a == 0) && (b < 0 || !maxEx && b == 0) {
					want = append(want, m)
				}
			}
			require.EqualValues(t, len(want), c.ZLexCount(ctx, "lex", lo, hi).Val(), "ZLEXCOUNT %s %s", lo, hi)
			got := c.ZRangeByLex(ctx, "lex", &redis.ZRangeBy{Min: lo, Max: hi}).Val()
			if want == nil {
				want = []string{}
			}
			require.Equal(t, want, got, "ZRANGEBYLEX %s %s", lo, hi)
			gotRev := c.ZRevRangeByLex(ctx, "lex", &redis.ZRangeBy{Min: lo, Max: hi, Offset: 1, Count: 3}).Val()
			var wantRev []string
			for i := len(want) - 2; i >= 0 && len(wantRev) < 3; i-- {
				wantRev = append(wantRev, want[i])
			}
			if wantRev == nil {
				wantRev = []string{}
			}
			require.Equal(t, wantRev, gotRev, "ZREVRANGEBYLEX %s %s LIMIT 1 3", hi, lo)
		}
		// Remove a lex range, then check the rest.
		var keep []string
		for _, m := range all {
			if m < "f" || m > "m" {
				keep = append(keep, m)
			}
		}
		require.EqualValues(t, len(all)-len(keep), c.ZRemRangeByLex(ctx, "lex", "[f", "[m").Val())
		require.Equal(t, keep, c.ZRange(ctx, "lex", 0, -1).Val())
	})
}

// Multi-key sorted set commands lock every key they name: run concurrently with writes to the
// same keys (under -race this catches a key read without its lock), they must also leave
// consistent results.
func TestZSetMultiKeyConcurrent(t *testing.T) {
	s := testutil.StartServer(t)
	keys := []string{"za", "zb", "zc", "zd", "ze", "zf"}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 6 {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := s.Client(t, 2)
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; i < 300; i++ {
				k1, k2 := keys[rng.IntN(len(keys))], keys[rng.IntN(len(keys))]
				var err error
				switch rng.IntN(7) {
				case 0, 1:
					err = c.ZAdd(ctx, k1, redis.Z{Score: float64(rng.IntN(50)), Member: fmt.Sprint(rng.IntN(40))}).Err()
				case 2:
					err = c.ZUnionStore(ctx, k1, &redis.ZStore{Keys: []string{k2, keys[rng.IntN(len(keys))]}}).Err()
				case 3:
					err = c.ZInterCard(ctx, 0, k1, k2).Err()
				case 4:
					err = c.ZMPop(ctx, "min", 2, k1, k2).Err()
				case 5:
					err = c.ZDiffStore(ctx, k1, k2, keys[rng.IntN(len(keys))]).Err()
				case 6:
					err = c.ZRangeStore(ctx, k1, redis.ZRangeArgs{Key: k2, Start: 0, Stop: 10}).Err()
				}
				if err != nil && err != redis.Nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	c := s.Client(t, 2)
	for _, k := range keys {
		if c.Exists(ctx, k).Val() == 1 {
			require.Positive(t, c.ZCard(ctx, k).Val())
		}
	}
}

func zsetState(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var out []string
	for _, k := range c.Keys(ctx, "*").Val() {
		vals, err := c.Do(ctx, "ZRANGE", k, 0, -1, "WITHSCORES").StringSlice()
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%s %s %q ttl=%v", k, c.ObjectEncoding(ctx, k).Val(), vals, c.PExpireTime(ctx, k).Val()))
	}
	sort.Strings(out)
	return out
}

// Sorted sets of both encodings, with exact scores and with and without a TTL, come back after
// a restart from a snapshot (SAVE and BGSAVE) and from the append-only log.
func TestZSetRestart(t *testing.T) {
	fill := func(t *testing.T, c *redis.Client) {
		c.ZAdd(ctx, "small", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 0.1, Member: "b"}, redis.Z{Score: math.Inf(-1), Member: ""})
		for i := range 300 {
			c.ZAdd(ctx, "big", redis.Z{Score: float64(i%50) / 3, Member: fmt.Sprintf("m%d", i)})
		}
		c.ZAdd(ctx, "big", redis.Z{Score: math.Copysign(0, -1), Member: "negzero"})
		c.ZIncrBy(ctx, "small", 0.2, "b")
		c.ZIncrBy(ctx, "big", 1e-9, "m7")
		c.ZAddArgsIncr(ctx, "small", redis.ZAddArgs{GT: true, Members: []redis.Z{{Score: 5, Member: "a"}}})
		c.ZPopMin(ctx, "big", 3)
		c.ZPopMax(ctx, "big")
		c.ZMPop(ctx, "max", 2, "nokey", "big")
		c.ZRemRangeByScore(ctx, "big", "10", "11")
		c.ZUnionStore(ctx, "union", &redis.ZStore{Keys: []string{"small", "big"}, Weights: []float64{2, 0.5}})
		c.ZRangeStore(ctx, "stored", redis.ZRangeArgs{Key: "big", Start: "(1", Stop: "3", ByScore: true})
		c.ZAdd(ctx, "ttl", redis.Z{Score: 1, Member: "x"})
		c.PExpireAt(ctx, "ttl", time.UnixMilli(testutil.T0+100000))
	}
	restartThroughEachWay(t, fill, zsetState, func(t *testing.T, c *redis.Client, before []string) {
		require.Len(t, before, 5)
		require.Equal(t, "-0", c.Do(ctx, "ZSCORE", "big", "negzero").Val(), "a skip list keeps -0")
	})
}

package tests

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// HyperLogLogs are strings in Redis's own format, so these tests hold HotKV to Redis byte for
// byte: the same commands on both servers must leave the same strings (GET) and give the same
// replies (PFCOUNT's estimates included), and a value copied from one server to the other
// must keep working. Small exact replies are also in testdata/compat/hyperloglog.txt.

// hllPair drives a HotKV server and a real redis-server with the same commands.
type hllPair struct {
	t          *testing.T
	hot, redis *redis.Client
}

func newHLLPair(t *testing.T, c *redis.Client, proto int) *hllPair {
	addr := startCompatRedis(t)
	r := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, DisableIdentity: true,
		MaxRetries: -1, PoolSize: 2, ReadTimeout: 30 * time.Second})
	t.Cleanup(func() { _ = r.Close() })
	p := &hllPair{t: t, hot: c, redis: r}
	t.Cleanup(func() { c.ConfigSet(ctx, "hll-sparse-max-bytes", "3000") }) // process-wide
	return p
}

func hllReply(v any, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%T %v", v, v)
}

// do runs a command on both servers and requires the same reply, which it returns.
func (p *hllPair) do(args ...any) string {
	p.t.Helper()
	want := hllReply(p.redis.Do(ctx, args...).Result())
	got := hllReply(p.hot.Do(ctx, args...).Result())
	if want != got {
		p.t.Fatalf("%s: HotKV replied %.300s, Redis %.300s", hllArgs(args), got, want)
	}
	return got
}

// same requires the same bytes under each key on both servers.
func (p *hllPair) same(keys ...string) {
	p.t.Helper()
	for _, k := range keys {
		want, werr := p.redis.Get(ctx, k).Result()
		got, gerr := p.hot.Get(ctx, k).Result()
		if werr != nil || gerr != nil {
			require.Equal(p.t, fmt.Sprint(werr), fmt.Sprint(gerr), "GET %s", k)
			continue
		}
		if want != got {
			p.t.Fatalf("GET %s differs: HotKV %d bytes, Redis %d bytes, first difference at %d\nHotKV: %x\nRedis: %x",
				k, len(got), len(want), firstDiff(got, want), clip(got), clip(want))
		}
	}
}

func firstDiff(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func clip(s string) string { return s[:min(len(s), 200)] }

func hllArgs(args []any) string {
	s := fmt.Sprint(args...)
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}

func hllElements(rng *rand.Rand, n int) []any {
	out := make([]any, n)
	for i := range out {
		switch rng.IntN(10) {
		case 0:
			b := make([]byte, rng.IntN(40)) // binary, 0 to 39 bytes: every tail length of the hash
			for j := range b {
				b[j] = byte(rng.Uint32())
			}
			out[i] = string(b)
		case 1:
			out[i] = ""
		default:
			out[i] = "e" + strconv.Itoa(rng.IntN(1_000_000))
		}
	}
	return out
}

// TestHLLMatchesRedis runs a seeded random mix of PFADD, PFCOUNT (one key and several),
// PFMERGE (dest-only included), PFDEBUG TODENSE and hll-sparse-max-bytes changes on both
// servers, requiring the same replies and the same bytes after every step.
func TestHLLMatchesRedis(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		proto := 2
		if strings.HasSuffix(t.Name(), "RESP3") {
			proto = 3
		}
		p := newHLLPair(t, c, proto)
		rng := rand.New(rand.NewPCG(uint64(proto), 7))
		keys := []string{"h0", "h1", "h2", "h3"}
		key := func() string { return keys[rng.IntN(len(keys))] }
		for step := range 600 {
			switch r := rng.IntN(20); {
			case r < 8:
				n := rng.IntN(30)
				if rng.IntN(10) == 0 {
					n = rng.IntN(600)
				}
				p.do(append([]any{"PFADD", key()}, hllElements(rng, n)...)...)
			case r < 11:
				p.do("PFCOUNT", key())
			case r < 13:
				p.do("PFCOUNT", key(), key(), key())
			case r < 16:
				args := []any{"PFMERGE", key()}
				for range rng.IntN(3) {
					args = append(args, key())
				}
				p.do(args...)
			case r == 16:
				if rng.IntN(4) == 0 {
					p.do("PFDEBUG", "TODENSE", key())
				}
			case r == 17:
				if rng.IntN(3) == 0 {
					p.do("DEL", key())
				}
			case r == 18:
				if rng.IntN(4) == 0 {
					v := []string{"3000", "3000", "200", "40", "0", "10000"}[rng.IntN(6)]
					p.do("CONFIG", "SET", "hll-sparse-max-bytes", v)
				}
			default:
				// A value moved between the servers keeps working: Redis's copy into HotKV.
				k := key()
				if v, err := p.redis.Get(ctx, k).Result(); err == nil {
					require.NoError(t, p.hot.Set(ctx, "copy", v, 0).Err())
					require.NoError(t, p.redis.Set(ctx, "copy", v, 0).Err())
					p.do(append([]any{"PFADD", "copy"}, hllElements(rng, 5)...)...)
					p.do("PFCOUNT", "copy")
					p.same("copy")
				}
			}
			p.same(keys...)
			if t.Failed() {
				t.Fatalf("step %d", step)
			}
		}
	})
}

// TestHLLSparseToDenseMatchesRedis grows one HLL element by element batch through the sparse
// encoding, its promotion and well into the dense range, with PFCOUNT after every batch (the
// estimator over the whole range) and the bytes compared each time.
func TestHLLSparseToDenseMatchesRedis(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		p := newHLLPair(t, c, 2)
		rng := rand.New(rand.NewPCG(11, 12))
		sawSparse, sawDense := false, false
		n := 0
		for batch := 0; n < 150_000; batch++ {
			size := 7
			if n > 3000 {
				size = 1000
			}
			args := []any{"PFADD", "grow"}
			for range size {
				args = append(args, fmt.Sprintf("m:%d:%d", n, rng.Uint32()))
				n++
			}
			p.do(args...)
			enc := p.do("PFDEBUG", "ENCODING", "grow")
			sawSparse = sawSparse || strings.Contains(enc, "sparse")
			sawDense = sawDense || strings.Contains(enc, "dense")
			p.same("grow")
			p.do("PFCOUNT", "grow")
			p.same("grow")
		}
		require.True(t, sawSparse && sawDense, "the HLL went from sparse to dense")
		card, err := c.PFCount(ctx, "grow").Result()
		require.NoError(t, err)
		require.InDelta(t, n, card, float64(n)*0.02, "an estimate within 2%% of %d", n)
	})
}

// TestHLLEstimatorMatchesRedis sets dense values with random registers of every magnitude,
// from a few elements to far more than any real set (registers near their 6-bit maximum,
// where Redis's rounding overflows), and requires PFCOUNT's exact numbers from both servers.
func TestHLLEstimatorMatchesRedis(t *testing.T) {
	s := testutil.StartServer(t)
	p := newHLLPair(t, s.Client(t, 2), 2)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 400 {
		v := make([]byte, 16+12288)
		copy(v, "HYLL")
		v[15] = 0x80 // cache invalid
		// Registers drawn around a level: 0 for tiny sets, about log2(n/16384) for large ones.
		level := rng.IntN(64)
		spread := 1 + rng.IntN(6)
		for r := range 16384 {
			x := level + rng.IntN(2*spread+1) - spread
			if rng.IntN(8) == 0 {
				x = 0
			}
			x = max(0, min(63, x))
			bit := r * 6
			v[16+bit/8] |= byte(x << (bit % 8))
			if bit%8 > 2 {
				v[16+bit/8+1] |= byte(x >> (8 - bit%8))
			}
		}
		require.NoError(t, p.hot.Set(ctx, "est", v, 0).Err())
		require.NoError(t, p.redis.Set(ctx, "est", v, 0).Err())
		p.do("PFCOUNT", "est")
		p.same("est")
		p.do("PFCOUNT", "est", "nokey")
		if t.Failed() {
			t.Fatalf("value %d (level %d)", i, level)
		}
	}
}

// TestHLLCorruptValues corrupts HLLs in random ways, as Redis's fuzzing test does, and requires
// Redis's replies (WRONGTYPE, INVALIDOBJ or a number) and bytes from every HLL command on the
// result; the server must stay up. It also checks the crafted overflows of Redis's
// CVE-2025-32023 tests.
func TestHLLCorruptValues(t *testing.T) {
	s := testutil.StartServer(t)
	p := newHLLPair(t, s.Client(t, 2), 2)
	rng := rand.New(rand.NewPCG(21, 22))
	for i := range 600 {
		p.do("DEL", "hll", "dst")
		p.do(append([]any{"PFADD", "hll"}, hllElements(rng, rng.IntN(3000))...)...)
		for range 1 + rng.IntN(5) {
			n, err := p.redis.StrLen(ctx, "hll").Result()
			require.NoError(t, err)
			pos := rng.Int64N(n)
			b := string([]byte{byte(rng.Uint32())})
			switch rng.IntN(10) {
			case 0:
				p.do("APPEND", "hll", b)
			case 1:
				p.do("SETRANGE", "hll", rng.Int64N(16), b) // the header
			default:
				p.do("SETRANGE", "hll", pos, b)
			}
		}
		p.same("hll")
		switch rng.IntN(5) {
		case 0:
			p.do("PFCOUNT", "hll")
		case 1:
			p.do("PFCOUNT", "hll", "nokey")
		case 2:
			p.do(append([]any{"PFADD", "hll"}, hllElements(rng, 20)...)...)
		case 3:
			p.do("PFMERGE", "dst", "hll")
			p.same("dst")
		case 4:
			p.do("PFDEBUG", []string{"GETREG", "TODENSE"}[rng.IntN(2)], "hll") // of a corrupt value
		}
		p.same("hll")
		if t.Failed() {
			t.Fatalf("round %d", i)
		}
	}

	// Runs that add up past 2^32 registers must not wrap around (CVE-2025-32023).
	hdr := "HYLL\x01" + strings.Repeat("\x00", 11)
	xzero := strings.Repeat("\x7f\xff", 131072+1000) + "\xff"
	zero := strings.Repeat("\x3f", 1<<20) + "\xff"
	for _, v := range []string{hdr + xzero, hdr + zero, hdr, hdr + "\x7f", hdr + "\x80"} {
		require.NoError(t, p.hot.Set(ctx, "bad", v, 0).Err())
		require.NoError(t, p.redis.Set(ctx, "bad", v, 0).Err())
		p.do("PFCOUNT", "bad", "bad")
		p.do("PFCOUNT", "bad")
		p.do("PFDEBUG", "GETREG", "bad")
		p.do("PFADD", "bad", "x", "y")
		p.do("PFMERGE", "bad2", "bad")
		p.same("bad", "bad2")
	}
	require.Equal(t, "PONG", p.hot.Ping(ctx).Val())
}

// TestHLLErrorsAndCache covers the replies that are not numbers, the cached cardinality and
// the value's encoding, against Redis.
func TestHLLErrorsAndCache(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		proto := 2
		if strings.HasSuffix(t.Name(), "RESP3") {
			proto = 3
		}
		p := newHLLPair(t, c, proto)
		for _, cmd := range [][]any{
			{"PFADD", "h"}, {"GET", "h"}, {"OBJECT", "ENCODING", "h"}, {"TYPE", "h"},
			{"PFADD", "h"}, {"PFCOUNT", "h"}, {"PFADD", "h", "a", "b", "c"}, {"PFADD", "h", "a"},
			{"GETRANGE", "h", 15, 15}, {"PFCOUNT", "h"}, {"GETRANGE", "h", 8, 15},
			{"PFADD", "h", "a", "b", "c"}, {"GETRANGE", "h", 15, 15}, {"PFADD", "h", "d"}, {"GETRANGE", "h", 15, 15},
			{"SET", "s", "hello"}, {"PFADD", "s", "x"}, {"PFCOUNT", "s"}, {"PFCOUNT", "h", "s"}, {"PFMERGE", "s", "h"},
			{"PFMERGE", "h", "s"}, {"PFDEBUG", "ENCODING", "s"},
			{"SET", "i", "12345"}, {"PFADD", "i", "x"}, {"PFCOUNT", "i"},
			{"SET", "i", "-9223372036854775808"}, {"PFADD", "i", "x"},
			{"LPUSH", "l", "x"}, {"PFADD", "l", "x"}, {"PFCOUNT", "l"}, {"PFCOUNT", "h", "l"}, {"PFMERGE", "h", "l"},
			{"PFMERGE", "l", "h"}, {"PFDEBUG", "GETREG", "l"},
			{"PFCOUNT", "nokey"}, {"PFCOUNT", "nokey", "nokey2"}, {"EXISTS", "nokey"},
			{"PFMERGE", "dst"}, {"GET", "dst"}, {"PFMERGE", "dst2", "nokey"}, {"GET", "dst2"},
			{"PFMERGE", "dst3", "h", "nokey"}, {"GET", "dst3"}, {"PFCOUNT", "dst3"},
			{"PFDEBUG", "ENCODING", "nokey"}, {"PFDEBUG", "nosuch", "h"}, {"PFDEBUG", "nosuch", "nokey"},
			{"PFDEBUG", "DECODE", "h"}, {"PFDEBUG", "ENCODING", "h"}, {"PFDEBUG", "TODENSE", "h"},
			{"PFDEBUG", "TODENSE", "h"}, {"PFDEBUG", "DECODE", "h"}, {"PFDEBUG", "ENCODING", "h"},
			{"GET", "h"}, {"PFCOUNT", "h"}, {"GET", "h"},
			{"PFMERGE", "dst4", "h", "dst3"}, {"PFDEBUG", "ENCODING", "dst4"}, {"GET", "dst4"},
			{"SET", "short", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, {"PFCOUNT", "short"},
			{"SET", "enc2", "HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, {"PFCOUNT", "enc2"},
			{"SET", "dense", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, {"PFCOUNT", "dense"},
			{"PFADD"}, {"PFCOUNT"}, {"PFMERGE"}, {"PFDEBUG", "GETREG"}, {"PFSELFTEST", "x"},
		} {
			p.do(cmd...)
		}
		regs := p.do("PFDEBUG", "GETREG", "h")
		require.Contains(t, regs, "[")
		// PFSELFTEST runs Redis's whole self test: seconds under the race detector on a loaded
		// machine, longer than the test client's read timeout.
		o := *c.Options()
		o.ReadTimeout = 2 * time.Minute
		slow := redis.NewClient(&o)
		defer slow.Close()
		require.Equal(t, "OK", slow.Do(ctx, "PFSELFTEST").Val())
	})
}

// TestHLLRestart requires HLLs of each encoding, a cached cardinality and a TTL to come back
// byte for byte after a SAVE, a BGSAVE and an AOF replay of the journaled effects, including
// with a hll-sparse-max-bytes that differs from the restarted server's.
func TestHLLRestart(t *testing.T) {
	fill := func(t *testing.T, c *redis.Client) {
		require.NoError(t, c.PFAdd(ctx, "sparse", "a", "b", "c").Err())
		require.NoError(t, c.PFAdd(ctx, "cached", "x", "y").Err())
		require.NoError(t, c.PFCount(ctx, "cached").Err())
		var els []any
		for i := range 5000 {
			els = append(els, i)
		}
		require.NoError(t, c.PFAdd(ctx, "dense", els...).Err())
		require.NoError(t, c.PFAdd(ctx, "dense", "more").Err())
		require.NoError(t, c.PFCount(ctx, "dense").Err())
		require.NoError(t, c.PFMerge(ctx, "merged", "sparse", "cached").Err())
		require.NoError(t, c.PFMerge(ctx, "merged2", "sparse", "dense").Err())
		require.NoError(t, c.PFAdd(ctx, "ttl", "t").Err())
		require.NoError(t, c.PExpireAt(ctx, "ttl", time.UnixMilli(testutil.T0+3_600_000)).Err())
		require.NoError(t, c.PFAdd(ctx, "ttl", "u").Err())
		require.NoError(t, c.Do(ctx, "PFDEBUG", "TODENSE", "sparse").Err())
		require.NoError(t, c.PFAdd(ctx, "todense", "p").Err())
		require.NoError(t, c.Do(ctx, "PFDEBUG", "GETREG", "todense").Err())
		// Sparse updates depend on hll-sparse-max-bytes: the restarted server has the default.
		require.NoError(t, c.ConfigSet(ctx, "hll-sparse-max-bytes", "60").Err())
		var few []any
		for i := range 40 {
			few = append(few, "f"+strconv.Itoa(i))
		}
		require.NoError(t, c.PFAdd(ctx, "small-limit", few...).Err())
		require.NoError(t, c.PFMerge(ctx, "small-merge", "small-limit", "cached").Err())
		require.NoError(t, c.ConfigSet(ctx, "hll-sparse-max-bytes", "3000").Err())
	}
	state := func(t *testing.T, c *redis.Client) []string {
		var out []string
		for _, k := range []string{"sparse", "cached", "dense", "merged", "merged2", "ttl", "todense", "small-limit", "small-merge"} {
			v, err := c.Get(ctx, k).Result()
			require.NoError(t, err, k)
			enc := c.Do(ctx, "PFDEBUG", "ENCODING", k).Val()
			out = append(out, fmt.Sprintf("%s %s %x %v", k, enc, v, c.PExpireTime(ctx, k).Val()))
		}
		return out
	}
	check := func(t *testing.T, c *redis.Client, before []string) {
		require.Contains(t, before[0], "sparse dense")      // PFDEBUG TODENSE
		require.Contains(t, before[3], "merged sparse")     // sparse inputs only
		require.Contains(t, before[4], "merged2 dense")     // a dense input
		require.Contains(t, before[6], "todense dense")     // PFDEBUG GETREG converts
		require.Contains(t, before[7], "small-limit dense") // promoted under the small limit
		require.Contains(t, before[8], "small-merge dense") // likewise
	}
	restartThroughEachWay(t, fill, state, check)
}

// TestHLLDenseHeaderBytes checks the cached-cardinality bytes: PFCOUNT writes the estimate
// little-endian and clears the invalid bit; any change to the registers sets it again.
func TestHLLDenseHeaderBytes(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.EqualValues(t, 1, c.PFAdd(ctx, "h", "a", "b", "c").Val())
		v := c.Get(ctx, "h").Val()
		require.Equal(t, "HYLL\x01", v[:5])
		require.Equal(t, byte(0x80), v[15])
		require.EqualValues(t, 3, c.PFCount(ctx, "h").Val())
		v = c.Get(ctx, "h").Val()
		require.Equal(t, uint64(3), binary.LittleEndian.Uint64([]byte(v[8:16])))
		require.EqualValues(t, 0, c.PFAdd(ctx, "h", "a").Val())
		require.Equal(t, byte(0), c.Get(ctx, "h").Val()[15])
		require.EqualValues(t, 1, c.PFAdd(ctx, "h", "zz").Val())
		require.Equal(t, byte(0x80), c.Get(ctx, "h").Val()[15])
	})
}

// TestHLLEffectsReplay is the effects replay test (effects_all_test.go) for HLLs alone, with
// many more of them: PFADD through the sparse limit into dense, PFMERGE of every mix,
// single-key PFCOUNT caching its estimate, PFDEBUG conversions, and hll-sparse-max-bytes
// changing under the writer. Every 20 commands the new effects are replayed on a second server
// with the default limit, and both must hold the same bytes: the effects must not depend on
// the replaying server's setting. They must also say what they did: a dense HLL's writes as
// their own arguments, a sparse one's as SET of the value, PFCOUNT's cache as SETRANGE.
func TestHLLEffectsReplay(t *testing.T) {
	a, b := testutil.StartServer(t), testutil.StartServer(t)
	log := &effectLog{}
	a.StoreForTest().Journal = log
	ca, cb := a.Client(t, 2).Conn(), b.Client(t, 2).Conn()
	t.Cleanup(func() { _ = ca.Close(); _ = cb.Close() })
	rng := rand.New(rand.NewPCG(3, 4))
	keys := []string{"p0", "p1", "p2", "p3"}
	key := func() string { return keys[rng.IntN(len(keys))] }
	limit := "3000"
	replayed := 0
	names := map[string]int{}
	for round := range 60 {
		for range 20 {
			switch r := rng.IntN(12); {
			case r < 5:
				cmd := []any{"PFADD", key()}
				n := rng.IntN(6)
				if rng.IntN(8) == 0 {
					n = 10 + rng.IntN(1500)
				}
				for range n {
					cmd = append(cmd, "e"+strconv.Itoa(rng.IntN(100_000)))
				}
				doOK(t, ca, cmd...)
			case r < 7:
				doOK(t, ca, "PFMERGE", key(), key(), key())
			case r < 9:
				doOK(t, ca, "PFCOUNT", key())
			case r == 9:
				doOK(t, ca, "PFDEBUG", []string{"TODENSE", "GETREG"}[rng.IntN(2)], key())
			case r == 10:
				doOK(t, ca, "DEL", key())
			default:
				limit = []string{"3000", "30", "40", "60", "400", "0"}[rng.IntN(6)]
				doOK(t, ca, "CONFIG", "SET", "hll-sparse-max-bytes", limit)
			}
		}
		effects := log.all()[replayed:]
		replayed += len(effects)
		checkTimeFree(t, effects)
		for _, e := range effects {
			names[strings.ToUpper(string(e.Args[0]))]++
		}
		// The setting is process-wide, and both servers run in this process: the replay runs
		// with the default, then the writer gets its own back.
		require.NoError(t, cb.Do(ctx, "CONFIG", "SET", "hll-sparse-max-bytes", "3000").Err())
		replay(t, cb, effects)
		require.NoError(t, ca.Do(ctx, "CONFIG", "SET", "hll-sparse-max-bytes", limit).Err())
		ka, _ := dbState(t, ca, 0)
		kb, _ := dbState(t, cb, 0)
		require.Equal(t, ka, kb, "round %d", round)
	}
	t.Logf("effects: %v", names)
	for _, n := range []string{"PFADD", "PFMERGE", "SET", "SETRANGE", "PFDEBUG"} {
		require.Positive(t, names[n], "no %s effect", n)
	}
}

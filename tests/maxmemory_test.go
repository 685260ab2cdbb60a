package tests

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// maxmemory and its eviction policies, as Redis 7.0. The heap these servers measure is the test
// process's own, shared with everything else running in it, so the tests either set a limit no
// heap fits under (maxmemory 1: everything evictable goes, then denyoom commands fail), or set
// one just below what the dataset takes and check which keys went.

const errOOMReply = "OOM command not allowed when used memory > 'maxmemory'."

func usedMemory(t *testing.T, c *redis.Client) int64 {
	t.Helper()
	info := c.Info(ctx, "memory").Val()
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no used_memory in INFO")
	return 0
}

func infoField(t *testing.T, c *redis.Client, section, field string) string {
	t.Helper()
	for _, l := range strings.Split(c.Info(ctx, section).Val(), "\r\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return v
		}
	}
	t.Fatalf("no %s in INFO %s", field, section)
	return ""
}

func TestMaxmemoryConfigAndInfo(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, map[string]string{"maxmemory": "0"}, c.ConfigGet(ctx, "maxmemory").Val())
		require.Equal(t, "noeviction", c.ConfigGet(ctx, "maxmemory-policy").Val()["maxmemory-policy"])
		require.Equal(t, "5", c.ConfigGet(ctx, "maxmemory-samples").Val()["maxmemory-samples"])
		require.Equal(t, "10", c.ConfigGet(ctx, "maxmemory-eviction-tenacity").Val()["maxmemory-eviction-tenacity"])
		require.Equal(t, "10", c.ConfigGet(ctx, "lfu-log-factor").Val()["lfu-log-factor"])
		require.Equal(t, "1", c.ConfigGet(ctx, "lfu-decay-time").Val()["lfu-decay-time"])
		require.Equal(t, "0", infoField(t, c, "memory", "maxmemory"))
		require.Equal(t, "0B", infoField(t, c, "memory", "maxmemory_human"))
		require.Equal(t, "noeviction", infoField(t, c, "memory", "maxmemory_policy"))

		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "2gb").Err())
		require.Equal(t, "2147483648", c.ConfigGet(ctx, "maxmemory").Val()["maxmemory"])
		require.Equal(t, "2147483648", infoField(t, c, "memory", "maxmemory"))
		require.Equal(t, "2.00G", infoField(t, c, "memory", "maxmemory_human"))
		require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "ALLKEYS-LRU").Err())
		require.Equal(t, "allkeys-lru", infoField(t, c, "memory", "maxmemory_policy"))
		require.EqualError(t, c.ConfigSet(ctx, "maxmemory-policy", "lru").Err(),
			"ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction")
		require.EqualError(t, c.ConfigSet(ctx, "maxmemory-samples", "0").Err(),
			"ERR CONFIG SET failed (possibly related to argument 'maxmemory-samples') - argument must be between 1 and 2147483647 inclusive")
		require.EqualError(t, c.ConfigSet(ctx, "maxmemory-eviction-tenacity", "101").Err(),
			"ERR CONFIG SET failed (possibly related to argument 'maxmemory-eviction-tenacity') - argument must be between 0 and 100 inclusive")
		require.Error(t, c.ConfigSet(ctx, "maxmemory", "-1").Err())
		require.Equal(t, "0", infoField(t, c, "stats", "evicted_keys"))
	})
}

func TestMaxmemoryNoevictionOOM(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
		require.NoError(t, c.RPush(ctx, "l", "a").Err())
		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
		// denyoom commands are refused; nothing is evicted.
		require.EqualError(t, c.Set(ctx, "k2", "v", 0).Err(), errOOMReply)
		require.EqualError(t, c.RPush(ctx, "l", "b").Err(), errOOMReply)
		require.EqualError(t, c.Incr(ctx, "n").Err(), errOOMReply)
		// Reads, deletes and other commands that free memory still work.
		require.Equal(t, "v", c.Get(ctx, "k").Val())
		require.Equal(t, []string{"a"}, c.LRange(ctx, "l", 0, -1).Val())
		require.EqualValues(t, 2, c.DBSize(ctx).Val())
		require.Equal(t, "PONG", c.Ping(ctx).Val())
		require.EqualValues(t, 1, c.Del(ctx, "l").Val())
		require.Equal(t, "0", infoField(t, c, "stats", "evicted_keys"))
		require.Contains(t, infoField(t, c, "errorstats", "errorstat_OOM"), "count=3")
		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
		require.NoError(t, c.Set(ctx, "k2", "v", 0).Err())
	})
}

func TestMaxmemoryMulti(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		admin := s.Client(t, 2)
		r := s.Dial(t)
		// Under the limit when MULTI starts, over it while queueing: every queued command
		// (even a read) is refused and EXEC aborts.
		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "a", "1"))
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err())
		require.Equal(t, "-"+errOOMReply+"\r\n", r.Do("GET", "a"))
		require.Equal(t, "-"+errOOMReply+"\r\n", r.Do("LPUSH", "l", "x"))
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "0").Err())
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "b", "2"))
		require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", r.Do("EXEC"))
		require.EqualValues(t, 0, c.Exists(ctx, "a", "b").Val())

		// DISCARD works over the limit.
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err())
		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "-"+errOOMReply+"\r\n", r.Do("SET", "x", "1"))
		require.Equal(t, "+OK\r\n", r.Do("DISCARD"))
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "0").Err())

		// A transaction of reads runs over the limit; one with a denyoom command is refused
		// at EXEC and discarded.
		require.NoError(t, c.Set(ctx, "x", "value", 0).Err())
		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", r.Do("GET", "x"))
		require.Equal(t, "+QUEUED\r\n", r.Do("PING"))
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err())
		require.Equal(t, "*2\r\n$5\r\nvalue\r\n+PONG\r\n", r.Do("EXEC"))
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "0").Err())

		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "x", "1"))
		require.Equal(t, "+QUEUED\r\n", r.Do("GET", "x"))
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "1").Err())
		require.Equal(t, "-EXECABORT Transaction discarded because of: "+errOOMReply+"\r\n", r.Do("EXEC"))
		require.NoError(t, admin.ConfigSet(ctx, "maxmemory", "0").Err())
		require.Equal(t, "value", c.Get(ctx, "x").Val())
		require.Equal(t, "+PONG\r\n", r.Do("PING")) // the transaction is gone
	})
}

// fillClasses writes n persistent keys p:<i> and n keys with a TTL v:<i> (TTLs growing with i).
func fillClasses(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	pipe := c.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("p:%d", i), strings.Repeat("x", 100), 0)
		pipe.Set(ctx, fmt.Sprintf("v:%d", i), strings.Repeat("x", 100), time.Duration(1000+i)*time.Second)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
}

func countPrefix(t *testing.T, c *redis.Client, prefix string) int {
	t.Helper()
	return len(c.Keys(ctx, prefix+"*").Val())
}

// Each policy evicts its class of keys: under a limit nothing fits under, allkeys-* empty the
// keyspace, volatile-* remove every key with a TTL and leave the others, and then refuse
// writes; noeviction removes nothing.
func TestMaxmemoryPolicyClasses(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl", "noeviction"} {
		t.Run(policy, func(t *testing.T) {
			testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
				const n = 300
				fillClasses(t, c, n)
				require.NoError(t, c.Do(ctx, "SELECT", 0).Err())
				c2 := s.Client(t, 2)
				require.NoError(t, c2.Do(ctx, "SELECT", 0).Err())
				require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", policy).Err())
				// No time limit: one command evicts all it can, and then fails.
				require.NoError(t, c.ConfigSet(ctx, "maxmemory-eviction-tenacity", "100").Err())
				require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
				err := c.Set(ctx, "new", "1", 0).Err()
				require.EqualError(t, err, errOOMReply) // nothing fits under 1 byte
				evicted, _ := strconv.Atoi(infoField(t, c, "stats", "evicted_keys"))
				require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
				switch {
				case strings.HasPrefix(policy, "allkeys"):
					require.EqualValues(t, 0, c.DBSize(ctx).Val())
					require.Equal(t, 2*n, evicted)
				case strings.HasPrefix(policy, "volatile"):
					require.Equal(t, n, countPrefix(t, c, "p:"))
					require.Equal(t, 0, countPrefix(t, c, "v:"))
					require.Equal(t, n, evicted)
				default:
					require.EqualValues(t, 2*n, c.DBSize(ctx).Val())
					require.Equal(t, 0, evicted)
				}
				require.NoError(t, c.Set(ctx, "new", "1", 0).Err())
			})
		})
	}
}

// evictSome sets maxmemory below what the dataset takes by about want bytes and runs a command
// so that eviction happens, then lifts the limit.
func evictSome(t *testing.T, c *redis.Client, want int64) {
	t.Helper()
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "100gb").Err()) // the sampler runs from now
	used := usedMemory(t, c)
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(max(1, used-want), 10)).Err())
	require.NoError(t, c.Ping(ctx).Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
}

// Partial eviction follows the policy's order: LRU spares recently read keys, LFU frequently
// read ones, TTL evicts the nearest expiries first. Eviction is approximated by sampling, as in
// Redis, so the checks are statistical.
func TestMaxmemoryPolicyOrder(t *testing.T) {
	const n = 2000
	fill := func(t *testing.T, c *redis.Client, ttl bool) {
		pipe := c.Pipeline()
		for i := range n {
			var exp time.Duration
			if ttl {
				exp = time.Duration(1000+i) * time.Second
			}
			pipe.Set(ctx, fmt.Sprintf("k:%d", i), strings.Repeat("x", 1000), exp)
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
	}
	survivors := func(t *testing.T, c *redis.Client) (low, high int) {
		for _, k := range c.Keys(ctx, "k:*").Val() {
			i, _ := strconv.Atoi(strings.TrimPrefix(k, "k:"))
			if i < n/2 {
				low++
			} else {
				high++
			}
		}
		return low, high
	}
	readHigh := func(t *testing.T, c *redis.Client, times int) {
		pipe := c.Pipeline()
		for range times {
			for i := n / 2; i < n; i++ {
				pipe.Get(ctx, fmt.Sprintf("k:%d", i))
			}
		}
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
	}
	t.Run("allkeys-lru", func(t *testing.T) {
		s := testutil.StartServer(t, "--maxmemory-policy", "allkeys-lru", "--maxmemory-samples", "10")
		c := s.Client(t, 2)
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		fill(t, c, false)
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 100000).Err())
		readHigh(t, c, 1) // the upper half is 100 s younger
		evictSome(t, c, 800*1000)
		low, high := survivors(t, c)
		require.Less(t, low+high, n, "something was evicted")
		require.Greater(t, high, n/2*9/10, "recently used keys survive (low %d high %d)", low, high)
		require.Greater(t, n/2-low, 4*(n/2-high), "old keys go first (low %d high %d)", low, high)
	})
	t.Run("allkeys-lfu", func(t *testing.T) {
		s := testutil.StartServer(t, "--maxmemory-policy", "allkeys-lfu", "--maxmemory-samples", "10")
		c := s.Client(t, 2)
		fill(t, c, false)
		readHigh(t, c, 20)
		f, err := c.ObjectFreq(ctx, "k:1999").Result()
		require.NoError(t, err)
		require.Greater(t, f, int64(5))
		evictSome(t, c, 800*1000)
		low, high := survivors(t, c)
		require.Less(t, low+high, n, "something was evicted")
		require.Greater(t, n/2-low, 4*(n/2-high), "rarely used keys go first (low %d high %d)", low, high)
	})
	t.Run("volatile-ttl", func(t *testing.T) {
		s := testutil.StartServer(t, "--maxmemory-policy", "volatile-ttl", "--maxmemory-samples", "10")
		c := s.Client(t, 2)
		fill(t, c, true)
		evictSome(t, c, 800*1000)
		low, high := survivors(t, c)
		require.Less(t, low+high, n, "something was evicted")
		require.Greater(t, n/2-low, 4*(n/2-high), "nearest expiries go first (low %d high %d)", low, high)
	})
}

// An evicted key raises the "evicted" keyspace event, fails a WATCH on it, and is journaled as
// a DEL.
func TestMaxmemoryEvictedKeyEffects(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		log := &effectLog{}
		s.StoreForTest().Journal = log
		require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Ee").Err())
		next := eventLog(t, s.Client(t, 3), "__keyevent@0__:evicted")
		require.NoError(t, c.Set(ctx, "w", "1", 0).Err())
		r := s.Dial(t)
		require.Equal(t, "+OK\r\n", r.Do("WATCH", "w"))

		before := log.len()
		require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-random").Err())
		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
		require.NoError(t, c.Ping(ctx).Err())
		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "0").Err())
		require.EqualValues(t, 0, c.Exists(ctx, "w").Val())
		require.Equal(t, []string{"__keyevent@0__:evicted w"}, next(1))

		log.mu.Lock()
		var dels []string
		for _, e := range log.effects[before:] {
			dels = append(dels, fmt.Sprintf("%d %s", e.DB, e.Args))
		}
		log.mu.Unlock()
		require.Equal(t, []string{"0 [DEL w]"}, dels)

		require.Equal(t, "+OK\r\n", r.Do("MULTI"))
		require.Equal(t, "+QUEUED\r\n", r.Do("SET", "w", "2"))
		require.Equal(t, "*-1\r\n", r.Do("EXEC"))
		require.Equal(t, "1", infoField(t, c, "stats", "evicted_keys"))
	})
}

// OBJECT FREQ needs an LFU policy and OBJECT IDLETIME a non-LFU one, with Redis's errors; a new
// key starts at Redis's LFU_INIT_VAL and the counter decays by lfu-decay-time.
func TestMaxmemoryObjectFreqIdletime(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		require.NoError(t, c.Set(ctx, "k", "value", 0).Err())
		require.EqualError(t, c.ObjectFreq(ctx, "k").Err(), "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 5000).Err())
		require.Equal(t, 5*time.Second, c.ObjectIdleTime(ctx, "k").Val())

		require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "volatile-lfu").Err())
		require.EqualError(t, c.ObjectIdleTime(ctx, "k").Err(), "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		require.NoError(t, c.Set(ctx, "f", "value", 0).Err())
		require.EqualValues(t, 5, c.ObjectFreq(ctx, "f").Val())
		for range 200 {
			c.Get(ctx, "f")
		}
		f := c.ObjectFreq(ctx, "f").Val()
		require.Greater(t, f, int64(6))
		require.Less(t, f, int64(30)) // logarithmic: 200 reads are far from 200
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 3*60000).Err())
		require.Equal(t, f-3, c.ObjectFreq(ctx, "f").Val()) // one per minute idle
		require.NoError(t, c.ConfigSet(ctx, "lfu-decay-time", "0").Err())
		require.Equal(t, f, c.ObjectFreq(ctx, "f").Val())

		// RESTORE ... FREQ sets the counter.
		dump := c.Dump(ctx, "f").Val()
		require.NoError(t, c.Do(ctx, "RESTORE", "g", 0, dump, "FREQ", 100).Err())
		require.EqualValues(t, 100, c.ObjectFreq(ctx, "g").Val())
	})
}

// Integers stop being shared (OBJECT REFCOUNT 1) under a limit with an LRU or LFU policy, as in
// Redis (tests/unit/maxmemory.tcl).
func TestMaxmemorySharedIntegers(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
		require.EqualValues(t, 2147483647, c.ObjectRefCount(ctx, "a").Val())
		require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1gb").Err())
		require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-random").Err())
		require.EqualValues(t, 2147483647, c.ObjectRefCount(ctx, "a").Val())
		require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err())
		require.EqualValues(t, 1, c.ObjectRefCount(ctx, "a").Val())
	})
}

// The limit holds while clients keep writing (tests/unit/maxmemory.tcl's "is the memory limit
// honoured?"): used memory stays about at maxmemory and the keyspace stops growing.
func TestMaxmemoryLimitHonoured(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "allkeys-lfu", "allkeys-random", "volatile-lru", "volatile-random", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			// Few shards: each shard's slab keeps a 40 KB chunk while it has any key, which
			// with the default 64 shards alone would fill half of the 4 MB margin.
			s := testutil.StartServer(t, "--maxmemory-policy", policy, "--shards", "4")
			c := s.Client(t, 2)
			require.NoError(t, c.ConfigSet(ctx, "maxmemory", "100gb").Err())
			// The server shares this process's heap: measure it without earlier tests' garbage.
			runtime.GC()
			time.Sleep(20 * time.Millisecond) // a sample or two
			limit := usedMemory(t, c) + 4<<20
			require.NoError(t, c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err())
			val := strings.Repeat("x", 1000)
			written := 0
			for round := range 200 {
				pipe := c.Pipeline()
				for i := range 100 {
					pipe.Set(ctx, fmt.Sprintf("k:%d:%d", round, i), val, time.Hour)
				}
				_, err := pipe.Exec(ctx)
				if err != nil {
					h, b, a, f := s.StoreForTest().Mem.Parts()
					t.Fatalf("round %d: %v: used %d limit %d keys %d (heap %d base %d admitted %d freed %d)", round, err, usedMemory(t, c), limit, c.DBSize(ctx).Val(), h, b, a, f)
				}
				written += 100
				// The heap measured is this test process's, garbage of the test's own
				// client included until the next collection: allow Go's collection pacing.
				if used := usedMemory(t, c); used > 2*limit {
					h, b, a, f := s.StoreForTest().Mem.Parts()
					t.Fatalf("round %d: used %d over twice the limit %d (heap %d base %d admitted %d freed %d)", round, used, limit, h, b, a, f)
				}
			}
			// Eviction may still be going on in the background: read the key count on both
			// sides of evicted_keys until it did not move in between (keys only go down), so
			// that the two numbers describe the same moment.
			var keys int64
			var evicted int
			for {
				keys = c.DBSize(ctx).Val()
				evicted, _ = strconv.Atoi(infoField(t, c, "stats", "evicted_keys"))
				if c.DBSize(ctx).Val() == keys {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			require.Less(t, keys, int64(written)/2, "20 MB of writes under a 4 MB margin")
			require.Greater(t, keys, int64(0))
			require.EqualValues(t, written, int64(evicted)+keys)
		})
	}
}

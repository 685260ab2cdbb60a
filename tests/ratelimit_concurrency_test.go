package tests

// Concurrency limiters (docs/ratelimit.md, "Concurrency limits"): the C vectors of that
// section as rlStep tables under DEBUG CLOCK (RESP2 and RESP3), many clients acquiring and
// releasing one key, the leases surviving a restart each way with their ids, and a Raft
// follower keeping them through a failover.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

const (
	rlErrLease     = "ERR invalid lease: must be a positive integer"
	rlErrNotConc   = "ERR limiter is not a concurrency limiter"
	rlErrConcLimit = "ERR invalid limit: must be at most 100000 for ALGO concurrency"
)

// leaseAt is the first lease id issued at T0+ms (ids are now_ms * 10^6, then +1 within a ms).
func leaseAt(ms int64) int64 { return (testutil.T0 + ms) * 1_000_000 }

func leaseReply(allowed, remaining, retry, limit, current, id int64) string {
	return fmt.Sprintf("[%d,%d,%d,%d,%d,%d]", allowed, remaining, retry, limit, current, id)
}

var rateLimitConcurrencyBlocks = []rlBlock{
	{"C1", []rlStep{ // acquire to the limit, deny with retry, release frees, expiry frees
		{"C1", 0, "CREATE c 3 1000 ALGO concurrency", "OK"},
		{"", 0, "CHECK c u", leaseReply(1, 2, 0, 3, 0, leaseAt(0))},
		{"", 0, "CHECK c u", leaseReply(1, 1, 0, 3, 1, leaseAt(0)+1)},
		{"", 100, "CHECK c u", leaseReply(1, 0, 0, 3, 2, leaseAt(100))},
		{"", 200, "CHECK c u", "[0,0,800,3,3,0]"},
		{"", 200, "PEEK c u", "[0,0,800,3,3]"},
		{"C2", 200, "RELEASE c u " + strconv.FormatInt(leaseAt(0)+1, 10), "1"},
		{"", 200, "RELEASE c u " + strconv.FormatInt(leaseAt(0)+1, 10), "0"},
		{"", 200, "PEEK c u", "[1,1,0,3,2]"},
		{"", 200, "CHECK c u", leaseReply(1, 0, 0, 3, 2, leaseAt(200))},
		{"", 300, "RELEASE c v " + strconv.FormatInt(leaseAt(0), 10), "0"},
		{"", 300, "RELEASE c u 42", "0"},
		{"C3", 999, "CHECK c u", "[0,0,1,3,3,0]"},
		{"", 1000, "CHECK c u", leaseReply(1, 0, 0, 3, 2, leaseAt(1000))},
		{"", 1000, "RELEASE c u " + strconv.FormatInt(leaseAt(0), 10), "0"},
		{"", 1000, "STATS c", "algo=concurrency limit=3 window_ms=1000 unique_keys=1 total_allowed=5 total_denied=2 shadow=0 total_shadow_denied=0"},
		{"", 2200, "STATS c", "unique_keys=0 total_allowed=5 total_denied=2"},
	}},
	{"C4", []rlStep{ // costs, a cost above the limit, RESET, ids ascending within a ms
		{"C4", 0, "CREATE d 10 1000 ALGO concurrency", "OK"},
		{"", 0, "CHECK d u COST 4", leaseReply(1, 6, 0, 10, 0, leaseAt(0))},
		{"", 200, "CHECK d u COST 4", leaseReply(1, 2, 0, 10, 4, leaseAt(200))},
		{"", 400, "CHECK d u COST 4", "[0,2,600,10,8,0]"},
		{"", 400, "CHECK d u COST 11", "[0,2,-1,10,8,0]"},
		{"", 400, "RELEASE d u " + strconv.FormatInt(leaseAt(0), 10), "1"},
		{"", 400, "CHECK d u COST 4", leaseReply(1, 2, 0, 10, 4, leaseAt(400))},
		{"", 400, "PEEK d u", "[1,2,0,10,8]"},
		{"C5", 400, "RESET d u", "1"},
		{"", 400, "RESET d u", "0"},
		{"", 400, "PEEK d u", "[1,10,0,10,0]"},
		{"", 400, "CHECK d u", leaseReply(1, 9, 0, 10, 0, leaseAt(400)+1)},
		{"", 400, "STATS d", "unique_keys=1 total_allowed=13 total_denied=15"},
	}},
	{"C6", []rlStep{ // shadow: a shadow denial takes no lease
		{"C6", 0, "CREATE s 1 1000 ALGO concurrency SHADOW", "OK"},
		{"", 0, "CHECK s u", leaseReply(1, 0, 0, 1, 0, leaseAt(0))},
		{"", 0, "CHECK s u", "[1,0,1000,1,1,0]"},
		{"", 0, "PEEK s u", "[1,0,1000,1,1]"},
		{"", 0, "RELEASE s u " + strconv.FormatInt(leaseAt(0), 10), "1"},
		{"", 0, "CHECK s u", leaseReply(1, 0, 0, 1, 0, leaseAt(0)+1)},
		{"", 0, "STATS s", "algo=concurrency shadow=1 total_allowed=2 total_denied=1 total_shadow_denied=1"},
	}},
	{"C7", []rlStep{ // UPDATE: leases kept, each counting until ts + the new window
		{"C7", 0, "CREATE w 3 10000 ALGO concurrency", "OK"},
		{"", 0, "CHECK w u COST 3", leaseReply(1, 0, 0, 3, 0, leaseAt(0))},
		{"", 5000, "CHECK w u", "[0,0,5000,3,3,0]"},
		{"", 5000, "UPDATE w WINDOW 2000", "OK"},
		{"", 5000, "CHECK w u", leaseReply(1, 2, 0, 3, 0, leaseAt(5000))},
		{"", 5000, "UPDATE w LIMIT 1", "OK"},
		{"", 5000, "CHECK w u", "[0,0,2000,1,1,0]"},
		{"", 5000, "UPDATE w LIMIT 100001", rlErrConcLimit},
		{"", 5000, "UPDATE w REFILL 5", rlErrSyntax},
		{"", 5000, "UPDATE w DRAIN 5 LIMIT 100001", rlErrSyntax},
		{"", 5000, "UPDATE w LIMIT 100000", "OK"},
		{"", 5000, "STATS w", "algo=concurrency limit=100000 window_ms=2000 unique_keys=1 total_allowed=4 total_denied=2"},
		{"", 6999, "PEEK w u", "[1,99999,0,100000,1]"},
		{"", 7000, "PEEK w u", "[1,100000,0,100000,0]"},
	}},
	{"C8", []rlStep{ // validation
		{"C8", 0, "CREATE x 100001 1000 ALGO concurrency", rlErrConcLimit},
		{"", 0, "CREATE y 100001 1000 ALGO concurrency DRAIN 5", rlErrSyntax},
		{"", 0, "CREATE y 10 1000 ALGO concurrency REFILL 5", rlErrSyntax},
		{"", 0, "CREATE y 0 1000 ALGO concurrency", rlErrLimit},
		{"", 0, "CREATE x 100000 1000 ALGO CONCURRENCY", "OK"},
		{"", 0, "RELEASE x u", rlArity("ratelimit.release")},
		{"", 0, "RELEASE x u 1 2", rlArity("ratelimit.release")},
		{"", 0, "RELEASE x u 0", rlErrLease},
		{"", 0, "RELEASE x u -1", rlErrLease},
		{"", 0, "RELEASE x u abc", rlErrLease},
		{"", 0, "RELEASE x u 9223372036854775808", rlErrLease},
		{"", 0, "RELEASE nolimiter u abc", rlErrLease},
		{"", 0, "RELEASE nolimiter u 1", rlErrNotFound},
		{"", 0, "CREATE api 10 1000", "OK"},
		{"", 0, "RELEASE api u 1", rlErrNotConc},
		{"", 0, "CHECK api u", "[1,9,0,10,0]"},
		{"", 0, "CHECK nolimiter u", "[0,0,0,0,0]"},
		{"", 0, "RELEASE x u 1", "0"},
		{"", 0, "RELEASE x u 9223372036854775807", "0"},
		{"", 0, "STATS x", "algo=concurrency limit=100000 unique_keys=0 total_allowed=0"},
		{"", 0, "RATELIMIT.SETSTATE x u LEASES 2 5 1 1 5 1 1 TOTALS 0 0", rlErrSyntax},
		{"", 0, "RATELIMIT.SETSTATE x u LOG 0 TOTALS 0 0", rlErrSyntax},
		{"", 0, "RATELIMIT.SETSTATE api u LEASES 0 TOTALS 0 0", rlErrSyntax},
	}},
}

func TestRateLimitConcurrencyVectors(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, true, rateLimitConcurrencyBlocks)
	})
}

// TestRateLimitConcurrencyClients runs 50 clients that each acquire a lease on one key of a
// limit-5 limiter, hold it a moment and release it: the number in flight, counted by the test
// between an allowed CHECK and its RELEASE, never exceeds 5, every lease is released exactly
// once (RELEASE replies 1), and nothing is in flight at the end.
func TestRateLimitConcurrencyClients(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.Do(ctx, "RATELIMIT.CREATE", "jobs", 5, 60000, "ALGO", "concurrency").Err())
	var inFlight, peak, acquired, released atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := s.Client(t, 2)
			for n := 0; n < 10; {
				v, err := cl.Do(ctx, "RATELIMIT.CHECK", "jobs", "shared").Int64Slice()
				if err != nil || len(v) != 6 {
					errs <- fmt.Errorf("client %d: CHECK %v %v", i, v, err)
					return
				}
				if v[0] == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				acquired.Add(1)
				cur := inFlight.Add(1)
				for p := peak.Load(); cur > p && !peak.CompareAndSwap(p, cur); p = peak.Load() {
				}
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				inFlight.Add(-1) // before the release: once released, another may acquire
				r, err := cl.Do(ctx, "RATELIMIT.RELEASE", "jobs", "shared", v[5]).Int64()
				if err != nil || r != 1 {
					errs <- fmt.Errorf("client %d: RELEASE %d: %d %v", i, v[5], r, err)
					return
				}
				released.Add(1)
				n++
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.LessOrEqual(t, peak.Load(), int64(5), "leases in flight")
	require.Equal(t, int64(500), acquired.Load())
	require.Equal(t, acquired.Load(), released.Load())
	v, err := c.Do(ctx, "RATELIMIT.PEEK", "jobs", "shared").Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{1, 5, 0, 5, 0}, v)
}

// TestRateLimitConcurrencyRestart requires a concurrency limiter's leases back after a SAVE, a
// BGSAVE and a replay of the append-only log (released leases stay released), still
// releasable by their ids, and new ids above every restored one even with the clock set back.
func TestRateLimitConcurrencyRestart(t *testing.T) {
	at := func(c *redis.Client, ms int64) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+ms).Err())
	}
	do := func(t *testing.T, c *redis.Client, args ...any) []int64 {
		t.Helper()
		v, err := c.Do(ctx, args...).Result()
		require.NoError(t, err, "%v", args)
		if a, ok := v.([]any); ok {
			out := make([]int64, len(a))
			for i := range a {
				out[i] = a[i].(int64)
			}
			return out
		}
		return nil
	}
	// Keys of one limiter share a lease-id counter when they map to the same internal shard,
	// which depends on a per-limiter random seed: ids of other keys are read, not predicted.
	calls := 0
	var vID, wID int64
	fill := func(t *testing.T, c *redis.Client) {
		calls = 0
		at(c, 0)
		do(t, c, "RATELIMIT.CREATE", "cc", 5, 10000, "ALGO", "concurrency")
		do(t, c, "RATELIMIT.CREATE", "sh", 1, 10000, "ALGO", "concurrency", "SHADOW")
		do(t, c, "RATELIMIT.CHECK", "cc", "u", "COST", 2)
		at(c, 100)
		do(t, c, "RATELIMIT.CHECK", "cc", "u")
		do(t, c, "RATELIMIT.CHECK", "cc", "u")
		vID = do(t, c, "RATELIMIT.CHECK", "cc", "v")[5]
		wID = do(t, c, "RATELIMIT.CHECK", "cc", "w")[5]
		do(t, c, "RATELIMIT.CHECK", "cc", "u", "COST", 9) // denied: cost above the limit
		require.Equal(t, "1", rlRender(c.Do(ctx, "RATELIMIT.RELEASE", "cc", "u", leaseAt(100)).Result()))
		require.Equal(t, "1", rlRender(c.Do(ctx, "RATELIMIT.RELEASE", "cc", "w", wID).Result())) // w's only lease: no state left
		do(t, c, "RATELIMIT.CHECK", "sh", "u")
		do(t, c, "RATELIMIT.CHECK", "sh", "u") // a shadow denial
		do(t, c, "RATELIMIT.CHECK", "sh", "v")
	}
	state := func(t *testing.T, c *redis.Client) []string {
		calls++
		at(c, 200)
		var out []string
		for _, name := range []string{"cc", "sh"} {
			out = append(out, rlRender(c.Do(ctx, "RATELIMIT.STATS", name).Result()))
			for _, key := range []string{"u", "v", "w"} {
				out = append(out, rlRender(c.Do(ctx, "RATELIMIT.PEEK", name, key).Result()))
			}
		}
		if calls == 2 { // after the restart: the restored leases work as before
			at(c, 50) // before every lease: a new id must still be above them
			v := do(t, c, "RATELIMIT.CHECK", "cc", "u")
			require.Equal(t, []int64{1, 1, 0, 5, 3}, v[:5], "a new lease after the restart")
			require.Greater(t, v[5], leaseAt(100)+1, "a new id above the key's restored ids")
			require.Equal(t, "1", rlRender(c.Do(ctx, "RATELIMIT.RELEASE", "cc", "u", leaseAt(0)).Result()))
			require.Equal(t, "0", rlRender(c.Do(ctx, "RATELIMIT.RELEASE", "cc", "u", leaseAt(100)).Result()))
			require.Equal(t, "1", rlRender(c.Do(ctx, "RATELIMIT.RELEASE", "cc", "u", leaseAt(100)+1).Result()))
			require.Equal(t, "1", rlRender(c.Do(ctx, "RATELIMIT.RELEASE", "cc", "v", vID).Result()))
			require.Equal(t, "0", rlRender(c.Do(ctx, "RATELIMIT.RELEASE", "cc", "w", wID).Result()))
		}
		return out
	}
	restartThroughEachWay(t, fill, state, func(t *testing.T, c *redis.Client, before []string) {
		require.Equal(t, "[1,2,0,5,3]", before[1], "cc u: 2 + 1 units held, one lease released")
		require.Equal(t, "[1,4,0,5,1]", before[2], "cc v")
		require.Equal(t, "[1,5,0,5,0]", before[3], "cc w: released")
		require.Contains(t, before[4], "total_shadow_denied")
	})
}

// TestRateLimitConcurrencyReplication acquires and releases leases on a Raft leader, moves
// the leadership to a follower and requires the same leases there: the same units in flight,
// the held lease releasable by its id, a released one not, and new ids above the old ones.
func TestRateLimitConcurrencyReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node group")
	}
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	bg := context.Background()
	c := leader.c
	require.NoError(t, c.Do(bg, "RATELIMIT.CREATE", "cc", 3, 3600000, "ALGO", "concurrency").Err())
	var ids []int64
	for range 3 {
		v, err := c.Do(bg, "RATELIMIT.CHECK", "cc", "u").Int64Slice()
		require.NoError(t, err)
		require.Equal(t, int64(1), v[0])
		ids = append(ids, v[5])
	}
	require.Equal(t, int64(1), c.Do(bg, "RATELIMIT.RELEASE", "cc", "u", ids[1]).Val())
	waitApplied(t, leader, nodes)
	follower := otherThan(nodes, leader)
	require.NoError(t, leader.c.Do(bg, "RAFT", "TRANSFER", follower.id).Err())
	require.Equal(t, follower, waitLeader(t, nodes))
	c = follower.c
	v, err := c.Do(bg, "RATELIMIT.PEEK", "cc", "u").Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{1, 1, 0, 3, 2}, v)
	require.Equal(t, int64(0), c.Do(bg, "RATELIMIT.RELEASE", "cc", "u", ids[1]).Val())
	require.Equal(t, int64(1), c.Do(bg, "RATELIMIT.RELEASE", "cc", "u", ids[2]).Val())
	v, err = c.Do(bg, "RATELIMIT.CHECK", "cc", "u").Int64Slice()
	require.NoError(t, err)
	require.Equal(t, int64(1), v[0])
	require.Greater(t, v[5], ids[2])
}

// TestRateLimitConcurrencyExactBytes checks a concurrency limiter's replies on the wire: CHECK's
// six integers, PEEK's five, RELEASE's integer, and STATS with the sliding window's fields (no
// rate) then the shadow tail, a flat array in RESP2 and a map in RESP3.
func TestRateLimitConcurrencyExactBytes(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		r := rawIn(t, s, c)
		r.Do("DEBUG", "CLOCK", "SET", strconv.FormatInt(testutil.T0, 10))
		require.Equal(t, "+OK\r\n", r.Do("RATELIMIT.CREATE", "cc", "2", "1000", "ALGO", "concurrency"))
		require.Equal(t, "*6\r\n:1\r\n:1\r\n:0\r\n:2\r\n:0\r\n:1700000000000000000\r\n", r.Do("RATELIMIT.CHECK", "cc", "u"))
		require.Equal(t, "*6\r\n:0\r\n:1\r\n:-1\r\n:2\r\n:1\r\n:0\r\n", r.Do("RATELIMIT.CHECK", "cc", "u", "COST", "3"))
		require.Equal(t, "*5\r\n:1\r\n:1\r\n:0\r\n:2\r\n:1\r\n", r.Do("RATELIMIT.PEEK", "cc", "u"))
		require.Equal(t, ":1\r\n", r.Do("RATELIMIT.RELEASE", "cc", "u", "1700000000000000000"))
		require.Equal(t, ":0\r\n", r.Do("RATELIMIT.RELEASE", "cc", "u", "1700000000000000000"))
		require.Equal(t, byProto(c, "*18\r\n", "%9\r\n")+
			"$4\r\nname\r\n$2\r\ncc\r\n$4\r\nalgo\r\n$11\r\nconcurrency\r\n$5\r\nlimit\r\n:2\r\n"+
			"$9\r\nwindow_ms\r\n:1000\r\n$11\r\nunique_keys\r\n:0\r\n$13\r\ntotal_allowed\r\n:1\r\n"+
			"$12\r\ntotal_denied\r\n:3\r\n$6\r\nshadow\r\n:0\r\n$19\r\ntotal_shadow_denied\r\n:0\r\n",
			r.Do("RATELIMIT.STATS", "cc"))
	})
}

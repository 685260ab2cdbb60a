package chaos

// The central failover tests of design §5.3 (issue 12): 32 cluster clients hammer a rate
// limiter on a three-node Raft group for 40 s while the leader is SIGKILLed and restarted,
// SIGSTOPped, partitioned from its followers, all nodes are SIGKILLed and restarted, and
// leadership is transferred. Safety: the clients never saw more admissions than the
// documented bound; liveness: the budget is not stuck and service comes back after every
// fault; the nodes end byte-identical (DEBUG DIGEST at the same applied index); and denials
// are never written to the Raft log.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/testutil/procs"
	"github.com/hotkv/hotkv/internal/testutil/ratecheck"
)

const (
	failoverClients = 32
	failoverRun     = 40 * time.Second
	hotBurst        = 1000
	coldBurst       = 20
	coldKeys        = 100
	period          = time.Hour
	// successGapBound is the longest stretch without any successful reply the tests accept
	// outside the kill-all window. A leader fault is noticed by the followers within one to
	// two heartbeat timeouts (500 ms each by default, randomized by hashicorp/raft), the
	// election takes one to two election timeouts (500 ms each), the new leader commits its
	// leader entry before it serves, and clients notice: a client waiting on a stopped or
	// partitioned leader gives up after its 1 s read timeout, backs off up to 512 ms, and
	// learns the new leader from a MOVED or its 500 ms topology refresh. That adds up to
	// about 4.5 s; the servers and clients run under the race detector, several times slower,
	// on a shared 2-core machine, so the bound is 8 s.
	successGapBound = 8 * time.Second
)

// doer is what the variants need of a client: *redis.Client and *redis.ClusterClient.
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// call is one decision request and its outcome.
type call struct {
	client     int
	key        string
	start, end time.Time
	allowed    bool
	reply      []int64
	err        error
}

// variant is what differs between the GCRA and the RATELIMIT runs.
type variant struct {
	// setup prepares the group (creates limiters) through the leader.
	setup func(ctx context.Context, c doer) error
	// decide asks for one unit of key and returns the reply and whether it admitted.
	decide func(ctx context.Context, c doer, key string) (reply []int64, allowed bool, err error)
	// check asserts the safety bound on the recorded calls.
	check func(t *testing.T, calls []call)
	// logAllowance is how many Raft entries a burst of n sequential denials taking d may
	// add (0: none at all).
	logAllowance func(n int, d time.Duration) uint64
	// nemesis injects the faults from t0 until the end of the run; nil is design §5.3's
	// schedule (group.nemesis). Stretches without a successful reply between killAll and
	// restarted are not held to successGapBound.
	nemesis func(g *group, t0 time.Time) (evs []event, killAll, restarted time.Time)
}

func hotKey() string       { return "rl:{t}:hot" }
func coldKey(i int) string { return fmt.Sprintf("rl:{t}:k%d", i) }

// TestGCRAFailoverNoOverAdmit is design §5.3's TestGCRAFailoverNoOverAdmit: GCRA.LIMIT on a
// hot key (burst 1000 per hour, T = 3.6 s) and 100 cold keys (burst 20 per hour). The hot key
// may admit at most 1000 + ⌊w/T⌋ + 1 in any window w (ratecheck; the +1 absorbs
// millisecond rounding; the clock-skew term is 0 on one host), so 1012 over the 40 s run; a
// cold key at most 20 (no refill within 40 s: T = 180 s).
func TestGCRAFailoverNoOverAdmit(t *testing.T) { runFailover(t, gcraVariant()) }

// gcraVariant is the GCRA.LIMIT workload and its checks.
func gcraVariant() variant {
	return variant{
		setup: func(context.Context, doer) error { return nil },
		decide: func(ctx context.Context, c doer, key string) ([]int64, bool, error) {
			burst := int64(coldBurst)
			if key == hotKey() {
				burst = hotBurst
			}
			v, err := c.Do(ctx, "GCRA.LIMIT", key, period.Milliseconds(), burst).Result()
			if err != nil {
				return nil, false, err
			}
			r, err := ratecheck.ReplyInts(v)
			if err != nil {
				return nil, false, err
			}
			return r, len(r) == 5 && r[0] == 0, nil
		},
		check: func(t *testing.T, calls []call) {
			limits := map[string]ratecheck.Limit{hotKey(): {Burst: hotBurst, Period: period}}
			for i := range coldKeys {
				limits[coldKey(i)] = ratecheck.Limit{Burst: coldBurst, Period: period}
			}
			ops := make([]ratecheck.Op, 0, len(calls))
			for _, c := range calls {
				ops = append(ops, ratecheck.Op{Client: c.client, Key: c.key, Start: c.start, End: c.end, Reply: c.reply, Err: c.err})
			}
			r := ratecheck.Check(ops, limits, ratecheck.Bound{Slack: 1})
			if err := r.Err(); err != nil {
				t.Error(err)
			}
			hot := r.Keys[hotKey()]
			if hot == nil {
				t.Fatal("no call on the hot key")
			}
			t.Logf("hot key: %d attempts, %d allowed (bound over the run %d), %d denied, %d failed; max excess %d",
				hot.Attempts, hot.Allowed, ratecheck.Bound{Slack: 1}.Max(hot.Limit, failoverRun), hot.Denied, hot.Failed, hot.MaxExcess)
			coldMax := int64(0)
			for i := range coldKeys {
				if k := r.Keys[coldKey(i)]; k != nil {
					coldMax = max(coldMax, k.Allowed)
					if k.Allowed > coldBurst {
						t.Errorf("cold key %s admitted %d, more than its burst %d", k.Key, k.Allowed, coldBurst)
					}
				}
			}
			t.Logf("cold keys: at most %d allowed each (burst %d)", coldMax, coldBurst)
			if hot.Allowed+hot.Failed < min(hotBurst, hot.Attempts) || hot.Denied == 0 {
				t.Errorf("liveness: the hot key's budget looks stuck: %+v", hot)
			}
		},
		logAllowance: func(int, time.Duration) uint64 { return 0 },
	}
}

// TestRateLimitSlidingWindowFailoverNoOverAdmit is the same run for a RATELIMIT
// sliding_window limiter: "hot" (limit 1000 per hour) on one key and "cold" (limit 20 per
// hour) on 100 keys. A sliding window admits at most limit units in any window_ms, exact to
// the millisecond; the run is shorter than the window, so no key may ever have more than its
// limit admitted over the whole run, with no slack at all.
func TestRateLimitSlidingWindowFailoverNoOverAdmit(t *testing.T) {
	runFailover(t, slidingWindowVariant())
}

// slidingWindowVariant is the RATELIMIT sliding_window workload and its checks.
func slidingWindowVariant() variant {
	limiter := func(key string) (string, int64) {
		if key == hotKey() {
			return "hot", hotBurst
		}
		return "cold", coldBurst
	}
	return variant{
		setup: func(ctx context.Context, c doer) error {
			if err := c.Do(ctx, "RATELIMIT.CREATE", "hot", hotBurst, period.Milliseconds(), "ALGO", "sliding_window").Err(); err != nil {
				return err
			}
			return c.Do(ctx, "RATELIMIT.CREATE", "cold", coldBurst, period.Milliseconds(), "ALGO", "sliding_window").Err()
		},
		decide: func(ctx context.Context, c doer, key string) ([]int64, bool, error) {
			name, limit := limiter(key)
			v, err := c.Do(ctx, "RATELIMIT.CHECK", name, key).Result()
			if err != nil {
				return nil, false, err
			}
			r, err := ratecheck.ReplyInts(v)
			if err != nil {
				return nil, false, err
			}
			// [allowed, remaining, retry_after_ms, limit, current]; a limit of 0 means the
			// node did not know the limiter, which would be a lost definition.
			if len(r) != 5 || r[3] != limit || (r[0] != 0 && r[0] != 1) {
				return r, false, fmt.Errorf("malformed RATELIMIT.CHECK reply %v (limit %d)", r, limit)
			}
			return r, r[0] == 1, nil
		},
		check: func(t *testing.T, calls []call) {
			type counts struct{ attempts, allowed, denied, failed int64 }
			by := map[string]*counts{}
			for _, c := range calls {
				k := by[c.key]
				if k == nil {
					k = &counts{}
					by[c.key] = k
				}
				k.attempts++
				switch {
				case c.err != nil:
					k.failed++
					if !isTransient(c.err) {
						t.Errorf("client %d: %v", c.client, c.err)
					}
				case c.allowed:
					k.allowed++
				default:
					k.denied++
				}
			}
			hot := by[hotKey()]
			if hot == nil {
				t.Fatal("no call on the hot key")
			}
			t.Logf("hot key: %d attempts, %d allowed (bound %d), %d denied, %d failed", hot.attempts, hot.allowed, hotBurst, hot.denied, hot.failed)
			if hot.allowed > hotBurst {
				t.Errorf("the hot key admitted %d, more than its limit %d within one window", hot.allowed, hotBurst)
			}
			coldMax := int64(0)
			for i := range coldKeys {
				if k := by[coldKey(i)]; k != nil {
					coldMax = max(coldMax, k.allowed)
					if k.allowed > coldBurst {
						t.Errorf("cold key %s admitted %d, more than its limit %d", coldKey(i), k.allowed, coldBurst)
					}
				}
			}
			t.Logf("cold keys: at most %d allowed each (limit %d)", coldMax, coldBurst)
			if hot.allowed+hot.failed < min(hotBurst, hot.attempts) || hot.denied == 0 {
				t.Errorf("liveness: the hot key's budget looks stuck: %+v", *hot)
			}
		},
		// Denied totals are not logged per denial; the leader may flush aggregated denied
		// totals (design §3.4), at most one entry per 100 ms.
		logAllowance: func(_ int, d time.Duration) uint64 { return 1 + uint64(d/(100*time.Millisecond)) },
	}
}

// isTransient reports whether err is one a client may see during a failover: the retryable
// cluster errors after go-redis's retries ran out, timeouts and lost connections.
func isTransient(err error) bool {
	var re redis.Error
	if errors.As(err, &re) {
		for _, p := range []string{"TRYAGAIN ", "CLUSTERDOWN ", "MOVED ", "LOADING "} {
			if len(re.Error()) >= len(p) && re.Error()[:len(p)] == p {
				return true
			}
		}
		return false
	}
	return true // network errors: dial refused, EOF, i/o timeout
}

func runFailover(t *testing.T, v variant) {
	if testing.Short() {
		t.Skip("chaos test (about a minute)")
	}
	began := time.Now()
	g := startGroup(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	{
		c := g.client()
		if err := v.setup(ctx, c); err != nil {
			t.Fatalf("setup: %v", err)
		}
		c.Close()
	}

	var mu sync.Mutex
	var calls []call
	var probes []call // INCR writes, for failover times
	var wg sync.WaitGroup
	t0 := time.Now()
	for cl := range failoverClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := g.client()
			defer c.Close()
			for i := 0; ctx.Err() == nil; i++ {
				key := hotKey()
				if i%4 == 3 {
					key = coldKey((i/4*7 + cl) % coldKeys)
				}
				rec := call{client: cl, key: key, start: time.Now()}
				rec.reply, rec.allowed, rec.err = v.decide(ctx, c, key)
				rec.end = time.Now()
				if ctx.Err() != nil && rec.err != nil {
					return // cut by the end of the run, not by the group
				}
				mu.Lock()
				calls = append(calls, rec)
				mu.Unlock()
				if rec.err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c := g.client()
		defer c.Close()
		for ctx.Err() == nil {
			rec := call{client: -1, key: "chaos:probe", start: time.Now()}
			rec.err = c.Incr(ctx, "chaos:probe").Err()
			rec.end = time.Now()
			if ctx.Err() != nil && rec.err != nil {
				return
			}
			mu.Lock()
			probes = append(probes, rec)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()

	nemesis := v.nemesis
	if nemesis == nil {
		nemesis = (*group).nemesis
	}
	evs, killAll, restarted := nemesis(g, t0)
	cancel()
	wg.Wait()
	t.Logf("workload: %d decisions and %d probe writes in %v", len(calls), len(probes), time.Since(t0).Round(time.Millisecond))

	// Failover and recovery times: from each fault to the first successful write (INCR)
	// sent once it was in place.
	for _, e := range evs {
		first := time.Time{}
		for _, p := range probes {
			if p.err == nil && !p.start.Before(e.done) && (first.IsZero() || p.end.Before(first)) {
				first = p.end
			}
		}
		if first.IsZero() {
			t.Logf("%-40s n%d: no successful write after it", e.what, e.node+1)
			continue
		}
		t.Logf("%-40s n%d: first successful write %v later", e.what, e.node+1, first.Sub(e.at).Round(time.Millisecond))
	}

	v.check(t, calls)
	checkGaps(t, t0, append(slices.Clone(calls), probes...), killAll, restarted)
	for _, c := range calls {
		if c.err != nil && !isTransient(c.err) {
			t.Errorf("client %d %s: unexpected error %v", c.client, c.key, c.err)
			break
		}
	}

	// No denial was logged: a burst of denials on the spent hot key, one at a time straight
	// to the leader, adds no Raft entry (beyond one per admission, when the hot key refills
	// meanwhile).
	const burst = 300
	for attempt := 1; ; attempt++ {
		l, _ := g.waitConverged(60 * time.Second)
		before := g.lastLogIndex(l)
		direct := g.adminAt(g.nodes[l].Addr)
		allowed, denied := 0, 0
		var err error
		bt := time.Now()
		for range burst {
			var ok bool
			if _, ok, err = v.decide(context.Background(), direct, hotKey()); err != nil {
				break
			}
			if ok {
				allowed++
			} else {
				denied++
			}
		}
		if err != nil {
			// Only a leadership change on a loaded machine gets here (MOVED, CLUSTERDOWN):
			// measure again on the new leader.
			if attempt < 3 && isTransient(err) {
				t.Logf("denial burst on n%d interrupted (%v); again", l+1, err)
				continue
			}
			t.Fatalf("denial burst on the leader n%d: %v", l+1, err)
		}
		bd := time.Since(bt)
		after := g.lastLogIndex(l)
		t.Logf("denial burst: %d denied, %d allowed in %v; leader's last_log_index %d -> %d", denied, allowed, bd.Round(time.Millisecond), before, after)
		if denied == 0 {
			t.Errorf("the burst saw no denial")
		}
		if grew := after - before; grew > uint64(allowed)+v.logAllowance(denied, bd) {
			t.Errorf("%d denials (and %d admissions) grew the Raft log by %d entries", denied, allowed, grew)
		}
		break
	}

	// A follower that cannot apply an effect diverges silently (the replayer only logs it).
	for _, n := range g.nodes {
		for _, line := range strings.Split(n.Log(), "\n") {
			if strings.Contains(line, "replayed from the append-only log failed") || strings.Contains(line, "Failed applying a Raft entry") ||
				strings.Contains(line, "applied from the Raft log failed") ||
				strings.Contains(line, "Corrupt Raft entry") || strings.Contains(line, "Malformed Raft entry") {
				t.Errorf("%s: %s", n.Name, line)
				break
			}
		}
	}

	// Every replica ends identical: the same digest at the same applied index.
	idx, ds := g.digests(60 * time.Second)
	t.Logf("applied index %d on every node; digests %v", idx, ds)
	for i := 1; i < len(ds); i++ {
		if ds[i] != ds[0] {
			t.Errorf("n%d's digest %s differs from n1's %s at applied index %d", i+1, ds[i], ds[0], idx)
		}
	}
	t.Logf("run time %v (servers built with the race detector: %v)", time.Since(began).Round(time.Millisecond), procs.RaceBuilt())
}

// checkGaps asserts liveness: no stretch longer than successGapBound without a successful
// reply (allowed or denied decision, or write), except inside the kill-all window, where the
// stretch is counted from the moment every node was running again.
func checkGaps(t *testing.T, t0 time.Time, calls []call, killAll, restarted time.Time) {
	t.Helper()
	var ends []time.Time
	for _, c := range calls {
		if c.err == nil {
			ends = append(ends, c.end)
		}
	}
	if len(ends) == 0 {
		t.Fatal("no successful reply at all")
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	var worst time.Duration
	var worstAt time.Time
	for i := 1; i < len(ends); i++ {
		from, to := ends[i-1], ends[i]
		if from.Before(restarted) && to.After(killAll) {
			if !to.After(restarted) {
				continue
			}
			from = restarted
		}
		if gap := to.Sub(from); gap > worst {
			worst, worstAt = gap, from
		}
	}
	t.Logf("longest stretch without a successful reply (outside the kill-all window): %v from t=%.2fs", worst.Round(time.Millisecond), worstAt.Sub(t0).Seconds())
	if worst > successGapBound {
		t.Errorf("liveness: no successful reply for %v from t=%.2fs (bound %v)", worst, worstAt.Sub(t0).Seconds(), successGapBound)
	}
}

package chaos

// TestShardedChaos: the failover test's workload and safety checks (failover_test.go) on a
// sharded cluster of two 3-node shards (sharded_harness_test.go), with slot moves of the hot
// key's range back and forth between the shards as the main fault, and process and network
// faults on the shards' leaders while the moves run.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/cluster"
	"github.com/hotkv/hotkv/internal/replication"
	"github.com/hotkv/hotkv/internal/testutil/procs"
	"github.com/hotkv/hotkv/internal/testutil/ratecheck"
)

const (
	shardedClients = 32
	shardedRun     = 40 * time.Second
	// shardedPeriod is so long that nothing refills during the run: T = period/burst is 3600 s
	// for the hot key and the limiter, so the documented bound over the run is burst + 1
	// (ratecheck.Bound{Slack: 1}, failover_test.go's: millisecond rounding, no clock skew
	// on one host).
	shardedPeriod = 1000 * time.Hour
	shardedCold   = 64
	// shardedFill keys share the hot key's slot, so that a move copies long enough for the
	// nemesis to strike while it runs (about a second with the race detector).
	shardedFill = 20000
	// moveLo-moveHi is the range the nemesis moves: it holds {hot}'s slot 6093, which
	// REBALANCE gives to s1 (0-8191).
	moveLo, moveHi = 6000, 6199
)

func shardedHotKey() string       { return "rl:{hot}:gcra" }
func shardedLimiter() string      { return "rl:{hot}:lim" }
func shardedColdKey(i int) string { return "rl:cold:" + strconv.Itoa(i) }

// TestShardedChaos: 32 go-redis ClusterClients hammer GCRA.LIMIT on a hot key (burst 1000
// per 1000 hours), RATELIMIT.CHECK on a sliding-window limiter (limit 1000) whose name shares
// the hot key's slot, and cold GCRA keys on both shards, for about 40 s, while the nemesis
// moves the hot range between the shards: a plain move, one during which the source's leader
// is SIGKILLed (and restarted), one during which the target's leader is, a SIGSTOP of the
// owner's leader, a move during which the source's leader is partitioned from its shard, and
// one during which the target's leader is SIGSTOPped.
// Then, with every fault healed and the cluster quiet: the hot key admitted at most
// 1000 + 1, the limiter at most 1000 (no slack: a sliding window is exact), each cold key at
// most its burst + 1; each shard's replicas have the same DEBUG DIGEST at the same applied
// index; the hot key and the limiter exist on the owning shard only.
func TestShardedChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos test (about 45 s)")
	}
	began := time.Now()
	sc := startShardedCluster(t, 2)
	hotSlot := replication.KeySlot([]byte(shardedHotKey()))
	if hotSlot < moveLo || hotSlot > moveHi || replication.KeySlot([]byte(shardedLimiter())) != hotSlot {
		t.Fatalf("the hot key's slot %d is outside %d-%d or the limiter's", hotSlot, moveLo, moveHi)
	}
	// The meta group's voters come from both shards (the joins alternate between them).
	members := sc.clusterxStatus(sc.shards[0].nodes[0])["meta_members"]
	voters := map[string]bool{}
	for _, m := range strings.Split(members, ",") {
		id, _, _ := strings.Cut(m, "@")
		if strings.HasSuffix(m, "(voter)") {
			voters[id] = true
		}
	}
	if len(voters) != 3 || !voters["n1"] || !voters["n4"] || !voters["n2"] {
		t.Fatalf("the meta group's voters are not n1, n4 and n2: %s", members)
	}
	t.Logf("cluster up in %v", time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	{
		c := sc.client()
		if err := c.Do(ctx, "RATELIMIT.CREATE", shardedLimiter(), hotBurst, shardedPeriod.Milliseconds(), "ALGO", "sliding_window").Err(); err != nil {
			t.Fatalf("RATELIMIT.CREATE: %v", err)
		}
		for i := 0; i < shardedFill; i += 1000 {
			p := c.Pipeline()
			for j := i; j < i+1000; j++ {
				p.Set(ctx, "fill:{hot}:"+strconv.Itoa(j), j, 0)
			}
			if _, err := p.Exec(ctx); err != nil {
				t.Fatalf("filling the hot slot: %v", err)
			}
		}
		c.Close()
	}

	var mu sync.Mutex
	var calls []call
	var wg sync.WaitGroup
	t0 := time.Now()
	for cl := range shardedClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := sc.client()
			defer c.Close()
			for i := 0; ctx.Err() == nil; i++ {
				rec := call{client: cl, start: time.Now()}
				switch i % 4 {
				case 0, 1:
					rec.key = shardedHotKey()
					rec.reply, rec.allowed, rec.err = shardedGCRA(ctx, c, rec.key, hotBurst)
				case 2:
					rec.key = shardedLimiter()
					rec.reply, rec.allowed, rec.err = shardedCheck(ctx, c)
				default:
					rec.key = shardedColdKey((i/4*7 + cl) % shardedCold)
					rec.reply, rec.allowed, rec.err = shardedGCRA(ctx, c, rec.key, coldBurst)
				}
				rec.end = time.Now()
				if ctx.Err() != nil && rec.err != nil {
					return // cut by the end of the run, not by the cluster
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

	sc.shardedNemesis(t0, hotSlot)
	time.Sleep(time.Until(t0.Add(shardedRun)))
	cancel()
	wg.Wait()
	t.Logf("workload: %d decisions in %v", len(calls), time.Since(t0).Round(time.Millisecond))

	// Heal whatever is left and wait for quiescence.
	for _, g := range sc.shards {
		g.net.Heal()
		for _, n := range g.nodes {
			if !n.Running() {
				n.Restart()
			}
		}
	}
	sc.waitQuiet(60 * time.Second)
	m := sc.metaMap()
	if m == nil {
		t.Fatal("no meta leader after the run")
	}
	own := owner(m, hotSlot)
	t.Logf("quiet at epoch %d; the hot slot %d is %s's", m.Epoch, hotSlot, shardID(own))

	// After the run, once more each: the budgets stay spent (a denial), recorded as calls.
	{
		c := sc.client()
		for _, key := range []string{shardedHotKey(), shardedLimiter()} {
			for attempt := 0; ; attempt++ {
				rec := call{client: -1, key: key, start: time.Now()}
				if key == shardedLimiter() {
					rec.reply, rec.allowed, rec.err = shardedCheck(context.Background(), c)
				} else {
					rec.reply, rec.allowed, rec.err = shardedGCRA(context.Background(), c, key, hotBurst)
				}
				rec.end = time.Now()
				calls = append(calls, rec)
				if rec.err == nil || attempt == 20 {
					if rec.err != nil {
						t.Errorf("%s after the run: %v", key, rec.err)
					}
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
		c.Close()
	}

	shardedChecks(t, calls)

	// No replica failed to apply an entry (a silent divergence otherwise).
	sc.each(func(_, i int, g *group) {
		for _, line := range strings.Split(g.nodes[i].Log(), "\n") {
			if strings.Contains(line, "replayed from the append-only log failed") || strings.Contains(line, "Failed applying a Raft entry") ||
				strings.Contains(line, "applied from the Raft log failed") ||
				strings.Contains(line, "Corrupt Raft entry") || strings.Contains(line, "Malformed Raft entry") {
				t.Errorf("%s: %s", g.ids[i], line)
				break
			}
		}
	})

	// Each shard's replicas are identical: the same digest at the same applied index.
	for k, g := range sc.shards {
		idx, ds := g.digests(60 * time.Second)
		t.Logf("%s: applied index %d on every node; digests %v", shardID(k), idx, ds)
		for i := 1; i < len(ds); i++ {
			if ds[i] != ds[0] {
				t.Errorf("%s: %s's digest %s differs from %s's %s at applied index %d", shardID(k), g.ids[i], ds[i], g.ids[0], ds[0], idx)
			}
		}
	}

	// The hot key, its filler and the limiter live on the owner only: its leader holds them,
	// the other shard's leader dropped them (the drop follows the hand-over, so it may lag a
	// little); the followers hold what their leader holds (the digests above).
	for k, g := range sc.shards {
		l := g.waitLeader(20 * time.Second)
		a := g.admin(l)
		want := k == own
		sc.waitFor(fmt.Sprintf("%s to hold the hot slot's keys: %v", shardID(k), want), 20*time.Second, func() bool {
			hot, err1 := a.Keys(context.Background(), "rl:{hot}:*").Result()
			fill, err2 := a.Keys(context.Background(), "fill:{hot}:*").Result()
			lims, err3 := a.Do(context.Background(), "RATELIMIT.LIST").StringSlice()
			if err1 != nil || err2 != nil || err3 != nil {
				t.Logf("%s: KEYS/RATELIMIT.LIST: %v %v %v", g.ids[l], err1, err2, err3)
				return false
			}
			has := slices.Contains(hot, shardedHotKey()) && slices.Contains(lims, shardedLimiter()) && len(fill) == shardedFill
			none := len(hot) == 0 && len(fill) == 0 && !slices.Contains(lims, shardedLimiter())
			if want {
				return has
			}
			return none
		})
	}
	t.Logf("the hot key, the limiter and the %d filler keys are on %s only", shardedFill, shardID(own))
	t.Logf("run time %v (servers built without the race detector, even under -race: procs.Options.NoRace)", time.Since(began).Round(time.Millisecond))
}

// shardedGCRA asks GCRA.LIMIT for one unit of key (burst per shardedPeriod).
func shardedGCRA(ctx context.Context, c doer, key string, burst int64) ([]int64, bool, error) {
	v, err := c.Do(ctx, "GCRA.LIMIT", key, shardedPeriod.Milliseconds(), burst).Result()
	if err != nil {
		return nil, false, err
	}
	r, err := ratecheck.ReplyInts(v)
	if err != nil {
		return nil, false, err
	}
	return r, len(r) == 5 && r[0] == 0, nil
}

// shardedCheck asks the limiter for one unit of its key "u".
func shardedCheck(ctx context.Context, c doer) ([]int64, bool, error) {
	v, err := c.Do(ctx, "RATELIMIT.CHECK", shardedLimiter(), "u").Result()
	if err != nil {
		return nil, false, err
	}
	r, err := ratecheck.ReplyInts(v)
	if err != nil {
		return nil, false, err
	}
	// [allowed, remaining, retry_after_ms, limit, current]; a limit other than 1000 means the
	// answering node did not know the limiter (a lost definition after a move).
	if len(r) != 5 || r[3] != hotBurst || (r[0] != 0 && r[0] != 1) {
		return r, false, fmt.Errorf("malformed RATELIMIT.CHECK reply %v", r)
	}
	return r, r[0] == 1, nil
}

// shardedChecks asserts the safety bounds and liveness on the recorded calls.
func shardedChecks(t *testing.T, calls []call) {
	t.Helper()
	limits := map[string]ratecheck.Limit{shardedHotKey(): {Burst: hotBurst, Period: shardedPeriod}}
	for i := range shardedCold {
		limits[shardedColdKey(i)] = ratecheck.Limit{Burst: coldBurst, Period: shardedPeriod}
	}
	var ops []ratecheck.Op
	var lim struct{ attempts, allowed, denied, failed int }
	for _, c := range calls {
		if c.err != nil && !isTransient(c.err) {
			t.Errorf("client %d %s: unexpected error %v", c.client, c.key, c.err)
		}
		if c.key == shardedLimiter() {
			lim.attempts++
			switch {
			case c.err != nil:
				lim.failed++
			case c.allowed:
				lim.allowed++
			default:
				lim.denied++
			}
			continue
		}
		ops = append(ops, ratecheck.Op{Client: c.client, Key: c.key, Start: c.start, End: c.end, Reply: c.reply, Err: c.err})
	}
	b := ratecheck.Bound{Slack: 1}
	r := ratecheck.Check(ops, limits, b)
	if err := r.Err(); err != nil {
		t.Error(err)
	}
	hot := r.Keys[shardedHotKey()]
	if hot == nil {
		t.Fatal("no call on the hot key")
	}
	t.Logf("hot key: %d attempts, %d allowed (bound %d), %d denied, %d failed", hot.Attempts, hot.Allowed,
		b.Max(hot.Limit, 2*shardedRun), hot.Denied, hot.Failed)
	if hot.Allowed > b.Max(hot.Limit, 0) {
		t.Errorf("the hot key admitted %d, more than %d", hot.Allowed, b.Max(hot.Limit, 0))
	}
	if hot.Allowed+hot.Failed < min(hotBurst, hot.Attempts) || hot.Denied == 0 {
		t.Errorf("liveness: the hot key's budget looks stuck: %+v", *hot)
	}
	t.Logf("limiter: %d attempts, %d allowed (limit %d), %d denied, %d failed", lim.attempts, lim.allowed, hotBurst, lim.denied, lim.failed)
	if lim.allowed > hotBurst {
		t.Errorf("the limiter admitted %d, more than its limit %d", lim.allowed, hotBurst)
	}
	if lim.allowed+lim.failed < min(hotBurst, lim.attempts) || lim.denied == 0 {
		t.Errorf("liveness: the limiter's budget looks stuck: %+v", lim)
	}
	coldMax := int64(0)
	for i := range shardedCold {
		if k := r.Keys[shardedColdKey(i)]; k != nil {
			coldMax = max(coldMax, k.Allowed)
		}
	}
	t.Logf("cold keys: at most %d allowed each (burst %d)", coldMax, coldBurst)
}

// shardedNemesis moves the hot range between the shards with faults on the moves' leaders.
func (sc *shardedCluster) shardedNemesis(t0 time.Time, hotSlot int) {
	t := sc.t
	t.Helper()
	note := func(format string, args ...any) {
		t.Logf("t=%5.2fs "+format, append([]any{time.Since(t0).Seconds()}, args...)...)
	}
	cur := func() int {
		var m = sc.metaMap()
		for m == nil {
			time.Sleep(50 * time.Millisecond)
			m = sc.metaMap()
		}
		return owner(m, hotSlot)
	}
	// leaderOf waits for shard k's leader.
	leaderOf := func(k int) int { return sc.shards[k].waitLeader(30 * time.Second) }

	// move asks for the range to move to shard to (retrying a MIGRATE that meets a meta
	// election), and returns once the meta leader's map records the move or shows it done.
	move := func(to int) {
		t.Helper()
		start := time.Now()
		try := 0
		sc.retry("CLUSTERX MIGRATE to "+shardID(to), 30*time.Second, func() error {
			// Any running node takes it (it forwards to the meta leader); another one each try.
			var n *procs.Node
			var g *group
			for n == nil {
				try++
				g = sc.shards[try%2]
				if n = g.nodes[(try/2)%3]; !n.Running() {
					n = nil
				}
			}
			c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			err := g.adminAt(n.Addr).Do(c, "CLUSTERX", "MIGRATE", moveLo, moveHi, shardID(to)).Err()
			cancel()
			if err == nil {
				return nil
			}
			// An earlier attempt whose reply was lost may have been recorded.
			if m := sc.metaMap(); m != nil && (owner(m, hotSlot) == to || slices.ContainsFunc(m.Migrations, func(mg *cluster.Migration) bool {
				return mg.To == shardID(to)
			})) {
				return nil
			}
			t.Logf("CLUSTERX MIGRATE on %s: %v", n.Name, err)
			return err
		})
		note("CLUSTERX MIGRATE %d-%d %s accepted (%v)", moveLo, moveHi, shardID(to), time.Since(start).Round(time.Millisecond))
	}
	// moved waits until the meta leader's map gives the range to shard to with no move
	// pending, and every node's map agrees.
	moved := func(to int, since time.Time) {
		t.Helper()
		sc.waitFor("the move to "+shardID(to)+" to finish", 45*time.Second, func() bool {
			m := sc.metaMap()
			return m != nil && owner(m, hotSlot) == to && len(m.Migrations) == 0
		})
		note("the move to %s is done, %v after MIGRATE", shardID(to), time.Since(since).Round(time.Millisecond))
	}
	// copying reports whether the target's leader has begun receiving the range's keys.
	copying := func(to int) bool {
		g := sc.shards[to]
		l := g.leader()
		if l < 0 {
			return false
		}
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := g.admin(l).DBSize(c).Result()
		return err == nil && n > shardedFill/20
	}
	pending := func() string {
		if m := sc.metaMap(); m != nil && len(m.Migrations) > 0 {
			return fmt.Sprintf("move %d pending", m.Migrations[0].ID)
		}
		return "no move pending any more"
	}

	time.Sleep(time.Until(t0.Add(2 * time.Second)))
	// 1. A plain move.
	src := cur()
	dst := 1 - src
	at := time.Now()
	move(dst)
	moved(dst, at)

	// 2. Back, SIGKILLing the source's leader as soon as the move is recorded; restarted 2 s
	// later (the move goes on from the source's new leader meanwhile).
	src, dst = dst, src
	l := leaderOf(src)
	at = time.Now()
	move(dst)
	victim := sc.shards[src].nodes[l]
	note("SIGKILL the source's (%s) leader %s (%s)", shardID(src), victim.Name, pending())
	victim.Kill()
	time.Sleep(2 * time.Second)
	note("restart %s", victim.Name)
	victim.Restart()
	moved(dst, at)

	// 3. Again, SIGKILLing the target's leader once the copy has begun; restarted 2 s later.
	src, dst = dst, src
	l = leaderOf(dst)
	baseTarget := sc.shards[dst]
	at = time.Now()
	move(dst)
	deadline := time.Now().Add(10 * time.Second)
	for !copying(dst) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	l = baseTarget.waitLeader(10 * time.Second)
	victim = baseTarget.nodes[l]
	note("SIGKILL the target's (%s) leader %s (%s)", shardID(dst), victim.Name, pending())
	victim.Kill()
	time.Sleep(2 * time.Second)
	note("restart %s", victim.Name)
	victim.Restart()
	moved(dst, at)

	// 4. SIGSTOP the owner's leader for 3 s.
	own := dst
	l = leaderOf(own)
	victim = sc.shards[own].nodes[l]
	note("SIGSTOP the owner's (%s) leader %s", shardID(own), victim.Name)
	victim.Pause()
	time.Sleep(3 * time.Second)
	note("SIGCONT %s", victim.Name)
	victim.Resume()

	// 5. Back, with the source's leader partitioned from its shard (its clients and the meta
	// group still reach it) for 4 s from the start of the move.
	src, dst = own, 1-own
	l = leaderOf(src)
	at = time.Now()
	move(dst)
	note("partition the source's (%s) leader %s from its shard (%s)", shardID(src), sc.shards[src].ids[l], pending())
	sc.shards[src].net.Isolate(l + 1)
	time.Sleep(4 * time.Second)
	note("heal")
	sc.shards[src].net.Heal()
	moved(dst, at)

	// 6. Once more, SIGSTOPping the target's leader for 3 s once the copy has begun.
	src, dst = dst, src
	at = time.Now()
	move(dst)
	deadline = time.Now().Add(10 * time.Second)
	for !copying(dst) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	l = leaderOf(dst)
	victim = sc.shards[dst].nodes[l]
	note("SIGSTOP the target's (%s) leader %s (%s)", shardID(dst), victim.Name, pending())
	victim.Pause()
	time.Sleep(3 * time.Second)
	note("SIGCONT %s", victim.Name)
	victim.Resume()
	moved(dst, at)
}

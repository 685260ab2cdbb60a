package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// shardedCluster is an in-process sharded cluster (docs/cluster.md): shards[s] are the nodes of
// shard s<s+1>, a Raft group; the first node of shard s1 started the meta group.
type shardedCluster struct {
	shards [][]*raftNode
}

func (sc *shardedCluster) all() []*raftNode {
	var out []*raftNode
	for _, sh := range sc.shards {
		out = append(out, sh...)
	}
	return out
}

// newShardedCluster starts shards groups of perShard nodes, joins every node to the cluster
// started by the first one and, when assign is set, spreads the slots evenly.
func newShardedCluster(t *testing.T, shards, perShard int, assign bool) *shardedCluster {
	t.Helper()
	return newShardedClusterWith(t, shards, perShard, assign, nil)
}

// newShardedClusterWith is newShardedCluster with setup called on each node before it starts
// (to add arguments to its extra).
func newShardedClusterWith(t *testing.T, shards, perShard int, assign bool, setup func(*raftNode)) *shardedCluster {
	t.Helper()
	sc := &shardedCluster{}
	id := 0
	for s := range shards {
		var group []*raftNode
		for i := range perShard {
			id++
			n := &raftNode{id: fmt.Sprintf("n%d", id), dir: t.TempDir(), raftPort: freePort(t)}
			n.extra = []string{"--cluster-enabled", "yes", "--cluster-shard-id", fmt.Sprintf("s%d", s+1),
				"--cluster-meta-port", strconv.Itoa(freePort(t))}
			if id == 1 {
				n.extra = append(n.extra, "--cluster-meta-bootstrap", "yes")
			}
			if setup != nil {
				setup(n)
			}
			n.start(t, i == 0)
			t.Cleanup(n.stop)
			group = append(group, n)
		}
		waitLeader(t, group[:1])
		for _, nd := range group[1:] {
			require.NoError(t, group[0].c.Do(context.Background(), "RAFT", "ADD", nd.id, "127.0.0.1:"+strconv.Itoa(nd.raftPort)).Err())
		}
		waitLeader(t, group)
		sc.shards = append(sc.shards, group)
	}
	first := sc.shards[0][0]
	waitUntil(t, "the meta group's leader", 20*time.Second, func() bool {
		return strings.Contains(fmt.Sprint(first.c.Do(context.Background(), "CLUSTERX", "STATUS").Val()), "meta_state leader")
	})
	port := strings.Split(first.srv.Addr, ":")[1]
	for _, n := range sc.all()[1:] {
		retryElections(t, "JOIN "+n.id, func() error {
			return n.c.Do(context.Background(), "CLUSTERX", "JOIN", "127.0.0.1", port).Err()
		})
	}
	if assign {
		for s := range shards {
			shard := fmt.Sprintf("s%d", s+1)
			args := []any{"CLUSTERX", "ASSIGN", shard, s * 16384 / shards, (s+1)*16384/shards - 1}
			retryElections(t, "ASSIGN "+shard, func() error {
				err := sc.all()[s%len(sc.all())].c.Do(context.Background(), args...).Err()
				if err != nil && strings.HasSuffix(strings.TrimSpace(err.Error()), "already owned by shard "+shard) {
					return nil // a retry of an assignment that did commit
				}
				return err
			})
		}
		sc.waitOK(t)
	}
	return sc
}

// waitOK waits until every node reports cluster_state:ok with every shard's leader known.
// terms sums the Raft term of every shard (the highest any of its nodes reports): a growth
// between two readings counts the elections in between.
func (sc *shardedCluster) terms(t *testing.T) int {
	total := 0
	for _, sh := range sc.shards {
		best := 0
		for _, n := range sh {
			if term, err := strconv.Atoi(n.status(t)["term"]); err == nil && term > best {
				best = term
			}
		}
		total += best
	}
	return total
}

// retryElections runs f until it succeeds, retrying the errors of an election (two cores
// shared by six nodes and the test can starve a leader's heartbeats): -TRYAGAIN,
// -CLUSTERDOWN, a leadership lost while committing, a change sent to a former leader.
func retryElections(t *testing.T, what string, f func() error) {
	t.Helper()
	var err error
	waitUntil(t, what, 30*time.Second, func() bool {
		err = f()
		if err == nil {
			return true
		}
		msg := err.Error()
		for _, transient := range []string{"TRYAGAIN", "CLUSTERDOWN", "leadership lost", "not the leader", "no longer", "no leader"} {
			if strings.Contains(msg, transient) {
				return false
			}
		}
		require.NoError(t, err, what)
		return true
	})
}

// explain logs every node's CLUSTERX STATUS and RAFT STATUS if the test failed: tests defer
// it (cleanups would run after restarted nodes' own cleanups had stopped them).
func (sc *shardedCluster) explain(t *testing.T) {
	if !t.Failed() {
		return
	}
	for _, n := range sc.all() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cs, err1 := n.c.Do(ctx, "CLUSTERX", "STATUS").Result()
		rs, err2 := n.c.Do(ctx, "RAFT", "STATUS").Result()
		t.Logf("%s: CLUSTERX STATUS %v %v; RAFT STATUS %v %v", n.id, cs, err1, rs, err2)
		cancel()
	}
}

func (sc *shardedCluster) waitOK(t *testing.T) {
	t.Helper()
	// Every node's copy of the map must also be the same (epoch and moves in progress): a
	// node whose copy lags a finished move still redirects the moved slots to their old owner.
	waitUntil(t, "cluster_state:ok and the same slot map on every node", 30*time.Second, func() bool {
		view := ""
		for i, n := range sc.all() {
			if !strings.Contains(n.c.ClusterInfo(context.Background()).Val(), "cluster_state:ok") {
				return false
			}
			st, err := n.c.Do(context.Background(), "CLUSTERX", "STATUS").StringSlice()
			if err != nil {
				return false
			}
			v := ""
			for j := 0; j+1 < len(st); j += 2 {
				if st[j] == "epoch" || st[j] == "migrations" {
					v += st[j] + "=" + st[j+1] + " "
				}
			}
			if i > 0 && v != view {
				return false
			}
			view = v
		}
		return true
	})
}

func (sc *shardedCluster) addrs() []string {
	var out []string
	for _, n := range sc.all() {
		out = append(out, n.srv.Addr)
	}
	return out
}

// clusterClient is a go-redis ClusterClient on the cluster that reloads its slot map every
// second (its default, 60 s, is for Redis Cluster's gossip-driven failovers; docs/cluster.md).
func (sc *shardedCluster) clusterClient(t *testing.T) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: sc.addrs(), Protocol: 2, DisableIdentity: true,
		MaxRedirects: 16, ClusterStateReloadInterval: time.Second, ReadTimeout: 20 * time.Second})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// TestShardedRouting: three single-node shards. Slots without an owner answer CLUSTERDOWN,
// assignments cannot overlap, every node describes the same three shards, keys of other
// shards are redirected with -MOVED, multi-key commands need one slot, and a go-redis
// ClusterClient works across the shards.
func TestShardedRouting(t *testing.T) {
	ctx := context.Background()
	sc := newShardedCluster(t, 3, 1, false)
	n1 := sc.shards[0][0]
	require.EqualError(t, n1.c.Get(ctx, "foo").Err(), "CLUSTERDOWN Hash slot not served")
	require.Contains(t, n1.c.ClusterInfo(ctx).Val(), "cluster_state:fail")
	require.NoError(t, n1.c.Do(ctx, "CLUSTERX", "ASSIGN", "s1", 0, 5460).Err())
	err := sc.shards[1][0].c.Do(ctx, "CLUSTERX", "ASSIGN", "s2", 5000, 10921).Err()
	require.ErrorContains(t, err, "slot 5000 is already owned by shard s1")
	require.ErrorContains(t, n1.c.Do(ctx, "CLUSTERX", "ASSIGN", "s9", 0, 1).Err(), "unknown shard s9")
	require.ErrorContains(t, n1.c.Do(ctx, "CLUSTERX", "ASSIGN", "s2", 5, 1).Err(), "invalid slot range")
	// Assigned from a node that is not the meta leader: forwarded.
	require.NoError(t, sc.shards[2][0].c.Do(ctx, "CLUSTERX", "ASSIGN", "s2", 5461, 10921).Err())
	require.NoError(t, sc.shards[1][0].c.Do(ctx, "CLUSTERX", "ASSIGN", "s3", 10922, 16383).Err())
	sc.waitOK(t)

	// Every node: the same three ranges, each with its shard's node as master.
	for _, n := range sc.all() {
		slots, err := n.c.ClusterSlots(ctx).Result()
		require.NoError(t, err)
		require.Len(t, slots, 3, "CLUSTER SLOTS on %s", n.id)
		for i, want := range [][2]int{{0, 5460}, {5461, 10921}, {10922, 16383}} {
			require.Equal(t, want[0], int(slots[i].Start))
			require.Equal(t, want[1], int(slots[i].End))
			require.Equal(t, sc.shards[i][0].srv.Addr, slots[i].Nodes[0].Addr)
		}
		nodes := n.c.ClusterNodes(ctx).Val()
		require.Equal(t, 3, strings.Count(nodes, "master"), nodes)
		require.Equal(t, 1, strings.Count(nodes, "myself"), nodes)
		require.Contains(t, n.c.ClusterInfo(ctx).Val(), "cluster_size:3")
	}
	// foo is in slot 12182 (s3), bar in 5061 (s1).
	require.NoError(t, n1.c.Set(ctx, "bar", "1", 0).Err())
	require.EqualError(t, n1.c.Set(ctx, "foo", "1", 0).Err(), "MOVED 12182 "+sc.shards[2][0].srv.Addr)
	require.EqualError(t, sc.shards[1][0].c.Get(ctx, "bar").Err(), "MOVED 5061 "+n1.srv.Addr)
	require.EqualError(t, n1.c.MSet(ctx, "bar", "1", "{bar}x", "2", "foo", "3").Err(), "CROSSSLOT Keys in request don't hash to the same slot")
	require.NoError(t, n1.c.MSet(ctx, "bar", "1", "{bar}x", "2").Err())
	require.EqualError(t, n1.c.Do(ctx, "GCRA.RESET", "bar", "foo").Err(), "CROSSSLOT Keys in request don't hash to the same slot")
	require.EqualError(t, n1.c.Eval(ctx, "return 1", []string{"bar", "foo"}).Err(), "CROSSSLOT Keys in request don't hash to the same slot")
	// A transaction's keys must share one slot: EXEC refuses it and discards it otherwise.
	tx := n1.c.TxPipeline()
	tx.Set(ctx, "bar", "tx", 0)
	tx.Set(ctx, "{bar}y", "tx", 0)
	_, err = tx.Exec(ctx)
	require.NoError(t, err)
	tx = n1.c.TxPipeline()
	tx.Set(ctx, "bar", "tx2", 0)
	tx.Set(ctx, "{user:2}", "tx2", 0) // slot 6777: s2
	_, err = tx.Exec(ctx)
	require.Error(t, err)
	require.Equal(t, "tx", n1.c.Get(ctx, "bar").Val())
	tx = n1.c.TxPipeline()
	tx.Set(ctx, "bar", "tx3", 0)
	tx.Set(ctx, "{ba}r", "tx3", 0) // another slot of s1
	_, err = tx.Exec(ctx)
	require.ErrorContains(t, err, "CROSSSLOT")
	require.Equal(t, "tx", n1.c.Get(ctx, "bar").Val())
	// A script's undeclared keys must be local too (Redis Cluster's errors).
	err = n1.c.Eval(ctx, "return redis.call('set', 'foo', 1)", nil).Err()
	require.ErrorContains(t, err, "Script attempted to access a non local key in a cluster node")
	require.NoError(t, n1.c.Eval(ctx, "return redis.call('set', 'bar', 2)", nil).Err())
	err = n1.c.Eval(ctx, "return redis.call('mset', 'bar', 1, 'foo', 2)", nil).Err()
	require.ErrorContains(t, err, "Script attempted to access keys that do not hash to the same slot")
	require.Equal(t, int64(0), sc.shards[2][0].c.Exists(ctx, "foo").Val())
	// GCRA.LIMITALL's keys (every third argument) route it; keys of different slots are refused.
	require.EqualError(t, n1.c.Do(ctx, "GCRA.LIMITALL", 2, "bar", 1000, 5, "foo", 1000, 5).Err(), "CROSSSLOT Keys in request don't hash to the same slot")
	require.EqualError(t, n1.c.Do(ctx, "GCRA.LIMITALL", 2, "{foo}a", 1000, 5, "{foo}b", 1000, 5).Err(), "MOVED 12182 "+sc.shards[2][0].srv.Addr)
	// A named limiter lives on the slot of its name.
	require.EqualError(t, n1.c.Do(ctx, "RATELIMIT.CREATE", "foo", 10, 1000, "ALGO", "token_bucket").Err(),
		"MOVED 12182 "+sc.shards[2][0].srv.Addr)

	// A cluster client: values land on their shards and read back; each GCRA key admits its
	// burst exactly, wherever it lives.
	cc := sc.clusterClient(t)
	for i := range 300 {
		require.NoError(t, cc.Set(ctx, "key:"+strconv.Itoa(i), i, 0).Err())
	}
	for i := range 300 {
		require.Equal(t, strconv.Itoa(i), cc.Get(ctx, "key:"+strconv.Itoa(i)).Val())
	}
	total := 0
	for _, sh := range sc.shards {
		n := sh[0].c.DBSize(ctx).Val()
		require.Greater(t, n, int64(50), "shard of %s holds %d keys", sh[0].id, n)
		total += int(n)
	}
	require.Equal(t, 300+3, total) // and bar, {bar}x, {bar}y
	for i := range 30 {
		key := "limit:" + strconv.Itoa(i)
		allowed := 0
		for range 8 {
			v, err := cc.Do(ctx, "GCRA.LIMIT", key, 3600000, 5).Slice()
			require.NoError(t, err)
			if v[0].(int64) == 0 { // redis-cell's reply: 0 = allowed, 1 = limited
				allowed++
			}
		}
		require.Equal(t, 5, allowed, key)
	}
	for i, want := range []int64{0, 0, 1} { // a cluster client routes GCRA.LIMITALL by its keys
		v, err := cc.Do(ctx, "GCRA.LIMITALL", 2, "{foo}a", 3600000, 2, "{foo}b", 3600000, 5).Slice()
		require.NoError(t, err)
		require.Equal(t, want, v[0], "call %d", i)
	}
	require.NoError(t, cc.Do(ctx, "RATELIMIT.CREATE", "api", 2, 60000, "ALGO", "sliding_window").Err())
	for i, want := range []int64{1, 1, 0} {
		v, err := cc.Do(ctx, "RATELIMIT.CHECK", "api", "user:1").Slice()
		require.NoError(t, err)
		require.Equal(t, want, v[0], "check %d", i)
	}
	require.Len(t, sc.shards[0][0].c.Do(ctx, "RATELIMIT.LIST").Val(), 0, "the limiter is on api's shard only")

	// redis-cli -c follows -MOVED from any node to the owner of each key.
	if cli := redisCLI(t, n1.srv.Addr); cli != nil {
		require.Equal(t, "OK", cli("SET", "foo", "from-cli")) // slot 12182: s3
		require.Equal(t, "from-cli", cli("GET", "foo"))
		require.Equal(t, "from-cli", sc.shards[2][0].c.Get(ctx, "foo").Val())
		require.Contains(t, cli("GCRA.LIMIT", "cli:{foo}", "60000", "3"), "0\n3\n2")
	}

	// CLUSTERX without cluster-enabled.
	plain := newGroup(t, 1)[0]
	require.EqualError(t, plain.c.Do(ctx, "CLUSTERX", "MAP").Err(), "ERR This instance has cluster support disabled (cluster-enabled no)")
}

// TestShardedRestart: the slot map and every shard's data survive a restart of all nodes.
func TestShardedRestart(t *testing.T) {
	ctx := context.Background()
	sc := newShardedCluster(t, 2, 1, true)
	cc := sc.clusterClient(t)
	for i := range 100 {
		require.NoError(t, cc.Set(ctx, "k"+strconv.Itoa(i), i, 0).Err())
	}
	_ = cc.Close()
	for _, n := range sc.all() {
		n.stop()
	}
	for i, n := range sc.all() {
		n.start(t, i == 0)
	}
	sc.waitOK(t)
	cc = sc.clusterClient(t)
	for i := range 100 {
		require.Equal(t, strconv.Itoa(i), cc.Get(ctx, "k"+strconv.Itoa(i)).Val())
	}
	m := sc.shards[1][0].c.Do(ctx, "CLUSTERX", "MAP").String()
	require.Contains(t, m, `"epoch":2`)
}

// TestShardedFailover: three shards of three nodes; a go-redis ClusterClient hammers GCRA keys
// in every shard while shard s2's leader is stopped. The client follows the new leader, no
// key admits more than its burst, and every node ends up describing the new leader.
func TestShardedFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 9 nodes")
	}
	ctx := context.Background()
	sc := newShardedCluster(t, 3, 3, true)
	cc := sc.clusterClient(t)
	// 400 per 1000 hours: one unit refills every 2.5 hours, none during the test.
	const burst, keys, workers, period = 400, 24, 8, 3600000000
	load := startGCRALoad(cc, keys, workers, period, burst, 0, func(k int) string { return "fo:" + strconv.Itoa(k) })
	// Stop s2's leader a quarter of the way through.
	waitUntil(t, "a quarter of the admissions", 30*time.Second, func() bool { return load.total.Load() >= burst*keys/4 })
	old := waitLeader(t, sc.shards[1])
	old.stop()
	var rest []*raftNode
	for _, n := range sc.shards[1] {
		if n != old {
			rest = append(rest, n)
		}
	}
	nl := waitLeader(t, rest)
	waitUntil(t, "every live node to show s2's new leader", 20*time.Second, func() bool {
		for _, n := range sc.all() {
			if n == old {
				continue
			}
			slots, err := n.c.ClusterSlots(ctx).Result()
			if err != nil || len(slots) != 3 || slots[1].Nodes[0].Addr != nl.srv.Addr {
				return false
			}
		}
		return true
	})
	// redis-cli -c, from a node of another shard, reaches s2's new leader.
	if cli := redisCLI(t, sc.shards[0][0].srv.Addr); cli != nil {
		require.Equal(t, "OK", cli("SET", "{user:2}:after-failover", "x")) // slot 6777: s2
		require.Equal(t, "x", nl.c.Get(ctx, "{user:2}:after-failover").Val())
	}
	load.finish(t, workers)
	t.Logf("%d errors retried during the failover", load.errs.Load())
}

// TestReplicationScriptOnFollower: EVAL and FCALL carry none of Redis's write flags, but a
// follower must not run them (its store would change outside the log): they are redirected to
// the leader, even for a READONLY connection; EVAL_RO runs there.
func TestReplicationScriptOnFollower(t *testing.T) {
	ctx := context.Background()
	nodes := newGroup(t, 2)
	leader := waitLeader(t, nodes)
	var follower *raftNode
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	require.NoError(t, leader.c.Set(ctx, "k", "v", 0).Err())
	err := follower.c.Eval(ctx, "return redis.call('set', KEYS[1], 'x')", []string{"k"}).Err()
	require.ErrorContains(t, err, "MOVED 7629 "+leader.srv.Addr)
	conn := follower.c.Conn()
	defer conn.Close()
	require.NoError(t, conn.ReadOnly(ctx).Err())
	require.ErrorContains(t, conn.Eval(ctx, "return redis.call('set', KEYS[1], 'x')", []string{"k"}).Err(), "MOVED")
	waitApplied(t, leader, nodes)
	require.Equal(t, "v", conn.EvalRO(ctx, "return redis.call('get', KEYS[1])", []string{"k"}).Val())
	require.Equal(t, "v", leader.c.Get(ctx, "k").Val())
}

// TestShardedMigration moves a slot range from s1 to s2 while clients hammer GCRA keys in it:
// no key admits more than its burst across the hand-off, values, TTLs, GCRA state and named
// limiters (definition, per-key state, totals) arrive on s2 and on its follower, s1 and its
// follower drop them, and both sides then redirect the slots to s2.
func TestShardedMigration(t *testing.T) {
	ctx := context.Background()
	sc := newShardedCluster(t, 2, 2, true) // s1: 0-8191, s2: 8192-16383
	cc := sc.clusterClient(t)
	// {user:2} is in slot 8106 and {user:13} in 4139 (s1); both move in 4000-8191.
	require.Equal(t, int64(6777), cc.ClusterKeySlot(ctx, "{user:2}").Val())
	require.Equal(t, int64(4572), cc.ClusterKeySlot(ctx, "{user:13}").Val())
	require.NoError(t, cc.Set(ctx, "{user:2}:name", "ada", 0).Err())
	require.NoError(t, cc.Set(ctx, "{user:2}:session", "x", time.Hour).Err())
	require.NoError(t, cc.HSet(ctx, "{user:13}:profile", "a", 1, "b", 2).Err())
	require.NoError(t, cc.Do(ctx, "RATELIMIT.CREATE", "{user:2}:api", 5, 3600000, "ALGO", "sliding_window").Err())
	for range 3 {
		require.NoError(t, cc.Do(ctx, "RATELIMIT.CHECK", "{user:2}:api", "k").Err())
	}
	// Concurrency leases move with their ids: a client holding one releases it on the new owner.
	require.NoError(t, cc.Do(ctx, "RATELIMIT.CREATE", "{user:2}:jobs", 3, 3600000, "ALGO", "concurrency").Err())
	var leases []int64
	for range 2 {
		v, err := cc.Do(ctx, "RATELIMIT.CHECK", "{user:2}:jobs", "k").Int64Slice()
		require.NoError(t, err)
		leases = append(leases, v[5])
	}
	for i := range 500 {
		require.NoError(t, cc.Set(ctx, "bulk:{user:13}:"+strconv.Itoa(i), i, 0).Err())
	}
	const burst, keys, workers, period = 300, 8, 6, 3600000000
	gkey := func(k int) string { return "{user:2}:gcra:" + strconv.Itoa(k) }
	terms := sc.terms(t)
	load := startGCRALoad(cc, keys, workers, period, burst, 0, gkey)
	waitUntil(t, "a third of the admissions", 30*time.Second, func() bool { return load.total.Load() >= burst*keys/3 })
	s1, s2 := sc.shards[0], sc.shards[1]
	require.NoError(t, s2[0].c.Do(ctx, "CLUSTERX", "MIGRATE", 4000, 8191, "s2").Err())
	require.ErrorContains(t, s1[0].c.Do(ctx, "CLUSTERX", "MIGRATE", 4000, 4100, "s2").Err(), "being moved already")
	waitUntil(t, "the move to complete on every node", 60*time.Second, func() bool {
		for _, n := range sc.all() {
			slots, err := n.c.ClusterSlots(ctx).Result()
			if err != nil || len(slots) != 2 || slots[0].End != 3999 || slots[1].Start != 4000 {
				return false
			}
		}
		return true
	})
	// Nothing is stopped, so no reply is lost, unless this busy machine starved a leader into
	// an election: then each worker's call in flight may have been admitted without its reply
	// (go-redis retries the -TRYAGAIN it gets, so the test never sees it).
	elections := sc.terms(t) - terms
	if elections > 0 {
		t.Logf("%d elections during the move", elections)
	}
	load.finish(t, workers*elections)
	// The data is on s2 (leader and follower), with its TTL; s1 dropped it.
	require.Equal(t, "ada", cc.Get(ctx, "{user:2}:name").Val())
	ttl := cc.TTL(ctx, "{user:2}:session").Val()
	require.True(t, ttl > 59*time.Minute && ttl <= time.Hour, "TTL %v", ttl)
	require.Equal(t, map[string]string{"a": "1", "b": "2"}, cc.HGetAll(ctx, "{user:13}:profile").Val())
	v, err := cc.Do(ctx, "RATELIMIT.CHECK", "{user:2}:api", "k").Slice()
	require.NoError(t, err)
	require.Equal(t, []any{int64(1), int64(1)}, v[:2], "allowed, remaining 5-4: the key state moved")
	stats := fmt.Sprint(cc.Do(ctx, "RATELIMIT.STATS", "{user:2}:api").Val())
	require.Contains(t, stats, "total_allowed 4")
	require.Equal(t, int64(1), cc.Do(ctx, "RATELIMIT.RELEASE", "{user:2}:jobs", "k", leases[0]).Val(), "the lease moved with its id")
	lv, err := cc.Do(ctx, "RATELIMIT.CHECK", "{user:2}:jobs", "k").Int64Slice()
	require.NoError(t, err)
	require.Equal(t, []int64{1, 1, 0, 3, 1}, lv[:5], "one lease left in flight, one new")
	require.Greater(t, lv[5], leases[1], "ids keep ascending on the new owner")
	for i := range 500 {
		require.Equal(t, strconv.Itoa(i), cc.Get(ctx, "bulk:{user:13}:"+strconv.Itoa(i)).Val())
	}
	leader2 := waitLeader(t, s2)
	waitApplied(t, leader2, s2)
	require.Equal(t, debugDigest(t, s2[0]), debugDigest(t, s2[1]), "s2's nodes differ")
	leader1 := waitLeader(t, s1)
	waitUntil(t, "s1 to drop the moved keys", 20*time.Second, func() bool {
		for _, n := range s1 {
			if n.c.Exists(ctx, "{user:2}:name").Err() == nil || n.c.DBSize(ctx).Val() != 0 && slotKeys(t, n, 4000, 8191) {
				return false
			}
		}
		return true
	})
	_ = leader1
	require.EqualError(t, s1[0].c.Get(ctx, "{user:2}:name").Err(), "MOVED 6777 "+leader2.srv.Addr)
	if cli := redisCLI(t, s1[0].srv.Addr); cli != nil {
		require.Equal(t, "ada", cli("GET", "{user:2}:name")) // redirected to the new owner
	}
	require.Contains(t, fmt.Sprint(s1[0].c.Do(ctx, "CLUSTERX", "STATUS").Val()), "epoch 3")
}

// slotKeys reports whether n holds a key in slots [lo, hi].
func slotKeys(t *testing.T, n *raftNode, lo, hi int64) bool {
	ctx := context.Background()
	keys, err := n.c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	for _, k := range keys {
		if s := n.c.ClusterKeySlot(ctx, k).Val(); s >= lo && s <= hi {
			return true
		}
	}
	return false
}

// TestShardedRebalance: REBALANCE assigns a fresh cluster's slots evenly; a shard added later
// gets its share moved to it from the others, with the keys.
func TestShardedRebalance(t *testing.T) {
	ctx := context.Background()
	sc := newShardedCluster(t, 2, 1, false)
	defer sc.explain(t)
	n1 := sc.shards[0][0]
	require.Equal(t, int64(2), n1.c.Do(ctx, "CLUSTERX", "REBALANCE").Val())
	sc.waitOK(t)
	cc := sc.clusterClient(t)
	for i := range 300 {
		require.NoError(t, cc.Set(ctx, "rb:"+strconv.Itoa(i), i, 0).Err())
	}
	// A third shard: one node, its own group, joined to the cluster.
	n3 := &raftNode{id: "n3", dir: t.TempDir(), raftPort: freePort(t)}
	n3.extra = []string{"--cluster-enabled", "yes", "--cluster-shard-id", "s3", "--cluster-meta-port", strconv.Itoa(freePort(t))}
	n3.start(t, true)
	t.Cleanup(n3.stop)
	waitLeader(t, []*raftNode{n3})
	require.NoError(t, n3.c.Do(ctx, "CLUSTERX", "JOIN", "127.0.0.1", strings.Split(n1.srv.Addr, ":")[1]).Err())
	sc.shards = append(sc.shards, []*raftNode{n3})
	waitUntil(t, "s3 in the map", 10*time.Second, func() bool {
		return strings.Contains(n3.c.Do(ctx, "CLUSTERX", "MAP").String(), `"s3"`) // n3 has the map: it knows the meta leader
	})
	moves, err := n3.c.Do(ctx, "CLUSTERX", "REBALANCE").Int()
	require.NoError(t, err)
	require.GreaterOrEqual(t, moves, 2)
	waitUntil(t, "the moves to finish", 30*time.Second, func() bool {
		slots, err := n1.c.ClusterSlots(ctx).Result()
		if err != nil {
			return false
		}
		per := map[string]int{}
		for _, s := range slots {
			per[s.Nodes[0].Addr] += s.End - s.Start + 1
		}
		for _, n := range per {
			if n < 5461 || n > 5462 {
				return false
			}
		}
		return len(per) == 3 && strings.Contains(fmt.Sprint(n1.c.Do(ctx, "CLUSTERX", "STATUS").Val()), "migrations 0")
	})
	sc.waitOK(t)
	for i := range 300 {
		v, err := cc.Get(ctx, "rb:"+strconv.Itoa(i)).Result()
		require.NoError(t, err, "GET rb:%d", i)
		require.Equal(t, strconv.Itoa(i), v)
	}
	require.Greater(t, n3.c.DBSize(ctx).Val(), int64(50))
	total := int64(0)
	for _, sh := range sc.shards {
		total += sh[0].c.DBSize(ctx).Val()
	}
	require.Equal(t, int64(300), total, "every key once")
	_, err = n1.c.Do(ctx, "CLUSTERX", "REBALANCE").Int()
	require.NoError(t, err)
}

// TestShardedMigrationFailover stops a leader in the middle of a slot move: first the source's
// (its new leader starts the move again), then, moving the range back, the target's (the
// source retries against the new target leader). Every key arrives, and GCRA keys hammered
// throughout admit exactly their burst.
func TestShardedMigrationFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 6 nodes")
	}
	ctx := context.Background()
	sc := newShardedCluster(t, 2, 3, true) // s1: 0-8191, s2: 8192-16383
	defer sc.explain(t)
	cc := sc.clusterClient(t)
	const nkeys = 40000
	for i := 0; i < nkeys; i += 1000 {
		// Retried whole: an election on this busy machine can leave a batch's outcome
		// unknown (-TRYAGAIN), and SET may run twice.
		waitUntil(t, "a batch of SETs", 20*time.Second, func() bool {
			pipe := cc.Pipeline()
			for j := i; j < i+1000; j++ {
				pipe.Set(ctx, "mf:{user:2}:"+strconv.Itoa(j), j, 0) // slot 6777
			}
			_, err := pipe.Exec(ctx)
			return err == nil
		})
	}
	const burst, keys, workers, period = 200, 4, 4, 3600000000
	gkey := func(k int) string { return "{user:2}:mfgcra:" + strconv.Itoa(k) }
	// Paced so that the burst lasts through both moves.
	load := startGCRALoad(cc, keys, workers, period, burst, 5*time.Millisecond, gkey)
	move := func(to string, victim []*raftNode, target []*raftNode) {
		t.Helper()
		waitUntil(t, "MIGRATE to be accepted", 20*time.Second, func() bool {
			err := sc.shards[1][1].c.Do(ctx, "CLUSTERX", "MIGRATE", 6000, 7000, to).Err()
			if err != nil && strings.HasPrefix(err.Error(), "TRYAGAIN") {
				return false // a meta election (its voters are s1's nodes)
			}
			require.NoError(t, err)
			return true
		})
		leader := waitLeader(t, victim)
		// Stop the victim's leader once the copy has begun on the target.
		waitUntil(t, "the copy to begin", 20*time.Second, func() bool {
			for _, n := range target { // its leader; followers answer KEYS with -MOVED
				if keys, err := n.c.Keys(ctx, "mf:*").Result(); err == nil && len(keys) > 0 {
					return true
				}
			}
			return false
		})
		leader.stop()
		var rest []*raftNode
		for _, n := range victim {
			if n != leader {
				rest = append(rest, n)
			}
		}
		waitLeader(t, rest)
		waitUntil(t, "the move to complete", 60*time.Second, func() bool {
			slots, err := rest[0].c.ClusterSlots(ctx).Result()
			if err != nil {
				return false
			}
			for _, s := range slots {
				if s.Start <= 6777 && 6777 <= s.End {
					return strings.Contains(fmt.Sprint(rest[0].c.Do(ctx, "CLUSTERX", "MAP").Val()), `"next_migration"`) &&
						!strings.Contains(fmt.Sprint(rest[0].c.Do(ctx, "CLUSTERX", "MAP").Val()), `"migrations"`) &&
						s.Nodes[0].Addr != "" && shardOf(sc, s.Nodes[0].Addr) == to
				}
			}
			return false
		})
		leader.start(t, false) // back as a follower of its shard
		sc.waitOK(t)
	}
	s1, s2 := sc.shards[0], sc.shards[1]
	// s1 -> s2, stopping s1's (the source's) leader during the copy; then back, stopping
	// s1's leader again: this time it is the target's.
	move("s2", s1, s2)
	for i := 0; i < nkeys; i += 997 {
		require.Equal(t, strconv.Itoa(i), cc.Get(ctx, "mf:{user:2}:"+strconv.Itoa(i)).Val())
	}
	move("s1", s1, s1)
	load.finish(t, workers)
	for i := range nkeys {
		if i%97 == 0 {
			require.Equal(t, strconv.Itoa(i), cc.Get(ctx, "mf:{user:2}:"+strconv.Itoa(i)).Val())
		}
	}
}

// shardOf names the shard of the node with client address addr.
func shardOf(sc *shardedCluster, addr string) string {
	for i, sh := range sc.shards {
		for _, n := range sh {
			if n.srv.Addr == addr {
				return "s" + strconv.Itoa(i+1)
			}
		}
	}
	return ""
}

// redisCLI returns a function running `redis-cli -c` against addr, or nil (the test's
// redis-cli part skipped) when redis-cli is not installed and HOTKV_REQUIRE_REDIS is unset.
func redisCLI(t *testing.T, addr string) func(args ...string) string {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		if os.Getenv("HOTKV_REQUIRE_REDIS") != "" {
			t.Fatal("redis-cli is required (HOTKV_REQUIRE_REDIS is set) but not installed")
		}
		return nil
	}
	host, port, _ := net.SplitHostPort(addr)
	return func(args ...string) string {
		out, err := exec.Command("redis-cli", append([]string{"-c", "-h", host, "-p", port}, args...)...).CombinedOutput()
		require.NoError(t, err, string(out))
		return strings.TrimSpace(string(out))
	}
}

// gcraLoad is workers hammering GCRA.LIMIT on keys with one period and burst through a cluster
// client, counting the admissions they see per key.
type gcraLoad struct {
	cc            *redis.ClusterClient
	key           func(int) string
	period, burst int64
	workers       int
	admitted      []atomic.Int64
	// unknown counts, per key, the calls whose outcome the client cannot know (a connection
	// error, or -TRYAGAIN "decision outcome unknown" after an election on this busy machine):
	// each may have been admitted without its reply arriving.
	unknown     []atomic.Int64
	total, errs atomic.Int64
	stop        chan struct{}
	wg          sync.WaitGroup
}

// startGCRALoad starts the workers; pause spreads each worker's calls out.
func startGCRALoad(cc *redis.ClusterClient, keys, workers int, period, burst int64, pause time.Duration, key func(int) string) *gcraLoad {
	g := &gcraLoad{cc: cc, key: key, period: period, burst: burst, workers: workers,
		admitted: make([]atomic.Int64, keys), unknown: make([]atomic.Int64, keys), stop: make(chan struct{})}
	for w := range workers {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for i := w; ; i++ {
				select {
				case <-g.stop:
					return
				default:
				}
				if _, err := g.call(i % keys); err != nil {
					g.errs.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				time.Sleep(pause)
			}
		}()
	}
	return g
}

// call sends one GCRA.LIMIT for key k and counts it if allowed (reply field 0: 0 = allowed).
func (g *gcraLoad) call(k int) (allowed bool, err error) {
	v, err := g.cc.Do(context.Background(), "GCRA.LIMIT", g.key(k), g.period, g.burst).Slice()
	if err != nil {
		// Refusals that say the command did not run: the slot is moving, the shard has no
		// leader, or a redirection the client did not follow to its end.
		definite := false
		for _, p := range []string{"TRYAGAIN Slot", "CLUSTERDOWN", "MOVED", "ASK"} {
			definite = definite || strings.HasPrefix(err.Error(), p)
		}
		if !definite {
			g.unknown[k].Add(1)
		}
		return false, err
	}
	if v[0].(int64) == 0 {
		g.admitted[k].Add(1)
		g.total.Add(1)
		return true, nil
	}
	return false, nil
}

// finish keeps calling until every key denies (its burst is spent on its current owner),
// stops the workers, and checks each key's admissions: exactly the burst, less at most lost
// replies (one per worker, for a request whose reply a stopped leader never sent).
func (g *gcraLoad) finish(t *testing.T, lost int) {
	t.Helper()
	var last string // why the last round did not end it, for the failure message
	defer func() {
		if t.Failed() {
			t.Logf("the last round of finish: %s", last)
		}
	}()
	waitUntil(t, "every key to deny", 60*time.Second, func() bool {
		for k := range g.admitted {
			if allowed, err := g.call(k); err != nil || allowed {
				if why := fmt.Sprintf("key %s: allowed %v, error %v", g.key(k), allowed, err); why != last {
					t.Logf("finish: %s", why)
					last = why
				}
				return false
			}
		}
		return true
	})
	close(g.stop)
	g.wg.Wait()
	for k := range g.admitted {
		got := g.admitted[k].Load()
		require.LessOrEqual(t, got, g.burst, "key %s", g.key(k))
		require.GreaterOrEqual(t, got, g.burst-int64(lost)-g.unknown[k].Load(), "key %s (%d calls of unknown outcome)", g.key(k), g.unknown[k].Load())
	}
}

// debugDigest is DEBUG DIGEST on n, retried while a snapshot of n's store is being encoded
// (the digest walks the store the same way, one walk at a time).
func debugDigest(t *testing.T, n *raftNode) string {
	t.Helper()
	var d string
	waitUntil(t, "DEBUG DIGEST on "+n.id, 20*time.Second, func() bool {
		v, err := n.c.Do(context.Background(), "DEBUG", "DIGEST").Text()
		if err != nil && strings.Contains(err.Error(), "snapshot walk is already in progress") {
			return false
		}
		require.NoError(t, err)
		d = v
		return true
	})
	return d
}

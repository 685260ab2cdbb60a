package chaos

// The harness of the sharded chaos test (sharded_test.go): a cluster of two shards of three
// real hotkv-server processes each. Every shard is a group (raftgroup_test.go) with its own
// faultproxy.Network carrying its nodes' Raft links, so a partition or a SIGSTOP of one
// shard's leader leaves the other shard alone; the meta group's links (cluster-meta-port) and
// the slot moves' streams (client ports) are direct.

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/cluster"
	"github.com/hotkv/hotkv/internal/faultproxy"
	"github.com/hotkv/hotkv/internal/testutil/procs"
)

// shardedCluster is the two shards: shard k (0-based) is "s<k+1>", its nodes n<3k+1> to
// n<3k+3>; n1 bootstrapped the meta group.
type shardedCluster struct {
	t      *testing.T
	shards []*group
}

// shardID names shard k (0-based).
func shardID(k int) string { return "s" + strconv.Itoa(k+1) }

// startShardedCluster starts the cluster as docs/cluster.md describes it by hand: every
// node with cluster-enabled and its shard id, n1 with cluster-meta-bootstrap, each shard's
// first node with raft-bootstrap and RAFT ADD of the other two; then CLUSTERX JOIN of every
// node but n1, alternating between the shards so that the meta group's three voters (the
// first three members) are n1, n4 and n2, not one shard's nodes only; then CLUSTERX
// REBALANCE (s1 gets 0-8191, s2 8192-16383), and it waits for cluster_state:ok everywhere.
func startShardedCluster(t *testing.T, shards int) *shardedCluster {
	t.Helper()
	redis.SetLogger(quietLogger{})
	sc := &shardedCluster{t: t}
	for k := range shards {
		g := &group{t: t, admins: map[string]*redis.Client{}}
		for i := range 3 {
			p, err := procs.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			g.raft = append(g.raft, "127.0.0.1:"+strconv.Itoa(p))
			g.ids = append(g.ids, "n"+strconv.Itoa(3*k+i+1))
		}
		nw, err := faultproxy.NewNetwork(g.raft)
		if err != nil {
			t.Fatal(err)
		}
		g.net = nw
		t.Cleanup(nw.Close)
		t.Cleanup(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, c := range g.admins {
				_ = c.Close()
			}
		})
		for i := range 3 {
			metaPort, err := procs.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := strings.Cut(g.raft[i], ":")
			args := []string{"--raft-port", port, "--raft-node-id", g.ids[i], "--enable-debug-command", "yes",
				"--cluster-enabled", "yes", "--cluster-shard-id", shardID(k), "--cluster-meta-port", strconv.Itoa(metaPort)}
			for j, addr := range nw.Links(i + 1) {
				args = append(args, "--raft-peer-addr", g.ids[j-1]+" "+addr)
			}
			if i == 0 {
				args = append(args, "--raft-bootstrap", "yes")
			}
			if k == 0 && i == 0 {
				args = append(args, "--cluster-meta-bootstrap", "yes")
			}
			g.nodes = append(g.nodes, procs.Start(t, procs.Options{Name: g.ids[i], Args: args, NoRace: true}))
		}
		sc.shards = append(sc.shards, g)
	}
	for _, g := range sc.shards {
		g.waitLeader(30 * time.Second)
		for i := 1; i < 3; i++ {
			raftAdd(t, g.ids[i], i, func(via int) error {
				return g.admin(via).Do(context.Background(), "RAFT", "ADD", g.ids[i], g.raft[i]).Err()
			})
		}
	}
	n1 := sc.shards[0]
	sc.waitFor("the meta group's leader on n1", 30*time.Second, func() bool {
		return sc.clusterxStatus(n1.nodes[0])["meta_state"] == "leader"
	})
	_, n1Port, _ := strings.Cut(n1.nodes[0].Addr, ":")
	for i := range 3 {
		for k, g := range sc.shards {
			if k == 0 && i == 0 {
				continue
			}
			// A join may meet a meta election (TRYAGAIN) on the loaded machine: again.
			sc.retry("CLUSTERX JOIN "+g.ids[i], 30*time.Second, func() error {
				return g.admin(i).Do(context.Background(), "CLUSTERX", "JOIN", "127.0.0.1", n1Port).Err()
			})
		}
	}
	sc.retry("CLUSTERX REBALANCE", 30*time.Second, func() error {
		return n1.admin(0).Do(context.Background(), "CLUSTERX", "REBALANCE").Err()
	})
	sc.waitQuiet(60 * time.Second)
	for _, g := range sc.shards {
		g.waitConverged(60 * time.Second)
	}
	return sc
}

// each calls fn for every node of the cluster: shard k's node i.
func (sc *shardedCluster) each(fn func(k, i int, g *group)) {
	for k, g := range sc.shards {
		for i := range g.nodes {
			fn(k, i, g)
		}
	}
}

// addrs are every node's client address: the cluster clients' seeds.
func (sc *shardedCluster) addrs() []string {
	var out []string
	sc.each(func(_, i int, g *group) { out = append(out, g.nodes[i].Addr) })
	return out
}

// client is a go-redis ClusterClient as docs/cluster.md advises (ClusterStateReloadInterval
// 1 s, MaxRedirects 16), with group.client's short backoff and timeouts so that a client
// waiting on a stopped leader gives up within 2 s and finds the new one.
func (sc *shardedCluster) client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: sc.addrs(), ClusterStateReloadInterval: time.Second,
		MaxRedirects: 16, MinRetryBackoff: 8 * time.Millisecond, MaxRetryBackoff: 128 * time.Millisecond,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second,
		PoolSize: 2, DisableIdentity: true, Protocol: 2,
	})
}

// waitFor polls cond every 50 ms for at most d.
func (sc *shardedCluster) waitFor(what string, d time.Duration, cond func() bool) {
	sc.t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			// Every running node's goroutines into its log, which the failure prints: a
			// wait that times out is a hang to explain (a move stuck in a copy, say).
			for _, g := range sc.shards {
				for _, n := range g.nodes {
					if n.Running() {
						n.DumpGoroutines()
					}
				}
			}
			sc.t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retry runs op until it succeeds, for at most d, and fails the test with its last error.
func (sc *shardedCluster) retry(what string, d time.Duration, op func() error) {
	sc.t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := op()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			sc.t.Fatalf("%s: %v (retried for %v)", what, err, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// adminOf is the admin client (group.adminAt) of node n, whichever shard it is in.
func (sc *shardedCluster) adminOf(n *procs.Node) *redis.Client {
	for _, g := range sc.shards {
		for _, m := range g.nodes {
			if m == n {
				return g.adminAt(n.Addr)
			}
		}
	}
	sc.t.Fatalf("%s is not a node of the cluster", n.Name)
	return nil
}

// clusterxStatus is n's CLUSTERX STATUS, nil when it does not answer within a second.
func (sc *shardedCluster) clusterxStatus(n *procs.Node) map[string]string {
	if !n.Running() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, err := sc.adminOf(n).Do(ctx, "CLUSTERX", "STATUS").Slice()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for k := 0; k+1 < len(v); k += 2 {
		m[fmt.Sprint(v[k])] = fmt.Sprint(v[k+1])
	}
	return m
}

// slotMap is n's copy of the slot map (CLUSTERX MAP), nil when it does not answer.
func (sc *shardedCluster) slotMap(n *procs.Node) *cluster.Map {
	if !n.Running() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := sc.adminOf(n).Do(ctx, "CLUSTERX", "MAP").Text()
	if err != nil {
		return nil
	}
	m := cluster.NewMap()
	if err := json.Unmarshal([]byte(s), m); err != nil {
		sc.t.Fatalf("CLUSTERX MAP on %s: %v: %s", n.Name, err, s)
	}
	return m
}

// metaMap is the slot map of the meta group's leader (the latest committed one a node
// knows), nil when no node answers as the meta leader.
func (sc *shardedCluster) metaMap() *cluster.Map {
	var leader *procs.Node
	sc.each(func(_, i int, g *group) {
		if st := sc.clusterxStatus(g.nodes[i]); leader == nil && st != nil && st["meta_state"] == "leader" {
			leader = g.nodes[i]
		}
	})
	if leader == nil {
		return nil
	}
	return sc.slotMap(leader)
}

// owner is the shard (0-based) owning slot in m, -1 for none.
func owner(m *cluster.Map, slot int) int {
	for id, sh := range m.Shards {
		for _, r := range sh.Slots {
			if r.Start <= slot && slot <= r.End {
				k, _ := strconv.Atoi(strings.TrimPrefix(id, "s"))
				return k - 1
			}
		}
	}
	return -1
}

// quiet reports whether every node answers, knows of no move in progress, has the same map
// epoch as the others, and says cluster_state:ok; why not otherwise.
func (sc *shardedCluster) quiet() (bool, string) {
	epoch := ""
	why := ""
	sc.each(func(_, i int, g *group) {
		if why != "" {
			return
		}
		n := g.nodes[i]
		st := sc.clusterxStatus(n)
		switch {
		case st == nil:
			why = n.Name + " does not answer CLUSTERX STATUS"
		case st["migrations"] != "0":
			why = n.Name + " has " + st["migrations"] + " moves in progress"
		case epoch != "" && st["epoch"] != epoch:
			why = n.Name + " is at epoch " + st["epoch"] + ", another node at " + epoch
		default:
			epoch = st["epoch"]
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := sc.adminOf(n).ClusterInfo(ctx).Result()
			cancel()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				why = fmt.Sprintf("%s: CLUSTER INFO %q %v", n.Name, firstLine(info), err)
			}
		}
	})
	return why == "", why
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

// waitQuiet waits until the cluster is quiet (no move pending, cluster_state:ok on every
// node, one epoch), for at most d.
func (sc *shardedCluster) waitQuiet(d time.Duration) {
	sc.t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := sc.quiet()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for _, g := range sc.shards {
				for _, n := range g.nodes {
					if n.Running() && strings.HasPrefix(why, n.Name+" ") || n.Running() && strings.HasPrefix(why, n.Name+":") {
						n.DumpGoroutines() // into its log, which the failure prints
					}
				}
			}
			sc.t.Fatalf("the cluster did not quiesce within %v: %s", d, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

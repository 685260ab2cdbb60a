package tests

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// raftNode is one in-process member of a test group.
type raftNode struct {
	id, dir  string
	raftPort int
	extra    []string
	srv      *testutil.Server
	c        *redis.Client
}

// start launches (or relaunches) the node. Timeouts are short for fast tests but leave room
// for a loaded 2-core machine.
func (n *raftNode) start(t *testing.T, bootstrap bool) {
	t.Helper()
	args := []string{"--raft-port", strconv.Itoa(n.raftPort), "--raft-node-id", n.id,
		"--raft-heartbeat-timeout", "300", "--raft-election-timeout", "300", "--raft-snapshot-threshold", "64", "--raft-snapshot-interval", "100"}
	if bootstrap {
		args = append(args, "--raft-bootstrap", "yes")
	}
	args = append(args, n.extra...)
	var err error
	for range 20 { // the previous instance's Raft port may linger a moment
		if n.srv, err = testutil.Launch(t, testutil.Options{Dir: n.dir, Args: args}); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("start %s: %v", n.id, err)
	}
	n.c = redis.NewClient(&redis.Options{Addr: n.srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		ReadTimeout: 20 * time.Second})
	t.Cleanup(func() { _ = n.c.Close() })
}

func (n *raftNode) stop() {
	_ = n.c.Close()
	_ = n.srv.Close()
}

func (n *raftNode) status(t *testing.T) map[string]string {
	t.Helper()
	v, err := n.c.Do(context.Background(), "RAFT", "STATUS").Slice()
	if err != nil {
		t.Fatalf("RAFT STATUS on %s: %v", n.id, err)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(v); i += 2 {
		m[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
	}
	return m
}

func waitUntil(t *testing.T, what string, d time.Duration, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !f() {
		if time.Now().After(deadline) {
			if os.Getenv("HOTKV_TEST_DUMP_ON_TIMEOUT") != "" {
				// Every goroutine of every in-process node, for a hang's post-mortem (a
				// panic would print them only after the cleanups stopped the nodes).
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newGroup starts n nodes, bootstraps the first and adds the others; extra are more
// arguments for every node.
func newGroup(t *testing.T, n int, extra ...string) []*raftNode {
	t.Helper()
	nodes := make([]*raftNode, n)
	for i := range nodes {
		nodes[i] = &raftNode{id: fmt.Sprintf("n%d", i+1), dir: t.TempDir(), raftPort: freePort(t), extra: extra}
		nodes[i].start(t, i == 0)
	}
	waitLeader(t, nodes[:1])
	for _, nd := range nodes[1:] {
		if err := nodes[0].c.Do(context.Background(), "RAFT", "ADD", nd.id, "127.0.0.1:"+strconv.Itoa(nd.raftPort)).Err(); err != nil {
			t.Fatalf("RAFT ADD %s: %v", nd.id, err)
		}
	}
	leader := waitLeader(t, nodes)
	// Each follower announces its client address, an entry of the log: wait for them, so that
	// tests counting entries see only their own.
	waitUntil(t, "every follower's address in the leader's INFO", 20*time.Second, func() bool {
		info := leader.c.Info(context.Background(), "replication").Val()
		for _, nd := range nodes {
			if nd != leader && !strings.Contains(info, ",port="+strings.Split(nd.srv.Addr, ":")[1]+",") {
				return false
			}
		}
		return true
	})
	return nodes
}

// waitLeader waits until one of nodes serves as leader and every other one knows it, and
// returns it.
func waitLeader(t *testing.T, nodes []*raftNode) *raftNode {
	t.Helper()
	var leader *raftNode
	waitUntil(t, "a serving leader known to every node", 20*time.Second, func() bool {
		leader = nil
		for _, n := range nodes {
			if n.status(t)["role"] == "leader" {
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		addr := leader.srv.Addr
		for _, n := range nodes {
			if n != leader && n.status(t)["leader_client_addr"] != addr {
				return false
			}
		}
		return true
	})
	return leader
}

// otherThan returns the first of nodes that is not n: the target of a transfer, a node to stop.
func otherThan(nodes []*raftNode, n *raftNode) *raftNode {
	for _, o := range nodes {
		if o != n {
			return o
		}
	}
	return nil
}

// waitApplied waits until every node has applied what the leader has committed.
func waitApplied(t *testing.T, leader *raftNode, nodes []*raftNode) {
	t.Helper()
	target, _ := strconv.ParseUint(leader.status(t)["commit_index"], 10, 64)
	waitUntil(t, "followers to apply the leader's log", 20*time.Second, func() bool {
		for _, n := range nodes {
			st := n.status(t)
			got, _ := strconv.ParseUint(st["applied_index"], 10, 64)
			// applied_index counts entries queued for the apply loop; apply_pending says
			// whether they are applied.
			if got < target || st["apply_pending"] != "0" {
				return false
			}
		}
		return true
	})
	for _, n := range nodes {
		// A node rebuilding itself (a leader that lost leadership with writes in flight)
		// reports no counters until it is done.
		var e string
		waitUntil(t, n.id+"'s apply_errors", 20*time.Second, func() bool { e = n.status(t)["apply_errors"]; return e != "" })
		if e != "0" {
			t.Fatalf("%s failed to apply %s effects of the log", n.id, e)
		}
	}
}

func TestReplicationSingleNode(t *testing.T) {
	for _, ack := range []string{"quorum", "leader"} {
		t.Run(ack, func(t *testing.T) { testSingleNode(t, ack) })
	}
}

func testSingleNode(t *testing.T, ack string) {
	n := &raftNode{id: "solo", dir: t.TempDir(), raftPort: freePort(t), extra: []string{"--replication-ack", ack}}
	n.start(t, true)
	waitLeader(t, []*raftNode{n})
	ctx := context.Background()
	if err := n.c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := n.c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	info, err := n.c.Info(ctx, "replication").Result()
	if err != nil || !strings.Contains(info, "role:master") || !strings.Contains(info, "raft_replication_ack:"+ack) {
		t.Fatalf("INFO replication = %q, %v", info, err)
	}
	// A restart rebuilds the data from the Raft log.
	n.stop()
	n.start(t, false)
	waitLeader(t, []*raftNode{n})
	if v, err := n.c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET after restart = %q, %v", v, err)
	}
}

// dumpAll returns DUMP and PTTL of every key, from the node that leads.
func dumpAll(t *testing.T, n *raftNode) map[string]string {
	t.Helper()
	var out map[string]string
	var last error
	waitUntil(t, "a whole dump of "+n.id, 20*time.Second, func() bool {
		out, last = dumpAllOnce(n)
		return last == nil
	})
	return out
}

// dumpAllOnce reads every key's DUMP and expiry and the limiter's state from n, failing on
// the first error: on a busy machine the node may lose its leadership during the reads (an
// election right after a restart), and its redirections must not read as missing data.
func dumpAllOnce(n *raftNode) (map[string]string, error) {
	ctx := context.Background()
	keys, err := n.c.Keys(ctx, "*").Result()
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range keys {
		d, err := n.c.Dump(ctx, k).Result()
		if err != nil {
			return nil, fmt.Errorf("DUMP %s on %s: %w", k, n.id, err)
		}
		exp, err := n.c.Do(ctx, "PEXPIRETIME", k).Int64()
		if err != nil {
			return nil, fmt.Errorf("PEXPIRETIME %s on %s: %w", k, n.id, err)
		}
		out[k] = d + "|" + strconv.FormatInt(exp, 10)
	}
	// The named limiter, with its per-key state and totals.
	v, err := n.c.Do(ctx, "RATELIMIT.PEEK", "api", "user1").Result()
	if err != nil {
		return nil, fmt.Errorf("RATELIMIT.PEEK on %s: %w", n.id, err)
	}
	out["limiter api/user1"] = fmt.Sprint(v)
	return out, nil
}

func TestReplicationThreeNodes(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	c := leader.c
	must := func(err error) {
		t.Helper()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
	}
	must(c.Set(ctx, "s", "v", time.Hour).Err())
	must(c.HSet(ctx, "h", "a", "1", "b", "2").Err())
	must(c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "m"}, redis.Z{Score: 2, Member: "n"}).Err())
	must(c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "1-1", Values: []string{"f", "v"}}).Err())
	must(c.RPush(ctx, "l", "a", "b", "c").Err())
	must(c.SAdd(ctx, "set", "a", "b").Err())
	must(c.Do(ctx, "GCRA.LIMIT", "g", "60000", "10").Err())
	must(c.Do(ctx, "RATELIMIT.CREATE", "api", "5", "3600000").Err()) // a window no test run outlasts
	must(c.Do(ctx, "RATELIMIT.CHECK", "api", "user1").Err())
	tx := c.TxPipeline()
	tx.Incr(ctx, "ctr")
	tx.Incr(ctx, "ctr")
	tx.Expire(ctx, "ctr", time.Hour)
	_, err := tx.Exec(ctx)
	must(err)
	must(c.Eval(ctx, "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCRBY', KEYS[2], 5)", []string{"e1", "e2"}, "x").Err())

	waitApplied(t, leader, nodes)

	// A follower redirects writes (and keyspace reads) to the leader.
	follower := otherThan(nodes, leader)
	err = follower.c.Set(ctx, "foo", "bar", 0).Err()
	if err == nil || err.Error() != "MOVED 12182 "+leader.srv.Addr {
		t.Fatalf("SET on a follower: %v, want MOVED 12182 %s", err, leader.srv.Addr)
	}
	info, _ := follower.c.Info(ctx, "replication").Result()
	if !strings.Contains(info, "role:slave") {
		t.Fatalf("follower INFO replication: %q", info)
	}

	// Every node, made leader in turn (RAFT TRANSFER), has the same data, byte for byte.
	want := dumpAll(t, leader)
	if len(want) != 11 { // 10 keys and the limiter
		t.Fatalf("leader has %d keys: %v", len(want), want)
	}
	for _, n := range nodes {
		if n == leader {
			continue
		}
		if err := leader.c.Do(ctx, "RAFT", "TRANSFER", n.id).Err(); err != nil {
			t.Fatalf("RAFT TRANSFER %s: %v", n.id, err)
		}
		leader = waitLeader(t, nodes)
		if leader != n {
			t.Fatalf("leadership went to %s, not %s", leader.id, n.id)
		}
		got := dumpAll(t, n)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("node %s key %s: %q, leader had %q", n.id, k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("node %s has %d keys, want %d", n.id, len(got), len(want))
		}
	}

	// A restart of every node keeps the data.
	for _, n := range nodes {
		n.stop()
	}
	for _, n := range nodes {
		n.start(t, false)
	}
	// Read from whichever node serves: an election may follow the first one on a busy machine.
	var got map[string]string
	waitUntil(t, "a whole dump from a serving leader after the restart", 30*time.Second, func() bool {
		var err error
		got, err = dumpAllOnce(waitLeader(t, nodes))
		return err == nil
	})
	for k, v := range want {
		if got[k] != v {
			t.Errorf("after a restart, key %s: %q, want %q", k, got[k], v)
		}
	}
}

// TestReplicationFailoverNoOverAdmit hammers one GCRA key from several clients while the
// leader is killed (closed without saving): the admissions acknowledged by both leaders never
// exceed the burst.
func TestReplicationFailoverNoOverAdmit(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	const burst = 150
	var allowed atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	var cur atomic.Pointer[raftNode]
	cur.Store(leader)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				n := cur.Load()
				v, err := n.c.Do(context.Background(), "GCRA.LIMIT", "rl:{t}:hot", "3600000", strconv.Itoa(burst)).Slice()
				if err != nil {
					time.Sleep(5 * time.Millisecond)
					continue
				}
				if v[0].(int64) == 0 {
					allowed.Add(1)
				}
			}
		}()
	}
	waitUntil(t, "some admissions", 20*time.Second, func() bool { return allowed.Load() >= burst/3 })
	leader.stop()
	var rest []*raftNode
	for _, n := range nodes {
		if n != leader {
			rest = append(rest, n)
		}
	}
	nl := waitLeader(t, rest)
	cur.Store(nl)
	waitUntil(t, "the budget to be used up", 30*time.Second, func() bool { return allowed.Load() >= burst-10 })
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if got := allowed.Load(); got > burst {
		t.Fatalf("%d admissions acknowledged, burst is %d", got, burst)
	}
	v, err := nl.c.Do(context.Background(), "GCRA.LIMIT", "rl:{t}:hot", "3600000", strconv.Itoa(burst)).Slice()
	if err != nil || v[0].(int64) != 1 {
		t.Fatalf("after the failover the key still admits: %v %v", v, err)
	}
}

// TestReplicationLostQuorum: a leader cut off from its followers cannot acknowledge a write.
// The client gets TRYAGAIN (never OK), the node rebuilds itself from the log, and once the
// followers are back the group serves again and every node agrees on the write's fate.
func TestReplicationLostQuorum(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	if err := leader.c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, leader, nodes)
	var followers []*raftNode
	for _, n := range nodes {
		if n != leader {
			followers = append(followers, n)
			n.stop()
		}
	}
	err := leader.c.Set(ctx, "orphan", "1", 0).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN ") {
		t.Fatalf("SET without a quorum: %v, want TRYAGAIN", err)
	}
	// No leader can be elected now: keyspace commands say so; others still run.
	if err := leader.c.Get(ctx, "before").Err(); err == nil || err.Error() != "CLUSTERDOWN No leader for this shard" {
		t.Fatalf("GET with no leader: %v, want CLUSTERDOWN No leader for this shard", err)
	}
	if err := leader.c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING with no leader: %v", err)
	}
	for _, n := range followers {
		n.start(t, false)
	}
	leader = waitLeader(t, nodes)
	if err := leader.c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitApplied(t, leader, nodes)
	want := dumpAll(t, leader)
	if want["before"] == "" || want["after"] == "" {
		t.Fatalf("acknowledged writes missing: %v", want)
	}
	for _, n := range nodes {
		if n == leader {
			continue
		}
		if err := leader.c.Do(ctx, "RAFT", "TRANSFER", n.id).Err(); err != nil {
			t.Fatalf("RAFT TRANSFER %s: %v", n.id, err)
		}
		leader = waitLeader(t, nodes)
		got := dumpAll(t, leader)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("node %s has %v, want %v", n.id, got, want)
		}
	}
}

// TestReplicationSnapshotRestart: a follower that compacted its log into a snapshot restarts
// from it (and the entries after it) with the same data.
func TestReplicationSnapshotRestart(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	for i := range 300 { // one entry each: several snapshots at threshold 64
		if err := leader.c.RPush(ctx, "list", i).Err(); err != nil {
			t.Fatal(err)
		}
		if err := leader.c.Do(ctx, "GCRA.LIMIT", "g"+strconv.Itoa(i%7), "60000", "100").Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitApplied(t, leader, nodes)
	want := dumpAll(t, leader)
	f := otherThan(nodes, leader)
	waitUntil(t, "a follower snapshot", 20*time.Second, func() bool {
		snaps, _ := filepath.Glob(filepath.Join(f.dir, "raft", "snapshots", "*", "state.bin"))
		return len(snaps) > 0
	})
	f.stop()
	f.start(t, false)
	waitLeader(t, nodes)
	waitApplied(t, leader, nodes)
	if err := leader.c.Do(ctx, "RAFT", "TRANSFER", f.id).Err(); err != nil {
		t.Fatal(err)
	}
	if l := waitLeader(t, nodes); l != f {
		t.Fatalf("leadership went to %s", l.id)
	}
	got := dumpAll(t, f)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restarted follower has %v, want %v", got, want)
	}
}

// TestReplicationStandalone: with raft-port 0 (the default) nothing changes, and RAFT says so.
func TestReplicationStandalone(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	ctx := context.Background()
	err := c.Do(ctx, "RAFT", "STATUS").Err()
	if err == nil || err.Error() != "ERR this node is not in replicated mode (raft-port is 0)" {
		t.Fatalf("RAFT STATUS standalone: %v", err)
	}
	info, _ := c.Info(ctx, "replication").Result()
	if !strings.Contains(info, "role:master\r\nconnected_slaves:0\r\n") || strings.Contains(info, "raft_") {
		t.Fatalf("standalone INFO replication: %q", info)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestReplicationEveryWrite runs the randomized workload of every write command
// (effects_all_test.go) on a group's leader and checks that each node, made leader in turn,
// reports the same dataset and limiters.
func TestReplicationEveryWrite(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	t0 := testutil.T0
	for _, n := range nodes {
		require.NoError(t, n.c.Do(ctx, "DEBUG", "CLOCK", "SET", t0).Err())
	}
	ca := leader.c.Conn()
	t.Cleanup(func() { _ = ca.Close() })
	w := runWorkload(t, ca, 7, 1500)
	waitApplied(t, leader, nodes)
	// Every node's clock at the leader's time, so that no node expires anything the others
	// keep while it leads.
	for _, n := range nodes {
		require.NoError(t, n.c.Do(ctx, "DEBUG", "CLOCK", "SET", w.now).Err())
	}
	state := func(n *raftNode) (map[int][]string, map[string]map[string]any) {
		c := n.c.Conn()
		defer c.Close()
		keys := map[int][]string{}
		for db := 0; db < 16; db++ {
			k, _ := dbState(t, c, db)
			keys[db] = k
		}
		return keys, limiterState(t, c)
	}
	wantKeys, wantLim := state(leader)
	total := 0
	for _, k := range wantKeys {
		total += len(k)
	}
	require.Positive(t, total)
	for _, n := range nodes {
		if n == leader {
			continue
		}
		require.NoError(t, leader.c.Do(ctx, "RAFT", "TRANSFER", n.id).Err())
		leader = waitLeader(t, nodes)
		require.Equal(t, n, leader)
		keys, lim := state(n)
		require.Equal(t, wantKeys, keys, "node %s", n.id)
		require.Equal(t, len(wantLim), len(lim))
		for name, sa := range wantLim {
			for _, f := range []string{"algo", "limit", "window_ms", "total_allowed", "refill_per_sec", "drain_per_sec"} {
				require.Equal(t, sa[f], lim[name][f], "node %s limiter %s %s", n.id, name, f)
			}
		}
	}
	t.Logf("%d keys identical on every node", total)
}

// TestReplicationLeaderSnapshot: the leader snapshots while clients write (RAFT SNAPSHOT stops
// the world between commands until everything appended is committed), the log is compacted,
// a restart rebuilds the same data from the snapshot and the log's tail, and members added
// afterwards, which the compacted log cannot bring up to date, install the leader's snapshot
// and end identical.
func TestReplicationLeaderSnapshot(t *testing.T) {
	ctx := context.Background()
	n1 := &raftNode{id: "n1", dir: t.TempDir(), raftPort: freePort(t), extra: []string{"--raft-trailing-logs", "0"}}
	n1.start(t, true)
	waitLeader(t, []*raftNode{n1})
	require.NoError(t, n1.c.Do(ctx, "RATELIMIT.CREATE", "api", "1000000", "60000").Err())

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writes atomic.Int64
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: n1.srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
			defer c.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := c.Pipeline()
				p.Incr(ctx, fmt.Sprintf("ctr%d", w))
				p.RPush(ctx, fmt.Sprintf("list%d", w), i)
				p.Do(ctx, "GCRA.LIMIT", fmt.Sprintf("g%d", i%50), "86400000", "100000") // TTLs outlive the test
				p.Do(ctx, "RATELIMIT.CHECK", "api", fmt.Sprintf("u%d", i%20))
				if _, err := p.Exec(ctx); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
				writes.Add(4)
			}
		}()
	}
	snaps := 0
	for range 5 {
		time.Sleep(150 * time.Millisecond)
		err := n1.c.Do(ctx, "RAFT", "SNAPSHOT").Err()
		if err != nil && !strings.Contains(err.Error(), "nothing new") {
			t.Fatalf("RAFT SNAPSHOT under load: %v", err)
		}
		if err == nil {
			snaps++
		}
	}
	close(stop)
	wg.Wait()
	if snaps == 0 || writes.Load() == 0 {
		t.Fatalf("%d snapshots taken during %d writes", snaps, writes.Load())
	}
	// The writes go on after the last snapshot: the restart replays a log tail over it.
	require.NoError(t, n1.c.Set(ctx, "after", "snapshot", 0).Err())
	st := n1.status(t)
	if st["last_snapshot_index"] == "0" || st["last_snapshot_index"] == "" {
		t.Fatalf("no snapshot index after RAFT SNAPSHOT: %v", st)
	}
	want := dumpAll(t, n1)
	for k := range 4 {
		if _, ok := want[fmt.Sprintf("list%d", k)]; !ok {
			t.Fatalf("list%d missing: %v", k, want)
		}
	}
	stats := func(n *raftNode) string {
		v, err := n.c.Do(ctx, "RATELIMIT.STATS", "api").Result()
		require.NoError(t, err)
		return fmt.Sprint(v)
	}
	wantStats := stats(n1)

	n1.stop()
	n1.start(t, false)
	waitLeader(t, []*raftNode{n1})
	if got := dumpAll(t, n1); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after a restart from the leader's snapshot:\n%v\nwant\n%v", got, want)
	}
	require.Equal(t, wantStats, stats(n1))

	// New members: with no trailing log they must install the snapshot.
	require.NoError(t, n1.c.Do(ctx, "RAFT", "SNAPSHOT").Err())
	nodes := []*raftNode{n1}
	for _, id := range []string{"n2", "n3"} {
		n := &raftNode{id: id, dir: t.TempDir(), raftPort: freePort(t)}
		n.start(t, false)
		require.NoError(t, n1.c.Do(ctx, "RAFT", "ADD", id, "127.0.0.1:"+strconv.Itoa(n.raftPort)).Err())
		nodes = append(nodes, n)
	}
	leader := waitLeader(t, nodes)
	waitApplied(t, leader, nodes)
	for _, n := range nodes[1:] {
		require.NoError(t, leader.c.Do(ctx, "RAFT", "TRANSFER", n.id).Err())
		leader = waitLeader(t, nodes)
		require.Equal(t, n, leader)
		if got := dumpAll(t, n); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s, brought up by the snapshot:\n%v\nwant\n%v", n.id, got, want)
		}
		require.Equal(t, wantStats, stats(n))
	}
}

// TestReplicationDenials: a denial journals nothing, so a burst of GCRA denials adds no Raft
// entry, and its reply does not wait for the commit of other clients' writes; RATELIMIT's
// denied totals reach every replica through one totals effect per 100 ms.
func TestReplicationDenials(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	c := leader.c
	for range 3 {
		require.NoError(t, c.Do(ctx, "GCRA.LIMIT", "hot", "3600000", "3").Err())
	}
	waitApplied(t, leader, nodes)
	before := leader.status(t)["last_log_index"]
	for range 200 {
		v, err := c.Do(ctx, "GCRA.LIMIT", "hot", "3600000", "3").Slice()
		require.NoError(t, err)
		require.EqualValues(t, 1, v[0], "the burst is spent: denied")
	}
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, before, leader.status(t)["last_log_index"], "GCRA denials must not be logged")

	require.NoError(t, c.Do(ctx, "RATELIMIT.CREATE", "api", "3", "3600000").Err())
	for i := range 53 {
		v, err := c.Do(ctx, "RATELIMIT.CHECK", "api", "u").Slice()
		require.NoError(t, err)
		require.EqualValues(t, map[bool]int64{true: 1, false: 0}[i < 3], v[0])
	}
	before = leader.status(t)["last_log_index"]
	for range 500 {
		require.NoError(t, c.Do(ctx, "RATELIMIT.CHECK", "api", "u").Err())
	}
	// 550 denials in all; their totals travel in at most one entry per 100 ms.
	time.Sleep(300 * time.Millisecond)
	after := leader.status(t)["last_log_index"]
	b, _ := strconv.Atoi(before)
	a, _ := strconv.Atoi(after)
	if a-b > 20 {
		t.Fatalf("500 denials added %d Raft entries", a-b)
	}
	waitApplied(t, leader, nodes)
	for _, n := range nodes {
		if n != leader {
			require.NoError(t, leader.c.Do(ctx, "RAFT", "TRANSFER", n.id).Err())
			leader = waitLeader(t, nodes)
			require.Equal(t, n, leader)
		}
		v, err := n.c.Do(ctx, "RATELIMIT.STATS", "api").Slice()
		require.NoError(t, err)
		got := map[string]any{}
		for i := 0; i+1 < len(v); i += 2 {
			got[fmt.Sprint(v[i])] = v[i+1]
		}
		require.EqualValues(t, 3, got["total_allowed"], "node %s: %v", n.id, v)
		require.EqualValues(t, 550, got["total_denied"], "node %s: %v", n.id, v)
	}
}

// TestReplicationNaturalBatching: while the leader's batch in flight commits, the next one
// collects every write that arrives, so concurrent writers share entries. 64 clients each wait
// for their write's commit before sending the next; with one batch in flight (the default),
// nearly all of them are queued behind the entry in flight at any moment, so the 3,200 writes
// need far fewer than 3,200 entries (about 50 if every entry held all 64; the bound leaves
// room for a slow machine). With more in flight the batches are smaller, but every write is
// still acknowledged once and applied everywhere.
func TestReplicationNaturalBatching(t *testing.T) {
	for _, inflight := range []string{"1", "4"} {
		t.Run("inflight="+inflight, func(t *testing.T) {
			nodes := newGroup(t, 3, "--raft-inflight-batches", inflight)
			leader := waitLeader(t, nodes)
			ctx := context.Background()
			before, _ := strconv.Atoi(leader.status(t)["last_log_index"])
			const clients, each = 64, 50
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			for i := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c := redis.NewClient(&redis.Options{Addr: leader.srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
					defer c.Close()
					for j := range each {
						if err := c.Incr(ctx, fmt.Sprintf("ctr%d", i)).Err(); err != nil {
							errs <- fmt.Errorf("client %d, write %d: %w", i, j, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			after, _ := strconv.Atoi(leader.status(t)["last_log_index"])
			entries := after - before
			t.Logf("%d writes in %d Raft entries (%.1f per entry)", clients*each, entries, float64(clients*each)/float64(entries))
			if inflight == "1" && entries > clients*each/8 {
				t.Fatalf("%d writes from %d concurrent clients took %d Raft entries: not batched", clients*each, clients, entries)
			}
			waitApplied(t, leader, nodes)
			for _, n := range nodes {
				// One connection, so that READONLY (a follower's reads redirect without it)
				// holds for the reads after it.
				c := redis.NewClient(&redis.Options{Addr: n.srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1, PoolSize: 1})
				defer c.Close()
				if n != leader {
					require.NoError(t, c.Do(ctx, "READONLY").Err())
				}
				for i := range clients {
					v, err := c.Get(ctx, fmt.Sprintf("ctr%d", i)).Result()
					require.NoError(t, err)
					require.Equal(t, strconv.Itoa(each), v, "node %s, ctr%d", n.id, i)
				}
			}
		})
	}
}

// TestReplicationSnapshotByLogBytes: entries vary in size by thousands of times, so besides
// raft-snapshot-threshold (entries) every node snapshots once the log since its last snapshot
// holds raft-snapshot-log-bytes. With the entry threshold out of reach, 3 MB of writes leave
// every node without a snapshot at the default 64 MB, and lowering the directive (CONFIG SET)
// to 1 MB makes the leader and both followers take one.
func TestReplicationSnapshotByLogBytes(t *testing.T) {
	nodes := newGroup(t, 3, "--raft-snapshot-threshold", "1000000")
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	value := strings.Repeat("v", 10000)
	pipe := leader.c.Pipeline()
	for i := range 300 {
		pipe.Set(ctx, fmt.Sprintf("k%d", i), value, 0)
	}
	_, err := pipe.Exec(ctx)
	require.NoError(t, err)
	waitApplied(t, leader, nodes)
	snapIndex := func(n *raftNode) uint64 {
		v, _ := strconv.ParseUint(n.status(t)["last_snapshot_index"], 10, 64)
		return v
	}
	before := map[string]uint64{}
	for _, n := range nodes {
		before[n.id] = snapIndex(n)
	}
	time.Sleep(2500 * time.Millisecond) // two rounds of every node's snapshot check
	for _, n := range nodes {
		require.Equal(t, before[n.id], snapIndex(n), "%s snapshotted below both thresholds", n.id)
	}
	for _, n := range nodes {
		require.NoError(t, n.c.ConfigSet(ctx, "raft-snapshot-log-bytes", "1mb").Err())
	}
	waitUntil(t, "every node to snapshot by log size", 20*time.Second, func() bool {
		for _, n := range nodes {
			if snapIndex(n) <= before[n.id] {
				return false
			}
		}
		return true
	})
}

// TestReplicationDenialDoesNotWait: with the followers gone the leader can commit nothing, so
// a write's reply waits until the leader's lease runs out (1.5 s here) and then fails; a GCRA
// denial on another connection meanwhile is answered at once, without waiting for that write.
func TestReplicationDenialDoesNotWait(t *testing.T) {
	ctx := context.Background()
	slow := []string{"--raft-heartbeat-timeout", "3000", "--raft-election-timeout", "3000"}
	nodes := make([]*raftNode, 3)
	for i := range nodes {
		nodes[i] = &raftNode{id: fmt.Sprintf("n%d", i+1), dir: t.TempDir(), raftPort: freePort(t), extra: slow}
		nodes[i].start(t, i == 0)
	}
	waitLeader(t, nodes[:1])
	for _, nd := range nodes[1:] {
		require.NoError(t, nodes[0].c.Do(ctx, "RAFT", "ADD", nd.id, "127.0.0.1:"+strconv.Itoa(nd.raftPort)).Err())
	}
	leader := waitLeader(t, nodes)
	require.NoError(t, leader.c.Do(ctx, "GCRA.LIMIT", "hot", "3600000", "1").Err())
	waitApplied(t, leader, nodes)
	for _, n := range nodes {
		if n != leader {
			n.stop()
		}
	}
	write := make(chan error, 1)
	go func() {
		c := redis.NewClient(&redis.Options{Addr: leader.srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		defer c.Close()
		write <- c.Set(ctx, "k", "v", 0).Err()
	}()
	time.Sleep(100 * time.Millisecond) // the SET has run and waits for its commit
	v, err := leader.c.Do(ctx, "GCRA.LIMIT", "hot", "3600000", "1").Slice()
	require.NoError(t, err)
	require.EqualValues(t, 1, v[0], "denied")
	select {
	case err := <-write:
		t.Fatalf("the SET was answered (%v) before the denial: the leader could not commit it", err)
	default:
	}
	select {
	case err := <-write:
		if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
			t.Fatalf("uncommittable SET: %v, want TRYAGAIN", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the SET never failed")
	}
}

// TestReplicationInfoReplicaProgress: followers report their applied index to the leader every
// second (RAFT ANNOUNCE's third argument), and the leader's INFO replication shows each one in
// Redis's slaveN format with its offset and lag.
func TestReplicationInfoReplicaProgress(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	ctx := context.Background()
	for i := range 20 {
		require.NoError(t, leader.c.Set(ctx, fmt.Sprint("k", i), i, 0).Err())
	}
	commit, _ := strconv.Atoi(leader.status(t)["commit_index"])
	var info string
	waitUntil(t, "both followers reported the writes", 20*time.Second, func() bool {
		info = leader.c.Info(ctx, "replication").Val()
		online := 0
		for _, line := range strings.Split(info, "\r\n") {
			if !strings.HasPrefix(line, "slave") {
				continue
			}
			var n, port, offset, lag int
			var ip string
			_, err := fmt.Sscanf(strings.ReplaceAll(strings.SplitN(line, ",id=", 2)[0], ",", " "),
				"slave%d:ip=%s port=%d state=online offset=%d lag=%d", &n, &ip, &port, &offset, &lag)
			if err == nil && offset >= commit && lag <= 2 {
				online++
			}
		}
		return online == 2
	})
	require.Contains(t, info, "connected_slaves:2\r\n")
	for _, n := range nodes {
		if n != leader {
			require.Contains(t, info, ",port="+strings.Split(n.srv.Addr, ":")[1]+",", info)
		}
	}
	// The leader takes a report only from a member, and an applied index only as an integer.
	var follower *raftNode
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	addr := follower.srv.Addr
	require.EqualError(t, leader.c.Do(ctx, "RAFT", "ANNOUNCE", follower.id, addr, "x").Err(), "ERR value is not an integer or out of range")
	require.EqualError(t, leader.c.Do(ctx, "RAFT", "ANNOUNCE", follower.id, addr, "1", "2").Err(),
		"ERR unknown subcommand or wrong number of arguments for 'announce'. Try RAFT HELP.")
	require.NoError(t, leader.c.Do(ctx, "RAFT", "ANNOUNCE", follower.id, addr, "5").Err())
	require.Error(t, follower.c.Do(ctx, "RAFT", "ANNOUNCE", follower.id, addr, "5").Err(), "only the leader records")
}

// What would make a node differ from its group is refused: DEBUG POPULATE (keys written
// outside the Raft log) and a change of port or bind (the address the group announces).
func TestRaftRefusesNodeLocalChanges(t *testing.T) {
	nodes := newGroup(t, 1)
	leader := waitLeader(t, nodes)
	err := leader.c.Do(ctx, "DEBUG", "POPULATE", "10").Err()
	require.EqualError(t, err, "ERR DEBUG POPULATE is not available on a replicated server: write the keys with MSET")
	require.Equal(t, int64(0), leader.c.DBSize(ctx).Val())
	bind := "127.0.0.1 -::1"
	if leader.c.ConfigGet(ctx, "bind").Val()["bind"] == bind {
		bind = "127.0.0.1"
	}
	for _, kv := range [][2]string{{"port", strconv.Itoa(freePort(t))}, {"bind", bind}} {
		err := leader.c.ConfigSet(ctx, kv[0], kv[1]).Err()
		require.EqualError(t, err, "ERR CONFIG SET failed (possibly related to argument '"+kv[0]+
			"') - a Raft member's client address is announced to its group: restart the node to change it")
	}
}

// TestReplicationFollowersIgnoreMaxmemory: a follower applies every effect of the log
// whatever its own maxmemory, as a Redis replica ignores its limit (replica-ignore-maxmemory):
// the leader decided each write, and its evictions arrive as DELs. A follower that refused a
// write (noeviction) or evicted keys of its own would differ from its leader.
func TestReplicationFollowersIgnoreMaxmemory(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	for _, n := range nodes {
		if n != leader {
			require.NoError(t, n.c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
			require.NoError(t, n.c.ConfigSet(ctx, "maxmemory", "1mb").Err())
		}
	}
	const keys = 5000
	val := strings.Repeat("v", 1000) // 5 MB in all, five times the followers' limit
	for i := 0; i < keys; i += 100 {
		var kv []any
		for j := i; j < i+100; j++ {
			kv = append(kv, fmt.Sprint("key:", j), val)
		}
		require.NoError(t, leader.c.MSet(ctx, kv...).Err())
	}
	waitApplied(t, leader, nodes) // fails on any apply error
	for _, n := range nodes {
		r := redis.NewClient(&redis.Options{Addr: n.srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
		require.Equal(t, int64(keys), r.DBSize(ctx).Val(), "keys on %s", n.id)
		require.Equal(t, val, r.Get(ctx, "key:0").Val(), "key:0 on %s", n.id)
		_ = r.Close()
	}
}

// TestReplicationApplyWaitsForBusyScript: a read-only script that runs past
// busy-reply-threshold on a follower (READONLY) makes clients wait with -BUSY, but not the
// follower's own applying of its leader's log: the effects wait for the script's locks and
// apply when it ends, as a Redis replica reads its master's stream only after a busy script.
func TestReplicationApplyWaitsForBusyScript(t *testing.T) {
	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	f := otherThan(nodes, leader)
	require.NoError(t, f.c.ConfigSet(ctx, "busy-reply-threshold", "100").Err())
	r := redis.NewClient(&redis.Options{Addr: f.srv.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	defer r.Close()
	done := make(chan error, 1)
	go func() {
		// About a second of a busy read-only script on the follower.
		done <- r.Do(ctx, "EVAL_RO", `local t0 = redis.call('TIME')
			repeat local t = redis.call('TIME') until (t[1] - t0[1]) * 1000000 + (t[2] - t0[2]) > 1000000
			return 1`, "0").Err()
	}()
	time.Sleep(300 * time.Millisecond) // past the threshold
	require.NoError(t, leader.c.Set(ctx, "k", "v", 0).Err(), "committed on the leader and the other follower")
	require.NoError(t, <-done)
	waitApplied(t, leader, nodes) // fails on any apply error
	require.Equal(t, "v", r.Get(ctx, "k").Val())
}

// TestRole: ROLE answers with Redis's shapes: a standalone server is a master without
// replicas; in a group the serving leader is the master with its followers as online
// replicas (client address, applied index) and a follower a slave of the leader's client
// address.
func TestRole(t *testing.T) {
	s := testutil.StartServer(t)
	require.Equal(t, []any{"master", int64(0), []any{}}, s.Client(t, 2).Do(ctx, "ROLE").Val())

	nodes := newGroup(t, 3)
	leader := waitLeader(t, nodes)
	require.NoError(t, leader.c.Set(ctx, "k", "v", 0).Err())
	waitApplied(t, leader, nodes)
	host, port, _ := net.SplitHostPort(leader.srv.Addr)
	for _, n := range nodes {
		if n == leader {
			continue
		}
		_, fport, _ := net.SplitHostPort(n.srv.Addr)
		v := n.c.Do(ctx, "ROLE").Val().([]any)
		require.Len(t, v, 5)
		require.Equal(t, "slave", v[0])
		require.Equal(t, host, v[1])
		require.Equal(t, port, fmt.Sprint(v[2]))
		require.Equal(t, "connected", v[3])
		require.Greater(t, v[4].(int64), int64(0))
		// The leader lists it once it has reported its progress (RAFT ANNOUNCE).
		waitUntil(t, n.id+" in the leader's ROLE", 20*time.Second, func() bool {
			r := leader.c.Do(ctx, "ROLE").Val().([]any)
			if r[0] != "master" || r[1].(int64) <= 0 {
				return false
			}
			for _, rep := range r[2].([]any) {
				if rep.([]any)[1] == fport {
					return rep.([]any)[0] == host
				}
			}
			return false
		})
	}
}

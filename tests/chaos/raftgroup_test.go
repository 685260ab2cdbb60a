package chaos

// The harness of the Raft failover tests (failover_test.go): a three-node group of real
// hotkv-server processes whose node-to-node Raft links all go through a faultproxy.Network,
// cluster clients that find the leader as CLUSTER SLOTS would, and the nemesis schedule of
// design §5.3.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/faultproxy"
	"github.com/hotkv/hotkv/internal/testutil/procs"
)

// group is a three-node Raft group: node i (1-based, n<i>) dials node j's Raft port only
// through net.Link(i, j) (raft-peer-addr), while the group's configuration holds the real
// addresses. Clients reach the nodes directly: a partition cuts Raft traffic only, so a
// deposed leader stays reachable by clients, the "zombie leader" case.
type group struct {
	t     *testing.T
	nodes []*procs.Node
	raft  []string // each node's real Raft address
	net   *faultproxy.Network
	// ids are the nodes' Raft ids; nil means n1, n2, n3 (a shard of a sharded cluster,
	// sharded_harness_test.go, names its nodes as the cluster numbers them).
	ids []string

	mu     sync.Mutex
	admins map[string]*redis.Client // by client address, for RAFT STATUS and DEBUG

	slotsMu   sync.Mutex
	slotsAt   time.Time
	slotsLast []redis.ClusterSlot
}

// quietLogger drops go-redis's own log lines (a failed dial per client per fault): the
// tests record every outcome themselves.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func startGroup(t *testing.T, extra ...string) *group {
	t.Helper()
	redis.SetLogger(quietLogger{})
	g := &group{t: t, admins: map[string]*redis.Client{}}
	for range 3 {
		p, err := procs.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		g.raft = append(g.raft, "127.0.0.1:"+strconv.Itoa(p))
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
	for i := 1; i <= 3; i++ {
		_, port, _ := strings.Cut(g.raft[i-1], ":")
		args := []string{"--raft-port", port, "--raft-node-id", "n" + strconv.Itoa(i), "--enable-debug-command", "yes"}
		for j, addr := range nw.Links(i) {
			args = append(args, "--raft-peer-addr", "n"+strconv.Itoa(j)+" "+addr)
		}
		if i == 1 {
			args = append(args, "--raft-bootstrap", "yes")
		}
		g.nodes = append(g.nodes, procs.Start(t, procs.Options{Name: "n" + strconv.Itoa(i), Args: append(args, extra...)}))
	}
	g.waitLeader(30 * time.Second)
	for i := 2; i <= 3; i++ {
		raftAdd(t, "n"+strconv.Itoa(i), i-1, func(via int) error {
			return g.admin(via).Do(context.Background(), "RAFT", "ADD", "n"+strconv.Itoa(i), g.raft[i-1]).Err()
		})
	}
	g.waitConverged(60 * time.Second)
	return g
}

// raftAdd runs add (a RAFT ADD sent to node via) until it succeeds, through the first
// members (those before index joined, 0-based): on two cores shared with other tests a young
// group may hold an election meanwhile, and the change then fails with a lost leadership or
// lands on a node that no longer leads. RAFT ADD of a member already added succeeds.
func raftAdd(t *testing.T, name string, joined int, add func(via int) error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for via := 0; ; via = (via + 1) % joined {
		err := add(via)
		if err == nil {
			return
		}
		transient := false
		for _, s := range []string{"leadership lost", "not the leader", "TRYAGAIN", "CLUSTERDOWN", "MOVED", "i/o timeout", "EOF"} {
			transient = transient || strings.Contains(err.Error(), s)
		}
		if !transient || time.Now().After(deadline) {
			t.Fatalf("RAFT ADD %s: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// id is node i's (0-based) Raft id.
func (g *group) id(i int) string {
	if g.ids != nil {
		return g.ids[i]
	}
	return "n" + strconv.Itoa(i+1)
}

// admin is a plain client of node i (0-based) for administrative commands: no retries, RESP2.
func (g *group) admin(i int) *redis.Client { return g.adminAt(g.nodes[i].Addr) }

func (g *group) adminAt(addr string) *redis.Client {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.admins[addr]
	if c == nil {
		c = redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
			DialTimeout: 300 * time.Millisecond, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, PoolSize: 4})
		g.admins[addr] = c
	}
	return c
}

// status is node i's RAFT STATUS, nil when the node does not answer within timeout.
func (g *group) status(i int, timeout time.Duration) map[string]string {
	if !g.nodes[i].Running() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	v, err := g.admin(i).Do(ctx, "RAFT", "STATUS").Slice()
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for k := 0; k+1 < len(v); k += 2 {
		m[fmt.Sprint(v[k])] = fmt.Sprint(v[k+1])
	}
	return m
}

// leader is the index of the node serving as leader (role leader), or -1.
func (g *group) leader() int {
	for i := range g.nodes {
		if st := g.status(i, 300*time.Millisecond); st != nil && st["role"] == "leader" {
			return i
		}
	}
	return -1
}

func (g *group) waitLeader(d time.Duration) int {
	g.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if l := g.leader(); l >= 0 {
			return l
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("no node serving as leader after %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitConverged waits until one node serves as leader and every node has applied its whole
// log (the same applied index everywhere, equal to the commit index), and returns the leader
// and the index.
func (g *group) waitConverged(d time.Duration) (int, uint64) {
	g.t.Helper()
	deadline := time.Now().Add(d)
	var last []map[string]string
	for {
		l := g.leader()
		last = last[:0]
		ok := l >= 0
		var applied string
		for i := range g.nodes {
			st := g.status(i, time.Second)
			last = append(last, st)
			// applied_index counts the entries queued for the apply loop; apply_pending says
			// whether they are applied (a node rebuilt after a lost leadership replays its whole
			// log behind a matching applied_index).
			if st == nil || st["applied_index"] != st["commit_index"] || st["apply_pending"] != "0" || (l >= 0 && st["leader_id"] != g.id(l)) ||
				(applied != "" && st["applied_index"] != applied) || !strings.Contains(st["members"], g.id(len(g.nodes)-1)+"=") {
				ok = false
				continue
			}
			applied = st["applied_index"]
		}
		if ok {
			idx, _ := strconv.ParseUint(applied, 10, 64)
			return l, idx
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("the group did not converge within %v: %v", d, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clusterSlots is the ClusterSlots function of the clients: one range, 0-16383, served by the
// three nodes, the current leader first (what CLUSTER SLOTS reports). It asks the nodes'
// RAFT STATUS who serves (cached for 100 ms across clients); with no answer it keeps the
// last order. go-redis calls it after every MOVED and every ClusterStateReloadInterval.
func (g *group) clusterSlots(ctx context.Context) ([]redis.ClusterSlot, error) {
	g.slotsMu.Lock()
	defer g.slotsMu.Unlock()
	if g.slotsLast != nil && time.Since(g.slotsAt) < 100*time.Millisecond {
		return g.slotsLast, nil
	}
	leaderAddr := ""
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range g.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := g.status(i, 200*time.Millisecond)
			if st == nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if st["role"] == "leader" || (leaderAddr == "" && st["leader_client_addr"] != "") {
				leaderAddr = st["leader_client_addr"]
			}
		}()
	}
	wg.Wait()
	addrs := make([]string, 0, 3)
	for _, n := range g.nodes {
		addrs = append(addrs, n.Addr)
	}
	if leaderAddr == "" && g.slotsLast != nil {
		return g.slotsLast, nil
	}
	sort.SliceStable(addrs, func(a, b int) bool { return addrs[a] == leaderAddr && addrs[b] != leaderAddr })
	nodes := make([]redis.ClusterNode, len(addrs))
	for i, a := range addrs {
		nodes[i] = redis.ClusterNode{Addr: a}
	}
	g.slotsLast = []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: nodes}}
	g.slotsAt = time.Now()
	return g.slotsLast, nil
}

// client is a cluster client as an application that wants fast failover would configure one
// for a HotKV group: it follows MOVED, retries CLUSTERDOWN and TRYAGAIN (MaxRedirects 8
// attempts in all, backing off 8 to 128 ms between them), refreshes the topology every
// 250 ms, and gives up on a silent node after 1 s. With go-redis's default backoff (up to
// 512 ms) and a 500 ms refresh, the first write after a leader is killed came 1 to 2 s after
// the new leader was serving: the client's delay, not the group's.
func (g *group) client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: g.clusterSlots, ClusterStateReloadInterval: 250 * time.Millisecond,
		MaxRedirects: 8, MinRetryBackoff: 8 * time.Millisecond, MaxRetryBackoff: 128 * time.Millisecond,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second,
		PoolSize: 2, DisableIdentity: true, Protocol: 2,
	})
}

// digests waits for the group to converge, then reads every node's applied index and DEBUG
// DIGEST, and the applied index again: the digests are comparable when all six indexes agree
// and no node has entries queued but not applied.
func (g *group) digests(d time.Duration) (uint64, []string) {
	g.t.Helper()
	deadline := time.Now().Add(d)
	for {
		_, idx := g.waitConverged(time.Until(deadline) + time.Second)
		ds := make([]string, len(g.nodes))
		same := true
		for i := range g.nodes {
			v, err := g.admin(i).Do(context.Background(), "DEBUG", "DIGEST").Text()
			if err != nil {
				g.t.Fatalf("DEBUG DIGEST on %s: %v", g.id(i), err)
			}
			ds[i] = v
		}
		for i := range g.nodes {
			if st := g.status(i, time.Second); st == nil || st["applied_index"] != strconv.FormatUint(idx, 10) || st["apply_pending"] != "0" {
				same = false
			}
		}
		if same {
			return idx, ds
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("the applied index kept moving while reading the digests")
		}
	}
}

// lastLogIndex is node i's Raft last_log_index.
func (g *group) lastLogIndex(i int) uint64 {
	g.t.Helper()
	st := g.status(i, 2*time.Second)
	if st == nil {
		g.t.Fatalf("n%d does not answer RAFT STATUS", i+1)
	}
	n, err := strconv.ParseUint(st["last_log_index"], 10, 64)
	if err != nil {
		g.t.Fatalf("n%d last_log_index %q", i+1, st["last_log_index"])
	}
	return n
}

// event is one nemesis step, for the log and the liveness check: at is just before the
// fault, done once it is in place (the process reaped or stopped, the links blackholed).
type event struct {
	at, done time.Time
	what     string
	node     int // 0-based; -1 for all
}

// nemesis runs the schedule of design §5.3 from t0 (times relative to it) and returns the
// events: t=5 s SIGKILL the leader; t=10 s restart it; t=15 s SIGSTOP the leader for 3 s;
// t=22 s partition the leader from both followers for 5 s; t=30 s SIGKILL all three and
// restart them; t=35 s RAFT TRANSFER. killAll and restarted bound the kill-all window.
func (g *group) nemesis(t0 time.Time) (evs []event, killAll, restarted time.Time) {
	t := g.t
	t.Helper()
	at := func(s float64) { time.Sleep(time.Until(t0.Add(time.Duration(s * float64(time.Second))))) }
	note := func(what string, node int) time.Time {
		now := time.Now()
		evs = append(evs, event{at: now, done: now, what: what, node: node})
		t.Logf("t=%5.2fs %s n%d", now.Sub(t0).Seconds(), what, node+1)
		return now
	}
	// inPlace marks the last fault as in place.
	inPlace := func() { evs[len(evs)-1].done = time.Now() }

	// newLeader logs how long after since another node than old served as leader, polling
	// for at most d.
	newLeader := func(old int, since time.Time, d time.Duration) {
		for deadline := since.Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			for i := range g.nodes {
				if i == old {
					continue
				}
				if st := g.status(i, 200*time.Millisecond); st != nil && st["role"] == "leader" {
					t.Logf("        n%d serving as leader %v after it", i+1, time.Since(since).Round(time.Millisecond))
					return
				}
			}
		}
		t.Logf("        no other node serving as leader within %v", d)
	}

	at(5)
	l := g.waitLeader(20 * time.Second)
	killed := note("SIGKILL leader", l)
	g.nodes[l].Kill()
	inPlace()
	newLeader(l, killed, 4*time.Second)
	at(10)
	note("restart", l)
	g.nodes[l].Restart()

	at(15)
	l = g.waitLeader(20 * time.Second)
	stopped := note("SIGSTOP leader", l)
	g.nodes[l].Pause()
	inPlace()
	newLeader(l, stopped, 3*time.Second)
	time.Sleep(time.Until(stopped.Add(3 * time.Second)))
	note("SIGCONT", l)
	g.nodes[l].Resume()

	at(22)
	l = g.waitLeader(20 * time.Second)
	cut := note("partition leader from both followers", l)
	g.net.Isolate(l + 1)
	inPlace()
	newLeader(l, cut, 5*time.Second)
	time.Sleep(time.Until(cut.Add(5 * time.Second)))
	note("heal", l)
	g.net.Heal()

	at(30)
	killAll = note("SIGKILL all", -1)
	for _, n := range g.nodes {
		n.Kill()
	}
	inPlace()
	for _, n := range g.nodes {
		n.Restart()
	}
	restarted = note("all restarted", -1)

	at(35)
	l = g.waitLeader(20 * time.Second)
	note("RAFT TRANSFER from leader", l)
	if err := g.admin(l).Do(context.Background(), "RAFT", "TRANSFER").Err(); err != nil {
		t.Logf("RAFT TRANSFER on n%d: %v", l+1, err) // leadership may have moved meanwhile
	}
	at(40)
	return evs, killAll, restarted
}

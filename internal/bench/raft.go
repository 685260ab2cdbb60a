package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The replicated benchmark (`hotkv-bench raft`, issue 12): allowed GCRA.LIMIT decisions on a
// three-node Raft group, next to the same decisions on a standalone HotKV and on Redis, both
// with every write fsynced before its reply (appendfsync always, the durability a quorum
// commit stands for on one node), and the time a group takes to serve again after its leader
// is killed.

// Server names in RaftResults.
const (
	NameRaft       = "HotKV Raft (3 nodes)"
	NameStandalone = "HotKV standalone, appendfsync always"
	NameRedisAOF   = "Redis 7, appendfsync always"
)

// RaftAllowed is the replicated benchmark's request: every decision is allowed, so every one
// journals an effect and travels through the Raft log. Keys are drawn from 10^6 numbers: a whole
// `hotkv-bench raft` sends about 20 million decisions, some 20 per key, far below a key's burst
// of 1000. The keyspace is bounded so that every server holds a rate limiter's active set of a
// million keys throughout; drawn from 10^12, every decision created a key, and each pipelined
// round grew the group's dataset by a million keys or more, until at 4 to 7 million keys (heaps
// of 1-2 GB on each node, sharing 2 cores) garbage collection took 1.3-3.5 s a cycle and a
// leader missed its heartbeats: what was measured was the growth. The limit, 1000 per 1000 hours, keeps each key for an hour: no key expires
// during a run, so the log carries the decisions' effects only (with a TTL of seconds, every
// decision would also cost a replicated DEL when its key expires: the expiry's cost, not the
// decision's). Redis runs the same GCRA in Lua (GCRALua, the same limit).
var RaftAllowed = Workload{Name: "gcra-allowed",
	HotKV:   []string{"GCRA.LIMIT", "rl:" + RandPlaceholder, "3600000000", "1000"},
	Redis:   []string{"EVALSHA", "{sha:gcra}", "1", "rl:" + RandPlaceholder, "1000", "1000", "3600000", "1"},
	Scripts: map[string]string{"gcra": GCRALua},
	Note:    "burst 1000 per 1000 hours (each key lives an hour), on keys drawn from 10^6: every decision is allowed and journals one effect"}

// raftKeyspace is what RaftAllowed's keys are drawn from.
const raftKeyspace = 1_000_000

// RaftConfig sets what `hotkv-bench raft` measures.
type RaftConfig struct {
	HotKVBin, RedisBin string
	// Addrs, when set, are the client addresses of a running group to measure instead of
	// starting one; failovers and the comparisons are then skipped.
	Addrs []string
	// Conns is the number of client connections (the 256).
	Conns int
	// Pipelines are the pipeline depths measured; the first is the headline.
	Pipelines []int
	Rounds    int
	Duration  time.Duration
	Warmup    time.Duration
	// Compare adds the standalone HotKV and Redis, both with appendfsync always.
	Compare bool
	// Failovers is how many times the leader is killed (SIGKILL) under load.
	Failovers int
	// FailoverConns is the load's connection count during a failover.
	FailoverConns int
	// ServerArgs are extra arguments for every node of the group (raft-* directives, say).
	ServerArgs []string
	// Keep leaves the group's directories (data, server.log) in place for a look afterwards.
	Keep bool
	Log  io.Writer
}

func (c *RaftConfig) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// FailoverRow is one leader kill.
type FailoverRow struct {
	Killed    string `json:"killed"`
	NewLeader string `json:"new_leader"`
	// ElectedMs is from the SIGKILL to the first RAFT STATUS of a survivor naming itself the
	// leader (role promoting or leader).
	ElectedMs float64 `json:"elected_ms"`
	// ServingMs is from the SIGKILL to the first allowed GCRA.LIMIT reply from a survivor.
	ServingMs float64 `json:"serving_ms"`
	Term      string  `json:"term"`
	// Backlog is, at the first status naming the new leader, how many log entries it held
	// beyond those it had applied: what it still had to apply before serving.
	Backlog int64 `json:"backlog"`
	// ServingTerm is the new leader's term once it served: above Term when the first leader
	// elected lost its leadership before it served.
	ServingTerm string `json:"serving_term"`
}

// RaftResults is what one `hotkv-bench raft` run measured.
type RaftResults struct {
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Machine Machine   `json:"machine"`
	Config  string    `json:"config"`
	// Settings are the group's non-default server arguments ("" for the defaults).
	Settings  string        `json:"settings"`
	Servers   []string      `json:"servers"`
	Cases     []CaseResult  `json:"cases"`
	Failovers []FailoverRow `json:"failovers,omitempty"`
}

// RaftNode is one member of a group the benchmark started.
type RaftNode struct {
	ID     string
	Client string
	Raft   string
	bin    string
	dir    string
	port   int
	args   []string
	proc   *Proc
}

// RaftGroup is a three-node group of hotkv-server processes on 127.0.0.1, or the addresses of
// one that runs elsewhere (nodes without processes).
type RaftGroup struct {
	Nodes []*RaftNode
	root  string
	keep  bool
}

// StartRaftGroup starts n nodes in fresh directories, bootstraps the first and adds the others
// with RAFT ADD, and returns once every node has applied the membership.
func StartRaftGroup(ctx context.Context, bin string, n int, extra []string) (*RaftGroup, error) {
	root, err := os.MkdirTemp("", "hotkv-bench-raft-")
	if err != nil {
		return nil, err
	}
	g := &RaftGroup{root: root}
	ok := false
	defer func() {
		if !ok {
			g.Stop()
		}
	}()
	for i := range n {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		rport, err := freePort()
		if err != nil {
			return nil, err
		}
		nd := &RaftNode{ID: fmt.Sprintf("n%d", i+1), Client: fmt.Sprintf("127.0.0.1:%d", port), Raft: fmt.Sprintf("127.0.0.1:%d", rport),
			bin: bin, dir: filepath.Join(root, fmt.Sprintf("n%d", i+1)), port: port}
		nd.args = append([]string{"--bind", "127.0.0.1", "--save", "", "--loglevel", "warning", "--maxclients", "19000",
			"--raft-port", strconv.Itoa(rport), "--raft-node-id", nd.ID}, extra...)
		if i == 0 {
			nd.args = append(nd.args, "--raft-bootstrap", "yes")
		}
		if err := os.MkdirAll(nd.dir, 0o755); err != nil {
			return nil, err
		}
		if err := nd.start(ctx); err != nil {
			return nil, err
		}
		g.Nodes = append(g.Nodes, nd)
	}
	if _, err := g.Leader(ctx, 20*time.Second); err != nil {
		return nil, err
	}
	for _, nd := range g.Nodes[1:] {
		if _, err := Do(ctx, g.Nodes[0].Client, "RAFT", "ADD", nd.ID, nd.Raft); err != nil {
			return nil, fmt.Errorf("RAFT ADD %s: %w", nd.ID, err)
		}
	}
	if err := g.waitCaughtUp(ctx, 20*time.Second); err != nil {
		return nil, err
	}
	ok = true
	return g, nil
}

// AttachRaftGroup describes a running group by its members' client addresses.
func AttachRaftGroup(addrs []string) *RaftGroup {
	g := &RaftGroup{}
	for _, a := range addrs {
		g.Nodes = append(g.Nodes, &RaftNode{Client: a})
	}
	return g
}

func (nd *RaftNode) start(ctx context.Context) error {
	p, err := launch(ctx, nd.ID, nd.bin, false, nil, nd.dir, nd.port, nd.args)
	if err != nil {
		return err
	}
	nd.proc = p
	return nil
}

// Stop kills every node the benchmark started and removes their directories.
func (g *RaftGroup) Stop() {
	for _, nd := range g.Nodes {
		if nd.proc != nil {
			nd.proc.kill()
		}
	}
	if g.root != "" && !g.keep {
		os.RemoveAll(g.root)
	}
}

// RaftStatus reads a node's RAFT STATUS as a map.
func RaftStatus(ctx context.Context, addr string, timeout time.Duration) (map[string]string, error) {
	return statusMap(ctx, addr, timeout, "RAFT", "STATUS")
}

// statusMap runs a command that answers a map (a flat array in RESP2) and returns it.
func statusMap(ctx context.Context, addr string, timeout time.Duration, args ...any) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
	defer c.Close()
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	switch v := v.(type) {
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			m[fmt.Sprint(v[i])] = fmt.Sprint(v[i+1])
		}
	case map[any]any:
		for k, x := range v {
			m[fmt.Sprint(k)] = fmt.Sprint(x)
		}
	}
	return m, nil
}

// Leader waits for a node that reports itself the serving leader.
func (g *RaftGroup) Leader(ctx context.Context, wait time.Duration) (*RaftNode, error) {
	deadline := time.Now().Add(wait)
	for {
		for _, nd := range g.Nodes {
			if nd.proc == nil && nd.bin != "" {
				continue // killed
			}
			if st, err := RaftStatus(ctx, nd.Client, time.Second); err == nil && st["role"] == "leader" {
				if nd.ID == "" {
					nd.ID = st["node_id"]
				}
				return nd, nil
			}
		}
		if time.Now().After(deadline) {
			return nil, errors.New("no node became the serving leader")
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
}

// waitCaughtUp waits until every running node is a member of a full group and has applied
// the leader's commit index as it was when the wait began.
func (g *RaftGroup) waitCaughtUp(ctx context.Context, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	leader, err := g.Leader(ctx, wait)
	if err != nil {
		return err
	}
	st, err := RaftStatus(ctx, leader.Client, time.Second)
	if err != nil {
		return err
	}
	target, _ := strconv.ParseUint(st["commit_index"], 10, 64)
	for _, nd := range g.Nodes {
		for {
			st, err := RaftStatus(ctx, nd.Client, time.Second)
			if err == nil {
				applied, _ := strconv.ParseUint(st["applied_index"], 10, 64)
				// apply_pending: applied_index counts entries queued for the apply loop, not
				// applied; a restarted node can be seconds behind with it caught up.
				if applied >= target && st["apply_pending"] == "0" && strings.Count(st["members"], "/voter") == len(g.Nodes) {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s did not catch up to index %d: %v %v", nd.ID, target, st, err)
			}
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// cpu is the group's CPU time so far (user + system), all nodes together and the leader's.
func (g *RaftGroup) cpu(leader *RaftNode) (all, lead time.Duration) {
	for _, nd := range g.Nodes {
		if nd.proc == nil {
			continue
		}
		u, s, err := nd.proc.CPUTime()
		if err != nil {
			continue
		}
		all += u + s
		if nd == leader {
			lead = u + s
		}
	}
	return all, lead
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RunRaft runs the replicated benchmark: rounds of throughput runs on the group (and the
// comparisons, interleaved), then the failovers.
func RunRaft(ctx context.Context, cfg RaftConfig) (*RaftResults, error) {
	cfg.Conns = cmp.Or(cfg.Conns, 256)
	cfg.Rounds = cmp.Or(cfg.Rounds, 1)
	if len(cfg.Pipelines) == 0 {
		cfg.Pipelines = []int{1}
	}
	res := &RaftResults{Started: time.Now(), Machine: DescribeMachine(), Settings: strings.Join(cfg.ServerArgs, " "),
		Config: fmt.Sprintf("%d interleaved rounds of %s runs after %s warmup, %d connections; keys drawn uniformly from 10^6", cfg.Rounds, cfg.Duration, cfg.Warmup, cfg.Conns)}
	if _, err := RaiseFileLimit(); err != nil {
		return nil, err
	}
	var g *RaftGroup
	if len(cfg.Addrs) > 0 {
		g = AttachRaftGroup(cfg.Addrs)
		cfg.Compare, cfg.Failovers = false, 0
	} else {
		cfg.logf("starting a 3-node group")
		var err error
		if g, err = StartRaftGroup(ctx, cfg.HotKVBin, 3, cfg.ServerArgs); err != nil {
			return nil, err
		}
		if cfg.Keep {
			g.keep = true
			cfg.logf("the group's directories stay in %s", g.root)
		}
		defer g.Stop()
	}
	leader, err := g.Leader(ctx, 20*time.Second)
	if err != nil {
		return nil, err
	}
	res.Machine.HotKV = Version(ctx, leader.Client)
	res.Servers = []string{NameRaft}

	type target struct {
		name string
		proc *Proc
		tmpl Template
	}
	tmpl, err := RaftAllowed.Prepare(ctx, leader.Client, false)
	if err != nil {
		return nil, err
	}
	targets := []*target{{name: NameRaft, tmpl: tmpl}}
	if cfg.Compare {
		// No automatic log rewrites: all three servers stay up through every round, and a
		// rewrite started by one (a fork writing hundreds of MB, in Redis's case) would run
		// during the others' rounds and measure the machine, not the server under test.
		hk, err := StartHotKV(ctx, NameStandalone, cfg.HotKVBin, nil, "--appendonly", "yes", "--appendfsync", "always",
			"--auto-aof-rewrite-percentage", "0")
		if err != nil {
			return nil, err
		}
		defer hk.Stop()
		rd, err := StartRedis(ctx, NameRedisAOF, cfg.RedisBin, "--appendonly", "yes", "--appendfsync", "always",
			"--auto-aof-rewrite-percentage", "0")
		if err != nil {
			return nil, err
		}
		defer rd.Stop()
		res.Machine.Redis = Version(ctx, rd.Addr)
		for _, p := range []*Proc{hk, rd} {
			t, err := RaftAllowed.Prepare(ctx, p.Addr, p.Redis)
			if err != nil {
				return nil, err
			}
			targets = append(targets, &target{name: p.Name, proc: p, tmpl: t})
			res.Servers = append(res.Servers, p.Name)
		}
	}

	for _, pipe := range cfg.Pipelines {
		cr := CaseResult{Workload: RaftAllowed.Name, Title: "GCRA.LIMIT, allowed", Note: RaftAllowed.Note, Conns: cfg.Conns, Pipeline: pipe,
			Samples: map[string][]Sample{}}
		for round := range cfg.Rounds {
			for _, t := range targets {
				addr := ""
				var lead *RaftNode
				if t.proc != nil {
					addr = t.proc.Addr
				} else {
					if lead, err = g.Leader(ctx, 20*time.Second); err != nil {
						return nil, err
					}
					addr = lead.Client
				}
				var c0, l0 time.Duration
				if t.proc != nil {
					u, s, _ := t.proc.CPUTime()
					c0 = u + s
				} else {
					c0, l0 = g.cpu(lead)
				}
				cl0 := selfCPU()
				r, err := Run(ctx, Config{Addr: addr, Conns: cfg.Conns, Pipeline: pipe, Duration: cfg.Duration, Warmup: cfg.Warmup,
					Keyspace: raftKeyspace, Commands: []Template{t.tmpl}, Seed: uint64(time.Now().UnixNano()), CountFirst: true})
				if err != nil {
					return nil, fmt.Errorf("%s: %w", t.name, err)
				}
				if r.Errors > 0 {
					return nil, fmt.Errorf("%s: %d error replies, first: %s", t.name, r.Errors, r.FirstError)
				}
				cl1 := selfCPU()
				var c1, l1 time.Duration
				if t.proc != nil {
					u, s, _ := t.proc.CPUTime()
					c1 = u + s
				} else {
					c1, l1 = g.cpu(lead)
				}
				// GCRA.LIMIT answers 0 (not denied) first; the Lua GCRA answers the count admitted.
				allowed := r.FirstZero
				if t.proc != nil && t.proc.Redis {
					allowed = r.FirstNonZero
				}
				perReq := func(d time.Duration) float64 { return float64(d) / 1e3 / float64(max(r.Total, 1)) }
				s := Sample{RPS: r.Throughput(), P50: msf(r.Hist.Quantile(0.5)), P99: msf(r.Hist.Quantile(0.99)), P999: msf(r.Hist.Quantile(0.999)),
					UserUs: perReq(c1 - c0), LeaderUs: perReq(l1 - l0), ClientUs: perReq(cl1 - cl0), Allowed: allowed, Decisions: r.Requests}
				cr.Samples[t.name] = append(cr.Samples[t.name], s)
				cfg.logf("  round %d, pipeline %d, %-38s %8.0f allowed/s  p50 %6.2f  p99 %6.2f ms  allowed %d of %d  cpu/req %.1f us",
					round+1, pipe, t.name, s.RPS*s.AllowedFrac(), s.P50, s.P99, s.Allowed, s.Decisions, s.UserUs)
				cfg.logf("    (leader %.1f us, load generator %.1f us per request)", s.LeaderUs, s.ClientUs)
			}
		}
		res.Cases = append(res.Cases, cr)
	}

	for i := range cfg.Failovers {
		f, err := g.failover(ctx, cfg.FailoverConns)
		if err != nil {
			return nil, fmt.Errorf("failover %d: %w", i+1, err)
		}
		cfg.logf("  failover %d: killed %s, %s elected after %.0f ms, serving after %.0f ms (term %s, serving in term %s, %d entries to apply when elected)", i+1, f.Killed, f.NewLeader, f.ElectedMs, f.ServingMs, f.Term, f.ServingTerm, f.Backlog)
		res.Failovers = append(res.Failovers, f)
	}
	res.Seconds = time.Since(res.Started).Seconds()
	return res, nil
}

// selfCPU is this process's CPU time so far (user + system).
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// AllowedFrac is the fraction of a sample's measured decisions that were allowed (1 when the
// sample counted none).
func (s Sample) AllowedFrac() float64 {
	if s.Decisions == 0 {
		return 1
	}
	return float64(s.Allowed) / float64(s.Decisions)
}

// failover kills the leader with SIGKILL while conns connections load it, and measures how
// long the survivors take to elect a new leader (their RAFT STATUS) and to serve an allowed
// decision. The killed node is then restarted and caught up, so the next kill finds the
// group whole.
func (g *RaftGroup) failover(ctx context.Context, conns int) (FailoverRow, error) {
	leader, err := g.Leader(ctx, 20*time.Second)
	if err != nil {
		return FailoverRow{}, err
	}
	tmpl, err := RaftAllowed.Prepare(ctx, leader.Client, false)
	if err != nil {
		return FailoverRow{}, err
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var loadWG sync.WaitGroup
	loadWG.Add(1)
	go func() {
		defer loadWG.Done()
		// The load ends with an error when its server dies: that is the point.
		_, _ = Run(loadCtx, Config{Addr: leader.Client, Conns: max(conns, 1), Pipeline: 1, Duration: time.Minute,
			Keyspace: raftKeyspace, Commands: []Template{tmpl}, Seed: uint64(time.Now().UnixNano())})
	}()
	if err := sleepCtx(ctx, time.Second); err != nil {
		return FailoverRow{}, err
	}

	var survivors []*RaftNode
	for _, nd := range g.Nodes {
		if nd != leader {
			survivors = append(survivors, nd)
		}
	}
	probeCtx, stopProbes := context.WithTimeout(ctx, 30*time.Second)
	defer stopProbes()
	var (
		mu        sync.Mutex
		elected   time.Time
		serving   time.Time
		newLeader string
		term      string
		backlog   int64
		wg        sync.WaitGroup
	)
	var killedAt time.Time
	kill := make(chan struct{})
	for i, nd := range survivors {
		// One prober sends allowed decisions to each survivor as fast as it answers (errors
		// such as MOVED and CLUSTERDOWN come back at once; a 1 ms pause between them keeps
		// the probers from taking the CPU the election needs).
		wg.Add(2)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: nd.Client, Protocol: 2, DisableIdentity: true, MaxRetries: -1,
				DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second, PoolSize: 1})
			defer c.Close()
			<-kill
			for n := 0; probeCtx.Err() == nil; n++ {
				v, err := c.Do(probeCtx, "GCRA.LIMIT", fmt.Sprintf("failover:%d:%d:%d", time.Now().UnixNano(), i, n), "3600000000", "1000").Result()
				if err == nil {
					if a, ok := v.([]any); ok && len(a) > 0 && a[0] == int64(0) {
						mu.Lock()
						if serving.IsZero() {
							serving, newLeader = time.Now(), nd.ID
						}
						mu.Unlock()
						stopProbes()
						return
					}
				}
				time.Sleep(time.Millisecond)
			}
		}()
		go func() {
			defer wg.Done()
			<-kill
			for probeCtx.Err() == nil {
				st, err := RaftStatus(probeCtx, nd.Client, time.Second)
				if err == nil && (st["role"] == "leader" || st["role"] == "promoting") {
					mu.Lock()
					if elected.IsZero() {
						elected, term = time.Now(), st["term"]
						last, _ := strconv.ParseInt(st["last_log_index"], 10, 64)
						applied, _ := strconv.ParseInt(st["applied_index"], 10, 64)
						backlog = last - applied
					}
					mu.Unlock()
					return
				}
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	killedAt = time.Now()
	if err := leader.proc.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return FailoverRow{}, err
	}
	close(kill)
	leader.proc.kill()
	leader.proc = nil
	wg.Wait()
	stopLoad()
	loadWG.Wait()
	if serving.IsZero() {
		return FailoverRow{}, errors.New("no survivor served an allowed decision within 30 s")
	}
	if elected.IsZero() || elected.After(serving) {
		// Served before a status poll saw the election: the serving time bounds it.
		elected = serving
	}
	servingTerm := ""
	for _, nd := range survivors {
		if nd.ID == newLeader {
			if st, err := RaftStatus(ctx, nd.Client, time.Second); err == nil {
				servingTerm = st["term"]
			}
		}
	}
	if term == "" {
		term = servingTerm
	}
	row := FailoverRow{Killed: leader.ID, NewLeader: newLeader, Term: term, ServingTerm: servingTerm, Backlog: backlog,
		ElectedMs: msf(elected.Sub(killedAt)), ServingMs: msf(serving.Sub(killedAt))}

	// Bring the killed node back (same directory and ports) and let it catch up.
	if err := leader.start(ctx); err != nil {
		return row, fmt.Errorf("restarting %s: %w", leader.ID, err)
	}
	if err := g.waitCaughtUp(ctx, 60*time.Second); err != nil {
		return row, err
	}
	return row, nil
}

// FailoverStats are the min, median and max of a column of failovers.
func FailoverStats(rows []FailoverRow, f func(FailoverRow) float64) (lo, med, hi float64) {
	var xs []float64
	for _, r := range rows {
		xs = append(xs, f(r))
	}
	if len(xs) == 0 {
		return 0, 0, 0
	}
	return slices.Min(xs), Median(xs), slices.Max(xs)
}

package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/replication"
)

// The sharded benchmark (`hotkv-bench cluster`): how allowed GCRA.LIMIT decisions per second
// grow with the number of shards of a cluster (each shard a Raft group, docs/cluster.md), and
// how long CLUSTERX MIGRATE takes to move a slot range holding a million keys from one shard
// to another. The load generator routes every key itself (ShardKeyPools): a connection is
// bound to one shard's leader and sends only keys of that shard's slots, so no request is
// redirected and what is measured is the shards' own work.

// ClusterSlots is the number of hash slots, as in Redis Cluster.
const ClusterSlots = 16384

// SlotRange is a contiguous range of hash slots [Start, End], as CLUSTERX ASSIGN and
// CLUSTERX MIGRATE take them.
type SlotRange struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (r SlotRange) String() string { return fmt.Sprintf("%d-%d", r.Start, r.End) }

// Contains reports whether slot is in the range.
func (r SlotRange) Contains(slot int) bool { return slot >= r.Start && slot <= r.End }

// EvenSlots splits the slots into n contiguous ranges as scripts/cluster-demo.sh does: shard
// k (0-based) gets [k*16384/n, (k+1)*16384/n - 1].
func EvenSlots(n int) []SlotRange {
	out := make([]SlotRange, n)
	for k := range n {
		out[k] = SlotRange{k * ClusterSlots / n, (k+1)*ClusterSlots/n - 1}
	}
	return out
}

// ShardOfSlot is the index of the range that holds slot, or -1 when none does.
func ShardOfSlot(ranges []SlotRange, slot int) int {
	for i, r := range ranges {
		if r.Contains(slot) {
			return i
		}
	}
	return -1
}

// ShardKeyPools routes key numbers to shards: it walks the numbers 0, 1, 2, ..., computes the
// slot of the key each stands for in t (Template.AppendKey, replication.KeySlot), and appends the
// number to the pool of the range that holds the slot, until every pool has per numbers.
// Numbers whose keys fall in no range are skipped, which is how the slot move's fill keeps to
// the one range it moves. The numbers are distinct, so a fill of a whole pool creates exactly
// per keys. ranges must each hold at least one slot.
func ShardKeyPools(t Template, ranges []SlotRange, per int) [][]uint64 {
	pools := make([][]uint64, len(ranges))
	for i := range pools {
		pools[i] = make([]uint64, 0, per)
	}
	full := 0
	if per <= 0 {
		full = len(ranges)
	}
	var key []byte
	for n := uint64(0); full < len(ranges); n++ {
		key = t.AppendKey(key[:0], n)
		k := ShardOfSlot(ranges, replication.KeySlot(key))
		if k < 0 || len(pools[k]) == per {
			continue
		}
		pools[k] = append(pools[k], n)
		if len(pools[k]) == per {
			full++
		}
	}
	return pools
}

// SplitConns spreads conns connections over n shards as evenly as they go (the first
// conns%n shards get one more).
func SplitConns(conns, n int) []int {
	out := make([]int, n)
	for k := range n {
		out[k] = conns / n
		if k < conns%n {
			out[k]++
		}
	}
	return out
}

// ClusterConfig sets what `hotkv-bench cluster` measures.
type ClusterConfig struct {
	HotKVBin string
	// Shards are the shard counts of the scaling runs (the 1, 2, 3); none skips them.
	Shards []int
	// Nodes is each shard's group size: 1 (single-node shards) or 3.
	Nodes int
	// Conns is the number of client connections in all, spread over the shards' leaders.
	Conns int
	// Pipelines are the pipeline depths measured; the first is the headline.
	Pipelines []int
	Rounds    int
	Duration  time.Duration
	Warmup    time.Duration
	// PoolKeys is how many key numbers each shard's connections draw from.
	PoolKeys int
	// MoveKeys is how many keys the slot move's source shard holds (0 skips the move).
	MoveKeys int64
	// ServerArgs are extra arguments for every node.
	ServerArgs []string
	// Keep leaves the nodes' directories in place for a look afterwards.
	Keep bool
	Log  io.Writer
}

func (c *ClusterConfig) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// ScalingRow is one shard count at one pipeline depth.
type ScalingRow struct {
	Shards   int `json:"shards"`
	Pipeline int `json:"pipeline"`
	Conns    int `json:"conns"`
	// Samples: RPS is every shard's decisions together; UserUs is every node's CPU per
	// decision (user + kernel), LeaderUs the shards' leaders' alone.
	Samples []Sample `json:"samples"`
}

// MoveResult is one slot move under measurement.
type MoveResult struct {
	Slots SlotRange `json:"slots"`
	From  string    `json:"from"`
	To    string    `json:"to"`
	// Keys is how many keys the source held in the range (Strings plain strings, GCRA
	// GCRA.LIMIT states); FillSeconds is how long writing them took.
	Keys        int64   `json:"keys"`
	Strings     int64   `json:"strings"`
	GCRA        int64   `json:"gcra"`
	FillSeconds float64 `json:"fill_seconds"`
	// SourceBefore is the source leader's DBSIZE before the move.
	SourceBefore int64 `json:"source_before"`
	// WallMs is from CLUSTERX MIGRATE sent to the source leader reporting the move done
	// (CLUSTERX STATUS: migrations 0, last_move naming the range), polled every 5 ms.
	WallMs float64 `json:"wall_ms"`
	// ServerMs, MovedKeys and MovedLimiters are the source leader's last_move: from the
	// fence to the slot map giving the range to the target.
	ServerMs      int64 `json:"server_ms"`
	MovedKeys     int64 `json:"moved_keys"`
	MovedLimiters int64 `json:"moved_limiters"`
	// TargetKeys is the target leader's DBSIZE right after the move; TargetNodesOK whether
	// every node of the target reported the same within 60 s.
	TargetKeys    int64 `json:"target_keys"`
	TargetNodesOK bool  `json:"target_nodes_ok"`
	// UnavailableMs is the longest time a probe of one moved key went unanswered: a GET every
	// 2 ms to the source leader, and to the target leader when the source redirects, from just
	// before MIGRATE to the target's first answer after the move is reported done (the range
	// answers -TRYAGAIN from the fence to the new slot map reaching the target).
	UnavailableMs float64 `json:"unavailable_ms"`
	// SourceAfter is the source leader's DBSIZE once the drop was seen (or after 60 s);
	// DroppedMs is from MIGRATE sent to that DBSIZE reading 0 (0 when it never did).
	SourceAfter int64   `json:"source_after"`
	DroppedMs   float64 `json:"dropped_ms"`
	// EpochBefore and EpochAfter are the slot map's epoch around the move.
	EpochBefore string `json:"epoch_before"`
	EpochAfter  string `json:"epoch_after"`
}

// MsPerMillion is the move's wall time scaled to a million keys.
func (m *MoveResult) MsPerMillion() float64 {
	if m.Keys == 0 {
		return 0
	}
	return m.WallMs * 1e6 / float64(m.Keys)
}

// ClusterResults is what one `hotkv-bench cluster` run measured.
type ClusterResults struct {
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Machine Machine   `json:"machine"`
	Config  string    `json:"config"`
	// Nodes is each shard's group size.
	Nodes    int          `json:"nodes"`
	Settings string       `json:"settings"`
	Scaling  []ScalingRow `json:"scaling"`
	Move     *MoveResult  `json:"move,omitempty"`
}

// ShardedCluster is a cluster of hotkv-server processes on 127.0.0.1 the benchmark started:
// Shards[k] is shard s<k+1>, a Raft group; node n1 started the meta group.
type ShardedCluster struct {
	Shards []*RaftGroup
	root   string
	keep   bool
}

// StartCluster starts shards groups of nodes processes each and forms the cluster the way
// scripts/cluster-demo.sh does: each shard's first node bootstraps its group and adds the
// others with RAFT ADD, every node but n1 joins the cluster n1 started (the first node of
// each shard first, so the meta group's voters sit in different shards), and the slots are
// spread evenly (EvenSlots). It returns once every node reports cluster_state:ok.
func StartCluster(ctx context.Context, bin string, shards, nodes int, extra []string) (*ShardedCluster, error) {
	root, err := os.MkdirTemp("", "hotkv-bench-cluster-")
	if err != nil {
		return nil, err
	}
	c := &ShardedCluster{root: root}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()
	id := 0
	for s := range shards {
		g := &RaftGroup{}
		c.Shards = append(c.Shards, g)
		for i := range nodes {
			id++
			port, err := freePort()
			if err != nil {
				return nil, err
			}
			rport, err := freePort()
			if err != nil {
				return nil, err
			}
			mport, err := freePort()
			if err != nil {
				return nil, err
			}
			nd := &RaftNode{ID: fmt.Sprintf("n%d", id), Client: fmt.Sprintf("127.0.0.1:%d", port), Raft: fmt.Sprintf("127.0.0.1:%d", rport),
				bin: bin, dir: filepath.Join(root, fmt.Sprintf("n%d", id)), port: port}
			nd.args = []string{"--bind", "127.0.0.1", "--save", "", "--loglevel", "warning", "--maxclients", "19000",
				"--raft-port", strconv.Itoa(rport), "--raft-node-id", nd.ID,
				"--cluster-enabled", "yes", "--cluster-shard-id", fmt.Sprintf("s%d", s+1), "--cluster-meta-port", strconv.Itoa(mport)}
			if i == 0 {
				nd.args = append(nd.args, "--raft-bootstrap", "yes")
			}
			if id == 1 {
				nd.args = append(nd.args, "--cluster-meta-bootstrap", "yes")
			}
			nd.args = append(nd.args, extra...)
			if err := os.MkdirAll(nd.dir, 0o755); err != nil {
				return nil, err
			}
			if err := nd.start(ctx); err != nil {
				return nil, err
			}
			g.Nodes = append(g.Nodes, nd)
		}
		if _, err := g.Leader(ctx, 20*time.Second); err != nil {
			return nil, fmt.Errorf("shard s%d: %w", s+1, err)
		}
		for _, nd := range g.Nodes[1:] {
			if _, err := Do(ctx, g.Nodes[0].Client, "RAFT", "ADD", nd.ID, nd.Raft); err != nil {
				return nil, fmt.Errorf("RAFT ADD %s: %w", nd.ID, err)
			}
		}
		if err := g.waitCaughtUp(ctx, 20*time.Second); err != nil {
			return nil, fmt.Errorf("shard s%d: %w", s+1, err)
		}
	}
	first := c.Shards[0].Nodes[0]
	if err := waitFor(ctx, 20*time.Second, "n1 leading the meta group", func() bool {
		st, err := ClusterStatus(ctx, first.Client)
		return err == nil && st["meta_state"] == "leader"
	}); err != nil {
		return nil, err
	}
	for i := range nodes {
		for _, g := range c.Shards {
			if nd := g.Nodes[i]; nd != first {
				if _, err := Do(ctx, nd.Client, "CLUSTERX", "JOIN", "127.0.0.1", strconv.Itoa(first.port)); err != nil {
					return nil, fmt.Errorf("CLUSTERX JOIN on %s: %w", nd.ID, err)
				}
			}
		}
	}
	// Each node records itself in the map on its own (its syncer): ASSIGN needs every shard
	// there.
	if err := waitFor(ctx, 20*time.Second, "every shard in the slot map", func() bool {
		st, err := ClusterStatus(ctx, first.Client)
		return err == nil && st["shards"] == strconv.Itoa(shards)
	}); err != nil {
		return nil, err
	}
	for k, r := range EvenSlots(shards) {
		if _, err := Do(ctx, first.Client, "CLUSTERX", "ASSIGN", fmt.Sprintf("s%d", k+1), r.Start, r.End); err != nil {
			return nil, fmt.Errorf("CLUSTERX ASSIGN s%d %s: %w", k+1, r, err)
		}
	}
	if err := c.waitOK(ctx, 30*time.Second); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

// waitOK waits until every node reports cluster_state:ok.
func (c *ShardedCluster) waitOK(ctx context.Context, wait time.Duration) error {
	return waitFor(ctx, wait, "cluster_state:ok on every node", func() bool {
		for _, g := range c.Shards {
			for _, nd := range g.Nodes {
				v, err := Do(ctx, nd.Client, "CLUSTER", "INFO")
				if err != nil || !strings.Contains(fmt.Sprint(v), "cluster_state:ok") {
					return false
				}
			}
		}
		return true
	})
}

// Stop kills every node and removes their directories (unless kept).
func (c *ShardedCluster) Stop() {
	for _, g := range c.Shards {
		g.Stop()
	}
	if c.root != "" && !c.keep {
		os.RemoveAll(c.root)
	}
}

// Leaders are the shards' serving leaders, in shard order.
func (c *ShardedCluster) Leaders(ctx context.Context) ([]*RaftNode, error) {
	out := make([]*RaftNode, len(c.Shards))
	for k, g := range c.Shards {
		nd, err := g.Leader(ctx, 20*time.Second)
		if err != nil {
			return nil, fmt.Errorf("shard s%d: %w", k+1, err)
		}
		out[k] = nd
	}
	return out, nil
}

// cpu is the CPU time so far (user + system) of every node, and of the leaders given.
func (c *ShardedCluster) cpu(leaders []*RaftNode) (all, lead time.Duration) {
	for _, g := range c.Shards {
		for _, nd := range g.Nodes {
			if nd.proc == nil {
				continue
			}
			u, s, err := nd.proc.CPUTime()
			if err != nil {
				continue
			}
			all += u + s
			for _, l := range leaders {
				if l == nd {
					lead += u + s
				}
			}
		}
	}
	return all, lead
}

// ClusterStatus reads a node's CLUSTERX STATUS as a map.
func ClusterStatus(ctx context.Context, addr string) (map[string]string, error) {
	return statusMap(ctx, addr, time.Second, "CLUSTERX", "STATUS")
}

// waitFor polls cond every 20 ms until it holds or wait has passed.
func waitFor(ctx context.Context, wait time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out waiting for %s", what)
		}
		if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// dbsize is a node's DBSIZE. The connection is READONLY, so that a follower answers from its
// own state instead of redirecting to its leader (a leader ignores READONLY).
func dbsize(ctx context.Context, addr string) (int64, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true, PoolSize: 1, MaxRetries: -1,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
	defer c.Close()
	return c.DBSize(ctx).Result()
}

// RunCluster runs the sharded benchmark: for each shard count a fresh cluster under load,
// then the slot move on a fresh 2-shard cluster.
func RunCluster(ctx context.Context, cfg ClusterConfig) (*ClusterResults, error) {
	cfg.Nodes = cmp.Or(cfg.Nodes, 1)
	cfg.Conns = cmp.Or(cfg.Conns, 256)
	cfg.Rounds = cmp.Or(cfg.Rounds, 1)
	cfg.PoolKeys = cmp.Or(cfg.PoolKeys, 1<<20)
	if len(cfg.Pipelines) == 0 {
		cfg.Pipelines = []int{1}
	}
	res := &ClusterResults{Started: time.Now(), Machine: DescribeMachine(), Nodes: cfg.Nodes, Settings: strings.Join(cfg.ServerArgs, " "),
		Config: fmt.Sprintf("%d rounds of %s runs after %s warmup per shard count and pipeline, %d connections in all", cfg.Rounds, cfg.Duration, cfg.Warmup, cfg.Conns)}
	if _, err := RaiseFileLimit(); err != nil {
		return nil, err
	}
	for _, s := range cfg.Shards {
		rows, err := runScaling(ctx, &cfg, s, res)
		if err != nil {
			return nil, fmt.Errorf("%d shards: %w", s, err)
		}
		res.Scaling = append(res.Scaling, rows...)
	}
	if cfg.MoveKeys > 0 {
		m, err := runMove(ctx, &cfg, res)
		if err != nil {
			return nil, fmt.Errorf("slot move: %w", err)
		}
		res.Move = m
	}
	res.Seconds = time.Since(res.Started).Seconds()
	return res, nil
}

func (cfg *ClusterConfig) start(ctx context.Context, shards int) (*ShardedCluster, error) {
	cfg.logf("starting a cluster of %d shard(s) of %d node(s)", shards, cfg.Nodes)
	c, err := StartCluster(ctx, cfg.HotKVBin, shards, cfg.Nodes, cfg.ServerArgs)
	if err != nil {
		return nil, err
	}
	if cfg.Keep {
		c.keep = true
		cfg.logf("the cluster's directories stay in %s", c.root)
	}
	return c, nil
}

// runScaling measures allowed decisions on a fresh cluster of shards shards, every pipeline
// depth in turn, rounds times.
func runScaling(ctx context.Context, cfg *ClusterConfig, shards int, res *ClusterResults) ([]ScalingRow, error) {
	c, err := cfg.start(ctx, shards)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	leaders, err := c.Leaders(ctx)
	if err != nil {
		return nil, err
	}
	if res.Machine.HotKV == "" {
		res.Machine.HotKV = Version(ctx, leaders[0].Client)
	}
	tmpl, err := RaftAllowed.Prepare(ctx, leaders[0].Client, false)
	if err != nil {
		return nil, err
	}
	pools := ShardKeyPools(tmpl, EvenSlots(shards), cfg.PoolKeys)
	conns := SplitConns(cfg.Conns, shards)
	var rows []ScalingRow
	for _, pipe := range cfg.Pipelines {
		row := ScalingRow{Shards: shards, Pipeline: pipe, Conns: cfg.Conns}
		for round := range cfg.Rounds {
			s, err := c.measure(ctx, cfg, leaders, tmpl, pools, conns, pipe)
			if err != nil {
				return nil, err
			}
			row.Samples = append(row.Samples, s)
			cfg.logf("  %d shard(s), round %d, pipeline %d: %8.0f allowed/s  p50 %6.2f  p99 %6.2f ms  allowed %d of %d  cpu/req %.1f us (leaders %.1f, load generator %.1f)",
				shards, round+1, pipe, allowedRate(s), s.P50, s.P99, s.Allowed, s.Decisions, s.UserUs, s.LeaderUs, s.ClientUs)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// measure runs one load per shard at once, each on its leader with its share of the
// connections and its own keys, and sums them into one sample.
func (c *ShardedCluster) measure(ctx context.Context, cfg *ClusterConfig, leaders []*RaftNode, tmpl Template, pools [][]uint64, conns []int, pipe int) (Sample, error) {
	c0, l0 := c.cpu(leaders)
	cl0 := selfCPU()
	results := make([]*Result, len(leaders))
	errs := make([]error, len(leaders))
	seed := uint64(time.Now().UnixNano())
	var wg sync.WaitGroup
	for k, nd := range leaders {
		if conns[k] == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[k], errs[k] = Run(ctx, Config{Addr: nd.Client, Conns: conns[k], Pipeline: pipe, Duration: cfg.Duration, Warmup: cfg.Warmup,
				KeyPool: pools[k], Commands: []Template{tmpl}, Seed: seed + uint64(k), CountFirst: true})
		}()
	}
	wg.Wait()
	cl1 := selfCPU()
	c1, l1 := c.cpu(leaders)
	var s Sample
	var total int64
	hist := &Histogram{}
	for k, r := range results {
		if errs[k] != nil {
			return s, fmt.Errorf("shard s%d: %w", k+1, errs[k])
		}
		if r == nil {
			continue
		}
		if r.Errors > 0 {
			return s, fmt.Errorf("shard s%d: %d error replies, first: %s", k+1, r.Errors, r.FirstError)
		}
		s.RPS += r.Throughput()
		s.Allowed += r.FirstZero
		s.Decisions += r.Requests
		total += r.Total
		hist.Merge(r.Hist)
	}
	perReq := func(d time.Duration) float64 { return float64(d) / 1e3 / float64(max(total, 1)) }
	s.P50, s.P99, s.P999 = msf(hist.Quantile(0.5)), msf(hist.Quantile(0.99)), msf(hist.Quantile(0.999))
	s.UserUs, s.LeaderUs, s.ClientUs = perReq(c1-c0), perReq(l1-l0), perReq(cl1-cl0)
	return s, nil
}

// Slot move fill: these keys are plain strings (16-byte values) except one in moveGCRAEvery,
// which holds a GCRA.LIMIT state.
const moveGCRAEvery = 10

var (
	moveString = ParseTemplate("SET", "mv:"+RandPlaceholder, "0123456789abcdef")
	moveGCRA   = ParseTemplate("GCRA.LIMIT", "mv:"+RandPlaceholder, "3600000000", "1000")
)

// MoveSlots is the range the move benchmark fills and moves: the first half of shard s1's
// slots in a 2-shard cluster (EvenSlots(2)), so s1 keeps slots of its own.
var MoveSlots = SlotRange{0, ClusterSlots/4 - 1}

// runMove fills shard s1 of a fresh 2-shard cluster with cfg.MoveKeys keys in MoveSlots and
// moves the range to s2.
func runMove(ctx context.Context, cfg *ClusterConfig, res *ClusterResults) (*MoveResult, error) {
	c, err := cfg.start(ctx, 2)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	leaders, err := c.Leaders(ctx)
	if err != nil {
		return nil, err
	}
	if res.Machine.HotKV == "" {
		res.Machine.HotKV = Version(ctx, leaders[0].Client)
	}
	src, dst := leaders[0], leaders[1]
	m := &MoveResult{Slots: MoveSlots, From: "s1", To: "s2"}
	pool := ShardKeyPools(moveString, []SlotRange{MoveSlots}, int(cfg.MoveKeys))[0]
	m.GCRA = cfg.MoveKeys / moveGCRAEvery
	m.Strings = cfg.MoveKeys - m.GCRA
	cfg.logf("  filling s1 with %d keys in slots %s (%d strings, %d GCRA states)", cfg.MoveKeys, MoveSlots, m.Strings, m.GCRA)
	t0 := time.Now()
	for _, part := range []struct {
		t    Template
		keys []uint64
	}{{moveString, pool[:m.Strings]}, {moveGCRA, pool[m.Strings:]}} {
		if len(part.keys) == 0 {
			continue
		}
		r, err := Run(ctx, Config{Addr: src.Client, Conns: 8, Pipeline: 64, Requests: int64(len(part.keys)), Sequential: true,
			KeyPool: part.keys, Commands: []Template{part.t}, Seed: 1})
		if err != nil {
			return nil, err
		}
		if r.Errors > 0 {
			return nil, fmt.Errorf("fill: %d error replies, first: %s", r.Errors, r.FirstError)
		}
	}
	m.FillSeconds = time.Since(t0).Seconds()
	if m.SourceBefore, err = dbsize(ctx, src.Client); err != nil {
		return nil, err
	}
	m.Keys = m.SourceBefore
	if m.Keys != cfg.MoveKeys {
		return nil, fmt.Errorf("s1 holds %d keys after filling %d", m.Keys, cfg.MoveKeys)
	}
	st, err := ClusterStatus(ctx, src.Client)
	if err != nil {
		return nil, err
	}
	m.EpochBefore = st["epoch"]
	lastBefore := st["last_move"]
	cfg.logf("  filled in %.1f s; CLUSTERX MIGRATE %d %d s2", m.FillSeconds, MoveSlots.Start, MoveSlots.End)

	probeStop := make(chan struct{})
	var stopOnce sync.Once
	stopProbe := func() { stopOnce.Do(func() { close(probeStop) }) }
	defer stopProbe() // the error returns below
	gap := make(chan float64, 1)
	probeKey := string(moveString.AppendKey(nil, pool[0]))
	go func() { gap <- probeGap(ctx, probeStop, probeKey, src.Client, dst.Client) }()
	t0 = time.Now()
	if _, err := Do(ctx, src.Client, "CLUSTERX", "MIGRATE", MoveSlots.Start, MoveSlots.End, "s2"); err != nil {
		return nil, fmt.Errorf("CLUSTERX MIGRATE: %w", err)
	}
	want := "slots=" + MoveSlots.String() + ","
	var last string
	deadline := t0.Add(10 * time.Minute)
	for {
		st, err := ClusterStatus(ctx, src.Client)
		if err == nil && st["migrations"] == "0" && st["last_move"] != lastBefore && strings.HasPrefix(st["last_move"], want) {
			m.WallMs = msf(time.Since(t0))
			last, m.EpochAfter = st["last_move"], st["epoch"]
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the move did not finish in 10 minutes (last status %v, %v)", st, err)
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
	stopProbe()
	m.UnavailableMs = <-gap
	for _, f := range strings.Split(last, ",") {
		k, v, _ := strings.Cut(f, "=")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "keys":
			m.MovedKeys = n
		case "limiters":
			m.MovedLimiters = n
		case "ms":
			m.ServerMs = n
		}
	}
	if m.TargetKeys, err = dbsize(ctx, dst.Client); err != nil {
		return nil, err
	}
	cfg.logf("  moved in %.0f ms wall (%d ms on the source, %d keys, the probed key unavailable for %.0f ms at most); target DBSIZE %d", m.WallMs, m.ServerMs, m.MovedKeys, m.UnavailableMs, m.TargetKeys)
	dropDeadline := time.Now().Add(60 * time.Second)
	for {
		n, err := dbsize(ctx, src.Client)
		if err == nil {
			m.SourceAfter = n
			if n == 0 {
				m.DroppedMs = msf(time.Since(t0))
				break
			}
		}
		if time.Now().After(dropDeadline) {
			break
		}
		if err := sleepCtx(ctx, 5*time.Millisecond); err != nil {
			return nil, err
		}
	}
	m.TargetNodesOK = waitFor(ctx, 60*time.Second, "every node of s2 holding the keys", func() bool {
		for _, nd := range c.Shards[1].Nodes {
			if n, err := dbsize(ctx, nd.Client); err != nil || n != m.Keys {
				return false
			}
		}
		return true
	}) == nil
	cfg.logf("  source DBSIZE %d (dropped %.0f ms after MIGRATE); every target node holds the keys: %v", m.SourceAfter, m.DroppedMs, m.TargetNodesOK)
	// A target short of keys or a source that kept some is reported (Markdown says so), not
	// an error: the timing is still worth having next to the defect.
	return m, nil
}

// probeGap reads key every 2 ms, from the first of addrs that answers it (a node that does not
// serve its slot answers -MOVED or -TRYAGAIN), and returns the longest time in ms between two
// answered reads. Once stop is closed it returns at its next answered read (or 10 s later, or
// when ctx ends, counting the gap up to then), so that a range still unavailable when the
// move is reported done is measured to its end.
func probeGap(ctx context.Context, stop <-chan struct{}, key string, addrs ...string) float64 {
	clients := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		defer clients[i].Close()
	}
	last, worst := time.Now(), time.Duration(0)
	var until time.Time // set once stop is closed
	for ctx.Err() == nil && (until.IsZero() || time.Now().Before(until)) {
		answered := false
		for _, c := range clients {
			if c.Get(ctx, key).Err() == nil {
				answered = true
				break
			}
		}
		now := time.Now()
		if answered {
			worst, last = max(worst, now.Sub(last)), now
			if !until.IsZero() {
				break
			}
		}
		if until.IsZero() {
			select {
			case <-stop:
				until = now.Add(10 * time.Second)
			default:
			}
		}
		_ = sleepCtx(ctx, 2*time.Millisecond)
	}
	return msf(max(worst, time.Since(last))) // a gap still open at the end counts to here
}

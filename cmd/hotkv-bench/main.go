// Command hotkv-bench is HotKV's load generator and its side-by-side benchmark against Redis.
//
//	hotkv-bench [run] [flags] [COMMAND ARG ...]   one load run against one server
//	hotkv-bench memory [flags]                    bytes per rate-limit key
//	hotkv-bench snapshot [flags]                  latency during BGSAVE against without
//	hotkv-bench suite [flags]                     HotKV and Redis interleaved; writes docs/benchmarks.md
//	hotkv-bench raft [flags]                      a 3-node Raft group: allowed decisions, failover
//	hotkv-bench cluster [flags]                   a sharded cluster: decisions/s per shard count, slot moves
//
// It speaks raw pipelined RESP (see internal/bench), so what it measures is the server.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/bench"
)

// quietLogger drops go-redis's own log lines (dial retries): the tool reports errors itself.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	args := os.Args[1:]
	mode := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "run", "memory", "snapshot", "suite", "raft", "cluster", "rls":
			mode, args = args[0], args[1:]
		}
	}
	var err error
	switch mode {
	case "run":
		err = runCmd(ctx, args)
	case "memory":
		err = memoryCmd(ctx, args)
	case "snapshot":
		err = snapshotCmd(ctx, args)
	case "suite":
		err = suiteCmd(ctx, args)
	case "raft":
		err = raftCmd(ctx, args)
	case "rls":
		err = rlsCmd(ctx, args)
	case "cluster":
		err = clusterCmd(ctx, args)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "hotkv-bench:", err)
		os.Exit(1)
	}
}

func workloadNames() string {
	names := make([]string, len(bench.Workloads))
	for i, w := range bench.Workloads {
		names[i] = w.Name
	}
	return strings.Join(names, ", ")
}

func runCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "server address")
	wl := fs.String("w", "", "workload: "+workloadNames()+" (or give a command line after the flags)")
	redisWay := fs.Bool("redis", false, "send the workload's Redis form (Lua scripts etc.) instead of HotKV's")
	conns := fs.Int("c", 50, "connections (1 to 10000)")
	pipe := fs.Int("P", 1, "requests per pipelined batch")
	dur := fs.Duration("d", 5*time.Second, "run for this long (after the warmup)")
	n := fs.Int64("n", 0, "run this many requests instead of -d")
	warm := fs.Duration("warmup", time.Second, "unmeasured load before the run")
	keyspace := fs.Uint64("r", 1_000_000, "keyspace: random key numbers below this replace "+bench.RandPlaceholder)
	rate := fs.Float64("rate", 0, "open-loop: requests per second in total (0: as fast as replies come)")
	seq := fs.Bool("seq", false, "with -n, number keys 0..n-1 instead of at random (a fill)")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	quiet := fs.Bool("q", false, "no progress line")
	cpuProfile := fs.String("cpuprofile", "", "write the load generator's CPU profile to this file (its cost shares the machine with the server's)")
	goroutines := fs.Bool("goroutines", false, "a goroutine per connection instead of the event loops (to compare the two load generators)")
	fs.Parse(args)
	var tmpl bench.Template
	label := strings.Join(fs.Args(), " ")
	switch {
	case *wl != "":
		w, ok := bench.FindWorkload(*wl)
		if !ok {
			return fmt.Errorf("unknown workload %q (have %s)", *wl, workloadNames())
		}
		t, err := w.Prepare(ctx, *addr, *redisWay)
		if err != nil {
			return err
		}
		tmpl, label = t, t.String()
	case fs.NArg() > 0:
		tmpl = bench.ParseTemplate(fs.Args()...)
	default:
		return fmt.Errorf("give -w WORKLOAD or a command line")
	}
	cfg := bench.Config{Addr: *addr, Conns: *conns, Pipeline: *pipe, Warmup: *warm, Keyspace: *keyspace,
		Rate: *rate, Commands: []bench.Template{tmpl}, Seed: 1, Label: label, Sequential: *seq, Goroutines: *goroutines}
	if *n > 0 {
		cfg.Requests, cfg.Warmup = *n, 0
	} else {
		cfg.Duration = *dur
	}
	if !*quiet {
		cfg.Progress = os.Stderr
	}
	if _, err := bench.RaiseFileLimit(); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	r, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *jsonOut {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{
			"command": label, "requests": r.Requests, "errors": r.Errors, "first_error": r.FirstError,
			"seconds": r.Elapsed.Seconds(), "rps": r.Throughput(),
			"p50_ms": ms(r.Hist.Quantile(0.5)), "p99_ms": ms(r.Hist.Quantile(0.99)),
			"p999_ms": ms(r.Hist.Quantile(0.999)), "max_ms": ms(r.Hist.Max()),
		})
	}
	fmt.Printf("%s: %.0f req/s (%d requests in %.2fs, %d conns, pipeline %d, client GOMAXPROCS %d)\n",
		label, r.Throughput(), r.Requests, r.Elapsed.Seconds(), *conns, *pipe, runtime.GOMAXPROCS(0))
	fmt.Printf("latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n",
		ms(r.Hist.Quantile(0.5)), ms(r.Hist.Quantile(0.99)), ms(r.Hist.Quantile(0.999)), ms(r.Hist.Max()), ms(r.Hist.Mean()))
	if r.Errors > 0 {
		fmt.Printf("errors: %d (first: %s)\n", r.Errors, r.FirstError)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func memoryCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("memory", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "server address (it is FLUSHALLed)")
	n := fs.Int64("n", 1_000_000, "rate-limit keys to create")
	redisWay := fs.Bool("redis", false, "fill with the GCRA Lua script (for a Redis server)")
	kind := fs.String("kind", "gcra", "gcra (rate-limit keys), or hash, set, zset, list (small aggregates of 8 elements)")
	fs.Parse(args)
	var m bench.MemResult
	var err error
	if *kind == "gcra" {
		m, err = bench.Memory(ctx, *addr, *redisWay, *n)
	} else {
		m, err = bench.AggregateMemory(ctx, *addr, *kind, *n)
	}
	if err != nil {
		return err
	}
	fmt.Printf("%d keys in %.1fs: %.1f bytes/key (used_memory), %.1f bytes/key (RSS)\n",
		m.Keys, m.FillTime.Seconds(), m.BytesPerKey(), m.RSSPerKey())
	return nil
}

func snapshotCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("snapshot", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:6379", "server address (it is FLUSHALLed)")
	keys := fs.Int64("keys", 1_000_000, "keys to fill before snapshotting")
	rate := fs.Float64("rate", 20000, "requests per second offered during the run")
	conns := fs.Int("c", 50, "connections")
	dur := fs.Duration("d", 10*time.Second, "run length")
	op := fs.String("op", "BGSAVE", "BGSAVE, or BGREWRITEAOF (the server must have appendonly yes)")
	fs.Parse(args)
	if err := bench.FillSnapshotKeys(ctx, *addr, *keys); err != nil {
		return err
	}
	r, err := bench.SnapshotLatency(ctx, *addr, *op, *keys, *rate, *conns, *dur)
	if err != nil {
		return err
	}
	fmt.Printf("%d %ss of %d keys, %.2fs in all, at %.0f req/s offered\n", r.Saves, *op, r.Keys, r.SaveTime.Seconds(), r.Rate)
	for _, p := range []struct {
		name string
		h    *bench.Histogram
	}{{"without", r.Outside}, {"during", r.During}} {
		fmt.Printf("%-8s %7d reqs  p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms\n", p.name, p.h.Count(),
			ms(p.h.Quantile(0.5)), ms(p.h.Quantile(0.99)), ms(p.h.Quantile(0.999)), ms(p.h.Max()))
	}
	if r.Outside.Count() > 0 && r.During.Count() > 0 {
		fmt.Printf("p99 during / without: %.2f\n", float64(r.During.Quantile(0.99))/float64(r.Outside.Quantile(0.99)))
	}
	return nil
}

func suiteCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("suite", flag.ExitOnError)
	out := fs.String("out", "docs", "directory for benchmarks.md and benchmarks/ (plots, results.json)")
	hotkv := fs.String("hotkv", "bin/hotkv-server", "hotkv-server binary")
	redisBin := fs.String("redis-server", "redis-server", "redis-server binary")
	rounds := fs.Int("rounds", 3, "interleaved rounds per case")
	dur := fs.Duration("d", 2*time.Second, "measured time per run")
	warm := fs.Duration("warmup", 500*time.Millisecond, "unmeasured load before each run")
	keyspace := fs.Uint64("keyspace", 1_000_000, "keys drawn from")
	mem := fs.String("mem", "1000000,10000000", "key counts for bytes per key (empty: skip)")
	snap := fs.Int64("snapshot-keys", 1_000_000, "keys for the BGSAVE latency case (0: skip)")
	agg := fs.Int64("aggregate-keys", 200_000, "keys per kind for the memory per small hash, set, sorted set and list (0: skip)")
	aggOnly := fs.Bool("aggregates-only", false, "measure only the small aggregates' memory and merge it into the results read by -from (default: out's results.json)")
	pairsOnly := fs.Bool("pairs-only", false, "measure only the HotKV-only pairs (one command against the round trips it replaces) and merge them into the results read by -from (default: out's results.json)")
	many := fs.String("conns", "1000,10000", "connection counts of the many-connections cases (empty: skip)")
	only := fs.String("only", "", "comma-separated workloads to run (default all)")
	merge := fs.Bool("merge", false, "with -only: merge the cases measured into out's results.json (replacing those of the same workload, connections and pipeline) instead of starting a new report")
	from := fs.String("from", "", "rewrite the report from this results.json instead of running")
	fs.Parse(args)
	var res *bench.Results
	if (*aggOnly || *pairsOnly) && *from == "" {
		*from = filepath.Join(*out, "benchmarks", "results.json")
	}
	if *from != "" {
		b, err := os.ReadFile(*from)
		if err != nil {
			return err
		}
		res = &bench.Results{}
		if err := json.Unmarshal(b, res); err != nil {
			return err
		}
		if *aggOnly {
			rows, err := bench.RunAggregateMemory(ctx, bench.SuiteConfig{HotKVBin: *hotkv, RedisBin: *redisBin, AggregateKeys: *agg, Log: os.Stderr})
			if err != nil {
				return err
			}
			res.Aggregates = rows
		}
		if *pairsOnly {
			pairs, err := bench.RunPairs(ctx, bench.SuiteConfig{HotKVBin: *hotkv, Rounds: *rounds, Duration: *dur, Warmup: *warm,
				Keyspace: *keyspace, Log: os.Stderr})
			if err != nil {
				return err
			}
			res.Pairs = pairs
		}
	} else {
		cfg := bench.SuiteConfig{HotKVBin: *hotkv, RedisBin: *redisBin, Rounds: *rounds, Duration: *dur, Warmup: *warm,
			Keyspace: *keyspace, SnapshotKeys: *snap, AggregateKeys: *agg, Log: os.Stderr}
		for _, f := range splitList(*mem) {
			var n int64
			fmt.Sscan(f, &n)
			cfg.MemKeys = append(cfg.MemKeys, n)
		}
		for _, f := range splitList(*many) {
			var n int
			fmt.Sscan(f, &n)
			cfg.ManyConns = append(cfg.ManyConns, n)
		}
		cfg.Only = splitList(*only)
		if *merge {
			// Only the throughput cases of the workloads named: the rest of the report stays.
			cfg.MemKeys, cfg.AggregateKeys, cfg.SnapshotKeys, cfg.ManyConns = nil, 0, 0, nil
		}
		var err error
		if res, err = bench.RunSuite(ctx, cfg); err != nil {
			return err
		}
		if *merge {
			old, err := readResults(filepath.Join(*out, "benchmarks", "results.json"))
			if err != nil {
				return fmt.Errorf("-merge: %w", err)
			}
			old.MergeCases(res)
			res, *from = old, "merged" // written below like a fresh run, raft and cluster kept
		}
	}
	dir := filepath.Join(*out, "benchmarks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if *from == "" {
		// The replicated and sharded benchmarks run on their own (`hotkv-bench raft`,
		// `hotkv-bench cluster`): keep their last results.
		if old, err := readResults(filepath.Join(dir, "results.json")); err == nil {
			res.Raft, res.Cluster, res.RLS = old.Raft, old.Cluster, old.RLS
		}
	}
	if *from == "" || *from == "merged" || *aggOnly || *pairsOnly {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if err := res.Plots(dir); err != nil {
		return err
	}
	md := filepath.Join(*out, "benchmarks.md")
	report := res.Markdown(bench.ExistingFindings(md))
	if err := os.WriteFile(md, []byte(report), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", md)
	printTargets(res.Targets())
	return nil
}

// printTargets prints each target with its bar, the measured value and whether it is met,
// in columns as wide as the longest entry.
func printTargets(ts []bench.Target) {
	w := [3]int{}
	for _, t := range ts {
		w = [3]int{max(w[0], len(t.What)), max(w[1], len(t.Bar)), max(w[2], len(t.Measured))}
	}
	for _, t := range ts {
		mark := "met"
		if !t.Met {
			mark = "NOT MET"
		}
		fmt.Printf("%-*s %-*s %*s  %s\n", w[0], t.What, w[1], t.Bar, w[2], t.Measured, mark)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func readResults(path string) (*bench.Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	res := &bench.Results{}
	if err := json.Unmarshal(b, res); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return res, nil
}

// mergeSection sets one section of the report (set: the Raft, cluster or RLS results) in
// out's benchmarks/results.json, keeping every other section, and regenerates benchmarks.md
// from it. Each section is measured by its own subcommand, on its own schedule. A missing
// results.json starts empty, unless required (the RLS section needs the suite's first).
func mergeSection(out string, required bool, set func(*bench.Results)) error {
	dir := filepath.Join(out, "benchmarks")
	path := filepath.Join(dir, "results.json")
	res, err := readResults(path)
	switch {
	case err == nil:
	case os.IsNotExist(err) && !required:
		res = &bench.Results{}
	case required:
		return fmt.Errorf("-out: %w (run the suite first)", err)
	default:
		return err
	}
	set(res)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	md := filepath.Join(out, "benchmarks.md")
	if err := os.WriteFile(md, []byte(res.Markdown(bench.ExistingFindings(md))), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s and %s\n", md, path)
	return nil
}

// raftCmd runs the replicated benchmark and, with -out, merges it into the suite's
// results.json and rewrites benchmarks.md (the rest of the report is kept as it was).
func raftCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("raft", flag.ExitOnError)
	out := fs.String("out", "", "directory of benchmarks.md and benchmarks/results.json to update (empty: print only)")
	hotkv := fs.String("hotkv", "bin/hotkv-server", "hotkv-server binary")
	redisBin := fs.String("redis-server", "redis-server", "redis-server binary")
	addrs := fs.String("addrs", "", "client addresses of a running group to measure instead of starting one (no comparisons, no failovers)")
	conns := fs.Int("c", 256, "client connections")
	pipes := fs.String("P", "1,16", "comma-separated pipeline depths; the first is the headline")
	rounds := fs.Int("rounds", 3, "interleaved rounds per case")
	dur := fs.Duration("d", 5*time.Second, "measured time per run")
	warm := fs.Duration("warmup", time.Second, "unmeasured load before each run")
	compare := fs.Bool("compare", true, "also run a standalone HotKV and Redis, both with appendfsync always")
	failovers := fs.Int("failovers", 10, "leader kills (SIGKILL) under load")
	foConns := fs.Int("failover-c", 64, "connections loading the leader when it is killed")
	keep := fs.Bool("keep", false, "keep the group's directories (data and each node's server.log; HOTKV_RAFT_DEBUG=1 adds Raft's own log)")
	serverArgs := fs.String("server-args", "", "extra arguments for every node of the group (e.g. \"--raft-heartbeat-timeout 1000\")")
	fs.Parse(args)
	cfg := bench.RaftConfig{HotKVBin: *hotkv, RedisBin: *redisBin, Addrs: splitList(*addrs), Conns: *conns, Rounds: *rounds,
		Duration: *dur, Warmup: *warm, Compare: *compare, Failovers: *failovers, FailoverConns: *foConns,
		ServerArgs: strings.Fields(*serverArgs), Keep: *keep, Log: os.Stderr}
	for _, f := range splitList(*pipes) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			return fmt.Errorf("bad pipeline depth %q", f)
		}
		cfg.Pipelines = append(cfg.Pipelines, n)
	}
	rr, err := bench.RunRaft(ctx, cfg)
	if err != nil {
		return err
	}
	printTargets(rr.Targets())
	if *out == "" {
		return nil
	}
	return mergeSection(*out, false, func(res *bench.Results) { res.Raft = rr })
}

// rlsCmd measures the Envoy rate limit service: ShouldRateLimit over gRPC, one descriptor per
// call, per algorithm, printing throughput and latency quantiles.
func rlsCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("rls", flag.ExitOnError)
	hotkv := fs.String("hotkv", "bin/hotkv-server", "hotkv-server binary")
	addr := fs.String("addr", "", "gRPC address of a running service to measure (its config needs bench's domain) instead of starting one")
	algos := fs.String("algo", "gcra,sliding,fixed", "comma-separated algorithms")
	conns := fs.Int("conns", 4, "gRPC connections")
	callers := fs.Int("c", 64, "concurrent calls in all")
	keys := fs.Int("keys", 10000, "distinct descriptor values")
	dur := fs.Duration("d", 5*time.Second, "measured time per algorithm")
	warm := fs.Duration("warmup", time.Second, "unmeasured load before each run")
	out := fs.String("out", "", "directory of benchmarks.md and benchmarks/results.json to update with these runs (empty: print only); one caller is also measured, for the latency of a lone call")
	fs.Parse(args)
	fmt.Printf("%-8s %6s %7s %12s %9s %9s %9s %9s %8s\n", "algo", "conns", "callers", "decisions/s", "p50", "p99", "p99.9", "max", "errors")
	res := &bench.RLSResults{Started: time.Now(), Machine: bench.DescribeMachine(), Keys: *keys}
	shapes := [][2]int{{*conns, *callers}}
	if *out != "" {
		shapes = append(shapes, [2]int{1, 1})
	}
	for _, shape := range shapes {
		for _, a := range splitList(*algos) {
			r, err := bench.RunRLS(ctx, bench.RLSConfig{HotKVBin: *hotkv, Addr: *addr, Algorithm: a, Conns: shape[0], Callers: shape[1],
				Keys: *keys, Duration: *dur, Warmup: *warm})
			if err != nil {
				return err
			}
			fmt.Printf("%-8s %6d %7d %12.0f %9s %9s %9s %9s %8d\n", r.Algorithm, r.Conns, r.Callers, r.RPS, r.P50, r.P99, r.P999, r.Max, r.Errors)
			res.Runs = append(res.Runs, *r)
		}
	}
	if *out == "" {
		return nil
	}
	return mergeSection(*out, true, func(all *bench.Results) { all.RLS = res })
}

// clusterCmd runs the sharded benchmark and, with -out, merges it into the suite's
// results.json and rewrites benchmarks.md (the rest of the report is kept as it was).
func clusterCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cluster", flag.ExitOnError)
	out := fs.String("out", "", "directory of benchmarks.md and benchmarks/results.json to update (empty: print only)")
	hotkv := fs.String("hotkv", "bin/hotkv-server", "hotkv-server binary")
	shards := fs.String("shards", "1,2,3", "comma-separated shard counts of the scaling runs (empty: skip them)")
	nodes := fs.Int("nodes", 1, "nodes per shard (1: single-node shards; 3: 3-node Raft groups)")
	conns := fs.Int("c", 256, "client connections in all, spread over the shards' leaders")
	pipes := fs.String("P", "1,16", "comma-separated pipeline depths; the first is the headline")
	rounds := fs.Int("rounds", 2, "rounds per shard count and pipeline depth")
	dur := fs.Duration("d", 5*time.Second, "measured time per run")
	warm := fs.Duration("warmup", time.Second, "unmeasured load before each run")
	moveKeys := fs.Int64("move-keys", 1_000_000, "keys in the moved slot range (0: skip the slot move)")
	keep := fs.Bool("keep", false, "keep the nodes' directories (data and each node's server.log)")
	serverArgs := fs.String("server-args", "", "extra arguments for every node (e.g. \"--raft-heartbeat-timeout 1000\")")
	fs.Parse(args)
	if *nodes < 1 {
		return fmt.Errorf("-nodes must be at least 1")
	}
	cfg := bench.ClusterConfig{HotKVBin: *hotkv, Nodes: *nodes, Conns: *conns, Rounds: *rounds, Duration: *dur, Warmup: *warm,
		MoveKeys: *moveKeys, ServerArgs: strings.Fields(*serverArgs), Keep: *keep, Log: os.Stderr}
	for _, f := range splitList(*shards) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 || n > bench.ClusterSlots {
			return fmt.Errorf("bad shard count %q", f)
		}
		cfg.Shards = append(cfg.Shards, n)
	}
	for _, f := range splitList(*pipes) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n < 1 {
			return fmt.Errorf("bad pipeline depth %q", f)
		}
		cfg.Pipelines = append(cfg.Pipelines, n)
	}
	cr, err := bench.RunCluster(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Print(cr.Summary())
	if *out == "" {
		return nil
	}
	return mergeSection(*out, false, func(res *bench.Results) { res.Cluster = cr })
}

package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"
)

// SuiteConfig sets what the side-by-side suite runs.
type SuiteConfig struct {
	HotKVBin, RedisBin string
	// Rounds is how many times each case runs on each server, interleaved.
	Rounds   int
	Duration time.Duration
	Warmup   time.Duration
	// Keyspace is the number of distinct keys the workloads draw from (and GET's fill).
	Keyspace uint64
	// MemKeys are the key counts of the memory measurement (1M and 10M by default).
	MemKeys []int64
	// AggregateKeys is the key count of the small-aggregate memory measurement (0 skips it).
	AggregateKeys int64
	// SnapshotKeys is the key count of the BGSAVE latency measurement (0 skips it).
	SnapshotKeys int64
	// SnapshotDuration is the length of each BGSAVE latency run (8 s when zero).
	SnapshotDuration time.Duration
	// ManyConns are the connection counts of the many-connections cases.
	ManyConns []int
	// Only, when set, limits the throughput cases to these workload names.
	Only []string
	Log  io.Writer
}

// Sample is one run of one case on one server.
type Sample struct {
	RPS    float64 `json:"rps"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	P999   float64 `json:"p999_ms"`
	Errors int64   `json:"errors"`
	// UserUs and SysUs are the server's CPU time per request in microseconds (user and
	// kernel), warmup included in both time and requests.
	UserUs float64 `json:"user_us"`
	SysUs  float64 `json:"sys_us"`
	// LeaderUs is, for a Raft group, the leader's share of UserUs (which is then all nodes'
	// CPU, user and kernel together).
	LeaderUs float64 `json:"leader_us,omitempty"`
	// ClientUs is the load generator's own CPU per request (the replicated benchmark, where
	// it shares the cores with three nodes).
	ClientUs float64 `json:"client_us,omitempty"`
	// Allowed and Decisions count a rate-limit run's allowed replies among its measured ones.
	Allowed   int64 `json:"allowed,omitempty"`
	Decisions int64 `json:"decisions,omitempty"`
}

// CaseResult is one case's samples per server.
type CaseResult struct {
	Workload string `json:"workload"`
	Title    string `json:"title"`
	Note     string `json:"note,omitempty"`
	Conns    int    `json:"conns"`
	Pipeline int    `json:"pipeline"`
	// Rate is the offered load of an open-loop case (0 for closed-loop throughput cases).
	Rate    float64               `json:"rate,omitempty"`
	Samples map[string][]Sample   `json:"samples"`
	CDF     map[string][]CDFPoint `json:"cdf,omitempty"`
}

// CDFPoint is one point of a latency distribution.
type CDFPoint struct {
	Ms   float64 `json:"ms"`
	Frac float64 `json:"frac"`
}

// MemRow is one server's memory measurement at one key count.
type MemRow struct {
	Server      string  `json:"server"`
	Keys        int64   `json:"keys"`
	BytesPerKey float64 `json:"bytes_per_key"`
	RSSPerKey   float64 `json:"rss_per_key"`
	FillSeconds float64 `json:"fill_seconds"`
}

// AggRow is one server's memory per small aggregate of one kind (AggregateMemory).
type AggRow struct {
	Kind        string  `json:"kind"`
	Server      string  `json:"server"`
	Keys        int64   `json:"keys"`
	BytesPerKey float64 `json:"bytes_per_key"`
	RSSPerKey   float64 `json:"rss_per_key"`
	FillSeconds float64 `json:"fill_seconds"`
}

// AggregateKinds are the kinds the suite measures, in report order.
var AggregateKinds = []string{"hash", "set", "zset", "list"}

// SnapRow is one server's BGSAVE latency measurement.
type SnapRow struct {
	// Op is BGSAVE or BGREWRITEAOF.
	Op          string  `json:"op"`
	Server      string  `json:"server"`
	Round       int     `json:"round"`
	Keys        int64   `json:"keys"`
	Rate        float64 `json:"rate"`
	Saves       int     `json:"saves"`
	SaveSecs    float64 `json:"save_seconds"`
	P99Outside  float64 `json:"p99_outside_ms"`
	P99During   float64 `json:"p99_during_ms"`
	P999Outside float64 `json:"p999_outside_ms"`
	P999During  float64 `json:"p999_during_ms"`
}

// Results is everything a suite run measured, the input of the report.
type Results struct {
	Started time.Time    `json:"started"`
	Seconds float64      `json:"seconds"`
	Machine Machine      `json:"machine"`
	Config  string       `json:"config"`
	Servers []string     `json:"servers"`
	Cases   []CaseResult `json:"cases"`
	Latency []CaseResult `json:"latency"`
	Memory  []MemRow     `json:"memory"`
	// Aggregates is the memory per small hash, set, sorted set and list.
	Aggregates []AggRow  `json:"aggregates,omitempty"`
	Snapshot   []SnapRow `json:"snapshot"`
	// Raft is the replicated benchmark (`hotkv-bench raft`), run on its own and kept across
	// suite runs.
	Raft *RaftResults `json:"raft,omitempty"`
	// Cluster is the sharded benchmark (`hotkv-bench cluster`), run on its own and kept
	// across suite runs like Raft.
	Cluster *ClusterResults `json:"cluster,omitempty"`
	// RLS is the Envoy rate limit service benchmark (`hotkv-bench rls -out`), kept across suite
	// runs like Raft.
	RLS *RLSResults `json:"rls,omitempty"`
	// Pairs are the HotKV-only comparisons (HotKVPairs): one command against the several
	// round trips it replaces.
	Pairs []PairResult `json:"pairs,omitempty"`
}

// MergeCases puts the throughput cases, latency cases and pairs of a partial run (`suite
// -only ... -merge`) into r: a case of the same workload, connections and pipeline is
// replaced, a new one appended in the order of Workloads.
func (r *Results) MergeCases(part *Results) {
	order := map[string]int{}
	for i, w := range Workloads {
		order[w.Name] = i
	}
	for _, c := range part.Cases {
		i := slices.IndexFunc(r.Cases, func(o CaseResult) bool {
			return o.Workload == c.Workload && o.Conns == c.Conns && o.Pipeline == c.Pipeline && o.Rate == 0
		})
		if i >= 0 {
			r.Cases[i] = c
			continue
		}
		// A new case goes where a full run puts it: after the cases of the workloads listed
		// before it (at most 50 connections), before the many-connections cases at the end.
		at := 0
		for j, o := range r.Cases {
			if o.Conns <= c.Conns && order[o.Workload] <= order[c.Workload] {
				at = j + 1
			}
		}
		r.Cases = slices.Insert(r.Cases, at, c)
	}
	for _, c := range part.Latency {
		if i := slices.IndexFunc(r.Latency, func(o CaseResult) bool { return o.Workload == c.Workload }); i >= 0 {
			r.Latency[i] = c
		} else {
			r.Latency = append(r.Latency, c)
		}
	}
	if len(part.Pairs) > 0 {
		r.Pairs = part.Pairs
	}
}

// PairResult is one HotKVPair at one connection count: samples of the single command (One)
// and of the several (Many, Requests requests per decision), interleaved round by round.
type PairResult struct {
	Name     string   `json:"name"`
	Note     string   `json:"note"`
	Conns    int      `json:"conns"`
	Requests int      `json:"requests"`
	One      []Sample `json:"one"`
	Many     []Sample `json:"many"`
}

// Decisions is the decisions per second of each round, one way (many: the several commands).
func (p *PairResult) Decisions(many bool) []float64 {
	src, per := p.One, 1.0
	if many {
		src, per = p.Many, float64(p.Requests)
	}
	out := make([]float64, 0, len(src))
	for _, s := range src {
		out = append(out, s.RPS/per)
	}
	return out
}

// PairConns are the connection counts of the pairs: one connection (a decision's latency,
// 1/rate, where the round trips show) and 50 (throughput).
var PairConns = []int{1, 50}

// runPairs measures every HotKVPair on hk, unpipelined.
func (cfg *SuiteConfig) runPairs(ctx context.Context, hk *Proc) ([]PairResult, error) {
	var out []PairResult
	for _, p := range HotKVPairs {
		one, many := p.Templates()
		for _, conns := range PairConns {
			pr := PairResult{Name: p.Name, Note: p.Note, Conns: conns, Requests: len(many)}
			for round := range cfg.Rounds {
				for _, way := range []struct {
					tm  []Template
					dst *[]Sample
				}{{one, &pr.One}, {many, &pr.Many}} {
					r, err := Run(ctx, Config{Addr: hk.Addr, Conns: conns, Pipeline: 1, Duration: cfg.Duration, Warmup: cfg.Warmup,
						Keyspace: cfg.Keyspace, Commands: way.tm, Seed: uint64(round + 1)})
					if err != nil {
						return nil, fmt.Errorf("%s: %w", p.Name, err)
					}
					if r.Errors > 0 {
						return nil, fmt.Errorf("%s: %d error replies, first: %s", p.Name, r.Errors, r.FirstError)
					}
					*way.dst = append(*way.dst, Sample{RPS: r.Throughput(), P50: msf(r.Hist.Quantile(0.5)), P99: msf(r.Hist.Quantile(0.99))})
				}
				cfg.logf("  %s, %d conns, round %d: %.0f decisions/s in one command, %.0f in %d", p.Name, conns, round+1,
					pr.One[len(pr.One)-1].RPS, pr.Many[len(pr.Many)-1].RPS/float64(len(many)), len(many))
			}
			out = append(out, pr)
		}
	}
	return out, nil
}

// RunPairs starts a HotKV and runs only the HotKV-only pairs, for updating that section of a
// report without the whole run.
func RunPairs(ctx context.Context, cfg SuiteConfig) ([]PairResult, error) {
	hk, err := StartHotKV(ctx, NameHotKV, cfg.HotKVBin, nil)
	if err != nil {
		return nil, err
	}
	defer hk.Stop()
	return cfg.runPairs(ctx, hk)
}

// Server names in Results.
const (
	NameHotKV  = "HotKV"
	NameRedis  = "Redis"
	NameHotKV1 = "HotKV GOMAXPROCS=1"
)

type benchCase struct {
	w        Workload
	conns    int
	pipeline int
	procs1   bool // also run on the GOMAXPROCS=1 HotKV
}

func (s *SuiteConfig) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, format+"\n", args...)
	}
}

// RunSuite starts HotKV (default GOMAXPROCS and GOMAXPROCS=1) and Redis and runs every case
// on them in turn, round after round, so that the machine's drift hits all alike.
func RunSuite(ctx context.Context, cfg SuiteConfig) (*Results, error) {
	res := &Results{Started: time.Now(), Machine: DescribeMachine(), Servers: []string{NameHotKV, NameRedis, NameHotKV1},
		Config: fmt.Sprintf("%d interleaved rounds of %s runs after %s warmup; keys drawn uniformly from %d", cfg.Rounds, cfg.Duration, cfg.Warmup, cfg.Keyspace)}
	if _, err := RaiseFileLimit(); err != nil {
		return nil, err
	}
	hk, err := StartHotKV(ctx, NameHotKV, cfg.HotKVBin, nil)
	if err != nil {
		return nil, err
	}
	defer hk.Stop()
	hk1, err := StartHotKV(ctx, NameHotKV1, cfg.HotKVBin, []string{"GOMAXPROCS=1"})
	if err != nil {
		return nil, err
	}
	defer hk1.Stop()
	rd, err := StartRedis(ctx, NameRedis, cfg.RedisBin)
	if err != nil {
		return nil, err
	}
	defer rd.Stop()
	res.Machine.HotKV = Version(ctx, hk.Addr)
	res.Machine.Redis = Version(ctx, rd.Addr)

	// GET reads keys that exist: fill the keyspace once on each server.
	fill := ParseTemplate("SET", "key:"+RandPlaceholder, "xxx")
	for _, p := range []*Proc{hk, rd, hk1} {
		cfg.logf("filling %d keys on %s", cfg.Keyspace, p.Name)
		if _, err := Run(ctx, Config{Addr: p.Addr, Conns: 8, Pipeline: 64, Requests: int64(cfg.Keyspace), Sequential: true, Commands: []Template{fill}}); err != nil {
			return nil, err
		}
	}

	var cases []benchCase
	for _, w := range Workloads {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, w.Name) {
			continue
		}
		procs1 := w.Name == "set" || w.Name == "gcra"
		cases = append(cases, benchCase{w, 50, 1, procs1}, benchCase{w, 50, 16, procs1})
	}
	for _, n := range cfg.ManyConns {
		for _, name := range []string{"set", "gcra-vs-set"} {
			if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, name) {
				continue
			}
			w, _ := FindWorkload(name)
			cases = append(cases, benchCase{w, n, 1, false})
		}
	}
	for i, c := range cases {
		cfg.logf("[%d/%d] %s, %d conns, pipeline %d", i+1, len(cases), c.w.Title(), c.conns, c.pipeline)
		cr, err := cfg.runCase(ctx, c, 0, hk, rd, hk1)
		if err != nil {
			return nil, err
		}
		res.Cases = append(res.Cases, *cr)
	}

	if len(cfg.Only) == 0 || slices.ContainsFunc(HotKVPairs, func(p HotKVPair) bool { return slices.Contains(cfg.Only, p.Name) }) {
		cfg.logf("HotKV-only pairs: one command against the round trips it replaces")
		if res.Pairs, err = cfg.runPairs(ctx, hk); err != nil {
			return nil, err
		}
	}

	// Latency at the same offered load: a third of what the slower server sustained, so the
	// load generator, which paces every request with a timer, is far from saturating its share
	// of the machine.
	for _, name := range []string{"set", "gcra-vs-set", "gcra"} {
		var tp *CaseResult
		for i := range res.Cases {
			if c := &res.Cases[i]; c.Workload == name && c.Conns == 50 && c.Pipeline == 1 {
				tp = c
			}
		}
		if tp == nil {
			continue
		}
		rate := min(Median(tp.RPS(NameHotKV)), Median(tp.RPS(NameRedis))) / 3
		w, _ := FindWorkload(name)
		cfg.logf("latency at %.0f req/s: %s", rate, w.Title())
		cr, err := cfg.runCase(ctx, benchCase{w, 50, 1, false}, rate, hk, rd, nil)
		if err != nil {
			return nil, err
		}
		res.Latency = append(res.Latency, *cr)
	}

	for _, n := range cfg.MemKeys {
		for _, p := range []*Proc{hk, rd} {
			cfg.logf("memory: %d GCRA keys on %s", n, p.Name)
			m, err := Memory(ctx, p.Addr, p.Redis, n)
			if err != nil {
				return nil, err
			}
			res.Memory = append(res.Memory, MemRow{Server: p.Name, Keys: n, BytesPerKey: m.BytesPerKey(), RSSPerKey: m.RSSPerKey(), FillSeconds: m.FillTime.Seconds()})
		}
	}

	if cfg.AggregateKeys > 0 {
		if res.Aggregates, err = cfg.aggregateMemory(ctx, hk, rd); err != nil {
			return nil, err
		}
	}

	if cfg.SnapshotKeys > 0 {
		// Offer a quarter of the slower server's unpipelined SET rate, the same to both, over
		// 50 connections: each then has a request due about every 2 ms, well above a round trip,
		// so without a snapshot nothing queues in the load generator.
		rate := 20000.0
		for _, c := range res.Cases {
			if c.Workload == "set" && c.Conns == 50 && c.Pipeline == 1 {
				rate = min(Median(c.RPS(NameRedis)), Median(c.RPS(NameHotKV))) / 4
			}
		}
		// BGREWRITEAOF needs the log on: a HotKV and a Redis of their own, started now.
		hkAOF, err := StartHotKV(ctx, NameHotKV, cfg.HotKVBin, nil, "--appendonly", "yes")
		if err != nil {
			return nil, err
		}
		defer hkAOF.Stop()
		rdAOF, err := StartRedis(ctx, NameRedis, cfg.RedisBin, "--appendonly", "yes")
		if err != nil {
			return nil, err
		}
		defer rdAOF.Stop()
		for _, op := range []struct {
			name  string
			procs []*Proc
		}{{"BGSAVE", []*Proc{hk, rd}}, {"BGREWRITEAOF", []*Proc{hkAOF, rdAOF}}} {
			for _, p := range op.procs {
				if err := FillSnapshotKeys(ctx, p.Addr, cfg.SnapshotKeys); err != nil {
					return nil, err
				}
			}
			for round := range cfg.Rounds {
				for _, p := range op.procs {
					cfg.logf("%s latency, round %d: %d keys on %s at %.0f req/s", op.name, round+1, cfg.SnapshotKeys, p.Name, rate)
					s, err := SnapshotLatency(ctx, p.Addr, op.name, cfg.SnapshotKeys, rate, 50, cmp.Or(cfg.SnapshotDuration, 6*time.Second))
					if err != nil {
						return nil, err
					}
					row := SnapRow{Op: op.name, Server: p.Name, Round: round + 1, Keys: s.Keys, Rate: rate, Saves: s.Saves, SaveSecs: s.SaveTime.Seconds(),
						P99Outside: msf(s.Outside.Quantile(0.99)), P99During: msf(s.During.Quantile(0.99)),
						P999Outside: msf(s.Outside.Quantile(0.999)), P999During: msf(s.During.Quantile(0.999))}
					res.Snapshot = append(res.Snapshot, row)
					cfg.logf("  p99 without %.3f ms, during %.3f ms (%d runs of %s)", row.P99Outside, row.P99During, row.Saves, op.name)
				}
			}
			for _, p := range op.procs {
				if _, err := Do(ctx, p.Addr, "FLUSHALL"); err != nil {
					return nil, err
				}
			}
		}
	}
	res.Seconds = time.Since(res.Started).Seconds()
	return res, nil
}

// aggregateMemory measures AggregateKeys small aggregates of each kind on both servers.
func (cfg *SuiteConfig) aggregateMemory(ctx context.Context, procs ...*Proc) ([]AggRow, error) {
	var rows []AggRow
	for _, kind := range AggregateKinds {
		for _, p := range procs {
			cfg.logf("memory: %d small %s keys on %s", cfg.AggregateKeys, kind, p.Name)
			m, err := AggregateMemory(ctx, p.Addr, kind, cfg.AggregateKeys)
			if err != nil {
				return nil, err
			}
			rows = append(rows, AggRow{Kind: kind, Server: p.Name, Keys: cfg.AggregateKeys, BytesPerKey: m.BytesPerKey(), RSSPerKey: m.RSSPerKey(), FillSeconds: m.FillTime.Seconds()})
		}
	}
	return rows, nil
}

// RunAggregateMemory starts HotKV and Redis and runs only the small-aggregate memory section
// of the suite, for updating that section of a report without the whole run.
func RunAggregateMemory(ctx context.Context, cfg SuiteConfig) ([]AggRow, error) {
	hk, err := StartHotKV(ctx, NameHotKV, cfg.HotKVBin, nil)
	if err != nil {
		return nil, err
	}
	defer hk.Stop()
	rd, err := StartRedis(ctx, NameRedis, cfg.RedisBin)
	if err != nil {
		return nil, err
	}
	defer rd.Stop()
	return cfg.aggregateMemory(ctx, hk, rd)
}

// runCase runs one case Rounds times on each server, in turn. An error reply fails the suite:
// a benchmark of errors measures nothing.
func (cfg *SuiteConfig) runCase(ctx context.Context, c benchCase, rate float64, hk, rd, hk1 *Proc) (*CaseResult, error) {
	cr := &CaseResult{Workload: c.w.Name, Title: c.w.Title(), Note: c.w.Note, Conns: c.conns, Pipeline: c.pipeline, Rate: rate,
		Samples: map[string][]Sample{}}
	procs := []*Proc{hk, rd}
	if c.procs1 && hk1 != nil {
		procs = append(procs, hk1)
	}
	tmpl := map[*Proc]Template{}
	for _, p := range procs {
		t, err := c.w.Prepare(ctx, p.Addr, p.Redis)
		if err != nil {
			return nil, err
		}
		tmpl[p] = t
	}
	merged := map[string]*Histogram{}
	for round := range cfg.Rounds {
		for _, p := range procs {
			u0, s0, err := p.CPUTime()
			if err != nil {
				return nil, err
			}
			r, err := Run(ctx, Config{Addr: p.Addr, Conns: c.conns, Pipeline: c.pipeline, Duration: cfg.Duration, Warmup: cfg.Warmup,
				Keyspace: cfg.Keyspace, Rate: rate, Commands: []Template{tmpl[p]}, Seed: uint64(round + 1)})
			if err != nil {
				return nil, fmt.Errorf("%s on %s: %w", c.w.Title(), p.Name, err)
			}
			if r.Errors > 0 {
				return nil, fmt.Errorf("%s on %s: %d error replies, first: %s", c.w.Title(), p.Name, r.Errors, r.FirstError)
			}
			u1, s1, err := p.CPUTime()
			if err != nil {
				return nil, err
			}
			perReq := func(d time.Duration) float64 { return float64(d) / 1e3 / float64(max(r.Total, 1)) }
			cr.Samples[p.Name] = append(cr.Samples[p.Name], Sample{RPS: r.Throughput(), P50: msf(r.Hist.Quantile(0.5)),
				P99: msf(r.Hist.Quantile(0.99)), P999: msf(r.Hist.Quantile(0.999)), UserUs: perReq(u1 - u0), SysUs: perReq(s1 - s0)})
			if merged[p.Name] == nil {
				merged[p.Name] = &Histogram{}
			}
			merged[p.Name].Merge(r.Hist)
			last := cr.Samples[p.Name][len(cr.Samples[p.Name])-1]
			cfg.logf("  round %d %-20s %10.0f req/s  p99 %7.3f ms  cpu/req %.2f+%.2f us", round+1, p.Name, r.Throughput(), msf(r.Hist.Quantile(0.99)), last.UserUs, last.SysUs)
		}
	}
	if rate > 0 {
		cr.CDF = map[string][]CDFPoint{}
		for name, h := range merged {
			lat, frac := h.CDF()
			for i := range lat {
				cr.CDF[name] = append(cr.CDF[name], CDFPoint{Ms: msf(lat[i]), Frac: frac[i]})
			}
		}
	}
	return cr, nil
}

func msf(d time.Duration) float64 { return float64(d) / 1e6 }

// RPS lists a server's throughput samples.
func (c *CaseResult) RPS(server string) []float64 {
	out := make([]float64, 0, len(c.Samples[server]))
	for _, s := range c.Samples[server] {
		out = append(out, s.RPS)
	}
	return out
}

// Stat lists one field of a server's samples.
func (c *CaseResult) Stat(server string, f func(Sample) float64) []float64 {
	out := make([]float64, 0, len(c.Samples[server]))
	for _, s := range c.Samples[server] {
		out = append(out, f(s))
	}
	return out
}

// Median of xs (0 for none).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// FindingsHeading starts the hand-written part of docs/benchmarks.md (profiles and what was
// done about them), which a regenerated report keeps.
const FindingsHeading = "## Profiles and findings"

// Target is one of the bars and whether a run met it.
type Target struct {
	What     string
	Bar      string
	Measured string
	Met      bool
}

func ratio(c *CaseResult, a, b string) float64 {
	mb := Median(c.RPS(b))
	if mb == 0 {
		return 0
	}
	return Median(c.RPS(a)) / mb
}

func (r *Results) findCase(name string, conns, pipeline int) *CaseResult {
	for i := range r.Cases {
		if c := &r.Cases[i]; c.Workload == name && c.Conns == conns && c.Pipeline == pipeline {
			return c
		}
	}
	return nil
}

// snapRatio is the median over rounds of a server's p99 during op (BGSAVE, BGREWRITEAOF) over
// its p99 without.
func (r *Results) snapRatio(op, server string) float64 {
	var xs []float64
	for _, s := range r.Snapshot {
		if s.Op == op && s.Server == server && s.P99Outside > 0 {
			xs = append(xs, s.P99During/s.P99Outside)
		}
	}
	return Median(xs)
}

// Targets evaluates the target table against the results.
func (r *Results) Targets() []Target {
	var ts []Target
	add := func(what, bar string, v float64, ok bool) {
		ts = append(ts, Target{What: what, Bar: bar, Measured: fmt.Sprintf("%.2f", v), Met: ok})
	}
	for _, name := range []string{"set", "get", "incr", "gcra-vs-set"} {
		for _, p := range []int{1, 16} {
			if c := r.findCase(name, 50, p); c != nil {
				v := ratio(c, NameHotKV, NameRedis)
				add(fmt.Sprintf("%s, pipeline %d", c.Title, p), "≥ 1.0", v, v >= 1.0)
			}
		}
	}
	if c := r.findCase("gcra", 50, 16); c != nil {
		v := ratio(c, NameHotKV, NameRedis)
		add(c.Title+", pipeline 16", "≥ 4.0", v, v >= 4.0)
	}
	for i := range r.Latency {
		c := &r.Latency[i]
		v := Median(c.Stat(NameHotKV, p99)) / Median(c.Stat(NameRedis, p99))
		add(fmt.Sprintf("p99 latency at %.0f req/s offered, %s", c.Rate, c.Title), "≤ 1.0", v, v <= 1.0)
	}
	for _, m := range r.memRatios() {
		if m.keys == 1_000_000 {
			add("bytes per live GCRA key at 1M keys (used_memory)", "≤ 0.75", m.used, m.used <= 0.75)
		}
	}
	for _, a := range r.aggRatios() {
		add(fmt.Sprintf("bytes per small %s (8 elements, %s keys, used_memory)", aggNames[a.kind], kfmt(float64(a.keys))), "≤ 1.0", a.used, a.used <= 1.0)
	}
	for _, op := range []string{"BGSAVE", "BGREWRITEAOF"} {
		if v := r.snapRatio(op, NameHotKV); v > 0 {
			add(fmt.Sprintf("p99 during a %s of %s keys / p99 without (persistence issue)", op, kfmt(float64(r.Snapshot[0].Keys))), "≤ 3.0", v, v <= 3.0)
		}
	}
	for _, c := range r.Cases {
		if c.Conns > 50 {
			v := ratio(&c, NameHotKV, NameRedis)
			add(fmt.Sprintf("%s, %d connections", c.Title, c.Conns), "≥ 1.0", v, v >= 1.0)
		}
	}
	if r.Raft != nil {
		ts = append(ts, r.Raft.Targets()...)
	}
	return ts
}

func cpuPerReq(c *CaseResult, server string) string {
	u, s := Median(c.Stat(server, func(s Sample) float64 { return s.UserUs })), Median(c.Stat(server, func(s Sample) float64 { return s.SysUs }))
	return fmt.Sprintf("%.2f + %.2f", u, s)
}

func p99(s Sample) float64  { return s.P99 }
func p50(s Sample) float64  { return s.P50 }
func p999(s Sample) float64 { return s.P999 }

type memRatio struct {
	keys      int64
	used, rss float64
}

func (r *Results) memRatios() []memRatio {
	var out []memRatio
	for _, a := range r.Memory {
		if a.Server != NameHotKV {
			continue
		}
		for _, b := range r.Memory {
			if b.Server == NameRedis && b.Keys == a.Keys {
				out = append(out, memRatio{a.Keys, a.BytesPerKey / b.BytesPerKey, a.RSSPerKey / b.RSSPerKey})
			}
		}
	}
	return out
}

// aggNames name the aggregate kinds in the report.
var aggNames = map[string]string{"hash": "hash", "set": "set", "zset": "sorted set", "list": "list"}

type aggRatio struct {
	kind      string
	keys      int64
	used, rss float64
}

func (r *Results) aggRatios() []aggRatio {
	var out []aggRatio
	for _, a := range r.Aggregates {
		if a.Server != NameHotKV {
			continue
		}
		for _, b := range r.Aggregates {
			if b.Server == NameRedis && b.Kind == a.Kind && b.Keys == a.Keys {
				out = append(out, aggRatio{a.Kind, a.Keys, a.BytesPerKey / b.BytesPerKey, a.RSSPerKey / b.RSSPerKey})
			}
		}
	}
	return out
}

func spread(xs []float64) string {
	if len(xs) == 0 {
		return "–"
	}
	return fmt.Sprintf("%s (%s–%s)", kfmt(Median(xs)), kfmt(slices.Min(xs)), kfmt(slices.Max(xs)))
}

func kfmt(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}

// Markdown renders the report. findings is the hand-written section kept from the previous
// report (starting at FindingsHeading), or "".
func (r *Results) Markdown(findings string) string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# Benchmarks: HotKV against Redis, side by side\n\n")
	fmt.Fprintf(&b, "Generated by `make bench` (`hotkv-bench suite`, [internal/bench](../internal/bench)) on %s in %.0f s. Do not edit above %q: the next run rewrites it.\n\n",
		r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Seconds, FindingsHeading)
	fmt.Fprintf(&b, "**Machine**: %s, %d cores, %.0f GiB, Linux %s; %s, %s (commit %s), %s. The load generator runs on the same cores as the servers, so every number below is a share of one small machine: read the **ratios**, not the absolute rates.\n\n",
		m.CPU, m.Cores, m.MemoryGB, m.Kernel, m.HotKV, m.Go, m.Commit, m.Redis)
	fmt.Fprintf(&b, "**Method**: the suite starts HotKV (default `GOMAXPROCS`, i.e. all cores), a second HotKV with `GOMAXPROCS=1` and Redis, all on loopback with persistence off (`--appendonly no --save \"\"`) so that both sides do the same work. Each case runs on each server in turn, round after round (%s), so that the machine's drift hits all alike; the tables give the median and the range over rounds. The load generator speaks raw pipelined RESP (closed-loop cases from one epoll event loop per core since commit 2fee910, from a goroutine per connection before it, as open-loop cases still are); a latency is the time from writing a batch to reading each of its replies; the open-loop cases count from when a request was due (no coordinated omission). Every run must see zero error replies.\n\n", r.Config)

	b.WriteString("## Targets\n\n| target | bar | measured (HotKV / Redis) | met |\n| --- | --- | --- | --- |\n")
	for _, t := range r.Targets() {
		met := "yes"
		if !t.Met {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", t.What, t.Bar, t.Measured, met)
	}

	b.WriteString("\n## Throughput\n\nRequests per second, median (min–max) of the rounds; p99 in ms is the median of the rounds' p99s. *CPU/req* is the server's own CPU time per request in µs (user + kernel, from /proc, median of the rounds): steadier than throughput on a shared machine, and the cost a bigger machine would multiply.\n\n")
	b.WriteString("| workload | conns | pipeline | HotKV | Redis 7 | ratio | HotKV p99 | Redis p99 | HotKV CPU/req | Redis CPU/req |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for i := range r.Cases {
		c := &r.Cases[i]
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | **%.2f** | %.2f | %.2f | %s | %s |\n", c.Title, c.Conns, c.Pipeline,
			spread(c.RPS(NameHotKV)), spread(c.RPS(NameRedis)), ratio(c, NameHotKV, NameRedis),
			Median(c.Stat(NameHotKV, p99)), Median(c.Stat(NameRedis, p99)), cpuPerReq(c, NameHotKV), cpuPerReq(c, NameRedis))
	}
	b.WriteString("\nWhat each pairing compares:\n\n")
	seen := map[string]bool{}
	for _, c := range r.Cases {
		if c.Note != "" && !seen[c.Title] {
			seen[c.Title] = true
			fmt.Fprintf(&b, "- %s: %s.\n", c.Title, c.Note)
		}
	}
	b.WriteString("\nThe Lua scripts are in [internal/bench/workload.go](../internal/bench/workload.go).\n")
	b.WriteString("\n![HotKV/Redis throughput ratio per case](benchmarks/throughput.png)\n")

	if len(r.Pairs) > 0 {
		b.WriteString("\n## One command instead of several round trips (HotKV only)\n\nWhat a HotKV command replaces has no Redis counterpart to run side by side, so each is measured against the commands a client would send instead, on the same HotKV, interleaved round by round; unpipelined. Decisions per second, median (min–max) of the rounds; with one connection, µs per decision is 1/rate: the round trips a client waits for.\n\n")
		b.WriteString("| pair | conns | one command: decisions/s | several: decisions/s | one / several | µs per decision, one / several |\n| --- | --- | --- | --- | --- | --- |\n")
		for i := range r.Pairs {
			p := &r.Pairs[i]
			one, many := Median(p.Decisions(false)), Median(p.Decisions(true))
			us := ""
			if p.Conns == 1 {
				us = fmt.Sprintf("%.1f / %.1f", 1e6/one, 1e6/many)
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %s | **%.2f** | %s |\n", p.Name, p.Conns, spread(p.Decisions(false)), spread(p.Decisions(true)), one/many, us)
		}
		b.WriteString("\n")
		seen := map[string]bool{}
		for _, p := range r.Pairs {
			if !seen[p.Name] {
				seen[p.Name] = true
				fmt.Fprintf(&b, "- %s: %s.\n", p.Name, p.Note)
			}
		}
	}

	if len(r.Latency) > 0 {
		b.WriteString("\n## Latency at the same offered load\n\nOpen loop at a third of what the slower server sustained unpipelined (50 connections); ms, median over rounds.\n\n")
		b.WriteString("| workload | offered req/s | HotKV p50 / p99 / p99.9 | Redis p50 / p99 / p99.9 | p99 ratio |\n| --- | --- | --- | --- | --- |\n")
		for i := range r.Latency {
			c := &r.Latency[i]
			fmt.Fprintf(&b, "| %s | %.0f | %.3f / %.3f / %.3f | %.3f / %.3f / %.3f | **%.2f** |\n", c.Title, c.Rate,
				Median(c.Stat(NameHotKV, p50)), Median(c.Stat(NameHotKV, p99)), Median(c.Stat(NameHotKV, p999)),
				Median(c.Stat(NameRedis, p50)), Median(c.Stat(NameRedis, p99)), Median(c.Stat(NameRedis, p999)),
				Median(c.Stat(NameHotKV, p99))/Median(c.Stat(NameRedis, p99)))
		}
		b.WriteString("\n![Latency distributions at the same offered load](benchmarks/latency-cdf.png)\n")
	}

	if len(r.Memory) > 0 {
		b.WriteString("\n## Memory per rate-limit key\n\nLive GCRA keys (one request per hour, so none expires during the fill), made by GCRA.LIMIT on HotKV and by the GCRA Lua script on Redis (an int-encoded string with a TTL, Redis's most compact form; above 1M keys Redis is filled by `SET` of the same value and TTL, since the script runs at about 100k calls a second). Growth of INFO `used_memory` (allocator bytes in use) and `used_memory_rss` (resident set), each read after `MEMORY PURGE`, divided by the key count.\n\n")
		b.WriteString("| keys | server | bytes/key (used_memory) | bytes/key (RSS) | fill time |\n| --- | --- | --- | --- | --- |\n")
		for _, mr := range r.Memory {
			fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | %.1f s |\n", kfmt(float64(mr.Keys)), mr.Server, mr.BytesPerKey, mr.RSSPerKey, mr.FillSeconds)
		}
		b.WriteString("\n| keys | HotKV/Redis (used_memory) | HotKV/Redis (RSS) |\n| --- | --- | --- |\n")
		for _, mr := range r.memRatios() {
			fmt.Fprintf(&b, "| %s | **%.2f** | %.2f |\n", kfmt(float64(mr.keys)), mr.used, mr.rss)
		}
	}

	if len(r.Aggregates) > 0 {
		b.WriteString("\n## Memory per small aggregate\n\nThe data-types issue's bar: memory per small hash, set and sorted set at or below Redis's. Each key gets eight short elements in one command, the same on both servers (`hotkv-bench memory -kind hash|set|zset|list`, [internal/bench/memory.go](../internal/bench/memory.go)): `HSET h:N f1 value-1 ... f8 value-8`, `SADD s:N member-1 ... member-8`, `ZADD z:N 1 member-1 ... 8 member-8`, `RPUSH l:N item-1 ... item-8`. Growth of `used_memory` and `used_memory_rss` after `MEMORY PURGE`, divided by the key count. OBJECT ENCODING is the same on both: listpack for the hash and the sorted set, hashtable for the set of strings, quicklist for the list.\n\n")
		b.WriteString("| value | keys | HotKV bytes/key | Redis bytes/key | HotKV/Redis (used_memory) | HotKV/Redis (RSS) |\n| --- | --- | --- | --- | --- | --- |\n")
		for _, a := range r.aggRatios() {
			var hk, rd float64
			for _, row := range r.Aggregates {
				if row.Kind == a.kind && row.Keys == a.keys {
					if row.Server == NameHotKV {
						hk = row.BytesPerKey
					} else if row.Server == NameRedis {
						rd = row.BytesPerKey
					}
				}
			}
			fmt.Fprintf(&b, "| %s | %s | %.1f | %.1f | **%.2f** | %.2f |\n", aggNames[a.kind], kfmt(float64(a.keys)), hk, rd, a.used, a.rss)
		}
	}

	b.WriteString("\n## Cores: HotKV with GOMAXPROCS=1 and with all cores\n\n| workload | pipeline | GOMAXPROCS=1 | all cores | all / 1 | Redis |\n| --- | --- | --- | --- | --- | --- |\n")
	for i := range r.Cases {
		c := &r.Cases[i]
		if len(c.Samples[NameHotKV1]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | **%.2f** | %s |\n", c.Title, c.Pipeline, spread(c.RPS(NameHotKV1)), spread(c.RPS(NameHotKV)),
			ratio(c, NameHotKV, NameHotKV1), spread(c.RPS(NameRedis)))
	}
	fmt.Fprintf(&b, "\nOn this %d-core machine the load generator needs a core too, so \"all cores\" cannot show linear scaling here; see [architecture](architecture.md) for the sharding that lets it scale on bigger machines.\n", m.Cores)

	if len(r.Snapshot) > 0 {
		b.WriteString("\n## Latency during BGSAVE and BGREWRITEAOF\n\nThe persistence issue's bar: p99 during a snapshot of 1M keys at most 3× the p99 without one. Keys `SET key:N` (16-byte values); after a 2 s warmup, an open-loop mix of GET and SET over them from 50 connections; a BGSAVE (or, on a server started with `appendonly yes`, a BGREWRITEAOF) one second in and one second after each finishes; latencies while one runs are kept apart from the rest of the same run. Redis forks for both; HotKV copies each shard under its lock and encodes outside it, the rewrite also routing each write to the old or new log segment (docs/persistence.md).\n\n")
		b.WriteString("| operation | server | round | keys | offered req/s | runs (s in all) | p99 without / during | p99.9 without / during | p99 during / without |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
		for _, s := range r.Snapshot {
			fmt.Fprintf(&b, "| %s | %s | %d | %s | %.0f | %d (%.1f s) | %.3f / %.3f ms | %.3f / %.3f ms | %.2f |\n", s.Op, s.Server, s.Round, kfmt(float64(s.Keys)), s.Rate, s.Saves, s.SaveSecs,
				s.P99Outside, s.P99During, s.P999Outside, s.P999During, s.P99During/s.P99Outside)
		}
		b.WriteString("\n| operation | server | median p99 during / without |\n| --- | --- | --- |\n")
		for _, op := range []string{"BGSAVE", "BGREWRITEAOF"} {
			for _, srv := range []string{NameHotKV, NameRedis} {
				fmt.Fprintf(&b, "| %s | %s | **%.2f** |\n", op, srv, r.snapRatio(op, srv))
			}
		}
	}
	b.WriteString(r.Raft.Markdown())
	b.WriteString(r.Cluster.Markdown())
	b.WriteString(r.RLS.Markdown())
	b.WriteString("\nRaw numbers: [benchmarks/results.json](benchmarks/results.json).\n\n")
	if findings == "" {
		findings = FindingsHeading + "\n\n(none yet)\n"
	}
	b.WriteString(findings)
	return b.String()
}

// ExistingFindings returns the hand-written tail of an existing report, or "".
func ExistingFindings(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	// The heading on a line of its own: the report's preamble quotes it too.
	s := string(b)
	if i := strings.Index(s, "\n"+FindingsHeading+"\n"); i >= 0 {
		return s[i+1:]
	}
	return ""
}

// Plots writes throughput.png and latency-cdf.png into dir.
func (r *Results) Plots(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := r.throughputPlot(filepath.Join(dir, "throughput.png")); err != nil {
		return err
	}
	if len(r.Latency) > 0 {
		return r.latencyPlot(filepath.Join(dir, "latency-cdf.png"))
	}
	return nil
}

func (r *Results) throughputPlot(path string) error {
	p := plot.New()
	p.Title.Text = "HotKV / Redis 7 throughput (median of interleaved rounds)"
	p.X.Label.Text = "ratio (> 1: HotKV faster)"
	var vals plotter.Values
	var names []string
	for i := len(r.Cases) - 1; i >= 0; i-- {
		c := &r.Cases[i]
		vals = append(vals, ratio(c, NameHotKV, NameRedis))
		names = append(names, fmt.Sprintf("%s  c=%d P=%d", c.Title, c.Conns, c.Pipeline))
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(9))
	if err != nil {
		return err
	}
	bars.Horizontal = true
	bars.Color = color.RGBA{R: 0xd9, G: 0x48, B: 0x1c, A: 0xff}
	bars.LineStyle.Width = 0
	p.Add(bars)
	p.NominalY(names...)
	maxV := 1.0
	for _, v := range vals {
		maxV = math.Max(maxV, v)
	}
	p.X.Min, p.X.Max = 0, maxV*1.05
	line, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -1}, {X: 1, Y: float64(len(vals))}})
	if err != nil {
		return err
	}
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Add(plotter.NewGrid())
	return p.Save(10*vg.Inch, vg.Length(1.2+0.17*float64(len(vals)))*vg.Inch, path)
}

func (r *Results) latencyPlot(path string) error {
	p := plot.New()
	p.Title.Text = "Latency at the same offered load (open loop, 50 connections)"
	p.X.Label.Text = "latency (ms, log scale)"
	p.Y.Label.Text = "fraction of requests at or below"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	i := 0
	for ci := range r.Latency {
		c := &r.Latency[ci]
		for _, srv := range []string{NameHotKV, NameRedis} {
			var xy plotter.XYs
			for _, pt := range c.CDF[srv] {
				if pt.Ms > 0 {
					xy = append(xy, plotter.XY{X: pt.Ms, Y: pt.Frac})
				}
			}
			if len(xy) == 0 {
				continue
			}
			l, err := plotter.NewLine(xy)
			if err != nil {
				return err
			}
			l.Color = plotutil.Color(ci)
			if srv == NameRedis {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			}
			l.Width = vg.Points(1.5)
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("%s: %s", srv, c.Title), l)
			i++
		}
	}
	p.Y.Min, p.Y.Max = 0, 1
	return p.Save(10*vg.Inch, 5*vg.Inch, path)
}

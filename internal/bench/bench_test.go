package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/testutil"
)

func TestHistogramQuantiles(t *testing.T) {
	var h Histogram
	for i := 1; i <= 100_000; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {0.999, 99900 * time.Microsecond}} {
		got := h.Quantile(tc.q)
		if diff := float64(got-tc.want) / float64(tc.want); diff < -0.01 || diff > 0.01 {
			t.Errorf("q%.3f = %v, want %v within 1%%", tc.q, got, tc.want)
		}
	}
	if h.Max() != 100*time.Millisecond || h.Count() != 100_000 {
		t.Errorf("max %v count %d", h.Max(), h.Count())
	}
	if h.Quantile(1) > h.Max() {
		t.Errorf("q1 %v above max %v", h.Quantile(1), h.Max())
	}
	var g Histogram
	g.Merge(&h)
	g.Merge(&h)
	if g.Count() != 200_000 || g.Quantile(0.5) != h.Quantile(0.5) {
		t.Errorf("merge: count %d median %v", g.Count(), g.Quantile(0.5))
	}
	lat, frac := h.CDF()
	for i := 1; i < len(lat); i++ {
		if lat[i] < lat[i-1] || frac[i] < frac[i-1] {
			t.Fatalf("CDF not monotonic at %d: %v %v", i, lat[i-1:i+1], frac[i-1:i+1])
		}
	}
}

// Every value lands in a bucket whose bounds contain it, and buckets are at most 1/128 wide
// relative to their low end.
func TestHistogramBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 100_000 {
		v := rng.Uint64N(histMax)
		i := histIndex(v)
		lo, hi := histLow(i), histLow(i+1)
		if v < lo || v >= hi {
			t.Fatalf("%d in bucket %d [%d, %d)", v, i, lo, hi)
		}
		if lo >= histSub && float64(hi-lo)/float64(lo) > 1.0/histSub+1e-12 {
			t.Fatalf("bucket %d [%d, %d) too wide", i, lo, hi)
		}
	}
}

func TestTemplateAppend(t *testing.T) {
	tm := ParseTemplate("SET", "key:"+RandPlaceholder+":x", "v")
	got := string(tm.Append(nil, 42))
	want := "*3\r\n$3\r\nSET\r\n$18\r\nkey:000000000042:x\r\n$1\r\nv\r\n"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if tm.String() != "SET key:"+RandPlaceholder+":x v" {
		t.Fatalf("String() = %q", tm.String())
	}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf = tm.Append(buf[:0], 7) }); n != 0 {
		t.Fatalf("Append allocates %.0f times", n)
	}
}

func TestReadReply(t *testing.T) {
	in := "+OK\r\n-ERR bad\r\n:5\r\n$3\r\nabc\r\n$-1\r\n*2\r\n:1\r\n-WRONGTYPE x\r\n%1\r\n+a\r\n:1\r\n_\r\n,1.5\r\n#t\r\n"
	got := scanAll(t, in, 10)
	want := []bool{false, true, false, false, false, true, false, false, false, false}
	for i := range want {
		if got[i].isErr != want[i] {
			t.Errorf("reply %d: error %v, want %v", i, got[i].isErr, want[i])
		}
	}
	if string(got[1].errText) != "ERR bad" || string(got[5].errText) != "WRONGTYPE x" {
		t.Errorf("error texts %q %q", got[1].errText, got[5].errText)
	}
	var rp reply
	for _, bad := range []string{"?x\r\n", "+OK\n", "$x\r\n", "*y\r\n", "\r\n"} {
		if _, err := scanReply([]byte(bad), &rp); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// scanAll parses in as n replies, and checks that every proper prefix of each reply reads as
// incomplete: how the load generators see a reply that arrives in pieces.
func scanAll(t *testing.T, in string, n int) []reply {
	t.Helper()
	b := []byte(in)
	var out []reply
	for range n {
		var rp reply
		end, err := scanReply(b, &rp)
		if err != nil || end == 0 {
			t.Fatalf("reply %d of %q: end %d err %v", len(out), in, end, err)
		}
		for k := range end {
			var part reply
			if m, err := scanReply(b[:k], &part); m != 0 || err != nil {
				t.Fatalf("reply %d: prefix %q read as complete (%d, %v)", len(out), b[:k], m, err)
			}
		}
		rp.errText = append([]byte(nil), rp.errText...)
		out = append(out, rp)
		b = b[end:]
	}
	if len(b) != 0 {
		t.Fatalf("%q left over", b)
	}
	return out
}

// A counted, sequential run sends exactly the requested number of commands, so a fill creates
// exactly n keys, and error replies are counted, not fatal: with either engine.
func TestRunCountsAndErrors(t *testing.T) {
	for _, goroutines := range []bool{false, true} {
		t.Run(fmt.Sprintf("goroutines=%v", goroutines), func(t *testing.T) {
			s := testutil.StartServer(t)
			ctx := context.Background()
			r, err := Run(ctx, Config{Addr: s.Addr, Conns: 3, Pipeline: 7, Requests: 1000, Sequential: true, Goroutines: goroutines,
				Commands: []Template{ParseTemplate("SET", "k:"+RandPlaceholder, "v")}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests != 1000 || r.Total != 1000 || r.Errors != 0 || r.Hist.Count() != 1000 {
				t.Fatalf("requests %d total %d errors %d recorded %d", r.Requests, r.Total, r.Errors, r.Hist.Count())
			}
			if n, err := Do(ctx, s.Addr, "DBSIZE"); err != nil || n.(int64) != 1000 {
				t.Fatalf("DBSIZE %v %v", n, err)
			}
			r, err = Run(ctx, Config{Addr: s.Addr, Conns: 2, Pipeline: 4, Requests: 100, Keyspace: 1000, Goroutines: goroutines,
				Commands: []Template{ParseTemplate("INCR", "k:"+RandPlaceholder)}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors != 100 || !strings.HasPrefix(r.FirstError, "ERR value is not an integer") {
				t.Fatalf("errors %d first %q", r.Errors, r.FirstError)
			}
			if goroutines {
				return // it writes a whole batch before it reads: a batch must fit the socket buffers
			}
			// The event loop: batches bigger than the socket buffers (partial writes, EPOLLOUT)
			// and replies bigger than the read buffer. Per batch, 32 GETs of a 200 KB value and
			// 32 EXISTS of a 1 MB key.
			if _, err := Do(ctx, s.Addr, "SET", "big", strings.Repeat("x", 200_000)); err != nil {
				t.Fatal(err)
			}
			long := strings.Repeat("k", 1<<20)
			tctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			r, err = Run(tctx, Config{Addr: s.Addr, Conns: 2, Pipeline: 64, Requests: 256,
				Commands: []Template{ParseTemplate("GET", "big"), ParseTemplate("EXISTS", long)}})
			if err != nil {
				t.Fatal(err)
			}
			if r.Requests != 256 || r.Errors != 0 {
				t.Fatalf("big: requests %d errors %d (%s)", r.Requests, r.Errors, r.FirstError)
			}
		})
	}
}

// A timed run ends on time, and a cancelled one at once and without an error.
func TestRunStops(t *testing.T) {
	s := testutil.StartServer(t)
	for _, goroutines := range []bool{false, true} {
		t0 := time.Now()
		r, err := Run(context.Background(), Config{Addr: s.Addr, Conns: 16, Duration: 200 * time.Millisecond, Goroutines: goroutines,
			Commands: []Template{ParseTemplate("PING")}})
		if err != nil || r.Requests == 0 || r.Elapsed > 250*time.Millisecond || time.Since(t0) > 2*time.Second {
			t.Fatalf("goroutines=%v: %v, %+v in %v", goroutines, err, r, time.Since(t0))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		t0 = time.Now()
		r, err = Run(ctx, Config{Addr: s.Addr, Conns: 16, Duration: time.Hour, Goroutines: goroutines,
			Commands: []Template{ParseTemplate("PING")}})
		cancel()
		if err != nil || r.Requests == 0 || time.Since(t0) > 2*time.Second {
			t.Fatalf("goroutines=%v cancelled: %v, %+v in %v", goroutines, err, r, time.Since(t0))
		}
	}
}

// An open-loop run paces its requests and splits them by phase.
func TestRunOpenLoopPhases(t *testing.T) {
	s := testutil.StartServer(t)
	var phase atomic.Int32
	r, err := Run(context.Background(), Config{Addr: s.Addr, Conns: 4, Duration: 300 * time.Millisecond, Rate: 2000,
		Phase: &phase, Commands: []Template{ParseTemplate("PING")}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 0 || r.Requests == 0 || r.Phases[0].Count() != uint64(r.Requests) || r.Phases[1].Count() != 0 {
		t.Fatalf("requests %d errors %d phases %d/%d", r.Requests, r.Errors, r.Phases[0].Count(), r.Phases[1].Count())
	}
	// Paced at 2000/s for 0.3 s: far fewer than a closed loop would send.
	if r.Requests > 2000 {
		t.Fatalf("open loop sent %d requests in 0.3 s at 2000/s", r.Requests)
	}
}

// Each workload's HotKV form runs without an error reply.
func TestWorkloadsOnHotKV(t *testing.T) {
	s := testutil.StartServer(t)
	ctx := context.Background()
	for _, w := range Workloads {
		tm, err := w.Prepare(ctx, s.Addr, false)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		r, err := Run(ctx, Config{Addr: s.Addr, Conns: 2, Pipeline: 4, Requests: 200, Keyspace: 50, Commands: []Template{tm}})
		if err != nil || r.Errors != 0 {
			t.Fatalf("%s: %v, %d errors (%s)", w.Name, err, r.Errors, r.FirstError)
		}
	}
	m, err := Memory(ctx, s.Addr, false, 5000)
	if err != nil {
		t.Fatal(err)
	}
	if m.BytesPerKey() <= 0 {
		t.Fatalf("memory: %+v", m)
	}
	for kind := range Aggregates {
		m, err := AggregateMemory(ctx, s.Addr, kind, 2000)
		if err != nil || m.BytesPerKey() <= 0 {
			t.Fatalf("%s memory: %+v %v", kind, m, err)
		}
	}
}

func redisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("HOTKV_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-server is not on PATH and HOTKV_REQUIRE_REDIS=1")
		}
		t.Skip("redis-server is not on PATH")
	}
	return bin
}

// The Redis side of every workload runs on a real Redis without an error reply, and the GCRA
// script makes GCRA.LIMIT's decisions: a burst of 10 admitted, the 11th denied, with the same
// remaining counts.
func TestWorkloadsOnRedis(t *testing.T) {
	bin := redisServer(t)
	ctx := context.Background()
	rd, err := StartRedis(ctx, NameRedis, bin)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Stop()
	for _, w := range Workloads {
		tm, err := w.Prepare(ctx, rd.Addr, true)
		if err != nil {
			t.Fatalf("%s: %v", w.Name, err)
		}
		r, err := Run(ctx, Config{Addr: rd.Addr, Conns: 2, Pipeline: 4, Requests: 200, Keyspace: 50, Commands: []Template{tm}})
		if err != nil || r.Errors != 0 {
			t.Fatalf("%s: %v, %d errors (%s)", w.Name, err, r.Errors, r.FirstError)
		}
	}
	hk := testutil.StartServer(t)
	// The Redis side's scripts run on HotKV too (its own Lua), with the same replies shapes
	// and no error: the workloads can be pointed at HotKV's EVALSHA.
	for _, w := range Workloads {
		if len(w.Scripts) == 0 {
			continue
		}
		tm, err := w.Prepare(ctx, hk.Addr, true)
		if err != nil {
			t.Fatalf("%s on HotKV: %v", w.Name, err)
		}
		r, err := Run(ctx, Config{Addr: hk.Addr, Conns: 2, Pipeline: 4, Requests: 200, Keyspace: 50, Commands: []Template{tm}})
		if err != nil || r.Errors != 0 {
			t.Fatalf("%s on HotKV: %v, %d errors (%s)", w.Name, err, r.Errors, r.FirstError)
		}
	}
	for i := range 11 {
		onHotKV, err := Do(ctx, hk.Addr, "EVALSHA", SHA1(GCRALua), 1, "gl", 10, 10, 60, 1)
		if err != nil {
			t.Fatal(err)
		}
		onRedis, err := Do(ctx, rd.Addr, "EVALSHA", SHA1(GCRALua), 1, "gl", 10, 10, 60, 1)
		if err != nil {
			t.Fatal(err)
		}
		h, r := onHotKV.([]any), onRedis.([]any)
		if len(h) != len(r) || h[0] != r[0] || h[1] != r[1] {
			t.Fatalf("request %d: GCRA script on HotKV %v, on Redis %v", i+1, h, r)
		}
	}
	for i := range 11 {
		lua, err := Do(ctx, rd.Addr, "EVALSHA", SHA1(GCRALua), 1, "g", 10, 10, 60, 1)
		if err != nil {
			t.Fatal(err)
		}
		native, err := Do(ctx, hk.Addr, "GCRA.LIMIT", "g", 60000, 10)
		if err != nil {
			t.Fatal(err)
		}
		l, n := lua.([]any), native.([]any)
		// Lua: {allowed count, remaining, ...}; GCRA.LIMIT: [denied, limit, remaining, ...].
		if (l[0].(int64) == 0) != (n[0].(int64) == 1) || l[1].(int64) != n[2].(int64) {
			t.Fatalf("request %d: Lua %v, GCRA.LIMIT %v", i+1, l, n)
		}
	}
}

// A tiny suite runs end to end and writes the report, plots and raw results, keeping the
// hand-written findings.
func TestSuiteReport(t *testing.T) {
	bin := redisServer(t)
	dir := t.TempDir()
	hk := filepath.Join(dir, "hotkv-server")
	if out, err := exec.Command("go", "build", "-o", hk, "../../cmd/hotkv-server").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	res, err := RunSuite(context.Background(), SuiteConfig{HotKVBin: hk, RedisBin: bin, Rounds: 1, Duration: 100 * time.Millisecond,
		Keyspace: 1000, MemKeys: []int64{2000}, SnapshotKeys: 2000, SnapshotDuration: 1500 * time.Millisecond, ManyConns: []int{60}, Only: []string{"set", "gcra-vs-set", "gcra", "limitall"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 8 || len(res.Latency) != 3 || len(res.Memory) != 2 || len(res.Snapshot) != 4 || len(res.Pairs) != len(PairConns) {
		t.Fatalf("cases %d latency %d memory %d snapshot %d pairs %d", len(res.Cases), len(res.Latency), len(res.Memory), len(res.Snapshot), len(res.Pairs))
	}
	for _, p := range res.Pairs {
		if len(p.One) != 1 || len(p.Many) != 1 || p.One[0].RPS <= 0 || p.Many[0].RPS <= 0 || p.Requests != 2 {
			t.Fatalf("pair %s: %+v", p.Name, p)
		}
	}
	for _, c := range res.Cases {
		for _, srv := range []string{NameHotKV, NameRedis} {
			if len(c.Samples[srv]) != 1 || c.Samples[srv][0].RPS <= 0 {
				t.Fatalf("%s on %s: %+v", c.Title, srv, c.Samples[srv])
			}
		}
	}
	if err := res.Plots(filepath.Join(dir, "benchmarks")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"throughput.png", "latency-cdf.png"} {
		if st, err := os.Stat(filepath.Join(dir, "benchmarks", f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	md := filepath.Join(dir, "benchmarks.md")
	os.WriteFile(md, []byte("old numbers\n"+FindingsHeading+"\n\nkept\n"), 0o644)
	report := res.Markdown(ExistingFindings(md))
	for _, want := range []string{"## Targets", "GCRA.LIMIT vs EVALSHA gcra.lua", "## Memory per rate-limit key", "## Latency during BGSAVE and BGREWRITEAOF", "## One command instead of several round trips", "| limitall | 1 |", FindingsHeading + "\n\nkept\n"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(report, "old numbers") {
		t.Error("report kept the old numbers")
	}
}

// The HotKV-only pairs run without an error reply both ways.
func TestHotKVPairsOnHotKV(t *testing.T) {
	s := testutil.StartServer(t)
	ctx := context.Background()
	for _, p := range HotKVPairs {
		one, many := p.Templates()
		for _, tm := range [][]Template{one, many} {
			r, err := Run(ctx, Config{Addr: s.Addr, Conns: 2, Pipeline: 4, Requests: 200, Keyspace: 50, Commands: tm})
			if err != nil || r.Errors != 0 {
				t.Fatalf("%s: %v, %d errors (%s)", p.Name, err, r.Errors, r.FirstError)
			}
		}
	}
}

// MergeCases replaces a case measured again, and puts a new workload's cases after those of
// the workloads listed before it, ahead of the many-connections cases.
func TestMergeCases(t *testing.T) {
	c := func(w string, conns, pipe int) CaseResult {
		return CaseResult{Workload: w, Conns: conns, Pipeline: pipe}
	}
	r := &Results{Cases: []CaseResult{c("set", 50, 1), c("gcra", 50, 1), c("leaky", 50, 1), c("set", 1000, 1)}}
	again := c("gcra", 50, 1)
	again.Title = "again"
	r.MergeCases(&Results{Cases: []CaseResult{again, c("concurrency", 50, 1), c("concurrency", 50, 16)}, Pairs: []PairResult{{Name: "limitall"}}})
	var got []string
	for _, x := range r.Cases {
		got = append(got, fmt.Sprintf("%s/%d/%d%s", x.Workload, x.Conns, x.Pipeline, x.Title))
	}
	want := "set/50/1 gcra/50/1again leaky/50/1 concurrency/50/1 concurrency/50/16 set/1000/1"
	if strings.Join(got, " ") != want || len(r.Pairs) != 1 {
		t.Fatalf("got %v, want %s", got, want)
	}
}

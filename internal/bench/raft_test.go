package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readCounted classifies replies by their first integer: GCRA.LIMIT's allowed [0 ...], the Lua
// script's allowed {1 ...}, and everything else (errors, scalars, empty arrays) as neither,
// consuming each reply whole.
func TestReadCounted(t *testing.T) {
	in := "*2\r\n:0\r\n:5\r\n*2\r\n:1\r\n$1\r\nx\r\n-MOVED 0 a:1\r\n*0\r\n*1\r\n$1\r\n0\r\n:0\r\n*-1\r\n*3\r\n:10\r\n*1\r\n:1\r\n-ERR x\r\n"
	type rep struct {
		err   bool
		first int
	}
	want := []rep{{false, 1}, {false, 2}, {true, 0}, {false, 0}, {false, 0}, {false, 0}, {false, 0}, {true, 2}}
	for i, got := range scanAll(t, in, len(want)) {
		if (rep{got.isErr, got.first}) != want[i] {
			t.Errorf("reply %d: error %v first %d, want %+v", i, got.isErr, got.first, want[i])
		}
	}
}

// A tiny `hotkv-bench raft` runs end to end on real processes: a 3-node group formed with
// RAFT ADD, only allowed decisions counted on every server, one leader killed and a new one
// serving, the killed node back in the group, and the report section rendered. (It measures
// nothing: the numbers of a run this short mean nothing.)
func TestRaftBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	hk := filepath.Join(dir, "hotkv-server")
	if out, err := exec.Command("go", "build", "-o", hk, "../../cmd/hotkv-server").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cfg := RaftConfig{HotKVBin: hk, Conns: 8, Pipelines: []int{1, 4}, Rounds: 1, Duration: 300 * time.Millisecond,
		Warmup: 100 * time.Millisecond, Failovers: 1, FailoverConns: 4}
	servers := []string{NameRaft}
	if bin, err := exec.LookPath("redis-server"); err == nil {
		cfg.Compare, cfg.RedisBin = true, bin
		servers = append(servers, NameStandalone, NameRedisAOF)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunRaft(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 2 {
		t.Fatalf("%d cases", len(res.Cases))
	}
	for _, c := range res.Cases {
		for _, srv := range servers {
			if len(c.Samples[srv]) != 1 {
				t.Fatalf("pipeline %d, %s: %d samples", c.Pipeline, srv, len(c.Samples[srv]))
			}
			s := c.Samples[srv][0]
			if s.Decisions == 0 || s.Allowed != s.Decisions || s.RPS <= 0 {
				t.Fatalf("pipeline %d, %s: %d allowed of %d decisions, %.0f/s", c.Pipeline, srv, s.Allowed, s.Decisions, s.RPS)
			}
		}
	}
	if len(res.Failovers) != 1 {
		t.Fatalf("%d failovers", len(res.Failovers))
	}
	f := res.Failovers[0]
	if f.Killed == "" || f.NewLeader == "" || f.NewLeader == f.Killed || f.ServingMs <= 0 || f.ElectedMs <= 0 || f.ElectedMs > f.ServingMs {
		t.Fatalf("failover %+v", f)
	}
	md := (&Results{Raft: res}).Markdown("")
	for _, want := range []string{"## Replicated (Raft)", "### Failover", "| 1 | " + NameRaft + " | **", "| 4 | " + NameRaft + " | **"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if ts := res.Targets(); len(ts) != 2 {
		t.Errorf("targets %+v", ts)
	}
}

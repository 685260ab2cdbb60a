package bench

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/replication"
)

// EvenSlots cuts the slots into contiguous ranges that cover each slot exactly once, the way
// scripts/cluster-demo.sh assigns them.
func TestEvenSlots(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 7, 16, ClusterSlots} {
		rs := EvenSlots(n)
		if len(rs) != n {
			t.Fatalf("%d shards: %d ranges", n, len(rs))
		}
		next := 0
		for k, r := range rs {
			if r.Start != next || r.End < r.Start {
				t.Fatalf("%d shards: range %d is %v after slot %d", n, k, r, next-1)
			}
			next = r.End + 1
		}
		if next != ClusterSlots {
			t.Fatalf("%d shards: ranges end at %d", n, next-1)
		}
	}
	if got := EvenSlots(3); got[0] != (SlotRange{0, 5460}) || got[1] != (SlotRange{5461, 10921}) || got[2] != (SlotRange{10922, 16383}) {
		t.Fatalf("EvenSlots(3) = %v", got)
	}
}

func TestShardOfSlot(t *testing.T) {
	rs := EvenSlots(3)
	for slot, want := range map[int]int{0: 0, 5460: 0, 5461: 1, 10921: 1, 10922: 2, 16383: 2, 16384: -1, -1: -1} {
		if got := ShardOfSlot(rs, slot); got != want {
			t.Errorf("slot %d: shard %d, want %d", slot, got, want)
		}
	}
	if got := ShardOfSlot([]SlotRange{MoveSlots}, MoveSlots.End+1); got != -1 {
		t.Errorf("a slot outside the only range: %d", got)
	}
}

// Template.AppendKey is the key Append writes for the same number, so the slot computed from it is
// the slot of the request the load generator sends.
func TestTemplateAppendKey(t *testing.T) {
	tmpl := ParseTemplate("GCRA.LIMIT", "rl:"+RandPlaceholder+":x", "3600000000", "1000")
	for _, n := range []uint64{0, 7, 123456789, 999_999_999_999} {
		key := tmpl.AppendKey(nil, n)
		req := tmpl.Append(nil, n)
		// *4 $10 GCRA.LIMIT $len key ...
		parts := bytes.Split(req, []byte("\r\n"))
		if string(parts[4]) != string(key) {
			t.Errorf("n %d: AppendKey %q, Append wrote %q", n, key, parts[4])
		}
		if len(key) != len("rl:")+randDigits+len(":x") {
			t.Errorf("n %d: key %q is not padded to %d digits", n, key, randDigits)
		}
	}
	if k := ParseTemplate("PING").AppendKey(nil, 1); k != nil {
		t.Errorf("a template without a placeholder has key %q", k)
	}
}

// Every number in a shard's pool stands for a key of that shard's slots, the pools are full,
// and no number appears twice (a fill of a pool creates exactly that many keys).
func TestShardKeyPools(t *testing.T) {
	tmpl := RaftAllowed.template()
	for _, ranges := range [][]SlotRange{EvenSlots(1), EvenSlots(3), {MoveSlots}, {{100, 163}, {16000, 16383}}} {
		const per = 2000
		pools := ShardKeyPools(tmpl, ranges, per)
		seen := map[uint64]bool{}
		for k, pool := range pools {
			if len(pool) != per {
				t.Fatalf("%v: pool %d has %d numbers", ranges, k, len(pool))
			}
			for _, n := range pool {
				if seen[n] {
					t.Fatalf("%v: number %d twice", ranges, n)
				}
				seen[n] = true
				if slot := replication.KeySlot(tmpl.AppendKey(nil, n)); !ranges[k].Contains(slot) {
					t.Fatalf("%v: pool %d has %q in slot %d", ranges, k, tmpl.AppendKey(nil, n), slot)
				}
			}
		}
	}
	if pools := ShardKeyPools(tmpl, EvenSlots(2), 0); len(pools) != 2 || len(pools[0]) != 0 {
		t.Fatalf("empty pools: %v", pools)
	}
}

// template is the workload's HotKV command line without a server (it has no setup).
func (w Workload) template() Template { return ParseTemplate(w.HotKV...) }

func TestSplitConns(t *testing.T) {
	for _, c := range []struct {
		conns, n int
		want     []int
	}{{256, 1, []int{256}}, {256, 2, []int{128, 128}}, {256, 3, []int{86, 85, 85}}, {2, 3, []int{1, 1, 0}}} {
		got := SplitConns(c.conns, c.n)
		sum := 0
		for i := range got {
			sum += got[i]
			if got[i] != c.want[i] {
				t.Fatalf("SplitConns(%d, %d) = %v, want %v", c.conns, c.n, got, c.want)
			}
		}
		if sum != c.conns {
			t.Fatalf("SplitConns(%d, %d) = %v", c.conns, c.n, got)
		}
	}
}

// A tiny `hotkv-bench cluster` runs end to end on real processes: clusters of one and two
// shards formed as cluster-demo.sh forms them, only allowed decisions (no redirect, no error)
// counted, a slot range of a few thousand keys moved, every key arriving and the source
// dropping them, and the report section rendered. (Its numbers mean nothing.)
func TestClusterBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	hk := filepath.Join(dir, "hotkv-server")
	if out, err := exec.Command("go", "build", "-o", hk, "../../cmd/hotkv-server").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunCluster(ctx, ClusterConfig{HotKVBin: hk, Shards: []int{1, 2}, Nodes: 1, Conns: 8, Pipelines: []int{1, 4},
		Rounds: 1, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, PoolKeys: 5000, MoveKeys: 3000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Scaling) != 4 {
		t.Fatalf("%d scaling rows", len(res.Scaling))
	}
	for _, row := range res.Scaling {
		if len(row.Samples) != 1 {
			t.Fatalf("%d shards, pipeline %d: %d samples", row.Shards, row.Pipeline, len(row.Samples))
		}
		s := row.Samples[0]
		if s.Decisions == 0 || s.Allowed != s.Decisions || s.RPS <= 0 || s.UserUs <= 0 {
			t.Fatalf("%d shards, pipeline %d: %+v", row.Shards, row.Pipeline, s)
		}
		if v := res.Ratio(&row); v <= 0 {
			t.Fatalf("%d shards, pipeline %d: no ratio to 1 shard", row.Shards, row.Pipeline)
		}
	}
	m := res.Move
	if m == nil || m.Keys != 3000 || m.Strings+m.GCRA != 3000 || m.GCRA != 300 {
		t.Fatalf("move %+v", m)
	}
	if m.TargetKeys != 3000 || m.MovedKeys != 3000 || m.SourceAfter != 0 || !m.TargetNodesOK || m.WallMs <= 0 || m.DroppedMs <= 0 || m.EpochAfter == m.EpochBefore ||
		m.UnavailableMs <= 0 || m.UnavailableMs > m.WallMs+1000 {
		t.Fatalf("move %+v", m)
	}
	md := (&Results{Cluster: res}).Markdown("")
	for _, want := range []string{"## Sharded cluster", "### Slot move", "| 2 | 4 | **", "Every key arrived"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if res.Machine.Cores < ClusterScalingCores && !strings.Contains(md, "cannot show multi-core scaling") {
		t.Error("the report does not say this machine cannot show the scaling")
	}
}

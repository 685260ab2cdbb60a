package cluster

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func apply(t *testing.T, f *FSM, op Op) error {
	t.Helper()
	b, err := json.Marshal(op)
	if err != nil {
		t.Fatal(err)
	}
	return f.ApplyErr(0, 0, b)
}

// TestMapOps: nodes create their shards, slots are assigned only once, hints are fenced by
// term, and the view answers the owner of every slot.
func TestMapOps(t *testing.T) {
	f := NewFSM()
	if f.View().Owner(0) != nil {
		t.Fatal("an empty map owns slot 0")
	}
	if err := apply(t, f, Op{Kind: "assign", Shard: "s1", Slots: []Range{{0, 10}}}); err == nil || !strings.Contains(err.Error(), "unknown shard") {
		t.Fatalf("assign to an unknown shard: %v", err)
	}
	for _, n := range []Node{{ID: "n1", Shard: "s1", Addr: "h:1"}, {ID: "n2", Shard: "s1", Addr: "h:2"}, {ID: "n3", Shard: "s2", Addr: "h:3"}} {
		if err := apply(t, f, Op{Kind: "node", Node: &n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := apply(t, f, Op{Kind: "node", Node: &Node{ID: "n1", Shard: "s2"}}); err == nil {
		t.Fatal("a node moved shards without being forgotten")
	}
	if err := apply(t, f, Op{Kind: "assign", Shard: "s1", Slots: []Range{{0, 8191}}}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, Op{Kind: "assign", Shard: "s2", Slots: []Range{{8000, 9000}}}); err == nil || !strings.Contains(err.Error(), "slot 8000 is already owned by shard s1") {
		t.Fatalf("double assignment: %v", err)
	}
	if err := apply(t, f, Op{Kind: "assign", Shard: "s2", Slots: []Range{{8192, 16383}}}); err != nil {
		t.Fatal(err)
	}
	v := f.View()
	if v.Epoch != 2 || v.Assigned() != Slots || v.Owner(8191).ID != "s1" || v.Owner(8192).ID != "s2" || len(v.Owner(0).Nodes) != 2 {
		t.Fatalf("view: epoch %d, assigned %d", v.Epoch, v.Assigned())
	}
	// Hints: a higher term wins, a lower one is ignored, a node of another shard is refused.
	if err := apply(t, f, Op{Kind: "hint", Shard: "s1", ID: "n2", Term: 5}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, Op{Kind: "hint", Shard: "s1", ID: "n1", Term: 4}); err != nil {
		t.Fatal(err) // no change, not an error
	}
	if got := f.View().Owner(0).Leader; got != "n2" {
		t.Fatalf("a stale hint overwrote the leader: %s", got)
	}
	if err := apply(t, f, Op{Kind: "hint", Shard: "s1", ID: "n3", Term: 9}); err == nil {
		t.Fatal("a node of s2 became s1's leader")
	}
	// Snapshot and restore give the same map.
	snap, _ := f.Snapshot()
	g := NewFSM()
	if err := g.Restore(strings.NewReader(string(snap))); err != nil {
		t.Fatal(err)
	}
	if g.Map().String() != f.Map().String() || g.View().Owner(0).Leader != "n2" {
		t.Fatalf("restored %s, want %s", g.Map(), f.Map())
	}
	if err := apply(t, f, Op{Kind: "forget", ID: "n2"}); err != nil {
		t.Fatal(err)
	}
	if sh := f.View().Owner(0); sh.Leader != "" || len(sh.Nodes) != 1 {
		t.Fatalf("forgotten leader still hinted: %+v", sh)
	}
	if err := f.Check(&Op{Kind: "node", Node: &Node{ID: "n1", Shard: "s1", Addr: "h:1"}}); !errors.Is(err, ErrNoChange) {
		t.Fatalf("repeated node announcement: %v", err)
	}
}

func TestRanges(t *testing.T) {
	rs, err := ParseRanges([]string{"10", "20", "0", "9", "30", "30"})
	if err != nil {
		t.Fatal(err)
	}
	if got := Normalize(rs); len(got) != 2 || got[0] != (Range{0, 20}) || got[1] != (Range{30, 30}) {
		t.Fatalf("Normalize = %v", got)
	}
	for _, bad := range [][]string{{"1"}, {"5", "4"}, {"0", "16384"}, {"-1", "3"}, {"a", "b"}} {
		if _, err := ParseRanges(bad); err == nil {
			t.Errorf("ParseRanges(%v) accepted", bad)
		}
	}
}

// TestMigrations: a move needs one owner and no overlapping move; "migrated" gives the slots
// to the target, bumps the epoch and is idempotent.
func TestMigrations(t *testing.T) {
	f := NewFSM()
	for _, n := range []Node{{ID: "n1", Shard: "s1"}, {ID: "n2", Shard: "s2"}} {
		if err := apply(t, f, Op{Kind: "node", Node: &n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := apply(t, f, Op{Kind: "assign", Shard: "s1", Slots: []Range{{0, 99}}}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, Op{Kind: "assign", Shard: "s2", Slots: []Range{{100, 16383}}}); err != nil {
		t.Fatal(err)
	}
	for op, want := range map[*Op]string{
		{Kind: "migrate", Slots: []Range{{90, 110}}, Shard: "s2"}:        "more than one shard",
		{Kind: "migrate", Slots: []Range{{10, 20}}, Shard: "s1"}:         "already belong to shard s1",
		{Kind: "migrate", Slots: []Range{{10, 20}}, Shard: "s9"}:         "unknown shard s9",
		{Kind: "migrate", Slots: []Range{{10, 20}, {1, 2}}, Shard: "s2"}: "one slot range",
	} {
		if err := f.Check(op); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%+v: %v, want %q", op, err, want)
		}
	}
	if err := apply(t, f, Op{Kind: "migrate", Slots: []Range{{10, 20}}, Shard: "s2"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(&Op{Kind: "migrate", Slots: []Range{{20, 30}}, Shard: "s2"}); err == nil || !strings.Contains(err.Error(), "being moved already") {
		t.Fatalf("overlapping move: %v", err)
	}
	v := f.View()
	mg, ok := v.Migration(1)
	if !ok || mg.From != "s1" || mg.To != "s2" || v.Owner(15).ID != "s1" {
		t.Fatalf("migration %+v, owner of 15 %s", mg, v.Owner(15).ID)
	}
	// Two copies overlap: the first imports (session 7), a second restarts the import (8).
	// The first one's report is refused; the second's hands the slots over.
	if err := apply(t, f, Op{Kind: "importing", Mig: 1, Session: 7}); err != nil {
		t.Fatal(err)
	}
	if err := apply(t, f, Op{Kind: "importing", Mig: 1, Session: 8}); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(&Op{Kind: "importing", Mig: 2, Session: 9}); err == nil || !strings.Contains(err.Error(), "no migration 2") {
		t.Fatalf("importing an unknown move: %v", err)
	}
	if err := apply(t, f, Op{Kind: "migrated", Mig: 1, Session: 7}); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Fatalf("the stale copy's report: %v", err)
	}
	if v := f.View(); v.Owner(15).ID != "s1" {
		t.Fatal("a stale report moved the slots")
	}
	if err := apply(t, f, Op{Kind: "migrated", Mig: 1, Session: 8}); err != nil {
		t.Fatal(err)
	}
	v = f.View()
	if v.Owner(15).ID != "s2" || v.Owner(9).ID != "s1" || v.Owner(21).ID != "s1" || len(v.Migrations) != 0 || v.Epoch != 3 {
		t.Fatalf("after the move: owners %s %s %s, epoch %d", v.Owner(15).ID, v.Owner(9).ID, v.Owner(21).ID, v.Epoch)
	}
	if err := apply(t, f, Op{Kind: "migrated", Mig: 1}); err != nil || f.View().Epoch != 3 {
		t.Fatalf("a repeated report changed the map: %v", err)
	}
}

// TestPlan: a fresh cluster gets even ranges in shard order; adding a shard moves the top of
// each fuller shard to it; applying the plan leaves every shard within one slot of the rest.
func TestPlan(t *testing.T) {
	m := NewMap()
	for _, n := range []Node{{ID: "a", Shard: "s1"}, {ID: "b", Shard: "s2"}, {ID: "c", Shard: "s3"}} {
		if err := m.Apply(&Op{Kind: "node", Node: &n}); err != nil {
			t.Fatal(err)
		}
	}
	ops, err := m.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if err := m.Apply(&ops[i]); err != nil {
			t.Fatal(err)
		}
	}
	v := NewView(m)
	if v.Assigned() != Slots || v.Owner(0).ID != "s1" || v.Owner(5461).ID != "s1" || v.Owner(5462).ID != "s2" || v.Owner(10923).ID != "s3" || v.Owner(16383).ID != "s3" {
		t.Fatalf("fresh plan: %s", m)
	}
	if err := m.Apply(&Op{Kind: "node", Node: &Node{ID: "d", Shard: "s4"}}); err != nil {
		t.Fatal(err)
	}
	ops, err = m.Plan()
	if err != nil {
		t.Fatal(err)
	}
	for i := range ops {
		if ops[i].Kind != "migrate" || ops[i].Shard != "s4" {
			t.Fatalf("op %+v", ops[i])
		}
		if err := m.Apply(&ops[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Plan(); err == nil {
			t.Fatal("planned during a move")
		}
		if err := m.Apply(&Op{Kind: "migrated", Mig: m.Migrations[0].ID}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"s1", "s2", "s3", "s4"} {
		n := 0
		for _, r := range m.Shards[id].Slots {
			n += r.End - r.Start + 1
		}
		if n != 4096 {
			t.Fatalf("%s owns %d slots after rebalancing: %s", id, n, m)
		}
	}
	if ops, _ := m.Plan(); len(ops) != 0 {
		t.Fatalf("a balanced map planned %v", ops)
	}
}

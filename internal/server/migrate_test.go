package server

import (
	"testing"

	"github.com/hotkv/hotkv/internal/cluster"
)

// TestSlotEpochs: a slots entry applies only to the slots no later migration has reached, and
// the epochs survive a Raft snapshot (epochList, setFences).
func TestSlotEpochs(t *testing.T) {
	rg := func(a, b int) cluster.Range { return cluster.Range{Start: a, End: b} }
	var f fenceState
	eq := func(got []cluster.Range, want ...cluster.Range) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("got %v, want %v", got, want)
			}
		}
	}
	eq(f.current(1, rg(0, 10)), rg(0, 10)) // move 1 fences 0-10 here
	eq(f.current(1, rg(0, 10)), rg(0, 10)) // its retry, or its drop: same migration
	eq(f.current(2, rg(5, 20)), rg(5, 20)) // move 2 brings 5-20 back (a clear)
	eq(f.current(1, rg(0, 10)), rg(0, 4))  // a lagging leader's fence of move 1: only 0-4
	eq(f.current(1, rg(6, 8)))             // nothing left of it there
	eq(f.current(3, rg(8, 12)), rg(8, 12)) // a later move
	eq(f.current(2, rg(5, 20)), rg(5, 7), rg(13, 20))

	sh := &shardState{}
	sh.fence.epoch = f.epoch
	list := sh.epochList()
	want := []slotFence{{Mig: 1, Slots: rg(0, 4)}, {Mig: 2, Slots: rg(5, 7)}, {Mig: 3, Slots: rg(8, 12)}, {Mig: 2, Slots: rg(13, 20)}}
	if len(list) != len(want) {
		t.Fatalf("epochList %v, want %v", list, want)
	}
	for i := range list {
		if list[i] != want[i] {
			t.Fatalf("epochList %v, want %v", list, want)
		}
	}
	back := &shardState{}
	back.setFences(nil, list)
	if *back.fence.epoch != *f.epoch {
		t.Fatal("the epochs did not survive the snapshot round trip")
	}
	back.setFences(nil, nil)
	if back.fence.epoch != nil {
		t.Fatal("a flushed store keeps no epochs")
	}
}

package clock

import "testing"

func TestWallClampNeverGoesBack(t *testing.T) {
	src := []int64{100, 200, 150, 150, 250, 10}
	want := []int64{100, 200, 200, 200, 250, 250}
	i := 0
	w := newWallFrom(func() int64 { v := src[i]; i++; return v })
	for j, exp := range want {
		if got := w.NowMs(); got != exp {
			t.Fatalf("read %d: got %d want %d", j, got, exp)
		}
	}
}

func TestDebuggable(t *testing.T) {
	d := NewDebuggable()
	if d.Frozen() {
		t.Fatal("new clock must run on the wall")
	}
	d.Set(1700000000000)
	if got := d.NowMs(); got != 1700000000000 {
		t.Fatalf("set: %d", got)
	}
	d.Advance(1500)
	if got := d.NowMs(); got != 1700000001500 {
		t.Fatalf("advance: %d", got)
	}
	d.Reset()
	if d.Frozen() || d.NowMs() < 1700000001500 {
		t.Fatalf("reset: frozen=%v now=%d", d.Frozen(), d.NowMs())
	}
}

func TestDebuggableAdvanceFromWall(t *testing.T) {
	d := NewDebuggable()
	before := d.NowMs()
	d.Advance(10_000)
	if got := d.NowMs(); got < before+10_000 || !d.Frozen() {
		t.Fatalf("advance from wall: %d (before %d)", got, before)
	}
}

func TestFake(t *testing.T) {
	f := NewFake(5)
	f.Advance(3)
	if f.NowMs() != 8 {
		t.Fatal(f.NowMs())
	}
	f.Set(1)
	if f.NowMs() != 1 {
		t.Fatal(f.NowMs())
	}
}

func TestWallFloor(t *testing.T) {
	now := int64(1000)
	w := newWallFrom(func() int64 { return now })
	if got := w.NowMs(); got != 1000 {
		t.Fatalf("before the floor: %d", got)
	}
	w.SetFloor(5000)
	w.SetFloor(4000) // a lower floor changes nothing
	for _, raw := range []int64{1000, 4999, 5000} {
		now = raw
		if got := w.NowMs(); got != 5000 {
			t.Fatalf("raw %d under floor 5000: got %d", raw, got)
		}
	}
	now = 6000
	if got := w.NowMs(); got != 6000 {
		t.Fatalf("past the floor: %d", got)
	}
	if got := w.HighWater(); got != 6000 {
		t.Fatalf("high water: %d", got)
	}
}

func TestDebuggableFloorAndHighWater(t *testing.T) {
	d := NewDebuggable()
	wall := d.NowMs()
	future := wall + 3_600_000
	d.Set(future)
	d.Advance(10)
	if got := d.HighWater(); got != future+10 {
		t.Fatalf("high water after a frozen future time: %d, want %d", got, future+10)
	}
	d.Set(1700000000000) // going back while frozen does not lower the high-water mark
	if got := d.HighWater(); got != future+10 {
		t.Fatalf("high water after going back: %d", got)
	}

	r := NewDebuggable()
	r.SetFloor(future)
	if got := r.NowMs(); got != future {
		t.Fatalf("running clock under a floor: %d, want %d", got, future)
	}
	r.Set(1700000000000) // DEBUG CLOCK SET still freezes anywhere
	if got := r.NowMs(); got != 1700000000000 {
		t.Fatalf("frozen below the floor: %d", got)
	}
	r.Reset()
	if got := r.NowMs(); got < future {
		t.Fatalf("after RESET the floor holds again: %d < %d", got, future)
	}
}

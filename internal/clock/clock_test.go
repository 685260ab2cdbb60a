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

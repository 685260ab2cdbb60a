// Package clock is HotKV's single source of command time.
//
// Everything time-based in the server (key expiry, TTL replies, GCRA and the named limiters)
// reads one Clock, so tests in any language can steer time through DEBUG CLOCK and so a wall
// clock that steps backwards freezes time instead of rewinding it (ARCHITECTURE.md §2).
package clock

import (
	"sync/atomic"
	"time"
)

// Clock returns the current command time in Unix milliseconds. Implementations must never
// return a value smaller than one they returned before: GCRA state is only linearizable per
// key when time is monotonic.
type Clock interface {
	NowMs() int64
}

// Wall is the production clock: the system wall clock in Unix ms, clamped so that it never
// runs backwards. A backwards NTP step or VM migration then freezes time until the wall clock
// catches up, which makes limiters slightly stricter rather than handing out a second burst.
type Wall struct {
	last atomic.Int64
	// now is the raw time source; tests replace it to simulate wall clock steps.
	now func() int64
}

// NewWall returns a clamped wall clock reading the system time.
func NewWall() *Wall {
	return &Wall{now: func() int64 { return time.Now().UnixMilli() }}
}

// newWallFrom builds a Wall over an arbitrary raw source; it exists for tests of the clamp.
func newWallFrom(src func() int64) *Wall { return &Wall{now: src} }

// SetFloor makes the clock never return less than ms from now on: loading a snapshot raises
// it to the persisted time floor so that time does not run backwards across a restart
// (spec §2.3). A floor below what the clock already returned changes nothing.
func (w *Wall) SetFloor(ms int64) { raise(&w.last, ms) }

// HighWater is the largest time NowMs has returned (or the floor, if higher).
func (w *Wall) HighWater() int64 { return w.last.Load() }

// raise sets a to max(a, v).
func raise(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// NowMs returns max(wall time, every value returned before).
func (w *Wall) NowMs() int64 {
	t := w.now()
	for {
		last := w.last.Load()
		if t <= last {
			return last
		}
		if w.last.CompareAndSwap(last, t) {
			return t
		}
	}
}

// Fake is a manually driven clock for unit tests. It is safe for concurrent use.
type Fake struct{ ms atomic.Int64 }

// NewFake returns a fake clock frozen at ms.
func NewFake(ms int64) *Fake {
	f := &Fake{}
	f.ms.Store(ms)
	return f
}

// NowMs returns the frozen time.
func (f *Fake) NowMs() int64 { return f.ms.Load() }

// Set moves the fake clock to ms (forwards or backwards: tests own it).
func (f *Fake) Set(ms int64) { f.ms.Store(ms) }

// Advance moves the fake clock forwards by d ms.
func (f *Fake) Advance(d int64) { f.ms.Add(d) }

// Debuggable is the server's clock: the clamped wall clock, unless DEBUG CLOCK has frozen it.
//
// While frozen, time moves only through Set and Advance; this is what lets black-box tests in
// every client language reproduce the spec's test vectors exactly.
type Debuggable struct {
	wall   *Wall
	frozen atomic.Bool
	ms     atomic.Int64
	// high is the largest frozen time set; the wall clock keeps its own high-water mark, so
	// the hot path (NowMs) pays nothing for HighWater.
	high atomic.Int64
}

// NewDebuggable returns a clock running on the wall clock.
func NewDebuggable() *Debuggable { return &Debuggable{wall: NewWall()} }

// NowMs returns the frozen time when frozen, else the clamped wall time.
func (d *Debuggable) NowMs() int64 {
	if d.frozen.Load() {
		return d.ms.Load()
	}
	return d.wall.NowMs()
}

// Frozen reports whether DEBUG CLOCK SET or ADVANCE is in effect.
func (d *Debuggable) Frozen() bool { return d.frozen.Load() }

// Set freezes the clock at ms. Going backwards is allowed on purpose: the spec's vectors start
// at a fixed t0 in the past. Monotonicity is the test's responsibility while frozen.
func (d *Debuggable) Set(ms int64) {
	d.ms.Store(ms)
	raise(&d.high, ms)
	d.frozen.Store(true)
}

// Advance freezes the clock (at the current time if it was running) and moves it by delta ms.
func (d *Debuggable) Advance(delta int64) {
	if !d.frozen.Load() {
		d.ms.Store(d.wall.NowMs())
		d.frozen.Store(true)
	}
	raise(&d.high, d.ms.Add(delta))
}

// Reset unfreezes the clock and returns to the clamped wall clock. Time may jump backwards here
// when the test froze it in the future; that is the test's explicit request.
func (d *Debuggable) Reset() { d.frozen.Store(false) }

// SetFloor makes the wall clock never return less than ms (the time floor a snapshot
// persisted). A frozen clock is left as DEBUG CLOCK set it: tests that freeze time at the
// spec's t0 after a restart ask for that time explicitly, as they may ask for time to go
// backwards while frozen; DEBUG CLOCK RESET returns to the wall clock, floor included.
func (d *Debuggable) SetFloor(ms int64) { d.wall.SetFloor(ms) }

// HighWater is the largest time the clock has handed out, frozen or not, and at least any
// floor set: the time floor a snapshot persists.
func (d *Debuggable) HighWater() int64 {
	return max(d.wall.HighWater(), d.high.Load())
}

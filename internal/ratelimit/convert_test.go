package ratelimit

import (
	"math/rand/v2"
	"testing"
)

// TestConvertTATVectors checks RATELIMIT.UPDATE's bucket conversion (docs/ratelimit.md):
// TAT' = now + min(ceil((TAT - now) * T' / T), L' * T'), dead state unchanged.
func TestConvertTATVectors(t *testing.T) {
	now := ns(t0)
	for _, c := range []struct {
		name               string
		ttl, oldT, newT, l int64
		want               int64 // new ttl
	}{
		{"U4a: 5 units at 100 ms -> 50 ms", ns(500), ns(100), ns(50), 20, ns(250)},
		{"U4b: 5 units clamped to 3", ns(250), ns(50), 333_333_333, 3, 999_999_999},
		{"U4c: 3 units at 1/s", 999_999_999, 333_333_333, 1_000_000_000, 3, 3_000_000_000},
		{"rounds up", 1, 3, 2, 10, 1},
		{"rounds up a fraction of a unit", 100, 300, 1000, 10, 334},
		{"huge ratio clamps", 1 << 62, 1, 1 << 40, 1000, 1000 << 40},
		{"same interval, lower limit", ns(900), ns(100), ns(100), 3, ns(300)},
	} {
		if got := ConvertTAT(now+c.ttl, now, c.oldT, c.newT, c.l) - now; got != c.want {
			t.Errorf("%s: ttl' = %d, want %d", c.name, got, c.want)
		}
	}
	for _, tat := range []int64{now, now - 1, 0} {
		if got := ConvertTAT(tat, now, 7, 3, 5); got != tat {
			t.Errorf("dead TAT %d converted to %d", tat, got)
		}
	}
}

// TestConvertTATKeepsCurrent checks the property the conversion is defined by: the units in
// use that CHECK reports (current) are the same before and after, clamped to the new limit.
func TestConvertTATKeepsCurrent(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := ns(t0)
	for range 20000 {
		oldL, newL := rng.Int64N(50)+1, rng.Int64N(50)+1
		oldT, newT := rng.Int64N(2_000_000_000)+1, rng.Int64N(2_000_000_000)+1
		ttl := rng.Int64N(oldL*oldT) + 1
		before := Bucket(now, now+ttl, true, oldT, oldL, 1)
		tat := ConvertTAT(now+ttl, now, oldT, newT, newL)
		after := Bucket(now, tat, tat > now, newT, newL, 1)
		if want := min(before.Current, newL); after.Current != want {
			t.Fatalf("L %d->%d T %d->%d ttl %d: current %d -> %d, want %d", oldL, newL, oldT, newT, ttl, before.Current, after.Current, want)
		}
	}
}

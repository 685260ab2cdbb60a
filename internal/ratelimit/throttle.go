package ratelimit

import "errors"

// CL.THROTTLE argument errors, worded as spec §6.1 requires.
var (
	ErrNotInt    = errors.New("ERR value is not an integer or out of range")
	ErrZeroRates = errors.New("ERR zero rates are not supported")
)

// Compat selects CL.THROTTLE's seconds rounding (config throttle-compat).
type Compat int

// The two roundings of spec §6.5.
const (
	// CompatRedisCell floors to ms, then rounds up to seconds: an exact 10 s wait reads 10.
	CompatRedisCell Compat = iota
	// CompatDragonfly rounds up to ms, then adds one second to every non-zero value, matching
	// Dragonfly's documented replies (including its off-by-one on whole seconds).
	CompatDragonfly
)

// Seconds converts a nanosecond duration to CL.THROTTLE's seconds; -1 stays -1.
func (m Compat) Seconds(x int64) int64 {
	if x < 0 {
		return -1
	}
	if m == CompatDragonfly {
		ms := CeilMs(x)
		s := ms / 1000
		if ms > 0 {
			s++
		}
		return s
	}
	ms := x / NsPerMs
	s := ms / 1000
	if ms%1000 != 0 {
		s++
	}
	return s
}

// ThrottleParams are CL.THROTTLE's derived parameters: limit = max_burst+1 units fit at once,
// one unit is emitted every Interval ns, and DVT = Interval*limit is the tolerance.
type ThrottleParams struct {
	Limit    int64
	Interval int64
	DVT      int64
}

// NewThrottleParams validates CL.THROTTLE's numbers in spec §6.1's order (steps 3 to 6; the
// integer parsing of step 2 is the caller's) at command time nowNs.
func NewThrottleParams(maxBurst, countPerPeriod, periodSec, nowNs int64) (ThrottleParams, error) {
	if countPerPeriod == 0 || periodSec == 0 {
		return ThrottleParams{}, ErrZeroRates
	}
	if periodSec > Max/NsPerSec {
		return ThrottleParams{}, ErrNotInt
	}
	interval := periodSec * NsPerSec / countPerPeriod
	if interval == 0 {
		return ThrottleParams{}, ErrZeroRates
	}
	if maxBurst == Max {
		return ThrottleParams{}, ErrNotInt
	}
	limit := maxBurst + 1
	if limit > Max/interval {
		return ThrottleParams{}, ErrNotInt
	}
	dvt := interval * limit
	if dvt > Max-nowNs {
		return ThrottleParams{}, ErrNotInt
	}
	return ThrottleParams{Limit: limit, Interval: interval, DVT: dvt}, nil
}

// ThrottleReply is CL.THROTTLE's reply: limited, limit, remaining, retry_after_s, reset_after_s.
type ThrottleReply [5]int64

// Throttle evaluates CL.THROTTLE for quantity units (0 only reports).
func (p ThrottleParams) Throttle(now, tat int64, present bool, quantity int64, m Compat) (Decision, ThrottleReply) {
	d := Decide(now, tat, present, p.Interval, p.Limit, quantity)
	rem := func(x int64) int64 {
		if p.DVT-x >= 0 {
			return (p.DVT - x) / p.Interval
		}
		return 0
	}
	switch {
	case d.Never:
		return d, ThrottleReply{1, p.Limit, rem(d.TTLOld), -1, m.Seconds(d.TTLOld)}
	case d.Allowed:
		return d, ThrottleReply{0, p.Limit, rem(d.TTLNew), -1, m.Seconds(d.TTLNew)}
	}
	return d, ThrottleReply{1, p.Limit, rem(d.TTLOld), m.Seconds(d.Retry), m.Seconds(d.TTLOld)}
}

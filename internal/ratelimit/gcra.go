// Package ratelimit is HotKV's limiter arithmetic: GCRA (shared by GCRA.LIMIT, CL.THROTTLE
// and the token and leaky bucket limiters) and the bounded sliding-window log, on plain state,
// with no locks, clocks or I/O. Every decision is integer arithmetic in nanoseconds written so
// that no input can overflow (spec/RATELIMIT.md §2.4, §2.5).
package ratelimit

import "math"

// Max is 2^63-1, the saturation value of every computed time.
const Max = math.MaxInt64

// NsPerMs and NsPerSec convert wire units to the nanoseconds decisions are made in.
const (
	NsPerMs  = int64(1_000_000)
	NsPerSec = int64(1_000_000_000)
)

// CeilMs rounds a non-negative nanosecond duration up to whole milliseconds without
// overflowing: waiting the advertised time is always enough (spec §2.4).
func CeilMs(x int64) int64 {
	ms := x / NsPerMs
	if x%NsPerMs != 0 {
		ms++
	}
	return ms
}

// Decision is the outcome of one GCRA evaluation. Times are in nanoseconds.
type Decision struct {
	// Allowed reports whether the request fits.
	Allowed bool
	// Never is set when the request is larger than the whole burst and can never fit.
	Never bool
	// TTLOld is how far the stored TAT lay ahead of now (0 when absent or in the past).
	TTLOld int64
	// TTLNew is TTLOld plus the request's increment, when allowed.
	TTLNew int64
	// TAT is the new theoretical arrival time to store, when allowed (saturated at Max).
	TAT int64
	// Retry is the wait until the same request would be allowed, when denied and not Never.
	Retry int64
}

// Decide evaluates a request of cost units against the GCRA state tat (present reports
// whether the key holds state) at time now. interval is the emission interval T (ns per
// unit), burst the number of units that fit at one instant, so the tolerance is tau =
// burst*interval. Callers guarantee interval >= 1 and burst*interval <= Max.
//
// The comparison is written as ttlOld <= tau - inc, never ttlOld + inc <= tau, so that a huge
// stored TAT cannot overflow (spec §2.5).
func Decide(now, tat int64, present bool, interval, burst, cost int64) Decision {
	var d Decision
	if present && tat > now {
		d.TTLOld = tat - now
	}
	if cost > burst {
		d.Never = true
		return d
	}
	tau := burst * interval
	inc := cost * interval
	if d.TTLOld <= tau-inc {
		d.Allowed = true
		d.TTLNew = d.TTLOld + inc
		d.TAT = satAdd(now, d.TTLNew)
		return d
	}
	d.Retry = d.TTLOld - (tau - inc)
	return d
}

// satAdd adds two non-negative values, saturating at Max.
func satAdd(a, b int64) int64 {
	if a > Max-b {
		return Max
	}
	return a + b
}

// GCRAParams are GCRA.LIMIT's derived parameters.
type GCRAParams struct {
	Burst    int64
	Interval int64 // T = max(1, period*10^6 div burst)
}

// NewGCRAParams derives T from a period in ms (1 .. 10^12) and a burst (>= 1), flooring the
// interval so that exactly burst units fit at one instant for every input (spec §3.2).
func NewGCRAParams(periodMs, burst int64) GCRAParams {
	t := periodMs * NsPerMs / burst
	if t < 1 {
		t = 1
	}
	return GCRAParams{Burst: burst, Interval: t}
}

// GCRAReply is GCRA.LIMIT's five-integer reply.
type GCRAReply [5]int64

// Limit evaluates GCRA.LIMIT (and GCRA.PEEK, which discards the state) for count units.
func (p GCRAParams) Limit(now, tat int64, present bool, count int64) (Decision, GCRAReply) {
	d := Decide(now, tat, present, p.Interval, p.Burst, count)
	tau := p.Burst * p.Interval
	switch {
	case d.Never:
		return d, GCRAReply{1, p.Burst, 0, -1, CeilMs(d.TTLOld)}
	case d.Allowed:
		return d, GCRAReply{0, p.Burst, (tau - d.TTLNew) / p.Interval, -1, CeilMs(d.TTLNew)}
	}
	return d, GCRAReply{1, p.Burst, 0, CeilMs(d.Retry), CeilMs(d.TTLOld)}
}

// Refund gives count units back to GCRA state, for "charge only on success" flows that
// admitted a request with Limit and then learned it should not have cost anything. The TAT
// moves back by count*T but never before now: a refund cannot push a key beyond a full burst.
// A key with no future TAT (absent, or already full) is left as it is: changed is false.
// When changed, ttlNew is the new distance of the TAT from now; 0 means the key is now full
// and its state can be dropped. The reply is GCRA.LIMIT's shape with denied 0.
//
// count*T can exceed Max, so the decrement is compared by division first (spec §2.5 style).
func (p GCRAParams) Refund(now, tat int64, present bool, count int64) (ttlNew int64, changed bool, r GCRAReply) {
	tau := p.Burst * p.Interval
	if !present || tat <= now {
		return 0, false, GCRAReply{0, p.Burst, p.Burst, -1, 0}
	}
	ttlOld := tat - now
	if count <= ttlOld/p.Interval {
		ttlNew = ttlOld - count*p.Interval
	}
	remaining := int64(0)
	if ttlNew < tau { // a TAT stored by another limit can lie beyond this one's tolerance
		remaining = (tau - ttlNew) / p.Interval
	}
	return ttlNew, true, GCRAReply{0, p.Burst, remaining, -1, CeilMs(ttlNew)}
}

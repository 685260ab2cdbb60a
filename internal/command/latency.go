package command

import (
	mathbits "math/bits"
	"sync/atomic"
)

// Per-command latency histograms: Redis 7.0's latency tracking (LATENCY HISTOGRAM, INFO
// latencystats), kept lock-free so that recording a call is one atomic add.
//
// The buckets are log-linear, as an HDR histogram's: bucket 0 holds durations up to 1024 ns;
// past that each power of two [2^e, 2^(e+1)) ns is split into latSub equal parts, so a bucket
// is at most 1/latSub of its values wide (12.5%) and percentiles interpolate within that.
// Durations are clamped to [1 ns, 1 s] as Redis clamps them (LATENCY_HISTOGRAM_MIN_VALUE,
// LATENCY_HISTOGRAM_MAX_VALUE). Redis's LATENCY HISTOGRAM reports power-of-two buckets from
// 1024 ns up; the octaves here are exactly those, so its reply merges latSub buckets each.
const (
	latSub      = 8
	latSubShift = 3 // log2(latSub)
	// latOctaves counts the power-of-two ranges from 1024 ns (2^10) to 1 s (below 2^30).
	latOctaves = 20
	latBuckets = 1 + latOctaves*latSub
	latMaxNs   = 1_000_000_000
)

// latencyHist is one command's histogram. The zero value is empty and ready. It keeps no sum
// of its own: the command's Usec (INFO commandstats) is that sum, one atomic add fewer.
type latencyHist struct {
	counts [latBuckets]atomic.Uint64
}

// latIndex is the bucket of a duration of ns nanoseconds, already clamped to [1, latMaxNs].
func latIndex(ns int64) int {
	if ns <= 1024 {
		return 0
	}
	v := uint64(ns - 1) // buckets are (lower, upper]: 2048 ns belongs with 1025..2048
	e := mathbits.Len64(v) - 1
	sub := int(v>>(e-latSubShift)) & (latSub - 1)
	return 1 + (e-10)*latSub + sub
}

// latUpperNs is bucket i's inclusive upper bound in nanoseconds.
func latUpperNs(i int) uint64 {
	if i == 0 {
		return 1024
	}
	e := uint((i-1)/latSub + 10)
	sub := uint64((i - 1) % latSub)
	return 1<<e + (sub+1)<<(e-latSubShift)
}

// record adds one call of ns nanoseconds.
func (h *latencyHist) record(ns int64) {
	if ns < 1 {
		ns = 1
	} else if ns > latMaxNs {
		ns = latMaxNs
	}
	h.counts[latIndex(ns)].Add(1)
}

// reset empties the histogram (CONFIG RESETSTAT). Calls recorded concurrently may survive in
// part, as Redis's RESETSTAT races with nothing only because it has one thread.
func (h *latencyHist) reset() {
	for i := range h.counts {
		h.counts[i].Store(0)
	}
}

// ResetLatency empties the command's latency histogram (CONFIG RESETSTAT resets Usec too).
func (c *Command) ResetLatency() { c.latency.reset() }

// LatencySnapshot is a copy of a command's latency histogram at one moment, for LATENCY
// HISTOGRAM, INFO latencystats and metrics exporters. Its total is the sum of its buckets, so
// a snapshot is always self-consistent even while calls are being recorded.
type LatencySnapshot struct {
	// Count is the number of calls recorded since the start or the last CONFIG RESETSTAT.
	Count uint64
	// SumNs is the total duration of the command's calls in nanoseconds, at microsecond
	// resolution (INFO commandstats' usec; it also counts calls made while latency-tracking
	// was off).
	SumNs  uint64
	counts [latBuckets]uint64
}

// Latency returns a snapshot of the command's latency histogram: every completed call of the
// command since the start or the last CONFIG RESETSTAT while latency-tracking was on, timed
// as INFO commandstats times it (blocked commands count only their execution, not the wait).
func (c *Command) Latency() LatencySnapshot {
	var s LatencySnapshot
	for i := range c.latency.counts {
		n := c.latency.counts[i].Load()
		s.counts[i] = n
		s.Count += n
	}
	s.SumNs = uint64(max(0, c.Usec.Load())) * 1000
	return s
}

// LatencyBucket is one cumulative bucket of a LatencySnapshot: Count calls took at most
// UpperSeconds.
type LatencyBucket struct {
	UpperSeconds float64
	Count        uint64
}

// Buckets returns the histogram as cumulative power-of-two buckets, 1.024 µs, 2.048 µs, ... up
// to the one that holds one second, the form a Prometheus histogram takes (add the +Inf bucket
// as Count and the sum as SumNs/1e9). Their bounds are Redis's LATENCY HISTOGRAM buckets.
func (s *LatencySnapshot) Buckets() []LatencyBucket {
	out := make([]LatencyBucket, 0, latOctaves+1)
	var cum uint64
	for k := 0; k <= latOctaves; k++ {
		lo, hi := 0, 0
		if k > 0 {
			lo, hi = 1+(k-1)*latSub, k*latSub
		}
		for i := lo; i <= hi; i++ {
			cum += s.counts[i]
		}
		out = append(out, LatencyBucket{UpperSeconds: float64(uint64(1024)<<k) / 1e9, Count: cum})
	}
	return out
}

// Percentile estimates the duration in microseconds below which p percent (0-100) of the
// calls fell: the upper bound of the bucket holding that call, as an HDR histogram answers
// with the highest value equivalent to it. Zero when nothing was recorded.
func (s *LatencySnapshot) Percentile(p float64) float64 {
	if s.Count == 0 {
		return 0
	}
	// HDR's rule: the rank is p% of the count, rounded up, at least 1.
	rank := uint64(p/100*float64(s.Count) + 0.5)
	if rank < 1 {
		rank = 1
	}
	if rank > s.Count {
		rank = s.Count
	}
	var cum uint64
	for i, n := range s.counts {
		cum += n
		if cum >= rank {
			return float64(latUpperNs(i)) / 1000
		}
	}
	return float64(latUpperNs(latBuckets-1)) / 1000
}

// redisOctaveUsec is the label Redis 7.0 gives its power-of-two bucket k in LATENCY
// HISTOGRAM: the highest value its HDR histogram (two significant digits) treats as equal to
// 1024·2^k ns, in whole microseconds (1, 2, 4, 8, 16, 33, 66, 132 ...).
func redisOctaveUsec(k int) int64 {
	return int64((uint64(1)<<(k+10) + uint64(1)<<(k+3) - 1) / 1000)
}

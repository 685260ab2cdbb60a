// Package bench is the load generator behind cmd/hotkv-bench: raw pipelined RESP over many
// connections, latency histograms, the side-by-side suite against Redis and its report.
//
// It speaks RESP itself rather than through go-redis because a client library's own cost
// (allocations, reply decoding into interfaces) would be measured along with the server's, and
// on this project's 2-core machines the client shares the CPU with the server under test.
package bench

import (
	"math"
	"math/bits"
	"time"
)

// histSubBits sets the histogram's precision: each power-of-two range of latencies is split
// into 2^histSubBits buckets, so a recorded value is off by at most 1/128 (0.8%), the way
// HdrHistogram's two significant digits are, in a fixed 8 KiB array that merges by addition.
const histSubBits = 7

// histMaxBits caps recorded values at 2^40 ns (18 minutes), which keeps a histogram at 35 KiB
// so that ten thousand connections' worth of them stay small.
const histMaxBits = 40

const (
	histSub     = 1 << histSubBits
	histBuckets = (histMaxBits - histSubBits + 1) * histSub
	histMax     = 1<<histMaxBits - 1
)

// Histogram counts latencies in nanoseconds in log-linear buckets. It is not safe for
// concurrent use: each connection records into its own and the run merges them at the end, so
// the hot loop never shares a cache line.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	max    uint64
	sum    float64
}

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits - 1
	return (shift+1)*histSub + int(v>>uint(shift)) - histSub
}

// histLow is the smallest value that falls into bucket i.
func histLow(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	shift := i/histSub - 1
	return uint64(i%histSub+histSub) << uint(shift)
}

// Record adds one latency.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = min(uint64(d), histMax)
	}
	h.counts[histIndex(v)]++
	h.n++
	h.sum += float64(v)
	if v > h.max {
		h.max = v
	}
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	if o.max > h.max {
		h.max = o.max
	}
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest recorded value.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean is the average recorded value.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.n))
}

// Quantile returns the value below which the fraction q (0..1) of recorded values fall, as
// the midpoint of its bucket (never above the recorded maximum).
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := histLow(i), histLow(i+1)
			v := lo + (hi-lo)/2
			if v > h.max {
				v = h.max
			}
			return time.Duration(v)
		}
	}
	return time.Duration(h.max)
}

// CDF returns about 140 points (latency, fraction of values at or below it) for plotting:
// every percent up to 99, then every tenth of the remaining tail down to 1 in 10^5, then the
// maximum, so the tail is drawn as finely as the body without storing every bucket.
func (h *Histogram) CDF() (lat []time.Duration, frac []float64) {
	if h.n == 0 {
		return nil, nil
	}
	add := func(q float64) {
		lat = append(lat, h.Quantile(q))
		frac = append(frac, q)
	}
	for p := 1; p <= 99; p++ {
		add(float64(p) / 100)
	}
	for tail := 0.01; tail > 1e-5; tail /= 10 {
		for k := 9; k >= 1; k-- {
			add(1 - tail*float64(k)/10)
		}
	}
	lat = append(lat, h.Max())
	frac = append(frac, 1)
	return lat, frac
}

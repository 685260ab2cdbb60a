package ratelimit

import (
	"errors"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// ErrInvalidRate is RATELIMIT.CREATE's error for a REFILL or DRAIN that is not a valid rate,
// or one so slow that a full refill would take more than 10^12 ms.
var ErrInvalidRate = errors.New("ERR invalid rate: must be a positive number")

// Rate is a bucket limiter's refill (token_bucket) or drain (leaky_bucket) rate, kept as the
// exact decimal the user gave so STATS can echo it and the interval is computed exactly.
type Rate struct {
	// Text is the rate as given, or "" for the default rate of limit per window.
	Text string
	// IntervalNs is T_ns: nanoseconds per unit, at least 1.
	IntervalNs int64
	// PerSec is the nearest double to the configured rate, for STATS.
	PerSec float64
}

var (
	big1e9  = big.NewInt(1_000_000_000)
	big1e18 = big.NewInt(1_000_000_000_000_000_000)
)

// RateSyntaxOK reports whether text is a rate by spec §8.6's syntax: ASCII digits, optionally
// one '.' with digits on both sides, at most 64 bytes, and a value above zero. CREATE checks
// the syntax while reading options and the speed (ParseRate) only after all of them.
func RateSyntaxOK(text string) bool {
	if len(text) == 0 || len(text) > 64 {
		return false
	}
	dot, nonzero := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c >= '1' && c <= '9':
			nonzero = true
		case c == '0':
		case c == '.' && !dot && i > 0 && i+1 < len(text):
			dot = true
		default:
			return false
		}
	}
	return nonzero
}

// ParseRate validates a rate with spec §8.6's syntax (digits, optionally one '.' and more
// digits, at most 64 bytes, value > 0) and derives T_ns = max(1, (10^9 * 10^k) div N) with
// exact integers, rejecting rates too slow for limit (L * T_ns > 10^18 with T_ns > 1).
func ParseRate(text string, limit int64) (Rate, error) {
	if !RateSyntaxOK(text) {
		return Rate{}, ErrInvalidRate
	}
	digits := make([]byte, 0, len(text))
	k := 0
	if i := strings.IndexByte(text, '.'); i >= 0 {
		k = len(text) - i - 1
		digits = append(append(digits, text[:i]...), text[i+1:]...)
	} else {
		digits = append(digits, text...)
	}
	n, _ := new(big.Int).SetString(string(digits), 10)
	num := new(big.Int).Mul(big1e9, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil))
	t := num.Quo(num, n)
	if t.Sign() == 0 {
		t.SetInt64(1)
	}
	if t.Cmp(big1e18) > 0 {
		return Rate{}, ErrInvalidRate
	}
	interval := t.Int64()
	if interval > 1 && limit > 1_000_000_000_000_000_000/interval {
		return Rate{}, ErrInvalidRate
	}
	f, _ := strconv.ParseFloat(text, 64)
	return Rate{Text: text, IntervalNs: interval, PerSec: f}, nil
}

// DefaultRate is limit per window: T_ns = max(1, (W * 10^6) div L).
func DefaultRate(limit, windowMs int64) Rate {
	t := windowMs * NsPerMs / limit
	if t < 1 {
		t = 1
	}
	// limit*1000 can overflow int64, so the ratio is computed exactly in big integers.
	per, _ := new(big.Rat).SetFrac(new(big.Int).Mul(big.NewInt(limit), big.NewInt(1000)), big.NewInt(windowMs)).Float64()
	return Rate{IntervalNs: t, PerSec: per}
}

// FormatRate writes a rate the way STATS replies it in RESP2: the shortest decimal that reads
// back as the same double, without an exponent ("5", "0.5", "333.3333333333333").
func FormatRate(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// BucketResult is a token/leaky bucket decision in RATELIMIT's terms (spec §8.5).
type BucketResult struct {
	Decision
	Avail   int64
	Current int64
	RetryMs int64
}

// Bucket evaluates a bucket limiter of limit units with the given interval for cost units
// against the key's TAT (present false when the key has no live state).
func Bucket(nowNs, tat int64, present bool, interval, limit, cost int64) BucketResult {
	d := Decide(nowNs, tat, present, interval, limit, cost)
	tau := limit * interval
	avail := (tau - d.TTLOld) / interval
	if avail < 0 {
		avail = 0
	}
	r := BucketResult{Decision: d, Avail: avail, Current: limit - avail}
	switch {
	case d.Never:
		r.RetryMs = -1
	case !d.Allowed:
		r.RetryMs = CeilMs(d.Retry)
	}
	return r
}

// ConvertTAT re-interprets a bucket key's TAT under a new emission interval at nowNs
// (RATELIMIT.UPDATE): the units in use, ttl / oldT with ttl = TAT - now, are preserved and
// clamped to the new capacity: TAT' = now + min(ceil(ttl * newT / oldT), newL * newT). Rounding
// up never grants capacity the old definition did not, and it keeps CHECK's `current`
// (ceil(ttl / T)) exactly, up to the clamp. Dead state (TAT <= now) is returned unchanged.
// newL * newT must fit an int64 (RATELIMIT.CREATE's rate check guarantees it).
func ConvertTAT(tat, nowNs, oldT, newT, newL int64) int64 {
	if tat <= nowNs {
		return tat
	}
	ttl := uint64(tat - nowNs)
	tau := uint64(newL) * uint64(newT)
	hi, lo := bits.Mul64(ttl, uint64(newT))
	var scaled uint64
	if hi >= uint64(oldT) {
		scaled = tau // the quotient overflows 64 bits: far above any capacity
	} else {
		q, r := bits.Div64(hi, lo, uint64(oldT))
		if r != 0 {
			q++
		}
		scaled = q
	}
	scaled = min(scaled, tau)
	if scaled > uint64(Max-nowNs) {
		return Max
	}
	return nowNs + int64(scaled)
}

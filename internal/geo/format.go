package geo

import (
	"math"
	"strconv"
)

// AppendDistance appends a distance as Redis replies it: rounded to four decimals, half to
// even (llrint), always with four decimals ("0.0000", "1.5000").
func AppendDistance(dst []byte, d float64) []byte {
	if d == 0 {
		return append(dst, "0.0000"...)
	}
	r := math.RoundToEven(d * 10000)
	var v uint64
	switch {
	case r >= 9223372036854775808.0 || r < -9223372036854775808.0 || math.IsNaN(r):
		// llrint's result for a value out of range is the "indefinite" LLONG_MIN on x86-64.
		dst = append(dst, '-')
		v = 1 << 63
	case r < 0:
		dst = append(dst, '-')
		v = uint64(-int64(r))
	default:
		v = uint64(r)
	}
	dst = strconv.AppendUint(dst, v/10000, 10)
	frac := v % 10000
	dst = append(dst, '.', byte('0'+frac/1000), byte('0'+frac/100%10), byte('0'+frac/10%10), byte('0'+frac%10))
	return dst
}

// AppendCoord appends a coordinate as Redis replies it (ld2string's human mode): seventeen
// decimals, trailing zeros and a trailing point removed, "-0" written "0".
func AppendCoord(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'f', 17, 64)
	end := len(dst)
	for end > start && dst[end-1] == '0' {
		end--
	}
	if end > start && dst[end-1] == '.' {
		end--
	}
	dst = dst[:end]
	if end-start == 2 && dst[start] == '-' && dst[start+1] == '0' {
		dst = append(dst[:start], '0')
	}
	return dst
}

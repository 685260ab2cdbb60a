package geo

import "math"

// Correctly rounded sin, cos and asin.
//
// Redis computes distances with the C library's sin, cos and asin. glibc's are correctly
// rounded for all but about one argument in a thousand, while Go's math package is accurate
// to about one ulp and differs from glibc in the last bit for a fifth to a third of the
// arguments. Distances are replied with four decimals, where that rarely shows, but GEORADIUS
// STOREDIST and GEOSEARCHSTORE STOREDIST store them as full-precision scores, and a search's
// edge (a point exactly on the radius) depends on the last bit. So these functions evaluate
// in double-double arithmetic (about 106 bits) and round once: the result is the correctly
// rounded value except when the exact value lies within about 2^-100 of a rounding boundary.
//
// The arguments the geo code passes are small (|x| below 2π); beyond maxReduce the functions
// fall back to the math package, which is never reached from the commands.

// dd is an unevaluated sum hi + lo with |lo| ≤ ulp(hi)/2.
type dd struct{ hi, lo float64 }

func twoSum(a, b float64) dd {
	s := a + b
	bb := s - a
	return dd{s, (a - (s - bb)) + (b - bb)}
}

func quickTwoSum(a, b float64) dd {
	s := a + b
	return dd{s, b - (s - a)}
}

func twoProd(a, b float64) dd {
	p := a * b
	return dd{p, math.FMA(a, b, -p)}
}

func (a dd) add(b dd) dd {
	s := twoSum(a.hi, b.hi)
	t := twoSum(a.lo, b.lo)
	s.lo += t.hi
	s = quickTwoSum(s.hi, s.lo)
	s.lo += t.lo
	return quickTwoSum(s.hi, s.lo)
}

func (a dd) neg() dd { return dd{-a.hi, -a.lo} }

func (a dd) mul(b dd) dd {
	p := twoProd(a.hi, b.hi)
	p.lo += a.hi*b.lo + a.lo*b.hi
	return quickTwoSum(p.hi, p.lo)
}

func (a dd) mulF(b float64) dd {
	p := twoProd(a.hi, b)
	p.lo += a.lo * b
	return quickTwoSum(p.hi, p.lo)
}

func (a dd) divF(b float64) dd {
	q1 := a.hi / b
	r := a.add(twoProd(q1, b).neg())
	q2 := r.hi / b
	r = r.add(twoProd(q2, b).neg())
	q3 := r.hi / b
	q := quickTwoSum(q1, q2)
	return q.add(dd{q3, 0})
}

func (a dd) value() float64 { return a.hi + a.lo }

// π/2 in three parts (about 160 bits), for the argument reduction.
const (
	pio2a = 1.5707963267948966
	pio2b = 6.123233995736766e-17
	pio2c = -1.4973849048591698e-33
)

// maxReduce bounds the arguments reduced here: k·(π/2) must stay accurate with three parts.
const maxReduce = 1 << 20

// Taylor coefficients 1/n! as double-doubles, computed once.
var invFact [32]dd

// sinCosTable holds sin and cos of j/32 for j = 0..26 (a little past π/4), computed once
// with the full series; reduced arguments are then within 1/64 of an entry, where a few terms
// of the series suffice.
var sinTable, cosTable [27]dd

func init() {
	f := dd{1, 0}
	invFact[0] = f
	for n := 1; n < len(invFact); n++ {
		f = f.divF(float64(n))
		invFact[n] = f
	}
	for j := range sinTable {
		sinTable[j], cosTable[j] = sinCosSeries(dd{float64(j) / 32, 0})
	}
}

// sinCosSeries returns sin r and cos r for |r| ≤ 0.82 from their Taylor series, to about
// 2^-106: the terms past n = 27 are smaller than that.
func sinCosSeries(r dd) (s, c dd) {
	r2 := r.mul(r)
	s = invFact[27]
	for n := 25; n >= 1; n -= 2 {
		s = s.mul(r2).neg().add(invFact[n])
	}
	s = s.mul(r)
	c = invFact[28]
	for n := 26; n >= 0; n -= 2 {
		c = c.mul(r2).neg().add(invFact[n])
	}
	return s, c
}

// sinCosReduced returns sin r and cos r for |r| ≤ 0.8: r = j/32 + d with |d| ≤ 1/64, and
// sin(j/32 + d) = sin(j/32) cos d + cos(j/32) sin d (likewise cos). For |d| ≤ 1/64 the terms
// of sin d and cos d past d^7/7! are below 2^-100 of the sum, so only the first ones need
// double-double arithmetic and the rest are plain doubles.
func sinCosReduced(r dd) (s, c dd) {
	neg := r.hi < 0
	if neg {
		r = r.neg()
	}
	j := min(int(r.hi*32+0.5), len(sinTable)-1)
	d := r.add(dd{-float64(j) / 32, 0})
	d2 := d.mul(d)
	h := d2.hi
	// sin d = d (1 - d²/3! + d⁴/5! - d⁶/7! + d⁸/9! - ...)
	ts := invFact[9].hi - h*(invFact[11].hi-h*invFact[13].hi)
	ps := d2.mulF(ts).add(invFact[7].neg())
	ps = d2.mul(ps).add(invFact[5])
	ps = d2.mul(ps).add(invFact[3].neg())
	ps = d2.mul(ps).add(dd{1, 0})
	sd := d.mul(ps)
	// cos d = 1 - d²/2! + d⁴/4! - d⁶/6! + d⁸/8! - ...
	tc := invFact[8].hi - h*(invFact[10].hi-h*invFact[12].hi)
	pc := d2.mulF(tc).add(invFact[6].neg())
	pc = d2.mul(pc).add(invFact[4])
	pc = d2.mul(pc).add(invFact[2].neg())
	cd := d2.mul(pc).add(dd{1, 0})
	s = sinTable[j].mul(cd).add(cosTable[j].mul(sd))
	c = cosTable[j].mul(cd).add(sinTable[j].mul(sd).neg())
	if neg {
		s = s.neg()
	}
	return s, c
}

// reduce returns r and k with x = r + k·π/2, |r| ≤ π/4.
func reduce(x float64) (dd, int) {
	k := math.RoundToEven(x / pio2a)
	r := dd{x, 0}
	r = r.add(twoProd(k, pio2a).neg())
	r = r.add(twoProd(k, pio2b).neg())
	r = r.add(twoProd(k, pio2c).neg())
	return r, int(int64(k) & 3)
}

// sinCosDD returns sin x and cos x as double-doubles.
func sinCosDD(x float64) (s, c dd) {
	r, q := reduce(x)
	s, c = sinCosReduced(r)
	switch q {
	case 1:
		s, c = c, s.neg()
	case 2:
		s, c = s.neg(), c.neg()
	case 3:
		s, c = c.neg(), s
	}
	return s, c
}

// Sin is sin x, correctly rounded as glibc's nearly always is.
func Sin(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > maxReduce {
		return math.Sin(x)
	}
	if math.Abs(x) < 0x1p-26 {
		return x // sin x = x - x³/6 + ... rounds to x
	}
	s, _ := sinCosDD(x)
	return s.value()
}

// Cos is cos x, correctly rounded as glibc's nearly always is.
func Cos(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > maxReduce {
		return math.Cos(x)
	}
	_, c := sinCosDD(x)
	return c.value()
}

// asinDD is asin y for 0 ≤ y ≤ 0.5 given as a double-double: one Newton step on sin from the
// math package's value, which squares its error of about 2^-52.
func asinDD(y dd) dd {
	t0 := math.Asin(y.value())
	s, c := sinCosDD(t0)
	// t = t0 - (sin t0 - y) / cos t0
	d := s.add(y.neg())
	return dd{t0, 0}.add(dd{-d.value() / c.value(), 0})
}

// Asin is asin y, correctly rounded as glibc's nearly always is.
func Asin(y float64) float64 {
	ay := math.Abs(y)
	if math.IsNaN(y) || ay > 1 || ay < 0x1p-26 || ay == 1 {
		return math.Asin(y)
	}
	var t dd
	if ay <= 0.5 {
		t = asinDD(dd{ay, 0})
	} else {
		// asin y = π/2 - 2 asin √((1-y)/2): the inner argument is at most 1/2, where the
		// Newton step converges well, and 1-y is exact for y in [1/2, 1].
		z := (1 - ay) / 2
		sq := math.Sqrt(z)
		root := dd{sq, math.FMA(-sq, sq, z) / (2 * sq)}
		t = dd{pio2a, pio2b}.add(asinDD(root).mulF(-2))
	}
	if y < 0 {
		return -t.value()
	}
	return t.value()
}

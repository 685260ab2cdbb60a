// Package geo is the arithmetic behind Redis's geospatial commands: the 52-bit interleaved
// geohash that a geo set stores as each member's sorted-set score, its decoding back into a
// longitude and latitude, the standard 11-character geohash string, the haversine distance,
// and the nine geohash boxes (a centre and its eight neighbours) whose score ranges cover a
// radius or box search.
//
// Every result must be bit for bit what Redis 7.0 computes, because the scores are shared
// data (a geo set written by HotKV and read by Redis, or the reverse, through RDB files or
// replication) and because clients compare distances and coordinates as text. So the
// arithmetic follows the same order of operations as Redis's C code, with the same double
// constants: conversions to float64 that look redundant are there to stop the Go compiler
// from fusing a multiply and an add (it may on arm64), which C compiled for x86-64 does not.
// The package is pure: no I/O, no allocation on the hot paths, no panics on any input.
package geo

import "math"

// Coordinate limits of the index (EPSG:900913, as Redis): latitudes beyond ±85.05112878 cannot
// be encoded, so the poles are out of reach.
const (
	LonMin = -180.0
	LonMax = 180.0
	LatMin = -85.05112878
	LatMax = 85.05112878
)

// StepMax is the precision of a stored score: 26 bits of longitude and 26 of latitude.
const StepMax = 26

// EarthRadius is the radius Redis's distances use, in meters (the quadratic mean radius of
// WGS-84, as Redis spells it).
const EarthRadius = 6372797.560856

// mercatorMax is Redis's MERCATOR_MAX, the half circumference the step estimate starts from.
const mercatorMax = 20037726.37

// Redis converts degrees with D_R = M_PI / 180.0, a division of doubles done in double
// precision. A Go constant expression would be computed exactly and rounded once, which can
// differ in the last bit, so the division happens on float64 variables.
var (
	piDouble = math.Pi
	degToRad = piDouble / 180.0
)

func degRad(ang float64) float64 { return ang * degToRad }
func radDeg(ang float64) float64 { return ang / degToRad }

// Range is a closed interval of one coordinate.
type Range struct{ Min, Max float64 }

// The ranges of the index, and the ones of the standard geohash (GEOHASH's strings).
var (
	lonRange    = Range{LonMin, LonMax}
	latRange    = Range{LatMin, LatMax}
	stdLatRange = Range{-90, 90}
)

func (r Range) zero() bool { return r.Min == 0 && r.Max == 0 }

// Hash is a geohash of Step bits per coordinate: latitude bits at even positions, longitude
// bits at odd ones. The zero Hash (no bits, step 0) marks a neighbour box left out of a search.
type Hash struct {
	Bits uint64
	Step uint8
}

// IsZero reports whether h is the "no box" marker.
func (h Hash) IsZero() bool { return h.Bits == 0 && h.Step == 0 }

// Area is a geohash with the coordinates its box spans.
type Area struct {
	Hash     Hash
	Lon, Lat Range
}

// spread moves the low 32 bits of v to the even bit positions of the result.
func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// squeeze is spread's inverse: the even bits of v packed into 32 bits.
func squeeze(v uint64) uint32 {
	x := v & 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// interleave puts lat on the even bits and lon on the odd ones.
func interleave(lat, lon uint32) uint64 { return spread(lat) | spread(lon)<<1 }

// cellIndex is C's conversion of a non-negative double offset to uint32 (truncation). The
// offsets are in [0, 2^step], so the conversion is always defined.
func cellIndex(f float64) uint32 {
	if !(f >= 0) {
		return 0
	}
	if f >= 4294967296 {
		return math.MaxUint32
	}
	return uint32(f)
}

// Encode returns the geohash of (lon, lat) at step bits per coordinate within the ranges, or
// false when the point is outside the index's limits or the ranges, or step is not in 1..32.
func Encode(lonR, latR Range, lon, lat float64, step uint8) (Hash, bool) {
	if step == 0 || step > 32 || latR.zero() || lonR.zero() {
		return Hash{}, false
	}
	if lon > LonMax || lon < LonMin || lat > LatMax || lat < LatMin {
		return Hash{}, false
	}
	if lat < latR.Min || lat > latR.Max || lon < lonR.Min || lon > lonR.Max {
		return Hash{}, false
	}
	latOff := (lat - latR.Min) / (latR.Max - latR.Min)
	lonOff := (lon - lonR.Min) / (lonR.Max - lonR.Min)
	scale := float64(uint64(1) << step)
	latOff *= scale
	lonOff *= scale
	return Hash{Bits: interleave(cellIndex(latOff), cellIndex(lonOff)), Step: step}, true
}

// EncodeWGS84 is Encode within the index's own ranges.
func EncodeWGS84(lon, lat float64, step uint8) (Hash, bool) {
	return Encode(lonRange, latRange, lon, lat, step)
}

// Decode returns the box a geohash stands for. It fails only for the zero Hash.
func Decode(lonR, latR Range, h Hash) (Area, bool) {
	if h.IsZero() || latR.zero() || lonR.zero() {
		return Area{}, false
	}
	ilat := squeeze(h.Bits)
	ilon := squeeze(h.Bits >> 1)
	latScale := latR.Max - latR.Min
	lonScale := lonR.Max - lonR.Min
	// Step is at most 32 for a hash Encode made; shifting by more gives 0 in Go, as it would
	// be undefined in C, so clamp to keep the division meaningful.
	div := float64(uint64(1) << min(h.Step, 63))
	a := Area{Hash: h}
	a.Lat.Min = latR.Min + float64(float64(ilat)*1.0/div)*latScale
	a.Lat.Max = latR.Min + float64(float64(ilat+1)*1.0/div)*latScale // ilat+1 wraps as C's unsigned int does
	a.Lon.Min = lonR.Min + float64(float64(ilon)*1.0/div)*lonScale
	a.Lon.Max = lonR.Min + float64(float64(ilon+1)*1.0/div)*lonScale
	return a, true
}

// Center is the middle of the area, clamped to the index's limits.
func (a *Area) Center() (lon, lat float64) {
	lon = (a.Lon.Min + a.Lon.Max) / 2
	lon = min(max(lon, LonMin), LonMax)
	lat = (a.Lat.Min + a.Lat.Max) / 2
	lat = min(max(lat, LatMin), LatMax)
	return lon, lat
}

// Align52 shifts a hash to the 52 bits of a score.
func (h Hash) Align52() uint64 {
	if h.Step > StepMax {
		return h.Bits >> (2*uint(h.Step) - 52)
	}
	return h.Bits << (52 - 2*uint(h.Step))
}

// Score is the sorted-set score GEOADD stores for a point, or false when the point is outside
// the limits.
func Score(lon, lat float64) (uint64, bool) {
	h, ok := EncodeWGS84(lon, lat, StepMax)
	if !ok {
		return 0, false
	}
	return h.Align52(), true
}

// scoreBits is C's (uint64_t) conversion of a score as gcc compiles it for x86-64, which
// Redis applies to any score, geo or not: negative values wrap, and NaN, infinities and values
// out of range give what the conversion instructions give. Redis's replies for sorted sets
// that were not written by GEOADD depend on it.
func scoreBits(f float64) uint64 {
	const two63 = 9223372036854775808.0
	if f >= two63 {
		g := f - two63
		if g >= two63 {
			return 0 // the "indefinite" 1<<63, with the top bit flipped back
		}
		return uint64(int64(g)) ^ 1<<63
	}
	if !(f > -two63) { // NaN, -inf and values below -2^63 (and -2^63 itself converts alike)
		return 1 << 63
	}
	return uint64(int64(f))
}

// DecodeScore returns the coordinates a score stands for: the centre of its 52-bit box,
// clamped to the limits. Every score decodes to something, as in Redis.
func DecodeScore(score float64) (lon, lat float64) {
	a, _ := Decode(lonRange, latRange, Hash{Bits: scoreBits(score), Step: StepMax})
	return a.Center()
}

// ScoreRange returns the scores of the members inside a box: min inclusive, max exclusive.
func ScoreRange(h Hash) (lo, hi uint64) {
	lo = h.Align52()
	h.Bits++
	hi = h.Align52()
	return lo, hi
}

// The interleaved bits of a hash: longitude in the odd positions, latitude in the even ones.
const (
	lonBits uint64 = 0xaaaaaaaaaaaaaaaa
	latBits uint64 = 0x5555555555555555
)

// moveX moves a hash one box east (d > 0) or west (d < 0), wrapping around.
func moveX(h Hash, d int) Hash { return move(h, d, lonBits) }

// moveY moves a hash one box north (d > 0) or south (d < 0), wrapping around.
func moveY(h Hash, d int) Hash { return move(h, d, latBits) }

// move adds d (its sign) to the coordinate whose bits mask selects, leaving the other's bits
// alone: the other coordinate's positions are filled with ones (zz) so a carry runs through
// them, then cleared again.
func move(h Hash, d int, mask uint64) Hash {
	if d == 0 || h.Step == 0 {
		return h
	}
	shift := 64 - 2*uint(min(h.Step, 32))
	v, other := h.Bits&mask, h.Bits&^mask
	zz := ^mask >> shift
	if d > 0 {
		v += zz + 1
	} else {
		v |= zz
		v -= zz + 1
	}
	v &= mask >> shift
	h.Bits = v | other
	return h
}

// Neighbors are the eight boxes around a geohash box.
type Neighbors struct {
	North, South, East, West, NorthEast, NorthWest, SouthEast, SouthWest Hash
}

// NeighborsOf returns the boxes around h at its step.
func NeighborsOf(h Hash) Neighbors {
	return Neighbors{
		East:      moveX(h, 1),
		West:      moveX(h, -1),
		South:     moveY(h, -1),
		North:     moveY(h, 1),
		NorthWest: moveY(moveX(h, -1), 1),
		NorthEast: moveY(moveX(h, 1), 1),
		SouthEast: moveY(moveX(h, 1), -1),
		SouthWest: moveY(moveX(h, -1), -1),
	}
}

// EstimateSteps is the geohash precision whose boxes are about as large as a search radius
// (meters) at a latitude: boxes widen towards the poles, so the step drops there.
func EstimateSteps(rangeMeters, lat float64) uint8 {
	if rangeMeters == 0 {
		return 26
	}
	step := 1
	// A NaN or non-positive range never reaches the limit; so many doublings make any
	// positive double pass it, so the loop ends for every input.
	for i := 0; rangeMeters < mercatorMax && i < 2100; i++ {
		rangeMeters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// LatDistance is the distance in meters between two latitudes on a meridian.
func LatDistance(lat1, lat2 float64) float64 {
	return EarthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// Distance is the haversine great-circle distance in meters between two points, as Redis
// computes it (the same latitude shortcut when the longitudes are equal).
func Distance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r := degRad(lon1)
	lon2r := degRad(lon2)
	v := Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return LatDistance(lat1, lat2)
	}
	lat1r := degRad(lat1)
	lat2r := degRad(lat2)
	u := Sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(Cos(lat1r)*Cos(lat2r))*v)*v)
	return 2.0 * EarthRadius * Asin(math.Sqrt(a))
}

// Shape is a search area around a centre: a circle of Radius, or a box of Width by Height,
// in units of Conversion meters.
type Shape struct {
	Lon, Lat              float64
	Box                   bool
	Radius, Width, Height float64
	Conversion            float64
}

// Bounds returns the shape's bounding box: min longitude, min latitude, max longitude, max
// latitude.
func (s *Shape) Bounds() [4]float64 {
	var height, width float64
	if s.Box {
		height = s.Conversion * (s.Height / 2)
		width = s.Conversion * (s.Width / 2)
	} else {
		height = s.Conversion * s.Radius
		width = s.Conversion * s.Radius
	}
	latDelta := radDeg(height / EarthRadius)
	lonDeltaTop := radDeg(width / EarthRadius / Cos(degRad(s.Lat+latDelta)))
	lonDeltaBottom := radDeg(width / EarthRadius / Cos(degRad(s.Lat-latDelta)))
	var b [4]float64
	// The hemispheres mirror each other: the box is widest on the side nearer the equator.
	if s.Lat < 0 {
		b[0], b[2] = s.Lon-lonDeltaBottom, s.Lon+lonDeltaBottom
	} else {
		b[0], b[2] = s.Lon-lonDeltaTop, s.Lon+lonDeltaTop
	}
	b[1] = s.Lat - latDelta
	b[3] = s.Lat + latDelta
	return b
}

// Boxes are the geohash boxes a search scans, in Redis's order: the centre box, then north,
// south, east, west, north-east, north-west, south-east and south-west. Boxes the search does
// not need are zero.
type Boxes [9]Hash

// SearchBoxes returns the boxes that cover the shape.
func (s *Shape) SearchBoxes() Boxes {
	b := s.Bounds()
	minLon, minLat, maxLon, maxLat := b[0], b[1], b[2], b[3]
	radius := s.Radius
	if s.Box {
		radius = math.Sqrt(float64((s.Width/2)*(s.Width/2)) + float64((s.Height/2)*(s.Height/2)))
	}
	radius *= s.Conversion
	steps := EstimateSteps(radius, s.Lat)
	hash, _ := Encode(lonRange, latRange, s.Lon, s.Lat, steps)
	nb := NeighborsOf(hash)
	area, _ := Decode(lonRange, latRange, hash)

	// The estimated step can leave the search area poking out of the nine boxes when the
	// centre sits near an edge of its box: then one step coarser.
	north, _ := Decode(lonRange, latRange, nb.North)
	south, _ := Decode(lonRange, latRange, nb.South)
	east, _ := Decode(lonRange, latRange, nb.East)
	west, _ := Decode(lonRange, latRange, nb.West)
	decrease := north.Lat.Max < maxLat || south.Lat.Min > minLat || east.Lon.Max < maxLon || west.Lon.Min > minLon
	if steps > 1 && decrease {
		steps--
		hash, _ = Encode(lonRange, latRange, s.Lon, s.Lat, steps)
		nb = NeighborsOf(hash)
		area, _ = Decode(lonRange, latRange, hash)
	}
	// Leave out the boxes entirely outside the search area.
	if steps >= 2 {
		if area.Lat.Min < minLat {
			nb.South, nb.SouthWest, nb.SouthEast = Hash{}, Hash{}, Hash{}
		}
		if area.Lat.Max > maxLat {
			nb.North, nb.NorthEast, nb.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Lon.Min < minLon {
			nb.West, nb.SouthWest, nb.NorthWest = Hash{}, Hash{}, Hash{}
		}
		if area.Lon.Max > maxLon {
			nb.East, nb.SouthEast, nb.NorthEast = Hash{}, Hash{}, Hash{}
		}
	}
	return Boxes{hash, nb.North, nb.South, nb.East, nb.West, nb.NorthEast, nb.NorthWest, nb.SouthEast, nb.SouthWest}
}

// Contains reports whether the point (lon, lat) is inside the shape and its distance from the
// centre in meters.
//
// Most candidates a search tests lie in the corners of its boxes, outside the shape. The
// correctly rounded distance costs about six times the math package's, so a candidate is
// first measured with the latter (within a few ulps) and rejected outright when it is clearly
// beyond the limit; only the rest, near the edge or inside, get the exact distance, which
// decides.
func (s *Shape) Contains(lon, lat float64) (dist float64, ok bool) {
	if !s.Box {
		limit := s.Radius * s.Conversion
		if clearlyBeyond(approxDistance(s.Lon, s.Lat, lon, lat), limit) {
			return 0, false
		}
		dist = Distance(s.Lon, s.Lat, lon, lat)
		return dist, !(dist > limit)
	}
	width, height := s.Width*s.Conversion, s.Height*s.Conversion
	// The latitude test is the cheaper one, so it goes first.
	if LatDistance(lat, s.Lat) > height/2 {
		return 0, false
	}
	if clearlyBeyond(approxDistance(lon, lat, s.Lon, lat), width/2) {
		return 0, false
	}
	if Distance(lon, lat, s.Lon, lat) > width/2 {
		return 0, false
	}
	return Distance(s.Lon, s.Lat, lon, lat), true
}

// approxDistance is Distance with the math package's sin, cos and asin, whose errors of a few
// ulps change the result by far less than clearlyBeyond's margin.
func approxDistance(lon1, lat1, lon2, lat2 float64) float64 {
	v := math.Sin((degRad(lon2) - degRad(lon1)) / 2)
	if v == 0 {
		return LatDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := math.Sin((lat2r - lat1r) / 2)
	a := u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v
	return 2.0 * EarthRadius * math.Asin(math.Sqrt(a))
}

// clearlyBeyond reports whether an approximate distance d is beyond limit by more than its
// possible error (a relative 10^-12 and a nanometer), so that the exact one is too.
func clearlyBeyond(d, limit float64) bool { return d > limit*(1+1e-12)+1e-9 }

// geoAlphabet is the standard geohash base-32 alphabet.
const geoAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// AppendHashString appends the standard 11-character geohash of the point a score stands for.
// The index's latitude range is ±85.05°, the standard one ±90°, so the point is decoded and
// encoded again; 52 bits fill ten characters and the eleventh is always '0'.
func AppendHashString(dst []byte, score float64) []byte {
	lon, lat := DecodeScore(score)
	h, _ := Encode(lonRange, stdLatRange, lon, lat, StepMax)
	for i := 0; i < 10; i++ {
		dst = append(dst, geoAlphabet[(h.Bits>>(52-uint(i+1)*5))&0x1f])
	}
	return append(dst, geoAlphabet[0])
}

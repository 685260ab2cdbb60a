package geo

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Values below come from Redis 7.0.15 (GEOADD then ZSCORE, GEOPOS, GEOHASH, GEODIST).
func TestScoreMatchesRedis(t *testing.T) {
	for _, c := range []struct {
		lon, lat float64
		score    uint64
	}{
		{13.361389, 38.115556, 3479099956230698},
		{15.087269, 37.502669, 3479447370796909},
		{0, 0, 3377699720527872},
		{-180, -85.05112878, 0},
		{180, 85.05112878, 13510798882111488}, // the cell index 2^26 overflows into bit 52, as in Redis
	} {
		got, ok := Score(c.lon, c.lat)
		if !ok || got != c.score {
			t.Errorf("Score(%v, %v) = %d, %v; want %d", c.lon, c.lat, got, ok, c.score)
		}
	}
	for _, bad := range [][2]float64{{180.0000001, 0}, {-180.0000001, 0}, {0, 85.05112879}, {0, -85.05112879},
		{math.Inf(1), 0}} {
		if _, ok := Score(bad[0], bad[1]); ok {
			t.Errorf("Score(%v, %v) accepted", bad[0], bad[1])
		}
	}
}

func TestDecodeAndFormatMatchRedis(t *testing.T) {
	lon, lat := DecodeScore(3479099956230698)
	if got := string(AppendCoord(nil, lon)); got != "13.36138933897018433" {
		t.Errorf("longitude %s", got)
	}
	if got := string(AppendCoord(nil, lat)); got != "38.11555639549629859" {
		t.Errorf("latitude %s", got)
	}
	if got := string(AppendHashString(nil, 3479099956230698)); got != "sqc8b49rny0" {
		t.Errorf("geohash %s", got)
	}
	if got := string(AppendHashString(nil, 3479447370796909)); got != "sqdtr74hyu0" {
		t.Errorf("geohash %s", got)
	}
	lon2, lat2 := DecodeScore(3479447370796909)
	if got := string(AppendDistance(nil, Distance(lon, lat, lon2, lat2))); got != "166274.1516" {
		t.Errorf("distance %s", got)
	}
	if got := string(AppendDistance(nil, Distance(lon, lat, lon2, lat2)/1000)); got != "166.2742" {
		t.Errorf("distance km %s", got)
	}
}

func TestAppendDistance(t *testing.T) {
	for _, c := range []struct {
		d    float64
		want string
	}{
		{0, "0.0000"}, {math.Copysign(0, -1), "0.0000"}, {0.00001, "0.0000"}, {0.00005, "0.0000"}, {0.00016, "0.0002"},
		{0.5, "0.5000"}, {1.23456, "1.2346"}, {12345.6789, "12345.6789"}, {-1.5, "-1.5000"}, {-0.00001, "0.0000"},
		{math.NaN(), "-922337203685477.5808"}, {1e300, "-922337203685477.5808"},
	} {
		if got := string(AppendDistance(nil, c.d)); got != c.want {
			t.Errorf("AppendDistance(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestAppendCoord(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {-1e-20, "0"}, {1.5, "1.5"}, {-180, "-180"}, {100, "100"},
		{0.1, "0.10000000000000001"}, {math.Inf(1), "inf"}, {math.Inf(-1), "-inf"},
	} {
		if got := string(AppendCoord(nil, c.f)); got != c.want {
			t.Errorf("AppendCoord(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

// Every point round-trips through its score into the 52-bit box it was put in: the decoded
// point is at most half a box away, and encoding it again gives the same score.
func TestScoreRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	lonCell, latCell := 360.0/(1<<26), (LatMax-LatMin)/(1<<26)
	for i := 0; i < 100000; i++ {
		lon := LonMin + rng.Float64()*(LonMax-LonMin)
		lat := LatMin + rng.Float64()*(LatMax-LatMin)
		s, ok := Score(lon, lat)
		if !ok || s >= 1<<52 {
			t.Fatalf("Score(%v, %v) = %d, %v", lon, lat, s, ok)
		}
		dlon, dlat := DecodeScore(float64(s))
		if math.Abs(dlon-lon) > lonCell || math.Abs(dlat-lat) > latCell {
			t.Fatalf("(%v, %v) decoded as (%v, %v)", lon, lat, dlon, dlat)
		}
		if s2, _ := Score(dlon, dlat); s2 != s {
			t.Fatalf("(%v, %v): score %d, again %d", lon, lat, s, s2)
		}
	}
}

func TestInterleave(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10000; i++ {
		lat, lon := rng.Uint32(), rng.Uint32()
		v := interleave(lat, lon)
		for b := 0; b < 32; b++ {
			if (v>>(2*b))&1 != uint64(lat>>b)&1 || (v>>(2*b+1))&1 != uint64(lon>>b)&1 {
				t.Fatalf("interleave(%x, %x) = %x", lat, lon, v)
			}
		}
		if squeeze(v) != lat || squeeze(v>>1) != lon {
			t.Fatalf("squeeze(%x)", v)
		}
	}
}

// Scores that GEOADD never writes (a sorted set used as a geo set) decode as Redis decodes
// them on x86-64, through C's conversion of the double to uint64.
func TestScoreBits(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want uint64
	}{
		{-1, math.MaxUint64}, {1.9, 1}, {math.Inf(1), 0}, {math.Inf(-1), 1 << 63}, {math.NaN(), 1 << 63},
		{1e19, 10000000000000000000}, {2e19, 0}, {-1e19, 1 << 63}, {9223372036854775808, 1 << 63},
	} {
		if got := scoreBits(c.f); got != c.want {
			t.Errorf("scoreBits(%v) = %d, want %d", c.f, got, c.want)
		}
	}
}

func TestNeighbors(t *testing.T) {
	h, _ := EncodeWGS84(13.361389, 38.115556, 10)
	nb := NeighborsOf(h)
	a, _ := Decode(lonRange, latRange, h)
	for _, c := range []struct {
		name       string
		h          Hash
		dlon, dlat float64
	}{
		{"north", nb.North, 0, 1}, {"south", nb.South, 0, -1}, {"east", nb.East, 1, 0}, {"west", nb.West, -1, 0},
		{"north-east", nb.NorthEast, 1, 1}, {"south-west", nb.SouthWest, -1, -1},
	} {
		b, _ := Decode(lonRange, latRange, c.h)
		w, hgt := a.Lon.Max-a.Lon.Min, a.Lat.Max-a.Lat.Min
		if math.Abs(b.Lon.Min-(a.Lon.Min+c.dlon*w)) > 1e-9 || math.Abs(b.Lat.Min-(a.Lat.Min+c.dlat*hgt)) > 1e-9 {
			t.Errorf("%s: box %+v from %+v", c.name, b, a)
		}
	}
	// Moving east from the last column wraps to the first.
	edge, _ := EncodeWGS84(179.99, 0, 8)
	e, _ := Decode(lonRange, latRange, moveX(edge, 1))
	if e.Lon.Min != -180 {
		t.Errorf("east of the antimeridian: %+v", e)
	}
}

func TestEstimateSteps(t *testing.T) {
	for _, c := range []struct {
		r, lat float64
		want   uint8
	}{
		{0, 0, 26}, {1, 0, 24}, {100, 0, 17}, {1000, 0, 14}, {5000000, 0, 2}, {20037726.37, 0, 1}, {1000, 70, 13}, {1000, -85, 12},
		{math.Inf(1), 0, 1}, {math.NaN(), 0, 1}, {-5, 0, 26}, {5e-324, 0, 26},
	} {
		if got := EstimateSteps(c.r, c.lat); got != c.want {
			t.Errorf("EstimateSteps(%v, %v) = %d, want %d", c.r, c.lat, got, c.want)
		}
	}
}

// Every point inside a shape lies in one of its search boxes, for random shapes anywhere:
// the nine boxes cover the circle or rectangle.
func TestSearchBoxesCoverTheShape(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 3000; i++ {
		s := Shape{Lon: LonMin + rng.Float64()*360, Lat: -80 + rng.Float64()*160, Conversion: 1}
		if rng.IntN(2) == 0 {
			s.Radius = math.Pow(10, rng.Float64()*6.5)
		} else {
			s.Box, s.Width, s.Height = true, math.Pow(10, rng.Float64()*6.5), math.Pow(10, rng.Float64()*6.5)
		}
		boxes := s.SearchBoxes()
		for j := 0; j < 50; j++ {
			// A point near the shape: inside it, some of the time.
			reach := max(s.Radius, s.Width, s.Height) / EarthRadius * 180 / math.Pi
			lon := s.Lon + (rng.Float64()*2-1)*reach*2
			lat := s.Lat + (rng.Float64()*2-1)*reach
			if lon < LonMin || lon > LonMax || lat < LatMin || lat > LatMax {
				continue
			}
			score, _ := Score(lon, lat)
			dlon, dlat := DecodeScore(float64(score))
			if _, in := s.Contains(dlon, dlat); !in {
				continue
			}
			found := slices.ContainsFunc(boxes[:], func(h Hash) bool {
				if h.IsZero() {
					return false
				}
				lo, hi := ScoreRange(h)
				return score >= lo && score < hi
			})
			if !found {
				t.Fatalf("shape %+v: point (%v, %v) inside but in none of the boxes", s, lon, lat)
			}
		}
	}
}

func TestPartialSortOrdersTheRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	cmp := func(a, b *int) int { return *a - *b }
	for i := 0; i < 2000; i++ {
		n := rng.IntN(200) + 1
		a := make([]int, n)
		for j := range a {
			a[j] = rng.IntN(max(n/3, 1))
		}
		sorted := slices.Clone(a)
		slices.Sort(sorted)
		k := rng.IntN(n)
		PartialSort(a, cmp, 0, k)
		if !slices.Equal(a[:k+1], sorted[:k+1]) {
			t.Fatalf("n=%d k=%d: %v, want prefix %v", n, k, a[:k+1], sorted[:k+1])
		}
		rest := slices.Clone(a)
		slices.Sort(rest)
		if !slices.Equal(rest, sorted) {
			t.Fatalf("not a permutation")
		}
	}
}

// FuzzGeo feeds arbitrary doubles through every function: none may panic or loop, and
// whatever decodes must be inside the index's limits.
func FuzzGeo(f *testing.F) {
	f.Add(13.361389, 38.115556, 100.0, 50.0, 3479099956230698.0)
	f.Add(math.Inf(1), math.NaN(), -1.0, math.Inf(-1), -1.0)
	f.Add(180.0, -85.05112878, 0.0, 1e308, 1e300)
	f.Fuzz(func(t *testing.T, lon, lat, r, w, score float64) {
		Score(lon, lat)
		dlon, dlat := DecodeScore(score)
		if !(dlon >= LonMin && dlon <= LonMax && dlat >= LatMin && dlat <= LatMax) {
			t.Fatalf("DecodeScore(%v) = %v, %v", score, dlon, dlat)
		}
		AppendHashString(nil, score)
		AppendDistance(nil, Distance(lon, lat, dlon, dlat))
		AppendCoord(nil, r)
		for _, s := range []Shape{{Lon: lon, Lat: lat, Radius: r, Conversion: 1}, {Lon: lon, Lat: lat, Box: true, Width: w, Height: r, Conversion: 0.3048}} {
			for _, h := range s.SearchBoxes() {
				ScoreRange(h)
			}
			s.Contains(dlon, dlat)
		}
	})
}

// The shortcut that rejects candidates by an approximate distance never rejects one the exact
// distance accepts, right at the edge of circles and boxes included.
func TestContainsShortcutIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for i := 0; i < 200000; i++ {
		lon1, lat1 := LonMin+rng.Float64()*360, LatMin+rng.Float64()*(LatMax-LatMin)
		lon2, lat2 := lon1+(rng.Float64()*2-1)*rng.Float64()*20, lat1+(rng.Float64()*2-1)*rng.Float64()*10
		exact := Distance(lon1, lat1, lon2, lat2)
		if a := approxDistance(lon1, lat1, lon2, lat2); math.Abs(a-exact) > exact*1e-14+1e-12 {
			t.Fatalf("approximate distance %v, exact %v", a, exact)
		}
		// A radius equal to the exact distance, or one ulp either side.
		for _, r := range []float64{exact, math.Nextafter(exact, 0), math.Nextafter(exact, math.Inf(1))} {
			s := Shape{Lon: lon1, Lat: lat1, Radius: r, Conversion: 1}
			d, ok := s.Contains(lon2, lat2)
			if ok != !(exact > r) || (ok && d != exact) {
				t.Fatalf("Contains at radius %v (distance %v): %v, %v", r, exact, d, ok)
			}
		}
		w := 2 * Distance(lon2, lat2, lon1, lat2)
		b := Shape{Lon: lon1, Lat: lat1, Box: true, Width: w, Height: 2 * LatDistance(lat2, lat1), Conversion: 1}
		if d, ok := b.Contains(lon2, lat2); !ok || d != exact {
			t.Fatalf("box edge: %v, %v", d, ok)
		}
	}
}

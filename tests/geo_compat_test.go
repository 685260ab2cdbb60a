package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// TestGeoMatchesRedis is the geo commands' differential test with random data: thousands of
// random points (near the limits and the antimeridian too) go into HotKV and a real
// redis-server, and then the stored scores must be the same bits, and GEOPOS, GEOHASH,
// GEODIST and random GEOSEARCH, GEORADIUS and GEORADIUSBYMEMBER queries (circles and boxes,
// every unit, COUNT, ANY, WITHDIST, WITHHASH, WITHCOORD, ASC, DESC, STORE) must reply the
// same bytes, in RESP2 and RESP3. HOTKV_GEO_SEED reruns one seed.
func TestGeoMatchesRedis(t *testing.T) {
	redisAddr := startCompatRedis(t)
	hot := testutil.StartServer(t)
	seed := rand.Uint64()
	if v, err := strconv.ParseUint(os.Getenv("HOTKV_GEO_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (HOTKV_GEO_SEED reruns it)", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			h, r := hot.Dial(t), testutil.DialAddr(t, redisAddr)
			if proto == 3 {
				h.Do("HELLO", "3")
				r.Do("HELLO", "3")
			}
			mismatches := 0
			same := func(args ...string) {
				t.Helper()
				hv, rv := h.Do(args...), r.Do(args...)
				if hv != rv {
					mismatches++
					if mismatches <= 20 {
						t.Errorf("%s\n  hotkv: %s\n  redis: %s", strings.Join(args, " "), compatClip(hv, 600), compatClip(rv, 600))
					}
				}
			}
			same("FLUSHALL")
			// storedDists compares the scores of a STOREDIST result: each within four ulps of
			// Redis's, and counted when it is the same bits.
			distSame, distAll := 0, 0
			storedDists := func(key string) {
				t.Helper()
				hs, rs := compatScores(h.Do("ZRANGE", key, "0", "-1", "WITHSCORES")), compatScores(r.Do("ZRANGE", key, "0", "-1", "WITHSCORES"))
				require.Equal(t, len(rs), len(hs), "ZRANGE %s WITHSCORES", key)
				for i := range rs {
					distAll++
					if hs[i] == rs[i] {
						distSame++
						continue
					}
					require.InEpsilon(t, rs[i], hs[i], 1e-15, "%s: score %d: %v, Redis %v", key, i, hs[i], rs[i])
				}
			}
			coord := func(lo, hi float64) string {
				return strconv.FormatFloat(lo+rng.Float64()*(hi-lo), 'f', rng.IntN(12)+1, 64)
			}
			// Three sets: world-wide, one dense city (many points per geohash box), and points
			// crowded at the index's edges.
			type region struct {
				key                        string
				lonLo, lonHi, latLo, latHi float64
				n                          int
			}
			regions := []region{
				{"world", -180, 180, -85.05112878, 85.05112878, 1500},
				{"city", 12.4, 12.6, 41.8, 42.0, 800},
				{"edge", 179.5, 180, 84.5, 85.05112878, 200},
			}
			for _, g := range regions {
				for i := 0; i < g.n; i += 50 {
					args := []string{"GEOADD", g.key}
					for j := i; j < min(i+50, g.n); j++ {
						lon, lat := coord(g.lonLo, g.lonHi), coord(g.latLo, g.latHi)
						if g.key == "edge" && rng.IntN(4) == 0 {
							lon = coord(-180, -179.5)
						}
						args = append(args, lon, lat, "m"+strconv.Itoa(j))
					}
					same(args...)
				}
				same("ZRANGE", g.key, "0", "-1", "WITHSCORES")
			}
			// The exact limits.
			same("GEOADD", "edge", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw", "0", "0", "zero")
			member := func(g region) string { return "m" + strconv.Itoa(rng.IntN(g.n)) }
			units := []string{"m", "km", "ft", "mi", "KM", "Mi"}
			for _, g := range regions {
				args := []string{"GEOPOS", g.key}
				hargs := []string{"GEOHASH", g.key}
				for j := 0; j < g.n; j += 3 {
					args = append(args, "m"+strconv.Itoa(j))
					hargs = append(hargs, "m"+strconv.Itoa(j))
				}
				same(args...)
				same(hargs...)
				for j := 0; j < 150; j++ {
					same("GEODIST", g.key, member(g), member(g), units[rng.IntN(len(units))])
				}
			}
			world, city := regions[0], regions[1]
			for q := 0; q < 250; q++ {
				g := regions[rng.IntN(len(regions))]
				var args []string
				switch rng.IntN(4) {
				case 0:
					args = []string{"GEOSEARCH", g.key, "FROMMEMBER", member(g)}
				default:
					args = []string{"GEOSEARCH", g.key, "FROMLONLAT", coord(g.lonLo, g.lonHi), coord(g.latLo, g.latHi)}
				}
				scale := 1.0
				if g.key == city.key {
					scale = 0.01
				}
				if rng.IntN(2) == 0 {
					args = append(args, "BYRADIUS", strconv.FormatFloat(rng.Float64()*3000*scale, 'f', 3, 64), "km")
				} else {
					args = append(args, "BYBOX", strconv.FormatFloat(rng.Float64()*4000*scale, 'f', 2, 64),
						strconv.FormatFloat(rng.Float64()*4000*scale, 'f', 2, 64), "km")
				}
				switch rng.IntN(4) {
				case 0:
					args = append(args, "ASC")
				case 1:
					args = append(args, "DESC")
				}
				switch rng.IntN(4) {
				case 0:
					args = append(args, "COUNT", strconv.Itoa(rng.IntN(20)+1))
				case 1:
					args = append(args, "COUNT", strconv.Itoa(rng.IntN(20)+1), "ANY")
				}
				args = append(args, "WITHDIST", "WITHHASH", "WITHCOORD")
				same(args...)
			}
			for q := 0; q < 100; q++ {
				lon, lat := coord(world.lonLo, world.lonHi), coord(world.latLo, world.latHi)
				radius := strconv.FormatFloat(rng.Float64()*2000, 'f', 1, 64)
				u := units[rng.IntN(len(units))]
				if u == "m" || u == "ft" {
					radius += "000"
				}
				same("GEORADIUS", world.key, lon, lat, radius, u, "WITHDIST", "WITHCOORD", "ASC")
				same("GEORADIUS_RO", world.key, lon, lat, radius, u, "COUNT", "5")
				same("GEORADIUSBYMEMBER", world.key, member(world), radius, u, "WITHDIST", "DESC")
				same("GEORADIUS", world.key, lon, lat, radius, u, "STOREDIST", "d1")
				same("ZRANGE", "d1", "0", "-1")
				storedDists("d1")
				same("GEOSEARCHSTORE", "d2", world.key, "FROMLONLAT", lon, lat, "BYBOX", radius, radius, u, "STOREDIST")
				same("ZRANGE", "d2", "0", "-1")
				storedDists("d2")
			}
			if mismatches > 0 {
				t.Errorf("%d replies differ from Redis", mismatches)
			}
			// glibc's sin, cos and asin, which Redis uses, are correctly rounded for all but
			// about one argument in a thousand; HotKV's always are (internal/geo/trig.go). So a
			// few distances stored in full by STOREDIST may differ in the last bit or two: about
			// 0.5% (five calls a distance), in clusters when glibc misrounds the cosine of a
			// search's centre, which every distance from it shares, and d2 repeats d1's centre.
			t.Logf("STOREDIST distances: %d of %d the same bits as Redis's", distSame, distAll)
			require.LessOrEqual(t, distAll-distSame, max(distAll/25, 3), "too many stored distances differ")
		})
	}
}

// compatScores returns the scores of a ZRANGE ... WITHSCORES reply, in RESP2 (member and score
// bulk strings in turn) or RESP3 (pairs of a bulk string and a double).
func compatScores(reply string) []float64 {
	var out []float64
	lines := strings.Split(reply, "\r\n")
	var vals []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "$"):
			i++
			vals = append(vals, lines[i])
		case strings.HasPrefix(l, ","):
			vals = append(vals, l[1:])
		}
	}
	for i := 1; i < len(vals); i += 2 {
		f, err := strconv.ParseFloat(vals[i], 64)
		if err != nil {
			panic(fmt.Sprintf("score %q in %q", vals[i], reply))
		}
		out = append(out, f)
	}
	return out
}

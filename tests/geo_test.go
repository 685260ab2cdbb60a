package tests

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// The geo commands through a client library, in RESP2 and RESP3: go-redis's own geo API
// parses the replies (nested arrays, distances as strings, coordinates as doubles).
func TestGeoThroughClient(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		n, err := c.GeoAdd(ctx, "Sicily",
			&redis.GeoLocation{Name: "Palermo", Longitude: 13.361389, Latitude: 38.115556},
			&redis.GeoLocation{Name: "Catania", Longitude: 15.087269, Latitude: 37.502669}).Result()
		require.NoError(t, err)
		require.EqualValues(t, 2, n)

		pos, err := c.GeoPos(ctx, "Sicily", "Palermo", "nope").Result()
		require.NoError(t, err)
		require.InDelta(t, 13.361389, pos[0].Longitude, 1e-5)
		require.InDelta(t, 38.115556, pos[0].Latitude, 1e-5)
		require.Nil(t, pos[1])

		d, err := c.GeoDist(ctx, "Sicily", "Palermo", "Catania", "km").Result()
		require.NoError(t, err)
		require.Equal(t, 166.2742, d)

		h, err := c.GeoHash(ctx, "Sicily", "Palermo", "Catania").Result()
		require.NoError(t, err)
		require.Equal(t, []string{"sqc8b49rny0", "sqdtr74hyu0"}, h)

		locs, err := c.GeoSearchLocation(ctx, "Sicily", &redis.GeoSearchLocationQuery{
			GeoSearchQuery: redis.GeoSearchQuery{Longitude: 15, Latitude: 37, Radius: 200, RadiusUnit: "km", Sort: "ASC"},
			WithCoord:      true, WithDist: true, WithHash: true}).Result()
		require.NoError(t, err)
		require.Len(t, locs, 2)
		require.Equal(t, "Catania", locs[0].Name)
		require.Equal(t, 56.4413, locs[0].Dist)
		require.EqualValues(t, 3479447370796909, locs[0].GeoHash)
		require.Equal(t, "Palermo", locs[1].Name)
		require.Equal(t, 190.4424, locs[1].Dist)

		names, err := c.GeoSearch(ctx, "Sicily", &redis.GeoSearchQuery{Member: "Palermo", BoxWidth: 400, BoxHeight: 400,
			BoxUnit: "km", Sort: "DESC"}).Result()
		require.NoError(t, err)
		require.Equal(t, []string{"Catania", "Palermo"}, names)

		stored, err := c.GeoSearchStore(ctx, "Sicily", "near", &redis.GeoSearchStoreQuery{
			GeoSearchQuery: redis.GeoSearchQuery{Longitude: 15, Latitude: 37, Radius: 100, RadiusUnit: "km"}, StoreDist: true}).Result()
		require.NoError(t, err)
		require.EqualValues(t, 1, stored)
		z, err := c.ZRangeWithScores(ctx, "near", 0, -1).Result()
		require.NoError(t, err)
		require.Len(t, z, 1)
		require.Equal(t, "Catania", z[0].Member)
		require.InDelta(t, 56.4413, z[0].Score, 1e-4)

		rad, err := c.GeoRadius(ctx, "Sicily", 15, 37, &redis.GeoRadiusQuery{Radius: 200, Unit: "km", WithDist: true, Sort: "ASC", Count: 1}).Result()
		require.NoError(t, err)
		require.Len(t, rad, 1)
		require.Equal(t, "Catania", rad[0].Name)

		_, err = c.GeoRadius(ctx, "Sicily", 200, 37, &redis.GeoRadiusQuery{Radius: 1, Unit: "km"}).Result()
		require.EqualError(t, err, "ERR invalid longitude,latitude pair 200.000000,37.000000")
		require.NoError(t, c.Set(ctx, "str", "x", 0).Err())
		require.ErrorContains(t, c.GeoPos(ctx, "str", "a").Err(), "WRONGTYPE")
	})
}

// Geo sets are sorted sets: they survive a restart through a snapshot and through the
// append-only log (GEOADD replayed as ZADD, stored searches as their results) unchanged.
func TestGeoSurvivesRestart(t *testing.T) {
	fill := func(t *testing.T, c *redis.Client) {
		rng := rand.New(rand.NewPCG(9, 9))
		args := []any{"GEOADD", "world"}
		for i := 0; i < 300; i++ {
			args = append(args, strconv.FormatFloat(-180+rng.Float64()*360, 'f', 6, 64),
				strconv.FormatFloat(-85+rng.Float64()*170, 'f', 6, 64), fmt.Sprint("p", i))
		}
		require.NoError(t, c.Do(ctx, args...).Err())
		require.NoError(t, c.Do(ctx, "GEOADD", "small", "1", "2", "a", "3", "4", "b").Err())
		require.NoError(t, c.Do(ctx, "GEOSEARCHSTORE", "dist", "world", "FROMLONLAT", "10", "45", "BYRADIUS", "3000", "km", "STOREDIST").Err())
		require.NoError(t, c.Do(ctx, "GEORADIUS", "world", "-70", "-20", "4000", "km", "STORE", "hashes", "COUNT", "7").Err())
		require.NoError(t, c.Do(ctx, "GEORADIUSBYMEMBER", "world", "p1", "1", "m", "STORE", "small").Err()) // p1 alone
	}
	state := func(t *testing.T, c *redis.Client) []string {
		var out []string
		for _, k := range []string{"world", "small", "dist", "hashes"} {
			z, err := c.ZRangeWithScores(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			enc := c.ObjectEncoding(ctx, k).Val()
			out = append(out, fmt.Sprintf("%s %s %v", k, enc, z))
		}
		return out
	}
	restartThroughEachWay(t, fill, state, func(t *testing.T, c *redis.Client, before []string) {
		require.Contains(t, before[0], "world skiplist")
		require.Regexp(t, `^small listpack \[\{\S+ p1\}\]$`, before[1])
		require.Contains(t, before[3], "hashes listpack")
	})
}

// Hostile geo command lines (any option anywhere, NaN, infinities, huge counts, radii and
// boxes) against sets of every size: every line gets a reply and the server stays up.
func TestGeoHostileArguments(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	r.Do("GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania", "0", "0", "zero")
	r.Do("ZADD", "z", "-1", "neg", "inf", "big", "nan-ish", "x")
	r.Do("ZADD", "z", "1e300", "huge", "4503599627370496", "over")
	args := []string{"GEOADD", "many"}
	for i := 0; i < 400; i++ {
		args = append(args, strconv.Itoa(i%360-180), strconv.Itoa(i%170-85), strconv.Itoa(i))
	}
	r.Do(args...)
	words := []string{"g", "z", "many", "nokey", "Palermo", "zero", "neg", "big", "huge", "0", "1", "-1", "180",
		"-180", "85.05112878", "90", "inf", "-inf", "nan", "1e308", "-1e308", "5e-324", "0x10", "", " 1",
		"9223372036854775807", "-9223372036854775808", "20037726.37", "40000000", "m", "km", "ft", "mi", "KM",
		"FROMMEMBER", "FROMLONLAT", "BYRADIUS", "BYBOX", "ASC", "DESC", "COUNT", "ANY", "WITHCOORD", "WITHDIST",
		"WITHHASH", "STORE", "STOREDIST", "NX", "XX", "CH", "dst"}
	cmds := []string{"GEOADD", "GEOPOS", "GEODIST", "GEOHASH", "GEORADIUS", "GEORADIUS_RO", "GEORADIUSBYMEMBER",
		"GEORADIUSBYMEMBER_RO", "GEOSEARCH", "GEOSEARCHSTORE"}
	rng := rand.New(rand.NewPCG(21, 42))
	for i := 0; i < 20000; i++ {
		line := []string{cmds[rng.IntN(len(cmds))]}
		for range rng.IntN(14) {
			line = append(line, words[rng.IntN(len(words))])
		}
		if reply := r.Do(line...); reply == "" {
			t.Fatalf("%v: no reply", line)
		}
	}
	// Well-formed searches with extreme shapes, around every kind of centre.
	for _, centre := range [][]string{{"FROMLONLAT", "180", "85.05112878"}, {"FROMLONLAT", "-180", "-85.05112878"},
		{"FROMLONLAT", "0", "0"}, {"FROMMEMBER", "zero"}} {
		for _, by := range [][]string{{"BYRADIUS", "0", "m"}, {"BYRADIUS", "inf", "km"}, {"BYRADIUS", "1e308", "mi"},
			{"BYRADIUS", "5e-324", "m"}, {"BYBOX", "inf", "inf", "km"}, {"BYBOX", "0", "0", "m"}, {"BYBOX", "1e308", "1", "ft"}} {
			line := append(append([]string{"GEOSEARCH", "many"}, centre...), by...)
			line = append(line, "WITHDIST", "WITHCOORD", "WITHHASH", "COUNT", "3")
			if reply := r.Do(line...); reply == "" {
				t.Fatalf("%v: no reply", line)
			}
		}
	}
	require.Equal(t, "+PONG\r\n", r.Do("PING"))
}

// A stored search changes its destination only: WATCH sees the destination change (also
// when the result is empty and deletes it), not the source or a destination the line names
// first and then overrides.
func TestGeoStoreTouchesOnlyDestination(t *testing.T) {
	s := testutil.StartServer(t)
	a, b := s.Dial(t), s.Dial(t)
	a.Do("GEOADD", "src", "13.361389", "38.115556", "Palermo")
	try := func(watch string, cmd ...string) string {
		t.Helper()
		require.Equal(t, "+OK\r\n", a.Do("WATCH", watch))
		b.Do(cmd...)
		a.Do("MULTI")
		a.Do("PING")
		return a.Do("EXEC")
	}
	require.Equal(t, "*-1\r\n", try("dst", "GEORADIUS", "src", "13", "38", "100", "km", "STORE", "dst"))
	require.Equal(t, "*1\r\n+PONG\r\n", try("src", "GEORADIUS", "src", "13", "38", "100", "km", "STORE", "dst"))
	require.Equal(t, "*1\r\n+PONG\r\n", try("first", "GEORADIUS", "src", "13", "38", "100", "km", "STORE", "first", "STOREDIST", "dst"))
	require.Equal(t, ":0\r\n", b.Do("EXISTS", "first"))
	require.Equal(t, "*-1\r\n", try("dst", "GEOSEARCHSTORE", "dst", "src", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m"))
	require.Equal(t, ":0\r\n", b.Do("EXISTS", "dst"))
	require.Equal(t, "*-1\r\n", try("src", "GEOADD", "src", "1", "1", "x"))
}

// The keyspace events of the geo writes, as Redis names them: GEOADD is ZADD's "zadd", a
// stored search "georadiusstore" or "geosearchstore", and "del" when an empty result removes
// the destination.
func TestGeoKeyspaceEvents(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "EA").Err())
	next := eventLog(t, s.Client(t, 3), "__keyevent@0__:*")
	ev := func(want []string, args ...any) {
		t.Helper()
		expectEvents(t, next, c, want, func() { c.Do(ctx, args...) })
	}
	ev([]string{"zadd g"}, "GEOADD", "g", "13.361389", "38.115556", "Palermo")
	ev(nil, "GEOADD", "g", "NX", "13.361389", "38.115556", "Palermo")
	ev([]string{"georadiusstore d"}, "GEORADIUS", "g", "13", "38", "100", "km", "STORE", "d")
	ev([]string{"georadiusstore d"}, "GEORADIUSBYMEMBER", "g", "Palermo", "100", "km", "STOREDIST", "d")
	ev([]string{"geosearchstore d"}, "GEOSEARCHSTORE", "d", "g", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "m")
	ev([]string{"del d"}, "GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m")
	ev(nil, "GEOSEARCHSTORE", "d", "g", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "m")
	ev([]string{"del g"}, "GEORADIUS", "nokey", "0", "0", "1", "m", "STORE", "g")
}

package command

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/hotkv/hotkv/internal/geo"
	"github.com/hotkv/hotkv/internal/types"
)

// Geospatial indexes, as in Redis: a geo set is a sorted set whose scores are the 52-bit
// geohashes of its members' positions (internal/geo), so every sorted-set command works on
// it and it shares the sorted set's encodings. GEOADD is ZADD of the computed scores and is
// journaled as that ZADD, as Redis propagates it; GEORADIUS ... STORE/STOREDIST and
// GEOSEARCHSTORE are journaled as the resulting sorted set (DEL, ZADD in one MULTI/EXEC
// block), since the distances behind the result are floating-point math a replaying server
// need not repeat bit for bit.

func geoCommands() []*Command {
	row := func(name string, arity int, flags Flag, acl string, since, syntax, complexity, summary string, h Handler) *Command {
		ks := KSRO | KSAccess
		if flags&FlagWrite != 0 {
			ks = KSRW | KSUpdate
		}
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{acl, "geo", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(ks), Group: "geo", Since: since,
			Syntax: syntax, Complexity: complexity, Summary: summary, Handler: h}
	}
	const units = "<M | KM | FT | MI>"
	const radiusN = "O(N+log(M)) where N is the number of elements inside the bounding box of the circular area delimited by center and radius and M is the number of items inside the index."
	const searchN = "O(N+log(M)) where N is the number of elements in the grid-aligned bounding box area around the shape provided as the filter and M is the number of items inside the shape"
	const radiusOpts = " [WITHCOORD] [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC | DESC]"
	const from = " <FROMMEMBER member | FROMLONLAT longitude latitude> <BYRADIUS radius " + units + " | BYBOX width height " + units + "> [ASC | DESC] [COUNT count [ANY]]"
	// GEORADIUS and GEORADIUSBYMEMBER write only with STORE or STOREDIST: their destination
	// is found after the keyword (Redis's georadiusGetKeys), so the dispatcher locks it too.
	radius := func(name string, memberForm, store bool, since, summary, doc string, h Handler) *Command {
		first, syntax := 6, "key longitude latitude radius "+units+radiusOpts
		if memberForm {
			first, syntax = 5, "key member radius "+units+radiusOpts
		}
		c := row(name, -first, FlagReadOnly, "read", since, syntax, radiusN, summary, h)
		if store {
			c.Flags, c.ACL[0] = FlagWrite|FlagDenyOOM, "write"
			c.Syntax += " [STORE key] [STOREDIST key]"
			c.KeySpecs = []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, Step: 1},
				{Flags: KSOW | KSUpdate, BeginKeyword: "STORE", Begin: first, Step: 1},
				{Flags: KSOW | KSUpdate, BeginKeyword: "STOREDIST", Begin: first, Step: 1}}
			c.GetKeys, c.GetKeysSpecs = georadiusKeys(first), []int{0, 1}
		}
		c.Doc = doc
		return c
	}
	geosearchstore := row("geosearchstore", -8, FlagWrite|FlagDenyOOM, "write", "6.2.0", "destination source"+from+" [STOREDIST]", searchN,
		"Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.",
		geosearchstoreCommand)
	geosearchstore.LastKey = 2
	geosearchstore.KeySpecs = []KeySpec{{Flags: KSOW | KSUpdate, Begin: 1, Step: 1}, {Flags: KSRO | KSAccess, Begin: 2, Step: 1}}
	geosearchstore.Doc = "7.0.0: Added support for uppercase unit names. Journaled as the resulting sorted set: DEL destination, ZADD destination score member ... (or DEL alone for an empty result)."
	geoadd := row("geoadd", -5, FlagWrite|FlagDenyOOM, "write", "3.2.0", "key [NX | XX] [CH] longitude latitude member [longitude latitude member ...]",
		"O(log(N)) for each item added, where N is the number of elements in the sorted set.",
		"Add one or more geospatial items in the geospatial index represented using a sorted set", geoaddCommand)
	geoadd.Doc = "6.2.0: Added the `CH`, `NX` and `XX` options. Journaled as the ZADD of the computed scores, as Redis propagates it."
	const storeDoc = " With STORE or STOREDIST it is journaled as the resulting sorted set: DEL key, ZADD key score member ... (or DEL alone for an empty result)."
	return []*Command{
		geoadd,
		row("geodist", -4, FlagReadOnly, "read", "3.2.0", "key member1 member2 [M | KM | FT | MI]", "O(log(N))",
			"Returns the distance between two members of a geospatial index", geodistCommand),
		row("geohash", -2, FlagReadOnly, "read", "3.2.0", "key member [member ...]",
			"O(log(N)) for each member requested, where N is the number of elements in the sorted set.",
			"Returns members of a geospatial index as standard geohash strings", geohashCommand),
		row("geopos", -2, FlagReadOnly, "read", "3.2.0", "key member [member ...]", "O(N) where N is the number of members requested.",
			"Returns longitude and latitude of members of a geospatial index", geoposCommand),
		radius("georadius", false, true, "3.2.0",
			"Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point",
			"Deprecated since 6.2.0: use GEOSEARCH and GEOSEARCHSTORE with the BYRADIUS argument. 6.2.0: Added the `ANY` option for `COUNT`. 7.0.0: Added support for uppercase unit names."+storeDoc,
			georadiusCommand),
		radius("georadiusbymember", true, true, "3.2.0",
			"Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member",
			"Deprecated since 6.2.0: use GEOSEARCH and GEOSEARCHSTORE with the BYRADIUS and FROMMEMBER arguments. 7.0.0: Added support for uppercase unit names."+storeDoc,
			georadiusbymemberCommand),
		radius("georadius_ro", false, false, "3.2.10", "A read-only variant for GEORADIUS",
			"Deprecated since 6.2.0: use GEOSEARCH with the BYRADIUS argument. 6.2.0: Added the `ANY` option for `COUNT`.",
			georadiusROCommand),
		radius("georadiusbymember_ro", true, false, "3.2.10", "A read-only variant for GEORADIUSBYMEMBER",
			"Deprecated since 6.2.0: use GEOSEARCH with the BYRADIUS and FROMMEMBER arguments.",
			georadiusbymemberROCommand),
		withDoc(row("geosearch", -7, FlagReadOnly, "read", "6.2.0", "key"+from+" [WITHCOORD] [WITHDIST] [WITHHASH]", searchN,
			"Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", geosearchCommand),
			"7.0.0: Added support for uppercase unit names."),
		geosearchstore,
	}
}

func withDoc(c *Command, doc string) *Command {
	c.Doc = doc
	return c
}

// georadiusKeys returns the key positions of GEORADIUS (first 6) or GEORADIUSBYMEMBER (first
// 5): the source; what Redis's key specs find, the argument after the first STORE and after the
// first STOREDIST searching from first (COMMAND GETKEYS); and the destination the command
// really writes, after the last STORE or STOREDIST (Redis's georadiusGetKeys), which the
// dispatcher must lock even when a line names several.
func georadiusKeys(first int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		out := []int{1}
		add := func(p int) {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		for _, kw := range []string{"store", "storedist"} {
			for i := first; i < len(args)-1; i++ {
				if EqualFold(args[i], kw) {
					add(i + 1)
					break
				}
			}
		}
		stored := -1
		for i := 5; i < len(args); i++ {
			if (EqualFold(args[i], "store") || EqualFold(args[i], "storedist")) && i+1 < len(args) {
				stored = i + 1
				i++
			}
		}
		if stored > 0 {
			add(stored)
		}
		return out
	}
}

// ---- argument helpers (Redis's extractLongLatOrReply and friends) ----

// geoLonLat parses a longitude and latitude at args i and i+1.
func geoLonLat(c *Ctx, i int) (lon, lat float64, ok bool) {
	if lon, ok = parseScore(c.Args[i]); !ok {
		c.Error(ErrNotFloat)
		return 0, 0, false
	}
	if lat, ok = parseScore(c.Args[i+1]); !ok {
		c.Error(ErrNotFloat)
		return 0, 0, false
	}
	if lon < geo.LonMin || lon > geo.LonMax || lat < geo.LatMin || lat > geo.LatMax {
		c.Error("ERR invalid longitude,latitude pair " + cFormatF(lon) + "," + cFormatF(lat))
		return 0, 0, false
	}
	return lon, lat, true
}

// cFormatF is C's printf("%f"): six decimals, inf spelled as glibc spells it.
func cFormatF(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return strconv.FormatFloat(f, 'f', 6, 64)
}

// geoUnit is extractUnitOrReply: meters per unit, or false after replying the error.
func geoUnit(c *Ctx, arg []byte) (float64, bool) {
	switch {
	case EqualFold(arg, "m"):
		return 1, true
	case EqualFold(arg, "km"):
		return 1000, true
	case EqualFold(arg, "ft"):
		return 0.3048, true
	case EqualFold(arg, "mi"):
		return 1609.34, true
	}
	c.Error("ERR unsupported unit provided. please use M, KM, FT, MI")
	return 0, false
}

// geoRadiusArg is extractDistanceOrReply: a radius at args i and its unit at i+1.
func geoRadiusArg(c *Ctx, i int, s *geo.Shape) bool {
	r, ok := parseScore(c.Args[i])
	if !ok {
		c.Error("ERR need numeric radius")
		return false
	}
	if r < 0 {
		c.Error("ERR radius cannot be negative")
		return false
	}
	s.Radius = r
	conv, ok := geoUnit(c, c.Args[i+1])
	if !ok {
		return false
	}
	s.Conversion = conv
	return true
}

// geoBoxArg is extractBoxOrReply: width, height and unit at args i, i+1 and i+2.
func geoBoxArg(c *Ctx, i int, s *geo.Shape) bool {
	w, ok := parseScore(c.Args[i])
	if !ok {
		c.Error("ERR need numeric width")
		return false
	}
	h, ok := parseScore(c.Args[i+1])
	if !ok {
		c.Error("ERR need numeric height")
		return false
	}
	if h < 0 || w < 0 {
		c.Error("ERR height or width cannot be negative")
		return false
	}
	s.Width, s.Height = w, h
	conv, ok := geoUnit(c, c.Args[i+2])
	if !ok {
		return false
	}
	s.Conversion = conv
	return true
}

// geoMemberPos is longLatFromMember: the position of a member of z.
func geoMemberPos(z *types.ZSet, member []byte) (lon, lat float64, ok bool) {
	score, ok := z.Score(argStr(member))
	if !ok {
		return 0, 0, false
	}
	lon, lat = geo.DecodeScore(score)
	return lon, lat, true
}

// ---- GEOADD ----

// geoaddCommand is ZADD of the members' geohashes, as Redis runs it: the options NX, XX and
// CH pass through, and the effect journaled is that ZADD.
func geoaddCommand(c *Ctx) {
	longIdx := 2
	var nx, xx bool
	for ; longIdx < len(c.Args); longIdx++ {
		switch {
		case c.ArgIs(longIdx, "nx"):
			nx = true
		case c.ArgIs(longIdx, "xx"):
			xx = true
		case c.ArgIs(longIdx, "ch"):
		default:
			goto options
		}
	}
options:
	if (len(c.Args)-longIdx)%3 != 0 || (xx && nx) {
		c.Syntax()
		return
	}
	elements := (len(c.Args) - longIdx) / 3
	zargs := make([][]byte, 0, longIdx+2*elements)
	zargs = append(zargs, effZAdd)
	zargs = append(zargs, c.Args[1:longIdx]...)
	for i := 0; i < elements; i++ {
		lon, lat, ok := geoLonLat(c, longIdx+3*i)
		if !ok {
			return
		}
		bits, _ := geo.Score(lon, lat)
		zargs = append(zargs, strconv.AppendUint(nil, bits, 10), c.Args[longIdx+3*i+2])
	}
	orig := c.Args
	c.Args = zargs
	zaddGeneric(c, false)
	c.Args = orig
	if c.changed && !c.journaled {
		c.Emit(c.DB.ID, zargs...)
	}
}

// ---- GEOPOS, GEOHASH, GEODIST ----

// geoMembers is the loop GEOPOS and GEOHASH share: the reply array, then each member's score
// handed to reply (found false for a member, or a key, that does not exist).
func geoMembers(c *Ctx, reply func(score float64, found bool)) {
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		var score float64
		found := false
		if z != nil {
			score, found = z.Score(argStr(m))
		}
		reply(score, found)
	}
}

func geoposCommand(c *Ctx) {
	var buf []byte
	geoMembers(c, func(score float64, found bool) {
		if !found {
			c.W.NullArray()
			return
		}
		lon, lat := geo.DecodeScore(score)
		c.W.Array(2)
		buf = geo.AppendCoord(buf[:0], lon)
		c.W.DoubleText(string(buf))
		buf = geo.AppendCoord(buf[:0], lat)
		c.W.DoubleText(string(buf))
	})
}

func geohashCommand(c *Ctx) {
	var buf []byte
	geoMembers(c, func(score float64, found bool) {
		if !found {
			c.W.Null()
			return
		}
		buf = geo.AppendHashString(buf[:0], score)
		c.W.Bulk(buf)
	})
}

func geodistCommand(c *Ctx) {
	toMeter := 1.0
	switch {
	case len(c.Args) == 5:
		u, ok := geoUnit(c, c.Args[4])
		if !ok {
			return
		}
		toMeter = u
	case len(c.Args) > 5:
		c.Syntax()
		return
	}
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil {
		c.W.Null()
		return
	}
	s1, ok1 := z.Score(argStr(c.Args[2]))
	s2, ok2 := z.Score(argStr(c.Args[3]))
	if !ok1 || !ok2 {
		c.W.Null()
		return
	}
	lon1, lat1 := geo.DecodeScore(s1)
	lon2, lat2 := geo.DecodeScore(s2)
	c.W.Bulk(geo.AppendDistance(nil, geo.Distance(lon1, lat1, lon2, lat2)/toMeter))
}

// ---- GEORADIUS, GEORADIUSBYMEMBER, GEOSEARCH, GEOSEARCHSTORE ----

// The variants of georadiusGeneric, as Redis's flags.
const (
	geoFromCoords  = 1 << iota // GEORADIUS: the centre is a longitude and latitude
	geoFromMember              // GEORADIUSBYMEMBER: the centre is a member
	geoNoStore                 // the _RO variants: no STORE or STOREDIST
	geoSearch                  // GEOSEARCH's arguments
	geoSearchStore             // GEOSEARCHSTORE: a destination first, STOREDIST alone
)

func georadiusCommand(c *Ctx)           { georadiusGeneric(c, 1, geoFromCoords) }
func georadiusbymemberCommand(c *Ctx)   { georadiusGeneric(c, 1, geoFromMember) }
func georadiusROCommand(c *Ctx)         { georadiusGeneric(c, 1, geoFromCoords|geoNoStore) }
func georadiusbymemberROCommand(c *Ctx) { georadiusGeneric(c, 1, geoFromMember|geoNoStore) }
func geosearchCommand(c *Ctx)           { georadiusGeneric(c, 1, geoSearch) }
func geosearchstoreCommand(c *Ctx)      { georadiusGeneric(c, 2, geoSearch|geoSearchStore) }

// geoPoint is one member found by a search.
type geoPoint struct {
	lon, lat, dist, score float64
	member                string
}

// geoSort orders the points by distance, ascending or descending, as Redis does: the whole
// result with the C library's qsort, which glibc implements as a stable merge sort (equal
// distances keep the order the search found them in), or, when only the first n are
// returned, with Redis's partial quicksort, whose order of ties geo.PartialSort reproduces.
func geoSort(points []geoPoint, desc bool, n int) {
	cmp := func(a, b *geoPoint) int {
		r := 0
		switch {
		case a.dist > b.dist:
			r = 1
		case a.dist < b.dist:
			r = -1
		}
		if desc {
			r = -r
		}
		return r
	}
	if n == len(points) {
		slices.SortStableFunc(points, func(a, b geoPoint) int { return cmp(&a, &b) })
		return
	}
	geo.PartialSort(points, cmp, 0, n-1)
}

// geoSearchShape collects the members of z inside the shape, box by box in Redis's order
// (membersOfAllNeighbors), stopping at limit points when limit > 0 (COUNT ... ANY).
func geoSearchShape(z *types.ZSet, s *geo.Shape, limit int) []geoPoint {
	boxes := s.SearchBoxes()
	var out []geoPoint
	last := 0
	for i, h := range boxes {
		if h.IsZero() {
			continue
		}
		// With huge radii neighbouring boxes can be the same box: each is scanned once. As in
		// Redis, the comparison is with the last box scanned other than the centre.
		if last != 0 && h == boxes[last] {
			continue
		}
		if len(out) > 0 && limit > 0 && len(out) >= limit {
			break
		}
		lo, hi := geo.ScoreRange(h)
		out = geoBoxMembers(z, float64(lo), float64(hi), s, out, limit)
		last = i
	}
	return out
}

// geoBoxMembers appends the members of z whose scores are in [lo, hi) and that lie inside the
// shape.
func geoBoxMembers(z *types.ZSet, lo, hi float64, s *geo.Shape, out []geoPoint, limit int) []geoPoint {
	r := types.ScoreRange{Min: lo, Max: hi, MaxEx: true}
	rank := z.FirstInScore(&r)
	if rank < 0 {
		return out
	}
	z.Walk(rank, false, func(member string, score float64) bool {
		if !(score < hi) {
			return false
		}
		lon, lat := geo.DecodeScore(score)
		if d, ok := s.Contains(lon, lat); ok {
			// Packed sets hand out members that alias their bytes: keep copies.
			out = append(out, geoPoint{lon: lon, lat: lat, dist: d, score: score, member: strings.Clone(member)})
		}
		return !(len(out) > 0 && limit > 0 && len(out) >= limit)
	})
	return out
}

// georadiusGeneric is Redis's georadiusGeneric: argument parsing in Redis's order (so the
// same malformed line gets the same error), the search, then the reply or the stored result.
func georadiusGeneric(c *Ctx, srcIdx int, flags int) {
	var storeKey []byte
	storeDist := false
	_, z, ok := zsetRead(c, c.Args[srcIdx])
	if !ok {
		return
	}
	var shape geo.Shape
	var baseArgs int
	switch {
	case flags&geoFromCoords != 0:
		baseArgs = 6
		if shape.Lon, shape.Lat, ok = geoLonLat(c, 2); !ok {
			return
		}
		if !geoRadiusArg(c, 4, &shape) {
			return
		}
	case flags&geoFromMember != 0 && z == nil:
		// No source: parse the options anyway, the reply depends on STORE.
		baseArgs = 5
	case flags&geoFromMember != 0:
		baseArgs = 5
		if shape.Lon, shape.Lat, ok = geoMemberPos(z, c.Args[2]); !ok {
			c.Error("ERR could not decode requested zset member")
			return
		}
		if !geoRadiusArg(c, 3, &shape) {
			return
		}
	default:
		baseArgs = 2
		if flags&geoSearchStore != 0 {
			baseArgs = 3
			storeKey = c.Args[1]
		}
	}

	var withDist, withHash, withCoord, fromMember, fromLonLat, byRadius, byBox, anyOpt bool
	sortDir := 0 // 0 none, 1 ascending, 2 descending
	var count int64
	search := flags&geoSearch != 0
	remaining := len(c.Args) - baseArgs
	for i := 0; i < remaining; i++ {
		arg := c.Args[baseArgs+i]
		switch {
		case EqualFold(arg, "withdist"):
			withDist = true
		case EqualFold(arg, "withhash"):
			withHash = true
		case EqualFold(arg, "withcoord"):
			withCoord = true
		case EqualFold(arg, "any"):
			anyOpt = true
		case EqualFold(arg, "asc"):
			sortDir = 1
		case EqualFold(arg, "desc"):
			sortDir = 2
		case EqualFold(arg, "count") && i+1 < remaining:
			if count, ok = c.Int(baseArgs + i + 1); !ok {
				return
			}
			if count <= 0 {
				c.Error("ERR COUNT must be > 0")
				return
			}
			i++
		case (EqualFold(arg, "store") || EqualFold(arg, "storedist")) && i+1 < remaining && flags&geoNoStore == 0 && !search:
			storeKey = c.Args[baseArgs+i+1]
			storeDist = EqualFold(arg, "storedist")
			i++
		case EqualFold(arg, "storedist") && search && flags&geoSearchStore != 0:
			storeDist = true
		case EqualFold(arg, "frommember") && i+1 < remaining && search && !fromLonLat:
			if z != nil {
				if shape.Lon, shape.Lat, ok = geoMemberPos(z, c.Args[baseArgs+i+1]); !ok {
					c.Error("ERR could not decode requested zset member")
					return
				}
			}
			fromMember = true
			i++
		case EqualFold(arg, "fromlonlat") && i+2 < remaining && search && !fromMember:
			if shape.Lon, shape.Lat, ok = geoLonLat(c, baseArgs+i+1); !ok {
				return
			}
			fromLonLat = true
			i += 2
		case EqualFold(arg, "byradius") && i+2 < remaining && search && !byBox:
			if !geoRadiusArg(c, baseArgs+i+1, &shape) {
				return
			}
			shape.Box, byRadius = false, true
			i += 2
		case EqualFold(arg, "bybox") && i+3 < remaining && search && !byRadius:
			if !geoBoxArg(c, baseArgs+i+1, &shape) {
				return
			}
			shape.Box, byBox = true, true
			i += 3
		default:
			c.Syntax()
			return
		}
	}

	if storeKey != nil && (withDist || withHash || withCoord) {
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		c.Error("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		return
	}
	if search && !(fromMember || fromLonLat) {
		c.Error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(c.Args[0]))
		return
	}
	if search && !(byRadius || byBox) {
		c.Error("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(c.Args[0]))
		return
	}
	if anyOpt && count == 0 {
		c.Error("ERR the ANY argument requires COUNT argument")
		return
	}

	if z == nil {
		if storeKey != nil {
			geoStore(c, storeKey, nil, 1, false, search)
		} else {
			c.W.Array(0)
		}
		return
	}

	// COUNT without an order means the nearest ones (but not with ANY, which takes the first
	// found).
	if count != 0 && sortDir == 0 && !anyOpt {
		sortDir = 1
	}
	limit := 0
	if anyOpt {
		limit = int(min(count, math.MaxInt32))
	}
	points := geoSearchShape(z, &shape, limit)
	if len(points) == 0 && storeKey == nil {
		c.W.Array(0)
		return
	}
	returned := len(points)
	if count != 0 && int64(returned) > count {
		returned = int(count)
	}
	if sortDir != 0 {
		geoSort(points, sortDir == 2, returned)
	}
	points = points[:returned]
	if storeKey == nil {
		geoReplyPoints(c, points, shape.Conversion, withDist, withHash, withCoord)
		return
	}
	geoStore(c, storeKey, points, shape.Conversion, storeDist, search)
}

// geoReplyPoints replies the members found, each with the options asked for (distance,
// geohash score, coordinates) in that order, whatever the order of the options.
func geoReplyPoints(c *Ctx, points []geoPoint, conversion float64, withDist, withHash, withCoord bool) {
	opts := 0
	for _, b := range []bool{withDist, withHash, withCoord} {
		if b {
			opts++
		}
	}
	c.W.Array(len(points))
	var buf []byte
	for i := range points {
		p := &points[i]
		if opts > 0 {
			c.W.Array(opts + 1)
		}
		c.W.BulkString(p.member)
		if withDist {
			buf = geo.AppendDistance(buf[:0], p.dist/conversion)
			c.W.Bulk(buf)
		}
		if withHash {
			c.W.Int(int64(p.score)) // scores in the searched ranges are below 2^52
		}
		if withCoord {
			c.W.Array(2)
			buf = geo.AppendCoord(buf[:0], p.lon)
			c.W.DoubleText(string(buf))
			buf = geo.AppendCoord(buf[:0], p.lat)
			c.W.DoubleText(string(buf))
		}
	}
}

// geoStore replaces key with a sorted set of the points, scored by geohash or, with
// STOREDIST, by distance in the search's unit; an empty result deletes key. The effect is the
// resulting set (DEL key, ZADD key score member ... as one MULTI/EXEC block), or DEL key.
func geoStore(c *Ctx, key []byte, points []geoPoint, conversion float64, storeDist, search bool) {
	// Only the destination changes, whichever other STORE or STOREDIST the line also names
	// (the dispatcher would tell WATCH about every key the key specs find).
	c.touched = true
	if len(points) == 0 {
		if c.DB.Delete(key, c.Now) {
			c.Dirty(1)
			c.notify(evGeneric, "del", key)
			c.touchIn(c.DB, key)
			c.emitDel(key)
		}
		c.W.Int(0)
		return
	}
	maxLen := 0
	for i := range points {
		maxLen = max(maxLen, len(points[i].member))
	}
	z := types.NewZSetFor(len(points), maxLen)
	scores := make([]float64, len(points))
	for i := range points {
		scores[i] = points[i].score
		if storeDist {
			scores[i] = points[i].dist / conversion
		}
		z.Set(points[i].member, scores[i])
	}
	c.DB.Set(key, z.Value(), 0, false, c.Now)
	c.Dirty(int64(len(points)))
	ev := "georadiusstore"
	if search {
		ev = "geosearchstore"
	}
	c.notify(evZSet, ev, key)
	c.markReady(key)
	c.touchIn(c.DB, key)
	if c.Store.Journal != nil {
		own := c.tx == nil
		if own {
			c.tx = &txJournal{out: c.Store.Journal}
		}
		c.Emit(c.DB.ID, effDel, key)
		args := make([][]byte, 0, 2+2*len(points))
		args = append(args, effZAdd, key)
		for i := range points {
			args = append(args, geoScoreEffect(scores[i]), []byte(points[i].member))
		}
		c.Emit(c.DB.ID, args...)
		if own {
			c.tx.finish()
			c.tx = nil
		}
	}
	c.W.Int(int64(len(points)))
}

// geoScoreEffect formats a stored score for the journal: geohash scores as the integers they
// are (as GEOADD's ZADD carries them), distances in the shortest form that parses back.
func geoScoreEffect(f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.AppendInt(nil, int64(f), 10)
	}
	return appendScoreEffect(nil, f)
}

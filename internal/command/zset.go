package command

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/hotkv/hotkv/internal/glob"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Sorted sets (types.ZSet): a packed encoding while small, a skip list with a member index
// beyond zset-max-listpack-entries members or zset-max-listpack-value bytes. Scores are C
// doubles as in Redis (float64), parsed as strtod parses them and replied with %.17g (RESP3
// doubles). The deterministic writes are journaled as given; ZINCRBY and ZADD INCR as the ZADD
// of the resulting score, and ZPOPMIN, ZPOPMAX and ZMPOP as the ZREM of what they popped
// (effects.go). BZPOPMIN, BZPOPMAX and BZMPOP are not implemented yet.

func zsetCommands() []*Command {
	row := func(name string, arity int, flags Flag, acl string, ks KeySpecFlag, since, syntax, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{acl, "sortedset", aclSpeed(flags)},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(ks), Group: "sorted-set", Since: since,
			Syntax: syntax, Complexity: complexity, Summary: summary, Handler: h}
	}
	// numkeys commands: the keys follow a count, as Redis's keynum key specs say; the
	// dispatcher locks them through the spec (Command.KeyIndexes).
	keynum := func(name string, arity int, flags Flag, acl string, store bool, since, syntax, complexity, summary string, h Handler) *Command {
		c := &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{acl, "sortedset", aclSpeed(flags)},
			Group: "sorted-set", Since: since, Syntax: syntax, Complexity: complexity, Summary: summary, Handler: h}
		if store {
			c.FirstKey, c.LastKey, c.Step = 1, 1, 1
			c.KeySpecs = []KeySpec{{Flags: KSOW | KSUpdate, Begin: 1, Step: 1},
				{Flags: KSRO | KSAccess, Begin: 2, FirstKey: 1, Step: 1}}
		} else {
			c.KeySpecs = []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, FirstKey: 1, Step: 1}}
		}
		return c
	}
	const wf, rf = FlagWrite | FlagDenyOOM | FlagFast, FlagReadOnly | FlagFast
	const rangeN = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements returned."
	const removedN = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements removed by the operation."
	const byN = "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements being returned. If M is constant (e.g. always asking for the first 10 elements with LIMIT), you can consider it O(log(N))."
	const unionN = "O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set."
	const interN = "O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, K being the number of input sorted sets and M being the number of elements in the resulting sorted set."
	const diffN = "O(L + (N-K)log(N)) worst case where L is the total number of elements in all the sets, N is the size of the first set, and K is the size of the result set."
	const popN = "O(log(N)*M) with N being the number of elements in the sorted set, and M being the number of elements popped."
	const setOpts = " [WEIGHTS weight [weight ...]] [AGGREGATE <SUM | MIN | MAX>]"

	deprecated := func(c *Command, by string) *Command {
		c.Doc = "Deprecated since 6.2.0: use ZRANGE with " + by + "."
		return c
	}
	zrandmember := row("zrandmember", -2, FlagReadOnly, "read", KSRO|KSAccess, "6.2.0", "key [count [WITHSCORES]]",
		"O(N) where N is the number of elements returned", "Get one or multiple random elements from a sorted set", zrandmemberCommand)
	zrandmember.Tips = []string{"nondeterministic_output"}
	zscan := row("zscan", -3, FlagReadOnly, "read", KSRO|KSAccess, "2.8.0", "key cursor [MATCH pattern] [COUNT count]",
		"O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
		"Incrementally iterate sorted sets elements and associated scores", zscanCommand)
	zscan.Tips = []string{"nondeterministic_output"}
	zincrby := row("zincrby", 4, wf, "write", KSRW|KSAccess|KSUpdate, "1.2.0", "key increment member",
		"O(log(N)) where N is the number of elements in the sorted set.", "Increment the score of a member in a sorted set", zincrbyCommand)
	zincrby.Doc = "Journaled as the ZADD of the resulting score."
	zadd := row("zadd", -4, wf, "write", KSRW|KSUpdate, "1.2.0", "key [NX | XX] [GT | LT] [CH] [INCR] score member [score member ...]",
		"O(log(N)) for each item added, where N is the number of elements in the sorted set.",
		"Add one or more members to a sorted set, or update its score if it already exists", zaddCommand)
	zadd.Doc = "With INCR it is journaled as the ZADD of the resulting score."
	zrangestore := &Command{Name: "zrangestore", Arity: -5, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "sortedset", "slow"},
		FirstKey: 1, LastKey: 2, Step: 1,
		KeySpecs: []KeySpec{{Flags: KSOW | KSUpdate, Begin: 1, Step: 1}, {Flags: KSRO | KSAccess, Begin: 2, Step: 1}},
		Group:    "sorted-set", Since: "6.2.0", Syntax: "dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset count]",
		Complexity: "O(log(N)+M) with N being the number of elements in the sorted set and M the number of elements stored into the destination key.",
		Summary:    "Store a range of members from sorted set into another key", Handler: zrangestoreCommand}
	zmpop := &Command{Name: "zmpop", Arity: -4, Flags: FlagWrite, ACL: []string{"write", "sortedset", "slow"},
		KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, FirstKey: 1, Step: 1}},
		Group:    "sorted-set", Since: "7.0.0", Syntax: "numkeys key [key ...] <MIN | MAX> [COUNT count]",
		Complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
		Summary:    "Remove and return members with scores in a sorted set", Doc: "Journaled as the ZREM of the members it popped.", Handler: zmpopCommand}
	zpopmin := row("zpopmin", -2, FlagWrite|FlagFast, "write", KSRW|KSAccess|KSDelete, "5.0.0", "key [count]", popN,
		"Remove and return members with the lowest scores in a sorted set", zpopminCommand)
	zpopmax := row("zpopmax", -2, FlagWrite|FlagFast, "write", KSRW|KSAccess|KSDelete, "5.0.0", "key [count]", popN,
		"Remove and return members with the highest scores in a sorted set", zpopmaxCommand)
	zpopmin.Doc, zpopmax.Doc = "Journaled as the ZREM of the members it popped.", "Journaled as the ZREM of the members it popped."
	return []*Command{
		zadd, zincrby,
		row("zrem", -3, FlagWrite|FlagFast, "write", KSRW|KSDelete, "1.2.0", "key member [member ...]",
			"O(M*log(N)) with N being the number of elements in the sorted set and M the number of elements to be removed.",
			"Remove one or more members from a sorted set", zremCommand),
		row("zcard", 2, rf, "read", KSRO, "1.2.0", "key", "O(1)", "Get the number of members in a sorted set", zcardCommand),
		row("zcount", 4, rf, "read", KSRO|KSAccess, "2.0.0", "key min max", "O(log(N)) with N being the number of elements in the sorted set.",
			"Count the members in a sorted set with scores within the given values", zcountCommand),
		row("zlexcount", 4, rf, "read", KSRO|KSAccess, "2.8.9", "key min max", "O(log(N)) with N being the number of elements in the sorted set.",
			"Count the number of members in a sorted set between a given lexicographical range", zlexcountCommand),
		row("zscore", 3, rf, "read", KSRO|KSAccess, "1.2.0", "key member", "O(1)", "Get the score associated with the given member in a sorted set", zscoreCommand),
		row("zmscore", -3, rf, "read", KSRO|KSAccess, "6.2.0", "key member [member ...]", "O(N) where N is the number of members being requested.",
			"Get the score associated with the given members in a sorted set", zmscoreCommand),
		row("zrank", 3, rf, "read", KSRO|KSAccess, "2.0.0", "key member", "O(log(N))", "Determine the index of a member in a sorted set", zrankCommand),
		row("zrevrank", 3, rf, "read", KSRO|KSAccess, "2.0.0", "key member", "O(log(N))",
			"Determine the index of a member in a sorted set, with scores ordered from high to low", zrevrankCommand),
		row("zrange", -4, FlagReadOnly, "read", KSRO|KSAccess, "1.2.0", "key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count] [WITHSCORES]",
			rangeN, "Return a range of members in a sorted set", zrangeCommand),
		zrangestore,
		deprecated(row("zrevrange", -4, FlagReadOnly, "read", KSRO|KSAccess, "1.2.0", "key start stop [WITHSCORES]", rangeN,
			"Return a range of members in a sorted set, by index, with scores ordered from high to low", zrevrangeCommand), "the REV argument"),
		deprecated(row("zrangebyscore", -4, FlagReadOnly, "read", KSRO|KSAccess, "1.0.5", "key min max [WITHSCORES] [LIMIT offset count]", byN,
			"Return a range of members in a sorted set, by score", zrangebyscoreCommand), "the BYSCORE argument"),
		deprecated(row("zrevrangebyscore", -4, FlagReadOnly, "read", KSRO|KSAccess, "2.2.0", "key max min [WITHSCORES] [LIMIT offset count]", byN,
			"Return a range of members in a sorted set, by score, with scores ordered from high to low", zrevrangebyscoreCommand), "the REV and BYSCORE arguments"),
		deprecated(row("zrangebylex", -4, FlagReadOnly, "read", KSRO|KSAccess, "2.8.9", "key min max [LIMIT offset count]", byN,
			"Return a range of members in a sorted set, by lexicographical range", zrangebylexCommand), "the BYLEX argument"),
		deprecated(row("zrevrangebylex", -4, FlagReadOnly, "read", KSRO|KSAccess, "2.8.9", "key max min [LIMIT offset count]", byN,
			"Return a range of members in a sorted set, by lexicographical range, ordered from higher to lower strings.", zrevrangebylexCommand), "the REV and BYLEX arguments"),
		row("zremrangebyrank", 4, FlagWrite, "write", KSRW|KSDelete, "2.0.0", "key start stop", removedN,
			"Remove all members in a sorted set within the given indexes", zremrangebyrankCommand),
		row("zremrangebyscore", 4, FlagWrite, "write", KSRW|KSDelete, "1.2.0", "key min max", removedN,
			"Remove all members in a sorted set within the given scores", zremrangebyscoreCommand),
		row("zremrangebylex", 4, FlagWrite, "write", KSRW|KSDelete, "2.8.9", "key min max", removedN,
			"Remove all members in a sorted set between the given lexicographical range", zremrangebylexCommand),
		zpopmin, zpopmax, zmpop, zrandmember, zscan,
		keynum("zunion", -3, FlagReadOnly, "read", false, "6.2.0", "numkeys key [key ...]"+setOpts+" [WITHSCORES]", unionN,
			"Add multiple sorted sets", zunionCommand),
		keynum("zinter", -3, FlagReadOnly, "read", false, "6.2.0", "numkeys key [key ...]"+setOpts+" [WITHSCORES]", interN,
			"Intersect multiple sorted sets", zinterCommand),
		keynum("zdiff", -3, FlagReadOnly, "read", false, "6.2.0", "numkeys key [key ...] [WITHSCORES]", diffN,
			"Subtract multiple sorted sets", zdiffCommand),
		keynum("zunionstore", -4, FlagWrite|FlagDenyOOM, "write", true, "2.0.0", "destination numkeys key [key ...]"+setOpts,
			"O(N)+O(M log(M)) with N being the sum of the sizes of the input sorted sets, and M being the number of elements in the resulting sorted set.",
			"Add multiple sorted sets and store the resulting sorted set in a new key", zunionstoreCommand),
		keynum("zinterstore", -4, FlagWrite|FlagDenyOOM, "write", true, "2.0.0", "destination numkeys key [key ...]"+setOpts, interN,
			"Intersect multiple sorted sets and store the resulting sorted set in a new key", zinterstoreCommand),
		keynum("zdiffstore", -4, FlagWrite|FlagDenyOOM, "write", true, "6.2.0", "destination numkeys key [key ...]", diffN,
			"Subtract multiple sorted sets and store the resulting sorted set in a new key", zdiffstoreCommand),
		keynum("zintercard", -3, FlagReadOnly, "read", false, "7.0.0", "numkeys key [key ...] [LIMIT limit]",
			"O(N*K) worst case with N being the smallest input sorted set, K being the number of input sorted sets.",
			"Intersect multiple sorted sets and return the cardinality of the result", zintercardCommand),
	}
}

// ---- lookups ----

// zsetRead returns key's sorted set for a read, replying WRONGTYPE for another type; nil with
// ok for a missing key.
func zsetRead(c *Ctx, key []byte) (e *store.Entry, z *types.ZSet, ok bool) {
	if e = c.LookupRead(key); e == nil {
		return nil, nil, true
	}
	if e.Val.Kind != store.KindZSet {
		c.WrongType()
		return nil, nil, false
	}
	return e, e.Val.Obj().(*types.ZSet), true
}

// zsetWrite is zsetRead for a write (no keyspace hit statistics).
func zsetWrite(c *Ctx, key []byte) (e *store.Entry, z *types.ZSet, ok bool) {
	if e = c.Lookup(key); e == nil {
		return nil, nil, true
	}
	if e.Val.Kind != store.KindZSet {
		c.WrongType()
		return nil, nil, false
	}
	return e, e.Val.Obj().(*types.ZSet), true
}

// zsetStore replaces key with z (any old value and its TTL go, as Redis's setKey does), or
// deletes key when z is empty; it replies the new length and counts the change.
//
// Its keyspace event is the command's name (zunionstore, zrangestore ...), as in Redis.
func zsetStore(c *Ctx, key []byte, z *types.ZSet) {
	if z == nil || z.Len() == 0 {
		if c.DB.Delete(key, c.Now) {
			c.Dirty(1)
			c.notify(evGeneric, "del", key)
		}
		c.W.Int(0)
		return
	}
	c.DB.Set(key, z.Value(), 0, false, c.Now)
	c.Dirty(1)
	c.notify(evZSet, c.Cmd.Name, key)
	c.markReady(key)
	c.W.Int(int64(z.Len()))
}

// zsetPopped sends the events of members popped from a sorted set (zpopmin or zpopmax),
// deleting the key when the set is now empty.
func (c *Ctx) zsetPopped(db *store.DB, e *store.Entry, key []byte, z *types.ZSet, max bool) {
	ev := "zpopmin"
	if max {
		ev = "zpopmax"
	}
	c.notifyIn(db.ID, evZSet, ev, key)
	if z.Len() == 0 {
		db.Remove(e)
		c.notifyIn(db.ID, evGeneric, "del", key)
	}
}

// ---- scores ----

func isCSpace(b byte) bool { return b == ' ' || (b >= '\t' && b <= '\r') }

// strtod is C's strtod on s, as glibc parses: leading white space, a sign, then "inf",
// "infinity", "nan" (with an optional "(chars)"), a hexadecimal number ("0x1.8p3") or a
// decimal one. It returns the value, how many bytes it read (0 when nothing converted) and
// whether the result overflowed, or underflowed to zero (C's ERANGE cases Redis rejects).
// Decimal and hexadecimal numbers are rounded correctly, as glibc does.
func strtod(s []byte) (v float64, n int, erange bool) {
	i := 0
	for i < len(s) && isCSpace(s[i]) {
		i++
	}
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	word := func(w string) bool {
		return len(s)-i >= len(w) && EqualFold(s[i:i+len(w)], w)
	}
	switch {
	case word("infinity"):
		return sign(math.Inf(1)), i + 8, false
	case word("inf"):
		return sign(math.Inf(1)), i + 3, false
	case word("nan"):
		i += 3
		if i < len(s) && s[i] == '(' {
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= '0' && s[j] <= '9' || s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				i = j + 1
			}
		}
		return math.NaN(), i, false
	}
	isHex := func(b byte) bool { return b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'f' }
	if len(s)-i >= 2 && s[i] == '0' && s[i+1]|0x20 == 'x' &&
		(len(s)-i > 2 && isHex(s[i+2]) || len(s)-i > 3 && s[i+2] == '.' && isHex(s[i+3])) {
		return strtodHex(s, i+2, neg)
	}
	// Decimal: digits with at most one point, at least one digit, then an optional exponent.
	start, digits, nonzero, dot := i, 0, false, false
	for ; i < len(s); i++ {
		switch ch := s[i]; {
		case ch >= '0' && ch <= '9':
			digits++
			nonzero = nonzero || ch != '0'
		case ch == '.' && !dot:
			dot = true
		default:
			goto mantissaDone
		}
	}
mantissaDone:
	if digits == 0 {
		return 0, 0, false
	}
	if i < len(s) && s[i]|0x20 == 'e' {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			i = j
		}
	}
	text := string(s[start:i])
	if len(text) > 0 && text[0] == '.' {
		text = "0" + text // ParseFloat wants a digit before the point
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !math.IsInf(f, 0) {
		// An exponent too long for ParseFloat: far beyond the range either way.
		f = 0
		if e := bytesIndexE(text); e >= 0 && text[e+1] != '-' {
			f = math.Inf(1)
		}
	}
	erange = math.IsInf(f, 0) || (f == 0 && nonzero)
	return sign(f), i, erange
}

func bytesIndexE(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i]|0x20 == 'e' {
			return i
		}
	}
	return -1
}

// strtodHex reads the hexadecimal number after "0x" at s[i:].
func strtodHex(s []byte, i int, neg bool) (float64, int, bool) {
	start, nonzero, dot := i, false, false
	for ; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch >= '0' && ch <= '9' || ch|0x20 >= 'a' && ch|0x20 <= 'f':
			nonzero = nonzero || ch != '0'
		case ch == '.' && !dot:
			dot = true
		default:
			goto done
		}
	}
done:
	mant := string(s[start:i])
	exp := int64(0)
	if i < len(s) && s[i]|0x20 == 'p' {
		j := i + 1
		eneg := false
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			eneg = s[j] == '-'
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			for ; j < len(s) && s[j] >= '0' && s[j] <= '9'; j++ {
				if exp < 1e6 {
					exp = exp*10 + int64(s[j]-'0')
				}
			}
			if eneg {
				exp = -exp
			}
			i = j
		}
	}
	if mant[0] == '.' {
		mant = "0" + mant
	}
	f, _ := strconv.ParseFloat("0x"+mant+"p"+strconv.FormatInt(exp, 10), 64)
	erange := math.IsInf(f, 0) || (f == 0 && nonzero)
	if neg {
		f = -f
	}
	return f, i, erange
}

// parseScore is Redis's string2d (getDoubleFromObject): the whole argument must be a number,
// without leading space; overflow, underflow to zero and NaN are errors; inf is fine.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || isCSpace(b[0]) {
		return 0, false
	}
	v, n, erange := strtod(b)
	if n != len(b) || math.IsNaN(v) || (erange && (math.IsInf(v, 0) || v == 0)) {
		return 0, false
	}
	return v, true
}

// parseScoreBound is one end of zslParseRange: "(" makes it exclusive, then strtod must stop
// at the end of the argument (or at a NUL byte, where C stops reading) and not give NaN.
// Leading spaces, an empty number (0) and overflow to infinity pass, as in Redis.
func parseScoreBound(b []byte) (v float64, ex bool, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		ex, b = true, b[1:]
	}
	v, n, _ := strtod(b)
	if n < len(b) && b[n] != 0 || math.IsNaN(v) {
		return 0, false, false
	}
	return v, ex, true
}

func parseScoreRange(c *Ctx, minArg, maxArg []byte) (r types.ScoreRange, ok bool) {
	var okMin, okMax bool
	r.Min, r.MinEx, okMin = parseScoreBound(minArg)
	r.Max, r.MaxEx, okMax = parseScoreBound(maxArg)
	if !okMin || !okMax {
		c.Error("ERR min or max is not a float")
		return r, false
	}
	return r, true
}

// parseLexBound is zslParseLexRangeItem: "-", "+", "(value" or "[value".
func parseLexBound(b []byte) (types.LexBound, bool) {
	if len(b) == 0 {
		return types.LexBound{}, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) > 1 && b[1] != 0 {
			return types.LexBound{}, false
		}
		if b[0] == '+' {
			return types.LexBound{Inf: 1, Ex: true}, true
		}
		return types.LexBound{Inf: -1, Ex: true}, true
	case '(':
		return types.LexBound{Value: string(b[1:]), Ex: true}, true
	case '[':
		return types.LexBound{Value: string(b[1:])}, true
	}
	return types.LexBound{}, false
}

func parseLexRange(c *Ctx, minArg, maxArg []byte) (r types.LexRange, ok bool) {
	var okMin, okMax bool
	r.Min, okMin = parseLexBound(minArg)
	r.Max, okMax = parseLexBound(maxArg)
	if !okMin || !okMax {
		c.Error("ERR min or max not valid string range item")
		return r, false
	}
	return r, true
}

// appendScoreEffect formats a score for an effect so that parsing it gives the same float64.
func appendScoreEffect(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, 64)
}

// appendListpackScore is the text a packed sorted set holds for a score, which ZSCAN returns:
// an integer when the score is one within ±2^62 (Redis's double2ll), else %.17g.
func appendListpackScore(dst []byte, f float64) []byte {
	if f == math.Trunc(f) && f >= -4611686018427387904 && f <= 4611686018427387904 {
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return resp.AppendDouble(dst, f)
}

// ---- replies ----

type zpair struct {
	m string
	s float64
}

// zreplyPairs replies members, with their scores when withScores: flat in RESP2, pairs in
// RESP3, as Redis's ZRANGE does.
func zreplyPairs(c *Ctx, items []zpair, withScores bool) {
	if withScores && c.W.Proto < 3 {
		c.W.Array(2 * len(items))
	} else {
		c.W.Array(len(items))
	}
	for _, it := range items {
		if withScores && c.W.Proto >= 3 {
			c.W.Array(2)
		}
		c.W.BulkString(it.m)
		if withScores {
			c.W.Double(it.s)
		}
	}
}

// ---- ZADD, ZINCRBY, ZREM ----

var (
	effZAdd = []byte("ZADD")
	effZRem = []byte("ZREM")
)

func zaddCommand(c *Ctx)    { zaddGeneric(c, false) }
func zincrbyCommand(c *Ctx) { zaddGeneric(c, true) }

// zaddGeneric is Redis's zaddGenericCommand, for ZADD and ZINCRBY (which is ZADD INCR and, as
// in Redis, goes through the same option parsing).
func zaddGeneric(c *Ctx, incr bool) {
	var nx, xx, gt, lt, ch bool
	scoreIdx := 2
	for ; scoreIdx < len(c.Args); scoreIdx++ {
		switch {
		case c.ArgIs(scoreIdx, "nx"):
			nx = true
		case c.ArgIs(scoreIdx, "xx"):
			xx = true
		case c.ArgIs(scoreIdx, "ch"):
			ch = true
		case c.ArgIs(scoreIdx, "incr"):
			incr = true
		case c.ArgIs(scoreIdx, "gt"):
			gt = true
		case c.ArgIs(scoreIdx, "lt"):
			lt = true
		default:
			goto options
		}
	}
options:
	elements := len(c.Args) - scoreIdx
	if elements%2 != 0 || elements == 0 {
		c.Syntax()
		return
	}
	elements /= 2
	if nx && xx {
		c.Error("ERR XX and NX options at the same time are not compatible")
		return
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		c.Error("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	if incr && elements > 1 {
		c.Error("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, elements)
	for j := range scores {
		v, ok := parseScore(c.Args[scoreIdx+2*j])
		if !ok {
			c.Error(ErrNotFloat)
			return
		}
		scores[j] = v
	}
	key := c.Args[1]
	_, z, ok := zsetWrite(c, key)
	if !ok {
		return
	}
	created := false
	if z == nil && !xx {
		z, created = types.NewZSet(), true
	}
	added, updated, processed := 0, 0, 0
	var score float64
	if z != nil {
		for j := range scores {
			member := argStr(c.Args[scoreIdx+2*j+1])
			score = scores[j]
			cur, exists := z.Score(member)
			switch {
			case exists && nx:
				continue
			case exists:
				if incr {
					score += cur
					if math.IsNaN(score) {
						c.Error("ERR resulting score is not a number (NaN)")
						return
					}
				}
				if (lt && score >= cur) || (gt && score <= cur) {
					continue
				}
				if score != cur {
					z.Set(member, score)
					updated++
				}
			case xx:
				continue
			default:
				z.Set(member, score)
				added++
			}
			processed++
		}
	}
	if created && z.Len() > 0 {
		c.DB.Set(key, z.Value(), 0, false, c.Now)
	}
	c.Dirty(int64(added + updated))
	if added+updated > 0 {
		if incr {
			c.notify(evZSet, "zincr", key)
		} else {
			c.notify(evZSet, "zadd", key)
		}
	}
	if added > 0 {
		c.markReady(key) // clients blocked in BZPOPMIN and friends may take the new members
	}
	if incr {
		if added+updated > 0 && c.Store.Journal != nil {
			member := c.Args[scoreIdx+1]
			c.Emit(c.DB.ID, effZAdd, key, appendScoreEffect(nil, score), member)
		}
		if processed > 0 {
			c.W.Double(score)
		} else {
			c.W.Null()
		}
		return
	}
	if ch {
		c.W.Int(int64(added + updated))
	} else {
		c.W.Int(int64(added))
	}
}

func zremCommand(c *Ctx) {
	e, z, ok := zsetWrite(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	deleted := 0
	for _, m := range c.Args[2:] {
		if z.Delete(string(m)) {
			deleted++
		}
		if z.Len() == 0 {
			break
		}
	}
	if deleted > 0 {
		c.notify(evZSet, "zrem", c.Args[1])
	}
	if z.Len() == 0 {
		c.DB.Remove(e)
		c.notify(evGeneric, "del", c.Args[1])
	}
	c.Dirty(int64(deleted))
	c.W.Int(int64(deleted))
}

// ---- ZREMRANGEBY* ----

func zremrangebyrankCommand(c *Ctx) {
	start, ok := c.Int(2)
	if !ok {
		return
	}
	end, ok := c.Int(3)
	if !ok {
		return
	}
	zremrange(c, func(z *types.ZSet) int {
		n := int64(z.Len())
		if start < 0 {
			start += n
		}
		if end < 0 {
			end += n
		}
		start = max(start, 0)
		if start > end || start >= n {
			return 0
		}
		end = min(end, n-1)
		return z.DeleteRangeByRank(int(start), int(end))
	})
}

func zremrangebyscoreCommand(c *Ctx) {
	r, ok := parseScoreRange(c, c.Args[2], c.Args[3])
	if ok {
		zremrange(c, func(z *types.ZSet) int { return z.DeleteRangeByScore(&r) })
	}
}

func zremrangebylexCommand(c *Ctx) {
	r, ok := parseLexRange(c, c.Args[2], c.Args[3])
	if ok {
		zremrange(c, func(z *types.ZSet) int { return z.DeleteRangeByLex(&r) })
	}
}

func zremrange(c *Ctx, del func(z *types.ZSet) int) {
	e, z, ok := zsetWrite(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	n := del(z)
	if n > 0 {
		c.notify(evZSet, c.Cmd.Name, c.Args[1]) // zremrangebyrank, -byscore, -bylex
		if z.Len() == 0 {
			c.DB.Remove(e)
			c.notify(evGeneric, "del", c.Args[1])
		}
	}
	c.Dirty(int64(n))
	c.W.Int(int64(n))
}

// ---- reads of one member ----

func zcardCommand(c *Ctx) {
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(z.Len()))
}

func zscoreCommand(c *Ctx) {
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z != nil {
		if s, found := z.Score(string(c.Args[2])); found {
			c.W.Double(s)
			return
		}
	}
	c.W.Null()
}

func zmscoreCommand(c *Ctx) {
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		if z != nil {
			if s, found := z.Score(string(m)); found {
				c.W.Double(s)
				continue
			}
		}
		c.W.Null()
	}
}

func zrankCommand(c *Ctx)    { zrankGeneric(c, false) }
func zrevrankCommand(c *Ctx) { zrankGeneric(c, true) }

func zrankGeneric(c *Ctx, rev bool) {
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z != nil {
		if r, found := z.Rank(string(c.Args[2])); found {
			if rev {
				r = z.Len() - 1 - r
			}
			c.W.Int(int64(r))
			return
		}
	}
	c.W.Null()
}

func zcountCommand(c *Ctx) {
	r, ok := parseScoreRange(c, c.Args[2], c.Args[3])
	if !ok {
		return
	}
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(z.CountScore(&r)))
}

func zlexcountCommand(c *Ctx) {
	r, ok := parseLexRange(c, c.Args[2], c.Args[3])
	if !ok {
		return
	}
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(z.CountLex(&r)))
}

// ---- ZRANGE and friends ----

type zrangeKind int

const (
	zrangeAuto zrangeKind = iota
	zrangeRank
	zrangeScore
	zrangeLex
)

const (
	zdirAuto = iota
	zdirForward
	zdirReverse
)

func zrangeCommand(c *Ctx)           { zrangeGeneric(c, 1, false, zrangeAuto, zdirAuto) }
func zrangestoreCommand(c *Ctx)      { zrangeGeneric(c, 2, true, zrangeAuto, zdirAuto) }
func zrevrangeCommand(c *Ctx)        { zrangeGeneric(c, 1, false, zrangeRank, zdirReverse) }
func zrangebyscoreCommand(c *Ctx)    { zrangeGeneric(c, 1, false, zrangeScore, zdirForward) }
func zrevrangebyscoreCommand(c *Ctx) { zrangeGeneric(c, 1, false, zrangeScore, zdirReverse) }
func zrangebylexCommand(c *Ctx)      { zrangeGeneric(c, 1, false, zrangeLex, zdirForward) }
func zrevrangebylexCommand(c *Ctx)   { zrangeGeneric(c, 1, false, zrangeLex, zdirReverse) }

// zrangeGeneric is Redis's zrangeGenericCommand: ZRANGE, ZRANGESTORE (toKey: the destination
// is the argument before src) and the older Z[REV]RANGE[BYSCORE|BYLEX] forms, whose kind or
// direction is fixed. Options are read first, then checked against each other, then the range,
// and only then the key, which is Redis's order of errors.
func zrangeGeneric(c *Ctx, argStart int, toKey bool, kind zrangeKind, dir int) {
	key := c.Args[argStart]
	minIdx, maxIdx := argStart+1, argStart+2
	withScores := false
	offset, limit := int64(0), int64(-1)
	for j := argStart + 3; j < len(c.Args); j++ {
		left := len(c.Args) - j - 1
		switch {
		case !toKey && c.ArgIs(j, "withscores"):
			withScores = true
		case c.ArgIs(j, "limit") && left >= 2:
			var ok bool
			if offset, ok = c.Int(j + 1); !ok {
				return
			}
			if limit, ok = c.Int(j + 2); !ok {
				return
			}
			j += 2
		case dir == zdirAuto && c.ArgIs(j, "rev"):
			dir = zdirReverse
		case kind == zrangeAuto && c.ArgIs(j, "bylex"):
			kind = zrangeLex
		case kind == zrangeAuto && c.ArgIs(j, "byscore"):
			kind = zrangeScore
		default:
			c.Syntax()
			return
		}
	}
	if kind == zrangeAuto {
		kind = zrangeRank
	}
	rev := dir == zdirReverse
	if limit != -1 && kind == zrangeRank {
		c.Error("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return
	}
	if withScores && kind == zrangeLex {
		c.Error("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return
	}
	if rev && kind != zrangeRank {
		minIdx, maxIdx = maxIdx, minIdx // the range is given as max, min
	}
	var start, end int64
	var sr types.ScoreRange
	var lr types.LexRange
	var ok bool
	switch kind {
	case zrangeRank:
		if start, ok = c.Int(minIdx); !ok {
			return
		}
		if end, ok = c.Int(maxIdx); !ok {
			return
		}
	case zrangeScore:
		if sr, ok = parseScoreRange(c, c.Args[minIdx], c.Args[maxIdx]); !ok {
			return
		}
	case zrangeLex:
		if lr, ok = parseLexRange(c, c.Args[minIdx], c.Args[maxIdx]); !ok {
			return
		}
	}
	e := c.LookupRead(key)
	if e == nil {
		if toKey {
			zsetStore(c, c.Args[1], nil)
		} else {
			c.W.Array(0)
		}
		return
	}
	if e.Val.Kind != store.KindZSet {
		c.WrongType()
		return
	}
	z := e.Val.Obj().(*types.ZSet)
	var items []zpair
	collect := func(m string, s float64) bool {
		items = append(items, zpair{m, s})
		return true
	}
	switch kind {
	case zrangeRank:
		n := int64(z.Len())
		if start < 0 {
			start += n
		}
		if end < 0 {
			end += n
		}
		start = max(start, 0)
		if start <= end && start < n {
			end = min(end, n-1)
			count := int(end - start + 1)
			items = make([]zpair, 0, count)
			from := int(start)
			if rev {
				from = int(n - 1 - start)
			}
			z.Walk(from, rev, func(m string, s float64) bool {
				collect(m, s)
				return len(items) < count
			})
		}
	case zrangeScore:
		if offset > 0 && offset >= int64(z.Len()) {
			break
		}
		first := z.FirstInScore(&sr)
		if rev {
			first = z.LastInScore(&sr)
		}
		zrangeWalk(z, first, rev, offset, limit, func(m string, s float64) bool {
			if rev && !scoreGteMin(&sr, s) || !rev && !scoreLteMax(&sr, s) {
				return false
			}
			return collect(m, s)
		})
	case zrangeLex:
		first := z.FirstInLex(&lr)
		if rev {
			first = z.LastInLex(&lr)
		}
		zrangeWalk(z, first, rev, offset, limit, func(m string, s float64) bool {
			if rev && !lexGteMin(&lr, m) || !rev && !lexLteMax(&lr, m) {
				return false
			}
			return collect(m, s)
		})
	}
	if toKey {
		// Redis creates the destination for the number of members a rank range will hold
		// (a skip list when that is too many to pack), and packed for score and lex ranges,
		// whose size it does not know; members added convert it as usual.
		dst := types.NewZSet()
		if kind == zrangeRank {
			dst = types.NewZSetFor(len(items), 0)
		}
		for _, it := range items {
			dst.Set(it.m, it.s)
		}
		zsetStore(c, c.Args[1], dst)
		return
	}
	zreplyPairs(c, items, withScores)
}

// zrangeWalk walks from rank first (-1: nothing), skipping offset members (a negative offset
// skips everything, as Redis's loop does) and visiting at most limit (negative: no limit).
func zrangeWalk(z *types.ZSet, first int, rev bool, offset, limit int64, fn func(string, float64) bool) {
	if first < 0 || offset < 0 || limit == 0 {
		return
	}
	from := int64(first) + offset
	if rev {
		from = int64(first) - offset
	}
	if from < 0 || from >= int64(z.Len()) {
		return
	}
	z.Walk(int(from), rev, func(m string, s float64) bool {
		if !fn(m, s) {
			return false
		}
		limit--
		return limit != 0
	})
}

func scoreGteMin(r *types.ScoreRange, v float64) bool {
	if r.MinEx {
		return v > r.Min
	}
	return v >= r.Min
}

func scoreLteMax(r *types.ScoreRange, v float64) bool {
	if r.MaxEx {
		return v < r.Max
	}
	return v <= r.Max
}

func lexCmp(v string, b *types.LexBound) int {
	switch b.Inf {
	case -1:
		return 1
	case 1:
		return -1
	}
	switch {
	case v < b.Value:
		return -1
	case v > b.Value:
		return 1
	}
	return 0
}

func lexGteMin(r *types.LexRange, v string) bool {
	if r.Min.Ex {
		return lexCmp(v, &r.Min) > 0
	}
	return lexCmp(v, &r.Min) >= 0
}

func lexLteMax(r *types.LexRange, v string) bool {
	if r.Max.Ex {
		return lexCmp(v, &r.Max) < 0
	}
	return lexCmp(v, &r.Max) <= 0
}

// ---- pops ----

func zpopminCommand(c *Ctx) { zpopMinMax(c, false) }
func zpopmaxCommand(c *Ctx) { zpopMinMax(c, true) }

func zpopMinMax(c *Ctx, max bool) {
	if len(c.Args) > 3 {
		c.Syntax()
		return
	}
	count := int64(-1)
	if len(c.Args) == 3 {
		n, ok := resp.ParseInt(c.Args[2])
		if !ok || n < 0 {
			c.Error("ERR value is out of range, must be positive")
			return
		}
		count = n
	}
	zpopGeneric(c, c.Args[1:2], max, false, count, c.W.Proto > 2 && count != -1, false)
}

// zpopGeneric is Redis's genericZpopCommand: it pops from the first existing key of keys
// (WRONGTYPE stops at the first other type), up to count members (-1: one, replied flat),
// nested as pairs when nested, under the key name when withKey (ZMPOP). Nothing to pop replies
// an empty array, or the null array with nilEmpty. The pops are journaled as ZREM.
func zpopGeneric(c *Ctx, keys [][]byte, max, withKey bool, count int64, nested, nilEmpty bool) {
	var e *store.Entry
	var z *types.ZSet
	var key []byte
	for _, k := range keys {
		var ok bool
		if e, z, ok = zsetWrite(c, k); !ok {
			return
		}
		if z != nil {
			key = k
			break
		}
	}
	if z == nil {
		if nilEmpty {
			c.W.NullArray()
		} else {
			c.W.Array(0)
		}
		return
	}
	if count == 0 {
		c.W.Array(0)
		return
	}
	if count == -1 {
		count = 1
	}
	n := int(min(count, int64(z.Len())))
	switch {
	case withKey:
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Array(n)
	case nested:
		c.W.Array(n)
	default:
		c.W.Array(2 * n)
	}
	var eff [][]byte
	journal := c.Store.Journal != nil
	if journal {
		eff = make([][]byte, 0, 2+n)
		eff = append(eff, effZRem, key)
	}
	for range n {
		member, score := zpopOne(z, max)
		if nested || withKey {
			c.W.Array(2)
		}
		c.W.BulkString(member)
		c.W.Double(score)
		if journal {
			eff = append(eff, []byte(member))
		}
	}
	c.zsetPopped(c.DB, e, key, z, max)
	c.Dirty(int64(n))
	if journal {
		c.Emit(c.DB.ID, eff...)
	}
}

func zmpopCommand(c *Ctx) {
	if keys, max, count, ok := zmpopParse(c); ok {
		zpopGeneric(c, keys, max, true, count, true, true)
	}
}

// zmpopParse reads "numkeys key... MIN|MAX [COUNT n]" from c.Args[1:], replying the error
// itself (BZMPOP calls it with its arguments shifted past the timeout).
func zmpopParse(c *Ctx) (keys [][]byte, max bool, count int64, ok bool) {
	numkeys, isInt := resp.ParseInt(c.Args[1])
	if !isInt || numkeys < 1 {
		c.Error("ERR numkeys should be greater than 0")
		return nil, false, 0, false
	}
	// Compared before adding: a numkeys near 2^63 must not wrap the index around.
	if numkeys > int64(len(c.Args)-2) {
		c.Syntax()
		return nil, false, 0, false
	}
	where := 2 + numkeys
	if where >= int64(len(c.Args)) {
		c.Syntax()
		return nil, false, 0, false
	}
	switch {
	case c.ArgIs(int(where), "min"):
	case c.ArgIs(int(where), "max"):
		max = true
	default:
		c.Syntax()
		return nil, false, 0, false
	}
	count = -1
	for j := int(where) + 1; j < len(c.Args); j++ {
		if count == -1 && c.ArgIs(j, "count") && j+1 < len(c.Args) {
			j++
			n, isInt := resp.ParseInt(c.Args[j])
			if !isInt || n < 1 {
				c.Error("ERR count should be greater than 0")
				return nil, false, 0, false
			}
			count = n
			continue
		}
		c.Syntax()
		return nil, false, 0, false
	}
	if count == -1 {
		count = 1
	}
	return c.Args[2:where], max, count, true
}

// zpopOne removes and returns the member with the lowest (or, with max, highest) score.
func zpopOne(z *types.ZSet, max bool) (member string, score float64) {
	from := 0
	if max {
		from = z.Len() - 1
	}
	z.Walk(from, false, func(m string, s float64) bool {
		member, score = strings.Clone(m), s // a copy: the set changes below
		return false
	})
	z.Delete(member)
	return member, score
}

// ---- ZRANDMEMBER ----

func zrandmemberCommand(c *Ctx) {
	if len(c.Args) >= 3 {
		count, ok := c.Int(2)
		if !ok {
			return
		}
		if count == math.MinInt64 {
			c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
			return
		}
		withScores := false
		if len(c.Args) > 4 || (len(c.Args) == 4 && !c.ArgIs(3, "withscores")) {
			c.Syntax()
			return
		}
		if len(c.Args) == 4 {
			withScores = true
			if count < -4611686018427387903 || count > 4611686018427387903 {
				c.Error("ERR value is out of range")
				return
			}
		}
		zrandmemberCount(c, count, withScores)
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
	m, _ := z.Random(rand.Uint64N)
	c.W.BulkString(m)
}

func zrandmemberCount(c *Ctx, count int64, withScores bool) {
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil || count == 0 {
		c.W.Array(0)
		return
	}
	pair := func(m string, s float64) {
		if withScores && c.W.Proto >= 3 {
			c.W.Array(2)
		}
		c.W.BulkString(m)
		if withScores {
			c.W.Double(s)
		}
	}
	header := func(n int64) {
		if withScores && c.W.Proto < 3 {
			c.W.Array(int(2 * n))
		} else {
			c.W.Array(int(n))
		}
	}
	size := int64(z.Len())
	switch {
	case count < 0 || count == 1: // repeats allowed, in random order
		n := count
		if n < 0 {
			n = -n
		}
		header(n)
		for range n {
			pair(z.Random(rand.Uint64N))
		}
	case count >= size: // the whole set, from the highest down, as Redis iterates it
		header(size)
		z.Walk(int(size-1), true, func(m string, s float64) bool {
			pair(m, s)
			return true
		})
	default: // count distinct members
		all := make([]zpair, 0, size)
		z.Each(func(m string, s float64) bool {
			all = append(all, zpair{m, s})
			return true
		})
		rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		header(count)
		for _, p := range all[:count] {
			pair(p.m, p.s)
		}
	}
}

// ---- ZSCAN ----

// zscanCommand follows Redis's order: the cursor, then the key (a missing one answers an empty
// scan whatever the options), then the options. Like Redis 7.0 it stops once COUNT strings
// (members and scores both count) were gathered, before MATCH filters them.
func zscanCommand(c *Ctx) {
	cursor, ok := parseScanCursor(c.Args[2])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	_, z, ok := zsetRead(c, c.Args[1])
	if !ok {
		return
	}
	if z == nil {
		replyEmptyScan(c)
		return
	}
	count, pat, usePat, ok := keyScanOptions(c)
	if !ok {
		return
	}
	var found []zpair
	visit := func(m string, s float64) { found = append(found, zpair{m, s}) }
	next := uint64(0)
	packed := z.Packed()
	if packed {
		z.Scan(0, visit)
	} else {
		budget := count * 10
		next = cursor
		for {
			next = z.Scan(next, visit)
			if next == 0 || budget == 0 {
				break
			}
			budget--
			if int64(2*len(found)) >= count {
				break
			}
		}
	}
	if usePat {
		kept := found[:0]
		for _, p := range found {
			if glob.Match(pat, p.m, false) {
				kept = append(kept, p)
			}
		}
		found = kept
	}
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(2 * len(found))
	var buf []byte
	for _, p := range found {
		c.W.BulkString(p.m)
		if packed {
			buf = appendListpackScore(buf[:0], p.s)
		} else {
			buf = resp.AppendDouble(buf[:0], p.s)
		}
		c.W.Bulk(buf)
	}
}

// ---- ZUNION, ZINTER, ZDIFF and their STORE forms, ZINTERCARD ----

type zsetOp int

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

func zunionCommand(c *Ctx)      { zsetOpGeneric(c, nil, 1, zopUnion, false) }
func zinterCommand(c *Ctx)      { zsetOpGeneric(c, nil, 1, zopInter, false) }
func zdiffCommand(c *Ctx)       { zsetOpGeneric(c, nil, 1, zopDiff, false) }
func zintercardCommand(c *Ctx)  { zsetOpGeneric(c, nil, 1, zopInter, true) }
func zunionstoreCommand(c *Ctx) { zsetOpGeneric(c, c.Args[1], 2, zopUnion, false) }
func zinterstoreCommand(c *Ctx) { zsetOpGeneric(c, c.Args[1], 2, zopInter, false) }
func zdiffstoreCommand(c *Ctx)  { zsetOpGeneric(c, c.Args[1], 2, zopDiff, false) }

// setOperand is what sorted set operations need of a plain set (types.Set), whose members all
// score 1.
type setOperand interface {
	Len() int
	Has(member string) bool
	Each(fn func(member string) bool)
}

var _ setOperand = (*types.Set)(nil)

// zsrc is one input of a sorted set operation: a sorted set, a set, or nothing (a missing key).
type zsrc struct {
	z      *types.ZSet
	set    setOperand
	obj    any // identity, to recognise the same key given twice
	weight float64
}

func (s *zsrc) len() int {
	switch {
	case s.z != nil:
		return s.z.Len()
	case s.set != nil:
		return s.set.Len()
	}
	return 0
}

// each visits the members: a sorted set from the highest down, as Redis's iterator does.
func (s *zsrc) each(fn func(m string, score float64) bool) {
	switch {
	case s.z != nil:
		if n := s.z.Len(); n > 0 {
			s.z.Walk(n-1, true, fn)
		}
	case s.set != nil:
		s.set.Each(func(m string) bool { return fn(m, 1) })
	}
}

func (s *zsrc) find(m string) (float64, bool) {
	switch {
	case s.z != nil:
		return s.z.Score(m)
	case s.set != nil:
		if s.set.Has(m) {
			return 1, true
		}
	}
	return 0, false
}

const (
	aggrSum = iota
	aggrMin
	aggrMax
)

func zaggregate(target *float64, val float64, aggr int) {
	switch aggr {
	case aggrSum:
		*target += val
		if math.IsNaN(*target) { // inf + -inf: Redis's convention is 0
			*target = 0
		}
	case aggrMin:
		if val < *target {
			*target = val
		}
	case aggrMax:
		if val > *target {
			*target = val
		}
	}
}

// zsetOpGeneric is Redis's zunionInterDiffGenericCommand, errors in Redis's order: numkeys,
// the keys' types, then the options.
func zsetOpGeneric(c *Ctx, dst []byte, numkeysIdx int, op zsetOp, cardOnly bool) {
	setnum, ok := c.Int(numkeysIdx)
	if !ok {
		return
	}
	if setnum < 1 {
		c.Error("ERR at least 1 input key is needed for '" + c.Cmd.FullName() + "' command")
		return
	}
	if setnum > int64(len(c.Args)-(numkeysIdx+1)) {
		c.Syntax()
		return
	}
	srcs := make([]zsrc, setnum)
	j := numkeysIdx + 1
	for i := range srcs {
		srcs[i].weight = 1
		e := c.LookupRead(c.Args[j])
		j++
		if e == nil {
			continue
		}
		switch e.Val.Kind {
		case store.KindZSet:
			srcs[i].z = e.Val.Obj().(*types.ZSet)
			srcs[i].obj = srcs[i].z
		case store.KindSet:
			s, isSet := e.Val.Obj().(setOperand)
			if !isSet {
				c.WrongType()
				return
			}
			srcs[i].set, srcs[i].obj = s, s
		default:
			c.WrongType()
			return
		}
	}
	aggr := aggrSum
	withScores := false
	limit := int64(0)
	for j < len(c.Args) {
		remaining := len(c.Args) - j
		switch {
		case op != zopDiff && !cardOnly && remaining >= int(setnum)+1 && c.ArgIs(j, "weights"):
			j++
			for i := range srcs {
				w, ok := parseScore(c.Args[j])
				if !ok {
					c.Error("ERR weight value is not a float")
					return
				}
				srcs[i].weight = w
				j++
			}
		case op != zopDiff && !cardOnly && remaining >= 2 && c.ArgIs(j, "aggregate"):
			switch {
			case c.ArgIs(j+1, "sum"):
				aggr = aggrSum
			case c.ArgIs(j+1, "min"):
				aggr = aggrMin
			case c.ArgIs(j+1, "max"):
				aggr = aggrMax
			default:
				c.Syntax()
				return
			}
			j += 2
		case remaining >= 1 && dst == nil && !cardOnly && c.ArgIs(j, "withscores"):
			withScores = true
			j++
		case cardOnly && remaining >= 2 && c.ArgIs(j, "limit"):
			n, ok := resp.ParseInt(c.Args[j+1])
			if !ok || n < 0 {
				c.Error("ERR LIMIT can't be negative")
				return
			}
			limit = n
			j += 2
		default:
			c.Syntax()
			return
		}
	}
	if op != zopDiff {
		// From the smallest input to the largest (a stable sort, as glibc's qsort is).
		slices.SortStableFunc(srcs, func(a, b zsrc) int { return a.len() - b.len() })
	}

	var result []zpair
	cardinality := int64(0)
	switch op {
	case zopInter:
		if srcs[0].len() == 0 {
			break
		}
		srcs[0].each(func(m string, s float64) bool {
			score := srcs[0].weight * s
			if math.IsNaN(score) {
				score = 0
			}
			k := 1
			for ; k < len(srcs); k++ {
				var value float64
				if srcs[k].obj == srcs[0].obj {
					value = s * srcs[k].weight
				} else if v, found := srcs[k].find(m); found {
					value = v * srcs[k].weight
				} else {
					break
				}
				zaggregate(&score, value, aggr)
			}
			if k < len(srcs) {
				return true
			}
			if cardOnly {
				cardinality++
				return limit == 0 || cardinality < limit
			}
			result = append(result, zpair{m, score})
			return true
		})
	case zopUnion:
		acc := map[string]float64{}
		var order []string
		for i := range srcs {
			srcs[i].each(func(m string, s float64) bool {
				score := srcs[i].weight * s
				if math.IsNaN(score) {
					score = 0
				}
				if cur, found := acc[m]; found {
					zaggregate(&cur, score, aggr)
					acc[m] = cur
				} else {
					acc[m] = score
					order = append(order, m)
				}
				return true
			})
		}
		result = make([]zpair, 0, len(order))
		for _, m := range order {
			result = append(result, zpair{m, acc[m]})
		}
	case zopDiff:
		if srcs[0].len() == 0 {
			break
		}
		for _, o := range srcs[1:] {
			if o.obj != nil && o.obj == srcs[0].obj {
				goto diffDone // every member is in the other set
			}
		}
		srcs[0].each(func(m string, s float64) bool {
			for _, o := range srcs[1:] {
				if _, found := o.find(m); found {
					return true
				}
			}
			result = append(result, zpair{m, s})
			return true
		})
	diffDone:
	}

	switch {
	case dst != nil:
		maxLen := 0
		for _, it := range result {
			maxLen = max(maxLen, len(it.m))
		}
		z := types.NewZSetFor(len(result), maxLen) // built whole, as Redis does
		for _, it := range result {
			z.Set(it.m, it.s)
		}
		zsetStore(c, dst, z)
	case cardOnly:
		c.W.Int(cardinality)
	default:
		slices.SortFunc(result, func(a, b zpair) int {
			switch {
			case a.s < b.s:
				return -1
			case a.s > b.s:
				return 1
			case a.m < b.m:
				return -1
			case a.m > b.m:
				return 1
			}
			return 0
		})
		zreplyPairs(c, result, withScores)
	}
}

package command

import (
	"sort"
	"strconv"
	"strings"
)

// ExampleT0 is the Unix time in ms that examples run at unless they set another: the spec's t0
// (spec/RATELIMIT.md), 2023-11-14 22:13:20 UTC.
const ExampleT0 = int64(1700000000000)

// Example is one redis-cli session of a command's documentation. docs/commands/ prints it as
// typed and answered at the redis-cli prompt, and tests/examples_test.go runs it against a
// fresh server, so every documented reply is one the server really gives.
//
// A command's examples run in order on one connection of an empty server (RESP2, database 0,
// default configuration): state, the selected database and CONFIG SET changes carry over
// from one example to the next.
type Example struct {
	// Note is prose printed before the session: what it shows, and when time moved since the
	// previous session.
	Note string
	// Clock is the Unix time in ms the server clock is frozen at (DEBUG CLOCK SET) before the
	// first step. 0 leaves the clock as the previous example left it; the first example of a
	// command runs at ExampleT0 unless it says otherwise. Every step of a session runs at the
	// same millisecond.
	Clock int64
	Steps []ExampleStep
}

// ExampleStep is one command line and its reply.
type ExampleStep struct {
	// Cmd is the command as typed at the redis-cli prompt, quoted as redis-cli splits it
	// (sdssplitargs: "double quotes" with escapes, 'single quotes').
	Cmd string
	// Reply is the reply exactly as redis-cli prints it on a terminal (resp.FormatCLI) in
	// RESP2, without the final newline: `(integer) 0`, `"hello"`, `(nil)`, `OK`,
	// `(error) ERR ...`, arrays as `1) (integer) 0` lines with nested arrays indented.
	Reply string
}

// Examples returns the examples of the command with this full name ("gcra.limit",
// "client|setname"), nil if it has none.
func Examples(name string) []Example { return examples[name] }

// ExampleNames lists the full names of the commands that have examples, sorted.
func ExampleNames() []string {
	names := make([]string, 0, len(examples))
	for n := range examples {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ints is redis-cli's rendering of a short array of integers, such as the five-integer replies
// of the rate-limit commands.
func ints(vals ...int64) string {
	if len(vals) == 0 || len(vals) > 9 {
		panic("command: ints takes 1 to 9 values")
	}
	lines := make([]string, len(vals))
	for i, v := range vals {
		lines[i] = strconv.Itoa(i+1) + ") (integer) " + strconv.FormatInt(v, 10)
	}
	return strings.Join(lines, "\n")
}

// intsOf is redis-cli's rendering of GCRA.LIMITALL's reply: two integers, then one nested
// five-integer array per limit, indented as redis-cli indents nested arrays.
func intsOf(denied, retry int64, limits ...[5]int64) string {
	lines := []string{"1) (integer) " + strconv.FormatInt(denied, 10), "2) (integer) " + strconv.FormatInt(retry, 10)}
	for i, l := range limits {
		for j, line := range strings.Split(ints(l[:]...), "\n") {
			prefix := "   "
			if j == 0 {
				prefix = strconv.Itoa(i+3) + ") "
			}
			lines = append(lines, prefix+line)
		}
	}
	return strings.Join(lines, "\n")
}

const (
	exWrongType   = "(error) WRONGTYPE Operation against a key holding the wrong kind of value"
	exUnknownRate = "1) (integer) 0\n2) (integer) 0\n3) (integer) 0\n4) (integer) 0\n5) (integer) 0"
)

// examples holds every command's examples by full name. The rate-limit sessions follow the
// test vectors of spec/RATELIMIT.md (named in comments); the clock is frozen, so they are exact.
var examples = map[string][]Example{
	// ---- Rate limiting ----

	"gcra.limit": {
		{
			Note: "A limit of 10 requests a minute with smooth refill (`period 60000`, `burst 10`): a fresh key " +
				"allows 10 at once, then one every 6 seconds. A request for 10 units after two single ones is " +
				"denied, and the key's value (the TAT in ns) and TTL are left as they were. " +
				"(In these examples the server clock is frozen at 1700000000000 ms with `DEBUG CLOCK SET`, " +
				"so every call of a session happens at the same millisecond.)",
			Steps: []ExampleStep{ // V1, V2, V3
				{"GCRA.LIMIT ratelimit:user:42 60000 10", ints(0, 10, 9, -1, 6000)},
				{"GCRA.LIMIT ratelimit:user:42 60000 10", ints(0, 10, 8, -1, 12000)},
				{"GCRA.LIMIT ratelimit:user:42 60000 10 10", ints(1, 10, 0, 12000, 12000)},
				{"PTTL ratelimit:user:42", "(integer) 12000"},
				{"GET ratelimit:user:42", `"1700000012000000000"`},
			},
		},
		{
			Note: "12 seconds later, as `retry_after_ms` said, the same request passes and spends the whole " +
				"burst; the next unit must wait 6 seconds:",
			Clock: ExampleT0 + 12000,
			Steps: []ExampleStep{ // V3c, then V4b's denial
				{"GCRA.LIMIT ratelimit:user:42 60000 10 10", ints(0, 10, 0, -1, 60000)},
				{"GCRA.LIMIT ratelimit:user:42 60000 10", ints(1, 10, 0, 6000, 60000)},
			},
		},
		{
			Note: "A request larger than the burst can never pass: it is denied with `retry_after_ms` -1 " +
				"and creates no key. A key that holds anything but an integer is never taken as state:",
			Steps: []ExampleStep{ // V8, V21b
				{"GCRA.LIMIT ratelimit:user:7 60000 10 11", ints(1, 10, 0, -1, 0)},
				{"EXISTS ratelimit:user:7", "(integer) 0"},
				{"SET greeting hello", "OK"},
				{"GCRA.LIMIT greeting 60000 10", exWrongType},
				{"GCRA.LIMIT ratelimit:user:7 0 10", "(error) ERR invalid period: must be a positive integer (milliseconds)"},
			},
		},
	},
	"gcra.peek": {
		{
			Note: "`GCRA.PEEK` replies what `GCRA.LIMIT` with the same arguments would reply now, and records nothing:",
			Steps: []ExampleStep{ // P1, P2
				{"GCRA.PEEK ratelimit:user:42 60000 10", ints(0, 10, 9, -1, 6000)},
				{"EXISTS ratelimit:user:42", "(integer) 0"},
				{"GCRA.LIMIT ratelimit:user:42 60000 10", ints(0, 10, 9, -1, 6000)},
				{"GCRA.PEEK ratelimit:user:42 60000 10", ints(0, 10, 8, -1, 12000)},
				{"GCRA.PEEK ratelimit:user:42 60000 10 10", ints(1, 10, 0, 6000, 6000)},
				{"PTTL ratelimit:user:42", "(integer) 6000"},
				{"GCRA.LIMIT ratelimit:user:42 60000 10", ints(0, 10, 8, -1, 12000)},
			},
		},
	},
	"gcra.limitall": {
		{
			Note: "A user may make 10 requests a minute (`60000 10`) and the user's organisation 2 a second " +
				"(`1000 2`); a request must pass both. The third request fits the user's limit but not the " +
				"organisation's, so it is denied as a whole and the user's key is not charged:",
			Steps: []ExampleStep{ // LA1, LA2
				{"GCRA.LIMITALL 2 rl:user:42 60000 10 rl:org:7 1000 2", intsOf(0, -1, [5]int64{0, 10, 9, -1, 6000}, [5]int64{0, 2, 1, -1, 500})},
				{"GCRA.LIMITALL 2 rl:user:42 60000 10 rl:org:7 1000 2", intsOf(0, -1, [5]int64{0, 10, 8, -1, 12000}, [5]int64{0, 2, 0, -1, 1000})},
				{"GCRA.LIMITALL 2 rl:user:42 60000 10 rl:org:7 1000 2", intsOf(1, 500, [5]int64{0, 10, 7, -1, 18000}, [5]int64{1, 2, 0, 500, 1000})},
				{"GET rl:user:42", `"1700000012000000000"`},
			},
		},
		{
			Note: "A count larger than one limit's burst can never pass: `retry_after_ms` is -1. Arguments are checked before keys:",
			Steps: []ExampleStep{ // LA4, LA8
				{"GCRA.LIMITALL 2 rl:user:42 60000 10 rl:org:7 1000 2 COUNT 3", intsOf(1, -1, [5]int64{0, 10, 5, -1, 30000}, [5]int64{1, 2, 0, -1, 1000})},
				{"GCRA.LIMITALL 0 rl:user:42 60000 10", "(error) ERR invalid numlimits: must be an integer from 1 to 256"},
				{"GCRA.LIMITALL 2 rl:user:42 60000 10", "(error) ERR syntax error"},
			},
		},
	},
	"gcra.refund": {
		{
			Note: "A job reserves 3 units, then finds that two of them were not needed and gives them back; " +
				"a refund never goes past a full burst, and a full key is deleted:",
			Steps: []ExampleStep{ // RF1-RF4
				{"GCRA.LIMIT job:42 60000 10 3", ints(0, 10, 7, -1, 18000)},
				{"GCRA.REFUND job:42 60000 10 2", ints(0, 10, 9, -1, 6000)},
				{"PTTL job:42", "(integer) 6000"},
				{"GCRA.REFUND job:42 60000 10 5", ints(0, 10, 10, -1, 0)},
				{"EXISTS job:42", "(integer) 0"},
				{"GCRA.REFUND job:42 60000 10", ints(0, 10, 10, -1, 0)},
				{"EXISTS job:42", "(integer) 0"},
			},
		},
	},
	"gcra.reset": {
		{
			Note: "The reply counts the keys that existed; a key listed twice counts once. " +
				"After a reset the full burst is available again:",
			Steps: []ExampleStep{ // V26
				{"GCRA.LIMIT ratelimit:user:42 60000 10", ints(0, 10, 9, -1, 6000)},
				{"GCRA.LIMIT ratelimit:user:43 60000 10", ints(0, 10, 9, -1, 6000)},
				{"GCRA.RESET ratelimit:user:42 ratelimit:user:43 nokey ratelimit:user:42", "(integer) 2"},
				{"GCRA.LIMIT ratelimit:user:42 60000 10", ints(0, 10, 9, -1, 6000)},
			},
		},
		{
			Note: "If any existing key is not limiter state, nothing is deleted:",
			Steps: []ExampleStep{ // R1
				{"SET greeting hello", "OK"},
				{"GCRA.RESET ratelimit:user:42 greeting", exWrongType},
				{"EXISTS ratelimit:user:42", "(integer) 1"},
			},
		},
	},
	"cl.throttle": {
		{
			Note: "redis-cell's own example: bursts of 16 (`max_burst 15`), 30 requests per 60 seconds. " +
				"After this request 15 more may pass at once; the limit is fully refilled in 2 seconds " +
				"(times are in seconds).",
			Steps: []ExampleStep{ // redis-cell's README
				{"CL.THROTTLE user123 15 30 60 1", ints(0, 16, 15, -1, 2)},
			},
		},
		{
			Note: "One request per 10 seconds, no burst. The state is the same as `GCRA.LIMIT`'s, so " +
				"`GCRA.PEEK` with the same limit in milliseconds reads it:",
			Steps: []ExampleStep{ // C3, C5
				{"CL.THROTTLE user456 0 1 10 1", ints(0, 1, 0, -1, 10)},
				{"CL.THROTTLE user456 0 1 10", ints(1, 1, 0, 10, 10)},
				{"GCRA.PEEK user456 10000 1", ints(1, 1, 0, 10000, 10000)},
			},
		},
		{
			Note:  "One second later the wait is 9 seconds; `quantity 0` only reports:",
			Clock: ExampleT0 + 1000,
			Steps: []ExampleStep{
				{"CL.THROTTLE user456 0 1 10 1", ints(1, 1, 0, 9, 9)},
				{"CL.THROTTLE user456 0 1 10 0", ints(0, 1, 0, -1, 9)},
			},
		},
		{
			Note: "With `throttle-compat dragonfly` seconds are rounded as Dragonfly replies: every non-zero " +
				"value one second more, so an exact 10-second wait reads 11.",
			Steps: []ExampleStep{
				{"CONFIG SET throttle-compat dragonfly", "OK"},
				{"CL.THROTTLE user789 0 1 10 1", ints(0, 1, 0, -1, 11)},
				{"CL.THROTTLE user789 0 1 10 1", ints(1, 1, 0, 11, 11)},
			},
		},
	},
	"ratelimit.create": {
		{
			Note: "A sliding-window limiter of 100 requests a minute, and a token bucket of 20 refilled at " +
				"5 tokens a second. Names are unique; options are checked against the algorithm:",
			Steps: []ExampleStep{
				{"RATELIMIT.CREATE api 100 60000", "OK"},
				{"RATELIMIT.CREATE uploads 20 4000 ALGO token_bucket REFILL 5", "OK"},
				{"RATELIMIT.CREATE api 100 60000", "(error) ERR limiter already exists or limit reached"},
				{"RATELIMIT.CREATE downloads 20 4000 REFILL 5", "(error) ERR syntax error"},
				{"RATELIMIT.LIST", "1) \"api\"\n2) \"uploads\""},
			},
		},
	},
	"ratelimit.check": {
		{
			Note: "The reply is `[allowed, remaining, retry_after_ms, limit, current]`; note that `allowed` is 1 " +
				"when allowed. `current` counts the units in use before this request. " +
				"An unknown limiter replies all zeros:",
			Steps: []ExampleStep{ // L1, L11
				{"RATELIMIT.CREATE api 100 60000", "OK"},
				{"RATELIMIT.CHECK api user:42", ints(1, 99, 0, 100, 0)},
				{"RATELIMIT.CHECK api user:42 COST 5", ints(1, 94, 0, 100, 1)},
				{"RATELIMIT.CHECK nolimiter user:42", exUnknownRate},
			},
		},
		{
			Note: "A sliding window of 3 requests a second: the fourth request must wait until the first " +
				"leaves the window, a full second after it was made:",
			Steps: []ExampleStep{
				{"RATELIMIT.CREATE login 3 1000", "OK"},
				{"RATELIMIT.CHECK login 203.0.113.7", ints(1, 2, 0, 3, 0)},
				{"RATELIMIT.CHECK login 203.0.113.7", ints(1, 1, 0, 3, 1)},
				{"RATELIMIT.CHECK login 203.0.113.7", ints(1, 0, 0, 3, 2)},
				{"RATELIMIT.CHECK login 203.0.113.7", ints(0, 0, 1000, 3, 3)},
			},
		},
		{
			Note:  "One second later:",
			Clock: ExampleT0 + 1000,
			Steps: []ExampleStep{
				{"RATELIMIT.CHECK login 203.0.113.7", ints(1, 2, 0, 3, 0)},
			},
		},
	},
	"ratelimit.peek": {
		{
			Note: "`RATELIMIT.PEEK` answers for a request of cost 1 and counts nothing: `remaining` is what " +
				"is left now.",
			Steps: []ExampleStep{ // L10, L6
				{"RATELIMIT.CREATE api 100 60000", "OK"},
				{"RATELIMIT.PEEK api user:42", ints(1, 100, 0, 100, 0)},
				{"RATELIMIT.CHECK api user:42", ints(1, 99, 0, 100, 0)},
				{"RATELIMIT.PEEK api user:42", ints(1, 99, 0, 100, 1)},
				{"RATELIMIT.CREATE uploads 20 4000 ALGO token_bucket REFILL 5", "OK"},
				{"RATELIMIT.CHECK uploads user:42 COST 20", ints(1, 0, 0, 20, 0)},
				{"RATELIMIT.PEEK uploads user:42", ints(0, 0, 200, 20, 20)},
			},
		},
	},
	"ratelimit.release": {
		{
			Note: "A concurrency limiter of 2 requests in flight per key, a lease expiring after 30 s if it " +
				"is never released. `CHECK` adds the lease id as a sixth field (0 when denied); " +
				"`RELEASE` frees its units at once and is idempotent:",
			Steps: []ExampleStep{ // C1
				{"RATELIMIT.CREATE jobs 2 30000 ALGO concurrency", "OK"},
				{"RATELIMIT.CHECK jobs user:42", ints(1, 1, 0, 2, 0, 1700000000000000000)},
				{"RATELIMIT.CHECK jobs user:42", ints(1, 0, 0, 2, 1, 1700000000000000001)},
				{"RATELIMIT.CHECK jobs user:42", ints(0, 0, 30000, 2, 2, 0)},
				{"RATELIMIT.RELEASE jobs user:42 1700000000000000000", "(integer) 1"},
				{"RATELIMIT.RELEASE jobs user:42 1700000000000000000", "(integer) 0"},
				{"RATELIMIT.CHECK jobs user:42", ints(1, 0, 0, 2, 1, 1700000000000000002)},
				{"RATELIMIT.RELEASE api user:42 1", "(error) ERR limiter not found"},
			},
		},
	},
	"ratelimit.reset": {
		{
			Note: "The reply says whether the key had state; the limiter's totals are kept:",
			Steps: []ExampleStep{ // L1
				{"RATELIMIT.CREATE api 100 60000", "OK"},
				{"RATELIMIT.CHECK api user:42 COST 6", ints(1, 94, 0, 100, 0)},
				{"RATELIMIT.RESET api user:42", "(integer) 1"},
				{"RATELIMIT.RESET api user:42", "(integer) 0"},
				{"RATELIMIT.CHECK api user:42", ints(1, 99, 0, 100, 0)},
				{"RATELIMIT.RESET nolimiter user:42", "(error) ERR limiter not found"},
			},
		},
	},
	"ratelimit.stats": {
		{
			Note: "In RESP2 the fields come as a flat array of names and values (a map in RESP3); " +
				"`refill_per_sec` is a bulk string in RESP2 and a double in RESP3. Totals count units, " +
				"allowed and denied:",
			Steps: []ExampleStep{ // L6
				{"RATELIMIT.CREATE uploads 20 4000 ALGO token_bucket REFILL 5", "OK"},
				{"RATELIMIT.CHECK uploads user:42 COST 20", ints(1, 0, 0, 20, 0)},
				{"RATELIMIT.CHECK uploads user:42 COST 3", ints(0, 0, 600, 20, 20)},
				{"RATELIMIT.STATS uploads", ` 1) "name"
 2) "uploads"
 3) "algo"
 4) "token_bucket"
 5) "limit"
 6) (integer) 20
 7) "window_ms"
 8) (integer) 4000
 9) "unique_keys"
10) (integer) 1
11) "total_allowed"
12) (integer) 20
13) "total_denied"
14) (integer) 3
15) "refill_per_sec"
16) "5"
17) "shadow"
18) (integer) 0
19) "total_shadow_denied"
20) (integer) 0`},
			},
		},
		{
			Note: "A sliding-window limiter has no rate field:",
			Steps: []ExampleStep{
				{"RATELIMIT.CREATE api 100 60000", "OK"},
				{"RATELIMIT.STATS api", ` 1) "name"
 2) "api"
 3) "algo"
 4) "sliding_window"
 5) "limit"
 6) (integer) 100
 7) "window_ms"
 8) (integer) 60000
 9) "unique_keys"
10) (integer) 0
11) "total_allowed"
12) (integer) 0
13) "total_denied"
14) (integer) 0
15) "shadow"
16) (integer) 0
17) "total_shadow_denied"
18) (integer) 0`},
			},
		},
	},
	"ratelimit.update": {
		{
			Note: "A bucket keeps each key's units in use across the change (here 5 of 10, then 5 of 20); " +
				"a lowered limit clamps them:",
			Steps: []ExampleStep{ // U4
				{"RATELIMIT.CREATE tb 10 1000 ALGO token_bucket", "OK"},
				{"RATELIMIT.CHECK tb user:42 COST 5", ints(1, 5, 0, 10, 0)},
				{"RATELIMIT.UPDATE tb LIMIT 20", "OK"},
				{"RATELIMIT.PEEK tb user:42", ints(1, 15, 0, 20, 5)},
				{"RATELIMIT.UPDATE tb LIMIT 3 REFILL 1", "OK"},
				{"RATELIMIT.PEEK tb user:42", ints(0, 0, 1000, 3, 3)},
				{"RATELIMIT.UPDATE tb ALGO sliding_window", "(error) " + errAlgoChange},
			},
		},
		{
			Note: "Shadow mode lets every request through and still counts what it would deny; switching it " +
				"off enforces exactly the state it measured:",
			Steps: []ExampleStep{ // S1
				{"RATELIMIT.CREATE api 2 60000 SHADOW", "OK"},
				{"RATELIMIT.CHECK api user:42 COST 2", ints(1, 0, 0, 2, 0)},
				{"RATELIMIT.CHECK api user:42", ints(1, 0, 60000, 2, 2)},
				{"RATELIMIT.UPDATE api SHADOW OFF", "OK"},
				{"RATELIMIT.CHECK api user:42", ints(0, 0, 60000, 2, 2)},
			},
		},
	},
	"ratelimit.drop": {
		{
			Note: "Dropping a limiter forgets its state and totals; checks against it then reply all zeros:",
			Steps: []ExampleStep{ // L11
				{"RATELIMIT.CREATE api 100 60000", "OK"},
				{"RATELIMIT.DROP api", "OK"},
				{"RATELIMIT.CHECK api user:42", exUnknownRate},
				{"RATELIMIT.DROP api", "(error) ERR limiter not found"},
			},
		},
	},
	"ratelimit.list": {
		{
			Note: "Names are sorted bytewise (upper case first). Limiters are not keys: `KEYS` does not " +
				"list them.",
			Steps: []ExampleStep{ // L11
				{"RATELIMIT.LIST", "(empty array)"},
				{"RATELIMIT.CREATE b 1 1000", "OK"},
				{"RATELIMIT.CREATE a 1 1000", "OK"},
				{"RATELIMIT.CREATE B 1 1000", "OK"},
				{"RATELIMIT.LIST", "1) \"B\"\n2) \"a\"\n3) \"b\""},
				{"KEYS *", "(empty array)"},
			},
		},
	},

	// ---- Strings ----

	"geoadd": {
		{
			Note: "A geo set is a sorted set whose scores are the members' 52-bit geohashes: `GEOPOS` decodes " +
				"them (to the centre of the geohash cell, hence the digits), `GEOHASH` gives the standard " +
				"11-character form, and distances are in meters unless a unit is given:",
			Steps: []ExampleStep{
				{`GEOADD Sicily 13.361389 38.115556 "Palermo" 15.087269 37.502669 "Catania"`, "(integer) 2"},
				{"ZSCORE Sicily Palermo", `"3479099956230698"`},
				{"GEODIST Sicily Palermo Catania km", `"166.2742"`},
				{"GEOPOS Sicily Palermo nope", "1) 1) \"13.36138933897018433\"\n   2) \"38.11555639549629859\"\n2) (nil)"},
				{"GEOHASH Sicily Palermo Catania", "1) \"sqc8b49rny0\"\n2) \"sqdtr74hyu0\""},
				{"GEOADD Sicily 200 37 Nowhere", "(error) ERR invalid longitude,latitude pair 200.000000,37.000000"},
			},
		},
	},
	"geosearch": {
		{
			Note: "Members within 200 km of a point, nearest first, then the ones in a 400 by 200 km box around " +
				"Palermo stored with their distances (in the unit of the search) as scores:",
			Steps: []ExampleStep{
				{`GEOADD Sicily 13.361389 38.115556 "Palermo" 15.087269 37.502669 "Catania"`, "(integer) 2"},
				{"GEOSEARCH Sicily FROMLONLAT 15 37 BYRADIUS 200 km ASC WITHDIST",
					"1) 1) \"Catania\"\n   2) \"56.4413\"\n2) 1) \"Palermo\"\n   2) \"190.4424\""},
				{"GEOSEARCHSTORE near Sicily FROMMEMBER Palermo BYBOX 400 200 km ASC STOREDIST", "(integer) 2"},
				{"ZRANGE near 0 -1 WITHSCORES", "1) \"Palermo\"\n2) \"0\"\n3) \"Catania\"\n4) \"166.27415156960032\""},
			},
		},
	},
	"get": {
		{Steps: []ExampleStep{
			{"GET nonexisting", "(nil)"},
			{"SET mykey Hello", "OK"},
			{"GET mykey", `"Hello"`},
		}},
	},
	"set": {
		{Steps: []ExampleStep{
			{"SET mykey Hello", "OK"},
			{"GET mykey", `"Hello"`},
			{`SET anotherkey "will expire in a minute" EX 60`, "OK"},
			{"TTL anotherkey", "(integer) 60"},
			{"SET mykey World NX", "(nil)"},
			{"SET mykey World XX GET", `"Hello"`},
			{"GET mykey", `"World"`},
		}},
	},
	"incr": {
		{Steps: []ExampleStep{
			{"SET mykey 10", "OK"},
			{"INCR mykey", "(integer) 11"},
			{"GET mykey", `"11"`},
			{"INCR newcounter", "(integer) 1"},
			{"SET greeting hello", "OK"},
			{"INCR greeting", "(error) ERR value is not an integer or out of range"},
		}},
	},

	// ---- Keyspace ----

	"del": {
		{Steps: []ExampleStep{
			{"SET key1 Hello", "OK"},
			{"SET key2 World", "OK"},
			{"DEL key1 key2 key3", "(integer) 2"},
		}},
	},
	"exists": {
		{
			Note: "A key listed several times is counted each time:",
			Steps: []ExampleStep{
				{"SET key1 Hello", "OK"},
				{"EXISTS key1", "(integer) 1"},
				{"EXISTS nosuchkey", "(integer) 0"},
				{"SET key2 World", "OK"},
				{"EXISTS key1 key2 nosuchkey", "(integer) 2"},
				{"EXISTS key1 key1", "(integer) 2"},
			},
		},
	},
	"expire": {
		{Steps: []ExampleStep{
			{"SET mykey Hello", "OK"},
			{"EXPIRE mykey 10", "(integer) 1"},
			{"TTL mykey", "(integer) 10"},
			{`SET mykey "Hello World"`, "OK"},
			{"TTL mykey", "(integer) -1"},
			{"EXPIRE mykey 10 XX", "(integer) 0"},
			{"TTL mykey", "(integer) -1"},
			{"EXPIRE mykey 10 NX", "(integer) 1"},
			{"TTL mykey", "(integer) 10"},
		}},
		{
			Note: "Ten seconds later the key is still there: it expires once the clock passes its expire " +
				"time.",
			Clock: ExampleT0 + 10000,
			Steps: []ExampleStep{
				{"PTTL mykey", "(integer) 0"},
			},
		},
		{
			Note:  "One millisecond later it is gone:",
			Clock: ExampleT0 + 10001,
			Steps: []ExampleStep{
				{"GET mykey", "(nil)"},
			},
		},
	},
	"ttl": {
		{
			Note: "-1 means the key has no expire time, -2 that it does not exist:",
			Steps: []ExampleStep{
				{"SET mykey Hello", "OK"},
				{"EXPIRE mykey 10", "(integer) 1"},
				{"TTL mykey", "(integer) 10"},
				{"SET other World", "OK"},
				{"TTL other", "(integer) -1"},
				{"TTL nosuchkey", "(integer) -2"},
			},
		},
		{
			Note:  "Three seconds later:",
			Clock: ExampleT0 + 3000,
			Steps: []ExampleStep{
				{"TTL mykey", "(integer) 7"},
				{"PTTL mykey", "(integer) 7000"},
			},
		},
	},
	"keys": {
		{
			Note: "`KEYS` returns the matching keys in no particular order; a production server should use `SCAN`.",
			Steps: []ExampleStep{
				{"MSET firstname Jack lastname Stuntman age 35", "OK"},
				{"KEYS a??", `1) "age"`},
				{"KEYS *nomatch*", "(empty array)"},
			},
		},
	},
	"scan": {
		{
			Note: "The reply is the next cursor (0 when the scan is complete) and a batch of keys:",
			Steps: []ExampleStep{
				{"MSET user:42 Alice session:9 x", "OK"},
				{"SCAN 0 MATCH user:*", "1) \"0\"\n2) 1) \"user:42\""},
				{"SCAN 0 MATCH nomatch:*", "1) \"0\"\n2) (empty array)"},
			},
		},
	},

	// ---- Connection ----

	"ping": {
		{Steps: []ExampleStep{
			{"PING", "PONG"},
			{`PING "hello world"`, `"hello world"`},
		}},
	},
	"echo": {
		{Steps: []ExampleStep{
			{`ECHO "Hello World!"`, `"Hello World!"`},
		}},
	},
	"select": {
		{
			Note: "Each connection starts in database 0; redis-cli shows another database in its prompt:",
			Steps: []ExampleStep{
				{"SET greeting hello", "OK"},
				{"SELECT 1", "OK"},
				{"GET greeting", "(nil)"},
				{"SELECT 0", "OK"},
				{"GET greeting", `"hello"`},
			},
		},
	},
	"client|setname": {
		{Steps: []ExampleStep{
			{"CLIENT SETNAME worker-1", "OK"},
			{"CLIENT GETNAME", `"worker-1"`},
			{`CLIENT SETNAME "worker 1"`, "(error) ERR Client names cannot contain spaces, newlines or special characters."},
		}},
	},

	// ---- Server ----

	"config|get": {
		{
			Note: "The reply pairs names with values. A pattern matches several directives:",
			Steps: []ExampleStep{
				{"CONFIG GET throttle-compat", "1) \"throttle-compat\"\n2) \"redis-cell\""},
				{"CONFIG GET ratelimit.*", "1) \"ratelimit.max-limiters\"\n2) \"10000\"\n3) \"ratelimit.sliding-window-max-entries\"\n4) \"1024\""},
			},
		},
	},
	"config|set": {
		{Steps: []ExampleStep{
			{"CONFIG SET throttle-compat dragonfly", "OK"},
			{"CONFIG GET throttle-compat", "1) \"throttle-compat\"\n2) \"dragonfly\""},
		}},
	},
	"debug": {
		{
			Note: "With `enable-debug-command yes`, `DEBUG CLOCK` freezes and moves the clock that expiry and " +
				"the rate limiters read:",
			Steps: []ExampleStep{
				{"DEBUG CLOCK SET 1700000000000", "OK"},
				{"DEBUG CLOCK GET", "(integer) 1700000000000"},
				{"SET session:1 x PX 1500", "OK"},
				{"DEBUG CLOCK ADVANCE 1000", "OK"},
				{"PTTL session:1", "(integer) 500"},
				{"DEBUG CLOCK ADVANCE 501", "OK"},
				{"GET session:1", "(nil)"},
				{"DEBUG CLOCK GET", "(integer) 1700000001501"},
			},
		},
	},
}

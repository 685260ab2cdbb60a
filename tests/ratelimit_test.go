package tests

// Integration tests for spec/RATELIMIT.md: every test vector (V, P, R, C and L tables) and every
// error row, run through the real server with go-redis under RESP2 and RESP3.
//
// The tables read like the spec's. A row is {id, t, command, expected reply}: t is the offset in
// ms from testutil.T0 that the command clock is set to (DEBUG CLOCK SET) before the command runs,
// and the reply is rendered as text:
//
//	[0,10,9,-1,6000]   an array (here the five integers)
//	6000               an integer
//	"hello"            a bulk string; OK is the simple string OK; (nil) a null
//	ERR ...            an error, compared exactly
//	1 | 0              either reply is acceptable (V25 only)
//
// RATELIMIT.STATS rows list the expected fields as name=value (see rlCheckStats). In the named
// limiter tables the command words CREATE, CHECK, PEEK, RESET, STATS, DROP and LIST stand for
// RATELIMIT.<word>, as in the spec's §8.9. A word `""` is an empty argument.
//
// Not reproduced here: V28 (in transaction_test.go, TestMultiExecFreezesTime) and V29 (a wall clock stepping back:
// covered by internal/clock's unit tests; DEBUG CLOCK SET can only freeze time). Lists and other
// non-string types cannot be created yet, so the WRONGTYPE rows that start with `RPUSH l a`
// (V21, V21d, P5, R2, C4) use a non-integer string key instead.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

const (
	rlErrPeriod    = "ERR invalid period: must be a positive integer (milliseconds)"
	rlErrBurst     = "ERR invalid burst: must be a positive integer"
	rlErrCount     = "ERR invalid count: must be a positive integer"
	rlWrongType    = "WRONGTYPE Operation against a key holding the wrong kind of value"
	rlErrNotInt    = "ERR value is not an integer or out of range"
	rlErrZeroRates = "ERR zero rates are not supported"
	rlErrName      = "ERR invalid name: must be 1 to 512 bytes"
	rlErrLimit     = "ERR invalid limit: must be a positive integer"
	rlErrWindow    = "ERR invalid window: must be a positive integer (milliseconds)"
	rlErrRate      = "ERR invalid rate: must be a positive number"
	rlErrSyntax    = "ERR syntax error"
	rlErrExists    = "ERR limiter already exists or limit reached"
	rlErrCost      = "ERR invalid cost: must be a positive integer"
	rlErrNotFound  = "ERR limiter not found"
)

func rlArity(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// rlStep is one row of a vector table.
type rlStep struct {
	id   string // the spec's vector id, or "" for a follow-up row
	at   int64  // command time, ms after T0
	cmd  string // words separated by single spaces; `""` is an empty argument
	want string // rendered reply (see the file comment)
}

// rlCStep is a CL.THROTTLE row with one expectation per throttle-compat mode; df "same" means
// the dragonfly column equals the redis-cell column.
type rlCStep struct {
	id       string
	at       int64
	cmd      string
	cell, df string
}

type rlBlock struct {
	name  string
	steps []rlStep
}

type rlCBlock struct {
	name  string
	steps []rlCStep
}

// rlWords splits a table command into arguments.
func rlWords(cmd string) []any {
	var out []any
	for _, w := range strings.Split(cmd, " ") {
		if w == `""` {
			w = ""
		}
		out = append(out, w)
	}
	return out
}

// rlNamedWords are the RATELIMIT subcommand words of the spec's §8.9 shorthand.
var rlNamedWords = map[string]bool{"CREATE": true, "CHECK": true, "PEEK": true, "RESET": true,
	"STATS": true, "DROP": true, "LIST": true, "UPDATE": true, "RELEASE": true}

// rlRender renders a go-redis reply as the tables write it.
func rlRender(v any, err error) string {
	if err == redis.Nil {
		return "(nil)"
	}
	if err != nil {
		return err.Error()
	}
	return rlRenderVal(v)
}

func rlRenderVal(v any) string {
	switch x := v.(type) {
	case nil:
		return "(nil)"
	case int64:
		return strconv.FormatInt(x, 10)
	case string:
		if x == "OK" {
			return "OK"
		}
		return strconv.Quote(x)
	case float64:
		return "(double)" + strconv.FormatFloat(x, 'f', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = rlRenderVal(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[any]any:
		parts := make([]string, 0, len(x))
		for k, e := range x {
			parts = append(parts, rlRenderVal(k)+":"+rlRenderVal(e))
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// rlReset gives the next block an empty server: no keys, no limiters, default rate-limit
// settings, the clock at T0.
func rlReset(t *testing.T, c *redis.Client) {
	t.Helper()
	require.NoError(t, c.Do(ctx, "FLUSHALL").Err())
	require.NoError(t, c.Do(ctx, "CONFIG", "SET", "throttle-compat", "redis-cell",
		"ratelimit.max-limiters", "10000", "ratelimit.sliding-window-max-entries", "1024").Err())
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
}

// rlRun runs one table row: sets the clock, sends the command and compares the reply.
func rlRun(t *testing.T, c *redis.Client, named bool, id string, at int64, cmd, want string) {
	t.Helper()
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+at).Err())
	args := rlWords(cmd)
	if named && rlNamedWords[args[0].(string)] {
		args[0] = "RATELIMIT." + args[0].(string)
	}
	v, err := c.Do(ctx, args...).Result()
	where := fmt.Sprintf("%s t0+%d: %s", id, at, cmd)
	if strings.EqualFold(args[0].(string), "RATELIMIT.STATS") && err == nil {
		rlCheckStats(t, c, v, want, where)
		return
	}
	got := rlRender(v, err)
	if alts := strings.Split(want, " | "); len(alts) > 1 {
		require.Contains(t, alts, got, where)
		return
	}
	require.Equal(t, want, got, where)
}

// rlRunBlocks runs each block from an empty server.
func rlRunBlocks(t *testing.T, c *redis.Client, named bool, blocks []rlBlock) {
	for _, b := range blocks {
		t.Run(b.name, func(t *testing.T) {
			rlReset(t, c)
			id := b.name
			for _, s := range b.steps {
				if s.id != "" {
					id = s.id
				}
				rlRun(t, c, named, id, s.at, s.cmd, s.want)
			}
		})
	}
}

// rlRunThrottleBlocks runs each CL.THROTTLE block in both throttle-compat modes.
func rlRunThrottleBlocks(t *testing.T, c *redis.Client, blocks []rlCBlock) {
	for _, b := range blocks {
		for _, mode := range []string{"redis-cell", "dragonfly"} {
			t.Run(b.name+"/"+mode, func(t *testing.T) {
				rlReset(t, c)
				require.NoError(t, c.Do(ctx, "CONFIG", "SET", "throttle-compat", mode).Err())
				id := b.name
				for _, s := range b.steps {
					if s.id != "" {
						id = s.id
					}
					want := s.cell
					if mode == "dragonfly" && s.df != "same" {
						want = s.df
					}
					rlRun(t, c, false, id+"/"+mode, s.at, s.cmd, want)
				}
			})
		}
	}
}

// rlStatsFields converts a RATELIMIT.STATS reply to its fields in wire order (RESP2: a flat
// array of alternating names and values; RESP3: a map, whose order go-redis does not keep: the
// exact-bytes test checks it). Values are rendered like the tables; the rate must be a bulk
// string in RESP2 and a double in RESP3, and is rendered as its text either way.
func rlStatsFields(t *testing.T, c *redis.Client, v any, where string) map[string]string {
	t.Helper()
	fields := map[string]string{}
	var names []string
	put := func(k, val any) {
		name, ok := k.(string)
		require.True(t, ok, "%s: field name %T", where, k)
		names = append(names, name)
		switch x := val.(type) {
		case int64:
			fields[name] = strconv.FormatInt(x, 10)
		case string:
			if strings.HasSuffix(name, "_per_sec") {
				require.Equal(t, 2, c.Options().Protocol, "%s: %s must be a double in RESP3", where, name)
			}
			fields[name] = x
		case float64:
			require.Equal(t, 3, c.Options().Protocol, "%s: %s must be a bulk string in RESP2", where, name)
			require.True(t, strings.HasSuffix(name, "_per_sec"), "%s: %s is a double", where, name)
			fields[name] = strconv.FormatFloat(x, 'f', -1, 64)
		default:
			t.Fatalf("%s: field %s has type %T", where, name, val)
		}
	}
	if c.Options().Protocol == 3 {
		m, ok := v.(map[any]any)
		require.True(t, ok, "%s: RESP3 STATS must be a map, got %T", where, v)
		for k, val := range m {
			put(k, val)
		}
	} else {
		a, ok := v.([]any)
		require.True(t, ok, "%s: RESP2 STATS must be an array, got %T", where, v)
		require.Zero(t, len(a)%2, where)
		for i := 0; i < len(a); i += 2 {
			put(a[i], a[i+1])
		}
	}
	order := []string{"name", "algo", "limit", "window_ms", "unique_keys", "total_allowed", "total_denied"}
	switch fields["algo"] {
	case "token_bucket":
		order = append(order, "refill_per_sec")
	case "leaky_bucket":
		order = append(order, "drain_per_sec")
	}
	order = append(order, "shadow", "total_shadow_denied") // after the spec's fields
	if c.Options().Protocol == 3 {
		slices.Sort(names)
		order = slices.Sorted(slices.Values(order))
	}
	require.Equal(t, order, names, "%s: STATS fields", where)
	return fields
}

// rlCheckStats compares the fields a table row lists ("unique_keys=1 total_allowed=5").
func rlCheckStats(t *testing.T, c *redis.Client, v any, want, where string) {
	t.Helper()
	fields := rlStatsFields(t, c, v, where)
	for _, kv := range strings.Fields(want) {
		k, val, ok := strings.Cut(kv, "=")
		require.True(t, ok, "bad STATS expectation %q", kv)
		require.Equal(t, val, fields[k], "%s: %s", where, k)
	}
}

// ---- GCRA.LIMIT (§3.5) ----

// gcraLimitBlocks are the spec's GCRA.LIMIT vectors (§3.5) as runnable blocks; the
// persistence tests replay some of them with a restart after every row.
var gcraLimitBlocks = []rlBlock{
	{"V1-V3c", []rlStep{
		{"V1", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "PTTL k", "6000"},
		{"", 0, "GET k", `"1700000006000000000"`},
		{"V2", 0, "GCRA.LIMIT k 60000 10", "[0,10,8,-1,12000]"},
		{"V3", 0, "GCRA.LIMIT k 60000 10 10", "[1,10,0,12000,12000]"},
		{"", 0, "GET k", `"1700000012000000000"`},
		{"", 0, "PTTL k", "12000"},
		{"V3b", 11999, "GCRA.LIMIT k 60000 10 10", "[1,10,0,1,1]"},
		{"V3c", 12000, "GCRA.LIMIT k 60000 10 10", "[0,10,0,-1,60000]"},
	}},
	{"V4-V4c", []rlStep{
		{"V4", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,8,-1,12000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,7,-1,18000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,6,-1,24000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,5,-1,30000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,4,-1,36000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,3,-1,42000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,2,-1,48000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,1,-1,54000]"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,0,-1,60000]"},
		{"V4b", 0, "GCRA.LIMIT k 60000 10", "[1,10,0,6000,60000]"},
		{"", 0, "PTTL k", "60000"},
		{"V4c", 1000, "PTTL k", "59000"},
	}},
	{"V5-V5b", []rlStep{
		{"V5", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
		{"", 1, "GCRA.LIMIT k 60000 10", "[0,10,8,-1,11999]"},
		{"", 2, "GCRA.LIMIT k 60000 10", "[0,10,7,-1,17998]"},
		{"", 3, "GCRA.LIMIT k 60000 10", "[0,10,6,-1,23997]"},
		{"", 4, "GCRA.LIMIT k 60000 10", "[0,10,5,-1,29996]"},
		{"", 5, "GCRA.LIMIT k 60000 10", "[0,10,4,-1,35995]"},
		{"", 6, "GCRA.LIMIT k 60000 10", "[0,10,3,-1,41994]"},
		{"", 7, "GCRA.LIMIT k 60000 10", "[0,10,2,-1,47993]"},
		{"", 8, "GCRA.LIMIT k 60000 10", "[0,10,1,-1,53992]"},
		{"", 9, "GCRA.LIMIT k 60000 10", "[0,10,0,-1,59991]"},
		{"V5b", 10, "GCRA.LIMIT k 60000 10", "[1,10,0,5990,59990]"},
	}},
	{"V6", []rlStep{
		{"V6", 0, "GCRA.LIMIT k 60000 10 10", "[0,10,0,-1,60000]"},
		{"V6b", 5999, "GCRA.LIMIT k 60000 10", "[1,10,0,1,54001]"},
		{"V6c", 6000, "GCRA.LIMIT k 60000 10", "[0,10,0,-1,60000]"},
		{"V6d", 6000, "GCRA.LIMIT k 60000 10", "[1,10,0,6000,60000]"},
		{"V6e", 18000, "GCRA.LIMIT k 60000 10 2", "[0,10,0,-1,60000]"},
		{"V6f", 30000, "GCRA.LIMIT k 60000 10 3", "[1,10,0,6000,48000]"},
	}},
	{"V7", []rlStep{
		{"V7", 0, "GCRA.LIMIT k 60000 10 10", "[0,10,0,-1,60000]"},
		{"", 0, "GCRA.LIMIT k 60000 10 11", "[1,10,0,-1,60000]"},
		{"V7b", 30000, "GCRA.LIMIT k 60000 10 11", "[1,10,0,-1,30000]"},
		{"", 60000, "GCRA.LIMIT k 60000 10 11", "[1,10,0,-1,0]"},
		{"", 60001, "EXISTS k", "0"},
	}},
	{"V8", []rlStep{
		{"V8", 0, "GCRA.LIMIT k 1000 5 6", "[1,5,0,-1,0]"},
		{"", 0, "EXISTS k", "0"},
	}},
	{"V9", []rlStep{
		{"V9", 0, "GCRA.LIMIT k 1000 3", "[0,3,2,-1,334]"},
		{"", 0, "GCRA.LIMIT k 1000 3", "[0,3,1,-1,667]"},
		{"", 0, "GCRA.LIMIT k 1000 3", "[0,3,0,-1,1000]"},
		{"", 0, "GCRA.LIMIT k 1000 3", "[1,3,0,334,1000]"},
		{"V9b", 333, "GCRA.LIMIT k 1000 3", "[1,3,0,1,667]"},
		{"", 334, "GCRA.LIMIT k 1000 3", "[0,3,0,-1,1000]"},
		{"", 334, "GCRA.LIMIT k 1000 3", "[1,3,0,333,1000]"},
	}},
	{"V10", []rlStep{
		{"V10", 0, "GCRA.LIMIT k 1 1", "[0,1,0,-1,1]"},
		{"", 0, "GCRA.LIMIT k 1 1", "[1,1,0,1,1]"},
		{"", 1, "GCRA.LIMIT k 1 1", "[0,1,0,-1,1]"},
	}},
	{"V11", []rlStep{
		{"V11", 0, "GCRA.LIMIT k 1 3", "[0,3,2,-1,1]"},
		{"", 0, "GCRA.LIMIT k 1 3", "[0,3,1,-1,1]"},
		{"", 0, "GCRA.LIMIT k 1 3", "[0,3,0,-1,1]"},
		{"", 0, "GCRA.LIMIT k 1 3", "[1,3,0,1,1]"},
	}},
	{"V12", []rlStep{{"V12", 0, "GCRA.LIMIT k 1 2000000", "[0,2000000,1999999,-1,1]"}}},
	{"V12b", []rlStep{
		{"V12b", 0, "GCRA.LIMIT k 1 2000000 2000000", "[0,2000000,0,-1,2]"},
		{"", 0, "GCRA.LIMIT k 1 2000000", "[1,2000000,0,1,2]"},
	}},
	{"V13", []rlStep{{"V13", 0, "GCRA.LIMIT k 1 1000000000000", "[0,1000000000000,999999999999,-1,1]"}}},
	{"V14", []rlStep{
		{"V14", 0, "GCRA.LIMIT k 1000000000000 1", "[0,1,0,-1,1000000000000]"},
		{"", 0, "GCRA.LIMIT k 1000000000000 1", "[1,1,0,1000000000000,1000000000000]"},
		{"", 0, "GET k", `"2700000000000000000"`},
	}},
	{"V15", []rlStep{
		{"V15", 0, "GCRA.LIMIT k 1000000000000 3", "[0,3,2,-1,333333333334]"},
		{"", 0, "GCRA.LIMIT k 1000000000000 3", "[0,3,1,-1,666666666667]"},
	}},
	{"V16", []rlStep{
		{"V16", 0, "GCRA.LIMIT k 60000 9223372036854775807", "[0,9223372036854775807,9223372036854775806,-1,1]"},
	}},
	// §3.2: TAT' saturates at MAX (bursts above ~7.4*10^18); the expiry is ceil_ms(MAX).
	{"3.2 saturation", []rlStep{
		{"3.2", 0, "GCRA.LIMIT k 60000 9223372036854775807 9223372036854775807", "[0,9223372036854775807,0,-1,9223372036855]"},
		{"", 0, "GET k", `"9223372036854775807"`},
		{"", 0, "PTTL k", "7523372036855"},
		{"", 0, "GCRA.LIMIT k 60000 9223372036854775807", "[0,9223372036854775807,1699999999999999999,-1,7523372036855]"},
		{"", 0, "GET k", `"9223372036854775807"`},
		// the stored TAT is MAX, so exactly MAX - now ns of the burst are used
		{"", 0, "GCRA.LIMIT k 60000 9223372036854775807 1700000000000000001", "[1,9223372036854775807,0,1,7523372036855]"},
		{"", 0, "GCRA.LIMIT k 60000 9223372036854775807 1700000000000000000", "[0,9223372036854775807,0,-1,9223372036855]"},
	}},
	{"V20", []rlStep{{"V20", 0, "GCRA.LIMIT k 0 0 0", rlErrPeriod}}},
	// V21 and V21d: lists do not exist yet; a non-integer string stands in for `RPUSH l a`.
	{"V21", []rlStep{
		{"V21", 0, "SET l a", "OK"},
		{"", 0, "GCRA.LIMIT l 60000 10", rlWrongType},
		{"", 0, "GET l", `"a"`},
		{"", 0, "PTTL l", "-1"},
	}},
	{"V21b", []rlStep{
		{"V21b", 0, "SET s hello EX 100", "OK"},
		{"", 0, "GCRA.LIMIT s 60000 10", rlWrongType},
		{"", 0, "GET s", `"hello"`},
		{"", 0, "TTL s", "100"},
	}},
	{"V21c", []rlStep{
		{"V21c", 0, "SET f 1.5", "OK"},
		{"", 0, "SET e \"\"", "OK"},
		{"", 0, "GCRA.LIMIT f 60000 10", rlWrongType},
		{"", 0, "GCRA.LIMIT e 60000 10", rlWrongType},
		{"", 0, "GET f", `"1.5"`},
		{"", 0, "GET e", `""`},
		// more strings that are not integers under §2.2
		{"2.7", 0, "SET p +5", "OK"},
		{"", 0, "GCRA.LIMIT p 60000 10", rlWrongType},
		{"", 0, "SET z 010", "OK"},
		{"", 0, "GCRA.LIMIT z 60000 10", rlWrongType},
		{"", 0, "SET m -0", "OK"},
		{"", 0, "GCRA.LIMIT m 60000 10", rlWrongType},
		{"", 0, "SET o 9223372036854775808", "OK"},
		{"", 0, "GCRA.LIMIT o 60000 10", rlWrongType},
		{"", 0, "GET o", `"9223372036854775808"`},
	}},
	{"V21d", []rlStep{
		{"V21d", 0, "SET l a", "OK"},
		{"", 0, "GCRA.LIMIT l 0 10", rlErrPeriod},
	}},
	{"V22", []rlStep{
		{"V22", 0, "SET n 123", "OK"},
		{"", 0, "GCRA.LIMIT n 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "GET n", `"1700000006000000000"`},
		{"", 0, "PTTL n", "6000"},
		{"", 0, "SET m -5", "OK"},
		{"", 0, "GCRA.LIMIT m 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "GET m", `"1700000006000000000"`},
		{"", 0, "PTTL m", "6000"},
		{"2.7", 0, "SET o -9223372036854775808 EX 100", "OK"},
		{"", 0, "GCRA.LIMIT o 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "PTTL o", "6000"},
	}},
	{"V23", []rlStep{
		{"V23", 0, "SET big 9223372036854775807", "OK"},
		{"", 0, "GCRA.LIMIT big 60000 10", "[1,10,0,7523371982855,7523372036855]"},
		{"", 0, "GET big", `"9223372036854775807"`},
		{"", 0, "PTTL big", "-1"},
	}},
	{"V24", []rlStep{
		{"V24", 0, "GCRA.LIMIT k 60000 10 5", "[0,10,5,-1,30000]"},
		{"", 1000, "GCRA.LIMIT k 1000 10", "[1,10,0,28100,29000]"},
		{"", 1000, "GCRA.LIMIT k 120000 10", "[0,10,6,-1,41000]"},
	}},
	{"V25", []rlStep{
		{"V1", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
		// expired when now > expiry (Redis): 1 and PTTL 0; when now >= expiry: 0 and -2
		{"V25", 6000, "PTTL k", "0 | -2"},
		{"", 6000, "EXISTS k", "1 | 0"},
		{"", 6001, "EXISTS k", "0"},
		// active expiry deletes it (unless the background cycle got there first)
		{"", 6001, "DEBUG EXPIRE-NOW", "1 | 0"},
		{"", 6001, "DBSIZE", "0"},
	}},
	{"V26", []rlStep{
		{"V26", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "GCRA.LIMIT j 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "GCRA.RESET k j nokey k", "2"},
		{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
		{"V26b", 7000, "GCRA.RESET k", "0"},
	}},
	{"V27", []rlStep{
		{"V27", 0, "GCRA.LIMIT k 60000", rlArity("gcra.limit")},
		{"", 0, "GCRA.LIMIT k 60000 10 1 x", rlArity("gcra.limit")},
		{"", 0, "GCRA.RESET", rlArity("gcra.reset")},
		{"", 0, "EXISTS k", "0"},
	}},
	{"2.6 case-insensitive names", []rlStep{
		{"2.6", 0, "gcra.limit k 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "Gcra.Peek k 60000 10", "[0,10,8,-1,12000]"},
		{"", 0, "gcra.reset k", "1"},
	}},
	{"2.7 GCRA keys are ordinary strings", []rlStep{
		{"2.7", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
		{"", 0, "TYPE k", `"string"`},
		{"", 0, "KEYS *", `["k"]`},
		{"", 0, "DBSIZE", "1"},
		{"", 0, "FLUSHDB", "OK"},
		{"", 0, "EXISTS k", "0"},
	}},
}

func TestGCRALimitVectors(t *testing.T) {
	blocks := gcraLimitBlocks
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, false, blocks)
	})
}

// TestGCRAArgumentErrors covers V17-V19, the §2.2 rejections and P6's argument rows, for both
// GCRA.LIMIT and GCRA.PEEK (same validation, §4). None of them may create the key.
func TestGCRAArgumentErrors(t *testing.T) {
	notInt := []string{"abc", "1.5", "+5", "010", "-0", "", " 5", "5 ", "1e3", "0x10", "9223372036854775808"}
	rows := []struct {
		id   string
		cmd  string // %s is the bad argument
		bad  []string
		want string
	}{
		{"V17", "%s k %s 10", append([]string{"0", "-1", "1000000000001"}, notInt...), rlErrPeriod},
		{"V18", "%s k 60000 %s", append([]string{"0", "-3", "x"}, notInt...), rlErrBurst},
		{"V19", "%s k 60000 10 %s", append([]string{"0", "-1", "2.0"}, notInt...), rlErrCount},
		{"V20", "%s k %s 0 0", []string{"0"}, rlErrPeriod},
		{"V20", "%s k 60000 %s 0", []string{"0"}, rlErrBurst},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		for _, name := range []string{"GCRA.LIMIT", "GCRA.PEEK", "GCRA.REFUND"} {
			for _, r := range rows {
				for _, bad := range r.bad {
					var args []any
					for _, w := range strings.Split(fmt.Sprintf(r.cmd, name, "\x00"), " ") {
						args = append(args, strings.ReplaceAll(w, "\x00", bad))
					}
					require.EqualError(t, c.Do(ctx, args...).Err(), r.want, "%s %v", r.id, args)
				}
			}
		}
		// Boundaries that are accepted.
		require.Equal(t, "[0,1,0,-1,1000000000000]", rlRender(c.Do(ctx, "GCRA.PEEK", "k", "1000000000000", "1").Result()))
		require.Equal(t, "[0,9223372036854775807,0,-1,9223372036855]",
			rlRender(c.Do(ctx, "GCRA.PEEK", "k", "60000", "9223372036854775807", "9223372036854775807").Result()))
		require.Equal(t, "[1,10,0,-1,0]", rlRender(c.Do(ctx, "GCRA.PEEK", "k", "60000", "10", "9223372036854775807").Result()))
		require.Zero(t, c.DBSize(ctx).Val(), "an argument error writes nothing")
	})
}

// ---- GCRA.PEEK (§4) and GCRA.RESET (§5) ----

func TestGCRAPeekVectors(t *testing.T) {
	v1 := rlStep{"V1", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"}
	v4 := []rlStep{{"V4", 0, "GCRA.LIMIT k 60000 10 10", "[0,10,0,-1,60000]"}}
	blocks := []rlBlock{
		{"P1", []rlStep{
			{"P1", 0, "GCRA.PEEK k 60000 10", "[0,10,9,-1,6000]"},
			{"", 0, "EXISTS k", "0"},
		}},
		{"P2", []rlStep{
			v1,
			{"P2", 0, "GCRA.PEEK k 60000 10", "[0,10,8,-1,12000]"},
			{"", 0, "GET k", `"1700000006000000000"`},
			{"", 0, "PTTL k", "6000"},
			{"", 0, "GCRA.LIMIT k 60000 10", "[0,10,8,-1,12000]"},
		}},
		{"P3-P4", append(v4,
			rlStep{"P3", 0, "GCRA.PEEK k 60000 10", "[1,10,0,6000,60000]"},
			rlStep{"", 0, "GCRA.PEEK k 60000 10 10", "[1,10,0,60000,60000]"},
			rlStep{"", 0, "GCRA.PEEK k 60000 10 11", "[1,10,0,-1,60000]"},
			rlStep{"P4", 6000, "GCRA.PEEK k 60000 10", "[0,10,0,-1,60000]"},
			rlStep{"", 6000, "GCRA.PEEK k 60000 10 2", "[1,10,0,6000,54000]"},
			rlStep{"", 6000, "PTTL k", "54000"},
			rlStep{"", 6000, "GET k", `"1700000060000000000"`},
		)},
		// P5: `RPUSH l a` is replaced by a non-integer string (no lists yet).
		{"P5", []rlStep{
			{"P5", 0, "SET l a", "OK"},
			{"", 0, "GCRA.PEEK l 60000 10", rlWrongType},
			{"", 0, "GET l", `"a"`},
			{"", 0, "SET s hello EX 100", "OK"},
			{"", 0, "GCRA.PEEK s 60000 10", rlWrongType},
			{"", 0, "GCRA.PEEK s 60000 10 11", rlWrongType},
			{"", 0, "GET s", `"hello"`},
			{"", 0, "TTL s", "100"},
		}},
		{"P6", []rlStep{
			{"P6", 0, "GCRA.PEEK k 0 10", rlErrPeriod},
			{"", 0, "GCRA.PEEK k 60000", rlArity("gcra.peek")},
			{"", 0, "GCRA.PEEK k 60000 10 1 x", rlArity("gcra.peek")},
		}},
		{"§4 expired key reads as absent", []rlStep{
			v1,
			{"§4", 6001, "GCRA.PEEK k 60000 10 10", "[0,10,0,-1,60000]"},
			{"", 6001, "EXISTS k", "0"},
		}},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, false, blocks)
	})
}

func TestGCRAResetVectors(t *testing.T) {
	blocks := []rlBlock{
		{"R1", []rlStep{
			{"R1", 0, "GCRA.LIMIT k 60000 10", "[0,10,9,-1,6000]"},
			{"", 0, "SET s hello", "OK"},
			{"", 0, "GCRA.RESET k s", rlWrongType},
			{"", 0, "EXISTS k", "1"},
			{"", 0, "GET s", `"hello"`},
		}},
		// R2: `RPUSH l a` is replaced by a non-integer string (no lists yet).
		{"R2", []rlStep{
			{"R2", 0, "SET l a", "OK"},
			{"", 0, "GCRA.RESET nokey l", rlWrongType},
			{"", 0, "GET l", `"a"`},
		}},
		{"R3", []rlStep{
			{"R3", 0, "SET n 42", "OK"},
			{"", 0, "GCRA.RESET n", "1"},
			{"", 0, "EXISTS n", "0"},
		}},
		{"R4", []rlStep{
			{"R4", 0, "SET s hello PX 1", "OK"},
			{"", 2, "GCRA.RESET s", "0"},
		}},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, false, blocks)
	})
}

// ---- CL.THROTTLE (§6.6) ----

func TestCLThrottleVectors(t *testing.T) {
	blocks := []rlCBlock{
		{"C1", []rlCStep{
			{"C1.0", 0, "CL.THROTTLE k 4 1 1 6", "[1,5,5,-1,0]", "[1,5,5,-1,0]"},
			{"C1.1", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,4,-1,1]", "[0,5,4,-1,2]"},
			{"C1.2", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,3,-1,2]", "[0,5,3,-1,3]"},
			{"C1.3", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,2,-1,3]", "[0,5,2,-1,4]"},
			{"C1.4", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,1,-1,4]", "[0,5,1,-1,5]"},
			{"C1.5", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,0,-1,5]", "[0,5,0,-1,6]"},
			{"C1.6", 0, "CL.THROTTLE k 4 1 1 1", "[1,5,0,1,5]", "[1,5,0,2,6]"},
			{"C1.7", 3000, "CL.THROTTLE k 4 1 1 1", "[0,5,2,-1,3]", "[0,5,2,-1,4]"},
			{"C1.8", 3100, "CL.THROTTLE k 4 1 1 1", "[0,5,1,-1,4]", "[0,5,1,-1,4]"},
			{"C1.9", 4000, "CL.THROTTLE k 4 1 1 1", "[0,5,1,-1,4]", "[0,5,1,-1,5]"},
			{"C1.10", 8000, "CL.THROTTLE k 4 1 1 1", "[0,5,4,-1,1]", "[0,5,4,-1,2]"},
			{"C1.11", 9500, "CL.THROTTLE k 4 1 1 1", "[0,5,4,-1,1]", "[0,5,4,-1,2]"},
			{"", 9500, "PTTL k", "1000", "1000"},
			{"C1.12", 9500, "CL.THROTTLE k 4 1 1 0", "[0,5,4,-1,1]", "[0,5,4,-1,2]"},
			{"", 9500, "PTTL k", "1000", "1000"},
			{"", 9500, "GET k", `"1700000010500000000"`, "same"},
			{"C1.13", 9500, "CL.THROTTLE k 4 1 1 2", "[0,5,2,-1,3]", "[0,5,2,-1,4]"},
			{"C1.14", 9500, "CL.THROTTLE k 4 1 1 5", "[1,5,2,3,3]", "[1,5,2,4,4]"},
			{"C1.15", 15000, "CL.THROTTLE k 4 1 1 6", "[1,5,5,-1,0]", "[1,5,5,-1,0]"},
		}},
		{"C2", []rlCStep{
			{"C2.1", 0, "CL.THROTTLE foo 4 1 10 6", "[1,5,5,-1,0]", "[1,5,5,-1,0]"},
			{"C2.2", 0, "CL.THROTTLE foo 4 1 10 1", "[0,5,4,-1,10]", "[0,5,4,-1,11]"},
			{"C2.3", 0, "CL.THROTTLE foo 4 1 10 1", "[0,5,3,-1,20]", "[0,5,3,-1,21]"},
			{"C2.4", 0, "CL.THROTTLE foo 4 1 10 1", "[0,5,2,-1,30]", "[0,5,2,-1,31]"},
			{"C2.5", 0, "CL.THROTTLE foo 4 1 10 1", "[0,5,1,-1,40]", "[0,5,1,-1,41]"},
			{"C2.6", 0, "CL.THROTTLE foo 4 1 10 1", "[0,5,0,-1,50]", "[0,5,0,-1,51]"},
			{"C2.7", 0, "CL.THROTTLE foo 4 1 10 1", "[1,5,0,10,50]", "[1,5,0,11,51]"},
			{"C2.8", 30000, "CL.THROTTLE foo 4 1 10 1", "[0,5,2,-1,30]", "[0,5,2,-1,31]"},
			{"C2.9", 31000, "CL.THROTTLE foo 4 1 10 1", "[0,5,1,-1,39]", "[0,5,1,-1,40]"},
			{"C2.10", 40000, "CL.THROTTLE foo 4 1 10 1", "[0,5,1,-1,40]", "[0,5,1,-1,41]"},
			{"C2.11", 80000, "CL.THROTTLE foo 4 1 10 1", "[0,5,4,-1,10]", "[0,5,4,-1,11]"},
			{"C2.12", 95000, "CL.THROTTLE foo 4 1 10 1", "[0,5,4,-1,10]", "[0,5,4,-1,11]"},
			{"C2.13", 95000, "CL.THROTTLE foo 4 1 10 0", "[0,5,4,-1,10]", "[0,5,4,-1,11]"},
			{"C2.14", 95000, "CL.THROTTLE foo 4 1 10 2", "[0,5,2,-1,30]", "[0,5,2,-1,31]"},
			{"C2.15", 95000, "CL.THROTTLE foo 4 1 10 5", "[1,5,2,30,30]", "[1,5,2,31,31]"},
		}},
		{"C2.16-18", []rlCStep{
			{"C2.16", 0, "CL.THROTTLE bar 10 1 0", rlErrZeroRates, "same"},
			{"C2.17", 0, "CL.THROTTLE bar 10 0 1", rlErrZeroRates, "same"},
			{"C2.18", 0, "CL.THROTTLE bar 4 500000 1 2", "[0,5,3,-1,0]", "[0,5,3,-1,1]"},
			{"", 0, "PTTL bar", "1", "1"},
		}},
		{"C3 user123 0 1 10", []rlCStep{
			{"C3", 0, "CL.THROTTLE user123 0 1 10 1", "[0,1,0,-1,10]", "[0,1,0,-1,11]"},
			{"", 1, "CL.THROTTLE user123 0 1 10 1", "[1,1,0,10,10]", "[1,1,0,10,10]"},
			{"", 999, "CL.THROTTLE user123 0 1 10 1", "[1,1,0,10,10]", "[1,1,0,10,10]"},
			{"", 1000, "CL.THROTTLE user123 0 1 10 1", "[1,1,0,9,9]", "[1,1,0,10,10]"},
		}},
		{"C3 user123 0 1 10 same ms", []rlCStep{
			{"C3", 0, "CL.THROTTLE user123 0 1 10 1", "[0,1,0,-1,10]", "[0,1,0,-1,11]"},
			{"", 0, "CL.THROTTLE user123 0 1 10 1", "[1,1,0,10,10]", "[1,1,0,11,11]"},
		}},
		{"C3 user123 0 1 2", []rlCStep{
			{"C3", 0, "CL.THROTTLE user123 0 1 2 1", "[0,1,0,-1,2]", "[0,1,0,-1,3]"},
			{"", 1, "CL.THROTTLE user123 0 1 2 1", "[1,1,0,2,2]", "[1,1,0,2,2]"},
			{"", 2000, "CL.THROTTLE user123 0 1 2 1", "[0,1,0,-1,2]", "[0,1,0,-1,3]"},
		}},
		{"C3 user123 20 120 60", []rlCStep{
			{"C3", 0, "CL.THROTTLE user123 20 120 60 1", "[0,21,20,-1,1]", "[0,21,20,-1,1]"},
		}},
		{"C3 quantity 0", []rlCStep{
			{"C3", 0, "CL.THROTTLE k 4 1 1 0", "[0,5,5,-1,0]", "same"},
			{"", 0, "EXISTS k", "0", "0"},
		}},
		{"C3 I = 1 ns", []rlCStep{
			{"C3", 0, "CL.THROTTLE k 0 1000000000 1", "[0,1,0,-1,0]", "[0,1,0,-1,1]"},
		}},
		{"C3 DVT = 7e18", []rlCStep{
			{"C3", 0, "CL.THROTTLE k 6 1 1000000000", "[0,7,6,-1,1000000000]", "[0,7,6,-1,1000000001]"},
		}},
		{"C5", []rlCStep{
			{"C5", 0, "GCRA.LIMIT x 10000 1", "[0,1,0,-1,10000]", "same"},
			{"", 0, "CL.THROTTLE x 0 1 10", "[1,1,0,10,10]", "[1,1,0,11,11]"},
			{"", 10000, "CL.THROTTLE x 0 1 10", "[0,1,0,-1,10]", "[0,1,0,-1,11]"},
			{"", 10000, "GET x", `"1700000020000000000"`, "same"},
			{"", 10000, "GCRA.PEEK x 10000 1", "[1,1,0,10000,10000]", "same"},
		}},
		// §6.2: quantity 0 is denied when the TAT lies more than DVT ahead; nothing changes.
		{"6.2 quantity 0 denied", []rlCStep{
			{"6.2", 0, "GCRA.LIMIT x 10000 1", "[0,1,0,-1,10000]", "same"},
			{"", 0, "CL.THROTTLE x 0 1 1 0", "[1,1,0,9,10]", "[1,1,0,10,11]"},
			{"", 0, "CL.THROTTLE x 2 1 1 0", "[1,3,0,7,10]", "[1,3,0,8,11]"},
			{"", 0, "CL.THROTTLE x 0 1 1 2", "[1,1,0,-1,10]", "[1,1,0,-1,11]"},
			{"", 0, "PTTL x", "10000", "10000"},
			{"", 0, "GET x", `"1700000010000000000"`, "same"},
		}},
		// §2.7: a huge stored TAT is state: a finite denial, key untouched.
		{"2.7 huge TAT", []rlCStep{
			{"2.7", 0, "SET big 9223372036854775807", "OK", "same"},
			{"", 0, "CL.THROTTLE big 4 1 1", "[1,5,0,7523372033,7523372037]", "same"},
			{"", 0, "CL.THROTTLE big 4 1 1 0", "[1,5,0,7523372032,7523372037]", "same"},
			{"", 0, "GET big", `"9223372036854775807"`, "same"},
			{"", 0, "PTTL big", "-1", "same"},
		}},
		{"C5 y", []rlCStep{
			{"C5", 0, "CL.THROTTLE y 9 10 60 3", "[0,10,7,-1,18]", "[0,10,7,-1,19]"},
			{"", 0, "GCRA.LIMIT y 60000 10", "[0,10,6,-1,24000]", "same"},
		}},
		{"2.6 case-insensitive", []rlCStep{
			{"2.6", 0, "cl.throttle k 4 1 1", "[0,5,4,-1,1]", "[0,5,4,-1,2]"},
		}},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunThrottleBlocks(t, c, blocks)
	})
}

// TestCLThrottleErrors is C4, row by row, plus the §6.1 rejections of every number.
func TestCLThrottleErrors(t *testing.T) {
	blocks := []rlBlock{
		{"C4 arity", []rlStep{
			{"C4", 0, "CL.THROTTLE k 1 1", rlArity("cl.throttle")},
			{"", 0, "CL.THROTTLE k 1 1 1 1 extra", rlArity("cl.throttle")},
		}},
		{"C4 not an integer", []rlStep{
			{"C4", 0, "CL.THROTTLE k -1 1 1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k abc 1 1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 1 1.5 1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 1 1 1 -1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 1 1 1 +1", rlErrNotInt},
			{"§6.1", 0, "CL.THROTTLE k 1 1 -1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 1 -1 1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 1 1 010", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 1 1 1 \"\"", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 9223372036854775808 1 1", rlErrNotInt},
			// parsing (step 2) comes before the zero-rate check (step 3)
			{"", 0, "CL.THROTTLE k 1 0 1 -1", rlErrNotInt},
		}},
		{"C4 zero rates", []rlStep{
			{"C4", 0, "CL.THROTTLE k 1 0 1", rlErrZeroRates},
			{"", 0, "CL.THROTTLE k 1 1 0", rlErrZeroRates},
			{"", 0, "CL.THROTTLE k 0 2000000000 1", rlErrZeroRates},
		}},
		{"C4 overflow", []rlStep{
			{"C4", 0, "CL.THROTTLE k 9223372036854775807 1 1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 0 1 9223372037", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 9223372036854775806 1 1", rlErrNotInt},
			{"", 0, "CL.THROTTLE k 7 1 1000000000", rlErrNotInt},
			{"", 0, "DBSIZE", "0"},
		}},
		// `RPUSH l a` is replaced by a non-integer string (no lists yet).
		{"C4 wrong type", []rlStep{
			{"C4", 0, "SET l a", "OK"},
			{"", 0, "CL.THROTTLE l 1 1 1", rlWrongType},
			{"", 0, "GET l", `"a"`},
			{"", 0, "SET s hello EX 100", "OK"},
			{"", 0, "CL.THROTTLE s 1 1 1", rlWrongType},
			{"", 0, "CL.THROTTLE s 1 1 1 0", rlWrongType},
			{"", 0, "CL.THROTTLE s 1 1 1 5", rlWrongType},
			{"", 0, "GET s", `"hello"`},
			{"", 0, "TTL s", "100"},
			{"", 0, "CL.THROTTLE l 1 0 1", rlErrZeroRates},
		}},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, false, blocks)
	})
}

// ---- RATELIMIT.* (§8.9) ----

// rateLimitBlocks are the spec's RATELIMIT vectors (§8.9) as runnable blocks; the persistence
// tests replay some of them with a restart after every row.
var rateLimitBlocks = []rlBlock{
	{"L1", []rlStep{
		{"L1", 0, "CREATE api 100 60000", "OK"},
		{"", 0, "CHECK api user:42", "[1,99,0,100,0]"},
		{"", 0, "CHECK api user:42 COST 5", "[1,94,0,100,1]"},
		{"", 0, "STATS api", "name=api algo=sliding_window limit=100 window_ms=60000 unique_keys=1 total_allowed=6 total_denied=0"},
		{"", 0, "RESET api user:42", "1"},
		{"", 0, "RESET api user:42", "0"},
		{"", 0, "STATS api", "unique_keys=0 total_allowed=6 total_denied=0"},
	}},
	{"L2", []rlStep{
		{"L2", 0, "CREATE a 3 1000", "OK"},
		{"", 0, "CHECK a u", "[1,2,0,3,0]"},
		{"", 100, "CHECK a u", "[1,1,0,3,1]"},
		{"", 200, "CHECK a u", "[1,0,0,3,2]"},
		{"", 300, "CHECK a u", "[0,0,700,3,3]"},
		{"", 300, "PEEK a u", "[0,0,700,3,3]"},
		{"", 999, "CHECK a u", "[0,0,1,3,3]"},
		{"", 1000, "CHECK a u", "[1,0,0,3,2]"},
		{"", 1000, "CHECK a u", "[0,0,100,3,3]"},
		{"", 1100, "CHECK a u", "[1,0,0,3,2]"},
		{"", 1100, "STATS a", "unique_keys=1 total_allowed=5 total_denied=3"},
		{"", 2200, "STATS a", "unique_keys=0 total_allowed=5 total_denied=3"},
	}},
	{"L3", []rlStep{
		{"L3", 0, "CREATE b 5 1000", "OK"},
		{"", 999, "CHECK b u COST 5", "[1,0,0,5,0]"},
		{"", 1000, "CHECK b u", "[0,0,999,5,5]"},
		{"", 1998, "CHECK b u", "[0,0,1,5,5]"},
		{"", 1999, "CHECK b u COST 5", "[1,0,0,5,0]"},
		{"", 1999, "CHECK b u COST 6", "[0,0,-1,5,5]"},
		{"", 1999, "STATS b", "total_allowed=10 total_denied=8"},
	}},
	{"L4", []rlStep{
		{"L4", 0, "CREATE c 10 1000", "OK"},
		{"", 0, "CHECK c u COST 4", "[1,6,0,10,0]"},
		{"", 200, "CHECK c u COST 4", "[1,2,0,10,4]"},
		{"", 400, "CHECK c u COST 4", "[0,2,600,10,8]"},
		{"", 400, "CHECK c u COST 2", "[1,0,0,10,8]"},
		{"", 500, "CHECK c u COST 3", "[0,0,500,10,10]"},
		{"", 1000, "CHECK c u COST 3", "[1,1,0,10,6]"},
		{"", 1000, "PEEK c u", "[1,1,0,10,9]"},
	}},
	{"L5 K=2", []rlStep{
		{"L5", 0, "CONFIG SET ratelimit.sliding-window-max-entries 2", "OK"},
		{"", 0, "CREATE m 3 1000", "OK"},
		{"", 0, "CHECK m u", "[1,2,0,3,0]"},
		{"", 100, "CHECK m u", "[1,1,0,3,1]"},
		{"", 300, "CHECK m u", "[1,0,0,3,2]"},
		{"", 1000, "CHECK m u", "[0,0,100,3,3]"},
		{"", 1000, "PEEK m u", "[0,0,100,3,3]"},
		{"", 1100, "CHECK m u", "[1,1,0,3,1]"},
	}},
	{"L5 default K", []rlStep{
		{"L5", 0, "CREATE m 3 1000", "OK"},
		{"", 0, "CHECK m u", "[1,2,0,3,0]"},
		{"", 100, "CHECK m u", "[1,1,0,3,1]"},
		{"", 300, "CHECK m u", "[1,0,0,3,2]"},
		{"", 1000, "CHECK m u", "[1,0,0,3,2]"},
		{"", 1000, "PEEK m u", "[0,0,100,3,3]"},
		{"", 1100, "CHECK m u", "[1,0,0,3,2]"},
	}},
	// §8.4: ties merge the oldest pair, into the LATER timestamp.
	{"8.4 merge ties", []rlStep{
		{"8.4", 0, "CONFIG SET ratelimit.sliding-window-max-entries 2", "OK"},
		{"", 0, "CREATE m 10 1000", "OK"},
		{"", 0, "CHECK m u", "[1,9,0,10,0]"},
		{"", 100, "CHECK m u", "[1,8,0,10,1]"},
		{"", 200, "CHECK m u", "[1,7,0,10,2]"},  // (0,1) (100,1) (200,1) -> (100,2) (200,1)
		{"", 1100, "CHECK m u", "[1,8,0,10,1]"}, // (100,2) left at 1100
		{"", 1100, "PEEK m u", "[1,8,0,10,2]"},  // (200,1) (1100,1)
		{"", 1199, "PEEK m u", "[1,8,0,10,2]"},  // ...
		{"", 1200, "PEEK m u", "[1,9,0,10,1]"},  // (200,1) left at 1200
	}},
	// §8.4: lowering K takes effect on the key's next recorded request.
	{"8.4 lowering K", []rlStep{
		{"8.4", 0, "CREATE m 3 1000", "OK"},
		{"", 0, "CHECK m u", "[1,2,0,3,0]"},
		{"", 100, "CHECK m u", "[1,1,0,3,1]"},
		{"", 300, "CHECK m u", "[1,0,0,3,2]"},
		{"", 300, "CONFIG SET ratelimit.sliding-window-max-entries 1", "OK"},
		{"", 350, "PEEK m u", "[0,0,650,3,3]"},   // the log is still exact
		{"", 1000, "CHECK m u", "[1,0,0,3,2]"},   // records (1000,1), then merges down to (1000,3)
		{"", 1100, "CHECK m u", "[0,0,900,3,3]"}, // an exact log would allow
	}},
	{"L6", []rlStep{
		{"L6", 0, "CREATE uploads 20 4000 ALGO token_bucket REFILL 5", "OK"},
		{"", 0, "CHECK uploads u COST 20", "[1,0,0,20,0]"},
		{"", 0, "CHECK uploads u", "[0,0,200,20,20]"},
		{"", 199, "PEEK uploads u", "[0,0,1,20,20]"},
		{"", 200, "CHECK uploads u", "[1,0,0,20,19]"},
		{"", 200, "CHECK uploads u", "[0,0,200,20,20]"},
		{"", 1000, "CHECK uploads u COST 5", "[0,4,200,20,16]"},
		{"", 1000, "CHECK uploads u COST 21", "[0,4,-1,20,16]"},
		{"", 1000, "STATS uploads", "name=uploads algo=token_bucket limit=20 window_ms=4000 unique_keys=1 total_allowed=21 total_denied=28 refill_per_sec=5"},
		{"8.8", 4199, "STATS uploads", "unique_keys=1"},
		{"", 5000, "RESET uploads u", "0"},
		{"", 5000, "STATS uploads", "unique_keys=0 total_allowed=21 total_denied=28"},
	}},
	{"L7", []rlStep{
		{"L7", 0, "CREATE t 3 1000 ALGO token_bucket", "OK"},
		{"", 0, "CHECK t u", "[1,2,0,3,0]"},
		{"", 0, "CHECK t u", "[1,1,0,3,1]"},
		{"", 0, "CHECK t u", "[1,0,0,3,2]"},
		{"", 0, "CHECK t u", "[0,0,334,3,3]"},
		{"", 333, "CHECK t u", "[0,0,1,3,3]"},
		{"", 334, "CHECK t u", "[1,0,0,3,2]"},
		{"", 334, "PEEK t u", "[0,0,333,3,3]"},
		{"", 334, "STATS t", "algo=token_bucket total_allowed=4 total_denied=2 refill_per_sec=3"},
	}},
	{"L8", []rlStep{
		{"L8", 0, "CREATE t 3 1000 ALGO leaky_bucket", "OK"},
		{"", 0, "CHECK t u", "[1,2,0,3,0]"},
		{"", 0, "CHECK t u", "[1,1,0,3,1]"},
		{"", 0, "CHECK t u", "[1,0,0,3,2]"},
		{"", 0, "CHECK t u", "[0,0,334,3,3]"},
		{"", 333, "CHECK t u", "[0,0,1,3,3]"},
		{"", 334, "CHECK t u", "[1,0,0,3,2]"},
		{"", 334, "PEEK t u", "[0,0,333,3,3]"},
		{"", 334, "STATS t", "algo=leaky_bucket total_allowed=4 total_denied=2 drain_per_sec=3"},
	}},
	{"L9", []rlStep{
		{"L9", 0, "CREATE h 2 1000 ALGO token_bucket REFILL 0.5", "OK"},
		{"", 0, "CHECK h u COST 2", "[1,0,0,2,0]"},
		{"", 0, "CHECK h u", "[0,0,2000,2,2]"},
		{"", 1999, "CHECK h u", "[0,0,1,2,2]"},
		{"", 2000, "CHECK h u", "[1,0,0,2,1]"},
		{"", 2000, "PEEK h u", "[0,0,2000,2,2]"},
		{"", 2000, "STATS h", "refill_per_sec=0.5"},
	}},
	{"L10", []rlStep{
		{"L10", 0, "CREATE api 100 60000", "OK"},
		{"", 0, "CREATE tb 100 60000 ALGO token_bucket", "OK"},
		{"", 0, "PEEK api x", "[1,100,0,100,0]"},
		{"", 0, "PEEK tb x", "[1,100,0,100,0]"},
		{"", 0, "CHECK api x COST 101", "[0,100,-1,100,0]"},
		{"", 0, "CHECK tb x COST 101", "[0,100,-1,100,0]"},
		{"", 0, "STATS api", "unique_keys=0 total_allowed=0 total_denied=101"},
		// the default rate 100 per 60 s is the shortest decimal of its double
		{"", 0, "STATS tb", "unique_keys=0 total_allowed=0 total_denied=101 refill_per_sec=1.6666666666666667"},
	}},
	{"8.3 unique_keys", []rlStep{
		{"8.3", 0, "CREATE a 3 1000", "OK"},
		{"", 0, "CHECK a u1", "[1,2,0,3,0]"},
		{"", 500, "CHECK a u2 COST 3", "[1,0,0,3,0]"},
		{"", 500, "CHECK a \"\"", "[1,2,0,3,0]"},
		{"", 500, "CHECK a u2", "[0,0,1000,3,3]"},
		{"", 999, "STATS a", "unique_keys=3 total_allowed=5 total_denied=1"},
		{"", 1000, "STATS a", "unique_keys=2"},
		{"", 1000, "RESET a u2", "1"},
		{"", 1000, "STATS a", "unique_keys=1 total_allowed=5 total_denied=1"},
		{"", 1500, "STATS a", "unique_keys=0"},
	}},
	// §2.5: limits and costs up to 2^63-1 neither overflow nor crash; TATs saturate at MAX.
	{"2.5 overflow", []rlStep{
		{"2.5", 0, "CREATE f 9223372036854775807 1000 ALGO token_bucket", "OK"},
		{"", 0, "CHECK f u COST 9223372036854775807", "[1,0,0,9223372036854775807,0]"},
		{"", 0, "CHECK f u", "[1,1699999999999999999,0,9223372036854775807,7523372036854775807]"},
		{"", 0, "PEEK f u", "[1,1700000000000000000,0,9223372036854775807,7523372036854775807]"},
		{"", 0, "STATS f", "unique_keys=1 total_allowed=9223372036854775807 total_denied=0 refill_per_sec=9223372036854776000"},
		{"", 0, "CREATE s 9223372036854775807 1000", "OK"},
		{"", 0, "CHECK s u COST 9223372036854775807", "[1,0,0,9223372036854775807,0]"},
		{"", 0, "CHECK s u", "[0,0,1000,9223372036854775807,9223372036854775807]"},
		{"", 0, "PEEK s u", "[0,0,1000,9223372036854775807,9223372036854775807]"},
		{"", 999, "CHECK s u COST 9223372036854775807", "[0,0,1,9223372036854775807,9223372036854775807]"},
		{"", 1000, "CHECK s u COST 9223372036854775807", "[1,0,0,9223372036854775807,0]"},
		{"", 1000, "STATS s", "unique_keys=1 total_allowed=9223372036854775807 total_denied=9223372036854775807"},
	}},
}

func TestRateLimitVectors(t *testing.T) {
	blocks := rateLimitBlocks
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, true, blocks)
		// §8.1: a limiter belongs to no database.
		rlReset(t, c)
		require.Equal(t, "OK", rlRender(c.Do(ctx, "RATELIMIT.CREATE", "api", "1", "1000").Result()))
		require.Equal(t, "[1,0,0,1,0]", rlRender(c.Do(ctx, "RATELIMIT.CHECK", "api", "u").Result()))
		r := rawIn(t, s, c)
		require.Equal(t, "+OK\r\n", r.Do("SELECT", "5"))
		require.Equal(t, "*1\r\n$3\r\napi\r\n", r.Do("RATELIMIT.LIST"))
		require.Equal(t, "*5\r\n:0\r\n:0\r\n:1000\r\n:1\r\n:1\r\n", r.Do("RATELIMIT.CHECK", "api", "u"))
		require.Equal(t, "*5\r\n:1\r\n:0\r\n:0\r\n:1\r\n:0\r\n", r.Do("RATELIMIT.CHECK", "api", "v"))
	})
}

// TestRateLimitErrorsAndAdmin is L11, plus the arity rows of §2.6 and the §8.6 rate syntax.
func TestRateLimitErrorsAndAdmin(t *testing.T) {
	long := strings.Repeat("n", 513)
	blocks := []rlBlock{
		{"L11 unknown limiter", []rlStep{
			{"L11", 0, "CHECK nolimiter u", "[0,0,0,0,0]"},
			{"", 0, "PEEK nolimiter u", "[0,0,0,0,0]"},
			{"", 0, "CHECK nolimiter u COST 0", rlErrCost},
			{"", 0, "CHECK nolimiter u FOO", rlErrSyntax},
			{"", 0, "RESET nolimiter u", rlErrNotFound},
			{"", 0, "STATS nolimiter", rlErrNotFound},
			{"", 0, "DROP nolimiter", rlErrNotFound},
			{"", 0, "STATS " + long, rlErrNotFound},
			{"", 0, "DBSIZE", "0"},
		}},
		{"L11 create and drop", []rlStep{
			{"L11", 0, "CREATE api 100 60000", "OK"},
			{"", 0, "CREATE api 100 60000", rlErrExists},
			{"", 0, "CREATE api 5 10 ALGO token_bucket", rlErrExists},
			{"", 0, "CHECK api user:42", "[1,99,0,100,0]"},
			{"", 0, "DROP api", "OK"},
			{"", 0, "CHECK api user:42", "[0,0,0,0,0]"},
			{"", 0, "LIST", "[]"},
			{"", 0, "DROP api", rlErrNotFound},
			// DROP then CREATE starts over: state and totals are gone
			{"", 0, "CREATE api 100 60000", "OK"},
			{"", 0, "CHECK api user:42", "[1,99,0,100,0]"},
			{"", 0, "STATS api", "unique_keys=1 total_allowed=1 total_denied=0"},
		}},
		{"L11 CREATE arguments", []rlStep{
			{"L11", 0, "CREATE x 10", rlArity("ratelimit.create")},
			{"", 0, "CREATE \"\" 10 1000", rlErrName},
			{"", 0, "CREATE " + long + " 10 1000", rlErrName},
			{"", 0, "CREATE \"\" 0 0", rlErrName},
			{"", 0, "CREATE x 0 1000", rlErrLimit},
			{"", 0, "CREATE x 9223372036854775808 1000", rlErrLimit},
			{"", 0, "CREATE x 0 0", rlErrLimit},
			{"", 0, "CREATE x -1 1000", rlErrLimit},
			{"", 0, "CREATE x 010 1000", rlErrLimit},
			{"", 0, "CREATE x 10 0", rlErrWindow},
			{"", 0, "CREATE x 10 1000000000001", rlErrWindow},
			{"", 0, "CREATE x 10 1.5", rlErrWindow},
			{"", 0, "CREATE x 10 0 ALGO nope", rlErrWindow},
			{"", 0, "CREATE x 10 1000 ALGO fixed_window", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 ALGO", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket ALGO token_bucket", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 FOO 1", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 REFILL 5", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 ALGO leaky_bucket REFILL 5", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 DRAIN 5 ALGO token_bucket", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 5 REFILL 5", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL", rlErrSyntax},
			// a bad rate (step 5) is reported before a misplaced REFILL (step 6)
			{"", 0, "CREATE x 10 1000 REFILL abc", rlErrRate},
			// left to right: the first failing option wins
			{"", 0, "CREATE x 10 1000 ALGO fixed_window REFILL abc", rlErrSyntax},
			{"", 0, "CREATE x 10 1000 REFILL abc ALGO fixed_window", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 0", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL -1", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL abc", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 1e3", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL .5", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL inf", rlErrRate},
			{"8.6", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 0.0", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL +1", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 5.", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL nan", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL \"\"", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 1.2.3", rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL " + strings.Repeat("1", 65), rlErrRate},
			{"", 0, "CREATE x 10 1000 ALGO leaky_bucket DRAIN 0", rlErrRate},
			// too slow: T = 10^18 ns, 10 * T > 10^18
			{"L11", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 0.000000001", rlErrRate},
			{"", 0, "LIST", "[]"},
			{"", 0, "CREATE x 10 1000 ALGO token_bucket REFILL 0.00000001", "OK"},
			{"", 0, "CREATE y 10 1000 algo TOKEN_BUCKET refill 2.5", "OK"},
			{"", 0, "STATS y", "algo=token_bucket refill_per_sec=2.5"},
			{"8.6", 0, "CREATE z 10 1000 Algo Leaky_Bucket Drain 007.50", "OK"},
			{"", 0, "STATS z", "algo=leaky_bucket drain_per_sec=7.5"},
			{"", 0, "CREATE " + long[:512] + " 1 1000", "OK"},
			{"", 0, "CREATE w 9223372036854775807 1000000000000 ALGO sliding_window", "OK"},
			{"", 0, "STATS w", "limit=9223372036854775807 window_ms=1000000000000"},
		}},
		{"L11 CHECK and PEEK arguments", []rlStep{
			{"L11", 0, "CREATE api 100 60000", "OK"},
			{"", 0, "CHECK api k COST", rlErrSyntax},
			{"", 0, "CHECK api k COST 1 COST 1", rlErrSyntax},
			{"", 0, "CHECK api k WEIGHT 1", rlErrSyntax},
			{"", 0, "CHECK api k COST 1.5", rlErrCost},
			{"", 0, "CHECK api k COST -1", rlErrCost},
			{"", 0, "CHECK api k COST abc", rlErrCost},
			{"", 0, "CHECK api k COST 9223372036854775808", rlErrCost},
			{"", 0, "CHECK api k COST 0 COST 1", rlErrCost},
			{"", 0, "CHECK api k cost 2", "[1,98,0,100,0]"},
			{"", 0, "CHECK api \"\" COST 9223372036854775807", "[0,100,-1,100,0]"},
			{"", 0, "PEEK api k COST 1", rlArity("ratelimit.peek")},
			{"2.6", 0, "CHECK api", rlArity("ratelimit.check")},
			{"", 0, "PEEK api", rlArity("ratelimit.peek")},
			{"", 0, "RESET api", rlArity("ratelimit.reset")},
			{"", 0, "RESET api k x", rlArity("ratelimit.reset")},
			{"", 0, "STATS", rlArity("ratelimit.stats")},
			{"", 0, "STATS api x", rlArity("ratelimit.stats")},
			{"", 0, "DROP", rlArity("ratelimit.drop")},
			{"", 0, "DROP api x", rlArity("ratelimit.drop")},
			{"", 0, "LIST x", rlArity("ratelimit.list")},
			{"", 0, "STATS api", "unique_keys=1 total_allowed=2 total_denied=9223372036854775807"},
			{"8.2", 0, "CHECK api \"\" COST 101", "[0,100,-1,100,0]"},
			{"", 0, "STATS api", "total_denied=9223372036854775807"},
			{"2.6", 0, "ratelimit.check api k", "[1,97,0,100,2]"},
		}},
		{"L11 max-limiters", []rlStep{
			{"L11", 0, "CREATE api 100 60000", "OK"},
			{"", 0, "CONFIG SET ratelimit.max-limiters 1", "OK"},
			{"", 0, "CREATE other 1 1000", rlErrExists},
			{"", 0, "DROP api", "OK"},
			{"", 0, "CREATE other 1 1000", "OK"},
			// §9: lowering the maximum below the count removes nothing
			{"§9", 0, "CONFIG SET ratelimit.max-limiters 0", "OK"},
			{"", 0, "LIST", `["other"]`},
			{"", 0, "CREATE third 1 1000", rlErrExists},
		}},
		{"L11 LIST", []rlStep{
			{"L11", 0, "LIST", "[]"},
			{"", 0, "CREATE b 1 1000", "OK"},
			{"", 0, "CREATE a 1 1000", "OK"},
			{"", 0, "CREATE B 1 1000", "OK"},
			{"", 0, "LIST", `["B","a","b"]`},
		}},
		{"L11 FLUSHDB", []rlStep{
			{"L11", 0, "CREATE api 1 1000", "OK"},
			{"", 0, "CHECK api u", "[1,0,0,1,0]"},
			{"", 0, "FLUSHDB", "OK"},
			{"", 0, "LIST", `["api"]`},
			{"", 0, "KEYS *", "[]"},
			{"", 0, "DBSIZE", "0"},
			{"8.1", 0, "EXISTS api", "0"},
			{"", 0, "TYPE api", `"none"`},
			{"", 0, "SCAN 0", `["0",[]]`},
			{"", 0, "RANDOMKEY", "(nil)"},
			{"", 0, "CHECK api u", "[0,0,1000,1,1]"},
		}},
		{"L11 FLUSHALL", []rlStep{
			{"L11", 0, "CREATE api 1 1000", "OK"},
			{"", 0, "FLUSHALL", "OK"},
			{"", 0, "LIST", "[]"},
			{"", 0, "CHECK api u", "[0,0,0,0,0]"},
			{"8.1", 0, "CREATE api 1 1000", "OK"},
			{"", 0, "FLUSHALL ASYNC", "OK"},
			{"", 0, "LIST", "[]"},
		}},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlRunBlocks(t, c, true, blocks)
	})
}

// ---- exact bytes ----

// TestRateLimitExactBytes checks whole replies on the wire: the five-integer arrays are the
// same in both protocols; STATS is a flat array in RESP2 and a map in RESP3, with the rate as a
// bulk string or a double (§8.8).
func TestRateLimitExactBytes(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		r := rawIn(t, s, c)
		five := "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:6000\r\n"
		require.Equal(t, five, r.Do("GCRA.LIMIT", "k", "60000", "10"))
		require.Equal(t, "*5\r\n:0\r\n:5\r\n:4\r\n:-1\r\n:1\r\n", r.Do("CL.THROTTLE", "c", "4", "1", "1"))
		require.Equal(t, "*5\r\n:0\r\n:0\r\n:0\r\n:0\r\n:0\r\n", r.Do("RATELIMIT.CHECK", "nolimiter", "u"))
		require.Equal(t, "*0\r\n", r.Do("RATELIMIT.LIST"))

		// §8.8's example: the state of L6 at t=1000.
		for _, cmd := range [][]string{
			{"RATELIMIT.CREATE", "uploads", "20", "4000", "ALGO", "token_bucket", "REFILL", "5"},
			{"RATELIMIT.CHECK", "uploads", "u", "COST", "20"},
			{"RATELIMIT.CHECK", "uploads", "u"},
			{"DEBUG", "CLOCK", "SET", strconv.FormatInt(testutil.T0+200, 10)},
			{"RATELIMIT.CHECK", "uploads", "u"},
			{"RATELIMIT.CHECK", "uploads", "u"},
			{"DEBUG", "CLOCK", "SET", strconv.FormatInt(testutil.T0+1000, 10)},
			{"RATELIMIT.CHECK", "uploads", "u", "COST", "5"},
			{"RATELIMIT.CHECK", "uploads", "u", "COST", "21"},
		} {
			r.Do(cmd...)
		}
		fields := "$4\r\nname\r\n$7\r\nuploads\r\n" +
			"$4\r\nalgo\r\n$12\r\ntoken_bucket\r\n" +
			"$5\r\nlimit\r\n:20\r\n" +
			"$9\r\nwindow_ms\r\n:4000\r\n" +
			"$11\r\nunique_keys\r\n:1\r\n" +
			"$13\r\ntotal_allowed\r\n:21\r\n" +
			"$12\r\ntotal_denied\r\n:28\r\n" +
			"$14\r\nrefill_per_sec\r\n"
		// HotKV appends shadow and total_shadow_denied after the spec's fields
		// (docs/ratelimit.md, "Shadow mode"), so positional parsers of §8.8 keep working.
		shadow := "$6\r\nshadow\r\n:0\r\n$19\r\ntotal_shadow_denied\r\n:0\r\n"
		require.Equal(t, byProto(c, "*20\r\n"+fields+"$1\r\n5\r\n"+shadow, "%10\r\n"+fields+",5\r\n"+shadow),
			r.Do("RATELIMIT.STATS", "uploads"))

		// A sliding_window limiter has no rate field; a default leaky rate of 1000 per 3 s is
		// the shortest decimal of the double, without exponent.
		r.Do("RATELIMIT.CREATE", "sw", "3", "1000")
		require.Equal(t, byProto(c, "*18\r\n", "%9\r\n")+
			"$4\r\nname\r\n$2\r\nsw\r\n$4\r\nalgo\r\n$14\r\nsliding_window\r\n$5\r\nlimit\r\n:3\r\n"+
			"$9\r\nwindow_ms\r\n:1000\r\n$11\r\nunique_keys\r\n:0\r\n$13\r\ntotal_allowed\r\n:0\r\n"+
			"$12\r\ntotal_denied\r\n:0\r\n"+shadow,
			r.Do("RATELIMIT.STATS", "sw"))
		r.Do("RATELIMIT.CREATE", "lb", "1000", "3000", "ALGO", "leaky_bucket")
		require.True(t, strings.HasSuffix(r.Do("RATELIMIT.STATS", "lb"), "$13\r\ndrain_per_sec\r\n"+
			byProto(c, "$17\r\n333.3333333333333\r\n", ",333.3333333333333\r\n")+shadow))
		r.Do("RATELIMIT.CREATE", "big", "1000000000", "1", "ALGO", "token_bucket")
		require.True(t, strings.HasSuffix(r.Do("RATELIMIT.STATS", "big"), "$14\r\nrefill_per_sec\r\n"+
			byProto(c, "$13\r\n1000000000000\r\n", ",1000000000000\r\n")+shadow))
		r.Do("RATELIMIT.CREATE", "tiny", "1", "1000", "ALGO", "token_bucket", "REFILL", "0.00000001")
		require.True(t, strings.HasSuffix(r.Do("RATELIMIT.STATS", "tiny"), "$14\r\nrefill_per_sec\r\n"+
			byProto(c, "$10\r\n0.00000001\r\n", ",0.00000001\r\n")+shadow))
	})
}

// ---- configuration (§9) ----

func TestRateLimitConfig(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		get := func(name string) string {
			t.Helper()
			m, err := c.ConfigGet(ctx, name).Result()
			require.NoError(t, err)
			return m[name]
		}
		require.Equal(t, "redis-cell", get("throttle-compat"))
		require.Equal(t, "10000", get("ratelimit.max-limiters"))
		require.Equal(t, "1024", get("ratelimit.sliding-window-max-entries"))

		setErr := func(name, value string) string {
			return rlRender(c.Do(ctx, "CONFIG", "SET", name, value).Result())
		}
		require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'throttle-compat') - "+
			"argument(s) must be one of the following: redis-cell, dragonfly", setErr("throttle-compat", "redis"))
		require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'throttle-compat') - "+
			"argument(s) must be one of the following: redis-cell, dragonfly", setErr("throttle-compat", ""))
		for _, v := range []string{"-1", "2147483648"} {
			require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'ratelimit.max-limiters') - "+
				"argument must be between 0 and 2147483647 inclusive", setErr("ratelimit.max-limiters", v))
		}
		require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'ratelimit.max-limiters') - "+
			"argument couldn't be parsed into an integer", setErr("ratelimit.max-limiters", "ten"))
		for _, v := range []string{"0", "1000001"} {
			require.Equal(t, "ERR CONFIG SET failed (possibly related to argument 'ratelimit.sliding-window-max-entries') - "+
				"argument must be between 1 and 1000000 inclusive", setErr("ratelimit.sliding-window-max-entries", v))
		}
		// A failed CONFIG SET changes nothing, not even its valid pairs.
		require.Error(t, c.Do(ctx, "CONFIG", "SET", "throttle-compat", "dragonfly", "ratelimit.max-limiters", "-1").Err())
		require.Equal(t, "redis-cell", get("throttle-compat"))

		// Case-insensitive values; the new mode applies to the next call.
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		require.Equal(t, "[0,1,0,-1,10]", rlRender(c.Do(ctx, "CL.THROTTLE", "a", "0", "1", "10").Result()))
		require.Equal(t, "OK", setErr("throttle-compat", "DragonFly"))
		require.Equal(t, "dragonfly", get("throttle-compat"))
		require.Equal(t, "[0,1,0,-1,11]", rlRender(c.Do(ctx, "CL.THROTTLE", "b", "0", "1", "10").Result()))
		require.Equal(t, "OK", setErr("throttle-compat", "REDIS-CELL"))
		require.Equal(t, "redis-cell", get("throttle-compat"))

		// The boundaries are accepted.
		for _, kv := range [][2]string{{"ratelimit.max-limiters", "0"}, {"ratelimit.max-limiters", "2147483647"},
			{"ratelimit.sliding-window-max-entries", "1"}, {"ratelimit.sliding-window-max-entries", "1000000"}} {
			require.Equal(t, "OK", setErr(kv[0], kv[1]))
			require.Equal(t, kv[1], get(kv[0]))
		}

		// Directives given at startup apply too.
		s2 := testutil.StartServer(t, "--throttle-compat", "dragonfly", "--ratelimit.max-limiters", "1")
		c2 := s2.Client(t, c.Options().Protocol)
		require.NoError(t, c2.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		require.Equal(t, "[0,1,0,-1,11]", rlRender(c2.Do(ctx, "CL.THROTTLE", "a", "0", "1", "10").Result()))
		require.Equal(t, "OK", rlRender(c2.Do(ctx, "RATELIMIT.CREATE", "a", "1", "1").Result()))
		require.Equal(t, rlErrExists, rlRender(c2.Do(ctx, "RATELIMIT.CREATE", "b", "1", "1").Result()))
	})
}

// ---- COMMAND INFO and COMMAND DOCS (§11) ----

// rlKV turns a RESP2 flat array of pairs or a RESP3 map into a Go map keyed by name.
func rlKV(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch x := v.(type) {
	case map[any]any:
		for k, e := range x {
			out[k.(string)] = e
		}
	case []any:
		require.Zero(t, len(x)%2)
		for i := 0; i < len(x); i += 2 {
			out[x[i].(string)] = x[i+1]
		}
	default:
		t.Fatalf("not a map: %T", v)
	}
	return out
}

func rlStrings(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, e.(string))
	}
	slices.Sort(out)
	return out
}

func TestRateLimitCommandInfo(t *testing.T) {
	type meta struct {
		name        string
		arity       int64
		flags       string
		first, last int64
		step        int64
		ksFlags     string
		acl         string
		complexity  string // the leading big-O of the spec's column
		tips        string
		summary     string
	}
	const nd = "nondeterministic_output"
	table := []meta{
		{"gcra.limit", -4, "write denyoom fast", 1, 1, 1, "RW ACCESS UPDATE", "@ratelimit @write @fast", "O(1)", nd,
			"Allows or denies a request under a GCRA limit and records it if allowed"},
		{"gcra.peek", -4, "readonly fast", 1, 1, 1, "RO ACCESS", "@ratelimit @read @fast", "O(1)", nd,
			"Reports what GCRA.LIMIT would reply, without recording"},
		{"gcra.reset", -2, "write", 1, -1, 1, "RM DELETE", "@ratelimit @write @slow", "O(N)", "",
			"Deletes GCRA limiter state"},
		{"cl.throttle", -5, "write denyoom fast", 1, 1, 1, "RW ACCESS UPDATE", "@ratelimit @write @fast", "O(1)", nd,
			"redis-cell compatible GCRA rate limiting"},
		{"ratelimit.create", -4, "write denyoom", 1, 1, 1, "RW INSERT", "@ratelimit @write @slow", "O(1)", "",
			"Creates a named limiter"},
		{"ratelimit.check", -3, "write denyoom fast", 1, 1, 1, "RW ACCESS UPDATE", "@ratelimit @write @fast", "O(1)", nd,
			"Checks a request against a named limiter and counts it if allowed"},
		{"ratelimit.peek", 3, "readonly fast", 1, 1, 1, "RO ACCESS", "@ratelimit @read @fast", "O(1)", nd,
			"Reports a named limiter's state for a key without counting"},
		{"ratelimit.reset", 3, "write fast", 1, 1, 1, "RW DELETE", "@ratelimit @write @fast", "O(1)", nd,
			"Forgets one key's state"},
		{"ratelimit.stats", 2, "readonly", 1, 1, 1, "RO ACCESS", "@ratelimit @read @slow", "O(1)", nd,
			"A limiter's settings and totals"},
		{"ratelimit.drop", 2, "write", 1, 1, 1, "RM DELETE", "@ratelimit @write @slow", "O(N)", "",
			"Deletes a limiter"},
		{"ratelimit.list", 1, "readonly", 0, 0, 0, "", "@ratelimit @read @slow", "O(N log N)", "",
			"Names of all limiters on this node"},
	}
	sortedFields := func(s string) []string { return slices.Sorted(slices.Values(strings.Fields(s))) }
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		for _, m := range table {
			t.Run(m.name, func(t *testing.T) {
				v, err := c.Do(ctx, "COMMAND", "INFO", strings.ToUpper(m.name)).Slice()
				require.NoError(t, err)
				require.Len(t, v, 1)
				info := v[0].([]any)
				require.Len(t, info, 10)
				require.Equal(t, m.name, info[0])
				require.Equal(t, m.arity, info[1])
				require.Equal(t, sortedFields(m.flags), rlStrings(info[2]))
				require.Equal(t, []int64{m.first, m.last, m.step}, []int64{info[3].(int64), info[4].(int64), info[5].(int64)})
				require.Equal(t, sortedFields(m.acl), rlStrings(info[6]))
				require.Equal(t, sortedFields(m.tips), rlStrings(info[7]))
				specs := info[8].([]any)
				if m.first == 0 {
					require.Empty(t, specs)
				} else {
					require.Len(t, specs, 1)
					ks := rlKV(t, specs[0])
					// Redis spells the key-spec flags RW/RO/RM and access/update/insert/delete.
					require.Equal(t, sortedFields(m.ksFlags), sortedFields(strings.ToUpper(strings.Join(rlStrings(ks["flags"]), " "))))
					bs := rlKV(t, ks["begin_search"])
					require.Equal(t, "index", bs["type"])
					require.Equal(t, m.first, rlKV(t, bs["spec"])["index"])
					fk := rlKV(t, ks["find_keys"])
					require.Equal(t, "range", fk["type"])
					lastKey := m.last - m.first
					if m.last < 0 {
						lastKey = m.last
					}
					require.Equal(t, map[string]any{"lastkey": lastKey, "keystep": m.step, "limit": int64(0)},
						rlKV(t, fk["spec"]))
				}
				require.Empty(t, info[9])

				docs := c.Do(ctx, "COMMAND", "DOCS", m.name).Val()
				entry := rlKV(t, docs)[m.name]
				d := rlKV(t, entry)
				require.Equal(t, m.summary, d["summary"])
				require.Equal(t, "ratelimit", d["group"])
				require.NotEmpty(t, d["since"])
				require.True(t, strings.HasPrefix(d["complexity"].(string), m.complexity), d["complexity"])
				if m.complexity == "O(N)" {
					require.False(t, strings.HasPrefix(d["complexity"].(string), "O(N log N)"))
				}
			})
		}
		// COMMAND GETKEYS: a limiter's name is its only key.
		require.Equal(t, []any{"api"}, c.Do(ctx, "COMMAND", "GETKEYS", "RATELIMIT.CHECK", "api", "user:1", "COST", "2").Val())
		require.Equal(t, []any{"a", "b"}, c.Do(ctx, "COMMAND", "GETKEYS", "GCRA.RESET", "a", "b").Val())
	})
}

// ---- §3.6 invariants, randomized through the server ----

// TestGCRAInvariantsProperty drives GCRA.LIMIT with random parameters, counts and clock steps
// (fixed seed) and checks every invariant of §3.6 on each reply, against GET and PTTL around
// the call. Keys whose period is a multiple of 1000 are mirrored on CL.THROTTLE in a random
// throttle-compat mode, which must decide the same and store the same TAT and expiry.
func TestGCRAInvariantsProperty(t *testing.T) {
	type event struct{ atNs, units int64 }
	type key struct {
		name     string
		p, b     int64
		interval int64
		tau      int64
		admitted []event
		mirrorCL bool
	}
	specs := []struct{ p, b int64 }{
		{60000, 10}, {1000, 3}, {5000, 7}, {2000, 2000000000}, // mirrored on CL.THROTTLE
		{1, 3}, {1, 1}, {1, 2000000}, {3, 1999999}, {7, 5},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		rng := rand.New(rand.NewPCG(20240601, 7))
		var keys []*key
		for i, sp := range specs {
			T := max(1, sp.p*1_000_000/sp.b)
			keys = append(keys, &key{name: fmt.Sprintf("k%d", i), p: sp.p, b: sp.b, interval: T, tau: sp.b * T,
				mirrorCL: sp.p%1000 == 0})
		}
		now := testutil.T0
		setClock := func() {
			t.Helper()
			require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", now).Err())
		}
		state := func(name string) (string, int64) {
			t.Helper()
			v, err := c.Get(ctx, name).Result()
			if err == redis.Nil {
				v = "(absent)"
			} else {
				require.NoError(t, err)
			}
			pttl, err := c.Do(ctx, "PTTL", name).Int64()
			require.NoError(t, err)
			return v, pttl
		}
		ints := func(what string, args ...any) [5]int64 {
			t.Helper()
			v, err := c.Do(ctx, args...).Result()
			require.NoError(t, err, what)
			a := v.([]any)
			require.Len(t, a, 5, what)
			var r [5]int64
			for i := range r {
				r[i] = a[i].(int64)
			}
			return r
		}
		ceilMs := func(x int64) int64 { return (x + 999_999) / 1_000_000 }
		calls := 0
		seen := map[string]int{} // how often each case was exercised

		// call runs GCRA.LIMIT (after a GCRA.PEEK that must agree) and checks §3.6.
		call := func(k *key, count int64) [5]int64 {
			t.Helper()
			calls++
			what := fmt.Sprintf("call %d at t0+%d: GCRA.LIMIT %s %d %d %d", calls, now-testutil.T0, k.name, k.p, k.b, count)
			valBefore, pttlBefore := state(k.name)
			peek := ints(what, "GCRA.PEEK", k.name, k.p, k.b, count)
			r := ints(what, "GCRA.LIMIT", k.name, k.p, k.b, count)
			require.Equal(t, peek, r, "%s: GCRA.PEEK must predict GCRA.LIMIT", what)
			valAfter, pttlAfter := state(k.name)
			require.Equal(t, k.b, r[1], what)
			if r[0] == 0 {
				require.EqualValues(t, -1, r[3], what)
				require.True(t, r[2] >= 0 && r[2] <= k.b-count, "%s: remaining %d", what, r[2])
				require.True(t, r[4] >= 1 && r[4] <= ceilMs(k.tau), "%s: reset %d", what, r[4])
				require.Equal(t, r[4], pttlAfter, "%s: PTTL after an allowed call", what)
				tat, err := strconv.ParseInt(valAfter, 10, 64)
				require.NoError(t, err, what)
				require.Equal(t, now+r[4], ceilMs(tat), "%s: expiry at ceil_ms(TAT)", what)
				k.admitted = append(k.admitted, event{now * 1_000_000, count})
				seen["allowed"]++
			} else {
				require.EqualValues(t, 1, r[0], what)
				require.Zero(t, r[2], what)
				seen["denied"]++
				if count > k.b {
					seen["never"]++
					require.EqualValues(t, -1, r[3], what)
				} else {
					require.GreaterOrEqual(t, r[3], int64(1), what)
				}
				require.Equal(t, valBefore, valAfter, "%s: a denial writes nothing", what)
				require.Equal(t, pttlBefore, pttlAfter, "%s: a denial keeps the TTL", what)
			}
			if k.mirrorCL {
				seen["mirrored"]++
				mode := []string{"redis-cell", "dragonfly"}[rng.IntN(2)]
				require.NoError(t, c.Do(ctx, "CONFIG", "SET", "throttle-compat", mode).Err())
				cl := ints(what, "CL.THROTTLE", "cl:"+k.name, k.b-1, k.b, k.p/1000, count)
				clVal, clPTTL := state("cl:" + k.name)
				where := what + " vs CL.THROTTLE (" + mode + ")"
				require.Equal(t, r[0], cl[0], "%s: decision", where)
				require.Equal(t, r[1], cl[1], "%s: limit", where)
				if r[0] == 0 {
					require.Equal(t, r[2], cl[2], "%s: remaining", where)
				}
				require.Equal(t, valAfter, clVal, "%s: stored TAT", where)
				require.Equal(t, pttlAfter, clPTTL, "%s: expiry", where)
			}
			return r
		}

		for i := 0; i < 300; i++ {
			k := keys[rng.IntN(len(keys))]
			switch rng.IntN(4) {
			case 0: // same ms
			case 1:
				now += rng.Int64N(3)
			case 2:
				now += rng.Int64N(k.interval/1_000_000 + 2)
			default:
				now += rng.Int64N(k.p + 1)
			}
			setClock()
			var count int64
			switch rng.IntN(6) {
			case 0:
				count = k.b
			case 1:
				count = k.b + 1
			case 2, 3:
				count = 1 + rng.Int64N(min(k.b, 4))
			default:
				count = 1 + rng.Int64N(k.b)
			}
			r := call(k, count)
			switch {
			case r[0] == 1 && r[3] >= 1 && rng.IntN(2) == 0:
				// waiting retry_after_ms is enough for the same call
				now += r[3]
				setClock()
				seen["retried"]++
				again := call(k, count)
				require.Zero(t, again[0], "retry after %d ms must be allowed", r[3])
			case r[0] == 0 && rng.IntN(4) == 0:
				// after reset_after_ms the whole burst is available
				now += r[4]
				setClock()
				seen["refilled"]++
				full := call(k, k.b)
				require.Zero(t, full[0], "a full burst after reset %d ms", r[4])
			}
		}

		// Conformance: any run of admitted units i..j spans at least (n - B) * T ns.
		for _, k := range keys {
			for i := range k.admitted {
				var n int64
				for j := i; j < len(k.admitted); j++ {
					n += k.admitted[j].units
					span := k.admitted[j].atNs - k.admitted[i].atNs
					if n > k.b {
						require.GreaterOrEqual(t, span, (n-k.b)*k.interval,
							"%s: %d units between events %d and %d", k.name, n, i, j)
					}
				}
			}
		}
		require.Greater(t, calls, 300)
		for _, c := range []string{"allowed", "denied", "never", "mirrored", "retried", "refilled"} {
			require.Greater(t, seen[c], 10, "case %s exercised only %d times", c, seen[c])
		}
		t.Logf("%d calls: %v", calls, seen)
	})
}

// TestRateLimitBucketEquivalenceProperty checks §8.5's MUST (a leaky_bucket and a token_bucket
// with the same rate behave identically for any sequence) and §8.4's guarantee (a
// sliding_window never admits more than L units in any W ms, even with a tiny K), with random
// commands and a fixed seed.
func TestRateLimitBucketEquivalenceProperty(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		rng := rand.New(rand.NewPCG(99, 1))
		do := func(args ...any) string { return rlRender(c.Do(ctx, args...).Result()) }
		require.Equal(t, "OK", do("CONFIG", "SET", "ratelimit.sliding-window-max-entries", "3"))
		require.Equal(t, "OK", do("RATELIMIT.CREATE", "tb", "5", "1000", "ALGO", "token_bucket", "REFILL", "7.5"))
		require.Equal(t, "OK", do("RATELIMIT.CREATE", "lb", "5", "1000", "ALGO", "leaky_bucket", "DRAIN", "7.5"))
		require.Equal(t, "OK", do("RATELIMIT.CREATE", "tbd", "4", "700", "ALGO", "token_bucket"))
		require.Equal(t, "OK", do("RATELIMIT.CREATE", "lbd", "4", "700", "ALGO", "leaky_bucket"))
		require.Equal(t, "OK", do("RATELIMIT.CREATE", "sw", "6", "500"))
		type admit struct{ at, units int64 }
		var swLog []admit
		now := testutil.T0
		for i := 0; i < 300; i++ {
			now += []int64{0, 1, 37, 133, 400}[rng.IntN(5)]
			require.Equal(t, "OK", do("DEBUG", "CLOCK", "SET", now))
			key := []string{"a", "b"}[rng.IntN(2)]
			cost := 1 + rng.Int64N(6)
			var args []any
			switch rng.IntN(5) {
			case 0:
				args = []any{"PEEK", key}
			case 1:
				if rng.IntN(4) == 0 {
					args = []any{"RESET", key}
					break
				}
				fallthrough
			default:
				args = []any{"CHECK", key, "COST", cost}
			}
			for _, pair := range [][2]string{{"tb", "lb"}, {"tbd", "lbd"}} {
				a := do(append([]any{"RATELIMIT." + args[0].(string), pair[0]}, args[1:]...)...)
				b := do(append([]any{"RATELIMIT." + args[0].(string), pair[1]}, args[1:]...)...)
				require.Equal(t, a, b, "step %d %v on %v", i, args, pair)
			}
			if args[0] == "CHECK" && key == "a" {
				v, err := c.Do(ctx, "RATELIMIT.CHECK", "sw", "a", "COST", cost).Slice()
				require.NoError(t, err)
				if v[0].(int64) == 1 {
					swLog = append(swLog, admit{now, cost})
				}
			}
		}
		for _, pair := range [][2]string{{"tb", "lb"}, {"tbd", "lbd"}} {
			a := rlStatsFields(t, c, c.Do(ctx, "RATELIMIT.STATS", pair[0]).Val(), pair[0])
			b := rlStatsFields(t, c, c.Do(ctx, "RATELIMIT.STATS", pair[1]).Val(), pair[1])
			require.Equal(t, a["refill_per_sec"], b["drain_per_sec"])
			for _, f := range []string{"limit", "window_ms", "unique_keys", "total_allowed", "total_denied"} {
				require.Equal(t, a[f], b[f], f)
			}
		}
		// At most 6 units in any 500 ms: a unit admitted at s counts until s+500.
		for i := range swLog {
			var n int64
			for j := i; j < len(swLog) && swLog[j].at < swLog[i].at+500; j++ {
				n += swLog[j].units
			}
			require.LessOrEqual(t, n, int64(6), "window starting at t0+%d", swLog[i].at-testutil.T0)
		}
		require.NotEmpty(t, swLog)
	})
}

// TestRateLimitDirtyOnlyOnEffects checks §10 from the outside: only commands with an effect to
// propagate change rdb_changes_since_last_save; denials, peeks and no-ops leave it alone.
func TestRateLimitDirtyOnlyOnEffects(t *testing.T) {
	rows := []struct {
		cmd    string
		effect bool
	}{
		{"GCRA.LIMIT k 1000 1", true},
		{"GCRA.LIMIT k 1000 1", false},   // denied
		{"GCRA.LIMIT k 1000 1 2", false}, // count > burst
		{"GCRA.PEEK k 1000 1", false},
		{"CL.THROTTLE k 0 1 1 0", false}, // quantity 0
		{"CL.THROTTLE k 0 1 1", false},   // denied
		{"CL.THROTTLE c 0 1 1", true},
		{"GCRA.RESET nokey", false},
		{"GCRA.RESET k c", true},
		{"SET s hello", true},
		{"GCRA.LIMIT s 1000 1", false}, // WRONGTYPE
		{"GCRA.RESET s", false},        // WRONGTYPE
		{"GCRA.LIMIT s 0 1", false},    // argument error
		{"RATELIMIT.CREATE a 1 1000", true},
		{"RATELIMIT.CREATE a 1 1000", false},
		{"RATELIMIT.CHECK a u", true},
		{"RATELIMIT.CHECK a u", false},        // denied
		{"RATELIMIT.CHECK a u COST 2", false}, // cost > limit
		{"RATELIMIT.CHECK nolimiter u", false},
		{"RATELIMIT.PEEK a u", false},
		{"RATELIMIT.STATS a", false},
		{"RATELIMIT.LIST", false},
		{"RATELIMIT.RESET a nokey", false},
		{"RATELIMIT.RESET a u", true},
		{"RATELIMIT.DROP a", true},
	}
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		dirty := func() int64 {
			t.Helper()
			for _, line := range strings.Split(c.Info(ctx, "persistence").Val(), "\r\n") {
				if v, ok := strings.CutPrefix(line, "rdb_changes_since_last_save:"); ok {
					n, err := strconv.ParseInt(v, 10, 64)
					require.NoError(t, err)
					return n
				}
			}
			t.Fatal("no rdb_changes_since_last_save in INFO persistence")
			return 0
		}
		for _, r := range rows {
			before := dirty()
			_ = c.Do(ctx, rlWords(r.cmd)...).Err()
			if r.effect {
				require.Greater(t, dirty(), before, r.cmd)
			} else {
				require.Equal(t, before, dirty(), r.cmd)
			}
		}
	})
}

// TestRateLimitAtomicUnderConcurrency checks rule 1 of §1 (the check and the update are one
// step): with the clock frozen, concurrent clients get exactly the burst, never more.
// TestRateLimitAtomicUnderConcurrency is the concurrency check: with the clock frozen,
// 50 clients x 200 calls on one key with a burst (limit) of 1000 admit exactly 1000, for every
// algorithm. Each client pipelines its calls in groups of 20 so the test stays fast while the
// calls of different clients still interleave on the server.
func TestRateLimitAtomicUnderConcurrency(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		rlReset(t, c)
		for _, cmd := range []string{"RATELIMIT.CREATE sw 1000 60000", "RATELIMIT.CREATE tb 1000 60000 ALGO token_bucket",
			"RATELIMIT.CREATE lb 1000 60000 ALGO leaky_bucket"} {
			require.NoError(t, c.Do(ctx, rlWords(cmd)...).Err())
		}
		cmds := []struct {
			args    []any
			allowed func(r []any) bool
		}{
			{[]any{"GCRA.LIMIT", "g", 60000, 1000}, func(r []any) bool { return r[0].(int64) == 0 }},
			{[]any{"CL.THROTTLE", "cl", 999, 1000, 60}, func(r []any) bool { return r[0].(int64) == 0 }},
			{[]any{"RATELIMIT.CHECK", "sw", "u"}, func(r []any) bool { return r[0].(int64) == 1 }},
			{[]any{"RATELIMIT.CHECK", "tb", "u"}, func(r []any) bool { return r[0].(int64) == 1 }},
			{[]any{"RATELIMIT.CHECK", "lb", "u"}, func(r []any) bool { return r[0].(int64) == 1 }},
		}
		const workers, each, batch = 50, 200, 20
		counts := make([][workers]int, len(cmds))
		done := make(chan error, workers)
		for w := 0; w < workers; w++ {
			cw := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: c.Options().Protocol, PoolSize: 1})
			t.Cleanup(func() { _ = cw.Close() })
			go func() {
				for i := 0; i < each; i += batch {
					for j, cmd := range cmds {
						pipe := cw.Pipeline()
						res := make([]*redis.Cmd, batch)
						for k := range res {
							res[k] = pipe.Do(ctx, cmd.args...)
						}
						if _, err := pipe.Exec(ctx); err != nil {
							done <- err
							return
						}
						for _, r := range res {
							if v, _ := r.Slice(); cmd.allowed(v) {
								counts[j][w]++
							}
						}
					}
				}
				done <- nil
			}()
		}
		for w := 0; w < workers; w++ {
			require.NoError(t, <-done)
		}
		for j, cmd := range cmds {
			total := 0
			for _, n := range counts[j] {
				total += n
			}
			require.Equal(t, 1000, total, "%v", cmd.args)
		}
		for _, name := range []string{"sw", "tb", "lb"} {
			f := rlStatsFields(t, c, c.Do(ctx, "RATELIMIT.STATS", name).Val(), name)
			require.Equal(t, "1000", f["total_allowed"], name)
			require.Equal(t, strconv.Itoa(workers*each-1000), f["total_denied"], name)
		}
	})
}

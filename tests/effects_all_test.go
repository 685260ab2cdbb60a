package tests

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/testutil"
)

func (l *effectLog) all() []store.Effect {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]store.Effect(nil), l.effects...)
}

func (l *effectLog) since(n int) []store.Effect { return l.all()[n:] }

func effectString(e store.Effect) string {
	parts := make([]string, len(e.Args))
	for i, a := range e.Args {
		parts[i] = string(a)
	}
	return strings.Join(parts, " ")
}

// doOK runs a command and fails the test on anything but a reply (server errors are replies).
func doOK(t *testing.T, c *redis.Conn, args ...any) any {
	t.Helper()
	v, err := c.Do(ctx, args...).Result()
	var rerr redis.Error
	if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &rerr) {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// effectCommands are the only command names an effect may carry: nothing relative to the
// clock (EXPIRE, SETEX, GETEX, GCRA.LIMIT ...), nothing whose outcome depends on a decision
// (SETNX, RATELIMIT.CHECK ...), nothing with float arithmetic (INCRBYFLOAT).
var effectCommands = map[string]bool{
	"SET": true, "MSET": true, "DEL": true, "UNLINK": true, "GETSET": true, "APPEND": true,
	"SETRANGE": true, "INCR": true, "DECR": true, "INCRBY": true, "DECRBY": true,
	"SETBIT": true, "BITOP": true, "BITFIELD": true, "RENAME": true, "RENAMENX": true,
	"COPY": true, "MOVE": true, "PERSIST": true, "PEXPIREAT": true, "FLUSHDB": true,
	"FLUSHALL": true, "SWAPDB": true, "MULTI": true, "EXEC": true,
	"RATELIMIT.CREATE": true, "RATELIMIT.UPDATE": true, "RATELIMIT.SETSTATE": true, "RATELIMIT.RESET": true, "RATELIMIT.DROP": true,
	"HSET": true, "HMSET": true, "HDEL": true, "HINCRBY": true, "HPEXPIREAT": true, "HPERSIST": true,
	"SADD": true, "SREM": true, "SMOVE": true, "SINTERSTORE": true, "SUNIONSTORE": true, "SDIFFSTORE": true,
	"ZADD": true, "ZREM": true, "ZREMRANGEBYRANK": true, "ZREMRANGEBYSCORE": true, "ZREMRANGEBYLEX": true,
	"ZRANGESTORE": true, "ZUNIONSTORE": true, "ZINTERSTORE": true, "ZDIFFSTORE": true,
	"LPUSH": true, "RPUSH": true, "LPUSHX": true, "RPUSHX": true, "LPOP": true, "RPOP": true,
	"LSET": true, "LINSERT": true, "LREM": true, "LTRIM": true, "LMOVE": true, "RPOPLPUSH": true,
	"PFADD": true, "PFMERGE": true, "PFDEBUG": true,
	"XADD": true, "XTRIM": true, "XDEL": true, "XACK": true, "XSETID": true, "XGROUP": true, "XCLAIM": true,
	"FUNCTION": true,
}

// checkTimeFree fails on an effect that is not an allowed, time-free command line.
func checkTimeFree(t *testing.T, effects []store.Effect) {
	t.Helper()
	for _, e := range effects {
		name := strings.ToUpper(string(e.Args[0]))
		require.True(t, effectCommands[name], "journaled a command that is not an effect: %q", effectString(e))
		switch name {
		case "SET":
			// SET key value, optionally PXAT <abs> or KEEPTTL: never NX/XX/GET/EX/PX/EXAT.
			switch len(e.Args) {
			case 3:
			case 4:
				require.Equal(t, "KEEPTTL", string(e.Args[3]), "%q", effectString(e))
			case 5:
				require.Equal(t, "PXAT", string(e.Args[3]), "%q", effectString(e))
				_, err := strconv.ParseInt(string(e.Args[4]), 10, 64)
				require.NoError(t, err)
			default:
				t.Fatalf("SET effect with options: %q", effectString(e))
			}
		case "MULTI", "EXEC":
			require.Len(t, e.Args, 1)
		case "HPEXPIREAT":
			// HPEXPIREAT key abs-ms FIELDS n field...: no NX/XX/GT/LT.
			require.GreaterOrEqual(t, len(e.Args), 6, "%q", effectString(e))
			require.Equal(t, "FIELDS", string(e.Args[3]), "%q", effectString(e))
		}
		switch {
		case strings.HasPrefix(name, "RATELIMIT."), name == "FUNCTION":
			require.Equal(t, -1, e.DB, "limiter and function effects are server-wide: %q", effectString(e))
		case name == "MULTI" || name == "EXEC":
			require.GreaterOrEqual(t, e.DB, -1) // the first effect's, which may be server-wide
		default:
			require.GreaterOrEqual(t, e.DB, 0, "%q", effectString(e))
		}
	}
}

// replay applies effects, in order, as commands on one connection, selecting each effect's
// database first, and fails on any error reply (inside EXEC too).
func replay(t *testing.T, c *redis.Conn, effects []store.Effect) {
	t.Helper()
	db := 0
	for _, e := range effects {
		if e.DB >= 0 && e.DB != db {
			require.NoError(t, c.Do(ctx, "SELECT", e.DB).Err())
			db = e.DB
		}
		args := make([]any, len(e.Args))
		for i, a := range e.Args {
			args[i] = string(a)
		}
		v, err := c.Do(ctx, args...).Result()
		if !errors.Is(err, redis.Nil) { // GETSET of a new key replies nil
			require.NoError(t, err, "replaying %q", effectString(e))
		}
		if arr, ok := v.([]any); ok && strings.EqualFold(string(e.Args[0]), "exec") {
			for _, x := range arr {
				if err, ok := x.(error); ok {
					t.Fatalf("replayed transaction failed: %v", err)
				}
			}
		}
	}
	require.NoError(t, c.Do(ctx, "SELECT", 0).Err())
}

// dbState is everything a database holds, as a client sees it: every key with its type, value
// and absolute expiry (PEXPIRETIME reads no clock).
func dbState(t *testing.T, c *redis.Conn, db int) (keys []string, dbsize int64) {
	t.Helper()
	require.NoError(t, c.Do(ctx, "SELECT", db).Err())
	names, err := c.Do(ctx, "KEYS", "*").StringSlice()
	require.NoError(t, err)
	sort.Strings(names)
	for _, k := range names {
		typ := c.Type(ctx, k).Val()
		var val string
		switch typ {
		case "list":
			vs, err := c.LRange(ctx, k, 0, -1).Result()
			require.NoError(t, err)
			val = fmt.Sprintf("%q", vs)
		case "set":
			ms, err := c.SMembers(ctx, k).Result()
			require.NoError(t, err)
			sort.Strings(ms)
			val = fmt.Sprintf("%q", ms)
		case "zset":
			vs, err := c.Do(ctx, "ZRANGE", k, 0, -1, "WITHSCORES").StringSlice()
			require.NoError(t, err)
			val = fmt.Sprintf("%s %q", c.ObjectEncoding(ctx, k).Val(), vs)
		case "stream":
			// Entries and XINFO STREAM FULL, less the node layout (an approximate trim is
			// replayed as an exact one) and the times a consumer was seen and an entry
			// delivered: Redis's XCLAIM, which carries them, takes a time ahead of the
			// replaying clock (B's, here) as that clock's now, and consumers are seen at the
			// replaying time. Replayed at the journaled times, as the append-only log is, those
			// come back exactly too (TestStreamEffects, TestStreamRestart).
			entries := doOK(t, c, "XRANGE", k, "-", "+")
			full := doOK(t, c, "XINFO", "STREAM", k, "FULL", "COUNT", 0)
			val = fmt.Sprintf("%v %s", entries, streamInfoWithoutTimes(full))
		case "hash":
			m, err := c.HGetAll(ctx, k).Result()
			require.NoError(t, err)
			pairs := make([]string, 0, len(m))
			for f, v := range m {
				at := c.Do(ctx, "HPEXPIRETIME", k, "FIELDS", 1, f).Val()
				pairs = append(pairs, fmt.Sprintf("%q=%q@%v", f, v, at))
			}
			sort.Strings(pairs)
			val = strings.Join(pairs, " ")
		default:
			val = fmt.Sprint(doOK(t, c, "GET", k))
		}
		exp := c.Do(ctx, "PEXPIRETIME", k).Val()
		keys = append(keys, fmt.Sprintf("%s %s %q %v", k, typ, val, exp))
	}
	dbsize = c.DBSize(ctx).Val()
	require.NoError(t, c.Do(ctx, "SELECT", 0).Err())
	return keys, dbsize
}

// limiterState is RATELIMIT.LIST and each limiter's settings and totals from STATS.
func limiterState(t *testing.T, c *redis.Conn) map[string]map[string]any {
	t.Helper()
	names, err := c.Do(ctx, "RATELIMIT.LIST").StringSlice()
	require.NoError(t, err)
	out := map[string]map[string]any{}
	for _, n := range names {
		flat := c.Do(ctx, "RATELIMIT.STATS", n).Val().([]any)
		m := map[string]any{}
		for i := 0; i+1 < len(flat); i += 2 {
			m[flat[i].(string)] = flat[i+1]
		}
		out[n] = m
	}
	return out
}

// workload generates a seeded random mix of every write command (and some reads), with
// relative and absolute times, across three databases.
type workload struct {
	rng  *rand.Rand
	now  int64 // the server clock, as the workload moved it
	keys []string
	// xids are the IDs stream commands added, for the commands that name entries.
	xids []string
	// leases are the concurrency leases CHECK acquired (key and id), for RATELIMIT.RELEASE.
	leases [][2]any
}

// xid is an ID a stream command added (or, before any, one that does not exist).
func (w *workload) xid() string {
	if len(w.xids) == 0 || w.rng.IntN(8) == 0 {
		return fmt.Sprintf("%d-0", w.now)
	}
	return w.xids[len(w.xids)-1-w.rng.IntN(min(len(w.xids), 12))]
}

func (w *workload) key() string { return w.keys[w.rng.IntN(len(w.keys))] }
func (w *workload) n(lo, hi int) int {
	return lo + w.rng.IntN(hi-lo+1)
}
func (w *workload) pick(xs ...string) string { return xs[w.rng.IntN(len(xs))] }

func (w *workload) value() string {
	switch w.rng.IntN(4) {
	case 0:
		return strconv.Itoa(w.n(-50, 50))
	case 1:
		return w.pick("1.5", "0.25", "-3")
	default:
		return w.pick("a", "hello", "xyz", "", "12abc")
	}
}

// ttlOpts is an optional expiry for SET: relative or absolute, sometimes already past.
func (w *workload) ttlOpts() []any {
	switch w.rng.IntN(8) {
	case 0:
		return []any{"EX", w.n(1, 10)}
	case 1:
		return []any{"PX", w.n(1, 10000)}
	case 2:
		return []any{"EXAT", w.now/1000 + int64(w.n(-3, 10))}
	case 3:
		return []any{"PXAT", w.now + int64(w.n(-3000, 10000))}
	case 4:
		return []any{"KEEPTTL"}
	}
	return nil
}

func (w *workload) expireCmd() []any {
	var cmd []any
	switch w.rng.IntN(4) {
	case 0:
		cmd = []any{"EXPIRE", w.key(), w.n(-1, 10)}
	case 1:
		cmd = []any{"PEXPIRE", w.key(), w.n(-100, 10000)}
	case 2:
		cmd = []any{"EXPIREAT", w.key(), w.now/1000 + int64(w.n(-3, 10))}
	default:
		cmd = []any{"PEXPIREAT", w.key(), w.now + int64(w.n(-3000, 10000))}
	}
	if w.rng.IntN(3) == 0 {
		cmd = append(cmd, w.pick("NX", "XX", "GT", "LT"))
	}
	return cmd
}

// command returns one command; inMulti leaves out what cannot or should not be queued.
func (w *workload) command(inMulti bool) []any {
	k := w.key()
	for {
		switch w.rng.IntN(70) {
		case 0, 1, 2:
			cmd := []any{"SET", k, w.value()}
			if w.rng.IntN(4) == 0 {
				cmd = append(cmd, w.pick("NX", "XX"))
			}
			if w.rng.IntN(5) == 0 {
				cmd = append(cmd, "GET")
			}
			return append(cmd, w.ttlOpts()...)
		case 3:
			return []any{"SETNX", k, w.value()}
		case 4:
			return []any{w.pick("SETEX", "PSETEX"), k, w.n(1, 9000), w.value()}
		case 5:
			return []any{"GETSET", k, w.value()}
		case 6:
			return []any{"GETDEL", k}
		case 7:
			switch w.rng.IntN(6) {
			case 0:
				return []any{"GETEX", k, "EX", w.n(1, 10)}
			case 1:
				return []any{"GETEX", k, "PX", w.n(1, 10000)}
			case 2:
				return []any{"GETEX", k, "EXAT", w.now/1000 + int64(w.n(-3, 10))}
			case 3:
				return []any{"GETEX", k, "PXAT", w.now + int64(w.n(-3000, 10000))}
			case 4:
				return []any{"GETEX", k, "PERSIST"}
			}
			return []any{"GETEX", k}
		case 8:
			return []any{w.pick("MSET", "MSETNX"), k, w.value(), w.key(), w.value()}
		case 9:
			return []any{"APPEND", k, w.value()}
		case 10:
			return []any{"SETRANGE", k, w.n(0, 12), w.pick("", "Z", "abc")}
		case 11, 12:
			return []any{w.pick("INCR", "DECR"), k}
		case 13:
			return []any{w.pick("INCRBY", "DECRBY"), k, w.n(-20, 20)}
		case 14:
			return []any{"INCRBYFLOAT", k, w.pick("1.5", "0.1", "-2", "1e3", "3")}
		case 15:
			return []any{"SETBIT", k, w.n(0, 40), w.n(0, 1)}
		case 16:
			op := w.pick("AND", "OR", "XOR", "NOT")
			if op == "NOT" {
				return []any{"BITOP", op, k, w.key()}
			}
			return []any{"BITOP", op, k, w.key(), w.key()}
		case 17:
			return []any{"BITFIELD", k, "OVERFLOW", w.pick("WRAP", "SAT", "FAIL"),
				"INCRBY", w.pick("u4", "i5"), w.n(0, 20), w.n(-20, 20), "SET", "u8", w.n(0, 16), w.n(0, 255), "GET", "u8", 0}
		case 18:
			return []any{w.pick("DEL", "UNLINK"), k, w.key()}
		case 19, 20, 21:
			return w.expireCmd()
		case 22:
			return []any{"PERSIST", k}
		case 23:
			return []any{w.pick("RENAME", "RENAMENX"), k, w.key()}
		case 24:
			cmd := []any{"COPY", k, w.key()}
			if w.rng.IntN(2) == 0 {
				cmd = append(cmd, "DB", w.n(0, 2))
			}
			if w.rng.IntN(2) == 0 {
				cmd = append(cmd, "REPLACE")
			}
			return cmd
		case 25:
			return []any{"MOVE", k, w.n(0, 2)}
		case 26:
			if w.rng.IntN(4) == 0 {
				return []any{"SWAPDB", w.n(0, 2), w.n(0, 2)}
			}
		case 27:
			if w.rng.IntN(8) == 0 {
				return []any{"FLUSHDB"}
			}
			if w.rng.IntN(60) == 0 {
				return []any{"FLUSHALL"}
			}
		case 28:
			return []any{"SELECT", w.n(0, 2)}
		case 29, 30:
			g := w.pick("g0", "g1", "g2", k)
			switch w.rng.IntN(4) {
			case 0:
				// All or nothing over two keys, possibly the same one twice.
				return []any{"GCRA.LIMITALL", 2, g, w.pick("1000", "60000"), w.n(1, 4),
					w.pick("g0", "g1", "g2"), w.pick("1000", "60000"), w.n(1, 4), "COUNT", w.n(1, 2)}
			case 1:
				return []any{"GCRA.REFUND", g, w.pick("1000", "60000"), w.n(1, 4), w.n(1, 3)}
			}
			return []any{"GCRA.LIMIT", g, w.pick("1000", "60000"), w.n(1, 4), w.n(1, 2)}
		case 31:
			g := w.pick("g0", "g1", k)
			return []any{"CL.THROTTLE", g, w.n(0, 3), w.n(1, 3), w.n(1, 5), w.n(0, 2)}
		case 32:
			return []any{"GCRA.RESET", w.pick("g0", "g1", "g2"), w.key()}
		case 33:
			switch w.rng.IntN(4) {
			case 0:
				return []any{"RATELIMIT.CREATE", "sw", w.n(1, 5), 2000}
			case 1:
				return []any{"RATELIMIT.CREATE", "tb", w.n(2, 6), 3000, "ALGO", "token_bucket", "REFILL", w.pick("2", "0.5")}
			case 2:
				return []any{"RATELIMIT.CREATE", "lb", w.n(2, 6), 3000, "ALGO", "leaky_bucket"}
			default:
				return []any{"RATELIMIT.CREATE", "cc", w.n(1, 5), w.pick("700", "2000"), "ALGO", "concurrency"}
			}
		case 34, 35:
			cmd := []any{"RATELIMIT.CHECK", w.pick("sw", "tb", "lb", "cc", "cc", "none"), w.pick("u", "v", "w")}
			if w.rng.IntN(3) == 0 {
				cmd = append(cmd, "COST", w.n(1, 3))
			}
			return cmd
		case 36:
			if w.rng.IntN(3) > 0 {
				// A lease CHECK acquired (maybe released or expired since), or one never issued.
				if len(w.leases) > 0 && w.rng.IntN(5) > 0 {
					l := w.leases[w.rng.IntN(len(w.leases))]
					return []any{"RATELIMIT.RELEASE", "cc", l[0], l[1]}
				}
				return []any{"RATELIMIT.RELEASE", w.pick("cc", "sw"), w.pick("u", "v"), w.n(1, 3)}
			}
			return []any{"RATELIMIT.RESET", w.pick("sw", "tb", "lb", "cc"), w.pick("u", "v")}
		case 37:
			switch w.rng.IntN(10) {
			case 0, 1:
				return []any{"RATELIMIT.DROP", w.pick("sw", "tb", "lb", "cc")}
			case 2, 3, 4:
				// In place: the bucket conversion depends on the time, so its effect must
				// carry AT (the replay below would diverge otherwise).
				cmd := []any{"RATELIMIT.UPDATE", w.pick("sw", "tb", "lb", "cc")}
				if w.rng.IntN(2) == 0 {
					cmd = append(cmd, "LIMIT", w.n(1, 6))
				}
				if w.rng.IntN(2) == 0 {
					cmd = append(cmd, "WINDOW", w.pick("500", "2000", "5000"))
				}
				if cmd[1] == "tb" && w.rng.IntN(2) == 0 {
					cmd = append(cmd, "REFILL", w.pick("3", "0.7"))
				}
				if len(cmd) == 2 || w.rng.IntN(3) == 0 {
					cmd = append(cmd, "SHADOW", w.pick("on", "off"))
				}
				return cmd
			}
		case 38:
			return []any{w.pick("GET", "EXISTS", "TTL", "STRLEN", "TYPE"), k}
		case 39:
			if !inMulti {
				return []any{"DEBUG", "CLOCK", "ADVANCE", w.n(0, 1500)}
			}
		case 40, 41:
			h := w.pick("h0", "h1", k)
			return []any{w.pick("HSET", "HMSET"), h, w.pick("a", "b", "c"), w.value(), w.pick("b", "d"), w.value()}
		case 42:
			return []any{"HSETNX", w.pick("h0", "h1", k), w.pick("a", "b", "e"), w.value()}
		case 43:
			h := w.pick("h0", "h1", k)
			switch w.rng.IntN(4) {
			case 0:
				// Field TTLs (Redis 7.4): relative and absolute, with or without a condition,
				// some already past (they delete the fields).
				cmd := []any{w.pick("HEXPIRE", "HPEXPIRE", "HEXPIREAT", "HPEXPIREAT"), h}
				switch cmd[0] {
				case "HEXPIRE":
					cmd = append(cmd, w.n(0, 3))
				case "HPEXPIRE":
					cmd = append(cmd, w.n(0, 3000))
				case "HEXPIREAT":
					cmd = append(cmd, w.now/1000+int64(w.n(-1, 3)))
				default:
					cmd = append(cmd, w.now+int64(w.n(-500, 3000)))
				}
				if w.rng.IntN(2) == 0 {
					cmd = append(cmd, w.pick("NX", "XX", "GT", "LT"))
				}
				return append(cmd, "FIELDS", 2, w.pick("a", "b"), w.pick("c", "d", "e"))
			case 1:
				return []any{"HPERSIST", h, "FIELDS", 1, w.pick("a", "b", "c")}
			}
			return []any{"HDEL", h, w.pick("a", "b"), w.pick("c", "d", "e")}
		case 44:
			return []any{"HINCRBY", w.pick("h0", "h1", k), w.pick("n", "a"), w.n(-5, 5)}
		case 45:
			return []any{"HINCRBYFLOAT", w.pick("h0", "h1", k), w.pick("f", "a"), w.pick("1.5", "0.1", "-2")}
		case 46, 47:
			cmd := []any{"SADD", w.pick("s0", "s1", "s2", k)}
			for j := w.n(1, 4); j > 0; j-- {
				cmd = append(cmd, w.pick("1", "2", "3", "-7", "a", "b", "10"))
			}
			return cmd
		case 48:
			return []any{"SREM", w.pick("s0", "s1", "s2", k), w.pick("1", "2", "a"), w.pick("3", "b", "10")}
		case 49:
			s := w.pick("s0", "s1", "s2", k)
			switch w.rng.IntN(3) {
			case 0:
				return []any{"SPOP", s}
			case 1:
				return []any{"SPOP", s, w.n(0, 8)}
			}
			return []any{"SMOVE", s, w.pick("s0", "s1", "s2", k), w.pick("1", "2", "3", "a")}
		case 50:
			return []any{w.pick("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), w.pick("s0", "s1", "s2", k),
				w.pick("s0", "s1", "s2", k), w.pick("s0", "s1", "s2", k)}
		case 51, 52:
			cmd := []any{"ZADD", w.pick("z0", "z1", "z2", k)}
			for _, opt := range []string{"NX", "XX", "GT", "LT", "CH"} {
				if w.rng.IntN(6) == 0 {
					cmd = append(cmd, opt)
				}
			}
			for j := w.n(1, 3); j > 0; j-- {
				cmd = append(cmd, w.pick("1", "2.5", "-3", "0.1", "inf", "-inf", "1e300", "7"), w.pick("a", "b", "c", "d", "e"))
			}
			return cmd
		case 53:
			z, m, by := w.pick("z0", "z1", "z2", k), w.pick("a", "b", "f"), w.pick("0.1", "0.2", "-1.5", "1e-5", "inf", "3")
			if w.rng.IntN(2) == 0 {
				return []any{"ZINCRBY", z, by, m}
			}
			cmd := []any{"ZADD", z, "INCR"}
			if w.rng.IntN(2) == 0 {
				cmd = append(cmd, w.pick("XX", "NX", "GT", "LT"))
			}
			return append(cmd, by, m)
		case 54:
			z := w.pick("z0", "z1", "z2", k)
			switch w.rng.IntN(7) {
			case 0:
				return []any{"ZREM", z, w.pick("a", "b"), w.pick("c", "f")}
			case 1:
				return []any{w.pick("ZPOPMIN", "ZPOPMAX"), z}
			case 2:
				return []any{w.pick("ZPOPMIN", "ZPOPMAX"), z, w.n(0, 3)}
			case 3:
				return []any{"ZMPOP", 2, z, w.pick("z0", "z1", "z2"), w.pick("MIN", "MAX"), "COUNT", w.n(1, 3)}
			case 4:
				return []any{"ZREMRANGEBYRANK", z, w.n(-3, 2), w.n(-2, 3)}
			case 5:
				return []any{"ZREMRANGEBYSCORE", z, w.pick("-inf", "(0", "1"), w.pick("2.5", "(7", "+inf")}
			}
			return []any{"ZREMRANGEBYLEX", z, w.pick("-", "[b", "(a"), w.pick("+", "[c", "(d")}
		case 55:
			dst, a, b := w.pick("z0", "z1", "z2", k), w.pick("z0", "z1", "z2", "s0", k), w.pick("z0", "z1", "z2", "s1")
			switch w.rng.IntN(4) {
			case 0:
				return []any{"ZUNIONSTORE", dst, 2, a, b, "WEIGHTS", w.pick("1", "0.5", "-2"), w.pick("1", "3"), "AGGREGATE", w.pick("SUM", "MIN", "MAX")}
			case 1:
				return []any{"ZINTERSTORE", dst, 2, a, b, "AGGREGATE", w.pick("SUM", "MIN", "MAX")}
			case 2:
				return []any{"ZDIFFSTORE", dst, 2, a, b}
			}
			return []any{"ZRANGESTORE", dst, a, w.pick("0", "(1", "-inf"), w.pick("-1", "5", "+inf"), w.pick("BYSCORE", "BYSCORE", "REV")}
		case 56:
			// SORT ... STORE of lists, sets and sorted sets, ALPHA ties by BY included.
			src, dst := w.pick("l0", "s0", "z0", k), w.pick("l1", "s1", k)
			args := []any{"SORT", src}
			if w.rng.IntN(2) == 0 {
				args = append(args, "BY", w.pick("nosort", "k*", "w_*"))
			}
			if w.rng.IntN(3) == 0 {
				args = append(args, "LIMIT", w.n(-1, 3), w.n(-1, 4))
			}
			if w.rng.IntN(3) == 0 {
				args = append(args, "GET", w.pick("#", "k*", "nokey*"))
			}
			return append(args, w.pick("ALPHA", "DESC", "ASC"), "ALPHA", "STORE", dst)
		case 57:
			cmd := []any{"PFADD", w.pick("p0", "p1", "p2", "p2", k)}
			n := w.n(0, 4)
			if w.rng.IntN(6) == 0 {
				n = w.n(100, 2500) // through the sparse limit, and dense
			}
			for range n {
				cmd = append(cmd, "e"+strconv.Itoa(w.rng.IntN(5000)))
			}
			return cmd
		case 58:
			p := func() string { return w.pick("p0", "p1", "p2", k) }
			switch w.rng.IntN(6) {
			case 0, 1:
				return []any{"PFMERGE", p(), p(), w.pick("p0", "p1", "p2")}
			case 2:
				return []any{"PFCOUNT", p()} // caches the estimate in the value
			case 3:
				return []any{"PFCOUNT", p(), p()}
			case 4:
				return []any{"PFDEBUG", w.pick("TODENSE", "GETREG", "ENCODING"), p()}
			}
			// Sparse HLLs' bytes depend on it; the replaying server keeps the default.
			return []any{"CONFIG", "SET", "hll-sparse-max-bytes", w.pick("3000", "60", "300")}
		case 59, 60, 61, 62, 63, 64, 65:
			return w.streamCommand()
		case 66:
			// Scripts journal the effects of their writes, as one MULTI/EXEC block; a script
			// that fails half-way keeps (and journals) what it wrote before.
			k2 := w.key()
			switch w.rng.IntN(4) {
			case 0:
				return []any{"EVAL", "redis.call('set', KEYS[1], ARGV[1]); redis.call('pexpire', KEYS[1], ARGV[2]); return redis.call('incr', KEYS[2])",
					2, k, k2, w.value(), w.n(1, 9000)}
			case 1:
				return []any{"EVAL", "return redis.call('spop', KEYS[1])", 1, w.pick("s0", "s1", k)}
			case 2:
				return []any{"EVAL", "local v = redis.call('get', KEYS[1]) if v then redis.call('append', KEYS[1], 'x') end redis.call('sadd', 's0', ARGV[1], ARGV[2]) return v",
					1, k, w.value(), w.value()}
			}
			return []any{"EVAL", "#!lua\nredis.call('select', ARGV[1]) redis.call('lpush', KEYS[1], ARGV[2]) return redis.call('expire', KEYS[1], 5)",
				1, k, w.n(0, 2), w.value()}
		case 67:
			return []any{"FCALL", w.pick("bump", "stamp"), 1, k}
		case 68:
			// GEOADD journals the ZADD of the geohash scores; the sets are shared with the
			// sorted-set commands, so they mix.
			g := w.pick("g0", "g1", "z0", k)
			cmd := []any{"GEOADD", g}
			for _, opt := range []string{"NX", "XX", "CH"} {
				if w.rng.IntN(6) == 0 {
					cmd = append(cmd, opt)
				}
			}
			for j := w.n(1, 3); j > 0; j-- {
				cmd = append(cmd, w.pick("13.361389", "15.087269", "-122.4194", "0", "179.9999", "-180"),
					w.pick("38.115556", "37.502669", "37.7749", "0", "85.05112878", "-85"), w.pick("a", "b", "c", "d", "e", "p"))
			}
			return cmd
		case 69:
			// The stored results of searches (with distances, from floating-point math) are
			// journaled as the resulting set.
			src, dst := w.pick("g0", "g1", "z0", k), w.pick("g1", "g2", "z1", k)
			radius, unit := w.pick("100", "500", "2000", "0"), w.pick("km", "mi", "m")
			switch w.rng.IntN(3) {
			case 0:
				return []any{"GEORADIUS", src, w.pick("15", "13.4", "-122"), w.pick("37", "38", "37.7"), radius, unit,
					w.pick("STORE", "STOREDIST"), dst, w.pick("ASC", "DESC")}
			case 1:
				return []any{"GEORADIUSBYMEMBER", src, w.pick("a", "b", "p"), radius, unit, w.pick("STORE", "STOREDIST"), dst, "COUNT", w.n(1, 3)}
			}
			cmd := []any{"GEOSEARCHSTORE", dst, src, "FROMLONLAT", w.pick("15", "13.4", "0"), w.pick("37", "0")}
			if w.rng.IntN(2) == 0 {
				cmd = append(cmd, "BYRADIUS", radius, unit)
			} else {
				cmd = append(cmd, "BYBOX", radius, w.pick("300", "1000"), unit)
			}
			return append(cmd, "STOREDIST")
		}
	}
}

// streamCommand is a stream write (or read) on x0, x1 or a shared key: entries with generated
// and explicit IDs, trimming, groups, reads that deliver, acknowledgements and claims.
func (w *workload) streamCommand() []any {
	x := w.pick("x0", "x1", "x0", "x1", "x0", w.key())
	g := w.pick("g", "h", "g")
	switch w.rng.IntN(18) {
	case 0, 1, 2, 3:
		cmd := []any{"XADD", x}
		switch w.rng.IntN(6) {
		case 0:
			cmd = append(cmd, "MAXLEN", w.pick("~", "="), w.n(0, 6))
		case 1:
			cmd = append(cmd, "NOMKSTREAM")
		}
		return append(cmd, w.pick("*", fmt.Sprint(w.now)+"-*"), "f", w.value())
	case 4:
		return []any{"XTRIM", x, w.pick("MAXLEN", "MINID"), w.pick("~", "=", "="), w.pick("3", "0", w.xid())}
	case 5:
		return []any{"XDEL", x, w.xid(), w.xid()}
	case 6, 7:
		cmd := []any{"XGROUP", "CREATE", x, g, w.pick("$", "0", "0", w.xid())}
		if w.rng.IntN(5) != 0 {
			cmd = append(cmd, "MKSTREAM")
		}
		return cmd
	case 8, 9, 10, 16:
		cmd := []any{"XREADGROUP", "GROUP", g, w.pick("alice", "bob")}
		if w.rng.IntN(2) == 0 {
			cmd = append(cmd, "COUNT", w.n(1, 3))
		}
		if w.rng.IntN(4) == 0 {
			cmd = append(cmd, "NOACK")
		}
		return append(cmd, "STREAMS", x, w.pick(">", ">", "0"))
	case 11:
		return []any{"XACK", x, g, w.xid(), w.xid()}
	case 12:
		cmd := []any{"XCLAIM", x, g, w.pick("carol", "alice"), w.n(0, 2000), w.xid(), w.xid()}
		for _, opt := range [][]any{{"IDLE", w.n(0, 5000)}, {"TIME", w.now - int64(w.n(-100, 4000))}, {"RETRYCOUNT", w.n(0, 9)},
			{"FORCE"}, {"JUSTID"}, {"LASTID", w.xid()}} {
			if w.rng.IntN(4) == 0 {
				cmd = append(cmd, opt...)
			}
		}
		return cmd
	case 13:
		cmd := []any{"XAUTOCLAIM", x, g, w.pick("dave", "bob"), w.n(0, 2000), w.pick("0", "-", w.xid())}
		if w.rng.IntN(2) == 0 {
			cmd = append(cmd, "COUNT", w.n(1, 3))
		}
		if w.rng.IntN(3) == 0 {
			cmd = append(cmd, "JUSTID")
		}
		return cmd
	case 14:
		return []any{"XSETID", x, fmt.Sprintf("%d-%d", w.now, 1000000+w.n(0, 9)), "ENTRIESADDED", w.n(40, 900), "MAXDELETEDID", w.xid()}
	case 15:
		switch w.rng.IntN(4) {
		case 0:
			return []any{"XGROUP", "SETID", x, g, w.pick("$", "0", w.xid()), "ENTRIESREAD", w.n(-1, 3)}
		case 1:
			return []any{"XGROUP", "CREATECONSUMER", x, g, w.pick("erin", "alice")}
		case 2:
			return []any{"XGROUP", "DELCONSUMER", x, g, w.pick("erin", "bob")}
		}
		return []any{"XGROUP", "DESTROY", x, g}
	}
	return []any{w.pick("XLEN", "XINFO"), x}
}

// TestAllWritesJournalReplayableEffects is the replay test of ARCHITECTURE.md §3 for every
// write command: a seeded random workload runs on server A with its clock moving forward and
// keys expiring lazily and actively; replaying A's effects on server B, whose clock is
// elsewhere, gives the same keys, values, expiry times and limiters.
func TestAllWritesJournalReplayableEffects(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { replayWorkload(t, seed, 3000) })
	}
}

// runWorkload loads the workload's functions through ca and sends ops random write commands
// (seeded; one in 25 a MULTI of 2 to 5, sometimes discarded), keeping the workload's own clock
// in step with the DEBUG CLOCK moves it makes. It ends with database 0 selected.
func runWorkload(t *testing.T, ca *redis.Conn, seed uint64, ops int) *workload {
	t.Helper()
	require.NoError(t, ca.Do(ctx, "FUNCTION", "LOAD", "#!lua name=wl\n"+
		"redis.register_function('bump', function(k) return redis.call('hincrby', k[1], 'n', 1) end)\n"+
		"redis.register_function('stamp', function(k) redis.call('set', k[1], 'v', 'px', 2500) return redis.call('pttl', k[1]) end)").Err())

	w := &workload{rng: rand.New(rand.NewPCG(seed, 42)), now: testutil.T0,
		keys: []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "g0"}}
	for range ops {
		if w.rng.IntN(25) == 0 {
			// A transaction of 2 to 5 commands, sometimes discarded.
			require.Equal(t, "OK", doOK(t, ca, "MULTI"))
			for j := w.n(2, 5); j > 0; j-- {
				doOK(t, ca, w.command(true)...)
			}
			if w.rng.IntN(6) == 0 {
				doOK(t, ca, "DISCARD")
			} else {
				doOK(t, ca, "EXEC")
			}
			continue
		}
		cmd := w.command(false)
		v := doOK(t, ca, cmd...)
		if id, ok := v.(string); ok && cmd[0] == "XADD" {
			w.xids = append(w.xids, id)
		}
		if r, ok := v.([]any); ok && cmd[0] == "RATELIMIT.CHECK" && len(r) == 6 && r[5].(int64) != 0 {
			w.leases = append(w.leases, [2]any{cmd[2], r[5]})
		}
		if cmd[0] == "DEBUG" {
			w.now += int64(cmd[3].(int))
		}
	}
	doOK(t, ca, "SELECT", 0)
	return w
}

func replayWorkload(t *testing.T, seed uint64, ops int) {
	t0 := testutil.T0
	a := testutil.StartServer(t)
	log := &effectLog{}
	a.StoreForTest().Journal = log
	ca := a.Client(t, 2).Conn()
	t.Cleanup(func() { _ = ca.Close() })
	require.NoError(t, ca.Do(ctx, "DEBUG", "CLOCK", "SET", t0).Err())
	w := runWorkload(t, ca, seed, ops)
	// Reclaim everything expired at A's final time, actively and then lazily (the active
	// cycle leaves keys of the current second), so that every expiry has been journaled.
	doOK(t, ca, "DEBUG", "EXPIRE-NOW")
	for db := 0; db < 3; db++ {
		doOK(t, ca, "SELECT", db)
		for _, k := range append(w.keys, "g1", "g2", "h0", "h1") {
			doOK(t, ca, "EXISTS", k)
			doOK(t, ca, "HLEN", k) // hash fields past their TTL go (and are journaled) on access
		}
	}
	doOK(t, ca, "SELECT", 0)

	effects := log.all()
	checkTimeFree(t, effects)
	names := map[string]int{}
	for _, e := range effects {
		names[strings.ToUpper(string(e.Args[0]))]++
		if len(e.Args) > 4 && string(e.Args[3]) == "LEASES" {
			names["(LEASES)"]++
			if string(e.Args[4]) == "0" {
				names["(LEASES 0)"]++ // a release of a key's last lease
			}
		}
	}
	t.Logf("%d effects: %v", len(effects), names)
	for _, n := range []string{"SET", "DEL", "PEXPIREAT", "MULTI", "RATELIMIT.SETSTATE", "COPY", "MOVE", "SWAPDB", "INCR", "BITFIELD", "ZADD", "ZREM",
		"XADD", "XGROUP", "FUNCTION", "HINCRBY", "SREM", "(LEASES)", "(LEASES 0)"} {
		require.Positive(t, names[n], "the workload journaled no %s", n)
	}

	// B's clock is before anything A did: if replay depended on the replaying clock, keys
	// or limiter state would come out different. Being earlier, it also keeps B from expiring
	// on its own any key that A still saw live (see effects.go on replay and expiry).
	b := testutil.StartServer(t)
	cb := b.Client(t, 2).Conn()
	t.Cleanup(func() { _ = cb.Close() })
	require.NoError(t, cb.Do(ctx, "DEBUG", "CLOCK", "SET", t0-5000).Err())
	replay(t, cb, effects)

	total, withTTL := 0, 0
	for db := 0; db < 16; db++ {
		ka, na := dbState(t, ca, db)
		kb, nb := dbState(t, cb, db)
		require.Equal(t, ka, kb, "db %d", db)
		require.Equal(t, na, nb, "db %d: DBSIZE", db)
		total += len(ka)
		for _, k := range ka {
			if !strings.HasSuffix(k, " -1") {
				withTTL++
			}
		}
	}
	t.Logf("final state: %d keys, %d with a TTL, %d limiters", total, withTTL, len(limiterState(t, ca)))
	la, lb := limiterState(t, ca), limiterState(t, cb)
	require.Equal(t, len(la), len(lb), "limiters: %v vs %v", la, lb)
	for name, sa := range la {
		sb := lb[name]
		require.NotNil(t, sb, name)
		for _, f := range []string{"algo", "limit", "window_ms", "total_allowed", "refill_per_sec", "drain_per_sec", "shadow"} {
			require.Equal(t, sa[f], sb[f], "%s %s", name, f)
		}
		// Denials journal nothing: total_denied travels only with the next effect (spec §10).
		require.LessOrEqual(t, sb["total_denied"].(int64), sa["total_denied"].(int64), name)
		require.LessOrEqual(t, sb["total_shadow_denied"].(int64), sa["total_shadow_denied"].(int64), name)
	}
	// At one and the same time, both report the same limiter state.
	require.NoError(t, cb.Do(ctx, "DEBUG", "CLOCK", "SET", w.now).Err())
	for name := range la {
		for _, key := range []string{"u", "v", "w"} {
			require.Equal(t, ca.Do(ctx, "RATELIMIT.PEEK", name, key).Val(), cb.Do(ctx, "RATELIMIT.PEEK", name, key).Val(), "%s %s", name, key)
		}
	}
}

// TestEffectsOfEachWrite pins the effect of each rewritten command, and checks that reads,
// no-op and failed writes, DISCARD and aborted transactions journal nothing.
func TestEffectsOfEachWrite(t *testing.T) {
	t0 := testutil.T0
	s := testutil.StartServer(t)
	log := &effectLog{}
	s.StoreForTest().Journal = log
	c := s.Client(t, 2).Conn()
	t.Cleanup(func() { _ = c.Close() })
	now := t0
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", now).Err())
	ms := func(d int64) string { return strconv.FormatInt(now+d, 10) }

	// expectAll runs commands and checks the effects they journaled, each "DB: args".
	expectAll := func(want []string, cmds ...[]any) {
		t.Helper()
		n := log.len()
		for _, args := range cmds {
			doOK(t, c, args...)
		}
		var got []string
		for _, e := range log.since(n) {
			got = append(got, fmt.Sprintf("%d: %s", e.DB, effectString(e)))
		}
		require.Equal(t, want, got, "%v", cmds)
	}
	expect := func(want []string, args ...any) {
		t.Helper()
		expectAll(want, args)
	}
	none := []string(nil)
	one := func(s string) []string { return []string{s} }

	// Deterministic writes journal their own command line.
	expect(one("0: SET s hello"), "SET", "s", "hello")
	expect(one("0: APPEND s !"), "APPEND", "s", "!")
	expect(one("0: SET n 5"), "SET", "n", "5")
	expect(one("0: INCR n"), "INCR", "n")
	expect(one("0: SETBIT b 3 1"), "SETBIT", "b", 3, 1)
	expect(one("0: MSET m1 a m2 b"), "MSET", "m1", "a", "m2", "b")

	// Reads journal nothing.
	for _, r := range [][]any{
		{"GET", "s"}, {"MGET", "s", "n", "zz"}, {"STRLEN", "s"}, {"GETRANGE", "s", 0, 2}, {"EXISTS", "s"},
		{"TYPE", "s"}, {"TTL", "s"}, {"PTTL", "s"}, {"PEXPIRETIME", "s"}, {"KEYS", "*"}, {"SCAN", 0},
		{"DBSIZE"}, {"GETBIT", "b", 3}, {"BITCOUNT", "b"}, {"BITPOS", "b", 1}, {"LCS", "s", "m1"},
		{"OBJECT", "ENCODING", "s"}, {"TOUCH", "s"}, {"RANDOMKEY"}, {"BITFIELD", "b", "GET", "u4", 0},
		{"BITFIELD_RO", "b", "GET", "u4", 0}, {"GCRA.PEEK", "g", 1000, 3}, {"RATELIMIT.LIST"},
		{"PING"}, {"ECHO", "x"}, {"INFO", "keyspace"}, {"SELECT", 1}, {"SELECT", 0}, {"TIME"},
	} {
		expect(none, r...)
	}

	// No-op and failed writes journal nothing.
	require.NoError(t, c.Do(ctx, "SET", "ttl", "v", "PX", 100000).Err())
	require.NoError(t, c.Do(ctx, "SET", "h", "x").Err())
	for _, w := range [][]any{
		{"DEL", "missing"}, {"UNLINK", "missing", "nothing"}, {"PERSIST", "s"}, {"PERSIST", "missing"},
		{"EXPIRE", "missing", 10}, {"EXPIRE", "ttl", 10, "NX"}, {"EXPIRE", "s", 10, "XX"},
		{"EXPIRE", "ttl", 10, "GT"}, {"PEXPIRE", "ttl", 200000, "LT"}, {"EXPIRE", "s", 10, "GT"},
		{"SET", "s", "v", "NX"}, {"SET", "missing", "v", "XX"}, {"SET", "missing", "v", "XX", "GET"},
		{"SETNX", "s", "v"}, {"MSETNX", "new", "v", "s", "v"}, {"RENAMENX", "s", "n"}, {"RENAME", "s", "s"},
		{"RENAME", "missing", "x"}, {"COPY", "s", "n"}, {"COPY", "missing", "x"}, {"MOVE", "missing", 1},
		{"SETRANGE", "s", 0, ""}, {"SETRANGE", "missing", 3, ""}, {"SETBIT", "b", 3, 1}, {"GETEX", "s"},
		{"GETEX", "s", "PERSIST"}, {"GETEX", "missing", "EX", 5}, {"GETDEL", "missing"},
		{"INCR", "s"}, {"INCRBY", "n", "x"}, {"INCRBYFLOAT", "s", 1},
		{"BITOP", "AND", "dest", "missing", "missing2"}, {"SWAPDB", 0, 0}, {"FLUSHDB", "BOGUS"},
		{"EXPIRE", "s", "soon"}, {"SET", "s", "v", "EX", 0}, {"SETEX", "s", -1, "v"}, {"GETEX", "s", "EX", 0},
		{"GCRA.RESET", "missing"}, {"GCRA.RESET", "s"}, {"GCRA.LIMIT", "s", 1000, 1},
		{"CL.THROTTLE", "g", 3, 1, 1, 0}, {"RATELIMIT.CHECK", "nolimiter", "u"},
		{"RATELIMIT.RESET", "nolimiter", "u"}, {"RATELIMIT.DROP", "nolimiter"},
	} {
		expect(none, w...)
	}
	require.NoError(t, c.Do(ctx, "SELECT", 2).Err())
	expect(none, "FLUSHDB") // empty already
	require.NoError(t, c.Do(ctx, "SELECT", 0).Err())

	// Relative times become absolute; decisions become their outcome.
	expect(one("0: SET e1 v PXAT "+ms(10000)), "SET", "e1", "v", "EX", 10)
	expect(one("0: SET e2 v PXAT "+ms(1500)), "SET", "e2", "v", "NX", "PX", 1500)
	expect(one("0: SET e2 w PXAT "+ms(7000)), "SET", "e2", "w", "XX", "GET", "EXAT", (now+7000)/1000)
	expect(one("0: SET e3 v PXAT "+ms(3)), "SET", "e3", "v", "PXAT", now+3)
	expect(one("0: SET e2 x KEEPTTL"), "SET", "e2", "x", "KEEPTTL")
	expect(one("0: SET fresh x"), "SET", "fresh", "x", "KEEPTTL") // nothing to keep
	// A time already past stores an expired key: the SET journals it as gone, and its
	// reclaiming (lazy here, or by the active cycle first) journals a DEL of its own.
	expectAll([]string{"0: DEL e3", "0: DEL e3"}, []any{"SET", "e3", "v", "PXAT", now - 1}, []any{"EXISTS", "e3"})
	expectAll(one("0: DEL born"), []any{"SET", "born", "v", "PXAT", now - 5}, []any{"EXISTS", "born"})
	expect(one("0: SET sx v PXAT "+ms(5000)), "SETEX", "sx", 5, "v")
	expect(one("0: SET px v PXAT "+ms(250)), "PSETEX", "px", 250, "v")
	expect(one("0: SET nx v"), "SETNX", "nx", "v")
	// GEOADD is the ZADD of the geohash scores; stored searches are their result.
	expect(one("0: ZADD geo CH 3479099956230698 Palermo 3479447370796909 Catania"),
		"GEOADD", "geo", "CH", 13.361389, 38.115556, "Palermo", 15.087269, 37.502669, "Catania")
	expect(none, "GEOADD", "geo", "NX", 13.361389, 38.115556, "Palermo")
	expect(none, "GEORADIUS", "geo", 15, 37, 200, "km", "WITHDIST")
	expect([]string{"0: MULTI", "0: DEL near", "0: ZADD near 190.44242984775784 Palermo 56.4412578701582 Catania", "0: EXEC"},
		"GEORADIUS", "geo", 15, 37, 200, "km", "STOREDIST", "near")
	expect([]string{"0: MULTI", "0: DEL near", "0: ZADD near 3479447370796909 Catania", "0: EXEC"},
		"GEOSEARCHSTORE", "near", "geo", "FROMMEMBER", "Catania", "BYBOX", 10, 10, "km")
	expect(one("0: DEL near"), "GEORADIUS", "geo", 0, 0, 1, "m", "COUNT", 1, "STORE", "near") // nothing there: empty
	expect(none, "GEOSEARCHSTORE", "near", "geo", "FROMLONLAT", 0, 0, "BYRADIUS", 1, "m")     // nothing to delete
	expect(one("0: MSET a1 x a2 y"), "MSETNX", "a1", "x", "a2", "y")
	expect(one("0: PEXPIREAT s "+ms(5000)), "GETEX", "s", "EX", 5)
	expect(one("0: PEXPIREAT s "+ms(800)), "GETEX", "s", "PX", 800)
	expect(one("0: PEXPIREAT s "+ms(9000)), "GETEX", "s", "PXAT", now+9000)
	expect(one("0: PERSIST s"), "GETEX", "s", "PERSIST")
	expect(one("0: DEL a1"), "GETEX", "a1", "EXAT", now/1000-1)
	expect(one("0: DEL a2"), "GETDEL", "a2")
	expect(one("0: PEXPIREAT s "+ms(10000)), "EXPIRE", "s", 10)
	expect(one("0: PEXPIREAT s "+ms(20000)), "PEXPIRE", "s", 20000, "GT")
	expect(one("0: PEXPIREAT s "+ms(30000)), "EXPIREAT", "s", (now+30000)/1000)
	expect(one("0: PEXPIREAT s "+ms(25000)), "PEXPIREAT", "s", now+25000, "LT")
	expect(one("0: PERSIST s"), "PERSIST", "s")
	expect(one("0: DEL s"), "EXPIRE", "s", -1)
	expect(one("0: DEL n"), "PEXPIREAT", "n", now)
	expect(one("0: SET f 1.5 KEEPTTL"), "INCRBYFLOAT", "f", "1.5")
	expect(one("0: SET f 1.6 KEEPTTL"), "INCRBYFLOAT", "f", "0.1")
	expect(one("0: GETSET f 2"), "GETSET", "f", 2)
	// Sorted sets: float increments journal the resulting score, pops the members they took.
	expect(one("0: ZADD zz 1.5 m"), "ZINCRBY", "zz", "1.5", "m")
	expect(one("0: ZADD zz 0.1 n"), "ZADD", "zz", "INCR", "0.1", "n")
	expect(one("0: ZADD zz 0.30000000000000004 n"), "ZINCRBY", "zz", "0.2", "n")
	expect(one("0: ZADD zz inf o"), "ZADD", "zz", "GT", "INCR", "inf", "o")
	expect(none, "ZINCRBY", "zz", "0", "m")
	expect(none, "ZADD", "zz", "NX", "INCR", "1", "m")
	expect(none, "ZADD", "zz", "XX", "5", "nope")
	expect(none, "ZREM", "zz", "nope")
	expect(none, "ZINCRBY", "zz", "-inf", "o")
	expect(one("0: ZADD zz 2 m"), "ZADD", "zz", "2", "m")
	expect(one("0: ZREM zz n m"), "ZPOPMIN", "zz", 2)
	expect(one("0: ZREM zz o"), "ZMPOP", 2, "nokey", "zz", "MAX", "COUNT", 5)
	expect(none, "ZPOPMAX", "zz")

	// Hash field TTLs journal absolute times of the fields they set, HDEL of those a past time
	// deleted; HINCRBYFLOAT's HSET restates the TTL it keeps; expired fields go as HDEL.
	expect(one("0: HSET hf a 1 b 2 c 3"), "HSET", "hf", "a", 1, "b", 2, "c", 3)
	expect(one("0: HPEXPIREAT hf "+ms(10000)+" FIELDS 2 a b"), "HEXPIRE", "hf", 10, "FIELDS", 3, "a", "b", "nope")
	expect(none, "HPEXPIRE", "hf", 5000, "GT", "FIELDS", 2, "a", "b")
	expect(one("0: HPEXPIREAT hf "+ms(20000)+" FIELDS 1 b"), "HPEXPIRE", "hf", 20000, "GT", "FIELDS", 2, "b", "c")
	expect(none, "HEXPIRE", "hf", 5, "NX", "FIELDS", 1, "a")
	expect(one("0: HDEL hf c"), "HEXPIREAT", "hf", now/1000-1, "LT", "FIELDS", 1, "c")
	expect([]string{"0: HSET hf a 2.5", "0: HPEXPIREAT hf " + ms(10000) + " FIELDS 1 a"}, "HINCRBYFLOAT", "hf", "a", "1.5")
	expect(one("0: HPERSIST hf FIELDS 1 b"), "HPERSIST", "hf", "FIELDS", 1, "b")
	expect(none, "HPERSIST", "hf", "FIELDS", 1, "b")
	// The keys with a TTL from above would expire with the clock moved on, and the active
	// expiry cycle would journal their DELs at a moment of its choosing: delete them first.
	expect(one("0: DEL sx e2 px"), "DEL", "sx", "e2", "px")
	expect(none, "DEBUG", "CLOCK", "ADVANCE", 10001)
	now += 10001
	expect(one("0: HDEL hf a"), "HGET", "hf", "a")
	expect(one("0: HDEL hf b"), "HDEL", "hf", "b")

	// Keyspace commands across databases keep their arguments and the selected database.
	require.NoError(t, c.Do(ctx, "SELECT", 1).Err())
	expect(one("1: SET k v"), "SET", "k", "v")
	expect(one("1: COPY k k DB 2"), "COPY", "k", "k", "DB", 2)
	expect(one("1: MOVE k 0"), "MOVE", "k", 0)
	expect(one("1: SWAPDB 1 2"), "SWAPDB", 1, 2)
	expect(one("1: FLUSHDB"), "FLUSHDB")
	require.NoError(t, c.Do(ctx, "SELECT", 0).Err())

	// Rate-limit commands journal their outcome, denials nothing.
	expect(one("0: SET g "+strconv.FormatInt((now+1000)*1_000_000, 10)+" PXAT "+ms(1000)), "GCRA.LIMIT", "g", 1000, 1)
	expect(none, "GCRA.LIMIT", "g", 1000, 1)
	// GCRA.LIMITALL: nothing when any limit denies; one SET per key, as one block when several.
	tat := func(d int64) string { return strconv.FormatInt((now+d)*1_000_000, 10) }
	expect(none, "GCRA.LIMITALL", 2, "ga", 1000, 2, "g", 1000, 1)
	expect([]string{"0: MULTI", "0: SET ga " + tat(500) + " PXAT " + ms(500), "0: SET gb " + tat(250) + " PXAT " + ms(250), "0: EXEC"},
		"GCRA.LIMITALL", 2, "ga", 1000, 2, "gb", 1000, 4)
	expect(one("0: SET gc "+tat(500)+" PXAT "+ms(500)), "GCRA.LIMITALL", 2, "gc", 1000, 4, "gc", 1000, 4)
	expect(one("0: SET ga "+tat(1000)+" PXAT "+ms(1000)), "GCRA.LIMITALL", 1, "ga", 1000, 2)
	// GCRA.REFUND: SET of the earlier TAT, DEL when the key became full, nothing when absent.
	expect(one("0: SET ga "+tat(500)+" PXAT "+ms(500)), "GCRA.REFUND", "ga", 1000, 2)
	expect(one("0: DEL ga"), "GCRA.REFUND", "ga", 1000, 2, 5)
	expect(none, "GCRA.REFUND", "ga", 1000, 2)
	expect(one("0: DEL gb gc"), "DEL", "gb", "gc")
	expect(one("-1: RATELIMIT.CREATE sw 1 1000"), "RATELIMIT.CREATE", "sw", 1, 1000)
	expect(one("-1: RATELIMIT.SETSTATE sw u LOG 1 "+ms(0)+" 1 TOTALS 1 0"), "RATELIMIT.CHECK", "sw", "u")
	expect(none, "RATELIMIT.CHECK", "sw", "u")
	expect(none, "RATELIMIT.PEEK", "sw", "u")
	expect(none, "RATELIMIT.STATS", "sw")
	// RATELIMIT.UPDATE: the whole new definition with the instant of the conversion.
	expect(one("-1: RATELIMIT.CREATE su 1 1000"), "RATELIMIT.CREATE", "su", 1, 1000)
	expect(one("-1: RATELIMIT.SETSTATE su u LOG 1 "+ms(0)+" 1 TOTALS 1 0"), "RATELIMIT.CHECK", "su", "u")
	expect(one("-1: RATELIMIT.UPDATE su LIMIT 2 WINDOW 1000 SHADOW ON AT "+ms(0)), "RATELIMIT.UPDATE", "su", "shadow", "on", "limit", 2)
	expect(one("-1: RATELIMIT.UPDATE su LIMIT 2 WINDOW 1000 SHADOW ON AT 5"), "RATELIMIT.UPDATE", "su", "AT", 5)
	expect(none, "RATELIMIT.UPDATE", "su", "ALGO", "token_bucket")
	expect(one("-1: RATELIMIT.CREATE tu 2 1000 ALGO token_bucket REFILL 4"), "RATELIMIT.CREATE", "tu", 2, 1000, "ALGO", "token_bucket", "REFILL", 4)
	expect(one("-1: RATELIMIT.UPDATE tu LIMIT 3 WINDOW 1000 REFILL 4 SHADOW OFF AT "+ms(0)), "RATELIMIT.UPDATE", "tu", "LIMIT", 3)
	// A shadow denial is a denial: nothing, until the next effect carries the totals, then
	// total_shadow_denied too.
	expect(one("-1: RATELIMIT.SETSTATE su u LOG 1 "+ms(0)+" 2 TOTALS 2 0"), "RATELIMIT.CHECK", "su", "u")
	expect(none, "RATELIMIT.CHECK", "su", "u")
	expect(one("-1: RATELIMIT.SETSTATE su v LOG 1 "+ms(0)+" 1 TOTALS 3 1 1"), "RATELIMIT.CHECK", "su", "v")
	expect(one("-1: RATELIMIT.DROP su"), "RATELIMIT.DROP", "su")
	// Concurrency: an acquired lease journals the key's leases (id, ts, units), a release the
	// leases left (LEASES 0: no state); a denial, a release of nothing and PEEK nothing.
	lease := func(d int64) string { return strconv.FormatInt((now+d)*1_000_000, 10) }
	expect(one("-1: RATELIMIT.CREATE cc 2 1000 ALGO concurrency"), "RATELIMIT.CREATE", "cc", 2, 1000, "ALGO", "concurrency")
	expect(one("-1: RATELIMIT.SETSTATE cc u LEASES 1 "+lease(0)+" "+ms(0)+" 2 TOTALS 2 0"), "RATELIMIT.CHECK", "cc", "u", "COST", 2)
	expect(none, "RATELIMIT.CHECK", "cc", "u")
	expect(none, "RATELIMIT.PEEK", "cc", "u")
	expect(none, "RATELIMIT.RELEASE", "cc", "u", 1)
	expect(none, "RATELIMIT.RELEASE", "cc", "v", lease(0))
	expect(one("-1: RATELIMIT.SETSTATE cc u LEASES 0 TOTALS 2 1"), "RATELIMIT.RELEASE", "cc", "u", lease(0))
	expect(none, "RATELIMIT.RELEASE", "cc", "u", lease(0))

	// Transactions: one block for several effects, none for a discarded or aborted one.
	run := func(cmds ...[]any) {
		t.Helper()
		doOK(t, c, "MULTI")
		for _, cmd := range cmds {
			doOK(t, c, cmd...)
		}
	}
	n := log.len()
	run([]any{"SET", "t", 1}, []any{"INCR", "t"})
	doOK(t, c, "DISCARD")
	run([]any{"SET", "t", 1}, []any{"GET"}) // queue-time error
	doOK(t, c, "EXEC")
	run([]any{"GET", "t"}, []any{"SET", "t", 1, "XX"}, []any{"DEL", "nothing"})
	doOK(t, c, "EXEC")
	var extra []string
	for _, e := range log.since(n) {
		extra = append(extra, fmt.Sprintf("%d: %s", e.DB, effectString(e)))
	}
	require.Empty(t, extra, "DISCARD, an aborted EXEC and one without changes journal nothing")

	run([]any{"SET", "t", 1}, []any{"INCR", "t"}, []any{"GET", "t"}, []any{"SELECT", 1}, []any{"EXPIRE", "t", 10}, []any{"SET", "t", "x", "EX", 5})
	expect([]string{"0: MULTI", "0: SET t 1", "0: INCR t", "1: SET t x PXAT " + ms(5000), "0: EXEC"}, "EXEC")
	require.NoError(t, c.Do(ctx, "SELECT", 0).Err())
	run([]any{"GET", "t"}, []any{"SET", "t", 2, "PX", 100}, []any{"SET", "t", 3, "NX"})
	expect(one("0: SET t 2 PXAT "+ms(100)), "EXEC") // a single effect needs no block
	run([]any{"SET", "u", 1}, []any{"RATELIMIT.CHECK", "sw", "other"}, []any{"SET", "u", 2})
	expect([]string{"0: MULTI", "0: SET u 1", "-1: RATELIMIT.SETSTATE sw other LOG 1 " + ms(0) + " 1 TOTALS 2 1", "0: SET u 2", "0: EXEC"}, "EXEC")
	// A key written already expired and then written again in one transaction: the DEL of its
	// expiry comes first, outside the block, which only holds the effective writes.
	run([]any{"SET", "z", "v", "PXAT", now - 10}, []any{"APPEND", "z", "x"})
	expect([]string{"0: DEL z", "0: APPEND z x"}, "EXEC")

	// Expiry, decided here, journals DEL in the key's database: lazily on access...
	require.NoError(t, c.Do(ctx, "SELECT", 1).Err())
	expect(one("1: SET lazy v PXAT "+ms(100)), "SET", "lazy", "v", "PX", 100)
	expect(none, "DEBUG", "CLOCK", "ADVANCE", 200) // still in the same second: the active cycle waits
	now += 200
	expect(one("1: DEL lazy"), "GET", "lazy")
	expect(none, "GET", "lazy")
	// ... and actively.
	require.NoError(t, c.Do(ctx, "SELECT", 2).Err())
	expect(one("2: SET active v PXAT "+ms(300)), "SET", "active", "v", "PX", 300)
	require.NoError(t, c.Do(ctx, "SELECT", 0).Err())
	n = log.len()
	doOK(t, c, "DEBUG", "CLOCK", "ADVANCE", 5000)
	doOK(t, c, "DEBUG", "EXPIRE-NOW") // the background cycle may have been first
	var dels []string
	for _, e := range log.since(n) {
		dels = append(dels, fmt.Sprintf("%d: %s", e.DB, effectString(e)))
	}
	require.Contains(t, dels, "2: DEL active")
	checkTimeFree(t, log.all())
}

// TestConcurrentEffectsReplay runs transactions and single commands from several clients at
// once on the same keys and limiter keys, and checks that the journal, replayed, still gives
// the same state: a transaction's effects must not be journaled behind a later write of
// another client to the same key or limiter key.
func TestConcurrentEffectsReplay(t *testing.T) {
	t0 := testutil.T0
	a := testutil.StartServer(t)
	log := &effectLog{}
	a.StoreForTest().Journal = log
	admin := a.Client(t, 2).Conn()
	t.Cleanup(func() { _ = admin.Close() })
	require.NoError(t, admin.Do(ctx, "DEBUG", "CLOCK", "SET", t0).Err())
	require.NoError(t, admin.Do(ctx, "RATELIMIT.CREATE", "sw", 1_000_000, 60000).Err())
	require.NoError(t, admin.Do(ctx, "RATELIMIT.CREATE", "tb", 1_000_000, 60000, "ALGO", "token_bucket").Err())

	const clients, rounds = 6, 150
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		go func(i int) {
			c := a.Client(t, 2).Conn()
			defer c.Close()
			do := func(args ...any) error {
				err := c.Do(ctx, args...).Err()
				if errors.Is(err, redis.Nil) {
					return nil
				}
				return err
			}
			for r := 0; r < rounds; r++ {
				var err error
				if (i+r)%2 == 0 {
					for _, cmd := range [][]any{{"MULTI"}, {"APPEND", "log", i}, {"RATELIMIT.CHECK", "sw", "u"},
						{"INCR", "n"}, {"RATELIMIT.CHECK", "tb", "u", "COST", 2}, {"SET", "last", i, "PX", 60000}, {"EXEC"}} {
						if err = do(cmd...); err != nil {
							break
						}
					}
				} else {
					for _, cmd := range [][]any{{"RATELIMIT.CHECK", "sw", "u"}, {"APPEND", "log", i}, {"INCRBY", "n", 2},
						{"MULTI"}, {"INCR", "n"}, {"APPEND", "log", "-"}, {"EXEC"}, {"RATELIMIT.CHECK", "tb", "u"}} {
						if err = do(cmd...); err != nil {
							break
						}
					}
				}
				if err == nil && r%25 == 24 {
					err = do("RATELIMIT.RESET", "sw", "u")
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}(i)
	}
	for i := 0; i < clients; i++ {
		require.NoError(t, <-errs)
	}
	effects := log.all()
	checkTimeFree(t, effects)
	// One limiter key's states are journaled in the order they happened: its totals, taken
	// under the key's lock, never go down (a state held back and journaled late would).
	last := map[string]int64{}
	for _, e := range effects {
		if string(e.Args[0]) == store.SetStateCommand {
			name := string(e.Args[1])
			allowed, err := strconv.ParseInt(string(e.Args[len(e.Args)-2]), 10, 64)
			require.NoError(t, err)
			require.GreaterOrEqual(t, allowed, last[name], "%s journaled out of order", name)
			last[name] = allowed
		}
	}

	b := testutil.StartServer(t)
	cb := b.Client(t, 2).Conn()
	t.Cleanup(func() { _ = cb.Close() })
	require.NoError(t, cb.Do(ctx, "DEBUG", "CLOCK", "SET", t0).Err())
	replay(t, cb, effects)
	ka, _ := dbState(t, admin, 0)
	kb, _ := dbState(t, cb, 0)
	require.Equal(t, ka, kb)
	for _, name := range []string{"sw", "tb"} {
		pa := admin.Do(ctx, "RATELIMIT.PEEK", name, "u").Val()
		require.Equal(t, pa, cb.Do(ctx, "RATELIMIT.PEEK", name, "u").Val(), name)
		require.Equal(t, limiterState(t, admin)[name]["total_allowed"], limiterState(t, cb)[name]["total_allowed"], name)
	}
}

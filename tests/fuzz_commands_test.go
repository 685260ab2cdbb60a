package tests

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/testutil"
)

// The command-surface fuzzer of the security issue: every command of the table, with random
// and hostile arguments (huge and negative counts, NaN, empty strings, options in odd places),
// against one server. The server must answer every command (an error reply is an answer),
// stay responsive, hold no goroutines for closed connections, and leave a dataset that reads,
// dumps and restores cleanly. HOTKV_FUZZ_OPS and HOTKV_FUZZ_SEED set the budget and the seed.

// fuzzSkip lists commands the fuzzer does not send, and why: they end the server, change what
// the connection speaks (the replies would no longer parse as plain replies), write outside
// the test's files, or stop replies on purpose.
var fuzzSkip = map[string]string{
	"shutdown":       "ends the server",
	"debug":          "DEBUG SLEEP and friends stall on purpose",
	"pfselftest":     "runs for seconds by design",
	"config|set":     "could point dir or the log elsewhere, or set maxmemory to 1",
	"config|rewrite": "writes the config file",
	"acl|save":       "writes files",
	"hello":          "switches the protocol under the client",
	"subscribe":      "subscribed mode changes what replies look like",
	"psubscribe":     "subscribed mode",
	"ssubscribe":     "subscribed mode",
	"unsubscribe":    "one reply per channel, which a client library takes for stray data",
	"punsubscribe":   "one reply per pattern",
	"sunsubscribe":   "one reply per shard channel",
	"client|reply":   "OFF stops replies on purpose",
	"client|kill":    "may kill the fuzzer's own connection",
	"quit":           "closes the connection",
	"reset":          "resets the connection state the fuzzer relies on",
	"monitor":        "turns the connection into a feed",
	"sync":           "replication stream",
	"psync":          "replication stream",
}

// fuzzWords are the hostile and ordinary values arguments are drawn from.
var fuzzWords = []string{
	"", "0", "1", "-1", "2", "10", "-10", "100", "1000000",
	"9223372036854775807", "-9223372036854775808", "9223372036854775808", "18446744073709551615",
	"4294967296", "2147483648", "-2147483649", "536870912",
	"NaN", "nan", "inf", "-inf", "+inf", "1e308", "-1e308", "1e-320", "0.5", "-0.0", "0x10", " 1", "1 ",
	"k0", "k1", "k2", "k3", "{t}k4", "{t}k5", "*", "k*", "?", "[a-z]", "\\", "#", "->f",
	"COUNT", "LIMIT", "BY", "GET", "STORE", "WITHSCORES", "REV", "BYSCORE", "BYLEX", "MATCH", "TYPE",
	"NX", "XX", "GT", "LT", "CH", "INCR", "EX", "PX", "EXAT", "PXAT", "KEEPTTL", "PERSIST",
	"LEFT", "RIGHT", "BEFORE", "AFTER", "MAXLEN", "MINID", "~", "=", "$", ">", "+", "-", "(1", "[a",
	"STREAMS", "GROUP", "BLOCK", "NOACK", "MKSTREAM", "FIELDS", "ALPHA", "ASC", "DESC", "WEIGHTS",
	"AGGREGATE", "SUM", "MIN", "MAX", "WITHVALUES", "RANK", "MAXLEN", "IDLE", "TIME", "FORCE", "JUSTID",
	"REPLACE", "ABSTTL", "DB", "ASYNC", "SYNC", "u8", "i64", "#1", "OVERFLOW", "SAT", "FAIL", "WRAP",
	"gcra", "sliding_window", "token_bucket", "LIMIT", "WINDOW", "RATE", "COST",
	"a\x00b", "\xff\xfe", "0-0", "1-1", "18446744073709551615-18446744073709551615", "*-*",
	"m", "km", "ft", "mi", "FROMMEMBER", "FROMLONLAT", "BYRADIUS", "BYBOX", "WITHCOORD", "WITHDIST",
	"WITHHASH", "ANY", "STOREDIST", "180", "-180", "85.05112878", "-85.05112879", "13.361389", "1e-300",
}

func TestCommandSurfaceFuzz(t *testing.T) {
	ops := 6000
	if v, err := strconv.Atoi(os.Getenv("HOTKV_FUZZ_OPS")); err == nil {
		ops = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("HOTKV_FUZZ_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (HOTKV_FUZZ_SEED=%d reruns it), %d commands", seed, seed, ops)
	// Also straight to stderr: a run the kernel kills (out of memory) never prints t.Logf's
	// buffered lines, and the seed is what reproduces it.
	fmt.Fprintf(os.Stderr, "TestCommandSurfaceFuzz: HOTKV_FUZZ_SEED=%d\n", seed)
	rng := rand.New(rand.NewPCG(seed, 7))

	s := testutil.StartServer(t)
	control := s.Client(t, 2)
	before := runtime.NumGoroutine()

	var names []string
	blocking := map[string]bool{}
	for _, cmd := range command.Default().All() {
		for _, x := range append([]*command.Command{cmd}, cmd.Subcommands...) {
			if _, skip := fuzzSkip[x.FullName()]; skip || (len(x.Subcommands) > 0 && x.Handler == nil) {
				continue
			}
			names = append(names, x.FullName())
			if x.Flags&command.FlagBlocking != 0 {
				blocking[x.FullName()] = true
			}
		}
	}
	require.Greater(t, len(names), 200, "the fuzzer must see the whole command table")

	newConn := func() *redis.Client {
		return redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, PoolSize: 1, MaxRetries: -1,
			ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second, DisableIdentity: true})
	}
	c := newConn()
	defer func() { _ = c.Close() }()
	word := func() string {
		switch rng.IntN(20) {
		case 0:
			return strings.Repeat("x", rng.IntN(100000))
		case 1:
			return strconv.FormatInt(rng.Int64()-rng.Int64(), 10)
		case 2:
			return strconv.FormatFloat(rng.NormFloat64()*1e6, 'g', -1, 64)
		}
		return fuzzWords[rng.IntN(len(fuzzWords))]
	}
	for i := range ops {
		name := names[rng.IntN(len(names))]
		args := []any{}
		for _, part := range strings.Split(name, "|") {
			args = append(args, part)
		}
		for range rng.IntN(7) {
			args = append(args, word())
		}
		err := c.Do(ctx, args...).Err()
		var rerr redis.Error
		var nerr net.Error
		switch {
		case err == nil, errors.Is(err, redis.Nil), errors.As(err, &rerr):
		case errors.As(err, &nerr) && nerr.Timeout():
			// A blocking command that found nothing (its timeout is whatever the words said):
			// the client gives up and closes; the server must dequeue it and go on.
			require.True(t, blocking[name] || name == "exec" || name == "xread" || name == "xreadgroup",
				"op %d: %v got no reply in 3 s (seed %d)", i, args, seed)
			_ = c.Close()
			c = newConn()
		default:
			t.Fatalf("op %d: %v: %v (seed %d)", i, args, err, seed)
		}
		if i%500 == 0 {
			require.Equal(t, "PONG", control.Ping(ctx).Val(), "op %d: server unresponsive", i)
			// A transaction left open would queue everything after it: end it now and then.
			c.Do(ctx, "DISCARD")
			c.Do(ctx, "UNWATCH")
		}
	}
	c.Do(ctx, "DISCARD")
	require.Equal(t, "PONG", control.Ping(ctx).Val())

	// The dataset reads, dumps and restores cleanly: every key of every database has a type,
	// its size reads, and its DUMP restores into an identical value.
	for db := 0; db < 16; db++ {
		require.NoError(t, control.Do(ctx, "SELECT", db).Err())
		keys, err := control.Keys(ctx, "*").Result()
		require.NoError(t, err)
		for _, k := range keys {
			typ, err := control.Type(ctx, k).Result()
			require.NoError(t, err)
			size := map[string]string{"string": "STRLEN", "list": "LLEN", "set": "SCARD", "zset": "ZCARD",
				"hash": "HLEN", "stream": "XLEN"}[typ]
			if size == "" {
				continue // expired between KEYS and TYPE
			}
			require.NoError(t, control.Do(ctx, size, k).Err(), "db %d key %q (%s)", db, k, typ)
			p, err := control.Dump(ctx, k).Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			require.NoError(t, err, "DUMP %q", k)
			require.NoError(t, control.RestoreReplace(ctx, "__fuzz_copy__", 0, p).Err(), "RESTORE of %q (%s)", k, typ)
			require.Equal(t, typ, control.Type(ctx, "__fuzz_copy__").Val())
			control.Del(ctx, "__fuzz_copy__")
		}
		// A BGSAVE or BGREWRITEAOF the fuzzer started may still run; SAVE then refuses with
		// "Background save already in progress" until it ends (as Redis does).
		require.Eventually(t, func() bool {
			err := control.Save(ctx).Err()
			if err != nil && !strings.Contains(err.Error(), "already in progress") {
				t.Fatalf("the dataset must snapshot (db %d): %v", db, err)
			}
			return err == nil
		}, 30*time.Second, 20*time.Millisecond, "SAVE kept finding a background save (db %d)", db)
	}
	require.NoError(t, control.Do(ctx, "SELECT", 0).Err())

	// Closed connections leave nothing behind.
	_ = c.Close()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+5 },
		10*time.Second, 50*time.Millisecond, "goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

// TestHostileProtocol sends what no client library would: bulk lengths up to 512 MB with the
// data never coming, multibulk counts in the millions, and a connection cut mid-argument. The
// server must not allocate what the headers announce before the bytes arrive.
func TestHostileProtocol(t *testing.T) {
	s := testutil.StartServer(t)
	control := s.Client(t, 2)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var conns []net.Conn
	for _, head := range []string{
		"*1\r\n$536870912\r\n",
		"*2\r\n$3\r\nSET\r\n$536870911\r\nabc",
		"*1048576\r\n$4\r\nPING\r\n",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100000000\r\n" + strings.Repeat("x", 1000),
	} {
		for range 20 {
			nc, err := net.Dial("tcp", s.Addr)
			require.NoError(t, err)
			_, err = nc.Write([]byte(head))
			require.NoError(t, err)
			conns = append(conns, nc)
		}
	}
	require.Equal(t, "PONG", control.Ping(ctx).Val())
	runtime.GC()
	runtime.ReadMemStats(&ms)
	grown := int64(ms.HeapAlloc) - int64(base)
	require.Less(t, grown, int64(256<<20), "80 connections announcing up to 512 MB each grew the heap by %d MB", grown>>20)
	for _, nc := range conns {
		_ = nc.Close()
	}
	require.Equal(t, "PONG", control.Ping(ctx).Val())
	require.Equal(t, int64(0), control.Exists(ctx, "k").Val(), "a cut argument stores nothing")
}

// FuzzCommands is the command fuzzer for `go test -fuzz`: the input is one command line, its
// arguments separated by NUL bytes (the first names the command). The server must answer it
// and then answer PING on the same connection; commands in fuzzSkip and blocking commands are
// not sent.
func FuzzCommands(f *testing.F) {
	for _, seed := range []string{"SET\x00k\x00v", "ZADD\x00z\x00nan\x00m", "LRANGE\x00l\x00-9223372036854775808\x00-1",
		"XADD\x00x\x00*\x00f\x00v", "SORT\x00l\x00BY\x00k*\x00GET\x00#", "GCRA.LIMIT\x00g\x001000\x0010", "SETRANGE\x00s\x00536870911\x00x",
		"HEXPIRE\x00h\x001\x00FIELDS\x002\x00a", "PFADD\x00p\x00a", "BITFIELD\x00b\x00SET\x00i64\x00#4294967295\x001"} {
		f.Add([]byte(seed))
	}
	s := testutil.StartServer(f)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, PoolSize: 1, MaxRetries: -1,
		ReadTimeout: 5 * time.Second, DisableIdentity: true})
	f.Cleanup(func() { _ = c.Close() })
	f.Fuzz(func(t *testing.T, line []byte) {
		parts := strings.Split(string(line), "\x00")
		cmd := command.Default().Lookup([]byte(parts[0]))
		if cmd == nil || cmd.Flags&command.FlagBlocking != 0 {
			return
		}
		name := cmd.FullName()
		if len(cmd.Subcommands) > 0 && len(parts) > 1 {
			name += "|" + strings.ToLower(parts[1])
		}
		if _, skip := fuzzSkip[name]; skip {
			return
		}
		if _, skip := fuzzSkip[cmd.FullName()]; skip || name == "xread" || name == "xreadgroup" || len(line) > 1<<20 {
			return
		}
		args := make([]any, len(parts))
		for i, p := range parts {
			args[i] = p
		}
		err := c.Do(ctx, args...).Err()
		var rerr redis.Error
		if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &rerr) {
			t.Fatalf("%q: %v", parts, err)
		}
		c.Do(ctx, "DISCARD")
		if pong := c.Ping(ctx); pong.Err() != nil {
			t.Fatalf("after %q: PING: %v", parts, pong.Err())
		}
	})
}

package tests

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// slowlogArgs returns the argument lists of SLOWLOG GET's entries, newest first.
func slowlogArgs(t *testing.T, c *redis.Client) [][]string {
	t.Helper()
	v, err := c.Do(ctx, "SLOWLOG", "GET", "-1").Slice()
	require.NoError(t, err)
	var out [][]string
	for _, e := range v {
		entry := e.([]any)
		require.Len(t, entry, 6)
		var args []string
		for _, a := range entry[3].([]any) {
			args = append(args, a.(string))
		}
		out = append(out, args)
	}
	return out
}

func TestSlowlogRecordsWhatWasSent(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, "10000", c.ConfigGet(ctx, "slowlog-log-slower-than").Val()["slowlog-log-slower-than"])
		require.Equal(t, "128", c.ConfigGet(ctx, "slowlog-max-len").Val()["slowlog-max-len"])
		require.NoError(t, c.Do(ctx, "CLIENT", "SETNAME", "logger").Err())
		require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
		require.NoError(t, c.Do(ctx, "SLOWLOG", "RESET").Err())

		// More than 32 arguments: the 32nd says how many more there were.
		args := []any{"SADD", "set"}
		for i := 3; i <= 33; i++ {
			args = append(args, strconv.Itoa(i))
		}
		require.NoError(t, c.Do(ctx, args...).Err())
		// An argument over 128 bytes is cut, saying by how much.
		require.NoError(t, c.Do(ctx, "SADD", "set", "foo", strings.Repeat("A", 129)).Err())
		require.Error(t, c.Do(ctx, "AUTH", "user", "secret").Err())

		got := slowlogArgs(t, c)
		require.Equal(t, []string{"AUTH", "(redacted)", "(redacted)"}, got[0])
		require.Equal(t, []string{"SADD", "set", "foo", strings.Repeat("A", 128) + "... (1 more bytes)"}, got[1])
		want := []string{"SADD", "set"}
		for i := 3; i <= 31; i++ {
			want = append(want, strconv.Itoa(i))
		}
		require.Equal(t, append(want, "... (2 more arguments)"), got[2])
		require.Equal(t, []string{"SLOWLOG", "RESET"}, got[3])

		entry := c.Do(ctx, "SLOWLOG", "GET", "1").Val().([]any)[0].([]any)
		require.Equal(t, "logger", entry[5])
		require.Regexp(t, `^127\.0\.0\.1:\d+$`, entry[4])
		require.InDelta(t, time.Now().Unix(), entry[1].(int64), 5)

		// EXEC is not logged, the commands it ran are.
		require.NoError(t, c.Do(ctx, "SLOWLOG", "RESET").Err())
		pipe := c.TxPipeline()
		pipe.Set(ctx, "k", "v", 0)
		_, err := pipe.Exec(ctx)
		require.NoError(t, err)
		got = slowlogArgs(t, c)
		require.Equal(t, []string{"set", "k", "v"}, got[0])
		require.Equal(t, []string{"multi"}, got[1])

		// max-len trims at once; -1 disables; count rules.
		require.NoError(t, c.ConfigSet(ctx, "slowlog-max-len", "2").Err())
		require.Equal(t, int64(2), c.Do(ctx, "SLOWLOG", "LEN").Val())
		require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "-1").Err())
		require.NoError(t, c.Do(ctx, "SLOWLOG", "RESET").Err())
		c.Ping(ctx)
		require.Equal(t, int64(0), c.Do(ctx, "SLOWLOG", "LEN").Val())
		require.EqualError(t, c.Do(ctx, "SLOWLOG", "GET", "-2").Err(), "ERR count should be greater than or equal to -1")
		require.EqualError(t, c.Do(ctx, "CONFIG", "SET", "slowlog-log-slower-than", "-2").Err(),
			"ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument must be between -1 and 9223372036854775807 inclusive")
	})
}

func TestSlowlogBlockedCommandLoggedWhenServed(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	blocked := s.Dial(t)
	blocked.SendCmd("BLPOP", "l", "0")
	waitFor(t, func() bool { return strings.Contains(c.ClientList(ctx).Val(), "flags=b") })
	require.NoError(t, c.Do(ctx, "SLOWLOG", "RESET").Err())
	require.NoError(t, c.LPush(ctx, "l", "x").Err())
	require.Equal(t, "*2\r\n$1\r\nl\r\n$1\r\nx\r\n", blocked.ReadReply())
	// Logged by the served client's goroutine, as LPUSH is by its own: in either order.
	require.Contains(t, slowlogArgs(t, c), []string{"BLPOP", "l", "0"})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 2 s")
}

// monitorLine is Redis's MONITOR format.
var monitorLine = regexp.MustCompile(`^\+\d+\.\d{6} \[(\d+) ([^\]]+)\] (.*)\r\n$`)

func readMonitor(t *testing.T, m *testutil.Raw) (db, who, args string) {
	t.Helper()
	l := m.ReadReply()
	sm := monitorLine.FindStringSubmatch(l)
	require.NotNil(t, sm, "not a monitor line: %q", l)
	return sm[1], sm[2], sm[3]
}

func TestMonitorShowsOtherClients(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		m := s.Dial(t)
		require.Equal(t, "+OK\r\n", m.Do("MONITOR"))
		other := s.Dial(t)
		require.Equal(t, "+OK\r\n", other.Do("SET", "foo", "a\"b\\\n\x01"))
		_, who, args := readMonitor(t, m)
		require.Regexp(t, `^127\.0\.0\.1:\d+$`, who)
		require.Equal(t, `"SET" "foo" "a\"b\\\n\x01"`, args)

		// A transaction: MULTI, the queued commands when EXEC runs them, then EXEC.
		other.Do("MULTI")
		other.Do("INCR", "n")
		other.Do("SELECT", "2")
		other.Do("EXEC")
		_, _, args = readMonitor(t, m)
		require.Equal(t, `"MULTI"`, args)
		_, _, args = readMonitor(t, m)
		require.Equal(t, `"INCR" "n"`, args)
		db, _, args := readMonitor(t, m)
		require.Equal(t, `"SELECT" "2"`, args)
		require.Equal(t, "2", db)
		_, _, args = readMonitor(t, m)
		require.Equal(t, `"EXEC"`, args)
		other.Do("SELECT", "0")
		readMonitor(t, m)

		// A script: EVAL first, then its commands as [db lua].
		require.Equal(t, "+OK\r\n", other.Do("EVAL", "return redis.call('set', KEYS[1], ARGV[1])", "1", "k", "v"))
		_, _, args = readMonitor(t, m)
		require.True(t, strings.HasPrefix(args, `"EVAL" `), args)
		_, who, args = readMonitor(t, m)
		require.Equal(t, "lua", who)
		require.Equal(t, `"set" "k" "v"`, args)

		// Secrets are redacted; administrative commands are not shown.
		other.Do("AUTH", "nosuchuser", "pw")
		other.Do("CONFIG", "GET", "maxmemory")
		other.Do("PING")
		_, _, args = readMonitor(t, m)
		require.Equal(t, `"AUTH" "(redacted)" "(redacted)"`, args)
		_, _, args = readMonitor(t, m)
		require.Equal(t, `"PING"`, args)

		// CLIENT LIST flags the monitor O; a monitor cannot touch keys.
		require.Contains(t, other.Do("CLIENT", "LIST"), "flags=O ")
		require.Equal(t, "-ERR Replica can't interact with the keyspace\r\n", m.Do("GET", "foo"))

		// RESET leaves monitor mode.
		require.Equal(t, "+RESET\r\n", m.Do("RESET"))
		require.NotContains(t, other.Do("CLIENT", "LIST"), "flags=O ")
		require.Equal(t, "$-1\r\n", m.Do("GET", "nosuchkey"))
	})
}

func TestMonitorRESP3(t *testing.T) {
	s := testutil.StartServer(t)
	m := s.Dial(t)
	require.Contains(t, m.Do("HELLO", "3"), "proto")
	require.Equal(t, "+OK\r\n", m.Do("MONITOR"))
	other := s.Dial(t)
	other.Do("HELLO", "3")
	_, _, args := readMonitor(t, m)
	require.Equal(t, `"HELLO" "3"`, args)
	require.Equal(t, "+OK\r\n", other.Do("SET", "k", "v"))
	// The lines stay simple strings in RESP3, as Redis sends them.
	_, _, args = readMonitor(t, m)
	require.Equal(t, `"SET" "k" "v"`, args)
}

func TestMonitorInsideMultiIsRefused(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	r.Do("MULTI")
	require.Equal(t, "+QUEUED\r\n", r.Do("MONITOR"))
	require.Equal(t, "*1\r\n-ERR MONITOR isn't allowed for DENY BLOCKING client\r\n", r.Do("EXEC"))
}

func TestLatencyHistogramCountsCalls(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.ConfigResetStat(ctx).Err())
		for i := 0; i < 5; i++ {
			require.NoError(t, c.Set(ctx, "a", "b", 0).Err())
		}
		c.Get(ctx, "a")
		c.Do(ctx, "CLIENT", "ID")
		h, err := c.Do(ctx, "LATENCY", "HISTOGRAM", "set", "client", "nosuch").Result()
		require.NoError(t, err)
		m := toMap(t, h)
		require.Len(t, m, 2)
		set := toMap(t, m["set"])
		require.Equal(t, int64(5), set["calls"])
		buckets := toMap(t, set["histogram_usec"])
		// Cumulative power-of-two buckets: the last holds every call. Labels are hdr_histogram's
		// highest equivalent value of 2^(k+10) ns in µs (Redis 7.0.15 answers 528 for a 300 µs
		// DEBUG SLEEP and 2113 for a 2 ms one); a slow SET (the race detector) lands past 132.
		var last int64
		for k, v := range buckets {
			us, _ := strconv.ParseInt(k, 10, 64)
			require.Contains(t, []int64{1, 2, 4, 8, 16, 33, 66, 132, 264, 528, 1056, 2113, 4227, 8454, 16908, 33816, 67633, 135266, 270532, 541065, 1082130}, us)
			last = max(last, v.(int64))
		}
		require.Equal(t, int64(5), last)
		require.Contains(t, m, "client|id")

		info := c.Info(ctx, "latencystats").Val()
		require.Regexp(t, `latency_percentiles_usec_set:p50=\d+\.\d{3},p99=\d+\.\d{3},p99\.9=\d+\.\d{3}\r\n`, info)
		require.NoError(t, c.ConfigSet(ctx, "latency-tracking-info-percentiles", "0.0 50.0 100.0").Err())
		require.Equal(t, "0 50 100", c.ConfigGet(ctx, "latency-tracking-info-percentiles").Val()["latency-tracking-info-percentiles"])
		require.Regexp(t, `latency_percentiles_usec_set:p0=[\d.]+,p50=[\d.]+,p100=[\d.]+\r\n`, c.Info(ctx, "latencystats").Val())
		require.NoError(t, c.ConfigSet(ctx, "latency-tracking", "no").Err())
		require.NotContains(t, c.Info(ctx, "latencystats").Val(), "latency_percentiles_usec_set")

		require.NoError(t, c.ConfigResetStat(ctx).Err())
		m = toMap(t, c.Do(ctx, "LATENCY", "HISTOGRAM").Val())
		require.Empty(t, m)
	})
}

// toMap reads a RESP2 flat array or a RESP3 map as a map with string keys.
func toMap(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	switch x := v.(type) {
	case map[any]any:
		for k, val := range x {
			out[fmt.Sprint(k)] = val
		}
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			out[fmt.Sprint(x[i])] = x[i+1]
		}
	default:
		t.Fatalf("not a map: %T %v", v, v)
	}
	return out
}

func TestLatencyMonitorEvents(t *testing.T) {
	s := testutil.StartServer(t, "--enable-debug-command", "yes")
	c := s.Client(t, 2)
	require.Empty(t, c.Do(ctx, "LATENCY", "LATEST").Val())
	require.NoError(t, c.ConfigSet(ctx, "latency-monitor-threshold", "50").Err())
	require.NoError(t, c.Do(ctx, "DEBUG", "SLEEP", "0.1").Err())
	latest := c.Do(ctx, "LATENCY", "LATEST").Val().([]any)
	require.Len(t, latest, 1)
	ev := latest[0].([]any)
	require.Equal(t, "command", ev[0])
	require.GreaterOrEqual(t, ev[2].(int64), int64(100))
	hist := c.Do(ctx, "LATENCY", "HISTORY", "command").Val().([]any)
	require.Len(t, hist, 1)
	require.Contains(t, c.Do(ctx, "LATENCY", "GRAPH", "command").Val(), "command - high")
	require.EqualError(t, c.Do(ctx, "LATENCY", "GRAPH", "nosuch").Err(), "ERR No samples available for event 'nosuch'")
	require.NotEmpty(t, c.Do(ctx, "LATENCY", "DOCTOR").Val())
	require.Equal(t, int64(0), c.Do(ctx, "LATENCY", "RESET", "nosuch").Val())
	require.Equal(t, int64(1), c.Do(ctx, "LATENCY", "RESET").Val())
	require.Empty(t, c.Do(ctx, "LATENCY", "LATEST").Val())
}

// clientField returns one field of a CLIENT LIST line.
func clientField(t *testing.T, line, field string) string {
	t.Helper()
	m := regexp.MustCompile(`(?:^| )` + regexp.QuoteMeta(field) + `=(\S*)`).FindStringSubmatch(line)
	require.NotNil(t, m, "no %s in %q", field, line)
	return m[1]
}

func clientLine(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	for _, l := range strings.Split(c.ClientList(ctx).Val(), "\n") {
		if strings.Contains(l, " name="+name+" ") {
			return l
		}
	}
	t.Fatalf("no client named %s", name)
	return ""
}

func TestClientListFields(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		own := c.Do(ctx, "CLIENT", "INFO").Val().(string)
		for _, f := range []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db", "sub", "psub", "ssub",
			"multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp", "obl", "oll", "omem", "tot-mem",
			"events", "cmd", "user", "redir", "resp"} {
			clientField(t, own, f)
		}
		require.Equal(t, "client|info", clientField(t, own, "cmd"))
		require.Equal(t, "10", clientField(t, own, "argv-mem")) // "client" + "info"
		require.Equal(t, "26", clientField(t, own, "qbuf"))     // *2 $6 client $4 info
		require.Equal(t, "-1", clientField(t, own, "multi"))

		// A partly sent command is held in the query buffer.
		r := s.Dial(t)
		r.Do("CLIENT", "SETNAME", "partial")
		r.Send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc")
		waitFor(t, func() bool { return clientField(t, clientLine(t, c, "partial"), "qbuf") != "0" })
		line := clientLine(t, c, "partial")
		// What is held of the command; its parsed header is not (Redis trims parsed parts too).
		qbuf, _ := strconv.Atoi(clientField(t, line, "qbuf"))
		require.Greater(t, qbuf, 3)
		require.Equal(t, "client|setname", clientField(t, line, "cmd"))
		r.Send("defghij\r\n")
		require.Equal(t, "+OK\r\n", r.ReadReply())
		waitFor(t, func() bool { return clientField(t, clientLine(t, c, "partial"), "qbuf") == "0" })

		// MULTI shows the queued count and flag x.
		r.Do("MULTI")
		r.Do("SET", "a", "b")
		r.Do("SET", "c", "d")
		line = clientLine(t, c, "partial")
		require.Equal(t, "2", clientField(t, line, "multi"))
		require.Equal(t, "x", clientField(t, line, "flags"))
		require.NotEqual(t, "0", clientField(t, line, "multi-mem"))
		r.Do("EXEC")
		require.Equal(t, "-1", clientField(t, clientLine(t, c, "partial"), "multi"))

		// An idle client's query buffer is released after two seconds.
		deadline := time.Now().Add(5 * time.Second)
		for {
			line = clientLine(t, c, "partial")
			if clientField(t, line, "qbuf-free") == "0" && clientField(t, line, "qbuf") == "0" {
				break
			}
			require.True(t, time.Now().Before(deadline), "idle query buffer not released: %s", line)
			time.Sleep(100 * time.Millisecond)
		}
		// And the client still works.
		require.Equal(t, "+PONG\r\n", r.Do("PING"))
	})
}

func TestClientKillSkipMeNo(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	other := s.Dial(t)
	other.Do("PING")
	// The caller is killed too, but after it got the count.
	require.Equal(t, ":2\r\n", r.Do("CLIENT", "KILL", "SKIPME", "no"))
	require.True(t, r.ReadEOF())
}

func TestMonitorOutputBufferLimit(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	// Monitors are of class normal, as in Redis: a limit there drops one that does not read.
	require.NoError(t, c.ConfigSet(ctx, "client-output-buffer-limit", "normal 1mb 0 0").Err())
	m := s.Dial(t)
	require.Equal(t, "+OK\r\n", m.Do("MONITOR"))
	big := strings.Repeat("x", 100<<10)
	for i := 0; i < 300 && strings.Contains(c.ClientList(ctx).Val(), "flags=O"); i++ {
		require.NoError(t, c.Set(ctx, "k", big, 0).Err())
	}
	waitFor(t, func() bool { return !strings.Contains(c.ClientList(ctx).Val(), "flags=O") })
}

// The idle buffer release moves the read deadline; the timeout directive must still close an
// idle client on time, and not before.
func TestIdleBufferReleaseKeepsTimeout(t *testing.T) {
	s := testutil.StartServer(t, "--timeout", "5")
	c := s.Client(t, 2)
	r := s.Dial(t)
	r.Do("CLIENT", "SETNAME", "idle")
	start := time.Now()
	for {
		if clientField(t, clientLine(t, c, "idle"), "qbuf-free") == "0" {
			break
		}
		require.Less(t, time.Since(start), 4500*time.Millisecond, "buffer not released before the timeout")
		time.Sleep(100 * time.Millisecond)
	}
	require.True(t, r.ReadEOF(), "the idle client was not closed")
	require.GreaterOrEqual(t, time.Since(start), 4*time.Second, "closed before its timeout")
}

// cmdstat returns a command's INFO commandstats line.
func cmdstat(t *testing.T, c *redis.Client, name string) string {
	t.Helper()
	for _, l := range strings.Split(c.Info(ctx, "commandstats").Val(), "\r\n") {
		if strings.HasPrefix(l, "cmdstat_"+name+":") {
			return strings.TrimPrefix(l, "cmdstat_"+name+":")
		}
	}
	return ""
}

func TestCommandStatsFailures(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigResetStat(ctx).Err())
	// An error inside EXEC is the queued command's failure, not EXEC's.
	r := s.Dial(t)
	r.Do("SET", "str", "x")
	r.Do("MULTI")
	r.Do("LPUSH", "str", "a")
	require.Contains(t, r.Do("EXEC"), "WRONGTYPE")
	require.Regexp(t, `^calls=1,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=0$`, cmdstat(t, c, "exec"))
	require.Regexp(t, `^calls=1,.*,rejected_calls=0,failed_calls=1$`, cmdstat(t, c, "lpush"))

	// CLIENT UNBLOCK ... ERROR: an UNBLOCKED error reply and a failed BLPOP.
	b := s.Dial(t)
	id := strings.TrimSpace(strings.TrimPrefix(b.Do("CLIENT", "ID"), ":"))
	b.SendCmd("BLPOP", "nolist", "0")
	waitFor(t, func() bool { return strings.Contains(c.ClientList(ctx).Val(), "flags=b") })
	require.Equal(t, int64(1), c.Do(ctx, "CLIENT", "UNBLOCK", id, "ERROR").Val())
	require.Equal(t, "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n", b.ReadReply())
	require.Contains(t, c.Info(ctx, "errorstats").Val(), "errorstat_UNBLOCKED:count=1")
	require.Regexp(t, `,failed_calls=1$`, cmdstat(t, c, "blpop"))
}

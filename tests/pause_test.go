package tests

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// held starts cmd on a connection of its own and returns a channel that gets its result.
func held(t *testing.T, s *testutil.Server, args ...any) <-chan *redis.Cmd {
	out := make(chan *redis.Cmd, 1)
	c := s.Client(t, 2)
	go func() { out <- c.Do(ctx, args...) }()
	return out
}

// notYet asserts that no result came within a moment.
func notYet(t *testing.T, ch <-chan *redis.Cmd, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s ran during the pause: %v", what, r)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestClientPauseWrite: CLIENT PAUSE WRITE holds what may write or replicate (writes, PUBLISH,
// PFCOUNT, EXEC of a transaction that writes, EVAL without no-writes) and lets reads through;
// held clients count in blocked_clients with the b flag, and run when CLIENT UNPAUSE lifts it.
func TestClientPauseWrite(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.Set(ctx, "foo", "bar", 0).Err())
	require.NoError(t, c.PFAdd(ctx, "hll", "a").Err())
	require.NoError(t, c.FunctionLoad(ctx, "#!lua name=lib\nredis.register_function{function_name='ro', callback=function() return 'hello' end, flags={'no-writes'}}").Err())

	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "PAUSE", "100000", "WRITE").Val())
	// Reads, read-only transactions and read-only scripts run.
	require.Equal(t, "bar", c.Get(ctx, "foo").Val())
	require.Equal(t, "PONG", c.Ping(ctx).Val())
	tx := s.Client(t, 2)
	cmds, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Ping(ctx)
		p.Get(ctx, "foo")
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, "bar", cmds[1].(*redis.StringCmd).Val())
	require.Equal(t, "unique", c.Eval(ctx, "#!lua flags=no-writes\nreturn 'unique'", nil).Val())
	require.Equal(t, "bar", c.EvalRO(ctx, "return redis.call('GET', KEYS[1])", []string{"foo"}).Val())
	require.Equal(t, "hello", c.FCall(ctx, "ro", nil).Val())
	blockedClients(t, c, 0)
	// Arity errors answer at once.
	require.EqualError(t, c.Do(ctx, "SET", "foo").Err(), "ERR wrong number of arguments for 'set' command")

	set := held(t, s, "SET", "foo", "new")
	pfcount := held(t, s, "PFCOUNT", "hll")
	publish := held(t, s, "PUBLISH", "ch", "msg")
	eval := held(t, s, "EVAL", "return 1", "0")
	blockedClients(t, c, 4)
	notYet(t, set, "SET")
	require.Equal(t, "bar", c.Get(ctx, "foo").Val())
	require.Regexp(t, regexp.MustCompile(`flags=b `), c.Do(ctx, "CLIENT", "LIST").String())

	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "UNPAUSE").Val())
	require.Equal(t, "OK", (<-set).Val())
	require.EqualValues(t, 1, (<-pfcount).Val())
	require.EqualValues(t, 0, (<-publish).Val())
	require.EqualValues(t, 1, (<-eval).Val())
	require.Equal(t, "new", c.Get(ctx, "foo").Val())
	blockedClients(t, c, 0)

	// A transaction queued before the pause whose EXEC writes waits for it.
	w := s.Client(t, 2)
	pipe := w.TxPipeline()
	pipe.Set(ctx, "foo", "tx", 0)
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "PAUSE", "100000", "WRITE").Val())
	done := make(chan error, 1)
	go func() { _, err := pipe.Exec(ctx); done <- err }()
	blockedClients(t, c, 1)
	require.Equal(t, "new", c.Get(ctx, "foo").Val())
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "UNPAUSE").Val())
	require.NoError(t, <-done)
	require.Equal(t, "tx", c.Get(ctx, "foo").Val())
}

// TestClientPauseAll: ALL (the default) holds every command, reads and CLIENT UNPAUSE too (as
// in Redis), and lifts by itself at its timeout; a second pause keeps the later end.
func TestClientPauseAll(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	start := time.Now()
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "PAUSE", "300").Val())
	get := held(t, s, "GET", "k")
	unpause := held(t, s, "CLIENT", "UNPAUSE")
	notYet(t, get, "GET")
	require.Equal(t, "v", (<-get).Val())
	require.Equal(t, "OK", (<-unpause).Val())
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond, "the read waited for the pause's end")

	// WRITE for 200 ms, then for 600: the later end holds.
	start = time.Now()
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "PAUSE", "200", "WRITE").Val())
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "PAUSE", "600", "WRITE").Val())
	set := held(t, s, "SET", "k", "w")
	require.Equal(t, "OK", (<-set).Val())
	require.GreaterOrEqual(t, time.Since(start), 550*time.Millisecond, "the write waited for the later end")
}

// TestClientPauseErrors: Redis's error replies for CLIENT PAUSE's arguments.
func TestClientPauseErrors(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	for _, tc := range []struct {
		args []any
		err  string
	}{
		{[]any{"CLIENT", "PAUSE", "abc"}, "ERR timeout is not an integer or out of range"},
		{[]any{"CLIENT", "PAUSE", "-1"}, "ERR timeout is negative"},
		{[]any{"CLIENT", "PAUSE", "10", "READ"}, "ERR CLIENT PAUSE mode must be WRITE or ALL"},
		{[]any{"CLIENT", "PAUSE", "10", "WRITE", "x"}, "ERR unknown subcommand or wrong number of arguments for 'PAUSE'. Try CLIENT HELP."},
		{[]any{"CLIENT", "PAUSE"}, "ERR wrong number of arguments for 'client|pause' command"},
		{[]any{"CLIENT", "UNPAUSE", "x"}, "ERR wrong number of arguments for 'client|unpause' command"},
	} {
		require.EqualError(t, c.Do(ctx, tc.args...).Err(), tc.err, "%v", tc.args)
	}
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "PAUSE", "0").Val(), "a pause of 0 ms is over at once")
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	help := c.Do(ctx, "CLIENT", "HELP").String()
	require.Contains(t, help, "PAUSE <timeout> [WRITE|ALL]")
	require.Contains(t, help, "Stop the current client pause, resuming traffic.")
}

// TestClientPauseStopsExpiry: while clients are paused nothing expires, lazily or actively (a
// read sees the key gone but leaves it, expired_keys stays), as in Redis; after the pause the
// next read deletes it.
func TestClientPauseStopsExpiry(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	expired := func() int {
		m := regexp.MustCompile(`expired_keys:(\d+)`).FindStringSubmatch(c.Info(ctx, "stats").Val())
		n, _ := strconv.Atoi(m[1])
		return n
	}
	before := expired()
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "foo{t}", "bar", 10*time.Millisecond)
		p.Set(ctx, "bar{t}", "foo", 10*time.Millisecond)
		p.Do(ctx, "CLIENT", "PAUSE", "50000", "WRITE")
		return nil
	})
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond) // past the TTL, and several active expiry cycles
	require.Equal(t, redis.Nil, c.Get(ctx, "foo{t}").Err())
	require.Equal(t, redis.Nil, c.Get(ctx, "bar{t}").Err())
	require.Equal(t, before, expired(), "nothing expired during the pause")
	require.EqualValues(t, 2, c.DBSize(ctx).Val(), "the keys are still there")

	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "UNPAUSE").Val())
	require.Equal(t, redis.Nil, c.Get(ctx, "foo{t}").Err())
	require.Equal(t, redis.Nil, c.Get(ctx, "bar{t}").Err())
	require.Eventually(t, func() bool { return expired() == before+2 }, 5*time.Second, 10*time.Millisecond)
}

// TestClientPauseDisconnect: a client that goes away while held never has its command run,
// as Redis frees a paused client with it.
func TestClientPauseDisconnect(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "PAUSE", "100000", "WRITE").Val())
	nc, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	_, err = nc.Write([]byte("*3\r\n$3\r\nSET\r\n$4\r\ngone\r\n$1\r\nx\r\n"))
	require.NoError(t, err)
	blockedClients(t, c, 1)
	nc.Close()
	blockedClients(t, c, 0)
	require.Equal(t, "OK", c.Do(ctx, "CLIENT", "UNPAUSE").Val())
	require.EqualValues(t, 0, c.Exists(ctx, "gone").Val())
	require.False(t, strings.Contains(c.Do(ctx, "CLIENT", "LIST").String(), "cmd=set"))
}

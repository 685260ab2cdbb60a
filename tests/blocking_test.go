package tests

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/testutil"
)

// blockedClients waits until INFO reports n blocked clients.
func blockedClients(t *testing.T, c *redis.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		return strings.Contains(c.Info(ctx, "clients").Val(), fmt.Sprintf("blocked_clients:%d\r\n", n))
	}, 5*time.Second, 2*time.Millisecond, "waiting for %d blocked clients", n)
}

func TestBlockingPopServedByPush(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		got := make(chan []string, 1)
		go func() {
			v, err := s.Client(t, 2).BLPop(ctx, 0, "q1", "q2").Result()
			if err != nil {
				v = []string{err.Error()}
			}
			got <- v
		}()
		blockedClients(t, c, 1)
		require.EqualValues(t, 2, c.RPush(ctx, "q2", "a", "b").Val())
		require.Equal(t, []string{"q2", "a"}, <-got)
		require.Equal(t, []string{"b"}, c.LRange(ctx, "q2", 0, -1).Val(), "the blocked client took one element")
		blockedClients(t, c, 0)
	})
}

// Clients blocked on a key are served in the order they blocked, each with one element.
func TestBlockingFairOrder(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	const n = 5
	results := make([]chan string, n)
	for i := range n {
		results[i] = make(chan string, 1)
		cl := s.Client(t, 2)
		go func() {
			v, err := cl.BRPop(ctx, 0, "q").Result()
			if err != nil {
				results[i] <- err.Error()
				return
			}
			results[i] <- v[1]
		}()
		blockedClients(t, c, i+1) // block one after the other
	}
	// One push of n elements: the first blocked gets the tail (BRPOP), and so on.
	c.RPush(ctx, "q", "e1", "e2", "e3", "e4", "e5")
	for i := range n {
		require.Equal(t, fmt.Sprintf("e%d", n-i), <-results[i], "client %d", i)
	}
	require.EqualValues(t, 0, c.Exists(ctx, "q").Val())
}

// A push inside MULTI serves blocked clients only after EXEC: inside the transaction the
// element is still there.
func TestBlockingServedAfterExec(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	got := make(chan []string, 1)
	go func() { got <- s.Client(t, 2).BLPop(ctx, 0, "q").Val() }()
	blockedClients(t, c, 1)
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.RPush(ctx, "q", "x")
		p.LLen(ctx, "q")
		return nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 1, cmds[1].(*redis.IntCmd).Val(), "LLEN inside EXEC sees the pushed element")
	require.Equal(t, []string{"q", "x"}, <-got)
	require.EqualValues(t, 0, c.LLen(ctx, "q").Val())
}

func TestBlockingTimeoutAndVariants(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		start := time.Now()
		_, err := c.BLPop(ctx, 100*time.Millisecond, "none").Result()
		require.Equal(t, redis.Nil, err)
		require.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)

		// BLMPOP with COUNT, served by a later push.
		got := make(chan []any, 1)
		go func() {
			v, _ := s.Client(t, 2).Do(ctx, "BLMPOP", 0, 2, "m1", "m2", "LEFT", "COUNT", 2).Slice()
			got <- v
		}()
		blockedClients(t, c, 1)
		c.RPush(ctx, "m2", "a", "b", "c")
		v := <-got
		require.Equal(t, "m2", v[0])
		require.Equal(t, []any{"a", "b"}, v[1])

		// BLMOVE is woken and runs again.
		moved := make(chan string, 1)
		go func() { moved <- s.Client(t, 2).BLMove(ctx, "src", "dst", "RIGHT", "LEFT", 0).Val() }()
		blockedClients(t, c, 1)
		c.RPush(ctx, "src", "x", "y")
		require.Equal(t, "y", <-moved)
		require.Equal(t, []string{"y"}, c.LRange(ctx, "dst", 0, -1).Val())
		require.Equal(t, []string{"x"}, c.LRange(ctx, "src", 0, -1).Val())
	})
}

// A client that disconnects while blocked is dequeued: a later push is not handed to it and
// lost, and the next blocked client gets it.
func TestBlockedClientDisconnects(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	raw, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	_, err = raw.Write([]byte("*3\r\n$5\r\nBLPOP\r\n$1\r\nq\r\n$1\r\n0\r\n"))
	require.NoError(t, err)
	blockedClients(t, c, 1)
	raw.Close()
	blockedClients(t, c, 0)
	c.RPush(ctx, "q", "kept")
	require.Equal(t, []string{"kept"}, c.LRange(ctx, "q", 0, -1).Val())
}

// The bar: a thousand clients blocked at once are all served, each exactly once.
func TestThousandBlockedClients(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	const n = 1000
	var wg sync.WaitGroup
	got := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", s.Addr)
			if err != nil {
				got <- err.Error()
				return
			}
			defer conn.Close()
			key := fmt.Sprintf("k%d", i%10)
			fmt.Fprintf(conn, "*3\r\n$5\r\nBLPOP\r\n$%d\r\n%s\r\n$2\r\n30\r\n", len(key), key)
			buf := make([]byte, 256)
			n, err := conn.Read(buf)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(buf[:n])
		}()
	}
	blockedClients(t, c, n)
	for k := range 10 {
		vals := make([]any, 100)
		for j := range vals {
			vals[j] = fmt.Sprintf("v%d-%d", k, j)
		}
		require.EqualValues(t, 100, c.RPush(ctx, fmt.Sprintf("k%d", k), vals...).Val())
	}
	wg.Wait()
	close(got)
	seen := map[string]bool{}
	for r := range got {
		require.True(t, strings.HasPrefix(r, "*2\r\n"), "reply %q", r)
		require.False(t, seen[r], "served twice: %q", r)
		seen[r] = true
	}
	require.Len(t, seen, n)
	require.EqualValues(t, 0, c.DBSize(ctx).Val())
	blockedClients(t, c, 0)
}

// A blocked client's pop is journaled right after the push that served it, so the log
// replays to the same (empty) list.
func TestBlockingPopJournaled(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--appendonly", "yes", "--appendfsync", "always"}
	s, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: args})
	require.NoError(t, err)
	c := s.Client(t, 2)
	got := make(chan []string, 1)
	go func() { got <- s.Client(t, 2).BLPop(ctx, 0, "q").Val() }()
	blockedClients(t, c, 1)
	c.RPush(ctx, "q", "a", "b")
	require.Equal(t, []string{"q", "a"}, <-got)
	effects, _ := readLog(t, dir)
	require.Contains(t, strings.ToUpper(strings.Join(effects, "\n")), "0: RPUSH Q A B\n0: LPOP Q 1")
	s.Stop(t, command.ShutdownNoSave)
	s2, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: args})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, s2.Client(t, 2).LRange(ctx, "q", 0, -1).Val())
}

// BZPOPMIN and BZMPOP block on sorted sets and are served, in order, by the ZADD that gives
// their key members; the pops are journaled as ZREM.
func TestBlockingZPop(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		first := make(chan *redis.ZWithKey, 1)
		go func() { first <- s.Client(t, 2).BZPopMin(ctx, 0, "z").Val() }()
		blockedClients(t, c, 1)
		second := make(chan []any, 1)
		go func() {
			v, _ := s.Client(t, 2).Do(ctx, "BZMPOP", 0, 1, "z", "MAX", "COUNT", 5).Slice()
			second <- v
		}()
		blockedClients(t, c, 2)
		require.EqualValues(t, 3, c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}).Val())
		got := <-first
		require.Equal(t, "z", got.Key)
		require.Equal(t, "a", got.Member)
		require.EqualValues(t, 1, got.Score)
		v := <-second
		require.Equal(t, "z", v[0])
		require.Len(t, v[1], 2, "the two members left after the first client took the minimum")
		require.EqualValues(t, 0, c.Exists(ctx, "z").Val())
		blockedClients(t, c, 0)
	})
}

// TestClientUnblock: CLIENT UNBLOCK ends a blocking wait with the command's timeout reply or,
// with ERROR, Redis's UNBLOCKED error; a client that is not blocked is left alone.
func TestClientUnblock(t *testing.T) {
	s := testutil.StartServer(t)
	admin, blocked := s.Dial(t), s.Dial(t)
	id := strings.TrimSuffix(strings.TrimPrefix(blocked.Do("CLIENT", "ID"), ":"), "\r\n")
	require.Equal(t, ":0\r\n", admin.Do("CLIENT", "UNBLOCK", id), "not blocked")
	require.Equal(t, ":0\r\n", admin.Do("CLIENT", "UNBLOCK", "999999"), "no such client")
	require.Equal(t, "-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n", admin.Do("CLIENT", "UNBLOCK", id, "BOGUS"))
	require.Equal(t, "-ERR value is not an integer or out of range\r\n", admin.Do("CLIENT", "UNBLOCK", "x"))

	waitBlocked := func() {
		require.Eventually(t, func() bool {
			return strings.Contains(admin.Do("INFO", "clients"), "blocked_clients:1\r\n")
		}, 5*time.Second, 5*time.Millisecond)
	}
	for _, tc := range []struct {
		cmd  []string
		mode string
		want string
	}{
		{[]string{"BLPOP", "nolist", "0"}, "TIMEOUT", "*-1\r\n"},
		{[]string{"BLPOP", "nolist", "0"}, "", "*-1\r\n"},
		{[]string{"BZPOPMIN", "nozset", "0"}, "ERROR", "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
		{[]string{"XREAD", "BLOCK", "0", "STREAMS", "nostream", "$"}, "TIMEOUT", "*-1\r\n"},
		{[]string{"BLMOVE", "a", "b", "LEFT", "LEFT", "0"}, "ERROR", "-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"},
	} {
		blocked.SendCmd(tc.cmd...)
		waitBlocked()
		args := []string{"CLIENT", "UNBLOCK", id}
		if tc.mode != "" {
			args = append(args, tc.mode)
		}
		require.Equal(t, ":1\r\n", admin.Do(args...), "%v", tc.cmd)
		require.Equal(t, tc.want, blocked.ReadReply(), "%v", tc.cmd)
		require.Equal(t, "+PONG\r\n", blocked.Do("PING"), "the connection goes on")
	}
}

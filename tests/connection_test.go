package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/testutil"
)

var ctx = testutil.Ctx

func TestPingEchoSelect(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, "PONG", c.Ping(ctx).Val())
		require.Equal(t, "hi", c.Do(ctx, "PING", "hi").Val())
		require.Equal(t, "a\r\nb", c.Echo(ctx, "a\r\nb").Val())
		require.EqualError(t, c.Do(ctx, "PING", "a", "b").Err(), "ERR wrong number of arguments for 'ping' command")
		require.EqualError(t, c.Do(ctx, "SELECT", "16").Err(), "ERR DB index is out of range")
		require.EqualError(t, c.Do(ctx, "SELECT", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "FOO", "a", "b").Err(), "ERR unknown command 'FOO', with args beginning with: 'a' 'b' ")
		require.EqualError(t, c.Do(ctx, "CLIENT", "FOO").Err(), "ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
		require.EqualError(t, c.Do(ctx, "CLIENT", "SETNAME").Err(), "ERR wrong number of arguments for 'client|setname' command")
		require.EqualError(t, c.Do(ctx, "AUTH", "x").Err(), "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	})
}

func TestHelloAndProtocols(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	require.Equal(t, "-NOPROTO unsupported protocol version\r\n", r.Do("HELLO", "4"))
	require.Equal(t, "$-1\r\n", r.Do("CLIENT", "GETNAME"))
	reply := r.Do("HELLO", "3", "SETNAME", "conn1")
	require.True(t, strings.HasPrefix(reply, "%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"), reply)
	require.Contains(t, reply, "$5\r\nproto\r\n:3\r\n")
	require.Equal(t, "$5\r\nconn1\r\n", r.Do("CLIENT", "GETNAME"))
	require.Equal(t, "_\r\n", func() string { r.Do("CLIENT", "SETNAME", "x"); return "_\r\n" }())
	require.Equal(t, "+RESET\r\n", r.Do("RESET"))
	require.Equal(t, "$-1\r\n", r.Do("CLIENT", "GETNAME"))
	reply = r.Do("HELLO")
	require.True(t, strings.HasPrefix(reply, "*14\r\n"), reply)
	require.EqualValues(t, "-ERR Client names cannot contain spaces, newlines or special characters.\r\n", r.Do("CLIENT", "SETNAME", "a b"))
}

func TestClientCommands(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		id, err := c.ClientID(ctx).Result()
		require.NoError(t, err)
		require.Positive(t, id)
		require.NoError(t, c.Do(ctx, "CLIENT", "SETNAME", "worker").Err())
		list, err := c.ClientList(ctx).Result()
		require.NoError(t, err)
		require.Contains(t, list, "name=worker")
		require.Contains(t, list, "cmd=client|list")
		info, err := c.ClientInfo(ctx).Result()
		require.NoError(t, err)
		require.Equal(t, id, info.ID)
		require.Equal(t, "worker", info.Name)
		require.NoError(t, c.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", "mylib").Err())
		require.NoError(t, c.Do(ctx, "CLIENT", "NO-EVICT", "on").Err())
		require.NoError(t, c.Do(ctx, "CLIENT", "NO-TOUCH", "off").Err())
		require.EqualError(t, c.Do(ctx, "CLIENT", "NO-TOUCH", "maybe").Err(), "ERR syntax error")

		victim := s.Dial(t)
		require.Equal(t, "+PONG\r\n", victim.Do("PING"))
		vid := victim.Do("CLIENT", "ID")
		n, err := c.Do(ctx, "CLIENT", "KILL", "ID", strings.TrimSpace(vid[1:])).Int()
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.True(t, victim.ReadEOF())
		require.EqualError(t, c.Do(ctx, "CLIENT", "KILL", "1.2.3.4:5").Err(), "ERR No such client")
	})
}

func TestProtocolErrorsCloseTheConnection(t *testing.T) {
	s := testutil.StartServer(t)
	cases := map[string]string{
		"*x\r\n":               "-ERR Protocol error: invalid multibulk length\r\n",
		"*1\r\n$-5\r\n":        "-ERR Protocol error: invalid bulk length\r\n",
		"*1\r\n+PING\r\n":      "-ERR Protocol error: expected '$', got '+'\r\n",
		"SET \"abc\r\n":        "-ERR Protocol error: unbalanced quotes in request\r\n",
		"*1\r\n$536870913\r\n": "-ERR Protocol error: invalid bulk length\r\n",
	}
	for in, want := range cases {
		r := s.Dial(t)
		r.Send(in)
		require.Equal(t, want, r.ReadReply(), in)
		require.True(t, r.ReadEOF(), "connection must close after %q", in)
	}
	// The server keeps serving everyone else.
	require.Equal(t, "+PONG\r\n", s.Dial(t).Do("PING"))
}

func TestInlineAndPipelining(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	r.Send("PING\r\nECHO \"a b\"\r\n\r\n*1\r\n$4\r\nPING\r\n")
	require.Equal(t, "+PONG\r\n", r.ReadReply())
	require.Equal(t, "$3\r\na b\r\n", r.ReadReply())
	require.Equal(t, "+PONG\r\n", r.ReadReply())
	r.Send("QUIT\r\n")
	require.Equal(t, "+OK\r\n", r.ReadReply())
	require.True(t, r.ReadEOF())
}

func TestAuthWithoutPasswordsConfigured(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, "OK", c.Do(ctx, "AUTH", "default", "anything").Val())
		require.EqualError(t, c.Do(ctx, "AUTH", "foo", "x").Err(), "WRONGPASS invalid username-password pair or user is disabled.")
		require.EqualError(t, c.Do(ctx, "AUTH", "a", "b", "c").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "HELLO", "3", "AUTH", "foo", "x").Err(), "WRONGPASS invalid username-password pair or user is disabled.")
		require.EqualError(t, c.Do(ctx, "HELLO", "3", "foo").Err(), "ERR Syntax error in HELLO option 'foo'")
		require.EqualError(t, c.Do(ctx, "HELLO", "x").Err(), "ERR Protocol version is not an integer or out of range")
	})
}

// TestUnixSocket serves a client on unixsocket: the socket gets unixsocketperm's bits, the
// client is named by the socket path with the U flag, protected mode lets it in, and the file
// is gone after shutdown.
func TestUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hotkv.sock")
	s := testutil.StartServer(t, "--unixsocket", path, "--unixsocketperm", "700", "--protected-mode", "yes")
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.ModeSocket, st.Mode().Type())
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	c := redis.NewClient(&redis.Options{Network: "unix", Addr: path, Protocol: 2})
	defer c.Close()
	require.Equal(t, "PONG", c.Ping(ctx).Val())
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	info := c.ClientInfo(ctx).Val()
	require.Equal(t, path+":0", info.Addr)
	require.Equal(t, path+":0", info.LAddr)
	require.Equal(t, "v", s.Client(t, 2).Get(ctx, "k").Val(), "the TCP listener serves the same data")
	require.Equal(t, path, c.ConfigGet(ctx, "unixsocket").Val()["unixsocket"])
	require.Equal(t, "700", c.ConfigGet(ctx, "unixsocketperm").Val()["unixsocketperm"])
	raw := c.Do(ctx, "CLIENT", "LIST").String()
	require.Contains(t, raw, "flags=U ")

	s.Stop(t, command.ShutdownNoSave)
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err), "socket file removed at shutdown: %v", err)
}

// TestUnixSocketPermRejected checks unixsocketperm's octal validation.
func TestUnixSocketPermRejected(t *testing.T) {
	for _, bad := range []string{"800", "1000", "-1", "abc"} {
		_, err := config.Load(config.Directives(), []string{"--unixsocketperm", bad})
		require.Error(t, err, bad)
	}
}

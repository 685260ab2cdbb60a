package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// userClient is a go-redis client that authenticates as user (AUTH in RESP2, HELLO 3 AUTH in
// RESP3, as go-redis does it).
func userClient(t *testing.T, s *testutil.Server, proto int, user, pass string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto, Username: user, Password: pass,
		DisableIdentity: true, MaxRetries: -1, PoolSize: 1, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawProto is a raw connection switched to proto (HELLO 3 needs the connection to be
// authenticated, so callers that test NOAUTH stay in RESP2 until they authenticate).
func rawProto(t *testing.T, s *testutil.Server, proto int, auth ...string) *testutil.Raw {
	t.Helper()
	r := s.Dial(t)
	if proto == 3 {
		args := []string{"HELLO", "3"}
		if len(auth) == 2 {
			args = append(args, "AUTH", auth[0], auth[1])
		}
		require.True(t, strings.HasPrefix(r.Do(args...), "%"))
	} else if len(auth) == 2 {
		require.Equal(t, "+OK\r\n", r.Do("AUTH", auth[0], auth[1]))
	}
	return r
}

func TestAuthRequirePass(t *testing.T) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := testutil.StartServer(t, "--requirepass", "foobar")
			r := s.Dial(t)
			require.Equal(t, "-NOAUTH Authentication required.\r\n", r.Do("GET", "k"))
			require.Equal(t, "-NOAUTH Authentication required.\r\n", r.Do("ACL", "WHOAMI"))
			// Unknown commands and arity errors come first, as in Redis.
			require.Equal(t, "-ERR unknown command 'NOSUCH', with args beginning with: \r\n", r.Do("NOSUCH"))
			require.Equal(t, "-ERR wrong number of arguments for 'get' command\r\n", r.Do("GET"))
			require.Equal(t, "-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n",
				r.Do("HELLO", "3"))
			require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", r.Do("AUTH", "wrong"))
			require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", r.Do("HELLO", "3", "AUTH", "default", "wrong"))
			require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", r.Do("AUTH", "nobody", "foobar"))
			require.Equal(t, "-NOAUTH Authentication required.\r\n", r.Do("GET", "k"))
			if proto == 3 {
				reply := r.Do("HELLO", "3", "AUTH", "default", "foobar")
				require.True(t, strings.HasPrefix(reply, "%7\r\n"), reply)
			} else {
				require.Equal(t, "+OK\r\n", r.Do("AUTH", "foobar"))
			}
			require.Equal(t, "+OK\r\n", r.Do("SET", "k", "v"))
			require.Equal(t, "$7\r\ndefault\r\n", r.Do("ACL", "WHOAMI"))

			// A client library that authenticates works in both protocols.
			c := userClient(t, s, proto, "", "foobar")
			require.Equal(t, "v", c.Get(ctx, "k").Val())
			c2 := userClient(t, s, proto, "default", "foobar")
			require.Equal(t, "v", c2.Get(ctx, "k").Val())
			bad := userClient(t, s, proto, "default", "nope")
			require.ErrorContains(t, bad.Ping(ctx).Err(), "WRONGPASS")

			// NOAUTH is a rejected call of the command, counted as such.
			info := c.Info(ctx, "commandstats", "errorstats").Val()
			require.Contains(t, info, "cmdstat_get:calls=2,")
			require.Regexp(t, `cmdstat_get:.*rejected_calls=3,`, info) // two NOAUTH, one arity error
			require.Contains(t, info, "errorstat_NOAUTH:count=")
			require.Contains(t, info, "errorstat_WRONGPASS:count=")
		})
	}
}

func TestAuthWithoutPassword(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.EqualError(t, c.Do(ctx, "AUTH", "x").Err(), "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		require.NoError(t, c.Do(ctx, "AUTH", "default", "anything").Err())
		require.EqualError(t, c.Do(ctx, "AUTH", "a", "b", "c").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "AUTH").Err(), "ERR wrong number of arguments for 'auth' command")
		require.EqualError(t, c.Do(ctx, "AUTH", "nobody", "x").Err(), "WRONGPASS invalid username-password pair or user is disabled.")
	})
}

// TestAuthRequirePassAtRunTime: CONFIG SET requirepass applies to new connections at once;
// connections already authenticated stay so, as in Redis.
func TestAuthRequirePassAtRunTime(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		admin := s.Dial(t)
		require.Equal(t, "+OK\r\n", admin.Do("CONFIG", "SET", "requirepass", "s3cret"))
		require.Equal(t, "*2\r\n$11\r\nrequirepass\r\n$6\r\ns3cret\r\n", admin.Do("CONFIG", "GET", "requirepass"))
		require.Equal(t, "+PONG\r\n", admin.Do("PING"))
		fresh := s.Dial(t)
		require.Equal(t, "-NOAUTH Authentication required.\r\n", fresh.Do("PING"))
		require.Equal(t, "+OK\r\n", fresh.Do("AUTH", "s3cret"))
		// The default user holds the password's SHA-256, never the password.
		require.Contains(t, admin.Do("ACL", "LIST"), "user default on #"+sha256Hex("s3cret")+" ~* &* +@all")
		require.Equal(t, "+OK\r\n", admin.Do("CONFIG", "SET", "requirepass", ""))
		later := s.Dial(t)
		require.Equal(t, "+PONG\r\n", later.Do("PING"))
		require.Equal(t, "-ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?\r\n", later.Do("AUTH", "s3cret"))
	})
}

func TestAuthBinaryPassword(t *testing.T) {
	s := testutil.StartServer(t)
	r := s.Dial(t)
	require.Equal(t, "+OK\r\n", r.Do("CONFIG", "SET", "requirepass", "abc\x00def"))
	n := s.Dial(t)
	require.Equal(t, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", n.Do("AUTH", "abc"))
	require.Equal(t, "+OK\r\n", n.Do("AUTH", "abc\x00def"))
}

// TestAuthUnauthenticatedLimits: until it authenticates, a client may only send small
// requests and must read its replies (Redis's limits against unauthenticated abuse).
func TestAuthUnauthenticatedLimits(t *testing.T) {
	s := testutil.StartServer(t, "--requirepass", "pw")
	r := s.Dial(t)
	r.Send("*100\r\n")
	require.Equal(t, "-ERR Protocol error: unauthenticated multibulk length\r\n", r.ReadReply())
	require.True(t, r.ReadEOF())
	r = s.Dial(t)
	r.Send("*1\r\n$100000000\r\n")
	require.Equal(t, "-ERR Protocol error: unauthenticated bulk length\r\n", r.ReadReply())
	require.True(t, r.ReadEOF())
	// Authenticated, the same requests are fine.
	r = s.Dial(t)
	require.Equal(t, "+OK\r\n", r.Do("AUTH", "pw"))
	args := make([]string, 100)
	args[0] = "DEL"
	for i := 1; i < len(args); i++ {
		args[i] = fmt.Sprint("k", i)
	}
	require.Equal(t, ":0\r\n", r.Do(args...))
	require.Equal(t, "+OK\r\n", r.Do("SET", "big", strings.Repeat("x", 100000)))

	// A client that never reads its NOAUTH replies is disconnected instead of holding the
	// connection.
	nc, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer nc.Close()
	done := make(chan error, 1)
	go func() {
		req := []byte(strings.Repeat("*3\r\n$3\r\nSET\r\n$1\r\nx\r\n$1\r\n5\r\n", 1000))
		for i := 0; i < 100000; i++ {
			if _, err := nc.Write(req); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		require.Error(t, err, "the server should have closed the connection")
	case <-time.After(30 * time.Second):
		t.Fatal("the unauthenticated client was never disconnected")
	}
}

// TestAuthFailuresCounted: failed authentications are logged (ACL LOG) and counted in INFO.
func TestAuthFailuresCounted(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "ACL", "SETUSER", "bob", "on", ">pw", "+@all", "~*").Err())
		require.Error(t, c.Do(ctx, "AUTH", "bob", "bad").Err())
		require.Error(t, c.Do(ctx, "AUTH", "bob", "bad").Err())
		require.Error(t, c.Do(ctx, "AUTH", "ghost", "x").Err())
		info := c.Info(ctx, "stats").Val()
		require.Contains(t, info, "acl_access_denied_auth:3\r\n")
		require.Contains(t, info, "acl_access_denied_cmd:0\r\n")
		entries := aclLog(t, c, -1)
		require.Len(t, entries, 2)
		require.Equal(t, "ghost", entries[0]["username"])
		require.EqualValues(t, 1, entries[0]["count"])
		require.Equal(t, "bob", entries[1]["username"])
		require.EqualValues(t, 2, entries[1]["count"])
		require.Equal(t, "auth", entries[1]["reason"])
		require.Equal(t, "toplevel", entries[1]["context"])
		require.Equal(t, "AUTH", entries[1]["object"])
		require.NoError(t, c.Do(ctx, "CONFIG", "RESETSTAT").Err())
		require.Contains(t, c.Info(ctx, "stats").Val(), "acl_access_denied_auth:0\r\n")
	})
}

// aclLog reads ACL LOG [count] as maps, in either protocol.
func aclLog(t *testing.T, c *redis.Client, count int) []map[string]any {
	t.Helper()
	args := []any{"ACL", "LOG"}
	if count >= 0 {
		args = append(args, count)
	}
	v, err := c.Do(ctx, args...).Result()
	require.NoError(t, err)
	var out []map[string]any
	for _, e := range v.([]any) {
		m := map[string]any{}
		switch e := e.(type) {
		case map[any]any:
			for k, v := range e {
				m[k.(string)] = v
			}
		case []any:
			for i := 0; i+1 < len(e); i += 2 {
				m[e[i].(string)] = e[i+1]
			}
		}
		out = append(out, m)
	}
	return out
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

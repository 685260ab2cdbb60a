package tests

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/testutil"
)

// protectedDenied is Redis 7.0's protected-mode reply (networking.c), checked byte for byte.
const protectedDenied = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, " +
	"however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. " +
	"2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. " +
	"4) Setup a an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// dialFrom connects to addr from the local address from, and reads the server's reply to a PING
// and whether it then closed the connection.
func dialFrom(t *testing.T, from, addr string) (reply string, closed bool) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot connect from %s on this machine: %v", from, err)
	}
	defer nc.Close()
	_, _ = nc.Write([]byte("PING\r\n"))
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(nc)
	line, err := br.ReadString('\n')
	if err != nil {
		return line, true
	}
	// A refused client is closed right after the reply; a served one stays open.
	_ = nc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = br.ReadByte()
	// EOF, or a reset: the server closed with the PING unread.
	var ne net.Error
	return line, err == io.EOF || (err != nil && !(errors.As(err, &ne) && ne.Timeout()))
}

// TestProtectedMode: Redis serves only 127.0.0.1 and ::1 in protected mode while the default
// user has no password. A client from 127.0.0.2 (loopback interface, but not Redis's local
// address) stands for a remote client.
func TestProtectedMode(t *testing.T) {
	s := testutil.StartServer(t)
	addr2 := s.Addr
	c := s.Client(t, 2)
	admin := s.Dial(t)

	// Loopback is served.
	require.Equal(t, "PONG", c.Ping(testutil.Ctx).Val())
	reply, _ := dialFrom(t, "127.0.0.1", addr2)
	require.Equal(t, "+PONG\r\n", reply)

	// Another address is refused with the exact error, then closed; counted as rejected.
	before := rawStat(t, admin, "rejected_connections")
	reply, closed := dialFrom(t, "127.0.0.2", addr2)
	require.Equal(t, protectedDenied, reply)
	require.True(t, closed)
	require.Equal(t, before+1, rawStat(t, admin, "rejected_connections"))

	// A password for the default user lifts it (the client must then authenticate).
	require.NoError(t, c.ConfigSet(testutil.Ctx, "requirepass", "secret").Err())
	c2 := s.Dial(t)
	require.Equal(t, "+OK\r\n", c2.Do("AUTH", "secret"))
	reply, closed = dialFrom(t, "127.0.0.2", addr2)
	require.Equal(t, "-NOAUTH Authentication required.\r\n", reply)
	require.False(t, closed)
	require.Equal(t, "+OK\r\n", c2.Do("CONFIG", "SET", "requirepass", ""))
	reply, _ = dialFrom(t, "127.0.0.2", addr2)
	require.Equal(t, protectedDenied, reply)

	// So does an ACL password on the default user.
	require.Equal(t, "+OK\r\n", c2.Do("ACL", "SETUSER", "default", "resetpass", ">pw"))
	reply, _ = dialFrom(t, "127.0.0.2", addr2)
	require.Equal(t, "-NOAUTH Authentication required.\r\n", reply)
	require.Equal(t, "+OK\r\n", c2.Do("ACL", "SETUSER", "default", "nopass"))
	reply, _ = dialFrom(t, "127.0.0.2", addr2)
	require.Equal(t, protectedDenied, reply)

	// protected-mode no serves everyone.
	require.Equal(t, "+OK\r\n", c2.Do("CONFIG", "SET", "protected-mode", "no"))
	reply, closed = dialFrom(t, "127.0.0.2", addr2)
	require.Equal(t, "+PONG\r\n", reply)
	require.False(t, closed)
	require.Equal(t, "*2\r\n$14\r\nprotected-mode\r\n$2\r\nno\r\n", c2.Do("CONFIG", "GET", "protected-mode"))
}

func rawStat(t *testing.T, c *testutil.Raw, name string) int {
	t.Helper()
	info := c.Do("INFO", "stats")
	for _, l := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			n := 0
			for _, ch := range v {
				n = n*10 + int(ch-'0')
			}
			return n
		}
	}
	t.Fatalf("no %s in INFO", name)
	return 0
}

// TestSecureDefaults: out of the box the server listens on loopback only (Redis 7's
// redis.conf), in protected mode, with Redis's limits.
func TestSecureDefaults(t *testing.T) {
	cfg, err := config.Load(config.Directives(), nil)
	require.NoError(t, err)
	for name, want := range map[string]string{"bind": "127.0.0.1 -::1", "protected-mode": "yes", "maxclients": "10000",
		"timeout": "0", "tcp-keepalive": "300", "client-query-buffer-limit": "1073741824", "proto-max-bulk-len": "536870912",
		"tls-port": "0", "tls-auth-clients": "yes"} {
		require.Equal(t, want, cfg.Get(name), name)
	}
}

func TestMaxClients(t *testing.T) {
	s := testutil.StartServer(t)
	first := s.Dial(t)
	require.Equal(t, "+OK\r\n", first.Do("CONFIG", "SET", "maxclients", "3"))
	second, third := s.Dial(t), s.Dial(t)
	require.Equal(t, "+PONG\r\n", second.Do("PING"))
	require.Equal(t, "+PONG\r\n", third.Do("PING"))
	before := rawStat(t, first, "rejected_connections")

	fourth := s.Dial(t)
	require.Equal(t, "-ERR max number of clients reached\r\n", fourth.ReadReply())
	require.True(t, fourth.ReadEOF())
	// One place freed: the next client is served.
	require.Equal(t, "+OK\r\n", third.Do("QUIT"))
	require.Eventually(t, func() bool {
		return strings.Count(first.Do("CLIENT", "LIST"), "id=") == 2
	}, 5*time.Second, 20*time.Millisecond)
	fifth := s.Dial(t)
	require.Equal(t, "+PONG\r\n", fifth.Do("PING"))
	require.Equal(t, "+OK\r\n", first.Do("CONFIG", "SET", "maxclients", "10000"))
	require.Equal(t, before+1, rawStat(t, first, "rejected_connections"))
}

func TestIdleTimeout(t *testing.T) {
	s := testutil.StartServer(t)
	admin := s.Dial(t)
	require.Equal(t, "+OK\r\n", admin.Do("CONFIG", "SET", "timeout", "1"))
	idle := s.Dial(t)
	require.Equal(t, "+PONG\r\n", idle.Do("PING"))
	sub := s.Dial(t)
	sub.Do("SUBSCRIBE", "ch")
	blocked := s.Dial(t)
	blocked.SendCmd("BLPOP", "nolist", "3")
	active := s.Dial(t)
	for i := 0; i < 6; i++ { // an active client is never idle
		time.Sleep(400 * time.Millisecond)
		require.Equal(t, "+PONG\r\n", active.Do("PING"))
	}
	require.True(t, idle.ReadEOF(), "an idle client is closed")
	// A blocked client waits for its own timeout, not the idle one; a subscriber stays.
	require.Equal(t, "*-1\r\n", blocked.ReadReply())
	require.Equal(t, "+PONG\r\n", blocked.Do("PING"))
	require.Equal(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n", sub.Do("PING"))
	require.True(t, admin.ReadEOF(), "the client that set timeout is idle too")
	require.Equal(t, "+OK\r\n", active.Do("CONFIG", "SET", "timeout", "0"))
}

func TestQueryBufferLimit(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Dial(t)
	require.Equal(t, "+OK\r\n", c.Do("CONFIG", "SET", "client-query-buffer-limit", "1mb"))
	require.Equal(t, "*2\r\n$25\r\nclient-query-buffer-limit\r\n$7\r\n1048576\r\n", c.Do("CONFIG", "GET", "client-query-buffer-limit"))
	require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 9223372036854775807 inclusive\r\n",
		c.Do("CONFIG", "SET", "client-query-buffer-limit", "1000"))
	// A value under the limit is fine.
	ok := s.Dial(t)
	require.Equal(t, "+OK\r\n", ok.Do("SET", "k", strings.Repeat("v", 900<<10)))
	// A request that grows the buffer past it closes the client, without a reply.
	big := s.Dial(t)
	big.Send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n" + strings.Repeat("v", 1200<<10))
	require.True(t, big.ReadEOF())
	require.Equal(t, "+PONG\r\n", c.Do("PING"))
	require.Equal(t, "+OK\r\n", c.Do("CONFIG", "SET", "client-query-buffer-limit", "1gb"))
}

func TestProtoMaxBulkLen(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Dial(t)
	require.Equal(t, "+OK\r\n", c.Do("CONFIG", "SET", "proto-max-bulk-len", "1mb"))
	bad := s.Dial(t)
	bad.Send("*2\r\n$3\r\nGET\r\n$1048577\r\n")
	require.Equal(t, "-ERR Protocol error: invalid bulk length\r\n", bad.ReadReply())
	require.True(t, bad.ReadEOF())
	okc := s.Dial(t)
	require.Equal(t, "+OK\r\n", okc.Do("SET", "k", strings.Repeat("v", 1<<20)))
	neg := s.Dial(t)
	neg.Send("*2\r\n$3\r\nGET\r\n$-5\r\n")
	require.Equal(t, "-ERR Protocol error: invalid bulk length\r\n", neg.ReadReply())
}

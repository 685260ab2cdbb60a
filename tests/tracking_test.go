package tests

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// Client-side caching (CLIENT TRACKING): invalidations in the default mode and in BCAST mode,
// OPTIN/OPTOUT with CLIENT CACHING, NOLOOP, redirection to a RESP2 subscriber of
// __redis__:invalidate and to a RESP3 connection, FLUSHALL, the tracking table's limit, and
// where invalidations land among the tracking connection's own replies. The exact bytes of
// the common exchanges are compared with a real Redis 7.0 (TestTrackingMatchesRedis).

// trackingScenario runs one multi-connection exchange against the server at addr and returns
// the transcript of every reply and push read, one per line. Client IDs, which differ between
// servers, are never part of it.
func trackingScenario(t *testing.T, addr string) []string {
	var out []string
	rec := func(who, s string) {
		out = append(out, who+": "+s)
		if testing.Verbose() {
			t.Logf("%s %s: %q", addr, who, s)
		}
	}
	a := testutil.DialAddr(t, addr) // the tracking client
	b := testutil.DialAddr(t, addr) // the writer
	r := testutil.DialAddr(t, addr) // the redirection target
	b.Do("FLUSHALL")
	rid := strings.TrimSuffix(strings.TrimPrefix(r.Do("CLIENT", "ID"), ":"), "\r\n")
	rec("r", r.Do("SUBSCRIBE", "__redis__:invalidate"))

	// RESP2 with redirection: messages on __redis__:invalidate.
	rec("a", a.Do("CLIENT", "TRACKING", "on", "REDIRECT", rid))
	rec("b", b.Do("MSET", "k1", "1", "k2", "2"))
	rec("a", a.Do("MGET", "k1", "k2", "k3"))
	rec("b", b.Do("SET", "k1", "x"))
	rec("r", r.ReadReply())
	rec("b", b.Do("DEL", "k1", "k2"))
	rec("r", r.ReadReply())
	rec("b", b.Do("SET", "k1", "y")) // no longer tracked: nothing
	rec("a", a.Do("GET", "k1"))
	rec("b", b.Do("FLUSHALL"))
	rec("r", r.ReadReply()) // a null invalidation: every key
	rec("a", strings.Replace(a.Do("CLIENT", "TRACKINGINFO"), ":"+rid+"\r\n", ":<id>\r\n", 1))

	// RESP3 without redirection: pushes on the tracking connection itself.
	rec("a", a.Do("HELLO", "3")[:2])
	rec("a", a.Do("CLIENT", "TRACKING", "on"))
	rec("a", a.Do("GET", "k"))
	rec("b", b.Do("SET", "k", "1"))
	rec("a", a.Do("PING")) // the push arrived first
	rec("a", a.ReadReply())
	// Its own write: the invalidation follows the reply, also after EXEC's.
	rec("a", a.Do("GET", "k"))
	rec("a", a.Do("SET", "k", "2"))
	rec("a", a.ReadReply())
	rec("a", a.Do("GET", "k"))
	rec("a", a.Do("MULTI"))
	rec("a", a.Do("INCR", "k"))
	rec("a", a.Do("GET", "k"))
	rec("a", a.Do("EXEC"))
	rec("a", a.ReadReply())
	// NOLOOP: its own writes are not reported, others' are.
	rec("a", a.Do("CLIENT", "TRACKING", "on", "NOLOOP"))
	rec("a", a.Do("MGET", "k", "j"))
	rec("a", a.Do("SET", "k", "3"))
	rec("b", b.Do("SET", "j", "3"))
	rec("a", a.Do("PING"))
	rec("a", a.ReadReply())
	// OPTIN: only reads right after CLIENT CACHING yes are tracked.
	rec("a", a.Do("CLIENT", "TRACKING", "off"))
	rec("a", a.Do("CLIENT", "TRACKING", "on", "OPTIN"))
	rec("a", a.Do("GET", "o1"))
	rec("a", a.Do("CLIENT", "CACHING", "yes"))
	rec("a", a.Do("GET", "o2"))
	rec("a", a.Do("GET", "o3"))
	rec("b", b.Do("MSET", "o1", "1", "o2", "2", "o3", "3"))
	rec("a", a.Do("PING"))
	rec("a", a.ReadReply())
	// OPTOUT: every read is tracked except right after CLIENT CACHING no.
	rec("a", a.Do("CLIENT", "TRACKING", "off"))
	rec("a", a.Do("CLIENT", "TRACKING", "on", "OPTOUT"))
	rec("a", a.Do("CLIENT", "CACHING", "no"))
	rec("a", a.Do("GET", "o1"))
	rec("a", a.Do("GET", "o2"))
	rec("b", b.Do("MSET", "o1", "1", "o2", "2"))
	rec("a", a.Do("PING"))
	rec("a", a.ReadReply())
	// BCAST with prefixes: one message per prefix per command, keys sorted; a transaction is
	// one command.
	rec("a", a.Do("CLIENT", "TRACKING", "off"))
	rec("a", a.Do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "b:", "PREFIX", "a:"))
	rec("a", a.Do("CLIENT", "TRACKINGINFO"))
	rec("b", b.Do("MULTI"))
	rec("b", b.Do("SET", "a:2", "1"))
	rec("b", b.Do("SET", "b:1", "1"))
	rec("b", b.Do("SET", "a:1", "1"))
	rec("b", b.Do("SET", "c:1", "1"))
	rec("b", b.Do("SET", "a:1", "2"))
	rec("b", b.Do("EXEC"))
	rec("a", a.Do("PING"))
	rec("a", a.ReadReply())
	rec("a", a.ReadReply())
	rec("a", a.Do("CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "c:"))
	rec("b", b.Do("DEL", "c:1", "a:2"))
	rec("a", a.Do("PING"))
	rec("a", a.ReadReply())
	rec("a", a.ReadReply())
	// FLUSHDB in RESP3: a null invalidation push.
	rec("b", b.Do("FLUSHDB"))
	rec("a", a.Do("PING"))
	rec("a", a.ReadReply())
	rec("a", a.Do("CLIENT", "TRACKING", "off"))
	rec("a", a.Do("CLIENT", "TRACKINGINFO"))
	return out
}

func TestTrackingMatchesRedis(t *testing.T) {
	redisAddr := startCompatRedis(t)
	hot := testutil.StartServer(t)
	want := trackingScenario(t, redisAddr)
	got := trackingScenario(t, hot.Addr)
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		if w != g {
			t.Errorf("step %d:\n  hotkv: %q\n  redis: %q", i, g, w)
		}
	}
}

func TestTrackingRedirectBrokenAndStats(t *testing.T) {
	s := testutil.StartServer(t)
	a := rawProto(t, s, 3)
	r := s.Dial(t)
	rid := strings.TrimSuffix(strings.TrimPrefix(r.Do("CLIENT", "ID"), ":"), "\r\n")
	require.Equal(t, "+OK\r\n", a.Do("CLIENT", "TRACKING", "on", "REDIRECT", rid))
	require.Equal(t, "_\r\n", a.Do("GET", "k"))
	c := s.Client(t, 2)
	info := c.Info(ctx, "clients", "stats").Val()
	require.Contains(t, info, "tracking_clients:1\r\n")
	require.Contains(t, info, "tracking_total_keys:1\r\ntracking_total_items:1\r\ntracking_total_prefixes:0\r\n")
	require.Contains(t, c.ClientList(ctx).Val(), "flags=t db=0")
	require.Contains(t, c.ClientList(ctx).Val(), "redir="+rid+" resp=3")
	require.Equal(t, "+OK\r\n", r.Do("QUIT"))
	require.Eventually(t, func() bool { return !strings.Contains(c.ClientList(ctx).Val(), "id="+rid+" ") }, 5*time.Second, 5*time.Millisecond)
	c.Set(ctx, "k", "v", 0)
	require.Equal(t, ">2\r\n$21\r\ntracking-redir-broken\r\n:"+rid+"\r\n", a.ReadReply())
	require.Contains(t, a.Do("CLIENT", "TRACKINGINFO"), "broken_redirect")
	require.Contains(t, c.ClientList(ctx).Val(), "flags=tR db=0")
	require.Equal(t, ":"+rid+"\r\n", a.Do("CLIENT", "GETREDIR"))
}

// TestTrackingTableLimit: past tracking-table-max-keys, keys are dropped from the table and
// their clients told, as if the keys changed; lowering the limit applies at once.
func TestTrackingTableLimit(t *testing.T) {
	s := testutil.StartServer(t)
	a := rawProto(t, s, 3)
	require.Equal(t, "+OK\r\n", a.Do("CLIENT", "TRACKING", "on"))
	for i := range 50 {
		a.Do("GET", "key"+strconv.Itoa(i))
	}
	c := s.Client(t, 2)
	require.Contains(t, c.Info(ctx, "stats").Val(), "tracking_total_keys:50\r\n")
	require.NoError(t, c.ConfigSet(ctx, "tracking-table-max-keys", "10").Err())
	seen := map[string]bool{}
	for range 40 {
		push := a.ReadReply()
		require.True(t, strings.HasPrefix(push, ">2\r\n$10\r\ninvalidate\r\n*1\r\n"), push)
		seen[push] = true
	}
	require.Len(t, seen, 40, "each evicted key once")
	require.Contains(t, c.Info(ctx, "stats").Val(), "tracking_total_keys:10\r\n")
	// Reads past the limit evict too; the eviction's push and the reply may come in either
	// order (Redis evicts before the next command).
	got := []string{a.Do("GET", "another"), a.ReadReply()}
	if got[0] == "_\r\n" {
		got[0], got[1] = got[1], got[0]
	}
	require.True(t, strings.HasPrefix(got[0], ">2\r\n$10\r\ninvalidate\r\n"), got)
	require.Equal(t, "_\r\n", got[1])
	require.Equal(t, "+PONG\r\n", a.Do("PING"))
}

// TestTrackingExpiryInvalidates: a key that expires (in the active cycle) is invalidated, in
// the default and the BCAST mode.
func TestTrackingExpiryInvalidates(t *testing.T) {
	eachProto(t, func(t *testing.T, s *testutil.Server, proto int) {
		r := s.Dial(t)
		rid := strings.TrimSuffix(strings.TrimPrefix(r.Do("CLIENT", "ID"), ":"), "\r\n")
		r.Do("SUBSCRIBE", "__redis__:invalidate")
		a := rawProto(t, s, proto)
		require.Equal(t, "+OK\r\n", a.Do("CLIENT", "TRACKING", "on", "BCAST", "REDIRECT", rid, "NOLOOP"))
		a.Do("SET", "mykey", "v", "PX", "20") // its own write: NOLOOP
		a.Do("SET", "other", "v")
		require.Equal(t, "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$5\r\nmykey\r\n", r.ReadReply())
	})
}

// TestTrackingUnblockedMoveReplyFirst: a client blocked in BLMOVE that tracks the destination
// gets BLMOVE's reply before the invalidation its own move causes, as in Redis.
func TestTrackingUnblockedMoveReplyFirst(t *testing.T) {
	s := testutil.StartServer(t)
	a := rawProto(t, s, 3)
	a.Do("RPUSH", "dst{t}", "a")
	require.Equal(t, "+OK\r\n", a.Do("CLIENT", "TRACKING", "on"))
	a.Do("LRANGE", "dst{t}", "0", "-1")
	a.Send("*6\r\n$6\r\nBLMOVE\r\n$6\r\nsrc{t}\r\n$6\r\ndst{t}\r\n$4\r\nLEFT\r\n$4\r\nLEFT\r\n$1\r\n0\r\n")
	c := s.Client(t, 2)
	blockedClients(t, c, 1)
	c.RPush(ctx, "src{t}", "foo")
	require.Equal(t, "$3\r\nfoo\r\n", a.ReadReply())
	require.Equal(t, ">2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\ndst{t}\r\n", a.ReadReply())
}

// TestTrackingManyClients: invalidations reach every tracking client, once each, while
// writers run concurrently.
func TestTrackingManyClients(t *testing.T) {
	s := testutil.StartServer(t)
	const n = 20
	var clients []*testutil.Raw
	for range n {
		a := rawProto(t, s, 3)
		require.Equal(t, "+OK\r\n", a.Do("CLIENT", "TRACKING", "on"))
		a.Do("MGET", "x", "y")
		clients = append(clients, a)
	}
	c := s.Client(t, 2)
	c.MSet(ctx, "x", "1", "y", "2")
	for i, a := range clients {
		got := []string{a.ReadReply(), a.ReadReply()}
		require.ElementsMatch(t, []string{
			">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nx\r\n",
			">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ny\r\n",
		}, got, fmt.Sprint("client ", i))
		require.Equal(t, "+PONG\r\n", a.Do("PING"))
	}
}

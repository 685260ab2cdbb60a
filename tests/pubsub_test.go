package tests

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// Pub/sub between connections: delivery, pattern and shard channels, the RESP2 subscribed
// mode and RESP3 pushes, ordering, and the output buffer limit that protects the server from a
// slow subscriber. The single-connection replies are compared with Redis in
// testdata/compat/pubsub.txt.

// pushHead is the header of a pub/sub message of n elements in proto.
func pushHead(proto, n int) string {
	if proto == 3 {
		return fmt.Sprintf(">%d\r\n", n)
	}
	return fmt.Sprintf("*%d\r\n", n)
}

func bulk(s string) string { return fmt.Sprintf("$%d\r\n%s\r\n", len(s), s) }

func msgBytes(proto int, kind string, parts ...string) string {
	var b strings.Builder
	b.WriteString(pushHead(proto, len(parts)+1))
	b.WriteString(bulk(kind))
	for _, p := range parts {
		if strings.HasPrefix(p, ":") {
			b.WriteString(p + "\r\n")
		} else {
			b.WriteString(bulk(p))
		}
	}
	return b.String()
}

func eachProto(t *testing.T, fn func(t *testing.T, s *testutil.Server, proto int), args ...string) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			fn(t, testutil.StartServer(t, args...), proto)
		})
	}
}

func TestPubSubDelivery(t *testing.T) {
	eachProto(t, func(t *testing.T, s *testutil.Server, proto int) {
		sub := rawProto(t, s, proto)
		pub := s.Client(t, 2)
		sub.Send("*3\r\n$9\r\nSUBSCRIBE\r\n$2\r\nc1\r\n$2\r\nc2\r\n")
		require.Equal(t, msgBytes(proto, "subscribe", "c1", ":1"), sub.ReadReply())
		require.Equal(t, msgBytes(proto, "subscribe", "c2", ":2"), sub.ReadReply())
		require.Equal(t, msgBytes(proto, "psubscribe", "c*", ":3"), sub.Do("PSUBSCRIBE", "c*"))
		require.Equal(t, msgBytes(proto, "ssubscribe", "s1", ":1"), sub.Do("SSUBSCRIBE", "s1"))

		// A channel and a matching pattern: two deliveries, counted twice.
		require.EqualValues(t, 2, pub.Publish(ctx, "c1", "hello").Val())
		require.Equal(t, msgBytes(proto, "message", "c1", "hello"), sub.ReadReply())
		require.Equal(t, msgBytes(proto, "pmessage", "c*", "c1", "hello"), sub.ReadReply())
		require.EqualValues(t, 1, pub.Publish(ctx, "cx", "only the pattern").Val())
		require.Equal(t, msgBytes(proto, "pmessage", "c*", "cx", "only the pattern"), sub.ReadReply())
		require.EqualValues(t, 0, pub.Publish(ctx, "other", "nobody").Val())
		// Shard channels ignore patterns and are separate from channels of the same name.
		require.EqualValues(t, 1, pub.SPublish(ctx, "s1", "sharded").Val())
		require.Equal(t, msgBytes(proto, "smessage", "s1", "sharded"), sub.ReadReply())
		require.EqualValues(t, 0, pub.SPublish(ctx, "c1", "x").Val())
		// Binary-safe payloads.
		payload := "a\r\nb\x00c"
		require.EqualValues(t, 2, pub.Publish(ctx, "c2", payload).Val())
		require.Equal(t, msgBytes(proto, "message", "c2", payload), sub.ReadReply())
		require.Equal(t, msgBytes(proto, "pmessage", "c*", "c2", payload), sub.ReadReply())

		// Introspection from another connection.
		require.ElementsMatch(t, []string{"c1", "c2"}, pub.PubSubChannels(ctx, "*").Val())
		require.Equal(t, []string{"c1"}, pub.PubSubChannels(ctx, "*1").Val())
		require.Equal(t, map[string]int64{"c1": 1, "zz": 0}, pub.PubSubNumSub(ctx, "c1", "zz").Val())
		require.EqualValues(t, 1, pub.PubSubNumPat(ctx).Val())
		require.Equal(t, []string{"s1"}, pub.PubSubShardChannels(ctx, "*").Val())
		require.Equal(t, map[string]int64{"s1": 1}, pub.PubSubShardNumSub(ctx, "s1").Val())
		info := pub.Info(ctx, "stats").Val()
		require.Contains(t, info, "pubsub_channels:2\r\npubsub_patterns:1\r\npubsubshard_channels:1\r\n")
		list := pub.ClientList(ctx).Val()
		require.Contains(t, list, "flags=P db=0 sub=2 psub=1 ssub=1")

		// UNSUBSCRIBE without arguments: every channel, in subscription order; patterns stay.
		sub.Send("*1\r\n$11\r\nUNSUBSCRIBE\r\n")
		require.Equal(t, msgBytes(proto, "unsubscribe", "c1", ":2"), sub.ReadReply())
		require.Equal(t, msgBytes(proto, "unsubscribe", "c2", ":1"), sub.ReadReply())
		require.EqualValues(t, 1, pub.Publish(ctx, "c1", "pattern only").Val())
		require.Equal(t, msgBytes(proto, "pmessage", "c*", "c1", "pattern only"), sub.ReadReply())
		require.Equal(t, msgBytes(proto, "punsubscribe", "c*", ":0"), sub.Do("PUNSUBSCRIBE"))
		require.Equal(t, msgBytes(proto, "sunsubscribe", "s1", ":0"), sub.Do("SUNSUBSCRIBE"))
		require.EqualValues(t, 0, pub.Publish(ctx, "c1", "gone").Val())
		require.EqualValues(t, 0, pub.PubSubNumPat(ctx).Val())
		// Out of pub/sub mode: ordinary replies again.
		require.Equal(t, "+PONG\r\n", sub.Do("PING"))
	})
}

func TestPubSubRESP2Mode(t *testing.T) {
	s := testutil.StartServer(t)
	sub := s.Dial(t)
	require.Equal(t, msgBytes(2, "subscribe", "ch", ":1"), sub.Do("SUBSCRIBE", "ch"))
	require.Equal(t, "*2\r\n$4\r\npong\r\n$0\r\n\r\n", sub.Do("PING"))
	require.Equal(t, "*2\r\n$4\r\npong\r\n$3\r\nabc\r\n", sub.Do("PING", "abc"))
	require.Equal(t, "-ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
		sub.Do("GET", "x"))
	require.Equal(t, "-ERR Can't execute 'client|id': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context\r\n",
		sub.Do("CLIENT", "ID"))
	// Unknown commands and arity errors come first, as in Redis.
	require.True(t, strings.HasPrefix(sub.Do("NOSUCH"), "-ERR unknown command 'NOSUCH'"))
	require.Equal(t, "+RESET\r\n", sub.Do("RESET"))
	require.Equal(t, "+PONG\r\n", sub.Do("PING"))
	require.EqualValues(t, 0, s.Client(t, 2).Publish(ctx, "ch", "x").Val(), "RESET drops subscriptions")
	require.Equal(t, msgBytes(2, "subscribe", "ch", ":1"), sub.Do("SUBSCRIBE", "ch"))
	require.Equal(t, "+OK\r\n", sub.Do("QUIT"))
	require.True(t, sub.ReadEOF())
}

func TestPubSubRESP3AllowsCommands(t *testing.T) {
	s := testutil.StartServer(t)
	sub := rawProto(t, s, 3)
	require.Equal(t, msgBytes(3, "subscribe", "ch", ":1"), sub.Do("SUBSCRIBE", "ch"))
	require.Equal(t, "+OK\r\n", sub.Do("SET", "k", "v"))
	require.Equal(t, "$1\r\nv\r\n", sub.Do("GET", "k"))
	require.Equal(t, "+PONG\r\n", sub.Do("PING"))
	// A message the connection publishes to itself precedes its PUBLISH reply, as in Redis.
	require.Equal(t, msgBytes(3, "message", "ch", "me"), sub.Do("PUBLISH", "ch", "me"))
	require.Equal(t, ":1\r\n", sub.ReadReply())
	// Messages from others interleave with replies at message boundaries only.
	pub := s.Client(t, 2)
	require.EqualValues(t, 1, pub.Publish(ctx, "ch", "other").Val())
	require.Equal(t, msgBytes(3, "message", "ch", "other"), sub.ReadReply())
	require.Equal(t, "$1\r\nv\r\n", sub.Do("GET", "k"))
}

// TestPubSubOrdering: one subscriber sees one publisher's messages in publish order, and two
// subscribers of the same channels see concurrent publishers' messages in the same order.
func TestPubSubOrdering(t *testing.T) {
	eachProto(t, func(t *testing.T, s *testutil.Server, proto int) {
		const perPublisher = 2000
		subs := []*redis.Client{s.Client(t, proto), s.Client(t, proto)}
		var pss []*redis.PubSub
		for _, c := range subs {
			ps := c.Subscribe(ctx, "order")
			_, err := ps.Receive(ctx)
			require.NoError(t, err)
			t.Cleanup(func() { _ = ps.Close() })
			pss = append(pss, ps)
		}
		var wg sync.WaitGroup
		for p := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := s.Client(t, 2)
				pipe := c.Pipeline()
				for i := range perPublisher {
					pipe.Publish(ctx, "order", fmt.Sprintf("%d:%d", p, i))
					if i%100 == 99 {
						_, err := pipe.Exec(ctx)
						if err != nil {
							t.Error(err)
							return
						}
					}
				}
			}()
		}
		got := make([][]string, len(pss))
		var rg sync.WaitGroup
		for i, ps := range pss {
			rg.Add(1)
			go func() {
				defer rg.Done()
				ch := ps.Channel(redis.WithChannelSize(10000))
				for len(got[i]) < 3*perPublisher {
					select {
					case m := <-ch:
						got[i] = append(got[i], m.Payload)
					case <-time.After(10 * time.Second):
						t.Errorf("subscriber %d: %d messages, then nothing", i, len(got[i]))
						return
					}
				}
			}()
		}
		wg.Wait()
		rg.Wait()
		require.Equal(t, got[0], got[1], "both subscribers see one order")
		next := [3]int{}
		for _, m := range got[0] {
			p, _ := strconv.Atoi(m[:1])
			i, _ := strconv.Atoi(m[2:])
			require.Equal(t, next[p], i, "publisher %d's messages out of order", p)
			next[p]++
		}
	})
}

// TestPubSubRepliesInterleave: a RESP3 subscriber that pipelines commands while messages
// arrive gets every reply in order and every message whole.
func TestPubSubRepliesInterleave(t *testing.T) {
	s := testutil.StartServer(t)
	sub := rawProto(t, s, 3)
	require.Equal(t, msgBytes(3, "subscribe", "ch", ":1"), sub.Do("SUBSCRIBE", "ch"))
	const n = 3000
	done := make(chan struct{})
	go func() {
		defer close(done)
		c := s.Client(t, 2)
		for i := range n {
			c.Publish(ctx, "ch", strconv.Itoa(i))
		}
	}()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "*2\r\n$4\r\nECHO\r\n$%d\r\n%d\r\n", len(strconv.Itoa(i)), i)
	}
	sub.Send(b.String())
	replies, msgs := 0, 0
	for replies < n || msgs < n {
		r := sub.ReadReply()
		if strings.HasPrefix(r, ">") {
			require.Equal(t, msgBytes(3, "message", "ch", strconv.Itoa(msgs)), r)
			msgs++
			continue
		}
		require.Equal(t, bulk(strconv.Itoa(replies)), r)
		replies++
	}
	<-done
}

// TestPubSubSlowSubscriberHardLimit: a subscriber that never reads is disconnected once its
// unsent output reaches the hard limit; the publisher never waits for it, and the server
// counts the disconnection.
func TestPubSubSlowSubscriberHardLimit(t *testing.T) {
	s := testutil.StartServer(t, "--client-output-buffer-limit", "pubsub 256kb 0 0")
	nc, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer nc.Close()
	// A tiny receive buffer so that the kernel holds little for the client.
	_ = nc.(*net.TCPConn).SetReadBuffer(4096)
	_, err = nc.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nslow\r\n"))
	require.NoError(t, err)
	pub := s.Client(t, 2)
	require.Eventually(t, func() bool { return pub.PubSubNumSub(ctx, "slow").Val()["slow"] == 1 }, 5*time.Second, 10*time.Millisecond)
	payload := strings.Repeat("x", 16*1024)
	start := time.Now()
	var sent int
	for sent = 0; sent < 2000; sent++ {
		n := pub.Publish(ctx, "slow", payload).Val()
		if n == 0 {
			break
		}
	}
	require.Less(t, sent, 2000, "the slow subscriber was never disconnected")
	require.Less(t, time.Since(start), 10*time.Second, "publishing must not wait for the subscriber")
	require.Eventually(t, func() bool {
		return strings.Contains(pub.Info(ctx, "stats").Val(), "client_output_buffer_limit_disconnections:1\r\n")
	}, 5*time.Second, 10*time.Millisecond)
	require.EqualValues(t, 0, pub.PubSubNumSub(ctx, "slow").Val()["slow"])
	// The server closed its side: the subscriber is gone from CLIENT LIST. (What the kernel
	// still holds for the client drains at its own pace.)
	require.NotContains(t, pub.ClientList(ctx).Val(), "cmd=subscribe")
}

// TestPubSubSlowSubscriberSoftLimit: over the soft limit for longer than soft-seconds also
// disconnects; a subscriber that reads stays.
func TestPubSubSlowSubscriberSoftLimit(t *testing.T) {
	s := testutil.StartServer(t, "--client-output-buffer-limit", "pubsub 0 64kb 1")
	nc, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer nc.Close()
	_ = nc.(*net.TCPConn).SetReadBuffer(4096)
	_, err = nc.Write([]byte("*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nsoft\r\n"))
	require.NoError(t, err)
	good := s.Client(t, 3).Subscribe(ctx, "soft")
	_, err = good.Receive(ctx)
	require.NoError(t, err)
	defer good.Close()
	pub := s.Client(t, 2)
	require.Eventually(t, func() bool { return pub.PubSubNumSub(ctx, "soft").Val()["soft"] == 2 }, 5*time.Second, 10*time.Millisecond)
	payload := strings.Repeat("y", 8*1024)
	ch := good.Channel(redis.WithChannelSize(100000))
	deadline := time.Now().Add(15 * time.Second)
	for pub.PubSubNumSub(ctx, "soft").Val()["soft"] == 2 {
		require.True(t, time.Now().Before(deadline), "the slow subscriber stayed over the soft limit")
		pub.Publish(ctx, "soft", payload)
		time.Sleep(5 * time.Millisecond)
	}
	require.EqualValues(t, 1, pub.PubSubNumSub(ctx, "soft").Val()["soft"], "the reading subscriber stays")
	require.EqualValues(t, 1, pub.Publish(ctx, "soft", "last").Val())
	for m := range ch {
		if m.Payload == "last" {
			break
		}
	}
}

func TestPubSubClientListAndKill(t *testing.T) {
	s := testutil.StartServer(t)
	sub := s.Dial(t)
	sub.Do("SUBSCRIBE", "a")
	c := s.Client(t, 2)
	list, err := c.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(list, "\n"))
	list, err = c.Do(ctx, "CLIENT", "LIST", "TYPE", "normal").Text()
	require.NoError(t, err)
	require.NotContains(t, list, "flags=P")
	require.EqualValues(t, 1, c.ClientKillByFilter(ctx, "TYPE", "pubsub").Val())
	require.True(t, sub.ReadEOF())
	require.Eventually(t, func() bool { return c.PubSubNumSub(ctx, "a").Val()["a"] == 0 }, 5*time.Second, 10*time.Millisecond,
		"a closed connection's subscriptions go")
}

func TestClientReply(t *testing.T) {
	eachProto(t, func(t *testing.T, s *testutil.Server, proto int) {
		r := rawProto(t, s, proto)
		r.Send("*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$3\r\nOFF\r\n")
		r.Send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n")
		r.Send("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
		r.Send("*1\r\n$7\r\nNOTACMD\r\n")
		// Pushes are never dropped: the subscription is confirmed.
		require.Equal(t, msgBytes(proto, "subscribe", "ch", ":1"), r.Do("SUBSCRIBE", "ch"))
		if proto == 2 {
			require.Equal(t, msgBytes(2, "unsubscribe", "ch", ":0"), r.Do("UNSUBSCRIBE", "ch"))
		}
		require.Equal(t, "+OK\r\n", r.Do("CLIENT", "REPLY", "ON"))
		require.Equal(t, "$1\r\nv\r\n", r.Do("GET", "k"))
		// SKIP drops the next reply only.
		r.Send("*3\r\n$6\r\nCLIENT\r\n$5\r\nREPLY\r\n$4\r\nSKIP\r\n")
		r.Send("*2\r\n$4\r\nECHO\r\n$7\r\nskipped\r\n")
		require.Equal(t, "$4\r\nseen\r\n", r.Do("ECHO", "seen"))
		require.Equal(t, "-ERR syntax error\r\n", r.Do("CLIENT", "REPLY", "MAYBE"))
	})
}

// TestPubSubBusyChannelDoesNotStarveReplies: while a channel keeps a RESP3 subscriber's
// writer busy, the subscriber's own replies still go out, queued behind the messages
// before them.
func TestPubSubBusyChannelDoesNotStarveReplies(t *testing.T) {
	s := testutil.StartServer(t)
	sub := rawProto(t, s, 3)
	require.Equal(t, msgBytes(3, "subscribe", "busy", ":1"), sub.Do("SUBSCRIBE", "busy"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := s.Client(t, 2)
			for {
				select {
				case <-stop:
					return
				default:
					c.Publish(ctx, "busy", strings.Repeat("m", 512))
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	for i := range 20 {
		sub.Send("*2\r\n$4\r\nECHO\r\n$" + strconv.Itoa(len(strconv.Itoa(i))) + "\r\n" + strconv.Itoa(i) + "\r\n")
		deadline := time.Now().Add(5 * time.Second)
		for {
			r := sub.ReadReply()
			if !strings.HasPrefix(r, ">") {
				require.Equal(t, bulk(strconv.Itoa(i)), r)
				break
			}
			require.True(t, time.Now().Before(deadline), "no reply among the messages")
		}
	}
}

package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// Keyspace notifications (notify-keyspace-events): the events each command publishes, with
// Redis 7.0's names and order (read from its source: every notifyKeyspaceEvent call), on
// __keyevent@<db>__:<event> and __keyspace@<db>__:<key>.

// eventLog subscribes to a pattern and returns a function that reads the next n messages as
// "channel payload" lines.
func eventLog(t *testing.T, c *redis.Client, pattern string) func(n int) []string {
	t.Helper()
	ps := c.PSubscribe(ctx, pattern)
	_, err := ps.Receive(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ps.Close() })
	ch := ps.Channel(redis.WithChannelSize(1000))
	return func(n int) []string {
		t.Helper()
		var out []string
		for len(out) < n {
			select {
			case m := <-ch:
				out = append(out, m.Channel+" "+m.Payload)
			case <-time.After(5 * time.Second):
				t.Fatalf("got %d of %d events: %q", len(out), n, out)
			}
		}
		return out
	}
}

// expectEvents runs fn and checks the keyevent messages it publishes, "event key" each.
func expectEvents(t *testing.T, next func(int) []string, c *redis.Client, want []string, fn func()) {
	t.Helper()
	fn()
	// A marker event ends the batch, so that an unexpected extra event shows up as a mismatch.
	c.Set(ctx, "__marker__", "1", 0)
	got := next(len(want) + 1)
	var trimmed []string
	for _, g := range got {
		trimmed = append(trimmed, strings.TrimPrefix(g, "__keyevent@0__:"))
	}
	require.Equal(t, append(append([]string{}, want...), "set __marker__"), trimmed)
}

func TestKeyspaceEvents(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "EA").Err())
		next := eventLog(t, s.Client(t, 3), "__keyevent@0__:*")
		ev := func(want []string, fn func()) { t.Helper(); expectEvents(t, next, c, want, fn) }

		// Strings.
		ev([]string{"set k", "expire k"}, func() { c.Set(ctx, "k", "v", time.Hour) })
		ev([]string{"set k"}, func() { c.SetNX(ctx, "k", "v", 0); c.Set(ctx, "k", "w", 0) })
		ev([]string{"set a", "set b"}, func() { c.MSet(ctx, "a", "1", "b", "2") })
		ev([]string{"incrby n", "incrby n", "incrbyfloat n"}, func() {
			c.Incr(ctx, "n")
			c.DecrBy(ctx, "n", 5)
			c.IncrByFloat(ctx, "n", 1.5)
		})
		ev([]string{"append s", "setrange s", "setbit s"}, func() {
			c.Append(ctx, "s", "abc")
			c.SetRange(ctx, "s", 1, "x")
			c.SetRange(ctx, "s", 1, "") // nothing set: no event
			c.SetBit(ctx, "s", 0, 1)
			c.SetBit(ctx, "s", 0, 1) // unchanged: no event
		})
		ev([]string{"set g", "del g"}, func() { c.GetSet(ctx, "g", "1"); c.GetDel(ctx, "g") })
		ev([]string{"set x", "expire x", "persist x"}, func() {
			c.Set(ctx, "x", "1", 0)
			c.GetEx(ctx, "x", time.Hour)
			c.Persist(ctx, "x")
			c.Persist(ctx, "x") // no TTL: no event
		})

		// Keyspace.
		ev([]string{"del a", "del b"}, func() { c.Del(ctx, "a", "b", "missing") })
		ev([]string{"expire x", "del x"}, func() {
			c.Expire(ctx, "x", time.Hour)
			c.ExpireAt(ctx, "x", time.Unix(1, 0)) // in the past: deleted now
		})
		ev([]string{"set r", "rename_from r", "rename_to r2"}, func() {
			c.Set(ctx, "r", "1", 0)
			c.Rename(ctx, "r", "r2")
		})
		ev([]string{"copy_to r3", "move_from r3"}, func() {
			c.Copy(ctx, "r2", "r3", 0, false)
			c.Move(ctx, "r3", 1) // move_to goes to database 1's channel
		})

		// Lists, with the del of an emptied list.
		ev([]string{"lpush l", "rpush l", "linsert l", "lset l", "lpop l", "lpush l2", "rpop l", "lrem l", "ltrim l", "del l"}, func() {
			c.LPush(ctx, "l", "a", "b")
			c.RPush(ctx, "l", "c")
			c.LInsertBefore(ctx, "l", "a", "z")
			c.LSet(ctx, "l", 0, "y")
			c.LPop(ctx, "l")
			c.RPopLPush(ctx, "l", "l2")
			c.LRem(ctx, "l", 0, "a")
			c.LTrim(ctx, "l", 1, 0)
		})
		ev([]string{"lpop l2", "del l2"}, func() { c.LPop(ctx, "l2") })

		// Sets.
		ev([]string{"sadd st", "srem st", "spop st", "sinterstore st2", "srem st", "del st", "sadd st3"}, func() {
			c.SAdd(ctx, "st", "a", "b", "c")
			c.SAdd(ctx, "st", "a") // nothing added: no event
			c.SRem(ctx, "st", "a", "zz")
			c.SPop(ctx, "st")
			c.SInterStore(ctx, "st2", "st")
			m := c.SMembers(ctx, "st").Val()
			c.SMove(ctx, "st", "st3", m[0])
		})

		// Sorted sets.
		ev([]string{"zadd z", "zincr z", "zrem z", "zremrangebyscore z", "zpopmin z", "del z"}, func() {
			c.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"}, redis.Z{Score: 3, Member: "c"}, redis.Z{Score: 4, Member: "d"})
			c.ZIncrBy(ctx, "z", 1, "a")
			c.ZRem(ctx, "z", "b")
			c.ZRemRangeByScore(ctx, "z", "3", "3")
			c.ZPopMin(ctx, "z", 5)
		})

		// Hashes.
		ev([]string{"hset h", "hset h", "hincrby h", "hincrbyfloat h", "hdel h", "del h"}, func() {
			c.HSet(ctx, "h", "f", "1")
			c.HSetNX(ctx, "h", "g", "2")
			c.HSetNX(ctx, "h", "g", "3") // exists: no event
			c.HIncrBy(ctx, "h", "f", 2)
			c.HIncrByFloat(ctx, "h", "f", 0.5)
			c.HDel(ctx, "h", "f", "g")
		})

		// FLUSHALL and SWAPDB publish nothing of their own, as in Redis.
		ev(nil, func() { c.FlushAll(ctx) })
	})
}

func TestKeyspaceEventsKeyspaceChannelAndClasses(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	next := eventLog(t, s.Client(t, 2), "__key*@*")
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "KEl").Err())
	c.Set(ctx, "k", "v", 0) // strings are off
	c.LPush(ctx, "l", "a")
	require.Equal(t, []string{"__keyspace@0__:l lpush", "__keyevent@0__:lpush l"}, next(2))
	// MOVE publishes move_to on the destination database's channels.
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Kg").Err())
	c.Move(ctx, "l", 5)
	require.Equal(t, []string{"__keyspace@0__:l move_from", "__keyspace@5__:l move_to"}, next(2))
	// "new" and "keymiss" are only published when asked for (A does not include them).
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Enm").Err())
	c.Set(ctx, "fresh", "1", 0)
	c.Set(ctx, "fresh", "2", 0)
	c.Get(ctx, "nokey")
	require.Equal(t, []string{"__keyevent@0__:new fresh", "__keyevent@0__:keymiss nokey"}, next(2))
	require.Equal(t, "nEm", c.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"])
}

func TestKeyspaceEventsExpired(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err())
	next := eventLog(t, s.Client(t, 2), "*")
	// Lazily, on access, at the server clock's time.
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", "1700000000000").Err())
	c.Set(ctx, "lazy", "v", 100*time.Millisecond)
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", "1000").Err())
	require.Equal(t, redis.Nil, c.Get(ctx, "lazy").Err())
	require.Equal(t, []string{"__keyevent@0__:expired lazy"}, next(1))
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "RESET").Err())
	// Actively, by the expiry cycle, without any access.
	c.Set(ctx, "active", "v", 50*time.Millisecond)
	require.Equal(t, []string{"__keyevent@0__:expired active"}, next(1))
}

// TestKeyspaceEventsBlockedPop: a BLPOP served by a push publishes the pop on the pusher's
// behalf, after the push, as Redis serves blocked clients.
func TestKeyspaceEventsBlockedPop(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "El$g").Err())
	next := eventLog(t, s.Client(t, 2), "__keyevent@0__:*")
	done := make(chan []string)
	go func() { done <- s.Client(t, 2).BLPop(ctx, 5*time.Second, "bl").Val() }()
	blockedClients(t, c, 1)
	c.RPush(ctx, "bl", "x")
	require.Equal(t, []string{"bl", "x"}, <-done)
	require.Equal(t, []string{"__keyevent@0__:rpush bl", "__keyevent@0__:lpop bl", "__keyevent@0__:del bl"}, next(3))
}

// TestKeyspaceEventsStreams follows Redis's stream events: a consumer created by XGROUP
// CREATECONSUMER, XREADGROUP or XCLAIM notifies, deleting a missing consumer does not.
func TestKeyspaceEventsStreams(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Et").Err())
	next := eventLog(t, s.Client(t, 3), "__keyevent@0__:*")
	require.NoError(t, c.ConfigSet(ctx, "notify-keyspace-events", "Et$").Err()) // $ for the marker
	ev := func(want []string, fn func()) { t.Helper(); expectEvents(t, next, c, want, fn) }
	ev([]string{"xgroup-create x", "xgroup-createconsumer x", "xadd x", "xgroup-createconsumer x",
		"xgroup-createconsumer x", "xgroup-delconsumer x"}, func() {
		c.XGroupCreateMkStream(ctx, "x", "g", "$")
		c.XGroupCreateConsumer(ctx, "x", "g", "Bob")
		c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "1-1", Values: []string{"f", "v"}})
		c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "Alice", Streams: []string{"x", ">"}})
		c.Do(ctx, "XCLAIM", "x", "g", "Mike", 0, "1-1", "FORCE")
		c.XGroupDelConsumer(ctx, "x", "g", "Lee") // missing: no event
		c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: "x", Group: "g", Consumer: "Bob", Start: "1-1"})
		c.XGroupDelConsumer(ctx, "x", "g", "Bob")
	})
	ev([]string{"xadd x", "xtrim x", "xadd x", "xdel x", "xtrim x", "xsetid x", "xgroup-setid x", "xgroup-destroy x"}, func() {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "2-1", MaxLen: 1, Values: []string{"f", "v"}})
		c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "3-1", Values: []string{"f", "v"}})
		c.XDel(ctx, "x", "2-1", "9-9")
		c.XDel(ctx, "x", "9-9") // nothing deleted: no event
		c.XTrimMaxLen(ctx, "x", 0)
		c.XTrimMaxLen(ctx, "x", 0) // nothing trimmed: no event
		c.Do(ctx, "XSETID", "x", "5-0")
		c.XGroupSetID(ctx, "x", "g", "0")
		c.XGroupDestroy(ctx, "x", "g")
	})
}

package tests

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/testutil"
)

// Entries go in with explicit, ms-* and generated IDs, and come back in ID order from XRANGE and
// XREVRANGE, with exclusive bounds and COUNT; XDEL and XTRIM remove them; the 7.0 metadata
// follows; other types get WRONGTYPE.
func TestStreamBasics(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		require.Equal(t, "1-1", c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"a", "1"}}).Val())
		require.Equal(t, "1-2", c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-*", Values: []string{"b", "2"}}).Val())
		require.Equal(t, fmt.Sprintf("%d-0", testutil.T0), c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"c", "3"}}).Val())
		require.Equal(t, fmt.Sprintf("%d-1", testutil.T0), c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"d", "4"}}).Val())
		require.EqualError(t, c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-5", Values: []string{"x", "y"}}).Err(),
			"ERR The ID specified in XADD is equal or smaller than the target stream top item")
		require.EqualValues(t, 4, c.XLen(ctx, "s").Val())
		msgs := c.XRange(ctx, "s", "-", "+").Val()
		require.Len(t, msgs, 4)
		require.Equal(t, "1-1", msgs[0].ID)
		require.Equal(t, map[string]any{"a": "1"}, msgs[0].Values)
		require.Equal(t, []string{"1-2"}, ids(c.XRange(ctx, "s", "(1-1", "(1700000000000-0").Val()))
		require.Equal(t, []string{"1700000000000-1", "1700000000000-0"}, ids(c.XRevRangeN(ctx, "s", "+", "-", 2).Val()))
		require.EqualValues(t, 1, c.XDel(ctx, "s", "1-2", "9-9").Val())
		require.EqualValues(t, 1, c.XTrimMaxLen(ctx, "s", 2).Val())
		require.Equal(t, []string{"1700000000000-0", "1700000000000-1"}, ids(c.XRange(ctx, "s", "-", "+").Val()))
		info := c.XInfoStream(ctx, "s").Val()
		require.EqualValues(t, 2, info.Length)
		require.Equal(t, "1700000000000-1", info.LastGeneratedID)
		require.Equal(t, "1-2", info.MaxDeletedEntryID)
		require.EqualValues(t, 4, info.EntriesAdded)
		require.Equal(t, "1700000000000-0", info.RecordedFirstEntryID)
		require.Equal(t, "stream", c.Type(ctx, "s").Val())
		require.Equal(t, "stream", c.ObjectEncoding(ctx, "s").Val())

		c.Set(ctx, "str", "v", 0)
		for _, cmd := range [][]any{{"XADD", "str", "*", "a", "1"}, {"XRANGE", "str", "-", "+"}, {"XLEN", "str"},
			{"XREAD", "STREAMS", "str", "0"}, {"XGROUP", "CREATE", "str", "g", "0"}} {
			require.ErrorContains(t, c.Do(ctx, cmd...).Err(), "WRONGTYPE", "%v", cmd)
		}
		require.ErrorContains(t, c.LPush(ctx, "s", "x").Err(), "WRONGTYPE")

		// XREAD replies an array of [key, entries] in RESP2 and a map in RESP3.
		raw := s.Dial(t)
		if c.Options().Protocol == 3 {
			raw.Do("HELLO", "3")
			require.Equal(t, "%1\r\n$1\r\ns\r\n*1\r\n*2\r\n$15\r\n1700000000000-1\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n",
				raw.Do("XREAD", "STREAMS", "s", "1700000000000-0"))
			require.Equal(t, "_\r\n", raw.Do("XREAD", "STREAMS", "s", "$"))
		} else {
			require.Equal(t, "*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$15\r\n1700000000000-1\r\n*2\r\n$1\r\nd\r\n$1\r\n4\r\n",
				raw.Do("XREAD", "STREAMS", "s", "1700000000000-0"))
			require.Equal(t, "*-1\r\n", raw.Do("XREAD", "STREAMS", "s", "$"))
		}
	})
}

func ids(msgs []redis.XMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.ID
	}
	return out
}

// Approximate trimming removes whole nodes only, as Redis's listpacks are split by
// stream-node-max-entries; exact trimming removes exactly.
func TestStreamTrimNodes(t *testing.T) {
	s := testutil.StartServer(t, "--stream-node-max-entries", "10")
	c := s.Client(t, 2)
	for i := 1; i <= 95; i++ {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: fmt.Sprintf("%d-0", i), Values: []string{"f", "v"}})
	}
	require.EqualValues(t, 10, c.XInfoStream(ctx, "s").Val().RadixTreeKeys)
	require.EqualValues(t, 80, c.XTrimMaxLenApprox(ctx, "s", 12, 0).Val(), "8 whole nodes of 10")
	require.EqualValues(t, 15, c.XLen(ctx, "s").Val())
	require.EqualValues(t, 3, c.XTrimMaxLen(ctx, "s", 12).Val())
	require.EqualValues(t, 7, c.XTrimMinIDApprox(ctx, "s", "95", 0).Val(), "the node of 81..90, less the 3 trimmed")
	require.EqualValues(t, 0, c.XTrimMinIDApprox(ctx, "s", "95", 0).Val(), "no whole node below 95 left")
	require.EqualValues(t, 4, c.XTrimMinID(ctx, "s", "95").Val())
	require.Equal(t, []string{"95-0"}, ids(c.XRange(ctx, "s", "-", "+").Val()))
	require.EqualValues(t, 1, c.XTrimMaxLenApprox(ctx, "s", 0, 0).Val(), "the last node, with its deleted entries")
	require.EqualValues(t, 0, c.XLen(ctx, "s").Val())
	require.EqualValues(t, 1, c.Exists(ctx, "s").Val(), "an empty stream stays")
}

// Clients blocked in XREAD are all served by the XADD that passes their IDs; one whose ID is
// ahead keeps waiting; a timeout replies a null array; BLOCK 0 waits for ever.
func TestStreamBlockingXRead(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "5-0", Values: []string{"old", "1"}})
		type res struct {
			v   any
			err error
		}
		read := func(args ...any) chan res {
			ch := make(chan res, 1)
			cl := s.Client(t, c.Options().Protocol)
			go func() {
				v, err := cl.Do(ctx, args...).Result()
				ch <- res{v, err}
			}()
			return ch
		}
		a := read("XREAD", "BLOCK", 0, "STREAMS", "other", "s", "0", "$")
		blockedClients(t, c, 1)
		b := read("XREAD", "COUNT", 1, "BLOCK", 0, "STREAMS", "s", "5-0")
		blockedClients(t, c, 2)
		ahead := read("XREAD", "BLOCK", 0, "STREAMS", "s", "100-0")
		blockedClients(t, c, 3)
		time.Sleep(50 * time.Millisecond) // BLOCK 0 does not time out
		blockedClients(t, c, 3)
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "6-0", Values: []string{"new", "2"}})
		for _, ch := range []chan res{a, b} {
			r := <-ch
			require.NoError(t, r.err)
			require.Contains(t, fmt.Sprint(r.v), "6-0")
			require.NotContains(t, fmt.Sprint(r.v), "5-0")
		}
		blockedClients(t, c, 1)
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "101-0", Values: []string{"f", "v"}})
		r := <-ahead
		require.NoError(t, r.err)
		require.Contains(t, fmt.Sprint(r.v), "101-0")

		start := time.Now()
		r = <-read("XREAD", "BLOCK", 100, "STREAMS", "s", "$")
		require.ErrorIs(t, r.err, redis.Nil, "a timeout replies a null array")
		require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
		raw := s.Dial(t)
		require.Equal(t, "*-1\r\n", raw.Do("XREAD", "BLOCK", "10", "STREAMS", "s", "$"))
		blockedClients(t, c, 0)

		// Inside MULTI a blocking read does not block.
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Do(ctx, "XREAD", "BLOCK", 0, "STREAMS", "s", "$")
			return nil
		})
		require.ErrorIs(t, err, redis.Nil)
		require.Len(t, cmds, 1)
	})
}

// Clients blocked in XREADGROUP on one group are served in the order they blocked: the first
// takes the new entries, the next waits for more; each read is recorded in the PEL.
func TestStreamBlockingXReadGroupFIFO(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.XGroupCreateMkStream(ctx, "s", "g", "$").Err())
	const n = 4
	got := make([]chan []redis.XStream, n)
	for i := range n {
		got[i] = make(chan []redis.XStream, 1)
		cl := s.Client(t, 2)
		go func() {
			v, _ := cl.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: fmt.Sprintf("c%d", i),
				Streams: []string{"s", ">"}, Block: 0}).Result()
			got[i] <- v
		}()
		blockedClients(t, c, i+1)
	}
	for i := range n {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: fmt.Sprintf("%d-0", i+1), Values: []string{"i", fmt.Sprint(i)}})
		v := <-got[i]
		require.Len(t, v, 1)
		require.Equal(t, []string{fmt.Sprintf("%d-0", i+1)}, ids(v[0].Messages), "client %d", i)
		blockedClients(t, c, n-1-i)
	}
	pending := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "s", Group: "g", Start: "-", End: "+", Count: 10}).Val()
	require.Len(t, pending, n)
	for i, p := range pending {
		require.Equal(t, fmt.Sprintf("c%d", i), p.Consumer)
		require.EqualValues(t, 1, p.RetryCount)
	}
}

// A blocked XREADGROUP fails once its stream or group is gone, as Redis 7.0 does, and is served
// by a stream renamed onto its key that has its group.
func TestStreamBlockingXReadGroupUnblocked(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		block := func(key string) chan error {
			ch := make(chan error, 1)
			cl := s.Client(t, c.Options().Protocol)
			go func() {
				ch <- cl.Do(ctx, "XREADGROUP", "GROUP", "g", "alice", "BLOCK", 0, "STREAMS", key, ">").Err()
			}()
			blockedClients(t, c, 1)
			return ch
		}
		setup := func() {
			c.Del(ctx, "s")
			require.NoError(t, c.XGroupCreateMkStream(ctx, "s", "g", "$").Err())
		}
		for _, tc := range []struct {
			name string
			do   func()
			want string
		}{
			{"DEL", func() { c.Del(ctx, "s") }, "UNBLOCKED the stream key no longer exists"},
			{"SET", func() { c.Set(ctx, "s", "x", 0) }, "UNBLOCKED the stream key no longer exists"},
			{"FLUSHALL", func() { c.FlushAll(ctx) }, "UNBLOCKED the stream key no longer exists"},
			{"EXPIRE", func() { c.PExpire(ctx, "s", time.Millisecond); time.Sleep(5 * time.Millisecond); c.Exists(ctx, "s") },
				"UNBLOCKED the stream key no longer exists"},
			{"DESTROY", func() { c.XGroupDestroy(ctx, "s", "g") }, "NOGROUP the consumer group this client was blocked on no longer exists"},
			{"RENAME without the group", func() {
				c.XAdd(ctx, &redis.XAddArgs{Stream: "s2", ID: "1-0", Values: []string{"f", "v"}})
				c.Rename(ctx, "s2", "s")
			}, "NOGROUP the consumer group this client was blocked on no longer exists"},
		} {
			setup()
			ch := block("s")
			tc.do()
			require.EqualError(t, <-ch, tc.want, tc.name)
			blockedClients(t, c, 0)
		}

		// A stream renamed onto the key, with the group, serves the client.
		setup()
		got := make(chan []redis.XStream, 1)
		cl := s.Client(t, c.Options().Protocol)
		go func() {
			v, _ := cl.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{"s", ">"}, Block: 0}).Result()
			got <- v
		}()
		blockedClients(t, c, 1)
		require.NoError(t, c.XGroupCreateMkStream(ctx, "s2", "g", "$").Err())
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s2", ID: "100-0", Values: []string{"f1", "v1"}})
		require.NoError(t, c.Rename(ctx, "s2", "s").Err())
		v := <-got
		require.Len(t, v, 1)
		require.Equal(t, "s", v[0].Stream)
		require.Equal(t, []string{"100-0"}, ids(v[0].Messages))

		// A blocked XREAD is not disturbed by its key's deletion: it waits for the next stream.
		ch := make(chan []redis.XStream, 1)
		go func() {
			v, _ := cl.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "$"}, Block: 0}).Result()
			ch <- v
		}()
		blockedClients(t, c, 1)
		c.Del(ctx, "s")
		c.Set(ctx, "s", "x", 0)
		c.Del(ctx, "s")
		blockedClients(t, c, 1)
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "100-0", Values: []string{"a", "b"}}) // not past its $ (100-0)
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "200-0", Values: []string{"a", "b"}})
		require.Equal(t, []string{"200-0"}, ids((<-ch)[0].Messages))
	})
}

// Consumer groups at a frozen clock: delivery times, counts and idle times are exact.
func TestStreamConsumerGroups(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		setClock := func(ms int64) {
			require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", ms).Err())
		}
		setClock(testutil.T0)
		for i := 1; i <= 5; i++ {
			c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: fmt.Sprintf("%d-0", i), Values: []string{"n", fmt.Sprint(i)}})
		}
		require.NoError(t, c.XGroupCreate(ctx, "s", "g", "0").Err())
		require.ErrorContains(t, c.XGroupCreate(ctx, "s", "g", "0").Err(), "BUSYGROUP")
		v := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{"s", ">"}, Count: 2}).Val()
		require.Equal(t, []string{"1-0", "2-0"}, ids(v[0].Messages))
		setClock(testutil.T0 + 1000)
		v = c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "bob", Streams: []string{"s", ">"}}).Val()
		require.Equal(t, []string{"3-0", "4-0", "5-0"}, ids(v[0].Messages))
		setClock(testutil.T0 + 3000)
		sum := c.XPending(ctx, "s", "g").Val()
		require.EqualValues(t, 5, sum.Count)
		require.Equal(t, "1-0", sum.Lower)
		require.Equal(t, "5-0", sum.Higher)
		require.Equal(t, map[string]int64{"alice": 2, "bob": 3}, sum.Consumers)
		ext := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "s", Group: "g", Start: "-", End: "+", Count: 10, Idle: 2500 * time.Millisecond}).Val()
		require.Len(t, ext, 2)
		require.Equal(t, "alice", ext[0].Consumer)
		require.Equal(t, 3*time.Second, ext[0].Idle)

		// History: an explicit ID rereads the consumer's own PEL and counts the delivery.
		v = c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "alice", Streams: []string{"s", "0"}}).Val()
		require.Equal(t, []string{"1-0", "2-0"}, ids(v[0].Messages))
		ext = c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "s", Group: "g", Start: "-", End: "+", Count: 1}).Val()
		require.EqualValues(t, 2, ext[0].RetryCount)
		require.Zero(t, ext[0].Idle)

		require.EqualValues(t, 2, c.XAck(ctx, "s", "g", "1-0", "3-0", "9-0").Val())
		setClock(testutil.T0 + 10000)
		claimed := c.XClaimJustID(ctx, &redis.XClaimArgs{Stream: "s", Group: "g", Consumer: "carol", MinIdle: 8 * time.Second,
			Messages: []string{"2-0", "4-0", "9-0"}}).Val()
		require.Equal(t, []string{"4-0"}, claimed, "2-0 was delivered again at +3000: idle 7 s")
		msgs, cursor := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: "s", Group: "g", Consumer: "dave", MinIdle: time.Second, Start: "0", Count: 1}).Val()
		require.Equal(t, []string{"2-0"}, ids(msgs))
		require.Equal(t, "4-0", cursor)
		c.XDel(ctx, "s", "5-0")
		_, cursor, deleted := xautoclaim(t, c, "s", "g", "dave", 0, "0")
		require.Equal(t, "0-0", cursor)
		require.Equal(t, []string{"5-0"}, deleted)

		groups := c.XInfoGroups(ctx, "s").Val()
		require.Len(t, groups, 1)
		require.EqualValues(t, 2, groups[0].Pending)
		require.Equal(t, "5-0", groups[0].LastDeliveredID)
		require.EqualValues(t, 5, groups[0].EntriesRead)
		require.EqualValues(t, 0, groups[0].Lag)
		consumers := c.XInfoConsumers(ctx, "s", "g").Val()
		require.Len(t, consumers, 4)
		names := []string{}
		for _, con := range consumers {
			names = append(names, con.Name)
		}
		require.Equal(t, []string{"alice", "bob", "carol", "dave"}, names)
		require.Equal(t, 7*time.Second, consumers[0].Idle, "alice was last seen reading her history at +3000")
		require.Equal(t, 9*time.Second, consumers[1].Idle, "bob was last seen at +1000")
		require.Zero(t, consumers[3].Idle)
	})
}

// xautoclaim runs XAUTOCLAIM ... JUSTID and returns the claimed IDs, the cursor and the IDs of
// deleted entries it dropped (the third element, new in 7.0).
func xautoclaim(t *testing.T, c *redis.Client, key, group, consumer string, minIdle int, start string) (claimed []string, cursor string, deleted []string) {
	t.Helper()
	v, err := c.Do(ctx, "XAUTOCLAIM", key, group, consumer, minIdle, start, "JUSTID").Slice()
	require.NoError(t, err)
	require.Len(t, v, 3)
	for _, x := range v[1].([]any) {
		claimed = append(claimed, x.(string))
	}
	for _, x := range v[2].([]any) {
		deleted = append(deleted, x.(string))
	}
	return claimed, v[0].(string), deleted
}

// streamState is what a client sees of every stream: its entries, and XINFO STREAM FULL without
// the node layout (radix-tree-keys and -nodes), which a replay that trims exactly may shape
// differently.
func streamState(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var out []string
	keys := c.Keys(ctx, "*").Val()
	sort.Strings(keys)
	for _, k := range keys {
		if c.Type(ctx, k).Val() != "stream" {
			continue
		}
		entries := c.XRange(ctx, k, "-", "+").Val()
		full, err := c.Do(ctx, "XINFO", "STREAM", k, "FULL", "COUNT", 0).Result()
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("%s %v ttl=%v %s", k, entries, c.PExpireTime(ctx, k).Val(), dropLayout(full)))
	}
	return out
}

// dropLayout renders an XINFO STREAM FULL reply without its radix-tree fields.
func dropLayout(v any) string {
	var pairs []any
	switch m := v.(type) {
	case []any:
		pairs = m
	case map[any]any:
		for k, x := range m {
			pairs = append(pairs, k, x)
		}
	}
	var parts []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if k := fmt.Sprint(pairs[i]); !strings.HasPrefix(k, "radix-tree") {
			parts = append(parts, fmt.Sprintf("%s=%v", k, pairs[i+1]))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// streamInfoWithoutTimes renders an XINFO STREAM FULL reply (RESP2) without the radix-tree fields,
// the consumers' seen-time and the pending entries' delivery times (see dbState).
func streamInfoWithoutTimes(v any) string {
	var walk func(v any, key string) any
	walk = func(v any, key string) any {
		arr, ok := v.([]any)
		if !ok {
			return v
		}
		switch key {
		case "pending": // [id, consumer, time, count] or [id, time, count]
			out := make([]any, len(arr))
			for i, p := range arr {
				e := append([]any(nil), p.([]any)...)
				e[len(e)-2] = "-"
				out[i] = e
			}
			return out
		}
		isMap := len(arr)%2 == 0 && len(arr) > 0
		for i := 0; isMap && i < len(arr); i += 2 {
			if _, ok := arr[i].(string); !ok {
				isMap = false
			}
		}
		out := make([]any, 0, len(arr))
		for i := 0; i < len(arr); i++ {
			if isMap && i%2 == 0 {
				k := arr[i].(string)
				if strings.HasPrefix(k, "radix-tree") || k == "seen-time" {
					i++
					continue
				}
				out = append(out, k, walk(arr[i+1], k))
				i++
				continue
			}
			out = append(out, walk(arr[i], ""))
		}
		return out
	}
	return fmt.Sprint(walk(v, ""))
}

// fillStreams builds streams with deleted and trimmed entries, XSETID metadata, groups with
// consumers and pending entries (read, claimed, redelivered, acknowledged), at moving times.
func fillStreams(t *testing.T, c *redis.Client) {
	clock := func(ms int64) { require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", ms).Err()) }
	clock(testutil.T0)
	for i := range 300 {
		c.XAdd(ctx, &redis.XAddArgs{Stream: "s", Values: []string{"i", fmt.Sprint(i), "pad", strings.Repeat("x", i%20)}})
		if i%50 == 49 {
			clock(testutil.T0 + int64(i))
		}
	}
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", MaxLen: 250, Approx: true, Values: []string{"trim", "1"}})
	c.XTrimMinIDApprox(ctx, "s", fmt.Sprintf("%d-0", testutil.T0+149), 0)
	c.XDel(ctx, "s", fmt.Sprintf("%d-3", testutil.T0+199))
	require.NoError(t, c.XGroupCreate(ctx, "s", "g1", "0").Err())
	require.NoError(t, c.XGroupCreate(ctx, "s", "g2", "$").Err())
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "alice", Streams: []string{"s", ">"}, Count: 20})
	clock(testutil.T0 + 5000)
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "bob", Streams: []string{"s", ">"}, Count: 10, NoAck: true})
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "bob", Streams: []string{"s", ">"}, Count: 5})
	clock(testutil.T0 + 9000)
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "alice", Streams: []string{"s", "0"}, Count: 3})
	first := c.XRangeN(ctx, "s", "-", "+", 25).Val()
	c.XAck(ctx, "s", "g1", first[0].ID, first[1].ID)
	c.XClaim(ctx, &redis.XClaimArgs{Stream: "s", Group: "g1", Consumer: "carol", MinIdle: time.Second, Messages: []string{first[5].ID, first[6].ID}})
	c.Do(ctx, "XCLAIM", "s", "g1", "erin", 0, first[7].ID, "RETRYCOUNT", 9, "IDLE", 500, "JUSTID")
	c.XDel(ctx, "s", first[8].ID)
	c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: "s", Group: "g1", Consumer: "dave", MinIdle: 8 * time.Second, Start: "-", Count: 4})
	c.XGroupCreateConsumer(ctx, "s", "g2", "idle")
	c.XGroupCreateConsumer(ctx, "s", "g2", "gone")
	c.XGroupDelConsumer(ctx, "s", "g2", "gone")
	c.XAdd(ctx, &redis.XAddArgs{Stream: "empty", ID: "5-5", Values: []string{"a", "b"}})
	c.XDel(ctx, "empty", "5-5")
	c.Do(ctx, "XSETID", "meta", "1-1") // no such key
	c.XAdd(ctx, &redis.XAddArgs{Stream: "meta", ID: "3-3", Values: []string{"a", "b"}})
	c.Do(ctx, "XSETID", "meta", "90-0", "ENTRIESADDED", 40, "MAXDELETEDID", "7-0")
	c.XAdd(ctx, &redis.XAddArgs{Stream: "ttl", ID: "1-1", Values: []string{"a", "b"}})
	c.PExpireAt(ctx, "ttl", time.UnixMilli(testutil.T0+1000000))
	require.NoError(t, c.XGroupCreateMkStream(ctx, "made", "g", "$").Err())
}

// Streams come back whole after a restart from a snapshot (SAVE, BGSAVE) and from the
// append-only log: entries, metadata, groups, consumers with their seen times, pending entries
// with their owners, delivery times and counts.
func TestStreamRestart(t *testing.T) {
	restartThroughEachWay(t, fillStreams, streamState, func(t *testing.T, c *redis.Client, before []string) {
		require.Len(t, before, 5)
		require.Contains(t, before[3], "[name g1 last-delivered-id")
	})
}

// Expiry works on streams like on any key.
func TestStreamExpiry(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
	c.XAdd(ctx, &redis.XAddArgs{Stream: "s", ID: "1-1", Values: []string{"a", "b"}})
	require.True(t, c.PExpire(ctx, "s", 100*time.Millisecond).Val())
	require.EqualValues(t, 100, c.PTTL(ctx, "s").Val().Milliseconds())
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "ADVANCE", 101).Err())
	require.EqualValues(t, 0, c.XLen(ctx, "s").Val())
	require.EqualValues(t, 0, c.Exists(ctx, "s").Val())
}

// The effects of stream writes are time-free command lines, and replaying them rebuilds the
// same streams.
func TestStreamEffects(t *testing.T) {
	s := testutil.StartServer(t, "--stream-node-max-entries", "2")
	log := &effectLog{}
	s.StoreForTest().Journal = log
	c := s.Client(t, 2).Conn()
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
	expect := func(want []string, args ...any) {
		t.Helper()
		n := log.len()
		doOK(t, c, args...)
		var got []string
		for _, e := range log.since(n) {
			got = append(got, fmt.Sprintf("%d: %s", e.DB, effectString(e)))
		}
		require.Equal(t, want, got, "%v", args)
	}
	t0 := fmt.Sprint(testutil.T0)
	expect([]string{"0: XADD s " + t0 + "-0 a 1"}, "XADD", "s", "*", "a", 1)
	expect([]string{"0: XADD s " + t0 + "-1 b 2"}, "XADD", "s", t0+"-*", "b", 2)
	expect(nil, "XADD", "s", "5-0", "c", 3) // an error
	expect(nil, "XADD", "nokey", "NOMKSTREAM", "*", "c", 3)
	expect([]string{"0: XADD s " + t0 + "-2 c 3"}, "XADD", "s", "MAXLEN", "5", "*", "c", 3) // nothing to trim
	// Nodes of two entries: [0 1] [2 3] [4]; ~ removes whole nodes, journaled as the length left.
	expect([]string{"0: XADD s MAXLEN = 2 " + t0 + "-3 d 4"}, "XADD", "s", "MAXLEN", "~", "1", "*", "d", 4)
	expect([]string{"0: XADD s MAXLEN = 1 " + t0 + "-4 e 5"}, "XADD", "s", "MAXLEN", "~", "1", "*", "e", 5)
	doOK(t, c, "XADD", "s", "*", "f", 6)
	doOK(t, c, "XADD", "s", "*", "g", 7)
	expect([]string{"0: XTRIM s MAXLEN 2"}, "XTRIM", "s", "MAXLEN", "2")
	expect(nil, "XTRIM", "s", "MAXLEN", "2")
	expect([]string{"0: XTRIM s MAXLEN = 1"}, "XTRIM", "s", "MINID", "~", t0+"-6")
	expect([]string{"0: XDEL s " + t0 + "-6 1-1"}, "XDEL", "s", t0+"-6", "1-1")
	expect(nil, "XDEL", "s", "1-1")
	expect([]string{"0: XGROUP CREATE s g " + t0 + "-6 MKSTREAM"}, "XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
	expect([]string{"0: XGROUP SETID s g 0 ENTRIESREAD 0"}, "XGROUP", "SETID", "s", "g", "0", "ENTRIESREAD", "0")
	doOK(t, c, "XADD", "s", "100000000000000-0", "h", 8)
	id := "100000000000000-0"
	expect([]string{
		"0: XGROUP CREATECONSUMER s g alice",
		"0: XCLAIM s g alice 0 " + id + " TIME " + t0 + " RETRYCOUNT 1 FORCE JUSTID LASTID " + id,
		"0: XGROUP SETID s g " + id + " ENTRIESREAD 1",
	}, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
	expect(nil, "XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", ">")
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+500).Err())
	expect([]string{"0: XCLAIM s g alice 0 " + id + " TIME " + fmt.Sprint(testutil.T0+500) + " RETRYCOUNT 2 FORCE JUSTID LASTID " + id},
		"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "s", "0")
	expect([]string{
		"0: XGROUP CREATECONSUMER s g bob",
		"0: XCLAIM s g bob 0 " + id + " TIME " + fmt.Sprint(testutil.T0+400) + " RETRYCOUNT 3 FORCE JUSTID LASTID " + id,
	}, "XCLAIM", "s", "g", "bob", "0", id, "IDLE", "100")
	expect([]string{"0: XACK s g " + id}, "XACK", "s", "g", id)
	expect(nil, "XACK", "s", "g", id)
	expect([]string{"0: XGROUP CREATECONSUMER s g carol"}, "XGROUP", "CREATECONSUMER", "s", "g", "carol")
	expect([]string{"0: XGROUP DELCONSUMER s g carol"}, "XGROUP", "DELCONSUMER", "s", "g", "carol")
	expect([]string{"0: XSETID s 200000000000000-0"}, "XSETID", "s", "200000000000000-0")
	expect([]string{"0: XGROUP DESTROY s g"}, "XGROUP", "DESTROY", "s", "g")
	expect(nil, "XGROUP", "DESTROY", "s", "g")
	checkTimeFree(t, log.all())

	// A blocked XREADGROUP's reads are journaled right after the XADD that served it.
	doOK(t, c, "XGROUP", "CREATE", "s", "g", "$")
	got := make(chan any, 1)
	cl := s.Client(t, 2)
	go func() {
		v, _ := cl.Do(ctx, "XREADGROUP", "GROUP", "g", "zed", "BLOCK", 0, "STREAMS", "s", ">").Result()
		got <- v
	}()
	blockedClients(t, s.Client(t, 2), 1)
	expect([]string{
		"0: XADD s 300000000000000-0 z 1",
		"0: XGROUP CREATECONSUMER s g zed",
		"0: XCLAIM s g zed 0 300000000000000-0 TIME " + fmt.Sprint(testutil.T0+500) + " RETRYCOUNT 1 FORCE JUSTID LASTID 300000000000000-0",
		"0: XGROUP SETID s g 300000000000000-0 ENTRIESREAD 9",
	}, "XADD", "s", "300000000000000-0", "z", 1)
	require.Contains(t, fmt.Sprint(<-got), "300000000000000-0")
	checkTimeFree(t, log.all())

	// Replayed at the times they were journaled at (as the append-only log is), the effects
	// rebuild the same streams, delivery times and seen times included.
	b := testutil.StartServer(t, "--stream-node-max-entries", "2")
	cb := b.Client(t, 2).Conn()
	for _, e := range log.all() {
		require.NoError(t, cb.Do(ctx, "DEBUG", "CLOCK", "SET", e.Time).Err())
		replay(t, cb, []store.Effect{e})
	}
	require.Equal(t, streamState(t, s.Client(t, 2)), streamState(t, b.Client(t, 2)))
}

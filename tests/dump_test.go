package tests

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// fillDumpTypes writes one key of each type, in small and large encodings.
func fillDumpTypes(t *testing.T, c *redis.Client) {
	t.Helper()
	big := make([]any, 0, 600)
	for i := range 300 {
		big = append(big, i*7, i)
	}
	require.NoError(t, c.Set(ctx, "str", "hello", 0).Err())
	require.NoError(t, c.Set(ctx, "int", 12345, 0).Err())
	require.NoError(t, c.Set(ctx, "long", strings.Repeat("0123456789", 500), 0).Err())
	require.NoError(t, c.RPush(ctx, "list", "a", 1, "-300", "hello").Err())
	require.NoError(t, c.RPush(ctx, "biglist", big...).Err())
	require.NoError(t, c.SAdd(ctx, "intset", 1, 2, 70000).Err())
	require.NoError(t, c.SAdd(ctx, "set", "a", "b", 3).Err())
	require.NoError(t, c.SAdd(ctx, "bigset", big...).Err())
	require.NoError(t, c.HSet(ctx, "hash", "f", "v", "n", 12).Err())
	require.NoError(t, c.HSet(ctx, "bighash", big...).Err())
	require.NoError(t, c.ZAdd(ctx, "zset", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 2, Member: "b"}).Err())
	zs := make([]redis.Z, 300)
	for i := range zs {
		zs[i] = redis.Z{Score: float64(i) / 3, Member: i}
	}
	require.NoError(t, c.ZAdd(ctx, "bigzset", zs...).Err())
}

var dumpKeys = []string{"str", "int", "long", "list", "biglist", "intset", "set", "bigset", "hash", "bighash", "zset", "bigzset"}

// dumpState describes every dump key's type, encoding and contents, comparably across servers,
// one line per key.
func dumpState(t *testing.T, c *redis.Client) []string {
	t.Helper()
	var lines []string
	for _, k := range dumpKeys {
		typ := c.Type(ctx, k).Val()
		out := []string{k, typ, c.ObjectEncoding(ctx, k).Val()}
		switch typ {
		case "string":
			out = append(out, c.Get(ctx, k).Val())
		case "list":
			out = append(out, c.LRange(ctx, k, 0, -1).Val()...)
		case "set":
			out = append(out, c.Sort(ctx, k, &redis.Sort{Alpha: true}).Val()...)
		case "hash":
			m := c.HGetAll(ctx, k).Val()
			for _, f := range slices.Sorted(maps.Keys(m)) {
				out = append(out, f, m[f])
			}
		case "zset":
			for _, z := range c.ZRangeWithScores(ctx, k, 0, -1).Val() {
				out = append(out, z.Member.(string), strconv.FormatFloat(z.Score, 'g', -1, 64))
			}
		}
		line := strings.Join(out, " ")
		if len(line) > 200 {
			line = fmt.Sprintf("%s... (%d bytes, fnv %x)", line[:60], len(line), fnv64(line))
		}
		lines = append(lines, line)
	}
	return lines
}

func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}

// TestDumpRestoreWithRedis moves every type both ways between Redis 7 and HotKV with DUMP and
// RESTORE: each side restores what the other dumped into the same values and encodings.
func TestDumpRestoreWithRedis(t *testing.T) {
	red := redis.NewClient(&redis.Options{Addr: startCompatRedis(t), Protocol: 2})
	t.Cleanup(func() { _ = red.Close() })
	hot := testutil.StartServer(t).Client(t, 2)
	fillDumpTypes(t, red)
	fillDumpTypes(t, hot)
	want := dumpState(t, red)
	require.Equal(t, want, dumpState(t, hot), "the two servers start alike")

	for _, way := range []struct {
		name     string
		from, to *redis.Client
	}{{"redis to hotkv", red, hot}, {"hotkv to redis", hot, red}} {
		for _, k := range dumpKeys {
			payload, err := way.from.Dump(ctx, k).Result()
			require.NoError(t, err, "%s: DUMP %s", way.name, k)
			require.NoError(t, way.to.RestoreReplace(ctx, k, 0, payload).Err(), "%s: RESTORE %s", way.name, k)
		}
		require.Equal(t, want, dumpState(t, way.to), way.name)
	}
}

func TestRestoreOptions(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
		c.Set(ctx, "foo", "bar", 0)
		p := c.Dump(ctx, "foo").Val()
		require.Equal(t, redis.Nil, c.Dump(ctx, "nokey").Err())

		require.EqualError(t, c.Restore(ctx, "foo", 0, p).Err(), "BUSYKEY Target key name already exists.")
		require.NoError(t, c.RestoreReplace(ctx, "foo", 3*time.Second, p).Err())
		require.Equal(t, 3*time.Second, c.PTTL(ctx, "foo").Val())
		require.NoError(t, c.Do(ctx, "RESTORE", "foo", testutil.T0+5000, p, "REPLACE", "ABSTTL").Err())
		require.Equal(t, 5*time.Second, c.PTTL(ctx, "foo").Val())
		// An absolute time already past deletes the key it replaces and creates nothing.
		require.NoError(t, c.Do(ctx, "RESTORE", "foo", testutil.T0-1, p, "REPLACE", "ABSTTL").Err())
		require.Equal(t, int64(0), c.Exists(ctx, "foo").Val())

		require.NoError(t, c.Do(ctx, "RESTORE", "idle", 0, p, "IDLETIME", 1000).Err())
		require.Equal(t, 1000*time.Second, c.ObjectIdleTime(ctx, "idle").Val())

		for _, tc := range []struct {
			args []any
			err  string
		}{
			{[]any{"k", -1, p}, "ERR Invalid TTL value, must be >= 0"},
			{[]any{"k", "x", p}, "ERR value is not an integer or out of range"},
			{[]any{"k", 0, p, "BOGUS"}, "ERR syntax error"},
			{[]any{"k", 0, p, "IDLETIME", -1}, "ERR Invalid IDLETIME value, must be >= 0"},
			{[]any{"k", 0, p, "FREQ", 256}, "ERR Invalid FREQ value, must be >= 0 and <= 255"},
			{[]any{"k", 0, p, "IDLETIME", 1, "FREQ", 1}, "ERR syntax error"},
			{[]any{"k", 0, "garbage"}, "ERR DUMP payload version or checksum are wrong"},
			{[]any{"k", 0, p[:len(p)-1] + "x"}, "ERR DUMP payload version or checksum are wrong"},
		} {
			require.EqualError(t, c.Do(ctx, append([]any{"RESTORE"}, tc.args...)...).Err(), tc.err, "%v", tc.args)
		}
	})
}

func TestRestoreSurvivesRestart(t *testing.T) {
	restartThroughEachWay(t, func(t *testing.T, c *redis.Client) {
		fillDumpTypes(t, c)
		for _, k := range dumpKeys {
			p := c.Dump(ctx, k).Val()
			require.NoError(t, c.Restore(ctx, k+":copy", 0, p).Err())
		}
		p := c.Dump(ctx, "str").Val()
		require.NoError(t, c.Restore(ctx, "ttl", time.Hour, p).Err())
	}, func(t *testing.T, c *redis.Client) []string {
		out := dumpState(t, c)
		for _, k := range dumpKeys {
			out = append(out, c.Dump(ctx, k+":copy").Val())
		}
		return append(out, c.PTTL(ctx, "ttl").Val().String())
	}, nil)
}

// TestDumpKeepsHashFieldTTLs: a hash with field TTLs goes through DUMP/RESTORE (HotKV's own
// payload type) with its TTLs, and fields whose time passed meanwhile are gone.
func TestDumpKeepsHashFieldTTLs(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
	c.HSet(ctx, "h", "a", 1, "b", 2, "c", 3)
	require.NoError(t, c.Do(ctx, "HPEXPIRE", "h", 1000, "FIELDS", 1, "a").Err())
	require.NoError(t, c.Do(ctx, "HPEXPIRE", "h", 5000, "FIELDS", 1, "b").Err())
	p := c.Dump(ctx, "h").Val()
	require.NoError(t, c.Restore(ctx, "copy", 0, p).Err())
	v, err := c.Do(ctx, "HPTTL", "copy", "FIELDS", 3, "a", "b", "c").Result()
	require.NoError(t, err)
	require.Equal(t, []any{int64(1000), int64(5000), int64(-1)}, v)
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+2000).Err())
	require.NoError(t, c.Restore(ctx, "later", 0, p).Err())
	require.Equal(t, map[string]string{"b": "2", "c": "3"}, c.HGetAll(ctx, "later").Val())
}

// TestDumpStream: streams, groups and pending entries included, go through DUMP/RESTORE
// (HotKV's own payload type); Redis refuses that payload rather than misreading it.
func TestDumpStream(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "1-1", Values: []string{"f", "v"}})
	c.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "2-1", Values: []string{"g", "w"}})
	c.XGroupCreate(ctx, "x", "grp", "0")
	c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "grp", Consumer: "alice", Streams: []string{"x", ">"}, Count: 1})
	p := c.Dump(ctx, "x").Val()
	require.NoError(t, c.Restore(ctx, "y", 0, p).Err())
	require.Equal(t, c.XRange(ctx, "x", "-", "+").Val(), c.XRange(ctx, "y", "-", "+").Val())
	require.Equal(t, c.XInfoGroups(ctx, "x").Val(), c.XInfoGroups(ctx, "y").Val())
	require.Equal(t, int64(1), c.XPending(ctx, "y", "grp").Val().Count)

	red := redis.NewClient(&redis.Options{Addr: startCompatRedis(t)})
	t.Cleanup(func() { _ = red.Close() })
	require.Error(t, red.Restore(ctx, "x", 0, p).Err(), "Redis must refuse HotKV's private payload")
}

// TestRestoreRedisStream: a stream with consumer groups and pending entries, DUMPed by Redis 7,
// restores into HotKV with the same entries, counters, groups and pending entries.
func TestRestoreRedisStream(t *testing.T) {
	red := redis.NewClient(&redis.Options{Addr: startCompatRedis(t), Protocol: 2})
	t.Cleanup(func() { _ = red.Close() })
	hot := testutil.StartServer(t).Client(t, 2)
	for i := 1; i <= 300; i++ {
		fields := []any{"f", i, "g", "v"}
		if i%7 == 0 {
			fields = []any{"other", i} // different fields than the node's master entry
		}
		red.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: fmt.Sprintf("%d-%d", 1000+i/3, i%3), Values: fields})
	}
	red.XDel(ctx, "x", "1010-0", "1020-1")
	red.XGroupCreate(ctx, "x", "g1", "0")
	red.XGroupCreate(ctx, "x", "g2", "$")
	red.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "alice", Streams: []string{"x", ">"}, Count: 5})
	red.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g1", Consumer: "bob", Streams: []string{"x", ">"}, Count: 3})
	red.XAck(ctx, "x", "g1", "1000-1")
	red.XGroupCreateConsumer(ctx, "x", "g2", "carol")
	red.XTrimMaxLen(ctx, "x", 250)

	p, err := red.Dump(ctx, "x").Result()
	require.NoError(t, err)
	require.NoError(t, hot.Restore(ctx, "x", 0, p).Err())
	require.Equal(t, red.XRange(ctx, "x", "-", "+").Val(), hot.XRange(ctx, "x", "-", "+").Val())
	require.Equal(t, red.XInfoGroups(ctx, "x").Val(), hot.XInfoGroups(ctx, "x").Val())
	for _, g := range []string{"g1", "g2"} {
		rp := red.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "x", Group: g, Start: "-", End: "+", Count: 100}).Val()
		hp := hot.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "x", Group: g, Start: "-", End: "+", Count: 100}).Val()
		require.Equal(t, len(rp), len(hp), g)
		for i := range rp {
			require.Equal(t, rp[i].ID, hp[i].ID)
			require.Equal(t, rp[i].Consumer, hp[i].Consumer)
			require.Equal(t, rp[i].RetryCount, hp[i].RetryCount)
		}
	}
	ri, hi := red.XInfoStream(ctx, "x").Val(), hot.XInfoStream(ctx, "x").Val()
	require.Equal(t, ri.Length, hi.Length)
	require.Equal(t, ri.LastGeneratedID, hi.LastGeneratedID)
	require.Equal(t, ri.MaxDeletedEntryID, hi.MaxDeletedEntryID)
	require.Equal(t, ri.EntriesAdded, hi.EntriesAdded)
	require.Equal(t, ri.RecordedFirstEntryID, hi.RecordedFirstEntryID)
}

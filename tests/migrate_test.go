package tests

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

// hostPort splits a server's address for MIGRATE's host and port arguments.
func hostPort(t *testing.T, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return h, p
}

// TestMigrateBetweenHotKVs moves every type, with TTLs, from one HotKV to another, by key and
// with KEYS, with COPY and REPLACE, and checks each outcome on both sides.
func TestMigrateBetweenHotKVs(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, src *testutil.Server, c *redis.Client) {
		dst := testutil.StartServer(t)
		d := dst.Client(t, 2)
		host, port := hostPort(t, dst.Addr)
		fillDumpTypes(t, c)
		want := dumpState(t, c)
		require.NoError(t, c.PExpire(ctx, "str", time.Hour).Err())

		// One key, into database 0 of the target.
		require.Equal(t, "OK", c.Do(ctx, "MIGRATE", host, port, "str", 0, 1000).Val())
		require.Equal(t, int64(0), c.Exists(ctx, "str").Val())
		require.Equal(t, "hello", d.Get(ctx, "str").Val())
		ttl := d.PTTL(ctx, "str").Val()
		require.True(t, ttl > 59*time.Minute && ttl <= time.Hour, "TTL carried over: %v", ttl)

		// The rest with KEYS; missing keys in the list are skipped.
		args := []any{"MIGRATE", host, port, "", 0, 1000, "KEYS", "nosuchkey"}
		for _, k := range dumpKeys[1:] {
			args = append(args, k)
		}
		require.Equal(t, "OK", c.Do(ctx, args...).Val())
		require.Equal(t, int64(0), c.DBSize(ctx).Val())
		require.Equal(t, want, dumpState(t, d))

		// Nothing left to move.
		require.Equal(t, "NOKEY", c.Do(ctx, "MIGRATE", host, port, "str", 0, 1000).Val())

		// An existing key on the target: BUSYKEY without REPLACE, kept here; COPY+REPLACE keeps
		// the source and overwrites the target.
		require.NoError(t, c.Set(ctx, "str", "again", 0).Err())
		err := c.Do(ctx, "MIGRATE", host, port, "str", 0, 1000).Err()
		require.EqualError(t, err, "ERR Target instance replied with error: BUSYKEY Target key name already exists.")
		require.Equal(t, "again", c.Get(ctx, "str").Val())
		require.Equal(t, "OK", c.Do(ctx, "MIGRATE", host, port, "str", 0, 1000, "COPY", "REPLACE").Val())
		require.Equal(t, "again", c.Get(ctx, "str").Val())
		require.Equal(t, "again", d.Get(ctx, "str").Val())

		// Another database of the target.
		require.Equal(t, "OK", c.Do(ctx, "MIGRATE", host, port, "str", 3, 1000).Val())
		d3 := redis.NewClient(&redis.Options{Addr: dst.Addr, DB: 3, Protocol: 2})
		defer d3.Close()
		require.Equal(t, "again", d3.Get(ctx, "str").Val())
	})
}

// TestMigrateAuthAndErrors covers AUTH and AUTH2 towards a target with a password, the
// argument errors and an unreachable target (keys stay).
func TestMigrateAuthAndErrors(t *testing.T) {
	src := testutil.StartServer(t)
	c := src.Client(t, 2)
	dst := testutil.StartServer(t, "--requirepass", "sekret")
	host, port := hostPort(t, dst.Addr)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())

	err := c.Do(ctx, "MIGRATE", host, port, "k", 0, 1000).Err()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "ERR Target instance replied with error: NOAUTH"), err.Error())
	require.Equal(t, "v", c.Get(ctx, "k").Val())

	err = c.Do(ctx, "MIGRATE", host, port, "k", 0, 1000, "AUTH", "wrong").Err()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "ERR Target instance replied with error: WRONGPASS"), err.Error())

	require.Equal(t, "OK", c.Do(ctx, "MIGRATE", host, port, "k", 0, 1000, "COPY", "AUTH", "sekret").Val())
	require.Equal(t, "OK", c.Do(ctx, "MIGRATE", host, port, "k", 1, 1000, "AUTH2", "default", "sekret").Val())
	require.Equal(t, int64(0), c.Exists(ctx, "k").Val())
	d := redis.NewClient(&redis.Options{Addr: dst.Addr, Password: "sekret", DB: 1, Protocol: 2})
	defer d.Close()
	require.Equal(t, "v", d.Get(ctx, "k").Val())

	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	require.EqualError(t, c.Do(ctx, "MIGRATE", host, port, "k", 0, 1000, "KEYS", "k").Err(),
		"ERR When using MIGRATE KEYS option, the key argument must be set to the empty string")
	require.EqualError(t, c.Do(ctx, "MIGRATE", host, port, "k", 0, 1000, "BOGUS").Err(), "ERR syntax error")
	require.EqualError(t, c.Do(ctx, "MIGRATE", host, port, "k", 0, 1000, "AUTH").Err(), "ERR syntax error")
	require.EqualError(t, c.Do(ctx, "MIGRATE", host, port, "k", "x", 1000).Err(), "ERR value is not an integer or out of range")
	require.EqualError(t, c.Do(ctx, "MIGRATE", host, port, "k", 0, "x").Err(), "ERR value is not an integer or out of range")

	// A port nobody listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, deadPort := hostPort(t, ln.Addr().String())
	require.NoError(t, ln.Close())
	require.EqualError(t, c.Do(ctx, "MIGRATE", "127.0.0.1", deadPort, "k", 0, 200).Err(),
		"IOERR error or timeout connecting to the client")
	require.Equal(t, "v", c.Get(ctx, "k").Val())

	// A target that accepts and never answers: the timeout ends the wait, the key stays.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer mute.Close()
	go func() {
		for {
			conn, err := mute.Accept()
			if err != nil {
				return
			}
			defer conn.Close()
		}
	}()
	_, mutePort := hostPort(t, mute.Addr().String())
	require.EqualError(t, c.Do(ctx, "MIGRATE", "127.0.0.1", mutePort, "k", 0, 200).Err(),
		"IOERR error or timeout reading to target instance")
	require.Equal(t, "v", c.Get(ctx, "k").Val())
}

// TestMigrateWithRedis moves every type from HotKV into a real Redis with HotKV's MIGRATE,
// and back with Redis's own MIGRATE: each side restores what the other sends.
func TestMigrateWithRedis(t *testing.T) {
	addr := startCompatRedis(t)
	hot := testutil.StartServer(t)
	c := hot.Client(t, 2)
	r := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer r.Close()
	fillDumpTypes(t, c)
	want := dumpState(t, c)

	for _, way := range []struct {
		name     string
		from, to *redis.Client
		toAddr   string
	}{{"hotkv to redis", c, r, addr}, {"redis to hotkv", r, c, hot.Addr}} {
		host, port := hostPort(t, way.toAddr)
		args := []any{"MIGRATE", host, port, "", 0, 2000, "KEYS"}
		for _, k := range dumpKeys {
			args = append(args, k)
		}
		require.Equal(t, "OK", way.from.Do(ctx, args...).Val(), way.name)
		require.Equal(t, int64(0), way.from.DBSize(ctx).Val(), way.name)
		require.Equal(t, want, dumpState(t, way.to), way.name)
	}
}

// TestMigrateCachesConnections checks Redis's connection cache: one connection to the target
// serves several MIGRATEs (INFO migrate_cached_sockets says 1, the target sees one client),
// and a cached connection the target has closed is replaced without an error.
func TestMigrateCachesConnections(t *testing.T) {
	src := testutil.StartServer(t)
	c := src.Client(t, 2)
	dst := testutil.StartServer(t)
	d := dst.Client(t, 2)
	host, port := hostPort(t, dst.Addr)
	received := func() string {
		info := d.Info(ctx, "stats").Val()
		for _, l := range strings.Split(info, "\r\n") {
			if strings.HasPrefix(l, "total_connections_received:") {
				return l
			}
		}
		return ""
	}
	before := received()
	for i := range 3 {
		k := "k" + strconv.Itoa(i)
		require.NoError(t, c.Set(ctx, k, "v", 0).Err())
		require.Equal(t, "OK", c.Do(ctx, "MIGRATE", host, port, k, 0, 1000).Val())
	}
	require.Contains(t, c.Info(ctx, "stats").Val(), "migrate_cached_sockets:1\r\n")
	after := received()
	require.NotEqual(t, before, after)
	n := func(l string) int {
		v, _ := strconv.Atoi(strings.TrimPrefix(l, "total_connections_received:"))
		return v
	}
	require.Equal(t, n(before)+1, n(after), "three MIGRATEs, one connection")

	// The target drops its clients (as a restart would): the next MIGRATE reconnects.
	require.NoError(t, d.Do(ctx, "CLIENT", "KILL", "SKIPME", "yes").Err())
	require.NoError(t, c.Set(ctx, "again", "v", 0).Err())
	require.Equal(t, "OK", c.Do(ctx, "MIGRATE", host, port, "again", 0, 1000).Val())
	require.Equal(t, "v", d.Get(ctx, "again").Val())
}

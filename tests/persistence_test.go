package tests

// Snapshot tests (docs/persistence.md): every kind of state survives a restart exactly, with
// the clock frozen at the same millisecond the next replies continue the spec's sequences,
// SAVE/BGSAVE/LASTSAVE/SHUTDOWN behave as Redis's, save points fire, a background save keeps
// the server serving, and a damaged snapshot stops the start with a clear message.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/testutil"
)

// restarter is a server that a test stops and starts again on the same dir.
type restarter struct {
	t     *testing.T
	proto int
	dir   string
	args  []string
	s     *testutil.Server
	c     *redis.Client
	// stop is how restart shuts the server down: command.ShutdownSave (newRestarter), or
	// ShutdownNoSave when the append-only log alone must carry the data.
	stop int
}

func newRestarter(t *testing.T, proto int, args ...string) *restarter {
	t.Helper()
	r := &restarter{t: t, proto: proto, dir: t.TempDir(), args: args, stop: command.ShutdownSave}
	r.start(0)
	return r
}

// restartMode is how a restart test keeps its data across the restart.
type restartMode struct {
	args []string
	stop int
	// lagDenials: total_denied may come back lower (the log has no effect for denials).
	lagDenials bool
}

// limiterTotals is a named limiter's total_denied.
func limiterTotals(t *testing.T, c *redis.Client, name string) int64 {
	t.Helper()
	v, err := c.Do(ctx, "RATELIMIT.STATS", name).Result()
	require.NoError(t, err)
	var flat []any
	switch x := v.(type) {
	case []any:
		flat = x
	case map[any]any:
		for k, val := range x {
			flat = append(flat, k, val)
		}
	}
	for i := 0; i+1 < len(flat); i += 2 {
		if flat[i] == "total_denied" {
			return flat[i+1].(int64)
		}
	}
	t.Fatalf("no total_denied in %v", v)
	return 0
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

var (
	// restartBySnapshot: SHUTDOWN SAVE writes the snapshot, which the next start loads.
	restartBySnapshot = restartMode{stop: command.ShutdownSave}
	// restartByAOF: no snapshot is ever written; the append-only log alone carries the data.
	restartByAOF = restartMode{args: []string{"--appendonly", "yes", "--save", ""}, stop: command.ShutdownNoSave, lagDenials: true}
)

func newRestarterFor(t *testing.T, proto int, m restartMode) *restarter {
	t.Helper()
	r := newRestarter(t, proto, m.args...)
	r.stop = m.stop
	return r
}

func (r *restarter) start(clockMs int64) {
	r.t.Helper()
	s, err := testutil.Launch(r.t, testutil.Options{Dir: r.dir, ClockMs: clockMs, Args: r.args})
	require.NoError(r.t, err)
	r.s, r.c = s, s.Client(r.t, r.proto)
}

// restart stops the server as SHUTDOWN SAVE does (or as r.stop says) and starts a new one on
// the same dir with its clock frozen at clockMs (0: running) before it loads its data.
func (r *restarter) restart(clockMs int64) {
	r.t.Helper()
	_ = r.c.Close()
	r.s.Stop(r.t, r.stop)
	r.start(clockMs)
}

// persistenceInfo returns INFO persistence as a map.
func persistenceInfo(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	txt, err := c.Info(ctx, "persistence").Result()
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(txt, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}

// waitBgsave waits until no background save is in progress.
func waitBgsave(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info := persistenceInfo(t, c)
		if info["rdb_bgsave_in_progress"] == "0" {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatal("BGSAVE still in progress after 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func protos(t *testing.T, fn func(t *testing.T, proto int)) {
	for _, p := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", p), func(t *testing.T) { fn(t, p) })
	}
}

func TestSnapshotRestartKeepsStringsAndTTLs(t *testing.T) {
	protos(t, func(t *testing.T, proto int) {
		r := newRestarter(t, proto)
		c := r.c
		t0 := testutil.T0
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", t0).Err())
		big := strings.Repeat("0123456789", 250_000) // 2.5 MB: spans several chunks
		bin := "\x00\xff\r\n\x01binary"
		for db := 0; db < 16; db++ {
			cc := c.Conn()
			require.NoError(t, cc.Select(ctx, db).Err())
			require.NoError(t, cc.Set(ctx, "k", fmt.Sprintf("value of db %d", db), 0).Err())
			require.NoError(t, cc.Set(ctx, "n", db*1000-7, 0).Err())
			require.NoError(t, cc.Select(ctx, 0).Err()) // the connection goes back to c's pool
			require.NoError(t, cc.Close())
		}
		require.NoError(t, c.Do(ctx, "SET", "ttl", "x", "PX", 12345).Err())
		require.NoError(t, c.Do(ctx, "SET", "soon", "y", "PX", 100).Err())
		require.NoError(t, c.Do(ctx, "SET", "gone", "z", "PX", 1).Err())
		require.NoError(t, c.Set(ctx, "big", big, 0).Err())
		require.NoError(t, c.Set(ctx, "bin", bin, 0).Err())
		require.NoError(t, c.Set(ctx, "empty", "", 0).Err())
		require.NoError(t, c.Set(ctx, "010", "010", 0).Err())
		require.NoError(t, c.Do(ctx, "INCRBY", "counter", -9223372036854775807).Err())
		require.NoError(t, c.Do(ctx, "PEXPIREAT", "big", t0+1<<40).Err())
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", t0+50).Err())
		pttl := func(key string) int64 {
			v, err := c.Do(ctx, "PTTL", key).Int64()
			require.NoError(t, err)
			return v
		}
		require.EqualValues(t, 12295, pttl("ttl"))
		bigTTL := pttl("big")

		// Restart frozen at the same millisecond: every value and every PTTL is identical.
		r.restart(t0 + 50)
		c = r.c
		for db := 0; db < 16; db++ {
			cc := c.Conn()
			require.NoError(t, cc.Select(ctx, db).Err())
			require.Equal(t, fmt.Sprintf("value of db %d", db), cc.Get(ctx, "k").Val(), "db %d", db)
			require.Equal(t, strconv.Itoa(db*1000-7), cc.Get(ctx, "n").Val(), "db %d", db)
			require.Equal(t, "int", cc.ObjectEncoding(ctx, "n").Val())
			require.EqualValues(t, -1, cc.Do(ctx, "PTTL", "k").Val(), "db %d: k has no TTL", db)
			if db > 0 {
				require.EqualValues(t, 2, cc.DBSize(ctx).Val(), "db %d", db)
			}
			require.NoError(t, cc.Select(ctx, 0).Err())
			require.NoError(t, cc.Close())
		}
		pttl = func(key string) int64 {
			v, err := c.Do(ctx, "PTTL", key).Int64()
			require.NoError(t, err)
			return v
		}
		require.EqualValues(t, 12295, pttl("ttl"))
		require.EqualValues(t, 50, pttl("soon"))
		require.EqualValues(t, -2, pttl("gone"))
		require.Equal(t, bigTTL, pttl("big"))
		require.Equal(t, big, c.Get(ctx, "big").Val())
		require.Equal(t, bin, c.Get(ctx, "bin").Val())
		require.Equal(t, "", c.Get(ctx, "empty").Val())
		require.Equal(t, "010", c.Get(ctx, "010").Val())
		require.Equal(t, "-9223372036854775807", c.Get(ctx, "counter").Val())
		n, err := c.Do(ctx, "DECRBY", "counter", 1).Int64()
		require.NoError(t, err)
		require.EqualValues(t, -9223372036854775808, n, "an integer-encoded value stays one")
		require.EqualValues(t, 9, c.DBSize(ctx).Val(), "db 0: k n ttl soon big bin empty 010 counter; gone expired")
		info := persistenceInfo(t, c)
		require.Equal(t, strconv.Itoa(9+2*15), info["rdb_last_load_keys_loaded"])
		require.Equal(t, "0", info["rdb_last_load_keys_expired"])

		// Loading later than a key's expiry skips it, as Redis does.
		r.restart(t0 + 200)
		c = r.c
		require.EqualValues(t, -2, c.PTTL(ctx, "soon").Val())
		info = persistenceInfo(t, c)
		require.Equal(t, "1", info["rdb_last_load_keys_expired"])
		require.EqualValues(t, 12345-200, c.Do(ctx, "PTTL", "ttl").Val())
		require.Equal(t, big, c.Get(ctx, "big").Val())
	})
}

// runRestartingEveryRow runs a vector table, restarting the server (SHUTDOWN SAVE, then a new
// server frozen at the row's time) after every row: each reply must still be the spec's, so
// the state after a restart continues the sequence exactly.
func runRestartingEveryRow(t *testing.T, named bool, blocks []rlBlock, mode restartMode) {
	for _, b := range blocks {
		t.Run(b.name, func(t *testing.T) {
			protos(t, func(t *testing.T, proto int) {
				r := newRestarterFor(t, proto, mode)
				id := b.name
				for _, s := range b.steps {
					if s.id != "" {
						id = s.id
					}
					want, maxDenied := s.want, ""
					if mode.lagDenials && strings.HasPrefix(s.cmd, "STATS ") {
						// Denials journal nothing (spec §10): total_denied comes back as of the
						// last allowed call, at most what it was.
						var keep []string
						for _, f := range strings.Fields(want) {
							if v, ok := strings.CutPrefix(f, "total_denied="); ok {
								maxDenied = v
							} else {
								keep = append(keep, f)
							}
						}
						want = strings.Join(keep, " ")
					}
					rlRun(t, r.c, named, id+" (restarted after every row)", s.at, s.cmd, want)
					if maxDenied != "" {
						got := limiterTotals(t, r.c, strings.Fields(s.cmd)[1])
						require.LessOrEqual(t, got, atoi(t, maxDenied), "%s: total_denied", id)
					}
					r.restart(testutil.T0 + s.at)
				}
			})
		})
	}
}

// gcraRestartBlocks are spec sequences that a restart after every row must continue exactly.
var gcraRestartBlocks = append(pickBlocks(gcraLimitBlocks, "V1-V3c", "V5-V5b", "V6", "V7"), []rlBlock{
	{"C1 (redis-cell)", []rlStep{
		{"C1.0", 0, "CL.THROTTLE k 4 1 1 6", "[1,5,5,-1,0]"},
		{"C1.1", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,4,-1,1]"},
		{"C1.2", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,3,-1,2]"},
		{"C1.3", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,2,-1,3]"},
		{"C1.4", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,1,-1,4]"},
		{"C1.5", 0, "CL.THROTTLE k 4 1 1 1", "[0,5,0,-1,5]"},
		{"C1.6", 0, "CL.THROTTLE k 4 1 1 1", "[1,5,0,1,5]"},
		{"C1.7", 3000, "CL.THROTTLE k 4 1 1 1", "[0,5,2,-1,3]"},
		{"C1.8", 3100, "CL.THROTTLE k 4 1 1 1", "[0,5,1,-1,4]"},
		{"C1.9", 4000, "CL.THROTTLE k 4 1 1 1", "[0,5,1,-1,4]"},
		{"C1.10", 8000, "CL.THROTTLE k 4 1 1 1", "[0,5,4,-1,1]"},
		{"C1.11", 9500, "CL.THROTTLE k 4 1 1 1", "[0,5,4,-1,1]"},
		{"", 9500, "PTTL k", "1000"},
		{"C1.12", 9500, "CL.THROTTLE k 4 1 1 0", "[0,5,4,-1,1]"},
		{"", 9500, "PTTL k", "1000"},
		{"", 9500, "GET k", `"1700000010500000000"`},
		{"C1.13", 9500, "CL.THROTTLE k 4 1 1 2", "[0,5,2,-1,3]"},
		{"C1.14", 9500, "CL.THROTTLE k 4 1 1 5", "[1,5,2,3,3]"},
		{"C1.15", 15000, "CL.THROTTLE k 4 1 1 6", "[1,5,5,-1,0]"},
	}},
}...)

func TestSnapshotRestartContinuesGCRAVectors(t *testing.T) {
	runRestartingEveryRow(t, false, gcraRestartBlocks, restartBySnapshot)
}

// limiterRestartBlocks are spec sequences that a restart after every row must continue exactly.
var limiterRestartBlocks = append(pickBlocks(rateLimitBlocks, "L2", "L4", "L6", "L8"), []rlBlock{
	{"L9 fractional refill", []rlStep{
		{"L9", 0, "CREATE h 2 1000 ALGO token_bucket REFILL 0.5", "OK"},
		{"", 0, "CHECK h u COST 2", "[1,0,0,2,0]"},
		{"", 0, "CHECK h u", "[0,0,2000,2,2]"},
		{"", 1999, "CHECK h u", "[0,0,1,2,2]"},
		{"", 2000, "CHECK h u", "[1,0,0,2,1]"},
		{"", 2000, "PEEK h u", "[0,0,2000,2,2]"},
		{"", 2000, "STATS h", "refill_per_sec=0.5"},
		{"", 2000, "LIST", `["h"]`},
	}},
}...)

func TestSnapshotRestartContinuesNamedLimiters(t *testing.T) {
	runRestartingEveryRow(t, true, limiterRestartBlocks, restartBySnapshot)
}

// TestSnapshotRestartLimitersAtScale saves many limiter keys of every algorithm and checks that
// every key's next CHECK after the restart equals the one a server that never restarted gives.
func TestSnapshotRestartLimitersAtScale(t *testing.T) {
	t0 := testutil.T0
	setup := func(c *redis.Client) {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", t0).Err())
		for _, args := range [][]any{
			{"RATELIMIT.CREATE", "sw", 50, 10000},
			{"RATELIMIT.CREATE", "tb", 50, 10000, "ALGO", "token_bucket", "REFILL", "7.5"},
			{"RATELIMIT.CREATE", "lb", 50, 10000, "ALGO", "leaky_bucket"},
		} {
			require.NoError(t, c.Do(ctx, args...).Err())
		}
		p := c.Pipeline()
		for i := 0; i < 3000; i++ {
			at := t0 + int64(i/7)
			p.Do(ctx, "DEBUG", "CLOCK", "SET", at)
			for _, l := range []string{"sw", "tb", "lb"} {
				p.Do(ctx, "RATELIMIT.CHECK", l, fmt.Sprint("user:", i%700), "COST", 1+i%9)
			}
			p.Do(ctx, "GCRA.LIMIT", fmt.Sprint("g:", i%500), 60000, 10, 1+i%3)
		}
		_, err := p.Exec(ctx)
		require.NoError(t, err)
	}
	r := newRestarter(t, 2)
	twin := testutil.StartServer(t).Client(t, 2)
	setup(r.c)
	setup(twin)
	r.restart(t0 + 450)
	next := func(c *redis.Client) []string {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", t0+500).Err())
		p := c.Pipeline()
		for i := 0; i < 700; i++ {
			for _, l := range []string{"sw", "tb", "lb"} {
				p.Do(ctx, "RATELIMIT.CHECK", l, fmt.Sprint("user:", i), "COST", 3)
			}
		}
		for i := 0; i < 500; i++ {
			p.Do(ctx, "GCRA.LIMIT", fmt.Sprint("g:", i), 60000, 10)
		}
		for _, l := range []string{"sw", "tb", "lb"} {
			p.Do(ctx, "RATELIMIT.STATS", l)
		}
		cmds, err := p.Exec(ctx)
		require.NoError(t, err)
		out := make([]string, len(cmds))
		for i, cmd := range cmds {
			out[i] = fmt.Sprint(cmd.(*redis.Cmd).Val())
		}
		return out
	}
	require.Equal(t, next(twin), next(r.c))
}

func TestSnapshotTimeFloor(t *testing.T) {
	r := newRestarter(t, 2)
	wall := time.Now().UnixMilli()
	future := wall + 3_600_000
	require.NoError(t, r.c.Do(ctx, "DEBUG", "CLOCK", "SET", future).Err())
	require.NoError(t, r.c.Do(ctx, "SET", "k", "v", "PX", 1000).Err()) // expires at future+1000
	require.NoError(t, r.c.Do(ctx, "GCRA.LIMIT", "g", 60000, 10).Err())
	require.NoError(t, r.c.Do(ctx, "DEBUG", "CLOCK", "RESET").Err())

	r.restart(0) // the clock runs, starting at the persisted floor
	now, err := r.c.Do(ctx, "DEBUG", "CLOCK", "GET").Int64()
	require.NoError(t, err)
	require.GreaterOrEqual(t, now, future, "time ran backwards across the restart")
	require.Less(t, now, future+60_000)
	tm, err := r.c.Time(ctx).Result()
	require.NoError(t, err)
	require.GreaterOrEqual(t, tm.UnixMilli(), future)
	// State written at the floor is still in its own future: nothing expired early and the
	// GCRA key still holds its burst use.
	pttl := r.c.PTTL(ctx, "k").Val().Milliseconds()
	require.True(t, pttl > 0 && pttl <= 1000, "PTTL %d", pttl)
	v, err := r.c.Do(ctx, "GCRA.PEEK", "g", 60000, 10).Slice()
	require.NoError(t, err)
	require.EqualValues(t, 8, v[2], "one admission before the restart, one more peeked at")

	// DEBUG CLOCK SET may still freeze time anywhere; RESET returns to the floored wall clock.
	require.NoError(t, r.c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
	require.EqualValues(t, testutil.T0, r.c.Do(ctx, "DEBUG", "CLOCK", "GET").Val())
	require.NoError(t, r.c.Do(ctx, "DEBUG", "CLOCK", "RESET").Err())
	now, _ = r.c.Do(ctx, "DEBUG", "CLOCK", "GET").Int64()
	require.GreaterOrEqual(t, now, future)

	// The floor is carried forward by the next save even if nothing ran at it.
	r.restart(0)
	now, _ = r.c.Do(ctx, "DEBUG", "CLOCK", "GET").Int64()
	require.GreaterOrEqual(t, now, future)
}

// shutdownVia sends SHUTDOWN with args on a raw connection and waits for the server to stop.
func shutdownVia(t *testing.T, s *testutil.Server, args ...string) {
	t.Helper()
	raw := s.Dial(t)
	raw.Send(respCommand(append([]string{"SHUTDOWN"}, args...)...))
	require.True(t, raw.ReadEOF(), "SHUTDOWN %v replies nothing and closes", args)
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop")
	}
}

func respCommand(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

func TestShutdownSaveAndNoSave(t *testing.T) {
	cases := []struct {
		name  string
		args  []string // server arguments
		shut  []string // SHUTDOWN arguments
		saved bool
	}{
		{"default with save points saves", nil, nil, true},
		{"NOSAVE with save points does not", nil, []string{"NOSAVE"}, false},
		{"default without save points does not", []string{"--save", ""}, nil, false},
		{"SAVE without save points saves", []string{"--save", ""}, []string{"SAVE"}, true},
		{"SAVE NOW FORCE saves", []string{"--save", ""}, []string{"save", "now", "force"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: tc.args})
			require.NoError(t, err)
			c := s.Client(t, 2)
			require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
			shutdownVia(t, s, tc.shut...)
			_, statErr := os.Stat(filepath.Join(dir, "dump.hkv"))
			require.Equal(t, tc.saved, statErr == nil, "snapshot written: %v", statErr)
			s2, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: tc.args})
			require.NoError(t, err)
			n := s2.Client(t, 2).Exists(ctx, "k").Val()
			require.Equal(t, tc.saved, n == 1)
		})
	}

	t.Run("NOSAVE keeps the previous snapshot", func(t *testing.T) {
		dir := t.TempDir()
		s, err := testutil.Launch(t, testutil.Options{Dir: dir})
		require.NoError(t, err)
		c := s.Client(t, 2)
		require.NoError(t, c.Set(ctx, "k", "old", 0).Err())
		require.Equal(t, "OK", c.Save(ctx).Val())
		require.NoError(t, c.Set(ctx, "k", "new", 0).Err())
		shutdownVia(t, s, "NOSAVE")
		s2, err := testutil.Launch(t, testutil.Options{Dir: dir})
		require.NoError(t, err)
		require.Equal(t, "old", s2.Client(t, 2).Get(ctx, "k").Val())
	})
}

// infoPersistenceFields are the fields of Redis 7.0's INFO persistence, in its order.
var infoPersistenceFields = []string{
	"loading", "async_loading", "current_cow_peak", "current_cow_size", "current_cow_size_age",
	"current_fork_perc", "current_save_keys_processed", "current_save_keys_total",
	"rdb_changes_since_last_save", "rdb_bgsave_in_progress", "rdb_last_save_time",
	"rdb_last_bgsave_status", "rdb_last_bgsave_time_sec", "rdb_current_bgsave_time_sec",
	"rdb_saves", "rdb_last_cow_size", "rdb_last_load_keys_expired", "rdb_last_load_keys_loaded",
	"aof_enabled", "aof_rewrite_in_progress", "aof_rewrite_scheduled", "aof_last_rewrite_time_sec",
	"aof_current_rewrite_time_sec", "aof_last_bgrewrite_status", "aof_rewrites",
	"aof_rewrites_consecutive_failures", "aof_last_write_status", "aof_last_cow_size",
	"module_fork_in_progress", "module_fork_last_cow_size",
}

func TestSaveBgsaveLastsaveAndInfo(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		txt := c.Info(ctx, "persistence").Val()
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(txt), "\r\n")[1:] {
			k, _, _ := strings.Cut(line, ":")
			names = append(names, k)
		}
		require.Equal(t, infoPersistenceFields, names)
		info := persistenceInfo(t, c)
		require.Equal(t, "0", info["rdb_saves"])
		require.Equal(t, "-1", info["rdb_last_bgsave_time_sec"])
		require.Equal(t, "-1", info["rdb_current_bgsave_time_sec"])
		require.Equal(t, "ok", info["rdb_last_bgsave_status"])
		require.Equal(t, "0", info["aof_enabled"])
		start, err := c.LastSave(ctx).Result()
		require.NoError(t, err)
		require.Equal(t, strconv.FormatInt(start, 10), info["rdb_last_save_time"])

		require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
		require.NoError(t, c.Set(ctx, "b", "2", 0).Err())
		require.Equal(t, "2", persistenceInfo(t, c)["rdb_changes_since_last_save"])
		time.Sleep(1100 * time.Millisecond) // LASTSAVE has second resolution
		require.Equal(t, "OK", c.Save(ctx).Val())
		info = persistenceInfo(t, c)
		require.Equal(t, "0", info["rdb_changes_since_last_save"])
		require.Equal(t, "1", info["rdb_saves"])
		require.Equal(t, "-1", info["rdb_last_bgsave_time_sec"], "SAVE is not a BGSAVE")
		last := c.LastSave(ctx).Val()
		require.Greater(t, last, start)
		_, err = os.Stat(filepath.Join(s.Dir, "dump.hkv"))
		require.NoError(t, err)

		require.NoError(t, c.Set(ctx, "c", "3", 0).Err())
		require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
		info = waitBgsave(t, c)
		require.Equal(t, "ok", info["rdb_last_bgsave_status"])
		require.Equal(t, "0", info["rdb_last_bgsave_time_sec"])
		require.Equal(t, "0", info["rdb_changes_since_last_save"])
		require.Equal(t, "2", info["rdb_saves"])
		require.Equal(t, "Background saving started", c.Do(ctx, "BGSAVE", "schedule").Val())
		waitBgsave(t, c)

		require.EqualError(t, c.Do(ctx, "BGSAVE", "now").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "BGSAVE", "SCHEDULE", "x").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "SAVE", "x").Err(), "ERR wrong number of arguments for 'save' command")

		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "d", "4", 0)
			p.BgSave(ctx)
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, "Background saving scheduled", cmds[1].(*redis.StatusCmd).Val())
		waitBgsave(t, c)
		_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Save(ctx)
			return nil
		})
		// Refused at queue time, as Redis does, so the transaction aborts.
		require.EqualError(t, err, "EXECABORT Transaction discarded because of previous errors.")

		// A background save held up on a shard: the server keeps serving every other shard,
		// and a second save is refused while it runs.
		st := s.StoreForTest()
		last15 := st.DB(15).Shard(st.DB(15).NumShards() - 1)
		last15.Lock()
		require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
		require.EqualError(t, c.BgSave(ctx).Err(), "ERR Background save already in progress")
		require.EqualError(t, c.Do(ctx, "BGSAVE", "SCHEDULE").Err(), "ERR Background save already in progress")
		require.ErrorIs(t, s.Save(), command.ErrSaveInProgress)
		for i := 0; i < 100; i++ {
			require.NoError(t, c.Set(ctx, fmt.Sprint("during:", i), i, 0).Err())
			require.Equal(t, strconv.Itoa(i), c.Get(ctx, fmt.Sprint("during:", i)).Val())
		}
		info = persistenceInfo(t, c)
		require.Equal(t, "1", info["rdb_bgsave_in_progress"])
		require.NotEqual(t, "-1", info["rdb_current_bgsave_time_sec"])
		last15.Unlock()
		info = waitBgsave(t, c)
		require.Equal(t, "ok", info["rdb_last_bgsave_status"])
		require.Equal(t, "-1", info["rdb_current_bgsave_time_sec"])
	})
}

// TestBgsaveUnderWriteLoad hammers the server with writes while BGSAVE runs again and again:
// the writers are never refused or stalled, and the last snapshot loads with every key that
// no writer touched intact and every counter between its values before and after that save.
func TestBgsaveUnderWriteLoad(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	const preload = 20000
	for i := 0; i < preload; i += 1000 {
		args := []any{"MSET"}
		for j := i; j < i+1000; j++ {
			args = append(args, fmt.Sprint("pre:", j), fmt.Sprint("value ", j))
		}
		require.NoError(t, c.Do(ctx, args...).Err())
	}
	const writers = 4
	var counters [writers]atomic.Int64 // last acknowledged INCR per writer
	var slowest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			wc := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
			defer wc.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				begin := time.Now()
				n, err := wc.Incr(ctx, fmt.Sprint("counter:", w)).Result()
				if err == nil {
					err = wc.Set(ctx, fmt.Sprint("w", w, ":", i%5000), i, time.Hour).Err()
				}
				if err == nil {
					err = wc.Do(ctx, "GCRA.LIMIT", fmt.Sprint("rl:", i%300), 1000, 100).Err()
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				counters[w].Store(n)
				if d := time.Since(begin).Milliseconds(); d > slowest.Load() {
					slowest.Store(d)
				}
			}
		}(w)
	}
	var before, after [writers]int64
	for round := 0; round < 5; round++ {
		time.Sleep(30 * time.Millisecond)
		for w := range before {
			before[w] = counters[w].Load()
		}
		require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
		info := waitBgsave(t, c)
		require.Equal(t, "ok", info["rdb_last_bgsave_status"])
		for w := range after {
			after[w] = counters[w].Load()
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	require.Less(t, slowest.Load(), int64(5000), "a writer stalled for %d ms during BGSAVE", slowest.Load())

	// Load the last snapshot into a new server of its own.
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(s.Dir, "dump.hkv"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dump.hkv"), data, 0o644))
	s2, err := testutil.Launch(t, testutil.Options{Dir: dir})
	require.NoError(t, err)
	c2 := s2.Client(t, 2)
	require.GreaterOrEqual(t, c2.DBSize(ctx).Val(), int64(preload))
	p := c2.Pipeline()
	gets := make([]*redis.StringCmd, preload)
	for i := range gets {
		gets[i] = p.Get(ctx, fmt.Sprint("pre:", i))
	}
	_, err = p.Exec(ctx)
	require.NoError(t, err)
	for i, g := range gets {
		require.Equal(t, fmt.Sprint("value ", i), g.Val())
	}
	for w := 0; w < writers; w++ {
		n, err := c2.Get(ctx, fmt.Sprint("counter:", w)).Int64()
		if before[w] == 0 {
			continue
		}
		require.NoError(t, err)
		require.True(t, n >= before[w] && n <= after[w], "counter %d: %d saved, outside [%d, %d]", w, n, before[w], after[w])
	}
}

func TestCorruptSnapshotRefusesStart(t *testing.T) {
	dir := t.TempDir()
	s, err := testutil.Launch(t, testutil.Options{Dir: dir})
	require.NoError(t, err)
	c := s.Client(t, 2)
	for i := 0; i < 100; i++ {
		require.NoError(t, c.Set(ctx, fmt.Sprint("k", i), strings.Repeat("v", i), 0).Err())
	}
	require.Equal(t, "OK", c.Save(ctx).Val())
	path := filepath.Join(dir, "dump.hkv")
	good, err := os.ReadFile(path)
	require.NoError(t, err)

	cases := []struct {
		name string
		data []byte
		want []string
	}{
		{"flipped byte", flip(good, len(good)/2), []string{"corrupt snapshot", path, "at offset ", "CRC mismatch"}},
		{"truncated", good[:len(good)-10], []string{"corrupt snapshot", path, "at offset ", "truncated"}},
		{"not a snapshot", []byte("REDIS0010 and so on"), []string{"not a HotKV snapshot", path}},
		{"newer major version", withMajor(good, 9), []string{"unsupported snapshot version", "format version 9.0 is newer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))
			_, err := testutil.Launch(t, testutil.Options{Dir: dir})
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	require.NoError(t, os.WriteFile(path, good, 0o644))
	s2, err := testutil.Launch(t, testutil.Options{Dir: dir})
	require.NoError(t, err)
	require.EqualValues(t, 100, s2.Client(t, 2).DBSize(ctx).Val())
}

func flip(b []byte, i int) []byte {
	out := append([]byte(nil), b...)
	out[i] ^= 0x20
	return out
}

// withMajor rewrites the format's major version (the header CRC then fails too, but the
// version is checked first, as a newer writer's file would be).
func withMajor(b []byte, major byte) []byte {
	out := append([]byte(nil), b...)
	out[8], out[9] = major, 0
	return out
}

// TestSavePointsAndFailedSaves: a save point fires a background save; a save that cannot be
// written is reported (INFO, SAVE's ERR, SHUTDOWN's error, the server staying up), retried by
// the save points after Redis's 5 s delay, and SHUTDOWN FORCE exits anyway.
// misconfText is Redis's refusal of writes after a failed background save.
const misconfText = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. " +
	"Commands that may modify the data set are disabled, because this instance is configured to report errors during writes " +
	"if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."

func TestSavePointsAndFailedSaves(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t, "--save", "1 1")
	c := s.Client(t, 2)
	require.NoError(t, c.Set(ctx, "k", "v", 0).Err())
	deadline := time.Now().Add(15 * time.Second)
	for persistenceInfo(t, c)["rdb_saves"] == "0" {
		require.True(t, time.Now().Before(deadline), "no save 15 s after a change with save 1 1")
		time.Sleep(50 * time.Millisecond)
	}
	info := waitBgsave(t, c)
	require.Equal(t, "ok", info["rdb_last_bgsave_status"])
	require.Equal(t, "0", info["rdb_changes_since_last_save"])

	// A directory where the temporary file goes makes every save fail.
	tmp := filepath.Join(s.Dir, "dump.hkv.tmp")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	require.NoError(t, c.Set(ctx, "k2", "v", 0).Err())
	require.EqualError(t, c.Save(ctx).Err(), "ERR")
	require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
	info = waitBgsave(t, c)
	require.Equal(t, "err", info["rdb_last_bgsave_status"])
	require.Equal(t, "1", info["rdb_changes_since_last_save"])
	raw := s.Dial(t)
	require.Equal(t, "-ERR Errors trying to SHUTDOWN. Check logs.\r\n", raw.Do("SHUTDOWN"))
	require.Equal(t, "$1\r\nv\r\n", raw.Do("GET", "k"), "a failed shutdown save keeps the server up")

	// stop-writes-on-bgsave-error (on by default): writes and PING are refused while the last
	// background save failed, reads are served, and a transaction with a refused write fails.
	misconf := "-" + misconfText + "\r\n"
	require.Equal(t, misconf, raw.Do("SET", "k4", "v"))
	require.Equal(t, misconf, raw.Do("PING"))
	require.Equal(t, "$1\r\nv\r\n", raw.Do("GET", "k2"))
	require.Equal(t, "+OK\r\n", raw.Do("MULTI"))
	require.Equal(t, misconf, raw.Do("INCR", "n"))
	require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", raw.Do("EXEC"))
	require.Contains(t, c.Info(ctx, "errorstats").Val(), "errorstat_MISCONF:count=")
	// A script's write call gets the same error; its reads run.
	err := c.Eval(ctx, "return redis.call('SET', 'k5', 'v')", nil).Err()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), misconfText), "%v", err)
	require.Equal(t, "v", c.Eval(ctx, "return redis.call('GET', 'k')", nil).Val())
	require.NoError(t, c.ConfigSet(ctx, "stop-writes-on-bgsave-error", "no").Err())
	require.Equal(t, "+OK\r\n", raw.Do("SET", "k4", "v"))
	require.NoError(t, c.ConfigSet(ctx, "stop-writes-on-bgsave-error", "yes").Err())
	require.Equal(t, misconf, raw.Do("SET", "k4", "v"))

	// Once saving works again, the save points retry (no sooner than 5 s after the failure).
	require.NoError(t, os.Remove(tmp))
	deadline = time.Now().Add(20 * time.Second)
	for persistenceInfo(t, c)["rdb_last_bgsave_status"] != "ok" {
		require.True(t, time.Now().Before(deadline), "the save points did not retry the failed save")
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, "+OK\r\n", raw.Do("SET", "k4", "v"), "a successful save lifts the refusal")
	require.NoError(t, os.Mkdir(tmp, 0o755))
	require.NoError(t, c.Set(ctx, "k3", "v", 0).Err())
	shutdownVia(t, s, "FORCE")
}

// TestBgsaveNeverCapturesHalfAMultiShardWrite runs multi-shard writes (MSET of two keys that
// live in different shards, RENAME between shards, and MULTI/EXEC) during back-to-back BGSAVEs;
// every snapshot loaded afterwards must show each write whole, never half-applied.
func TestBgsaveNeverCapturesHalfAMultiShardWrite(t *testing.T) {
	dir := t.TempDir()
	s, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: []string{"--save", ""}})
	require.NoError(t, err)
	c := s.Client(t, 2)
	// Keys in different shards, so the walk can fall between them.
	st := s.StoreForTest()
	pick := func(prefix string, other string) string {
		for i := 0; ; i++ {
			k := fmt.Sprintf("%s%d", prefix, i)
			if other == "" || st.ShardIndex([]byte(k)) != st.ShardIndex([]byte(other)) {
				return k
			}
		}
	}
	x := pick("x", "")
	y := pick("y", x)
	p := pick("p", "")
	q := pick("q", p)
	// Ballast so each shard takes a while to walk.
	pipe := c.Pipeline()
	for i := 0; i < 100000; i++ {
		pipe.Set(ctx, fmt.Sprintf("ballast:%d", i), i, 0)
	}
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	require.NoError(t, c.Set(ctx, p, "v", 0).Err())

	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		w := s.Client(t, 2)
		from, to := p, q
		for i := 0; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := w.MSet(ctx, x, i, y, i).Err(); err != nil {
				done <- err
				return
			}
			if err := w.Rename(ctx, from, to).Err(); err != nil {
				done <- err
				return
			}
			from, to = to, from
			if _, err := w.TxPipelined(ctx, func(tx redis.Pipeliner) error {
				tx.Set(ctx, x+":tx", i, 0)
				tx.Set(ctx, y+":tx", i, 0)
				return nil
			}); err != nil {
				done <- err
				return
			}
		}
	}()
	for i := 0; i < 5; i++ {
		require.NoError(t, c.Do(ctx, "BGSAVE").Err())
		waitBgsave(t, c)
	}
	close(stop)
	require.NoError(t, <-done)
	s.Stop(t, command.ShutdownNoSave) // keep the last BGSAVE's snapshot

	s2, err := testutil.Launch(t, testutil.Options{Dir: dir, Args: []string{"--save", ""}})
	require.NoError(t, err)
	c2 := s2.Client(t, 2)
	require.Equal(t, c2.Get(ctx, x).Val(), c2.Get(ctx, y).Val(), "MSET captured half-applied")
	require.Equal(t, c2.Get(ctx, x+":tx").Val(), c2.Get(ctx, y+":tx").Val(), "EXEC captured half-applied")
	require.Equal(t, int64(1), c2.Exists(ctx, p, q).Val(), "RENAME captured half-applied")
}

// pickBlocks returns the named blocks of a vector table, in the order asked.
func pickBlocks(all []rlBlock, names ...string) []rlBlock {
	var out []rlBlock
	for _, n := range names {
		for _, b := range all {
			if b.name == n {
				out = append(out, b)
			}
		}
	}
	if len(out) != len(names) {
		panic("pickBlocks: a named block is missing")
	}
	return out
}

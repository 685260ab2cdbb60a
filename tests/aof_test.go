package tests

// Append-only log tests (docs/persistence.md): with no snapshot ever written, every write's
// state comes back from the log exactly, replayed at the primary's times; replies continue the
// spec's sequences after a restart; appendfsync always never replies before the log holds the
// write; a torn tail is cut off, damage elsewhere refuses the start. The crash tests (SIGKILL
// of a real process) are in cmd/hotkv-server.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/testutil"
)

var aofArgs = []string{"--appendonly", "yes", "--save", ""}

func aofDir(dir string) string { return filepath.Join(dir, "appendonlydir") }

func segPath(dir string) string {
	return filepath.Join(aofDir(dir), persist.IncrName("appendonly.hkvl", 1))
}

// launchAOF starts a server with the append-only log on (and no snapshots) in dir, frozen at
// clockMs when non-zero.
func launchAOF(t *testing.T, dir string, clockMs int64, args ...string) (*testutil.Server, error) {
	t.Helper()
	return testutil.Launch(t, testutil.Options{Dir: dir, ClockMs: clockMs, Args: append(append([]string(nil), aofArgs...), args...)})
}

func mustLaunchAOF(t *testing.T, dir string, clockMs int64, args ...string) (*testutil.Server, *redis.Client) {
	t.Helper()
	s, err := launchAOF(t, dir, clockMs, args...)
	require.NoError(t, err)
	return s, s.Client(t, 2)
}

// readLog reads the log in dir: every effect, as "db: args".
func readLog(t *testing.T, dir string) ([]string, persist.LogStats) {
	t.Helper()
	m, err := persist.ReadManifest(filepath.Join(aofDir(dir), persist.ManifestName("appendonly.hkvl")))
	require.NoError(t, err)
	var out []string
	st, err := persist.ReadLog(aofDir(dir), m, persist.LogReplay{Batch: func(_ string, b *persist.Batch) error {
		for _, e := range b.Effects {
			out = append(out, fmt.Sprintf("%d: %s", e.DB, effectString(e)))
		}
		return nil
	}})
	require.NoError(t, err)
	return out, st
}

func TestAOFRestartContinuesGCRAVectors(t *testing.T) {
	runRestartingEveryRow(t, false, gcraRestartBlocks, restartByAOF)
}

func TestAOFRestartContinuesNamedLimiters(t *testing.T) {
	runRestartingEveryRow(t, true, limiterRestartBlocks, restartByAOF)
}

// TestAOFRestartKeepsEveryWrite runs the seeded random workload of every write command
// (effects_all_test.go) with its clock moving and keys expiring, restarts from the log alone
// at the same millisecond, and compares everything: keys, values, absolute expiry times,
// limiters and their next decisions.
func TestAOFRestartKeepsEveryWrite(t *testing.T) {
	for _, tc := range []struct {
		seed  uint64
		fsync string
	}{{1, "always"}, {2, "everysec"}, {3, "no"}} {
		t.Run(fmt.Sprintf("seed%d-%s", tc.seed, tc.fsync), func(t *testing.T) {
			runEveryWriteRestart(t, tc.seed, tc.fsync, false)
		})
	}
}

// runEveryWriteRestart is TestAOFRestartKeepsEveryWrite's body; with rewrite, BGREWRITEAOF
// runs in the middle of the workload and again at its end (aof_rewrite_test.go).
func runEveryWriteRestart(t *testing.T, seed uint64, fsync string, rewrite bool) {
	t.Helper()
	tc := struct {
		seed  uint64
		fsync string
	}{seed, fsync}
	{
		{
			dir := t.TempDir()
			s, c := mustLaunchAOF(t, dir, 0, "--appendfsync", tc.fsync)
			ca := c.Conn()
			require.NoError(t, ca.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0).Err())
			w := &workload{rng: rand.New(rand.NewPCG(tc.seed, 7)), now: testutil.T0,
				keys: []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "g0"}}
			for i := 0; i < 1200; i++ {
				if rewrite && i == 600 {
					bgRewrite(t, s.Client(t, 2))
				}
				if w.rng.IntN(25) == 0 {
					require.Equal(t, "OK", doOK(t, ca, "MULTI"))
					for j := w.n(2, 5); j > 0; j-- {
						doOK(t, ca, w.command(true)...)
					}
					doOK(t, ca, w.pick("EXEC", "EXEC", "EXEC", "DISCARD"))
					continue
				}
				cmd := w.command(false)
				doOK(t, ca, cmd...)
				if cmd[0] == "DEBUG" {
					w.now += int64(cmd[3].(int))
				}
			}
			doOK(t, ca, "SELECT", 0)
			type state struct {
				keys     [16][]string
				limiters map[string]map[string]any
				peeks    []any
			}
			snap := func(c *redis.Conn) state {
				var st state
				for db := range st.keys {
					st.keys[db], _ = dbState(t, c, db)
				}
				st.limiters = limiterState(t, c)
				for _, l := range []string{"sw", "tb", "lb"} {
					for _, k := range []string{"u", "v", "w"} {
						st.peeks = append(st.peeks, c.Do(ctx, "RATELIMIT.PEEK", l, k).Val())
					}
				}
				return st
			}
			if rewrite {
				bgRewrite(t, s.Client(t, 2))
			}
			before := snap(ca)
			require.NoError(t, ca.Close())
			s.Stop(t, command.ShutdownNoSave)
			_, err := os.Stat(filepath.Join(dir, "dump.hkv"))
			require.True(t, os.IsNotExist(err), "a snapshot was written: the log must carry the data alone")

			s2, c2 := mustLaunchAOF(t, dir, w.now)
			cb := c2.Conn()
			t.Cleanup(func() { _ = cb.Close() })
			after := snap(cb)
			total := 0
			for db := range before.keys {
				require.Equal(t, before.keys[db], after.keys[db], "db %d", db)
				total += len(before.keys[db])
			}
			require.Equal(t, before.peeks, after.peeks)
			require.Equal(t, len(before.limiters), len(after.limiters))
			for name, a := range before.limiters {
				b := after.limiters[name]
				for _, f := range []string{"algo", "limit", "window_ms", "unique_keys", "total_allowed", "refill_per_sec", "drain_per_sec"} {
					require.Equal(t, a[f], b[f], "%s %s", name, f)
				}
				require.LessOrEqual(t, b["total_denied"].(int64), a["total_denied"].(int64), name)
			}
			effects, st := readLog(t, dir)
			t.Logf("%d keys, %d limiters; the log holds %d effects in %d batches", total, len(before.limiters), len(effects), st.Batches)
			info := persistenceInfo(t, s2.Client(t, 2))
			require.Equal(t, "1", info["aof_enabled"])
			require.Equal(t, "0", info["rdb_changes_since_last_save"], "replaying counts no changes")
		}
	}
}

// TestAOFReplaysAtTheRecordedTime: a key that was live when the primary wrote it must be live
// when the log is replayed, whatever the replaying clock says.
func TestAOFReplaysAtTheRecordedTime(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, testutil.T0)
	require.NoError(t, c.Do(ctx, "SET", "k", 5, "PX", 100).Err())
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+50).Err())
	require.EqualValues(t, 6, c.Incr(ctx, "k").Val())
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+60).Err())
	require.True(t, c.Persist(ctx, "k").Val())
	s.Stop(t, command.ShutdownNoSave)

	// Replayed by its own clock (T0+200), the SET would be expired by the INCR, which would
	// create 1.
	_, c2 := mustLaunchAOF(t, dir, testutil.T0+200)
	require.Equal(t, "6", c2.Get(ctx, "k").Val())
	require.EqualValues(t, -1, c2.Do(ctx, "PTTL", "k").Val())
}

// TestAOFTimeFloor: after loading the log, the clock never returns less than the largest time
// in it, so time does not run backwards across a restart.
func TestAOFTimeFloor(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, 0)
	future := testutil.T0 + 1e12 // far after the wall clock
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", future).Err())
	require.NoError(t, c.Do(ctx, "SET", "k", "v", "PX", 1000).Err())
	require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "RESET").Err())
	s.Stop(t, command.ShutdownNoSave)

	_, c2 := mustLaunchAOF(t, dir, 0)
	now, err := c2.Do(ctx, "DEBUG", "CLOCK", "GET").Int64()
	require.NoError(t, err)
	require.GreaterOrEqual(t, now, future)
	require.Equal(t, "v", c2.Get(ctx, "k").Val(), "written at the floor, still in its own future")
}

// TestAOFAlwaysWritesBeforeReplying: with appendfsync always, when a reply arrives the log on
// disk already holds the write, and concurrent clients share fsyncs without losing one.
func TestAOFAlwaysWritesBeforeReplying(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, 0, "--appendfsync", "always")
	for i := 0; i < 20; i++ {
		require.NoError(t, c.Set(ctx, "k", i, 0).Err())
		effects, _ := readLog(t, dir)
		require.Equal(t, fmt.Sprintf("0: SET k %d", i), effects[len(effects)-1])
	}
	const clients, each = 8, 150
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cc := s.Client(t, 2)
			for j := 0; j < each; j++ {
				if _, err := cc.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, "n")
					p.Do(ctx, "NOSUCHCOMMAND", "x") // an unknown command: the EXEC is aborted
					return nil
				}); err == nil {
					errs <- fmt.Errorf("EXEC with an unknown command succeeded")
					return
				}
				if err := cc.Incr(ctx, "n").Err(); err != nil {
					errs <- err
					return
				}
				if err := cc.Do(ctx, "GCRA.LIMIT", fmt.Sprint("g", i), 1_000_000, 1_000_000).Err(); err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	effects, _ := readLog(t, dir)
	incrs := 0
	for _, e := range effects {
		if strings.EqualFold(e, "0: INCR n") { // go-redis sends "incr"
			incrs++
		}
	}
	require.Equal(t, clients*each, incrs)
	s.Stop(t, command.ShutdownNoSave)
	_, c2 := mustLaunchAOF(t, dir, 0)
	require.Equal(t, fmt.Sprint(clients*each), c2.Get(ctx, "n").Val())
}

// TestAOFLoadsSnapshotFirstThenTheLog: turning the log on over an existing snapshot keeps its
// data: the first start loads the snapshot and makes it the log's base.
func TestAOFLoadsSnapshotFirstThenTheLog(t *testing.T) {
	dir := t.TempDir()
	s, err := testutil.Launch(t, testutil.Options{Dir: dir})
	require.NoError(t, err)
	c := s.Client(t, 2)
	require.NoError(t, c.Set(ctx, "old", "from the snapshot", 0).Err())
	require.NoError(t, c.Do(ctx, "RATELIMIT.CREATE", "api", 5, 1000).Err())
	require.Equal(t, "OK", c.Save(ctx).Val())
	s.Stop(t, command.ShutdownNoSave)

	s2, c2 := mustLaunchAOF(t, dir, 0)
	require.Equal(t, "from the snapshot", c2.Get(ctx, "old").Val())
	require.NoError(t, c2.Set(ctx, "new", "from the log", 0).Err())
	require.NoError(t, c2.Do(ctx, "RATELIMIT.CHECK", "api", "u").Err())
	m, err := persist.ReadManifest(filepath.Join(aofDir(dir), "appendonly.hkvl.manifest"))
	require.NoError(t, err)
	require.NotNil(t, m.Base)
	require.Equal(t, "appendonly.hkvl.1.base.hkvs", m.Base.Name)
	info := persistenceInfo(t, c2)
	require.NotEqual(t, "0", info["aof_base_size"])
	s2.Stop(t, command.ShutdownNoSave)

	require.NoError(t, os.Remove(filepath.Join(dir, "dump.hkv"))) // the log must not need it
	_, c3 := mustLaunchAOF(t, dir, 0)
	require.Equal(t, "from the snapshot", c3.Get(ctx, "old").Val())
	require.Equal(t, "from the log", c3.Get(ctx, "new").Val())
	require.EqualValues(t, 1, limiterState(t, c3.Conn())["api"]["total_allowed"])
}

// TestAOFTornTail: a torn last frame is cut off at startup (aof-load-truncated yes), leaving
// every whole frame; with aof-load-truncated no the start is refused.
func TestAOFTornTail(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, testutil.T0)
	for i := 0; i < 5; i++ {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+int64(i)).Err())
		require.NoError(t, c.Set(ctx, fmt.Sprint("k", i), i, 0).Err())
	}
	s.Stop(t, command.ShutdownNoSave)
	seg := segPath(dir)
	good, err := os.ReadFile(seg)
	require.NoError(t, err)
	frame := persist.AppendBatch(nil, testutil.T0+9, []store.Effect{{DB: 0, Args: [][]byte{[]byte("SET"), []byte("torn"), []byte("x")}}})
	torn := append(append([]byte(nil), good...), frame[:len(frame)-3]...)
	require.NoError(t, os.WriteFile(seg, torn, 0o644))

	_, err = launchAOF(t, dir, testutil.T0, "--aof-load-truncated", "no")
	require.Error(t, err)
	for _, w := range []string{"torn append-only log tail", seg, fmt.Sprintf("at offset %d", len(good)), "--check-aof --fix"} {
		require.Contains(t, err.Error(), w)
	}

	_, c2 := mustLaunchAOF(t, dir, testutil.T0, "--appendfsync", "always")
	for i := 0; i < 5; i++ {
		require.Equal(t, fmt.Sprint(i), c2.Get(ctx, fmt.Sprint("k", i)).Val())
	}
	require.EqualValues(t, 0, c2.Exists(ctx, "torn").Val())
	require.NoError(t, c2.Set(ctx, "after", "1", 0).Err())
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	require.Equal(t, good, data[:len(good)], "truncated to the last whole frame, then appended to")
	effects, _ := readLog(t, dir) // and the whole log reads cleanly
	require.Contains(t, effects, "0: SET after 1")
}

// TestAOFCorruptionRefusesStart: a damaged frame before the end, a missing segment, a missing
// or garbled manifest: the start is refused with the file and the offset.
func TestAOFCorruptionRefusesStart(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, testutil.T0)
	for i := 0; i < 5; i++ {
		require.NoError(t, c.Do(ctx, "DEBUG", "CLOCK", "SET", testutil.T0+int64(i)).Err())
		require.NoError(t, c.Set(ctx, fmt.Sprint("k", i), strings.Repeat("v", 100), 0).Err())
	}
	s.Stop(t, command.ShutdownNoSave)
	seg := segPath(dir)
	manifest := filepath.Join(aofDir(dir), "appendonly.hkvl.manifest")
	good, err := os.ReadFile(seg)
	require.NoError(t, err)
	goodManifest, err := os.ReadFile(manifest)
	require.NoError(t, err)
	// The frames' offsets.
	f, err := os.Open(seg)
	require.NoError(t, err)
	lr, err := persist.NewLogReader(f, int64(len(good)), seg, true)
	require.NoError(t, err)
	var offs []int64
	for b, err := lr.Next(); err == nil; b, err = lr.Next() {
		offs = append(offs, b.Offset)
	}
	f.Close()
	require.Len(t, offs, 5)

	restore := func() {
		require.NoError(t, os.WriteFile(seg, good, 0o644))
		require.NoError(t, os.WriteFile(manifest, goodManifest, 0o644))
	}
	cases := []struct {
		name   string
		damage func()
		want   []string
	}{
		{"flipped byte in the middle", func() {
			require.NoError(t, os.WriteFile(seg, flip(good, int(offs[2])+30), 0o644))
		}, []string{"corrupt append-only log", seg, fmt.Sprintf("at offset %d", offs[2]), "CRC mismatch", "not a torn tail"}},
		{"missing segment", func() {
			require.NoError(t, os.WriteFile(manifest, append(append([]byte(nil), goodManifest...), "file appendonly.hkvl.2.incr.hkvl seq 2 type i\n"...), 0o644))
		}, []string{"appendonly.hkvl.2.incr.hkvl", "does not exist"}},
		{"missing base", func() {
			require.NoError(t, os.WriteFile(manifest, []byte("file appendonly.hkvl.1.base.hkvs seq 1 type b\nfile appendonly.hkvl.2.incr.hkvl seq 2 type i\n"), 0o644))
		}, []string{"appendonly.hkvl.1.base.hkvs", "does not exist"}},
		{"no manifest", func() { require.NoError(t, os.Remove(manifest)) },
			[]string{"holds log segments", "no manifest"}},
		{"garbled manifest", func() { require.NoError(t, os.WriteFile(manifest, []byte("file x seq one\n"), 0o644)) },
			[]string{"invalid manifest line", manifest}},
		{"segment header seq", func() {
			require.NoError(t, os.WriteFile(manifest, []byte("file appendonly.hkvl.1.incr.hkvl seq 3 type i\n"), 0o644))
		}, []string{"seq 1, the manifest seq 3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			restore()
			tc.damage()
			_, err := launchAOF(t, dir, testutil.T0)
			require.Error(t, err)
			require.Contains(t, err.Error(), "refusing to start")
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	restore()
	_, c2 := mustLaunchAOF(t, dir, testutil.T0)
	require.EqualValues(t, 5, c2.DBSize(ctx).Val())
}

// TestAOFUnfinishedTransaction: a log that ends after a MULTI whose EXEC never made it to disk
// loads without that transaction (it was never acknowledged), and logging goes on after it.
func TestAOFUnfinishedTransaction(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, testutil.T0)
	require.NoError(t, c.Set(ctx, "before", "1", 0).Err())
	s.Stop(t, command.ShutdownNoSave)
	seg := segPath(dir)
	fr := persist.AppendBatch(nil, testutil.T0+1, []store.Effect{
		{DB: 0, Args: [][]byte{[]byte("MULTI")}},
		{DB: 0, Args: [][]byte{[]byte("SET"), []byte("half"), []byte("x")}},
	})
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(fr)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s2, c2 := mustLaunchAOF(t, dir, testutil.T0+2)
	require.Equal(t, "1", c2.Get(ctx, "before").Val())
	require.EqualValues(t, 0, c2.Exists(ctx, "half").Val())
	require.NoError(t, c2.Set(ctx, "after", "2", 0).Err())
	s2.Stop(t, command.ShutdownNoSave)
	_, c3 := mustLaunchAOF(t, dir, testutil.T0+2)
	require.Equal(t, "2", c3.Get(ctx, "after").Val(), "a write after the unfinished block is not swallowed by it")
	require.EqualValues(t, 0, c3.Exists(ctx, "half").Val())
}

// TestAOFConfigAtRunTime: appendfsync changes at run time; appendonly can be turned off (the log
// is flushed first) but not on.
func TestAOFConfigAtRunTime(t *testing.T) {
	s := testutil.StartServer(t)
	c := s.Client(t, 2)
	err := c.ConfigSet(ctx, "appendonly", "yes").Err()
	require.ErrorContains(t, err, "only be turned on at startup")
	require.Equal(t, "0", persistenceInfo(t, c)["aof_enabled"])
	require.NoError(t, c.ConfigSet(ctx, "appendonly", "no").Err())

	dir := t.TempDir()
	s2, c2 := mustLaunchAOF(t, dir, 0)
	require.Equal(t, map[string]string{"appendfsync": "everysec"}, c2.ConfigGet(ctx, "appendfsync").Val())
	require.NoError(t, c2.ConfigSet(ctx, "appendfsync", "always").Err())
	require.NoError(t, c2.Set(ctx, "k", "v", 0).Err())
	effects, _ := readLog(t, dir)
	require.Equal(t, []string{"0: SET k v"}, effects, "always applies at once")
	require.NoError(t, c2.ConfigSet(ctx, "appendonly", "yes").Err(), "already on: nothing to do")
	require.Error(t, c2.ConfigSet(ctx, "appendfsync", "sometimes").Err())

	// The fields Redis adds while the log is on, in its order.
	txt := c2.Info(ctx, "persistence").Val()
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(txt), "\r\n")[1:] {
		k, _, _ := strings.Cut(line, ":")
		names = append(names, k)
	}
	require.Equal(t, append(append([]string(nil), infoPersistenceFields...), "aof_current_size", "aof_base_size",
		"aof_pending_rewrite", "aof_buffer_length", "aof_pending_bio_fsync", "aof_delayed_fsync"), names)
	info := persistenceInfo(t, c2)
	require.Equal(t, "1", info["aof_enabled"])
	require.Equal(t, "ok", info["aof_last_write_status"])
	require.Equal(t, fmt.Sprint(persist.LogHeaderSize), info["aof_base_size"])
	require.NotEqual(t, info["aof_base_size"], info["aof_current_size"])

	require.NoError(t, c2.ConfigSet(ctx, "appendfsync", "everysec").Err())
	require.NoError(t, c2.Set(ctx, "k2", "before off", 0).Err())
	require.NoError(t, c2.ConfigSet(ctx, "appendonly", "no").Err())
	require.Equal(t, "0", persistenceInfo(t, c2)["aof_enabled"])
	effects, _ = readLog(t, dir)
	require.Equal(t, "0: SET k2 before off", effects[len(effects)-1], "turning the log off writes what it holds")
	require.NoError(t, c2.Set(ctx, "k3", "after off", 0).Err())
	require.ErrorContains(t, c2.ConfigSet(ctx, "appendonly", "yes").Err(), "only be turned on at startup")
	s2.Stop(t, command.ShutdownNoSave)
	effects, _ = readLog(t, dir)
	require.NotContains(t, effects, "0: SET k3 after off")
}

// TestAOFConcurrentTransactionsAndLimiters runs transactions that touch limiters (their block
// opens in the log before their EXEC, and other clients' limiter effects land inside it) next
// to single limiter checks, with appendfsync always: nobody deadlocks waiting for a block to
// close, and the restarted server has the same state.
func TestAOFConcurrentTransactionsAndLimiters(t *testing.T) {
	dir := t.TempDir()
	s, admin := mustLaunchAOF(t, dir, testutil.T0, "--appendfsync", "always")
	require.NoError(t, admin.Do(ctx, "RATELIMIT.CREATE", "sw", 1_000_000, 60000).Err())
	require.NoError(t, admin.Do(ctx, "RATELIMIT.CREATE", "tb", 1_000_000, 60000, "ALGO", "token_bucket").Err())
	const clients, rounds = 6, 60
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := s.Client(t, 2)
			for r := 0; r < rounds; r++ {
				var err error
				if (i+r)%2 == 0 {
					_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Append(ctx, "log", fmt.Sprint(i))
						p.Do(ctx, "RATELIMIT.CHECK", "sw", "u")
						p.Incr(ctx, "n")
						p.Do(ctx, "RATELIMIT.CHECK", "tb", "u", "COST", 2)
						return nil
					})
				} else {
					err = c.Do(ctx, "RATELIMIT.CHECK", "sw", "u").Err()
					if err == nil {
						err = c.Incr(ctx, "n").Err()
					}
					if err == nil {
						err = c.Do(ctx, "RATELIMIT.CHECK", "tb", "u").Err()
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	before := limiterState(t, admin.Conn())
	keysBefore, _ := dbState(t, admin.Conn(), 0)
	s.Stop(t, command.ShutdownNoSave)
	_, c2 := mustLaunchAOF(t, dir, testutil.T0)
	after := limiterState(t, c2.Conn())
	keysAfter, _ := dbState(t, c2.Conn(), 0)
	require.Equal(t, keysBefore, keysAfter)
	for _, name := range []string{"sw", "tb"} {
		require.Equal(t, before[name]["total_allowed"], after[name]["total_allowed"], name)
	}
	require.Equal(t, fmt.Sprint(clients*rounds), c2.Get(ctx, "n").Val())
}

// TestAOFJournalsDeniedTotals: denials journal nothing each, but the server carries a named
// limiter's grown denied total to the log every 100 ms (RATELIMIT.SETSTATE name TOTALS), so a
// restart keeps RATELIMIT.STATS's total_denied.
func TestAOFJournalsDeniedTotals(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, testutil.T0)
	require.NoError(t, c.Do(ctx, "RATELIMIT.CREATE", "lim", 2, 60000).Err())
	for i := range 7 {
		v, err := c.Do(ctx, "RATELIMIT.CHECK", "lim", "u").Slice()
		require.NoError(t, err)
		require.EqualValues(t, map[bool]int64{true: 1, false: 0}[i < 2], v[0])
	}
	want := "-1: RATELIMIT.SETSTATE lim TOTALS 2 5"
	require.Eventually(t, func() bool {
		if err := c.Do(ctx, "PING").Err(); err != nil {
			return false
		}
		effects, _ := readLog(t, dir)
		return slices.Contains(effects, want)
	}, 10*time.Second, 50*time.Millisecond, "the denied total in the log")
	effects, _ := readLog(t, dir)
	require.Len(t, effects, 4, "CREATE, two admissions, one totals effect: %q", effects)
	s.Stop(t, command.ShutdownNoSave)

	_, c2 := mustLaunchAOF(t, dir, testutil.T0)
	st, err := c2.Do(ctx, "RATELIMIT.STATS", "lim").Slice()
	require.NoError(t, err)
	require.Equal(t, []any{"total_allowed", int64(2), "total_denied", int64(5)}, st[10:14])
}

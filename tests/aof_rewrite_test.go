package tests

// BGREWRITEAOF tests (docs/persistence.md, "Rewriting the log"): the state after a rewrite and a
// restart is the state before; writers running during a rewrite are neither lost nor applied
// twice; the log shrinks; a crash between the base and the manifest leaves a loadable log.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/server"
)

// bgRewrite runs BGREWRITEAOF and waits for it to end successfully.
func bgRewrite(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	v, err := c.Do(ctx, "BGREWRITEAOF").Text()
	require.NoError(t, err)
	require.Contains(t, []string{"Background append only file rewriting started", "Background append only file rewriting scheduled"}, v)
	info := waitRewrite(t, c)
	require.Equal(t, "ok", info["aof_last_bgrewrite_status"])
	return info
}

func waitRewrite(t *testing.T, c *redis.Client) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info := persistenceInfo(t, c)
		if info["aof_rewrite_in_progress"] == "0" && info["aof_rewrite_scheduled"] == "0" {
			return info
		}
		if time.Now().After(deadline) {
			t.Fatal("BGREWRITEAOF still in progress after 30 s")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func readManifest(t *testing.T, dir string) *persist.Manifest {
	t.Helper()
	m, err := persist.ReadManifest(filepath.Join(aofDir(dir), persist.ManifestName("appendonly.hkvl")))
	require.NoError(t, err)
	return m
}

// TestAOFRewriteKeepsEveryWrite: every write type, limiters and GCRA keys come back exactly
// after rewrites in the middle and at the end of the workload.
func TestAOFRewriteKeepsEveryWrite(t *testing.T) {
	for _, fsync := range []string{"always", "everysec"} {
		t.Run(fsync, func(t *testing.T) { runEveryWriteRestart(t, 11, fsync, true) })
	}
}

func TestAOFRewriteRepliesAndInfo(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, 0)
	info := persistenceInfo(t, c)
	require.Equal(t, "0", info["aof_rewrites"])
	require.Equal(t, "-1", info["aof_last_rewrite_time_sec"])
	require.NoError(t, c.Set(ctx, "a", "1", 0).Err())
	info = bgRewrite(t, c)
	require.Equal(t, "1", info["aof_rewrites"])
	require.Equal(t, "0", info["aof_last_rewrite_time_sec"])
	require.Equal(t, "-1", info["aof_current_rewrite_time_sec"])
	m := readManifest(t, dir)
	require.NotNil(t, m.Base)
	require.Len(t, m.Incrs, 1)
	require.Equal(t, uint64(2), m.Incrs[0].Seq)
	require.Equal(t, persist.BaseName("appendonly.hkvl", 2), m.Base.Name)
	ents, err := os.ReadDir(aofDir(dir))
	require.NoError(t, err)
	require.Len(t, ents, 3, "the old segment is deleted: %v", ents)

	// In progress: a second one is refused. A rewrite holds the save lock, so a BGSAVE running
	// makes BGREWRITEAOF scheduled instead.
	for i := 0; i < 2000; i++ {
		require.NoError(t, c.Set(ctx, fmt.Sprintf("k%d", i), strings.Repeat("x", 100), 0).Err())
	}
	require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
	v, err := c.Do(ctx, "BGREWRITEAOF").Text()
	require.NoError(t, err)
	if v == "Background append only file rewriting scheduled" {
		v2, err := c.Do(ctx, "BGREWRITEAOF").Text()
		if err != nil {
			require.EqualError(t, err, "ERR Background append only file rewriting already in progress")
		} else {
			require.Equal(t, "Background append only file rewriting scheduled", v2)
		}
	} else {
		require.Equal(t, "Background append only file rewriting started", v) // the BGSAVE ended first
	}
	info = waitRewrite(t, c)
	require.Equal(t, "2", info["aof_rewrites"])
	_ = s
}

// TestAOFRewriteUnderConcurrentWriters: INCRs (whose double application would show), MSETs and
// RENAMEs across shards, and limiter checks run while rewrites happen; after a restart every
// counter equals its last acknowledged value and the whole keyspace is as it was.
func TestAOFRewriteUnderConcurrentWriters(t *testing.T) {
	dir := t.TempDir()
	s, c := mustLaunchAOF(t, dir, 0, "--appendfsync", "always")
	require.NoError(t, c.Do(ctx, "RATELIMIT.CREATE", "rl", 1_000_000, 60000).Err())
	// Enough keys that a walk takes a while, so that writers land on both sides of its cut.
	for i := 0; i < 40; i++ {
		args := []any{}
		for j := 0; j < 500; j++ {
			args = append(args, fmt.Sprintf("pre%d-%d", i, j), strings.Repeat("p", 50))
		}
		require.NoError(t, c.MSet(ctx, args...).Err())
	}
	const workers = 6
	var wg sync.WaitGroup
	stop := make(chan struct{})
	acked := make([]int64, workers)
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			cl := s.Client(t, 2)
			cnt := fmt.Sprintf("cnt%d", w)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n, err := cl.Incr(ctx, cnt).Result()
				if err != nil {
					errs <- err
					return
				}
				acked[w] = n
				v := strconv.Itoa(i)
				if err := cl.MSet(ctx, fmt.Sprintf("m%d-a", w), v, fmt.Sprintf("m%d-b", w), v, fmt.Sprintf("m%d-c", w), v).Err(); err != nil {
					errs <- err
					return
				}
				from, to := fmt.Sprintf("r%d-x", w), fmt.Sprintf("r%d-y", w)
				if i%2 == 1 {
					from, to = to, from
				}
				if i == 0 {
					_ = cl.Set(ctx, from, "v", 0).Err()
				}
				if err := cl.Rename(ctx, from, to).Err(); err != nil {
					errs <- err
					return
				}
				if i%5 == 0 {
					if err := cl.Do(ctx, "RATELIMIT.CHECK", "rl", fmt.Sprintf("u%d", w%3)).Err(); err != nil {
						errs <- err
						return
					}
					if err := cl.Do(ctx, "CL.THROTTLE", fmt.Sprintf("g%d", w), 1_000_000, 1, 3600).Err(); err != nil {
						errs <- err
						return
					}
				}
			}
		}(w)
	}
	for r := 0; r < 4; r++ {
		time.Sleep(30 * time.Millisecond)
		bgRewrite(t, c)
	}
	time.Sleep(20 * time.Millisecond)
	close(stop)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	info := persistenceInfo(t, c)
	require.Equal(t, "4", info["aof_rewrites"])
	cc := c.Conn()
	before, _ := dbState(t, cc, 0)
	stats := limiterState(t, cc)
	_ = cc.Close()
	_ = c.Close()
	s.Stop(t, command.ShutdownNoSave)

	_, c2 := mustLaunchAOF(t, dir, 0)
	for w := 0; w < workers; w++ {
		n, err := c2.Get(ctx, fmt.Sprintf("cnt%d", w)).Int64()
		require.NoError(t, err)
		require.Equal(t, acked[w], n, "counter %d", w)
		require.Greater(t, n, int64(0))
	}
	cc2 := c2.Conn()
	t.Cleanup(func() { _ = cc2.Close() })
	after, _ := dbState(t, cc2, 0)
	require.Equal(t, len(before), len(after))
	for i := range before {
		require.Equal(t, before[i], after[i])
	}
	require.Contains(t, strings.Join(after, "\n"), "g0 string")
	require.Equal(t, stats["rl"]["total_allowed"], limiterState(t, cc2)["rl"]["total_allowed"])
}

// TestAOFRewriteShrinksTheLog: many overwrites of one key compact to one key's worth.
func TestAOFRewriteShrinksTheLog(t *testing.T) {
	dir := t.TempDir()
	_, c := mustLaunchAOF(t, dir, 0)
	for i := 0; i < 3000; i++ {
		require.NoError(t, c.Set(ctx, "k", fmt.Sprintf("%d-%s", i, strings.Repeat("v", 200)), 0).Err())
	}
	size := func() int64 {
		n, err := strconv.ParseInt(persistenceInfo(t, c)["aof_current_size"], 10, 64)
		require.NoError(t, err)
		return n
	}
	require.Eventually(t, func() bool { return size() > 600_000 }, 5*time.Second, 10*time.Millisecond)
	info := bgRewrite(t, c)
	after := size()
	require.Less(t, after, int64(10_000), "aof_current_size after the rewrite")
	base, _ := strconv.ParseInt(info["aof_base_size"], 10, 64)
	require.Less(t, base, int64(10_000))
	var total int64
	ents, err := os.ReadDir(aofDir(dir))
	require.NoError(t, err)
	for _, e := range ents {
		fi, err := e.Info()
		require.NoError(t, err)
		total += fi.Size()
	}
	require.Less(t, total, int64(10_000), "files on disk")
	require.Equal(t, fmt.Sprintf("2999-%s", strings.Repeat("v", 200)), c.Get(ctx, "k").Val())
}

// TestAOFRewriteCrashBeforeManifest: the directory as a crash would leave it after the new base
// is on disk but before the manifest installs it (a copy taken at that moment) loads, with
// every write; so does the directory after the failed rewrite.
func TestAOFRewriteCrashBeforeManifest(t *testing.T) {
	dir := t.TempDir()
	crash := t.TempDir()
	server.AOFRewriteBeforeManifest = func(d string) error {
		copyDir(t, d, aofDir(crash))
		return fmt.Errorf("simulated crash")
	}
	t.Cleanup(func() { server.AOFRewriteBeforeManifest = nil })
	s, c := mustLaunchAOF(t, dir, 0, "--appendfsync", "always")
	for i := 0; i < 100; i++ {
		require.NoError(t, c.Incr(ctx, "n").Err())
		require.NoError(t, c.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err())
	}
	_, err := c.Do(ctx, "BGREWRITEAOF").Result()
	require.NoError(t, err)
	info := waitRewrite(t, c)
	require.Equal(t, "err", info["aof_last_bgrewrite_status"])
	require.NoError(t, c.Incr(ctx, "n").Err())
	_ = c.Close()
	s.Stop(t, command.ShutdownNoSave)
	server.AOFRewriteBeforeManifest = nil

	m := readManifest(t, crash)
	require.Len(t, m.Incrs, 2, "the crash copy lists the old and the new segment")
	_, c2 := mustLaunchAOF(t, crash, 0)
	require.Equal(t, "100", c2.Get(ctx, "n").Val())
	require.Equal(t, int64(101), c2.DBSize(ctx).Val())
	_, c3 := mustLaunchAOF(t, dir, 0)
	require.Equal(t, "101", c3.Get(ctx, "n").Val())
	require.Equal(t, "99", c3.Get(ctx, "k99").Val())
	// A later rewrite succeeds and removes the strays.
	bgRewrite(t, c3)
	require.Len(t, readManifest(t, dir).Incrs, 1)
}

func copyDir(t *testing.T, from, to string) {
	require.NoError(t, os.MkdirAll(to, 0o755))
	ents, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o644))
	}
}

// TestAOFRewriteAbortedByFlush: FLUSHALL or SWAPDB while the base is being written abort the
// rewrite (or land after it); either way the log loads to the state before the restart.
func TestAOFRewriteAbortedByFlush(t *testing.T) {
	for _, op := range [][]any{{"FLUSHALL"}, {"SWAPDB", 0, 1}, {"FLUSHDB"}} {
		t.Run(fmt.Sprint(op[0]), func(t *testing.T) {
			dir := t.TempDir()
			s, c := mustLaunchAOF(t, dir, 0)
			for i := 0; i < 20; i++ {
				args := []any{}
				for j := 0; j < 500; j++ {
					args = append(args, fmt.Sprintf("pre%d-%d", i, j), j)
				}
				require.NoError(t, c.MSet(ctx, args...).Err())
			}
			require.NoError(t, c.Do(ctx, "BGREWRITEAOF").Err())
			require.NoError(t, c.Do(ctx, op...).Err())
			for i := 0; i < 50; i++ {
				require.NoError(t, c.Incr(ctx, "after").Err())
			}
			info := waitRewrite(t, c)
			t.Logf("rewrite status %s", info["aof_last_bgrewrite_status"])
			cc := c.Conn()
			before0, _ := dbState(t, cc, 0)
			before1, _ := dbState(t, cc, 1)
			_ = cc.Close()
			_ = c.Close()
			s.Stop(t, command.ShutdownNoSave)
			_, c2 := mustLaunchAOF(t, dir, 0)
			cc2 := c2.Conn()
			t.Cleanup(func() { _ = cc2.Close() })
			after0, _ := dbState(t, cc2, 0)
			after1, _ := dbState(t, cc2, 1)
			require.Equal(t, before0, after0)
			require.Equal(t, before1, after1)
			bgRewrite(t, c2)
		})
	}
}

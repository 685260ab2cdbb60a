package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/persist"
)

// bgsaveRetryDelay is how long a failed background save blocks save points from trying again
// (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const bgsaveRetryDelay = 5 // seconds

// persistState is the snapshot machinery's state: what INFO persistence reports and what keeps
// two saves from writing the file at once.
//
// Lock order: saveMu, then shard locks, then limiter locks. SAVE already holds every shard lock
// when it asks for saveMu, so it only ever TryLocks it (and reports a save in progress when
// that fails); everything that blocks on saveMu takes no shard lock before it.
type persistState struct {
	// saveMu is held for as long as a snapshot file is being written.
	saveMu sync.Mutex

	bgMu     sync.Mutex // guards bgCancel and bgDone
	bgCancel context.CancelFunc
	bgDone   chan struct{}

	// stopping is set while the final save at shutdown is being taken: no new background
	// save may start then.
	stopping     atomic.Bool
	bgInProgress atomic.Bool
	bgStartMs    atomic.Int64 // wall time the running BGSAVE started
	lastBgOK     atomic.Bool
	lastBgSec    atomic.Int64 // duration of the last BGSAVE, -1 before the first
	lastBgTry    atomic.Int64 // Unix seconds of the last BGSAVE attempt
	saves        atomic.Int64 // successful saves, SAVE and BGSAVE
	keysDone     atomic.Int64 // keys written by the save in progress
	keysTotal    atomic.Int64 // keys in the dataset when it started

	loading     atomic.Bool
	loadStart   atomic.Int64 // Unix seconds the load in progress started
	loadTotal   atomic.Int64 // its bytes to read
	loadDone    atomic.Int64 // and read so far
	loadedKeys  atomic.Int64
	loadExpired atomic.Int64
	points      atomic.Pointer[[]config.SavePoint]

	rw rewriteState // BGREWRITEAOF (aofrewrite.go)
}

// snapshotPath is dir/dbfilename. main changes into dir and then sets dir to the absolute
// working directory, so the path is right both in the binary and in-process (tests give a
// temporary dir and no chdir happens).
func (s *Server) snapshotPath() string {
	return filepath.Join(s.cfg.Get("dir"), s.cfg.Get("dbfilename"))
}

// loadSnapshot reads the snapshot at startup, before any client is served, and reports
// whether there was one. A missing file is a fresh start; a file that cannot be read refuses
// the start with the reason, which names the file and the offset of the damage.
func (s *Server) loadSnapshot() (bool, error) {
	path := s.snapshotPath()
	p := &s.persist
	start := time.Now()
	var size int64
	if fi, err := os.Stat(path); err == nil {
		size = fi.Size()
	}
	prog := s.newLoadProgress("snapshot", size)
	st, err := persist.LoadFile(path, s.store, persist.LoadOptions{SetFloor: s.clock.SetFloor, Now: s.clock.NowMs, Function: s.loadFunction,
		Progress: func(keys, bytes int64) error {
			n := keys - prog.keys
			prog.keys = keys
			return prog.step(n, bytes)
		}})
	if errors.Is(err, fs.ErrNotExist) {
		s.log.Info("No snapshot to load; starting empty", "file", path)
		return false, nil
	}
	if errors.Is(err, errLoadStopped) {
		return false, err
	}
	if err != nil {
		s.log.Error("Failed loading the snapshot; refusing to start", "file", path, "err", err)
		if errors.Is(err, persist.ErrCorrupt) || errors.Is(err, persist.ErrVersion) {
			return false, fmt.Errorf("Bad snapshot file, refusing to start (move it away to start empty, or restore a good copy): %w", err)
		}
		return false, fmt.Errorf("Can't load the snapshot %s, refusing to start: %w", path, err)
	}
	p.loadedKeys.Store(st.Keys)
	p.loadExpired.Store(st.Expired)
	s.log.Info("DB loaded from disk", "file", path, "seconds", time.Since(start).Seconds(),
		"keys", st.Keys, "expired_skipped", st.Expired, "limiters", st.Limiters, "limiter_keys", st.LimiterKeys,
		"time_floor_ms", st.Footer.TimeFloorMs, "written_by", st.Header.HotKVVersion)
	return true, nil
}

// writeSnapshot writes the dataset to the snapshot file and does the bookkeeping of a
// successful save. The caller holds saveMu; held says it also holds every shard lock.
func (s *Server) writeSnapshot(ctx context.Context, held bool) error {
	p := &s.persist
	dirtyBefore := s.stats.dirty.Load()
	total := 0
	for i := 0; i < s.store.NumDBs(); i++ {
		db := s.store.DB(i)
		for j := 0; j < db.NumShards(); j++ {
			sh := db.Shard(j)
			if !held {
				sh.Lock()
			}
			total += sh.Len()
			if !held {
				sh.Unlock()
			}
		}
	}
	p.keysTotal.Store(int64(total))
	p.keysDone.Store(0)
	path := s.snapshotPath()
	start := time.Now()
	st, err := persist.SaveFile(path, s.store, persist.SaveOptions{
		Now:       s.clock.NowMs(),
		Held:      held,
		TimeFloor: s.clock.HighWater,
		Version:   Version,
		Ctx:       ctx,
		Progress:  &p.keysDone,
		Functions: s.table.Scripting().Libraries(),
	})
	if err != nil {
		s.log.Warn("Failed saving the snapshot", "file", path, "err", err)
		return err
	}
	s.stats.dirty.Add(-dirtyBefore)
	s.stats.lastSave.Store(time.Now().Unix())
	p.saves.Add(1)
	s.log.Info("DB saved on disk", "file", path, "seconds", time.Since(start).Seconds(), "bytes", st.Bytes,
		"keys", st.Keys, "limiters", st.Limiters, "limiter_keys", st.LimiterKeys)
	return nil
}

// Save implements SAVE: a synchronous snapshot while the caller holds every shard lock, so it
// is exact. It fails at once if a background save is running.
func (s *Server) Save() error {
	p := &s.persist
	if !p.saveMu.TryLock() {
		return command.ErrSaveInProgress
	}
	defer p.saveMu.Unlock()
	err := s.writeSnapshot(context.Background(), true)
	if err == nil && !p.lastBgOK.Load() {
		// A successful SAVE clears a failed BGSAVE's status, as Redis's rdbSave does, and with
		// it the MISCONF refusal of writes.
		p.lastBgOK.Store(true)
		s.updateDiskError()
	}
	return err
}

// BgSave implements BGSAVE (and the save points): the snapshot is written by a goroutine that
// walks the keyspace shard by shard while clients keep being served.
func (s *Server) BgSave(schedule bool) error {
	p := &s.persist
	if s.closed.Load() || p.stopping.Load() || s.ctx == nil {
		return errors.New("server is shutting down")
	}
	if !p.saveMu.TryLock() {
		return command.ErrSaveInProgress
	}
	ctx, cancel := context.WithCancel(s.ctx)
	done := make(chan struct{})
	p.bgMu.Lock()
	p.bgCancel, p.bgDone = cancel, done
	p.bgMu.Unlock()
	p.bgStartMs.Store(time.Now().UnixMilli())
	p.lastBgTry.Store(time.Now().Unix())
	p.bgInProgress.Store(true)
	s.log.Info("Background saving started")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(done)
		defer cancel()
		err := s.writeSnapshot(ctx, false)
		p.lastBgSec.Store(int64(time.Since(time.UnixMilli(p.bgStartMs.Load())).Seconds()))
		p.lastBgOK.Store(err == nil)
		s.updateDiskError()
		p.bgInProgress.Store(false)
		p.saveMu.Unlock()
		if err == nil {
			s.log.Info("Background saving terminated with success")
		} else {
			s.log.Warn("Background saving error", "err", err)
		}
	}()
	return nil
}

// cancelBgSave stops a running background save and waits for it, as Redis kills its saving
// child before the final save at shutdown.
func (s *Server) cancelBgSave() {
	p := &s.persist
	p.bgMu.Lock()
	cancel, done := p.bgCancel, p.bgDone
	p.bgMu.Unlock()
	if cancel == nil {
		return
	}
	select {
	case <-done:
		return
	default:
	}
	s.log.Warn("There is a background save in progress; stopping it for the final save")
	cancel()
	<-done
}

// saveLoop starts background saves when a save point is reached (Redis's serverCron check),
// retrying a failed one no sooner than bgsaveRetryDelay.
func (s *Server) saveLoop() {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	p := &s.persist
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if p.bgInProgress.Load() {
			continue
		}
		s.rewriteCron()
		pts := p.points.Load()
		if pts == nil || len(*pts) == 0 {
			continue
		}
		now := time.Now().Unix()
		dirty := s.stats.dirty.Load()
		since := now - s.stats.lastSave.Load()
		for _, sp := range *pts {
			if dirty >= sp.Changes && since > sp.Seconds &&
				(now-p.lastBgTry.Load() > bgsaveRetryDelay || p.lastBgOK.Load()) {
				s.log.Info(fmt.Sprintf("%d changes in %d seconds. Saving...", sp.Changes, sp.Seconds))
				_ = s.BgSave(false)
				break
			}
		}
	}
}

// misconfRDB is Redis's reply to a write while stop-writes-on-bgsave-error holds writes back.
const misconfRDB = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. " +
	"Commands that may modify the data set are disabled, because this instance is configured to report errors during writes " +
	"if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."

// updateDiskError sets or clears the MISCONF refusal of writes (command.Table.DiskError), as
// Redis's writeCommandsDeniedByDiskError decides it: the last background save failed while
// save points are configured and stop-writes-on-bgsave-error is on, or the append-only log
// cannot be written. It runs whenever one of those changes.
func (s *Server) updateDiskError() {
	msg := ""
	switch {
	case s.cfg.GetBool("stop-writes-on-bgsave-error") && s.hasSavePoints() && !s.persist.lastBgOK.Load():
		msg = misconfRDB
	case s.aofEnabled() && !s.aof().lastWriteOK.Load():
		msg = "MISCONF Errors writing to the AOF file: " + s.aof().lastWriteErr()
	}
	if msg == "" {
		if s.table.DiskError.Load() != nil {
			s.table.DiskError.Store(nil)
		}
		return
	}
	if cur := s.table.DiskError.Load(); cur == nil || *cur != msg {
		s.table.DiskError.Store(&msg)
	}
}

// setSavePoints applies the `save` directive.
func (s *Server) setSavePoints(v string) {
	pts := config.SavePoints(v)
	s.persist.points.Store(&pts)
}

// hasSavePoints reports whether `save` is configured, which makes SHUTDOWN and SIGTERM save.
func (s *Server) hasSavePoints() bool {
	pts := s.persist.points.Load()
	return pts != nil && len(*pts) > 0
}

// prepareForShutdown is Redis's prepareForShutdown: it saves when asked to (SHUTDOWN SAVE), or
// by default when save points are configured, unless NOSAVE. The final save holds every shard
// lock, so it is exact; on success the listeners and client connections are closed before the
// locks are released, so no keyspace write can be acknowledged after the snapshot was taken.
// A failed save keeps the server running and returns the error, unless force.
func (s *Server) prepareForShutdown(mode int, force bool) error {
	save := mode == command.ShutdownSave || (mode == command.ShutdownDefault && s.hasSavePoints())
	if !save {
		s.beginClose()
		return nil
	}
	s.log.Warn("Saving the final snapshot before exiting.")
	s.notify("STATUS=Saving the final snapshot")
	p := &s.persist
	p.stopping.Store(true)
	s.cancelBgSave()
	p.saveMu.Lock()
	s.store.LockAll()
	err := s.writeSnapshot(context.Background(), true)
	if err != nil && !force {
		s.store.UnlockAll()
		p.stopping.Store(false)
		p.saveMu.Unlock()
		s.log.Warn("Error trying to save the DB, can't exit.", "err", err)
		s.notify("STATUS=Error trying to save the DB, can't exit.")
		return err
	}
	if err != nil {
		s.log.Warn("Error trying to save the DB; exiting anyway (FORCE).", "err", err)
	}
	s.beginClose()
	s.store.UnlockAll()
	p.saveMu.Unlock()
	return nil
}

// ShutdownOnSignal is what main runs on SIGTERM (sigint false) or SIGINT: SHUTDOWN with the
// flags shutdown-on-sigterm or shutdown-on-sigint names (by default SHUTDOWN's default: save
// if save points are configured), then a full stop. On a failed save the server keeps
// running, as Redis does, unless the flags say force, and the error says why.
func (s *Server) ShutdownOnSignal(sigint bool) error {
	name := "shutdown-on-sigterm"
	if sigint {
		name = "shutdown-on-sigint"
	}
	save, nosave, force := config.ShutdownOnSig(s.cfg.Get(name))
	mode := command.ShutdownDefault
	if save {
		mode = command.ShutdownSave
	} else if nosave {
		mode = command.ShutdownNoSave
	}
	s.notify("STOPPING=1")
	if err := s.prepareForShutdown(mode, force); err != nil {
		return err
	}
	return s.Close()
}

// infoPersistence renders INFO persistence with Redis 7.0's fields, in Redis's order.
func (s *Server) infoPersistence(b *strings.Builder) {
	p := &s.persist
	b01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	inBg := p.bgInProgress.Load()
	curSec, perc := int64(-1), 0.0
	done, total := p.keysDone.Load(), p.keysTotal.Load()
	if inBg {
		curSec = int64(time.Since(time.UnixMilli(p.bgStartMs.Load())).Seconds())
		if total > 0 {
			perc = min(100, float64(done)*100/float64(total))
		}
	} else {
		done, total = 0, 0
	}
	status := "ok"
	if !p.lastBgOK.Load() {
		status = "err"
	}
	fmt.Fprintf(b, "loading:%d\r\nasync_loading:0\r\ncurrent_cow_peak:0\r\ncurrent_cow_size:0\r\ncurrent_cow_size_age:0\r\n", b01(p.loading.Load()))
	fmt.Fprintf(b, "current_fork_perc:%.2f\r\ncurrent_save_keys_processed:%d\r\ncurrent_save_keys_total:%d\r\n", perc, done, total)
	fmt.Fprintf(b, "rdb_changes_since_last_save:%d\r\nrdb_bgsave_in_progress:%d\r\nrdb_last_save_time:%d\r\n",
		s.stats.dirty.Load(), b01(inBg), s.stats.lastSave.Load())
	fmt.Fprintf(b, "rdb_last_bgsave_status:%s\r\nrdb_last_bgsave_time_sec:%d\r\nrdb_current_bgsave_time_sec:%d\r\n",
		status, p.lastBgSec.Load(), curSec)
	fmt.Fprintf(b, "rdb_saves:%d\r\nrdb_last_cow_size:0\r\nrdb_last_load_keys_expired:%d\r\nrdb_last_load_keys_loaded:%d\r\n",
		p.saves.Load(), p.loadExpired.Load(), p.loadedKeys.Load())
	aofOn := s.aofEnabled()
	writeStatus := "ok"
	if a := s.aof(); a != nil && !a.lastWriteOK.Load() {
		writeStatus = "err"
	}
	fmt.Fprintf(b, "aof_enabled:%d\r\n", b01(aofOn))
	s.infoRewrite(b)
	fmt.Fprintf(b, "aof_last_write_status:%s\r\naof_last_cow_size:0\r\nmodule_fork_in_progress:0\r\nmodule_fork_last_cow_size:0\r\n", writeStatus)
	if aofOn {
		a := s.aof()
		a.mu.Lock()
		pending := a.pendingBytes
		a.mu.Unlock()
		// Redis's aof_current_size and aof_base_size: the log's size now and when it was
		// opened (base included).
		cur := a.baseSize.Load() + a.curSize.Load() - a.openedSize.Load()
		fmt.Fprintf(b, "aof_current_size:%d\r\naof_base_size:%d\r\naof_pending_rewrite:0\r\naof_buffer_length:%d\r\n"+
			"aof_pending_bio_fsync:0\r\naof_delayed_fsync:0\r\n", cur, a.baseSize.Load(), pending)
	}
	if p.loading.Load() {
		// Redis's loading fields, with its estimate of the time left: the time so far
		// scaled by the bytes left over the bytes read.
		total, done := p.loadTotal.Load(), p.loadDone.Load()
		perc, left := 0.0, int64(1)
		if total > 0 {
			perc = float64(done) * 100 / float64(total)
			left = total - done
		}
		start := p.loadStart.Load()
		eta := int64(1)
		if elapsed := time.Now().Unix() - start; elapsed > 0 {
			eta = elapsed * left / (done + 1)
		}
		fmt.Fprintf(b, "loading_start_time:%d\r\nloading_total_bytes:%d\r\nloading_rdb_used_mem:0\r\nloading_loaded_bytes:%d\r\n"+
			"loading_loaded_perc:%.2f\r\nloading_eta_seconds:%d\r\n", start, total, done, perc, eta)
	}
}

// loadFunction loads a function library saved in a snapshot.
func (s *Server) loadFunction(code []byte) error {
	return s.table.Scripting().RestoreLibrary(string(code))
}

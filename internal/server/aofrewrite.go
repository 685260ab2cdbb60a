package server

// BGREWRITEAOF: compacting the append-only log while serving, as Redis 7's multi-part AOF does
// (docs/persistence.md, "Rewriting the log").
//
//  1. Rotation: under the journal's locks a new incr segment seq+1 is created and the manifest
//     is replaced with {old base, old incrs, new incr}. From then on each effect is routed, in
//     Append, to one of the two open segments.
//  2. The store is walked shard by shard (SnapshotWalk, no lock held across shards) into a new
//     base snapshot, written atomically (temp file, fsync, rename, directory fsync).
//  3. The manifest is replaced with {new base, new incr}; the old base and segments are
//     deleted.
//
// Routing: an effect on a shard the walk has already captured is not in the base, so it goes
// to the new segment; an effect on a shard not captured yet will be in the base, so it must
// not be in the new segment, and goes to the old one, where it is durable until the new
// manifest is installed (and replayed before the new segment while the old manifest is the
// valid one: per shard, every effect in the old segment precedes every effect in the new one,
// since a shard only ever moves from "not captured" to "captured"). A writer holds its shard's
// lock when it appends, and the walk publishes its progress before unlocking a shard, so the
// decision agrees with what the walk copies. Multi-shard writes never straddle the cut (the
// dispatcher's settle), so the first key decides; a MULTI/EXEC block follows its first keyed
// effect. Server-wide effects (limiters, DB -1) always go to the new segment: they set state
// (RATELIMIT.SETSTATE with complete state, totals raised to at least, RESET, CREATE, DROP), so
// replaying one the base already reflects changes nothing. An effect with no key that changes
// whole databases (FLUSHALL, FLUSHDB, SWAPDB) aborts the rewrite: it and everything after it go
// to the new segment, and the manifest keeps listing both segments.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/store"
)

// Errors of BgRewriteAOF, with Redis's wording.
var (
	ErrRewriteInProgress = errors.New("Background append only file rewriting already in progress")
	errRewriteNoAOF      = errors.New("The append-only log is off (appendonly no)")
	errRewriteAborted    = errors.New("the rewrite was aborted by a write to whole databases (FLUSHALL, FLUSHDB or SWAPDB)")
)

// AOFRewriteBeforeManifest, when set (tests), runs after the new base is on disk and before the
// manifest that installs it is written; dir is the log's directory. An error fails the rewrite
// there.
var AOFRewriteBeforeManifest func(dir string) error

// rewriteState is INFO's view of rewrites.
type rewriteState struct {
	inProgress atomic.Bool
	scheduled  atomic.Bool
	startMs    atomic.Int64
	lastSec    atomic.Int64 // -1 before the first
	lastOK     atomic.Bool
	count      atomic.Int64
	failures   atomic.Int64 // consecutive
}

// Which segment an effect goes to during a rewrite.
const (
	sideUndecided = iota
	sideOld
	sideNew
)

// rwRoute is the routing state of a rewrite in progress (guarded by aofLog.mu).
type rwRoute struct {
	walksAtStart int64 // store.SnapshotWalks() at the rotation
	aborted      bool
	cancel       context.CancelFunc
	inBlock      bool
	side         int
	held         []store.Effect // a block's effects before its side is known
	toOld, toNew int64          // effects routed, for the log
}

// route puts e on the old or the new segment's list. Caller holds mu; a.rw is set.
func (a *aofLog) route(e store.Effect, isMulti, isExec bool) {
	r := a.rw
	if isMulti && !r.inBlock {
		r.inBlock, r.side = true, sideUndecided
		r.held = append(r.held[:0], store.CloneEffect(e))
		return
	}
	if r.inBlock {
		if r.side == sideUndecided {
			side := a.sideOf(e)
			if side == sideUndecided {
				if !isExec {
					r.held = append(r.held, store.CloneEffect(e))
					return
				}
				side = sideNew
			}
			r.side = side
			for _, h := range r.held {
				a.put(side, h)
			}
			clear(r.held)
			r.held = r.held[:0]
		}
		a.put(r.side, e)
		if isExec {
			r.inBlock, r.side = false, sideUndecided
		}
		return
	}
	side := a.sideOf(e)
	if side == sideUndecided {
		side = sideNew
	}
	a.put(side, e)
}

func (a *aofLog) put(side int, e store.Effect) {
	if side == sideOld {
		a.oldPending.add(e)
		if a.rw != nil {
			a.rw.toOld++
		}
	} else {
		a.pending.add(e)
		if a.rw != nil {
			a.rw.toNew++
		}
	}
}

// sideOf decides e's segment: sideUndecided for effects without keys that do not abort the
// rewrite (limiters, and the transaction markers).
func (a *aofLog) sideOf(e store.Effect) int {
	r := a.rw
	if r.aborted {
		return sideNew
	}
	if len(e.Args) > 0 && command.EqualFold(e.Args[0], "flushall") {
		r.aborted = true
		if r.cancel != nil {
			r.cancel()
		}
		return sideNew
	}
	if e.DB < 0 || len(e.Args) == 0 {
		return sideUndecided
	}
	if len(e.Args) == 1 && (command.EqualFold(e.Args[0], "multi") || command.EqualFold(e.Args[0], "exec") ||
		command.EqualFold(e.Args[0], "discard")) {
		return sideUndecided
	}
	var idx []int
	if cmd := a.srv.table.Lookup(e.Args[0]); cmd != nil {
		idx = cmd.KeyIndexes(e.Args)
	}
	if len(idx) == 0 || idx[0] >= len(e.Args) {
		// FLUSHALL, FLUSHDB, SWAPDB (or anything whose keys are unknown): give up the rewrite.
		r.aborted = true
		if r.cancel != nil {
			r.cancel()
		}
		return sideNew
	}
	st := a.srv.store
	shard := e.DB*st.DB(0).NumShards() + st.ShardIndex(e.Args[idx[0]])
	if walking, done := st.SnapshotProgress(); walking {
		if shard < done {
			return sideNew
		}
		return sideOld
	}
	if st.SnapshotWalks() > r.walksAtStart {
		return sideNew // the walk is over: everything was captured
	}
	return sideOld
}

// rotate starts routing: a new incr segment, listed in the manifest after the old ones.
func (a *aofLog) rotate(cancel context.CancelFunc) (seq uint64, err error) {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if a.closed {
		return 0, errRewriteNoAOF
	}
	m := a.manifest
	seq = m.Incrs[len(m.Incrs)-1].Seq + 1
	if m.Base != nil && m.Base.Seq >= seq {
		seq = m.Base.Seq + 1
	}
	name := persist.IncrName(a.filename, seq)
	path := filepath.Join(a.dir, name)
	_ = os.Remove(path) // a stray from a crashed rewrite, never listed in a manifest
	f, err := persist.CreateSegment(path, seq)
	if err != nil {
		return 0, fmt.Errorf("can't create the segment %s: %w", path, err)
	}
	m2 := &persist.Manifest{Base: m.Base, Incrs: append(append([]persist.ManifestFile(nil), m.Incrs...),
		persist.ManifestFile{Name: name, Seq: seq, Type: persist.ManifestIncr})}
	if err := persist.WriteManifest(filepath.Join(a.dir, persist.ManifestName(a.filename)), m2); err != nil {
		_ = f.Close()
		_ = os.Remove(path)
		return 0, fmt.Errorf("can't write the manifest: %w", err)
	}
	a.manifest = m2
	a.mu.Lock()
	// What was appended before the rotation belongs to the old segment.
	pend := a.pending.take(nil)
	pend.close()
	a.oldPending.close()
	a.oldPending.buf = append(a.oldPending.buf, pend.buf...)
	r := &rwRoute{walksAtStart: a.srv.store.SnapshotWalks(), cancel: cancel}
	if a.openBlocks > 0 {
		// A block's MULTI is already on the old segment's side: the rest follows it.
		r.inBlock, r.side = true, sideOld
	}
	a.rw = r
	a.mu.Unlock()
	a.oldF, a.oldPath, a.oldSize, a.oldBuf = a.f, a.segPath, a.size, a.buf
	a.oldUnsynced, a.oldTruncate, a.oldAvailable = a.unsynced, a.needTruncate, true
	a.f, a.segPath, a.size, a.buf = f, path, persist.LogHeaderSize, nil
	a.unsynced, a.needTruncate = false, false
	a.curSize.Store(a.size)
	return seq, nil
}

// writeOld writes the old segment's frames (during a rewrite) and fsyncs it if asked. Caller
// holds writeMu.
func (a *aofLog) writeOld(fsync bool) error {
	if !a.oldAvailable {
		return nil
	}
	if len(a.oldBuf) > 0 {
		if a.oldTruncate {
			if err := a.oldF.Truncate(a.oldSize); err != nil {
				a.writeFailed("truncate after a short write", err)
				return err
			}
			a.oldTruncate = false
		}
		n, err := a.oldF.Write(a.oldBuf)
		if err != nil {
			a.oldTruncate = n > 0
			a.writeFailed("write", err)
			return err
		}
		a.oldSize += int64(len(a.oldBuf))
		a.oldBuf = a.oldBuf[:0]
		a.oldUnsynced = true
	}
	if fsync && a.oldUnsynced {
		if err := a.oldF.Sync(); err != nil {
			a.writeFailed("fsync", err)
			return err
		}
		a.oldUnsynced = false
	}
	return nil
}

// endRoute stops routing: every later effect goes to the new segment. The old segment gets
// what was routed to it, fsynced, and is closed.
func (a *aofLog) endRoute() error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	a.mu.Lock()
	if r := a.rw; r != nil && r.inBlock {
		for _, h := range r.held {
			a.put(sideNew, h)
		}
	}
	a.rw = nil
	a.mu.Unlock()
	var err error
	if !a.closed {
		err = a.commitLocked(true)
	}
	if a.oldAvailable {
		if err == nil && len(a.oldBuf) > 0 {
			err = errors.New("the old segment could not be written")
		}
		if err != nil {
			// What the old segment still lacks must not be lost: it stays open, and every
			// commit retries it (and fails, holding replies under appendfsync always) until
			// it is written.
			return err
		}
		if cerr := a.oldF.Close(); cerr != nil {
			err = cerr
		}
		a.oldAvailable = false
		a.oldF = nil
	}
	return err
}

// install replaces the manifest with {base, the current segment} and deletes what it no
// longer lists.
func (a *aofLog) install(base string, baseSeq uint64, baseBytes int64) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if a.closed {
		return errRewriteNoAOF
	}
	old := a.manifest
	last := old.Incrs[len(old.Incrs)-1]
	m := &persist.Manifest{Base: &persist.ManifestFile{Name: base, Seq: baseSeq, Type: persist.ManifestBase},
		Incrs: []persist.ManifestFile{last}}
	if err := persist.WriteManifest(filepath.Join(a.dir, persist.ManifestName(a.filename)), m); err != nil {
		return fmt.Errorf("can't write the manifest: %w", err)
	}
	a.manifest = m
	a.baseSize.Store(baseBytes + persist.LogHeaderSize)
	a.openedSize.Store(persist.LogHeaderSize)
	a.removeUnlisted()
	return nil
}

// removeUnlisted deletes the log's files the manifest does not list (the files a rewrite
// replaced, and strays of a crashed one). Caller holds writeMu.
func (a *aofLog) removeUnlisted() {
	keep := map[string]bool{persist.ManifestName(a.filename): true}
	if a.manifest.Base != nil {
		keep[a.manifest.Base.Name] = true
	}
	for _, f := range a.manifest.Incrs {
		keep[f.Name] = true
	}
	ents, err := os.ReadDir(a.dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if keep[n] || !strings.HasPrefix(n, a.filename+".") ||
			!(strings.HasSuffix(n, ".base.hkvs") || strings.HasSuffix(n, ".incr.hkvl") || strings.HasSuffix(n, ".tmp")) {
			continue
		}
		if err := os.Remove(filepath.Join(a.dir, n)); err == nil {
			a.srv.log.Info("Removed a file the append-only log no longer uses", "file", n)
		}
	}
}

// BgRewriteAOF implements BGREWRITEAOF: it starts the rewrite in the background and reports
// whether it was only scheduled (a BGSAVE is running: it starts when that ends).
func (s *Server) BgRewriteAOF() (scheduled bool, err error) {
	p := &s.persist
	if !s.aofEnabled() {
		return false, errRewriteNoAOF
	}
	if s.closed.Load() || p.stopping.Load() || s.ctx == nil {
		return false, errors.New("server is shutting down")
	}
	if p.rw.inProgress.Load() {
		return false, ErrRewriteInProgress
	}
	if !p.saveMu.TryLock() {
		if p.rw.inProgress.Load() {
			return false, ErrRewriteInProgress
		}
		p.rw.scheduled.Store(true)
		return true, nil
	}
	s.startRewrite()
	return false, nil
}

// startRewrite runs the rewrite in a goroutine. Caller holds saveMu, which the goroutine
// releases.
func (s *Server) startRewrite() {
	p := &s.persist
	p.rw.scheduled.Store(false)
	p.rw.inProgress.Store(true)
	p.rw.startMs.Store(time.Now().UnixMilli())
	ctx, cancel := context.WithCancel(s.ctx)
	s.log.Info("Background append only file rewriting started")
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		err := s.rewriteAOF(ctx, cancel)
		p.rw.lastSec.Store(int64(time.Since(time.UnixMilli(p.rw.startMs.Load())).Seconds()))
		p.rw.lastOK.Store(err == nil)
		if err == nil {
			p.rw.count.Add(1)
			p.rw.failures.Store(0)
			s.log.Info("Background AOF rewrite finished successfully")
		} else {
			p.rw.failures.Add(1)
			s.log.Warn("Background AOF rewrite failed", "err", err)
		}
		p.rw.inProgress.Store(false)
		p.saveMu.Unlock()
	}()
}

func (s *Server) rewriteAOF(ctx context.Context, cancel context.CancelFunc) error {
	a := s.aof()
	seq, err := a.rotate(cancel)
	if err != nil {
		return err
	}
	base := persist.BaseName(a.filename, seq)
	path := filepath.Join(a.dir, base)
	st, err := persist.SaveFile(path, s.store, persist.SaveOptions{
		Now: s.clock.NowMs(), TimeFloor: s.clock.HighWater, Version: Version, Ctx: ctx, Functions: s.table.Scripting().Libraries()})
	a.mu.Lock()
	var toOld, toNew int64
	if a.rw != nil {
		toOld, toNew = a.rw.toOld, a.rw.toNew
		if a.rw.aborted && err == nil {
			err = errRewriteAborted
		}
	}
	a.mu.Unlock()
	s.log.Info("Base of the rewritten append-only log written", "err", err,
		"effects_to_old_segment", toOld, "effects_to_new_segment", toNew)
	if err == nil && AOFRewriteBeforeManifest != nil {
		err = AOFRewriteBeforeManifest(a.dir)
	}
	if eerr := a.endRoute(); err == nil {
		err = eerr
	}
	if err != nil {
		return err
	}
	if err := a.install(base, seq, st.Bytes); err != nil {
		return err
	}
	s.log.Info("Installed the rewritten append-only log", "base", base, "bytes", st.Bytes, "keys", st.Keys,
		"limiters", st.Limiters, "limiter_keys", st.LimiterKeys)
	return nil
}

// rewriteCron starts a scheduled rewrite once no save runs, and an automatic one when the log
// has grown by auto-aof-rewrite-percentage since it was opened or rewritten and is at least
// auto-aof-rewrite-min-size (Redis's serverCron checks). Called from saveLoop.
func (s *Server) rewriteCron() {
	p := &s.persist
	if !s.aofEnabled() || p.rw.inProgress.Load() || p.bgInProgress.Load() || p.stopping.Load() || s.closed.Load() {
		return
	}
	start := p.rw.scheduled.Load()
	if !start {
		a := s.aof()
		perc, minSize := s.cfg.GetInt("auto-aof-rewrite-percentage"), s.cfg.GetInt("auto-aof-rewrite-min-size")
		base := a.baseSize.Load()
		cur := base + a.curSize.Load() - a.openedSize.Load()
		if perc > 0 && cur > minSize && base > 0 && (cur-base)*100/base >= perc &&
			(p.rw.lastOK.Load() || time.Now().UnixMilli()-p.rw.startMs.Load() > 60_000) {
			s.log.Info(fmt.Sprintf("Starting automatic rewriting of AOF on %d%% growth", (cur-base)*100/base))
			start = true
		}
	}
	if start && p.saveMu.TryLock() {
		s.startRewrite()
	}
}

// infoRewrite renders INFO's aof_rewrite fields.
func (s *Server) infoRewrite(b *strings.Builder) {
	r := &s.persist.rw
	b01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	cur := int64(-1)
	if r.inProgress.Load() {
		cur = int64(time.Since(time.UnixMilli(r.startMs.Load())).Seconds())
	}
	status := "ok"
	if !r.lastOK.Load() {
		status = "err"
	}
	fmt.Fprintf(b, "aof_rewrite_in_progress:%d\r\naof_rewrite_scheduled:%d\r\naof_last_rewrite_time_sec:%d\r\n"+
		"aof_current_rewrite_time_sec:%d\r\naof_last_bgrewrite_status:%s\r\naof_rewrites:%d\r\naof_rewrites_consecutive_failures:%d\r\n",
		b01(r.inProgress.Load()), b01(r.scheduled.Load()), r.lastSec.Load(), cur, status, r.count.Load(), r.failures.Load())
}

package server

// The append-only log (docs/persistence.md): every effect the store journals is appended to
// an in-memory buffer and written to the current incr segment of dir/appenddirname by a
// background goroutine, or, with appendfsync always, by the connections themselves right
// before they send replies (group commit). The format is internal/persist's HKVL.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// fsync policies (appendfsync).
const (
	fsyncEverysec int32 = iota
	fsyncAlways
	fsyncNo
)

func fsyncPolicy(v string) int32 {
	switch v {
	case "always":
		return fsyncAlways
	case "no":
		return fsyncNo
	}
	return fsyncEverysec
}

const (
	// aofWriteEvery is how often the background goroutine writes what was appended (every
	// policy), so that a process crash loses at most this much with everysec and no.
	aofWriteEvery = 100 * time.Millisecond
	// aofKickBytes of pending effects wake the writer early, bounding the buffer under load.
	aofKickBytes = 4 << 20
	// maxFramePayload closes a batch frame once it holds this much (one effect may exceed it).
	maxFramePayload = 1 << 20
)

// errAOFStopped is returned to waiters when the log was turned off while they waited.
var errAOFStopped = errors.New("the append-only log was turned off")

// aofLog is the store's Journal while appendonly is on.
//
// Lock order: shard and limiter locks (held by Append's callers), then mu. writeMu is taken
// with no shard lock held, and before mu when both are needed.
type aofLog struct {
	srv      *Server
	dir      string // the absolute append-only directory
	filename string // appendfilename, for the file names of a rewrite
	policy   *atomic.Int32

	// mu guards what Append touches: it only appends to memory, never does I/O.
	mu          sync.Mutex
	blockClosed *sync.Cond // signalled (under mu) when an open MULTI block gets its EXEC
	// pending holds the frames of effects appended and not yet handed to the writer, encoded
	// as they are appended (an effect's arguments are valid only during Append).
	pending      frameBuf
	pendingBytes int
	appended     uint64 // effects appended so far
	lastTime     int64  // the time of the last effect, for effects without one
	// openAt is the number of the MULTI effect (1-based, as appended) of a transaction block
	// whose EXEC has not been appended yet; 0 when none is open. Effects of other clients can
	// land inside an open block (txJournal in internal/command/effects.go), and a replay applies
	// them only with the EXEC, so they are not acknowledgeable before the EXEC is on disk.
	openAt uint64
	// openBlocks counts MULTI effects without their EXEC yet. The dispatcher never lets two
	// blocks overlap (an EXEC that opens one early holds every shard lock); if one ever did,
	// acknowledgements would wait for both.
	openBlocks int
	stopped    bool

	appendedA atomic.Uint64 // appended, readable without mu
	// ackable is how many effects are on disk (fsynced) and outside any unfinished block:
	// with appendfsync always a connection sends its replies once ackable covers every effect
	// appended before it flushes.
	ackable atomic.Uint64
	off     atomic.Bool // stopped, readable without mu

	// writeMu serializes writing: the order of swaps of pending is the order in the file.
	writeMu      sync.Mutex
	f            *os.File
	segPath      string
	size         int64  // bytes of the segment known to be written whole
	buf          []byte // encoded frames not written yet (kept across a failed write)
	bufAckable   uint64 // ackable once buf is written and fsynced
	unsynced     bool   // written since the last fsync
	needTruncate bool   // a partial write left bytes after size
	spare        []byte // pending's next buffer (guarded by writeMu)
	closed       bool

	// manifest is the manifest on disk (guarded by writeMu).
	manifest *persist.Manifest

	// A rewrite in progress (aofrewrite.go). rw and oldPending are guarded by mu; the old
	// segment's writing state by writeMu.
	rw           *rwRoute
	oldPending   frameBuf
	oldF         *os.File
	oldPath      string
	oldSize      int64
	oldBuf       []byte
	oldUnsynced  bool
	oldTruncate  bool
	oldAvailable bool // oldF is open

	curSize     atomic.Int64 // segment bytes, for INFO
	baseSize    atomic.Int64 // the whole log's size (base and segments) when it was opened or rewritten
	openedSize  atomic.Int64 // the current segment's size then
	lastWriteOK atomic.Bool
	// writeErr is the last write or fsync error, as strerror words it (MISCONF's text).
	writeErr atomic.Pointer[string]
	kick     chan struct{}
}

// lastWriteErr is the last write error's text, worded as C's strerror (capitalized, as Redis
// prints it in MISCONF).
func (a *aofLog) lastWriteErr() string {
	if p := a.writeErr.Load(); p != nil {
		return *p
	}
	return "Unknown error"
}

// strerror words err as C's strerror does for a system error ("No space left on device").
func strerror(err error) string {
	var errno syscall.Errno
	msg := err.Error()
	if errors.As(err, &errno) {
		msg = errno.Error()
	}
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:]
}

// Append implements store.Journal. Callers hold the write's locks: it only appends to memory.
func (a *aofLog) Append(e store.Effect) {
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return
	}
	if e.Time == 0 {
		e.Time = a.lastTime
	} else {
		a.lastTime = e.Time
	}
	isMulti := len(e.Args) == 1 && command.EqualFold(e.Args[0], "multi")
	isExec := len(e.Args) == 1 && command.EqualFold(e.Args[0], "exec")
	if a.rw != nil {
		a.route(e, isMulti, isExec)
	} else {
		a.pending.add(e)
	}
	a.appended++
	a.appendedA.Store(a.appended)
	n := 4
	for _, x := range e.Args {
		n += len(x) + 2
	}
	a.pendingBytes += n
	kick := a.pendingBytes >= aofKickBytes
	if isMulti || isExec {
		switch {
		case isMulti:
			if a.openBlocks == 0 {
				a.openAt = a.appended
			}
			a.openBlocks++
		case isExec && a.openBlocks > 0:
			if a.openBlocks--; a.openBlocks == 0 {
				a.openAt = 0
				a.blockClosed.Broadcast()
			}
		}
	}
	a.mu.Unlock()
	if kick {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// always reports whether replies must wait for the log (appendfsync always).
func (a *aofLog) always() bool { return a.policy.Load() == fsyncAlways && !a.off.Load() }

// waitDurable returns once every effect appended so far is on disk and acknowledgeable, doing
// the write and fsync itself if no other connection is doing it already (group commit). An
// error means the log could not be written: the caller must not send its replies.
func (a *aofLog) waitDurable() error {
	target := a.appendedA.Load()
	for a.ackable.Load() < target {
		if a.off.Load() {
			return nil
		}
		a.mu.Lock()
		for a.openAt != 0 && a.openAt <= target && !a.stopped {
			a.blockClosed.Wait() // the EXEC comes at once: its client holds the locks and runs
		}
		a.mu.Unlock()
		if err := a.commit(true, target); err != nil {
			return err
		}
	}
	return nil
}

// commit writes everything appended so far and, with fsync, makes it durable. With target > 0
// and fsync it returns at once if another commit already made target acknowledgeable.
func (a *aofLog) commit(fsync bool, target uint64) error {
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if a.closed {
		return nil
	}
	if target > 0 && fsync && a.ackable.Load() >= target {
		return nil
	}
	return a.commitLocked(fsync)
}

// commitLocked is commit with writeMu held.
func (a *aofLog) commitLocked(fsync bool) error {
	a.mu.Lock()
	batch := a.pending.take(a.spare)
	old := a.oldPending.take(nil)
	upTo, open := a.appended, a.openAt
	a.pendingBytes = 0
	a.mu.Unlock()

	// The last frame of each batch is closed here, without mu: its checksum covers up to
	// maxFramePayload bytes.
	if len(old.buf) > 0 {
		old.close()
		a.oldBuf = append(a.oldBuf, old.buf...)
	}
	batch.close()
	if len(a.buf) == 0 && cap(batch.buf) <= 8<<20 {
		a.buf, a.spare = batch.buf, a.buf[:0]
	} else {
		a.buf = append(a.buf, batch.buf...)
		if cap(batch.buf) <= 8<<20 {
			a.spare = batch.buf[:0]
		}
	}
	if open != 0 {
		a.bufAckable = open - 1
	} else {
		a.bufAckable = upTo
	}
	// During a rewrite, effects are split between the old segment and the new one (both are
	// in the manifest until the rewrite installs its base): both must be on disk.
	if err := a.writeOld(fsync); err != nil {
		return err
	}
	if err := a.writeBuf(); err != nil {
		return err
	}
	if fsync && a.unsynced {
		if err := a.f.Sync(); err != nil {
			a.writeFailed("fsync", err)
			return err
		}
		a.unsynced = false
		a.writeWorks() // a failed fsync is retried with nothing new to write
	}
	if !a.unsynced {
		if a.bufAckable > a.ackable.Load() {
			a.ackable.Store(a.bufAckable)
		}
	}
	return nil
}

// frameBuf encodes effects into log frames as they are appended: one frame per run of effects
// with the same time, closed early at maxFramePayload. Encoding at once is what lets Append
// keep nothing of the effect it is given (store.Journal's contract), so a logged write
// allocates nothing once the buffer has grown.
type frameBuf struct {
	buf  []byte
	open bool  // a frame is open at start
	at   int   // start of the open frame
	n    int   // effects in the open frame
	time int64 // the open frame's time
}

// add encodes e, opening a new frame when e's time differs from the open frame's or that
// frame is full.
func (f *frameBuf) add(e store.Effect) {
	if f.open && (e.Time != f.time || len(f.buf)-f.at >= maxFramePayload) {
		f.close()
	}
	if !f.open {
		f.buf, f.at = persist.BeginBatch(f.buf, e.Time)
		f.open, f.n, f.time = true, 0, e.Time
	}
	f.buf = persist.AppendEffect(f.buf, e)
	f.n++
}

// close finishes the open frame, if any.
func (f *frameBuf) close() {
	if f.open {
		persist.EndBatch(f.buf, f.at, f.n)
		f.open = false
	}
}

// take returns what was encoded (its last frame possibly still open: the caller closes it)
// and starts afresh in spare.
func (f *frameBuf) take(spare []byte) frameBuf {
	out := *f
	*f = frameBuf{buf: spare[:0]}
	return out
}

// writeBuf writes buf to the segment. A failed or partial write leaves buf as it is for the
// next attempt, and the segment is cut back to its last whole frame before that attempt, so
// the file never holds a partial frame followed by good ones.
func (a *aofLog) writeBuf() error {
	if len(a.buf) == 0 {
		return nil
	}
	if a.needTruncate {
		if err := a.f.Truncate(a.size); err != nil {
			a.writeFailed("truncate after a short write", err)
			return err
		}
		a.needTruncate = false
	}
	n, err := a.f.Write(a.buf)
	if err != nil {
		a.needTruncate = n > 0
		a.writeFailed("write", err)
		return err
	}
	a.size += int64(len(a.buf))
	a.curSize.Store(a.size)
	a.unsynced = true
	if cap(a.buf) > 8<<20 {
		a.buf = nil
	} else {
		a.buf = a.buf[:0]
	}
	a.writeWorks()
	return nil
}

// writeWorks records a successful write or fsync after failed ones: the MISCONF refusal of
// writes ends with it.
func (a *aofLog) writeWorks() {
	if !a.lastWriteOK.Load() {
		a.srv.log.Warn("Writing the append-only log works again", "file", a.segPath)
		a.lastWriteOK.Store(true)
		a.srv.updateDiskError()
	}
}

func (a *aofLog) writeFailed(what string, err error) {
	if a.lastWriteOK.Load() {
		a.srv.log.Warn("Error writing the append-only log; retrying (with appendfsync always, replies wait)",
			"op", what, "file", a.segPath, "err", err)
	}
	msg := strerror(err)
	a.writeErr.Store(&msg)
	if a.lastWriteOK.Swap(false) {
		a.srv.updateDiskError()
	}
}

// run writes what was appended every aofWriteEvery (or sooner, when much is pending), and
// fsyncs as appendfsync says: every time with always, once a second with everysec, never
// with no.
func (a *aofLog) run(ctx context.Context) {
	t := time.NewTicker(aofWriteEvery)
	defer t.Stop()
	lastSync := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.kick:
		}
		if a.off.Load() {
			return
		}
		pol := a.policy.Load()
		sync := pol == fsyncAlways || (pol == fsyncEverysec && time.Since(lastSync) >= time.Second)
		if sync {
			lastSync = time.Now()
		}
		_ = a.commit(sync, 0)
	}
}

// close writes and fsyncs what is left and closes the segment. Effects appended afterwards
// are dropped.
func (a *aofLog) close() error {
	a.mu.Lock()
	a.stopped = true
	a.off.Store(true)
	a.openAt, a.openBlocks = 0, 0
	a.blockClosed.Broadcast()
	a.mu.Unlock()
	err := a.commit(true, 0)
	a.writeMu.Lock()
	defer a.writeMu.Unlock()
	if a.closed {
		return err
	}
	a.closed = true
	if a.oldAvailable {
		_ = a.oldF.Close()
		a.oldAvailable = false
	}
	if cerr := a.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ---- starting: load, then open for appending ----

// aofDir is dir/appenddirname.
func (s *Server) aofDir() string {
	return filepath.Join(s.cfg.Get("dir"), s.cfg.Get("appenddirname"))
}

// startAOF loads the data at startup with appendonly yes and opens the log for appending.
// If the log's manifest exists, the log is the data (it wins over the snapshot, as in Redis):
// its base, then every batch replayed. Otherwise the snapshot is loaded, if there is one, and a
// new log is created whose base is that data.
func (s *Server) startAOF() error {
	dir := s.aofDir()
	name := s.cfg.Get("appendfilename")
	mpath := filepath.Join(dir, persist.ManifestName(name))
	m, err := persist.ReadManifest(mpath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if stray, _ := filepath.Glob(filepath.Join(dir, "*.incr.hkvl")); len(stray) > 0 {
			return fmt.Errorf("Bad append-only log, refusing to start: %s holds log segments (%s ...) but no manifest %s; "+
				"restore the manifest, or move the directory away to start from the snapshot", dir, filepath.Base(stray[0]), filepath.Base(mpath))
		}
		loaded, err := s.loadSnapshot()
		if err != nil {
			return err
		}
		return s.createAOF(dir, name, loaded)
	case err != nil:
		s.log.Error("Bad append-only log manifest; refusing to start", "file", mpath, "err", err)
		return fmt.Errorf("Bad append-only log, refusing to start: %w", err)
	}
	return s.loadAOF(dir, name, m)
}

// createAOF creates a new log in dir: a base holding the data just loaded from the snapshot
// (if any), and an empty incr segment.
func (s *Server) createAOF(dir, name string, withBase bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("Can't create the append-only directory %s: %w", dir, err)
	}
	m := &persist.Manifest{}
	var baseSize int64
	if withBase {
		base := persist.BaseName(name, 1)
		st, err := persist.SaveFile(filepath.Join(dir, base), s.store, persist.SaveOptions{
			Now: s.clock.NowMs(), TimeFloor: s.clock.HighWater, Version: Version, Functions: s.table.Scripting().Libraries()})
		if err != nil {
			return fmt.Errorf("Can't write the append-only log's base %s: %w", filepath.Join(dir, base), err)
		}
		baseSize = st.Bytes
		m.Base = &persist.ManifestFile{Name: base, Seq: 1, Type: persist.ManifestBase}
		s.log.Info("Created the append-only log's base from the loaded snapshot", "file", filepath.Join(dir, base), "bytes", st.Bytes)
	}
	seg := persist.IncrName(name, 1)
	f, err := persist.CreateSegment(filepath.Join(dir, seg), 1)
	if err != nil {
		return fmt.Errorf("Can't create the append-only log segment: %w", err)
	}
	m.Incrs = []persist.ManifestFile{{Name: seg, Seq: 1, Type: persist.ManifestIncr}}
	mpath := filepath.Join(dir, persist.ManifestName(name))
	if err := persist.WriteManifest(mpath, m); err != nil {
		_ = f.Close()
		return fmt.Errorf("Can't write the append-only log manifest %s: %w", mpath, err)
	}
	s.log.Info("Created the append-only log", "dir", dir, "manifest", filepath.Base(mpath), "segment", seg)
	s.installAOF(f, filepath.Join(dir, seg), dir, name, persist.LogHeaderSize, baseSize+persist.LogHeaderSize, m)
	return nil
}

// loadAOF loads the log of manifest m and opens its last segment for appending.
func (s *Server) loadAOF(dir, name string, m *persist.Manifest) error {
	start := time.Now()
	rp := &replayer{s: s}
	rp.init()
	var baseSize int64
	// Progress is measured in bytes of the whole log: where each file starts in it.
	offsets, total := map[string]int64{}, int64(0)
	if m.Base != nil {
		p := filepath.Join(dir, m.Base.Name)
		offsets[p] = total
		if fi, err := os.Stat(p); err == nil {
			total += fi.Size()
		}
	}
	for _, inc := range m.Incrs {
		p := filepath.Join(dir, inc.Name)
		offsets[p] = total
		if fi, err := os.Stat(p); err == nil {
			total += fi.Size()
		}
	}
	prog := s.newLoadProgress("append-only log", total)
	st, err := persist.ReadLog(dir, m, persist.LogReplay{
		Base: func(path string) error {
			// Every key of the base is loaded, expired or not: the batches after it replay at
			// their own times, when such a key may still have been live.
			ls, err := persist.LoadFile(path, s.store, persist.LoadOptions{SetFloor: s.clock.SetFloor, Now: func() int64 { return 0 }, Function: s.loadFunction,
				Progress: func(keys, bytes int64) error {
					n := keys - prog.keys
					prog.keys = keys
					return prog.step(n, offsets[path]+bytes)
				}})
			if err != nil {
				return err
			}
			if fi, err := os.Stat(path); err == nil {
				baseSize = fi.Size()
			}
			s.log.Info("Loaded the append-only log's base", "file", path, "keys", ls.Keys, "limiters", ls.Limiters, "limiter_keys", ls.LimiterKeys)
			return nil
		},
		Batch: func(seg string, b *persist.Batch) error {
			prog.effects += int64(len(b.Effects))
			prog.batchEffects = int64(len(b.Effects))
			return rp.batch(seg, b)
		},
		Progress: func(seg string, offset int64) error { return prog.step(prog.batchEffects, offsets[seg]+offset) },
	})
	if errors.Is(err, errLoadStopped) {
		return err
	}
	var torn *persist.FormatError
	if errors.As(err, &torn) && errors.Is(err, persist.ErrLogTorn) {
		if !s.cfg.GetBool("aof-load-truncated") {
			s.log.Error("The append-only log ends in a torn frame; refusing to start (aof-load-truncated no)", "file", torn.File, "offset", torn.Offset, "err", err)
			return fmt.Errorf("Bad append-only log, refusing to start: %w. aof-load-truncated is no: "+
				"run hotkv-server --check-aof --fix %s to cut the torn frame off, or start with aof-load-truncated yes", err, dir)
		}
		if terr := persist.TruncateTail(torn.File, st.GoodSize); terr != nil {
			return fmt.Errorf("Can't truncate the torn tail of %s at offset %d: %w", torn.File, st.GoodSize, terr)
		}
		s.log.Warn("!!! Warning: the append-only log ends in a torn frame (a crash while writing); it was truncated to the last whole frame. AOF loaded anyway because aof-load-truncated is enabled",
			"file", torn.File, "offset", torn.Offset, "bytes_dropped", st.LastSize-st.GoodSize, "reason", torn.Msg)
		st.SegmentBytes -= st.LastSize - st.GoodSize
		st.LastSize = st.GoodSize
		err = nil
	}
	if err != nil {
		s.log.Error("Bad append-only log; refusing to start", "err", err)
		if errors.Is(err, persist.ErrLogCorrupt) || errors.Is(err, persist.ErrCorrupt) {
			return fmt.Errorf("Bad append-only log, refusing to start (this is not a torn tail, so it is not repaired automatically; "+
				"hotkv-server --check-aof %s reports it; restore a good copy of the directory): %w", dir, err)
		}
		return fmt.Errorf("Can't load the append-only log in %s, refusing to start: %w", dir, err)
	}
	s.clock.SetFloor(st.MaxTimeMs)
	discard := rp.finish()
	s.resetStatsAfterLoad()
	f, err := os.OpenFile(st.LastSegment, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("Can't open the append-only log segment %s for appending: %w", st.LastSegment, err)
	}
	s.installAOF(f, st.LastSegment, dir, name, st.LastSize, baseSize+st.SegmentBytes, m)
	if discard {
		// The log ends inside a transaction whose EXEC never made it: the replay dropped it,
		// and appending must not continue inside it.
		s.aof().Append(store.Effect{DB: -1, Args: [][]byte{[]byte("DISCARD")}, Time: st.MaxTimeMs})
	}
	s.log.Info("DB loaded from append only file", "dir", dir, "seconds", time.Since(start).Seconds(), "keys", s.keyCount(),
		"segments", st.Segments, "batches", st.Batches, "effects", st.Effects, "time_floor_ms", st.MaxTimeMs)
	return nil
}

// installAOF makes the log, appending to segment seg (open as f, size bytes long), the store's
// journal; total is the whole log's size.
func (s *Server) installAOF(f *os.File, seg, dir, name string, size, total int64, m *persist.Manifest) {
	a := &aofLog{srv: s, dir: dir, filename: name, policy: &s.aofPolicy, f: f, segPath: seg, size: size,
		manifest: m, kick: make(chan struct{}, 1)}
	a.baseSize.Store(total)
	a.openedSize.Store(size)
	a.blockClosed = sync.NewCond(&a.mu)
	a.curSize.Store(size)
	a.lastWriteOK.Store(true)
	s.aofp.Store(a)
	s.setJournal(a)
}

// resetStatsAfterLoad forgets what replaying counted: command statistics and changes since the
// last save describe clients' work, as in Redis, whose AOF loading does not count either.
func (s *Server) resetStatsAfterLoad() {
	for _, c := range s.table.All() {
		resetCmd(c)
	}
	s.stats.errMu.Lock()
	s.stats.errorStats = map[string]int64{}
	s.stats.errMu.Unlock()
	s.stats.totalErrorReplies.Store(0)
	s.stats.dirty.Store(0)
}

// replayer applies the log's effects through the command table, as one client would: each
// batch at its recorded time, so that lazy expiry decides as it did on the primary, never by
// this server's clock, with the effect's database selected first.
type replayer struct {
	s      *Server
	client command.Client
	ctx    command.Ctx
	db     int
	// errors counts the effects that failed (a reply that is an error): a replica's count is
	// RAFT STATUS apply_errors, since each one is a divergence from the leader.
	errors atomic.Int64
}

func (r *replayer) init() {
	r.client.User = "default"
	r.client.Authenticated = true
	r.client.Flags = "N"
	r.client.LogApplier = true
	r.client.OriginalNames = true // effects are logged by the commands' own names
	r.client.CreatedAt = time.Now()
	w := resp.NewWriter()
	r.client.Writer = w
	r.ctx = command.Ctx{W: w, Client: &r.client, Srv: r.s, Store: r.s.store}
}

func (r *replayer) batch(seg string, b *persist.Batch) error {
	r.ctx.Now = b.TimeMs
	for i, e := range b.Effects {
		if e.DB >= r.s.store.NumDBs() {
			return &persist.FormatError{File: seg, Offset: b.Offset, Err: persist.ErrLogCorrupt,
				Msg: fmt.Sprintf("effect %d of the batch is for database %d, but this server has %d databases (start it with databases %d or more)",
					i, e.DB, r.s.store.NumDBs(), e.DB+1)}
		}
		if e.DB >= 0 && e.DB != r.db {
			r.exec(seg, b, [][]byte{[]byte("SELECT"), []byte(strconv.Itoa(e.DB))})
			r.db = e.DB
		}
		r.exec(seg, b, e.Args)
	}
	return nil
}

func (r *replayer) exec(seg string, b *persist.Batch, args [][]byte) {
	r.ctx.Args = args
	r.ctx.DB = r.s.store.DB(r.client.DB)
	r.s.table.Exec(&r.ctx)
	if buf := r.ctx.W.Buf; len(buf) > 0 && buf[0] == '-' {
		if n := r.errors.Add(1); seg == "raft" {
			// A replica that cannot apply what the leader did has diverged from it: loud,
			// every time (RAFT STATUS apply_errors counts them).
			r.s.log.Error("An effect applied from the Raft log failed; this replica now differs from the leader",
				"effect", clip(string(joinArgs(args)), 200), "reply", clip(string(buf), 200), "apply_errors", n)
		} else if n <= 5 {
			r.s.log.Warn("An effect replayed from the append-only log failed", "file", seg, "offset", b.Offset,
				"effect", clip(string(joinArgs(args)), 200), "reply", clip(string(buf), 200))
		}
	}
	r.ctx.W.Reset()
}

// finish reports the replay's errors and whether it ended inside a transaction block, which
// it then discards.
func (r *replayer) finish() (discarded bool) {
	if n := r.errors.Load(); n > 0 {
		r.s.log.Warn("Effects replayed from the append-only log failed", "count", n)
	}
	if in, n := r.client.InMulti(); in {
		r.s.log.Warn("The append-only log ends inside a transaction that never reached its EXEC (it was never acknowledged); it is discarded", "queued_effects", n)
		r.exec("", &persist.Batch{}, [][]byte{[]byte("DISCARD")})
		return true
	}
	return false
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func joinArgs(args [][]byte) []byte {
	var out []byte
	for i, a := range args {
		if i > 0 {
			out = append(out, ' ')
		}
		out = append(out, a...)
	}
	return out
}

// aof is the append-only log, nil before Start has loaded the data or without appendonly.
func (s *Server) aof() *aofLog { return s.aofp.Load() }

// aofEnabled reports whether the log is on (INFO aof_enabled).
func (s *Server) aofEnabled() bool {
	a := s.aof()
	return a != nil && !a.off.Load()
}

// stopAOF turns the log off at run time (CONFIG SET appendonly no): what was appended is
// written and fsynced, and the segment closed. Further effects are dropped.
func (s *Server) stopAOF() {
	a := s.aof()
	if a == nil || a.off.Load() {
		return
	}
	if err := a.close(); err != nil {
		s.log.Warn("Error closing the append-only log", "err", err)
	}
	s.log.Warn("The append-only log is off: writes are no longer logged. A restart with appendonly yes would load the log as it is now, "+
		"without the writes from here on: turn appendonly off in the configuration too, or move the log directory away", "dir", a.dir)
}

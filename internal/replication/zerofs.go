package replication

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft-wal/fs"
	"github.com/hashicorp/raft-wal/types"
)

// spareName is the next segment file, written full of zeros ahead of time, in the log's
// directory; raft-wal lists only names ending in .wal, so it ignores it (and spareName+".tmp",
// the file while it is being written).
const spareName = "next-segment.zeros"

// zeroFS is raft-wal's file system (fs.FS) with one change: a new segment file is a file
// already written full of zeros and synced, renamed into place, instead of one that
// fs.FS.Create fallocates. Every commit of an entry ends in an fsync, and an fsync that follows
// a write into fallocated space must also write the file's extent metadata (the range written
// turns from unwritten to written), while one into blocks that already hold data writes only
// the data. On this machine's disk that took a commit from 2.6 device writes to 2.0, and its
// fsync from about 127 to 89 µs of wall time and from 64 to 45 µs of CPU (docs/replication.md,
// "Log segments"); a Raft commit waits for two of them in turn, the leader's and a follower's.
//
// Writing a segment's zeros (raft-segment-size bytes) takes time, so it is done in the
// background, for the next segment, as soon as the previous spare is taken. When a new
// segment is needed before its spare is ready, Create falls back to fs.FS's fallocated file:
// a slower segment, never a stalled commit.
type zeroFS struct {
	*fs.FS
	dir  string
	size uint64

	mu      sync.Mutex
	ready   bool // dir/spareName holds size zeros, synced
	filling bool
	closed  bool
	wg      sync.WaitGroup
	// fills counts the spares written and taken counts those used, for tests.
	fills, taken atomic.Int64
}

// newZeroFS returns the file system for the log in dir, whose segments are size bytes, with
// its first spare written: a new log creates its first segment as it opens, and a node's
// start can spare the time (tens of milliseconds) better than its first segment the slower
// fsyncs. A spare left by an earlier run is written again: cheaper than proving it complete.
func newZeroFS(dir string, size uint64) *zeroFS {
	_ = os.Remove(filepath.Join(dir, spareName))
	_ = os.Remove(filepath.Join(dir, spareName+".tmp"))
	z := &zeroFS{FS: fs.New(), dir: dir, size: size}
	if size > 0 && z.fill() {
		z.fills.Add(1)
		z.ready = true
	}
	return z
}

// Create implements types.VFS.
func (z *zeroFS) Create(dir, name string, size uint64) (types.WritableFile, error) {
	if dir != z.dir || size != z.size {
		return z.FS.Create(dir, name, size)
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.ready {
		z.startFill()
		return z.FS.Create(dir, name, size)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); err == nil {
		return nil, &os.PathError{Op: "create", Path: path, Err: os.ErrExist} // fs.FS creates with O_EXCL
	}
	z.ready = false
	if err := os.Rename(filepath.Join(dir, spareName), path); err != nil {
		z.startFill()
		return z.FS.Create(dir, name, size)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	z.taken.Add(1)
	z.startFill()
	return &zeroFile{File: f, dir: dir}, nil
}

// startFill writes the next spare in the background unless one is ready or being written.
// Called with mu held.
func (z *zeroFS) startFill() {
	if z.ready || z.filling || z.closed || z.size == 0 {
		return
	}
	z.filling = true
	z.wg.Add(1)
	go func() {
		defer z.wg.Done()
		ok := z.fill()
		z.mu.Lock()
		if ok {
			z.fills.Add(1)
		}
		z.filling = false
		z.ready = ok
		z.mu.Unlock()
	}()
}

// fill writes size zeros to a temporary file, syncs it and renames it to spareName; it gives
// up (and removes what it wrote) when the log closes meanwhile or the disk fails.
func (z *zeroFS) fill() bool {
	tmp := filepath.Join(z.dir, spareName+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return false
	}
	zeros := make([]byte, 1<<20)
	ok := true
	for left := z.size; left > 0 && ok; {
		z.mu.Lock()
		ok = !z.closed
		z.mu.Unlock()
		n := min(left, uint64(len(zeros)))
		if ok {
			_, err := f.Write(zeros[:n])
			ok = err == nil
		}
		left -= n
	}
	ok = ok && f.Sync() == nil
	if f.Close() != nil {
		ok = false
	}
	if ok && os.Rename(tmp, filepath.Join(z.dir, spareName)) == nil {
		return true
	}
	_ = os.Remove(tmp)
	return false
}

// close stops a spare being written and waits for it, so nothing writes in the directory
// once the log is closed (a test's temporary directory is removed right after).
func (z *zeroFS) close() {
	z.mu.Lock()
	z.closed = true
	z.mu.Unlock()
	z.wg.Wait()
}

// zeroFile is a segment made from a spare. Its first Sync also syncs the directory, which
// makes the rename that gave it its name durable (as fs.File does for a created file).
type zeroFile struct {
	*os.File
	dir       string
	dirSynced atomic.Bool
}

// Sync implements types.WritableFile.
func (f *zeroFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	if f.dirSynced.Swap(true) {
		return nil
	}
	d, err := os.Open(f.dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

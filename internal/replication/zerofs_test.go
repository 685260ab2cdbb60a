package replication

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func waitSpare(t *testing.T, z *zeroFS) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		z.mu.Lock()
		ready := z.ready
		z.mu.Unlock()
		if ready {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the spare segment was never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestZeroFSCreate: a new segment is the spare, size zeros long, under the segment's name; the
// next spare is written at once; while none is ready, Create still makes the segment (fs.FS's
// way); a name that exists is refused as fs.FS's O_EXCL create refuses it; and closing leaves
// no half-written spare behind.
func TestZeroFSCreate(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 20
	z := newZeroFS(dir, size)
	waitSpare(t, z)

	f, err := z.Create(dir, "a.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(*zeroFile); !ok {
		t.Fatalf("Create with a spare ready returned %T, not the spare", f)
	}
	got, err := os.ReadFile(filepath.Join(dir, "a.wal"))
	if err != nil || len(got) != size || !bytes.Equal(got, make([]byte, size)) {
		t.Fatalf("segment from the spare: %d bytes (all zero: %v), %v", len(got), bytes.Equal(got, make([]byte, len(got))), err)
	}
	if _, err := f.WriteAt([]byte("frame"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()

	waitSpare(t, z) // the next one, written in the background
	if z.fills.Load() != 2 || z.taken.Load() != 1 {
		t.Fatalf("fills %d taken %d, want 2 and 1", z.fills.Load(), z.taken.Load())
	}
	if _, err := z.Create(dir, "a.wal", size); !errors.Is(err, os.ErrExist) {
		t.Fatalf("Create over an existing segment: %v, want ErrExist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.wal")); !bytes.HasPrefix(b, []byte("frame")) {
		t.Fatal("the refused Create changed the existing segment")
	}

	// Take the spare, then create again before the next one is ready: fs.FS's file.
	z.mu.Lock()
	z.closed = true // no refill, so that the second Create finds none
	z.mu.Unlock()
	if _, err := z.Create(dir, "b.wal", size); err != nil {
		t.Fatal(err)
	}
	f2, err := z.Create(dir, "c.wal", size)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f2.(*zeroFile); ok {
		t.Fatal("Create with no spare ready returned a spare")
	}
	_ = f2.Close()
	z.close()
	if _, err := os.Stat(filepath.Join(dir, spareName+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("a half-written spare is left: %v", err)
	}
}

// TestZeroFSLog: a log that fills several segments reads back whole, also after reopening, and
// the segments after the first were spares.
func TestZeroFSLog(t *testing.T) {
	dir := t.TempDir()
	wal, meta, zfs, err := openWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	waitSpare(t, zfs)
	data := func(i uint64) []byte { return bytes.Repeat([]byte(fmt.Sprint(i%10)), 1<<20) }
	const entries = 40 // 40 MiB: two segments after the first
	for i := uint64(1); i <= entries; i++ {
		if err := wal.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: data(i)}}); err != nil {
			t.Fatal(err)
		}
		if i%8 == 0 {
			waitSpare(t, zfs) // a busy disk may take longer than this loop to write one
		}
	}
	if zfs.taken.Load() < 2 {
		t.Fatalf("%d segments came from spares, want 2", zfs.taken.Load())
	}
	check := func() {
		t.Helper()
		for i := uint64(1); i <= entries; i++ {
			var l raft.Log
			if err := wal.GetLog(i, &l); err != nil || !bytes.Equal(l.Data, data(i)) {
				t.Fatalf("entry %d: %v (data intact: %v)", i, err, bytes.Equal(l.Data, data(i)))
			}
		}
	}
	check()
	_ = wal.Close()
	zfs.close()
	_ = meta.Close()
	if wal, meta, zfs, err = openWAL(dir); err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	defer zfs.close()
	defer wal.Close()
	check()
}

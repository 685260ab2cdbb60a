package replication

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// A node's log keeps opening after Raft truncated its tail. A leader killed with entries
// nobody else stored restarts as a follower, and the new leader's AppendEntries make Raft
// delete that tail (DeleteRange up to the last index). raft-wal v0.4.0 then marked the tail
// segment sealed without writing its index block, and the next start panicked in NewRaft
// ("sealed segment has no index block", hashicorp/raft-wal#31, fixed in v0.4.1): found by
// hotkv-bench raft's fifth leader kill, a node killed a second time after its tail had been
// truncated once.
func TestLogTailTruncationSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wal")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	open := func() (*raftwal.WAL, *metadb.BoltMetaDB) {
		t.Helper()
		meta := &metadb.BoltMetaDB{}
		w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta), raftwal.WithSegmentSize(16<<20))
		if err != nil {
			t.Fatal(err)
		}
		return w, meta
	}
	store := func(w *raftwal.WAL, from, to uint64, term uint64) {
		t.Helper()
		var logs []*raft.Log
		for i := from; i <= to; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: fmt.Appendf(nil, "entry %d term %d", i, term)})
		}
		if err := w.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	w, meta := open()
	store(w, 1, 10, 1)
	// The uncommitted tail 8..10 is replaced by the new leader's entries.
	if err := w.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	store(w, 8, 12, 2)
	w.Close()
	meta.Close()

	w, meta = open()
	defer meta.Close()
	defer w.Close()
	for i := uint64(1); i <= 12; i++ {
		var l raft.Log
		if err := w.GetLog(i, &l); err != nil {
			t.Fatalf("entry %d after the restart: %v", i, err)
		}
		term := uint64(1)
		if i >= 8 {
			term = 2
		}
		if want := fmt.Sprintf("entry %d term %d", i, term); string(l.Data) != want || l.Term != term {
			t.Fatalf("entry %d after the restart: %q (term %d), want %q", i, l.Data, l.Term, want)
		}
	}
	if last, err := w.LastIndex(); err != nil || last != 12 {
		t.Fatalf("last index %d, %v", last, err)
	}
}

// TestWALReopenAfterTailTruncation: a follower whose conflicting log suffix was deleted
// (raft-wal seals the tail segment without an index block, hashicorp/raft-wal#31) can still
// read its whole log after a restart. Without segmentFiler, the reopened log fails every read
// in that segment with "sealed segment has no index block" and hashicorp/raft panics at start.
func TestWALReopenAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	wal, meta, zfs, err := openWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := func(from, to uint64, term uint64) {
		var logs []*raft.Log
		for i := from; i <= to; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: fmt.Appendf(nil, "%d/%d", i, term)})
		}
		if err := wal.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
	}
	store(1, 10, 1)
	// A new leader's log disagrees from index 8 on: hashicorp/raft deletes the suffix and
	// stores the leader's entries.
	if err := wal.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	store(8, 12, 2)
	if err := wal.Close(); err != nil {
		t.Fatal(err)
	}
	zfs.close()
	_ = meta.Close()

	wal, meta, zfs, err = openWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
	defer zfs.close()
	defer wal.Close()
	last, err := wal.LastIndex()
	if err != nil || last != 12 {
		t.Fatalf("LastIndex = %d, %v; want 12", last, err)
	}
	for i := uint64(1); i <= 12; i++ {
		var l raft.Log
		if err := wal.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d) after reopening: %v", i, err)
		}
		term := uint64(1)
		if i >= 8 {
			term = 2
		}
		if want := fmt.Sprintf("%d/%d", i, term); string(l.Data) != want || l.Term != term {
			t.Fatalf("entry %d = %q term %d, want %q term %d", i, l.Data, l.Term, want, term)
		}
	}
}

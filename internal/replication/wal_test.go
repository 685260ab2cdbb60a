package replication

import (
	"fmt"
	"testing"

	"github.com/hashicorp/raft"
)

// TestWALReopenAfterTailTruncation: a follower whose conflicting log suffix was deleted
// (raft-wal seals the tail segment without an index block, hashicorp/raft-wal#31) can still
// read its whole log after a restart. Without segmentFiler, the reopened log fails every read
// in that segment with "sealed segment has no index block" and hashicorp/raft panics at start.
func TestWALReopenAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	wal, meta, err := openWAL(dir)
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
	_ = meta.Close()

	wal, meta, err = openWAL(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer meta.Close()
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

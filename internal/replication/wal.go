package replication

import (
	"os"
	"path/filepath"

	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// openWAL opens the node's Raft log in dir/wal. raft-wal's Close leaves its metadata
// database (and the file lock on it) open, so the caller owns meta and closes it after the
// log, which lets a restart in the same process open the log again.
//
// The returned zeroFS writes the next segment's zeros in the background; close it after the
// log.
func openWAL(dir string) (*raftwal.WAL, *metadb.BoltMetaDB, *zeroFS, error) {
	walDir := filepath.Join(dir, "wal")
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return nil, nil, nil, err
	}
	meta := &metadb.BoltMetaDB{}
	zfs := newZeroFS(walDir, segmentSize)
	wal, err := raftwal.Open(walDir, raftwal.WithMetaStore(meta), raftwal.WithSegmentSize(segmentSize),
		raftwal.WithSegmentFiler(segmentFiler{segment.NewFiler(walDir, zfs)}))
	if err != nil {
		zfs.close()
		_ = meta.Close()
		return nil, nil, nil, err
	}
	return wal, meta, zfs, nil
}

// segmentSize is the size of a log segment file. An entry holds at most 4 MiB of effects.
const segmentSize = 16 << 20

// segmentFiler works around hashicorp/raft-wal v0.4.0's tail truncation bug
// (hashicorp/raft-wal#31, fixed by v0.4.1, which HotKV now uses, but a log written by v0.4.0
// can still hold such a segment and must open after an upgrade): when
// Raft deletes a follower's conflicting log suffix, the WAL marks the current tail segment
// sealed in its metadata and starts a new one, but never writes the sealed segment's index
// block. The running process keeps reading that segment through its writer, so nothing shows
// until the node restarts: then every read of an entry in it fails with "sealed segment has
// no index block" and hashicorp/raft panics at startup, so the node can never start again.
// The failover tests hit this on the first restart after a partition healed.
//
// A sealed segment without an index block is opened the way an unsealed tail is recovered
// instead: by reading through its frames (each commit frame's CRC is checked) to rebuild the
// entry offsets. The segment is only read (no Append ever reaches it: it is not the tail),
// and entries past its MaxIndex, the truncated ones, are never asked for, because the
// segment after it starts at MaxIndex+1.
type segmentFiler struct{ *segment.Filer }

// Open implements types.SegmentFiler.
func (f segmentFiler) Open(info types.SegmentInfo) (types.SegmentReader, error) {
	if info.IndexStart == 0 && !info.SealTime.IsZero() {
		return f.Filer.RecoverTail(info)
	}
	return f.Filer.Open(info)
}

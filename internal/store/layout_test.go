package store

import (
	"testing"
	"unsafe"
)

// A limiter shard is 128 bytes, two cache lines of its own, so that checks on neighbouring
// shards never contend for one line.
func TestLimiterShardSize(t *testing.T) {
	if n := unsafe.Sizeof(limiterShard{}); n != 128 {
		t.Fatalf("limiterShard is %d bytes, want 128", n)
	}
}

// An entry is 64 bytes, one cache line, the figure bytes-per-key budgets are built on
// (docs/architecture.md, docs/benchmarks.md).
func TestEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(Entry{}); n != 64 {
		t.Fatalf("Entry is %d bytes, want 64", n)
	}
}

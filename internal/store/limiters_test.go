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

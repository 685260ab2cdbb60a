package server

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"testing"

	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/store"
)

// A snapshot's buffer starts at the previous snapshot's size: encoding the same store again
// allocates about the snapshot once, not the doubling series (about twice its size) that left
// hundreds of MB of garbage per snapshot on a node of millions of keys.
func TestSnapshotBufferSizedFromLast(t *testing.T) {
	s := New(config.New(config.Directives()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := &replState{s: s}
	db := s.store.DB(0)
	val := make([]byte, 40)
	for i := range 200_000 {
		db.Set([]byte("key:"+strconv.Itoa(i)), store.BytesValue(val), 0, false, 0)
	}
	alloc := func() (int, uint64) {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		out, err := r.encodeSnapshot(context.Background(), false)
		runtime.ReadMemStats(&b)
		if err != nil {
			t.Fatal(err)
		}
		return len(out), b.TotalAlloc - a.TotalAlloc
	}
	size, first := alloc()
	size2, second := alloc()
	if size2 != size {
		t.Fatalf("the same store encoded to %d and then %d bytes", size, size2)
	}
	t.Logf("snapshot %d bytes; allocated %d, then %d", size, first, second)
	if first < second+uint64(size) {
		t.Fatalf("snapshot %d bytes: the first encoding allocated %d, the second %d: not a snapshot's size less", size, first, second)
	}
}

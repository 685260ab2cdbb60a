package replication

import (
	"errors"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
)

// TestGuardedStableAfterClose: until close the guard passes every call through; after it,
// writes are dropped instead of failing (raft panics on a failed term write, and a heartbeat
// can still arrive on the transport's goroutines while a node closes), reads fail, and the
// store underneath is never reached again.
func TestGuardedStableAfterClose(t *testing.T) {
	under := raft.NewInmemStore()
	g := &guardedStable{s: under}
	key := []byte("CurrentTerm")
	if err := g.SetUint64(key, 4); err != nil {
		t.Fatal(err)
	}
	if v, err := g.GetUint64(key); err != nil || v != 4 {
		t.Fatalf("GetUint64 = %d, %v", v, err)
	}
	// Calls racing close either finish before it or see it.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = g.SetUint64(key, uint64(5+i))
		}()
	}
	g.close()
	wg.Wait()
	before, _ := under.GetUint64(key)
	if err := g.SetUint64(key, 99); err != nil {
		t.Fatalf("SetUint64 after close: %v", err)
	}
	if err := g.Set([]byte("k"), []byte("v")); err != nil {
		t.Fatalf("Set after close: %v", err)
	}
	if v, _ := under.GetUint64(key); v != before {
		t.Fatalf("a write after close reached the store: %d, was %d", v, before)
	}
	if _, err := under.Get([]byte("k")); err == nil {
		t.Fatal("Set after close reached the store")
	}
	if _, err := g.GetUint64(key); !errors.Is(err, errStableClosed) {
		t.Fatalf("GetUint64 after close: %v", err)
	}
}

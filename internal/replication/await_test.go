package replication

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestAwaitClosedNode: hashicorp/raft can leave an Apply future unanswered for good when the
// node shuts down (with BatchApplyCh the Apply may land in the channel's buffer after the main
// loop has gone). Await still returns, with raft.ErrRaftShutdown, for every such future. The
// test makes stranded futures by applying after Close: Apply's select between the closed
// shutdown channel and the buffer's free space picks either, so about half of the tries are
// stranded, and it checks that it made some.
func TestAwaitClosedNode(t *testing.T) {
	var f countFSM
	n, err := Start(Config{NodeID: "a", Bind: freeAddr(t), Dir: t.TempDir(), Bootstrap: true}, &f, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for n.Raft.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("the bootstrapped node did not become leader")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := n.Await(n.Raft.Apply([]byte("x"), time.Second)); err != nil {
		t.Fatalf("Apply on the leader: %v", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	stranded := 0
	for range 40 {
		fut := n.Raft.Apply([]byte("y"), 0)
		if fmt.Sprintf("%T", fut) == "*raft.logFuture" {
			stranded++ // queued, not refused: nothing will ever answer it
		}
		done := make(chan error, 1)
		go func() { done <- n.Await(fut) }()
		select {
		case err := <-done:
			if !errors.Is(err, raft.ErrRaftShutdown) {
				t.Fatalf("Await after Close: %v, want %v", err, raft.ErrRaftShutdown)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Await on a closed node's future did not return")
		}
	}
	if stranded == 0 {
		t.Fatal("no Apply after Close was queued: the test no longer makes the futures it is about")
	}
	t.Logf("%d of 40 futures queued after Close", stranded)
}

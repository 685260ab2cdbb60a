package replication

import (
	"testing"
	"time"
)

// TestHurry: a hurried node's heartbeat and election timeouts are the leader lease (the least
// hashicorp/raft accepts), and Hurry(false) gives back the configured ones.
func TestHurry(t *testing.T) {
	var f countFSM
	n, err := Start(Config{NodeID: "a", Bind: freeAddr(t), Dir: t.TempDir(), Bootstrap: true}, &f, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	got := func() (time.Duration, time.Duration) {
		rc := n.Raft.ReloadableConfig()
		return rc.HeartbeatTimeout, rc.ElectionTimeout
	}
	if err := n.Hurry(true); err != nil {
		t.Fatal(err)
	}
	if hb, el := got(); hb != 250*time.Millisecond || el != 250*time.Millisecond {
		t.Fatalf("hurried: heartbeat %v, election %v; want the 250ms lease", hb, el)
	}
	if err := n.Hurry(false); err != nil {
		t.Fatal(err)
	}
	if hb, el := got(); hb != 500*time.Millisecond || el != 500*time.Millisecond {
		t.Fatalf("restored: heartbeat %v, election %v; want 500ms", hb, el)
	}
}

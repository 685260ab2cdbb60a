package replication

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/hotkv/hotkv/internal/faultproxy"
)

// countFSM counts the entries applied on a node.
type countFSM struct {
	mu sync.Mutex
	n  int
}

func (f *countFSM) Apply(_, _ uint64, _ []byte) { f.mu.Lock(); f.n++; f.mu.Unlock() }
func (f *countFSM) Snapshot() ([]byte, error)   { return nil, nil }
func (f *countFSM) Restore(io.Reader) error     { return nil }
func (f *countFSM) count() int                  { f.mu.Lock(); defer f.mu.Unlock(); return f.n }

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPeerAddrsResolve: an override wins over the configured address, the node's own id is its
// Bind (hashicorp/raft encodes it into every RPC header), and a member without an override is
// found in the Raft configuration; an unknown id is an error, on which the transport falls
// back to the address it was given.
func TestPeerAddrsResolve(t *testing.T) {
	p := newPeerAddrs("a", "127.0.0.1:1", map[string]string{"b": "127.0.0.1:2"})
	for id, want := range map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"} {
		if got, err := p.ServerAddr(raft.ServerID(id)); err != nil || string(got) != want {
			t.Fatalf("ServerAddr(%s) = %q, %v; want %s", id, got, err, want)
		}
	}
	if got, err := p.ServerAddr("c"); err == nil {
		t.Fatalf("ServerAddr(c) with no Raft instance = %q, want an error", got)
	}
}

// TestPeerAddrOverrideRoutesTraffic: with PeerAddrs, the leader reaches its follower only
// through the override (a fault proxy here), although the group's configuration holds the
// follower's real address: blackholing the proxy stops commits, passing it again resumes them.
func TestPeerAddrOverrideRoutesTraffic(t *testing.T) {
	aAddr, bAddr := freeAddr(t), freeAddr(t)
	px, err := faultproxy.New(bAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	fast := func(c Config) Config {
		c.HeartbeatTimeout, c.ElectionTimeout, c.LeaderLeaseTimeout = 100*time.Millisecond, 100*time.Millisecond, 50*time.Millisecond
		return c
	}
	var fa, fb countFSM
	a, err := Start(fast(Config{NodeID: "a", Bind: aAddr, Dir: t.TempDir(), Bootstrap: true,
		PeerAddrs: map[string]string{"b": px.Addr()}}), &fa, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Start(fast(Config{NodeID: "b", Bind: bAddr, Dir: t.TempDir()}), &fb, func(bool) {})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	waitFor(t, "a to lead", 10*time.Second, func() bool { return a.Raft.State() == raft.Leader })
	if err := a.AddVoter("b", bAddr); err != nil {
		t.Fatal(err)
	}
	if err := a.Raft.Apply([]byte("x"), 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b to apply the entry", 10*time.Second, func() bool { return fb.count() >= 1 })
	if st := px.Stats(); st.Accepted == 0 || st.Bytes[faultproxy.Upstream] == 0 {
		t.Fatalf("the leader did not dial the follower through the override: %+v", st)
	}
	for _, m := range a.Members() {
		if m.ID == "b" && m.Addr != bAddr {
			t.Fatalf("the configuration holds %s for b, want its real address %s", m.Addr, bAddr)
		}
	}

	// With the only link to b blackholed, a two-voter group cannot commit.
	px.Blackhole()
	if err := a.Raft.Apply([]byte("y"), 500*time.Millisecond).Error(); err == nil {
		t.Fatal("an entry committed while the leader's only route to its follower was blackholed")
	}
	px.Pass()
	px.CloseConns()
	waitFor(t, "a group with a leader again", 20*time.Second, func() bool {
		for _, n := range []*Node{a, b} {
			if n.Raft.State() == raft.Leader && n.Raft.Apply([]byte("z"), time.Second).Error() == nil {
				return true
			}
		}
		return false
	})
}

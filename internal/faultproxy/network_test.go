package faultproxy

import (
	"net"
	"testing"
	"time"
)

// cluster is three echo "nodes" behind a Network, with one open connection per link so tests
// see what existing connections do, as Raft's pooled connections would.
type cluster struct {
	nw    *Network
	nodes []*echoServer // 1-based
	conns [][]net.Conn  // [from][to]
}

func startCluster(t *testing.T, n int) *cluster {
	t.Helper()
	cl := &cluster{nodes: make([]*echoServer, n+1), conns: make([][]net.Conn, n+1)}
	targets := make([]string, n)
	for i := 1; i <= n; i++ {
		cl.nodes[i] = startEcho(t)
		targets[i-1] = cl.nodes[i].addr()
	}
	nw, err := NewNetwork(targets)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nw.Close)
	cl.nw = nw
	for i := 1; i <= n; i++ {
		cl.conns[i] = make([]net.Conn, n+1)
		for j := 1; j <= n; j++ {
			if i != j {
				cl.conns[i][j] = dial(t, nw.Link(i, j))
			}
		}
	}
	return cl
}

// reachable reports whether a round trip i→j→i works on the existing connection within d
// (quiet when a test expects it not to, a generous bound when it expects it to).
func (cl *cluster) reachable(i, j int, d time.Duration) bool {
	msg := []byte{byte('0' + i), byte('0' + j)}
	got, err := roundTrip(cl.conns[i][j], msg, d)
	if err != nil {
		return false
	}
	return string(got) == string(msg)
}

// check asserts the reachability of every link; want[i][j] for i≠j. A link that was held
// keeps a request in flight, which a later heal delivers, so tests re-dial after a heal.
func (cl *cluster) check(t *testing.T, want map[[2]int]bool) {
	t.Helper()
	n := cl.nw.Size()
	for i := 1; i <= n; i++ {
		for j := 1; j <= n; j++ {
			if i == j {
				continue
			}
			w := want[[2]int{i, j}]
			d := quiet
			if w {
				d = 10 * time.Second
			}
			if got := cl.reachable(i, j, d); got != w {
				t.Errorf("link %d→%d reachable=%v, want %v", i, j, got, want[[2]int{i, j}])
			}
		}
	}
}

func all(n int) map[[2]int]bool {
	m := map[[2]int]bool{}
	for i := 1; i <= n; i++ {
		for j := 1; j <= n; j++ {
			if i != j {
				m[[2]int{i, j}] = true
			}
		}
	}
	return m
}

func TestNetworkPartitionAndHeal(t *testing.T) {
	cl := startCluster(t, 3)
	cl.check(t, all(3))

	cl.nw.Partition([]int{1}, []int{2, 3})
	want := all(3)
	for _, l := range [][2]int{{1, 2}, {1, 3}, {2, 1}, {3, 1}} {
		want[l] = false
	}
	cl.check(t, want)
	// New connections across the partition are silent too; within a side they work.
	if c := dial(t, cl.nw.Link(2, 1)); func() bool { _, err := roundTrip(c, []byte("n"), quiet); return err == nil }() {
		t.Error("new connection 2→1 crossed the partition")
	}
	if c := dial(t, cl.nw.Link(3, 2)); func() bool { _, err := roundTrip(c, []byte("n"), 5*time.Second); return err != nil }() {
		t.Error("new connection 3→2 inside a side failed")
	}

	// Heal: new connections work at once; existing ones resume (their held requests arrive
	// first, so use fresh connections to check reachability).
	cl.nw.Heal()
	for i := 1; i <= 3; i++ {
		for j := 1; j <= 3; j++ {
			if i != j {
				cl.conns[i][j] = dial(t, cl.nw.Link(i, j))
			}
		}
	}
	cl.check(t, all(3))
}

func TestNetworkIsolateAndBridge(t *testing.T) {
	cl := startCluster(t, 3)
	cl.nw.Isolate(2)
	want := all(3)
	for _, l := range [][2]int{{1, 2}, {2, 1}, {3, 2}, {2, 3}} {
		want[l] = false
	}
	cl.check(t, want)

	// A node named in no group is a bridge: 1 and 3 are cut from each other, 2 talks to both.
	cl.nw.Heal()
	fresh := func() {
		for i := 1; i <= 3; i++ {
			for j := 1; j <= 3; j++ {
				if i != j {
					cl.conns[i][j] = dial(t, cl.nw.Link(i, j))
				}
			}
		}
	}
	fresh()
	cl.nw.Partition([]int{1}, []int{3})
	want = all(3)
	want[[2]int{1, 3}], want[[2]int{3, 1}] = false, false
	cl.check(t, want)
}

func TestNetworkOneWayCut(t *testing.T) {
	cl := startCluster(t, 2)
	cl.nw.Cut(1, 2)
	// 1's requests never reach 2.
	for len(cl.nodes[2].got) > 0 {
		<-cl.nodes[2].got
	}
	if cl.reachable(1, 2, quiet) {
		t.Fatal("1→2 passed a cut")
	}
	select {
	case b := <-cl.nodes[2].got:
		t.Fatalf("node 2 received %q from 1 through a one-way cut", b)
	default:
	}
	// 2's requests reach 1, but 1's replies are held: 2 hears nothing back.
	for len(cl.nodes[1].got) > 0 {
		<-cl.nodes[1].got
	}
	if cl.reachable(2, 1, quiet) {
		t.Fatal("2 heard 1's reply through a one-way cut")
	}
	select {
	case <-cl.nodes[1].got:
	case <-time.After(10 * time.Second):
		t.Fatal("node 1 did not receive 2's request: the cut should be one-way")
	}
}

func TestNetworkDelay(t *testing.T) {
	cl := startCluster(t, 2)
	const d = 100 * time.Millisecond
	cl.nw.Delay(1, 2, d, 0)
	start := time.Now()
	if !cl.reachable(1, 2, 10*time.Second) {
		t.Fatal("delayed link unreachable")
	}
	if el := time.Since(start); el < 2*d {
		t.Fatalf("round trip 1→2 took %v, want at least %v", el, 2*d)
	}
	start = time.Now()
	if !cl.reachable(2, 1, 10*time.Second) {
		t.Fatal("2→1 unreachable")
	}
	if el := time.Since(start); el >= d {
		t.Logf("2→1 took %v though only 1→2 is delayed (a loaded machine?)", el)
	}
	cl.nw.ClearDelays()
	if !cl.reachable(1, 2, 10*time.Second) {
		t.Fatal("1→2 after ClearDelays")
	}
}

func TestNetworkBadLinkPanics(t *testing.T) {
	cl := startCluster(t, 2)
	defer func() {
		if recover() == nil {
			t.Fatal("Link(1,1) did not panic")
		}
	}()
	cl.nw.Link(1, 1)
}

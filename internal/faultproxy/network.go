package faultproxy

import (
	"fmt"
	"sync"
	"time"
)

// Network is a set of proxies between N nodes, one per ordered pair: node i reaches node j
// only through Link(i, j), a proxy forwarding to node j's address. Because every ordered
// pair has its own proxy, faults can be placed on exactly the links a test means (a partition
// of {1} from {2,3} leaves 2↔3 untouched), and one-way faults are possible.
//
// Nodes are numbered 1..N as in the design's tests. For Raft, node i must dial peer j at
// Link(i, j) rather than at j's real address; with hashicorp/raft that is a per-node
// ServerAddressProvider (the replicated configuration keeps the real addresses, each node
// resolves them through its own proxies).
type Network struct {
	n       int
	proxies [][]*Proxy // [from][to], 1-based; nil on the diagonal

	mu sync.Mutex
}

// NewNetwork starts the N·(N−1) proxies for nodes whose (Raft or other peer) listen addresses
// are targets[0..N-1] (node i's is targets[i-1]).
func NewNetwork(targets []string) (*Network, error) {
	n := len(targets)
	nw := &Network{n: n, proxies: make([][]*Proxy, n+1)}
	for i := 1; i <= n; i++ {
		nw.proxies[i] = make([]*Proxy, n+1)
		for j := 1; j <= n; j++ {
			if i == j {
				continue
			}
			p, err := New(targets[j-1])
			if err != nil {
				nw.Close()
				return nil, fmt.Errorf("faultproxy: link %d→%d: %w", i, j, err)
			}
			nw.proxies[i][j] = p
		}
	}
	return nw, nil
}

// Size is the number of nodes.
func (nw *Network) Size() int { return nw.n }

// Proxy returns the proxy node from uses to reach node to, for faults the Network methods do
// not name (bandwidth, Drop of one link).
func (nw *Network) Proxy(from, to int) *Proxy {
	if from < 1 || from > nw.n || to < 1 || to > nw.n || from == to {
		panic(fmt.Sprintf("faultproxy: no link %d→%d in a network of %d", from, to, nw.n))
	}
	return nw.proxies[from][to]
}

// Link is the address node from dials to reach node to.
func (nw *Network) Link(from, to int) string { return nw.Proxy(from, to).Addr() }

// Links returns, for node from, the address to dial for every other node (keyed by node
// number), ready to be turned into that node's peer configuration.
func (nw *Network) Links(from int) map[int]string {
	m := make(map[int]string, nw.n-1)
	for to := 1; to <= nw.n; to++ {
		if to != from {
			m[to] = nw.Link(from, to)
		}
	}
	return m
}

func (nw *Network) each(fn func(from, to int, p *Proxy)) {
	for i := 1; i <= nw.n; i++ {
		for j := 1; j <= nw.n; j++ {
			if i != j {
				fn(i, j, nw.proxies[i][j])
			}
		}
	}
}

// Partition splits the nodes into groups: every link between nodes of different groups is
// blackholed in both directions (connections stay open, nothing arrives: what a partition
// looks like to TCP); every other link passes. Nodes named in no group keep talking to
// everyone (a "bridge" node, as in Jepsen's nemeses). Partition replaces any earlier
// partition or cut; delays are kept.
func (nw *Network) Partition(groups ...[]int) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	group := make([]int, nw.n+1) // 0: in no group
	for g, members := range groups {
		for _, m := range members {
			if m < 1 || m > nw.n {
				panic(fmt.Sprintf("faultproxy: no node %d in a network of %d", m, nw.n))
			}
			group[m] = g + 1
		}
	}
	nw.each(func(i, j int, p *Proxy) {
		if group[i] != 0 && group[j] != 0 && group[i] != group[j] {
			p.SetMode(Blackhole)
		} else {
			p.SetMode(Pass)
		}
	})
}

// Isolate partitions node i from all others.
func (nw *Network) Isolate(i int) {
	rest := make([]int, 0, nw.n-1)
	for j := 1; j <= nw.n; j++ {
		if j != i {
			rest = append(rest, j)
		}
	}
	nw.Partition([]int{i}, rest)
}

// Cut stops everything node from sends to node to, in one direction only: requests from →
// to are held on from's link, and replies from → to on to's own connections are held too,
// so to never hears from while from still hears to. Heal restores it.
func (nw *Network) Cut(from, to int) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.Proxy(from, to).Hold(Upstream, true)
	nw.Proxy(to, from).Hold(Downstream, true)
}

// Heal lets every link pass again; held bytes are delivered in order, as after a real
// partition heals. Connections dropped meanwhile stay dropped; new ones pass. Delays and
// bandwidth limits are kept (ClearDelays removes delays).
func (nw *Network) Heal() {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	nw.each(func(_, _ int, p *Proxy) { p.SetMode(Pass) })
}

// Delay delays both directions of link from→to: from's requests reach to after d (+ jitter)
// and to's replies reach from after d (+ jitter).
func (nw *Network) Delay(from, to int, d, jitter time.Duration) {
	p := nw.Proxy(from, to)
	p.SetDelay(Upstream, d, jitter)
	p.SetDelay(Downstream, d, jitter)
}

// ClearDelays removes every delay and bandwidth limit.
func (nw *Network) ClearDelays() {
	nw.each(func(_, _ int, p *Proxy) {
		for _, d := range []Direction{Upstream, Downstream} {
			p.SetDelay(d, 0, 0)
			p.SetBandwidth(d, 0)
		}
	})
}

// Close closes every proxy.
func (nw *Network) Close() {
	for i := 1; i < len(nw.proxies); i++ {
		for _, p := range nw.proxies[i] {
			if p != nil {
				p.Close()
			}
		}
	}
}

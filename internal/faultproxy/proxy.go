// Package faultproxy is a TCP fault-injection proxy for tests and chaos runs on one machine.
//
// The replicated (Raft) mode has to be tested against partitions, slow links and dropped
// connections, but this machine has no `tc netem` and tests must not need root, so faults are
// injected in user space: every link between two nodes goes through a Proxy on loopback, and
// the test changes the proxy's behaviour while traffic flows. A Network wires one proxy per
// ordered pair of nodes so a test can say "partition {1} from {2,3}" (see network.go).
//
// A Proxy forwards each accepted connection to its target with one goroutine per direction.
// Its behaviour can be changed at any time from any goroutine:
//
//   - Pass (the default): bytes flow, after the configured delay and bandwidth limit.
//   - Drop: every existing connection is closed at once, and new connections are accepted
//     and closed immediately, so the dialer sees EOF/reset straight away. This is what a
//     crashed peer or a firewall sending RSTs looks like.
//   - Blackhole: connections stay open (new ones are accepted too) but no byte is forwarded
//     in the blackholed direction(s). Each direction's pump holds at most the one chunk it has
//     already read; after that the kernel buffers fill and the sender's writes block, exactly
//     like a partition seen from TCP: nothing fails, nothing arrives, only timeouts fire.
//     Switching back to Pass resumes held connections and delivers the held bytes in order,
//     as TCP retransmission does when a real partition heals; call CloseConns as well when a
//     test wants the heal to start from fresh connections.
//
// Delay is applied per chunk read from the source (fixed plus a uniform random jitter in
// [0, jitter)), measured from the moment the chunk was read, in order, so a request/response
// exchange through a proxy with delay d each way takes at least 2d. Chunks that arrive while
// an earlier one is being delayed wait in the kernel buffer and are then delayed themselves,
// so a continuous stream can see up to twice the delay; tests should assert lower bounds only.
package faultproxy

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Direction names one half of a proxied connection.
type Direction int

const (
	// Upstream is client → target (what the dialer sends).
	Upstream Direction = iota
	// Downstream is target → client (what the dialer receives).
	Downstream
)

// Mode is what a proxy does with connections.
type Mode int

const (
	// Pass forwards bytes (subject to delay and bandwidth).
	Pass Mode = iota
	// Drop closes existing connections and every new one at once.
	Drop
	// Blackhole keeps connections open and forwards nothing (see the package comment).
	Blackhole
)

func (m Mode) String() string {
	switch m {
	case Pass:
		return "pass"
	case Drop:
		return "drop"
	case Blackhole:
		return "blackhole"
	}
	return "mode?"
}

// chunkSize bounds one read; small enough that a held chunk is a small loss of realism.
const chunkSize = 32 << 10

// dirState is the behaviour of one direction.
type dirState struct {
	hold        bool          // blackholed
	delay       time.Duration // fixed part
	jitter      time.Duration // random part in [0, jitter)
	bytesPerSec int64         // 0: unlimited
}

// Proxy forwards connections accepted on a loopback port to a target address, injecting the
// faults set on it. It is safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	drop    bool
	dirs    [2]dirState
	changed chan struct{} // closed and replaced on every change, to wake held pumps
	conns   map[*pconn]struct{}
	closed  bool
	wg      sync.WaitGroup
	dialTO  time.Duration
	stats   Stats
}

// Stats counts what a proxy did, for test diagnostics.
type Stats struct {
	Accepted int64    // connections accepted
	Dropped  int64    // connections closed by Drop (existing and new)
	Bytes    [2]int64 // bytes forwarded, by Direction
}

// pconn is one proxied connection: the accepted client side and the dialed target side.
type pconn struct {
	client net.Conn
	done   chan struct{}
	once   sync.Once

	mu     sync.Mutex
	server net.Conn // set once the dial succeeds
}

// close ends the connection. It closes done before looking at server, and serve sets server
// only while done is still open (both under mu), so a close racing the dial never leaks the
// target connection.
func (c *pconn) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.mu.Lock()
		s := c.server
		c.mu.Unlock()
		if s != nil {
			s.Close()
		}
	})
}

// New starts a proxy listening on a free port of 127.0.0.1 that forwards to target.
func New(target string) (*Proxy, error) {
	return Listen("127.0.0.1:0", target)
}

// Listen starts a proxy on addr (a loopback host:port; port 0 picks a free one) that forwards
// to target. A fixed addr lets a restarted test reuse the address its nodes were configured
// with.
func Listen(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		ln:      ln,
		target:  target,
		changed: make(chan struct{}),
		conns:   make(map[*pconn]struct{}),
		dialTO:  5 * time.Second,
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the address to dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Target is the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// notifyLocked wakes every pump waiting on a state change. p.mu must be held.
func (p *Proxy) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// SetMode switches the whole proxy (both directions) to m. Drop closes every existing
// connection; Blackhole holds both directions; Pass releases holds and stops dropping. Delay
// and bandwidth settings are kept.
func (p *Proxy) SetMode(m Mode) {
	p.mu.Lock()
	p.drop = m == Drop
	for d := range p.dirs {
		p.dirs[d].hold = m == Blackhole
	}
	var victims []*pconn
	if m == Drop {
		for c := range p.conns {
			victims = append(victims, c)
		}
		p.stats.Dropped += int64(len(victims))
	}
	p.notifyLocked()
	p.mu.Unlock()
	for _, c := range victims {
		c.close()
	}
}

// Mode reports the proxy's mode: Drop, Blackhole when both directions are held, else Pass.
func (p *Proxy) Mode() Mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.drop:
		return Drop
	case p.dirs[Upstream].hold && p.dirs[Downstream].hold:
		return Blackhole
	}
	return Pass
}

// Pass is SetMode(Pass).
func (p *Proxy) Pass() { p.SetMode(Pass) }

// Drop is SetMode(Drop).
func (p *Proxy) Drop() { p.SetMode(Drop) }

// Blackhole is SetMode(Blackhole).
func (p *Proxy) Blackhole() { p.SetMode(Blackhole) }

// Hold blackholes (hold true) or releases one direction only, for one-way cuts: with
// Hold(Upstream, true) the target stops hearing the dialer while the dialer still hears
// whatever the target sends.
func (p *Proxy) Hold(d Direction, hold bool) {
	p.mu.Lock()
	p.dirs[d].hold = hold
	p.notifyLocked()
	p.mu.Unlock()
}

// SetDelay sets the delay of direction d: each chunk is forwarded fixed + rand[0, jitter)
// after it was read. Zero values remove the delay.
func (p *Proxy) SetDelay(d Direction, fixed, jitter time.Duration) {
	p.mu.Lock()
	p.dirs[d].delay, p.dirs[d].jitter = fixed, jitter
	p.notifyLocked()
	p.mu.Unlock()
}

// SetBandwidth limits each connection's direction d to bytesPerSec (0: unlimited). The limit
// is per connection, enforced by pausing after each chunk for the time it would take to send.
func (p *Proxy) SetBandwidth(d Direction, bytesPerSec int64) {
	p.mu.Lock()
	p.dirs[d].bytesPerSec = bytesPerSec
	p.notifyLocked()
	p.mu.Unlock()
}

// CloseConns closes every existing connection without changing the mode (new connections are
// handled by the current mode), so a test can cut old connections at a heal.
func (p *Proxy) CloseConns() {
	p.mu.Lock()
	var victims []*pconn
	for c := range p.conns {
		victims = append(victims, c)
	}
	p.mu.Unlock()
	for _, c := range victims {
		c.close()
	}
}

// Conns reports how many connections are open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Stats returns a copy of the proxy's counters.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Close stops listening, closes every connection and waits for all goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	victims := make([]*pconn, 0, len(p.conns))
	for c := range p.conns {
		victims = append(victims, c)
	}
	p.notifyLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	for _, c := range victims {
		c.close()
	}
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		nc, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary accept errors (EMFILE and the like): back off briefly and go on.
			time.Sleep(5 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			nc.Close()
			return
		}
		p.stats.Accepted++
		if p.drop {
			p.stats.Dropped++
			p.mu.Unlock()
			nc.Close()
			continue
		}
		c := &pconn{client: nc, done: make(chan struct{})}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// serve dials the target and runs the two pumps. The dial happens even while blackholed, as
// it would through a partition for a connection set up before it: the accepted socket is
// what the dialer sees, so the dialer cannot tell.
func (p *Proxy) serve(c *pconn) {
	defer p.wg.Done()
	defer func() {
		c.close()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}()
	sc, err := net.DialTimeout("tcp", p.target, p.dialTO)
	if err != nil {
		return
	}
	c.mu.Lock()
	select {
	case <-c.done: // dropped or closed while dialing
		c.mu.Unlock()
		sc.Close()
		return
	default:
	}
	c.server = sc
	c.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pump(c, Upstream, c.client, sc) }()
	go func() { defer wg.Done(); p.pump(c, Downstream, sc, c.client) }()
	wg.Wait()
}

// pump copies src to dst for one direction. When src ends it half-closes dst so the other
// side sees EOF but can still answer; any error closes the whole connection.
func (p *Proxy) pump(c *pconn, d Direction, src, dst net.Conn) {
	buf := make([]byte, chunkSize)
	for {
		n, err := src.Read(buf)
		readAt := time.Now()
		if n > 0 {
			if !p.forward(c, d, dst, buf[:n], readAt) {
				c.close()
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
					return
				}
			}
			c.close()
			return
		}
	}
}

// forward waits out holds, delay and bandwidth, then writes b. It reports false when the
// connection was closed meanwhile.
func (p *Proxy) forward(c *pconn, d Direction, dst net.Conn, b []byte, readAt time.Time) bool {
	for {
		p.mu.Lock()
		st := p.dirs[d]
		changed := p.changed
		p.mu.Unlock()
		if st.hold {
			select {
			case <-changed:
				continue
			case <-c.done:
				return false
			}
		}
		wait := st.delay
		if st.jitter > 0 {
			wait += rand.N(st.jitter)
		}
		if until := time.Until(readAt.Add(wait)); until > 0 {
			t := time.NewTimer(until)
			select {
			case <-t.C:
			case <-changed:
				// Re-read the settings: a blackhole set during the delay must hold this
				// chunk too, and a shorter delay takes effect at once.
				t.Stop()
				continue
			case <-c.done:
				t.Stop()
				return false
			}
		}
		break
	}
	if _, err := dst.Write(b); err != nil {
		return false
	}
	p.mu.Lock()
	p.stats.Bytes[d] += int64(len(b))
	bw := p.dirs[d].bytesPerSec
	p.mu.Unlock()
	if bw > 0 {
		t := time.NewTimer(time.Duration(int64(len(b)) * int64(time.Second) / bw))
		select {
		case <-t.C:
		case <-c.done:
			t.Stop()
			return false
		}
	}
	return true
}

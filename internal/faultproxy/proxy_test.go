package faultproxy

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// echoServer is a real TCP echo server on loopback that also reports every chunk it
// receives, so tests can tell "not forwarded" from "forwarded but not answered".
type echoServer struct {
	ln   net.Listener
	got  chan []byte
	wg   sync.WaitGroup
	mu   sync.Mutex
	cons []net.Conn
}

func startEcho(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{ln: ln, got: make(chan []byte, 1024)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.cons = append(s.cons, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						select {
						case s.got <- bytes.Clone(buf[:n]):
						default:
						}
						if _, werr := c.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, c := range s.cons {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *echoServer) addr() string { return s.ln.Addr().String() }

func newProxy(t *testing.T, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip writes msg and reads back len(msg) bytes within d.
func roundTrip(c net.Conn, msg []byte, d time.Duration) ([]byte, error) {
	_ = c.SetDeadline(time.Now().Add(d))
	defer c.SetDeadline(time.Time{})
	if _, err := c.Write(msg); err != nil {
		return nil, err
	}
	got := make([]byte, len(msg))
	_, err := io.ReadFull(c, got)
	return got, err
}

// quiet is how long a test waits to conclude that nothing arrives. Absence cannot be polled,
// so this is the one fixed wait; it only bounds how long a blackhole is observed, never
// whether a test passes on a slow machine (a held byte never arrives however long we wait).
const quiet = 300 * time.Millisecond

func expectNothing(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(quiet))
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	n, err := c.Read(b[:])
	var ne net.Error
	if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through a blackhole: n=%d err=%v, want a timeout", n, err)
	}
}

// expectClosed reads until the connection reports EOF or reset (never a timeout).
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1024)
	for {
		_, err := c.Read(buf)
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("connection still open after Drop")
		}
		return
	}
}

func TestPassForwardsBytes(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	msg := make([]byte, 1<<20) // many chunks, both ways
	rand.Read(msg)
	done := make(chan error, 1)
	go func() { _, err := c.Write(msg); done <- err }()
	got := make([]byte, len(msg))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("bytes changed in transit")
	}
	// A chunk counts once its write returns, which can be just after the client has read it.
	st := p.Stats()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && st.Bytes[Downstream] < int64(len(msg)); {
		time.Sleep(5 * time.Millisecond)
		st = p.Stats()
	}
	if st.Accepted != 1 || st.Bytes[Upstream] != int64(len(msg)) || st.Bytes[Downstream] != int64(len(msg)) {
		t.Fatalf("stats %+v", st)
	}
	// Half-close passes through: the echo server sees EOF, closes, and we see EOF.
	c.(*net.TCPConn).CloseWrite()
	expectClosed(t, c)
}

func TestDelayDelays(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("warm"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	const up, down = 150 * time.Millisecond, 100 * time.Millisecond
	p.SetDelay(Upstream, up, 20*time.Millisecond)
	p.SetDelay(Downstream, down, 0)
	start := time.Now()
	got, err := roundTrip(c, []byte("ping"), 10*time.Second)
	if err != nil || string(got) != "ping" {
		t.Fatalf("%q %v", got, err)
	}
	if el := time.Since(start); el < up+down {
		t.Fatalf("round trip took %v, want at least %v", el, up+down)
	}
	// The server saw the request only after the upstream delay.
	p.SetDelay(Downstream, 0, 0)
	for len(e.got) > 0 {
		<-e.got
	}
	start = time.Now()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.got:
		if el := time.Since(start); el < up {
			t.Fatalf("server got the byte after %v, want at least %v", el, up)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("byte never arrived")
	}
	// Removing the delay takes effect.
	p.SetDelay(Upstream, 0, 0)
	if _, err := roundTrip(c, []byte("fast"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestBlackholeHoldsThenHealDelivers(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	old := dial(t, p.Addr())
	if _, err := roundTrip(old, []byte("before"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for len(e.got) > 0 {
		<-e.got
	}

	p.Blackhole()
	if p.Mode() != Blackhole {
		t.Fatalf("mode %v", p.Mode())
	}
	// An existing connection stays open and silent.
	if _, err := old.Write([]byte("held-old")); err != nil {
		t.Fatal(err)
	}
	// A new connection is accepted (the dial succeeds, as through a partition for a
	// half-open connection) and silent too.
	fresh := dial(t, p.Addr())
	if _, err := fresh.Write([]byte("held-new")); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, old)
	expectNothing(t, fresh)
	select {
	case b := <-e.got:
		t.Fatalf("the target received %q through a blackhole", b)
	default:
	}

	// Heal: held bytes are delivered in order on both connections, and new ones work.
	p.Pass()
	for _, c := range []struct {
		c    net.Conn
		want string
	}{{old, "held-old"}, {fresh, "held-new"}} {
		got := make([]byte, len(c.want))
		_ = c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.ReadFull(c.c, got); err != nil || string(got) != c.want {
			t.Fatalf("after heal got %q %v, want %q", got, err, c.want)
		}
	}
	again := dial(t, p.Addr())
	if got, err := roundTrip(again, []byte("after"), 5*time.Second); err != nil || string(got) != "after" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestBlackholeDuringDelayHoldsTheChunk(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	p.SetDelay(Upstream, 200*time.Millisecond, 0)
	if _, err := c.Write([]byte("late")); err != nil {
		t.Fatal(err)
	}
	p.Blackhole() // while the chunk is being delayed
	expectNothing(t, c)
	p.Pass()
	got := make([]byte, 4)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "late" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestDropClosesExistingAndNew(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	old := dial(t, p.Addr())
	if _, err := roundTrip(old, []byte("hi"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Drop()
	expectClosed(t, old)
	fresh := dial(t, p.Addr()) // accepted by the kernel, then closed by the proxy
	expectClosed(t, fresh)
	// Connections leave the table: poll rather than sleep.
	deadline := time.Now().Add(10 * time.Second)
	for p.Conns() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open after Drop", p.Conns())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := p.Stats(); st.Dropped < 2 {
		t.Fatalf("stats %+v", st)
	}
	p.Pass()
	again := dial(t, p.Addr())
	if got, err := roundTrip(again, []byte("back"), 5*time.Second); err != nil || string(got) != "back" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestOneWayHold(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("a"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	<-e.got
	// Downstream held: the target receives but its answer never comes back.
	p.Hold(Downstream, true)
	if _, err := c.Write([]byte("b")); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-e.got:
		if string(b) != "b" {
			t.Fatalf("target got %q", b)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("upstream should pass while only downstream is held")
	}
	expectNothing(t, c)
	p.Hold(Downstream, false)
	got := make([]byte, 1)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "b" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestBandwidthLimit(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	c := dial(t, p.Addr())
	const rate = 256 << 10 // bytes per second
	p.SetBandwidth(Downstream, rate)
	msg := make([]byte, 128<<10) // at least half a second at this rate
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := c.Write(msg); done <- err }()
	got := make([]byte, len(msg))
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Each chunk pauses after it is written, so the last chunk's pause is not counted:
	// at least (len − one chunk) / rate.
	min := time.Duration(int64(len(msg)-chunkSize) * int64(time.Second) / rate)
	if el := time.Since(start); el < min {
		t.Fatalf("128 KiB at 256 KiB/s took %v, want at least %v", el, min)
	}
}

func TestCloseEndsEverything(t *testing.T) {
	e := startEcho(t)
	p, err := New(e.addr())
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	if _, err := roundTrip(c, []byte("x"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	held := dial(t, p.Addr())
	p.Blackhole()
	held.Write([]byte("y"))
	if err := p.Close(); err != nil { // returns only once every goroutine has ended
		t.Fatal(err)
	}
	expectClosed(t, c)
	expectClosed(t, held)
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("still listening after Close")
	}
	if err := p.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}

func TestTargetDownClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	p := newProxy(t, addr)
	c := dial(t, p.Addr())
	expectClosed(t, c)
}

// TestConcurrentControl flips every control while traffic flows, for the race detector.
func TestConcurrentControl(t *testing.T) {
	e := startEcho(t)
	p := newProxy(t, e.addr())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
				if err != nil {
					continue
				}
				roundTrip(c, []byte("traffic"), 50*time.Millisecond)
				c.Close()
			}
		}()
	}
	for i := range 200 {
		switch i % 5 {
		case 0:
			p.Blackhole()
		case 1:
			p.SetDelay(Upstream, time.Millisecond, time.Millisecond)
		case 2:
			p.Drop()
		case 3:
			p.SetBandwidth(Downstream, 1<<20)
		case 4:
			p.Pass()
			p.Hold(Upstream, i%2 == 0)
		}
		_ = p.Stats()
		_ = p.Conns()
	}
	close(stop)
	wg.Wait()
	p.SetMode(Pass)
	p.Hold(Upstream, false)
	p.SetDelay(Upstream, 0, 0)
	c := dial(t, p.Addr())
	if got, err := roundTrip(c, []byte("ok"), 5*time.Second); err != nil || string(got) != "ok" {
		t.Fatalf("%q %v", got, err)
	}
}

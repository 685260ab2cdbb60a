package server

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestPeerStall: with stall set, a peer that accepts a conversation and then stops answering
// fails the call after stall instead of holding it until the conversation's deadline (a slot
// move's copy retries then, against whichever node leads the target).
func TestPeerStall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		rd := bufio.NewReader(c)
		if _, err := rd.ReadString('\n'); err == nil { // the first call is answered
			_, _ = c.Write([]byte("+OK\r\n"))
		}
		time.Sleep(5 * time.Second) // then nothing, with the connection open
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := &peerConn{conn: c, rd: bufio.NewReader(c), w: bufio.NewWriter(c), finished: make(chan struct{}),
		end: time.Now().Add(time.Minute), stall: 200 * time.Millisecond}
	defer p.close()
	if line, err := p.call("PING"); err != nil || line != "+OK" {
		t.Fatalf("first call: %q %v", line, err)
	}
	start := time.Now()
	_, err = p.call("PING")
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a peer that stopped answering: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the stalled call took %v", d)
	}
	// The replies still counted in flight fail at once: the conversation is over.
	start = time.Now()
	for range 100 {
		if _, err := p.reply(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("a reply after the stall: %v", err)
		}
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("draining 100 replies after the stall took %v", d)
	}
}

package server

import (
	"net"
	"syscall"
	"testing"
)

// TestSetKeepAlive reads back the socket options tcp-keepalive sets: Redis's idle time,
// a third of it between probes, three probes; 0 turns keepalive off.
func TestSetKeepAlive(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			buf := make([]byte, 1)
			_, _ = c.Read(buf)
		}
	}()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	tc := nc.(*net.TCPConn)
	opt := func(level, name int) int {
		raw, err := tc.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var gerr error
		_ = raw.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), level, name) })
		if gerr != nil {
			t.Fatal(gerr)
		}
		return v
	}
	setKeepAlive(tc, 300)
	if on, idle, intvl, cnt := opt(syscall.SOL_SOCKET, syscall.SO_KEEPALIVE), opt(syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE),
		opt(syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL), opt(syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT); on != 1 || idle != 300 || intvl != 100 || cnt != 3 {
		t.Fatalf("keepalive on=%d idle=%d interval=%d count=%d, want 1 300 100 3", on, idle, intvl, cnt)
	}
	setKeepAlive(tc, 0)
	if on := opt(syscall.SOL_SOCKET, syscall.SO_KEEPALIVE); on != 0 {
		t.Fatalf("keepalive on=%d after tcp-keepalive 0", on)
	}
}

package server

import (
	"net"
	"testing"
)

// TestIsLocalClient pins protected mode's notion of a local client: Redis compares the peer
// address with "127.0.0.1" and "::1" exactly, so the rest of 127/8 counts as remote.
func TestIsLocalClient(t *testing.T) {
	for _, tc := range []struct {
		addr  net.Addr
		local bool
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1}, true},
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.2"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("192.168.0.1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1"), Port: 1}, false},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8::1"), Port: 1}, false},
		{&net.UnixAddr{Name: "/tmp/hotkv.sock", Net: "unix"}, true},
	} {
		if got := isLocalClient(tc.addr); got != tc.local {
			t.Errorf("isLocalClient(%v) = %v, want %v", tc.addr, got, tc.local)
		}
	}
}

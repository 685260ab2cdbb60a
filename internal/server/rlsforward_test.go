package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/rls"
)

// fakeNode answers the rate limit service's commands as a shard's leader would, and closes
// each connection after closeAfter commands when that is set (a node that restarted since
// the connection was pooled).
type fakeNode struct {
	ln         net.Listener
	closeAfter atomic.Int64
	moved      string // when set, every command is answered -MOVED to it
	conns      atomic.Int64
}

func startFake(t *testing.T) *fakeNode {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeNode{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			go f.serve(c)
		}
	}()
	return f
}

func (f *fakeNode) serve(c net.Conn) {
	defer c.Close()
	rd := resp.NewReader(c)
	for n := int64(0); ; n++ {
		args, err := rd.Next()
		for err == nil && args == nil {
			if err = rd.Fill(); err == nil {
				args, err = rd.Next()
			}
		}
		if err != nil {
			return
		}
		if m := f.closeAfter.Load(); m > 0 && n >= m {
			return // closed before this command: nothing of it is answered
		}
		reply := "-ERR unknown\r\n"
		switch name := strings.ToUpper(string(args[0])); {
		case f.moved != "":
			reply = "-MOVED 1 " + f.moved + "\r\n"
		case name == "GCRA.LIMIT":
			reply = "*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:100\r\n"
		case name == "MULTI":
			reply = "+OK\r\n"
		case name == "EXEC":
			reply = "*2\r\n:1\r\n:1\r\n"
		default:
			reply = "+QUEUED\r\n"
		}
		if _, err := io.WriteString(c, reply); err != nil {
			return
		}
	}
}

func cmd(args ...string) [][]byte {
	out := make([][]byte, len(args))
	for i, a := range args {
		out[i] = []byte(a)
	}
	return out
}

func TestRLSForwardRelaysMovedGroups(t *testing.T) {
	s := New(config.New(config.Directives()), slog.New(slog.NewTextHandler(io.Discard, nil)))
	s.ctx, s.cancel = context.WithCancel(context.Background())
	defer s.cancel()
	f := &rlsForwarder{s: s}
	defer f.close()
	owner := startFake(t)
	addr := owner.ln.Addr().String()
	moved := "-MOVED 42 " + addr + "\r\n"
	cmds := [][][]byte{
		cmd("GCRA.LIMIT", "rls:a", "1000", "10", "1"),
		cmd("MULTI"), cmd("INCRBY", "rls:b:0", "1"), cmd("PEXPIREAT", "rls:b:0", "86400000"), cmd("EXEC"),
		cmd("GCRA.LIMIT", "rls:mine", "1000", "10", "1"),
	}
	local := func() [][]byte {
		return [][]byte{[]byte(moved), []byte("+OK\r\n"), []byte(moved), []byte(moved), []byte("-EXECABORT Transaction discarded because of previous errors.\r\n"),
			[]byte("*5\r\n:1\r\n:10\r\n:0\r\n:100\r\n:1000\r\n")}
	}
	want := []string{"*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:100\r\n", "+OK\r\n", "+QUEUED\r\n", "+QUEUED\r\n", "*2\r\n:1\r\n:1\r\n",
		"*5\r\n:1\r\n:10\r\n:0\r\n:100\r\n:1000\r\n"} // the last one was answered here: kept
	check := func(what string) {
		t.Helper()
		replies := local()
		if err := f.forward(cmds, replies); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for i := range want {
			if string(replies[i]) != want[i] {
				t.Fatalf("%s: reply %d is %q, want %q", what, i, replies[i], want[i])
			}
		}
	}
	check("first relay")
	check("second relay")
	if n := owner.conns.Load(); n != 1 {
		t.Fatalf("%d connections for two relays, want 1 (pooled)", n)
	}
	if f.calls.Load() != 2 || f.errors.Load() != 0 {
		t.Fatalf("calls %d errors %d", f.calls.Load(), f.errors.Load())
	}

	// The owner drops its connections after each relay (5 commands): the pooled one is found
	// closed and the relay retried once on a new one.
	owner.closeAfter.Store(5)
	check("relay after the owner dropped the pooled connection")
	check("and again")
	if n := owner.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}

	// A node that does not answer: UNAVAILABLE, counted.
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	replies := [][]byte{[]byte("-MOVED 7 " + deadAddr + "\r\n")}
	if err := f.forward(cmds[:1], replies); !errors.Is(err, rls.ErrUnavailable) || f.errors.Load() != 1 {
		t.Fatalf("relay to a closed port: %v (errors %d), want ErrUnavailable", err, f.errors.Load())
	}

	// Nodes that keep redirecting: the relay stops after rlsForwardHops, leaving the last MOVED.
	loop := startFake(t)
	loop.moved = loop.ln.Addr().String()
	replies = [][]byte{[]byte("-MOVED 1 " + loop.moved + "\r\n")}
	if err := f.forward(cmds[:1], replies); err != nil || !strings.HasPrefix(string(replies[0]), "-MOVED") {
		t.Fatalf("redirect loop: %q %v", replies[0], err)
	}
}

func TestRLSGroupEndAndMovedAddr(t *testing.T) {
	cmds := [][][]byte{cmd("GCRA.LIMIT"), cmd("multi"), cmd("INCRBY"), cmd("exec"), cmd("MULTI"), cmd("SET")}
	for i, want := range map[int]int{0: 1, 1: 4, 4: 6} {
		if got := groupEnd(cmds, i); got != want {
			t.Errorf("groupEnd(%d) = %d, want %d", i, got, want)
		}
	}
	if a := movedAddr([][]byte{[]byte("+OK\r\n"), []byte("-MOVED 12 10.0.0.1:6379\r\n")}); a != "10.0.0.1:6379" {
		t.Errorf("movedAddr: %q", a)
	}
	if a := movedAddr([][]byte{[]byte("-CLUSTERDOWN The cluster is down\r\n"), []byte("-MOVEDX 1 a\r\n")}); a != "" {
		t.Errorf("movedAddr of no MOVED: %q", a)
	}
}

// Package testutil starts HotKV servers for integration tests and runs each test under both
// protocol modes, the way net/http's tests run under every HTTP version.
package testutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/server"
)

// T0 is the spec's reference time (spec/RATELIMIT.md): tests freeze the clock here.
const T0 = int64(1700000000000)

// Server is a running in-process HotKV.
type Server struct {
	*server.Server
	Addr string
	// Dir is the server's dir, where its snapshot lives.
	Dir string
}

// StartServer starts an in-process server on a free loopback port with DEBUG enabled and the
// append-only log off, plus any extra `--name value` arguments, and stops it when the test
// ends. Its dir is a fresh
// temporary directory (unless args set --dir), so snapshots never land in the package
// directory and no test loads another's.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	s, err := Launch(t, Options{Args: args})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s
}

// Options configure Launch.
type Options struct {
	// Dir is the server's dir (where dbfilename is read at start and written by saves); ""
	// means a new temporary directory.
	Dir string
	// ClockMs, when non-zero, freezes the server clock there (as DEBUG CLOCK SET) before the
	// server loads its snapshot, so that keys are loaded, or skipped as expired, at that time
	// and a restart test can continue at exactly the time it saved at.
	ClockMs int64
	// Args are extra `--name value` arguments.
	Args []string
	// Setup, when set, is called on the new server before Start (to add a metrics listener
	// or a loading hook, say).
	Setup func(*server.Server)
}

// Launch starts an in-process server as StartServer does, but returns Start's error (a
// snapshot that cannot be loaded) instead of failing the test. The server is closed, without
// saving, when the test ends.
func Launch(t testing.TB, o Options) (*Server, error) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	// The append-only log is off unless a test asks for it (--appendonly yes): a test of the
	// snapshot must load the snapshot, not a log that would win over it, and the many tests
	// that do not restart need neither the files nor the writer goroutine.
	argv := append([]string{"--port", "0", "--bind", "127.0.0.1", "--enable-debug-command", "yes", "--dir", o.Dir, "--appendonly", "no"}, o.Args...)
	cfg, err := config.Load(config.Directives(), argv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	srv := server.New(cfg, debugLogger(argv))
	if o.ClockMs != 0 {
		srv.Clock().Set(o.ClockMs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.AddListener(ln)
	if o.Setup != nil {
		o.Setup(srv)
	}
	if err := srv.Start(); err != nil {
		_ = srv.Close()
		return nil, err
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &Server{Server: srv, Addr: srv.Addr().String(), Dir: cfg.Get("dir")}, nil
}

// Stop shuts the server down as SHUTDOWN does with mode (command.ShutdownSave,
// ShutdownNoSave or ShutdownDefault) and waits until it has stopped, for restart tests.
func (s *Server) Stop(t testing.TB, mode int) {
	t.Helper()
	if err := s.Shutdown(mode, false); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	select {
	case <-s.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not stop within 30 s")
	}
}

// Client returns a go-redis client speaking the given protocol (2 or 3), closed at cleanup.
func (s *Server) Client(t testing.TB, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: proto, DisableIdentity: true,
		MaxRetries: -1, PoolSize: 4, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Protocols runs fn once per protocol mode, each with a fresh server and client.
func Protocols(t *testing.T, fn func(t *testing.T, s *Server, c *redis.Client), args ...string) {
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			s := StartServer(t, args...)
			fn(t, s, s.Client(t, proto))
		})
	}
}

// Ctx is a context for test calls.
var Ctx = context.Background()

// Raw is a plain connection for checking exact bytes on the wire.
type Raw struct {
	t  testing.TB
	nc net.Conn
	br *bufio.Reader
}

// Dial opens a raw connection.
func (s *Server) Dial(t testing.TB) *Raw {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &Raw{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// DialAddr opens a raw connection to any server at addr ("host:port"), such as a real Redis
// started by a differential test, closed at cleanup.
func DialAddr(t testing.TB, addr string) *Raw {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	return &Raw{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// Send writes bytes as they are.
func (r *Raw) Send(s string) {
	r.t.Helper()
	if _, err := r.nc.Write([]byte(s)); err != nil {
		r.t.Fatal(err)
	}
}

// Do sends a command as a multibulk and returns the raw reply.
func (r *Raw) Do(args ...string) string {
	r.t.Helper()
	r.SendCmd(args...)
	return r.ReadReply()
}

// SendCmd sends a command as a multibulk without reading its reply (a blocking command whose
// reply comes later).
func (r *Raw) SendCmd(args ...string) {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	r.Send(b.String())
}

// ReadReply reads one complete RESP2/RESP3 reply and returns its exact bytes.
func (r *Raw) ReadReply() string {
	r.t.Helper()
	_ = r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	r.readValue(&b)
	return b.String()
}

// ReadEOF reports whether the server closed the connection.
func (r *Raw) ReadEOF() bool {
	_ = r.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := r.br.ReadByte()
	return err != nil
}

func (r *Raw) line() string {
	l, err := r.br.ReadString('\n')
	if err != nil {
		r.t.Fatalf("read: %v (got %q)", err, l)
	}
	return l
}

func (r *Raw) readValue(b *strings.Builder) {
	l := r.line()
	b.WriteString(l)
	body := strings.TrimRight(l[1:], "\r\n")
	var n int
	switch l[0] {
	case '$', '=', '!':
		fmt.Sscan(body, &n)
		if n >= 0 {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(r.br, buf); err != nil {
				r.t.Fatal(err)
			}
			b.Write(buf)
		}
	case '*', '~', '>':
		fmt.Sscan(body, &n)
		for i := 0; i < n; i++ {
			r.readValue(b)
		}
	case '%', '|':
		fmt.Sscan(body, &n)
		for i := 0; i < 2*n; i++ {
			r.readValue(b)
		}
	}
}

// debugLogger is nil (logs discarded) unless HOTKV_TEST_LOG is set: then every in-process
// server logs to stderr at debug level, each line tagged with the server's Raft node id or
// directory, so that a failing multi-node test can be read node by node.
func debugLogger(argv []string) *slog.Logger {
	if os.Getenv("HOTKV_TEST_LOG") == "" {
		return nil
	}
	tag := ""
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "--raft-node-id" || (argv[i] == "--dir" && tag == "") {
			tag = argv[i+1]
		}
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", tag)
}

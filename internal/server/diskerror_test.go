package server

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/hotkv/hotkv/internal/config"
)

// An append-only log that cannot be written refuses writes (and PING) with Redis's MISCONF
// error naming the system error, serves reads, and lifts the refusal once a write or fsync
// succeeds again.
func TestAOFWriteErrorRefusesWrites(t *testing.T) {
	cfg, err := config.Load(config.Directives(), []string{"--dir", t.TempDir(), "--port", "0", "--save", "", "--appendonly", "yes"})
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.AddListener(ln)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	rd := bufio.NewReader(nc)
	do := func(cmd string) string {
		t.Helper()
		if _, err := io.WriteString(nc, cmd+"\r\n"); err != nil {
			t.Fatal(err)
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line[0] == '$' && line != "$-1\r\n" {
			rest, _ := rd.ReadString('\n')
			line += rest
		}
		return line
	}
	if got := do("SET k v"); got != "+OK\r\n" {
		t.Fatalf("SET before the failure: %q", got)
	}
	s.aof().writeFailed("fsync", &os.PathError{Op: "sync", Path: "appendonly.aof", Err: syscall.ENOSPC})
	misconf := "-MISCONF Errors writing to the AOF file: No space left on device\r\n"
	for _, cmd := range []string{"SET k w", "PING", "INCR n"} {
		if got := do(cmd); got != misconf {
			t.Fatalf("%s while the log fails: %q", cmd, got)
		}
	}
	if got := do("GET k"); got != "$1\r\nv\r\n" {
		t.Fatalf("GET while the log fails: %q", got)
	}
	// stop-writes-on-bgsave-error is about snapshots: the log's refusal stays.
	if got := do("CONFIG SET stop-writes-on-bgsave-error no"); got != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", got)
	}
	if got := do("SET k w"); got != misconf {
		t.Fatalf("SET with stop-writes-on-bgsave-error no: %q", got)
	}
	s.aof().writeWorks()
	if got := do("SET k w"); got != "+OK\r\n" {
		t.Fatalf("SET once the log is written again: %q", got)
	}
}

package main

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifySocket listens on a unixgram socket as systemd does for a Type=notify unit and
// delivers each datagram on the returned channel.
func notifySocket(t *testing.T) (string, <-chan string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch := make(chan string, 64)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(ch)
				return
			}
			ch <- string(buf[:n])
		}
	}()
	return path, ch
}

// nextMessage waits for a datagram containing want, returning every datagram seen.
func nextMessage(t *testing.T, ch <-chan string, want string, p *proc) []string {
	t.Helper()
	var seen []string
	timeout := time.After(20 * time.Second)
	for {
		select {
		case m, ok := <-ch:
			if !ok {
				t.Fatalf("notify socket closed before %q; seen %q", want, seen)
			}
			seen = append(seen, m)
			if strings.Contains(m, want) {
				return seen
			}
		case <-timeout:
			t.Fatalf("no %q within 20 s; seen %q; log:\n%s", want, seen, p.out.String())
		}
	}
}

// TestSystemdNotify: under `supervised systemd` (and `auto` with NOTIFY_SOCKET set) the server
// reports loading, then READY=1 only once its port accepts connections, then STOPPING=1 on
// SIGTERM; without supervision it sends nothing.
func TestSystemdNotify(t *testing.T) {
	for _, mode := range []string{"systemd", "auto"} {
		t.Run(mode, func(t *testing.T) {
			sock, ch := notifySocket(t)
			t.Setenv("NOTIFY_SOCKET", sock)
			t.Setenv("UPSTART_JOB", "")
			port := freePort(t)
			p := startProc(t, "", "--supervised", mode, "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
			p.port = port
			seen := nextMessage(t, ch, "READY=1", p)
			// READY=1 comes after the listener is open: the port answers at once.
			nc, err := net.DialTimeout("tcp", p.addr(), time.Second)
			if err != nil {
				t.Fatalf("READY=1 arrived but the port does not accept: %v", err)
			}
			nc.Close()
			if !strings.HasPrefix(seen[0], "STATUS=") || !strings.Contains(seen[0], "loading") {
				t.Fatalf("first message %q, want a loading STATUS", seen[0])
			}
			if got := p.raw(t).Do("INFO", "server"); !strings.Contains(got, "\r\nprocess_supervised:systemd\r\n") {
				t.Fatalf("INFO server:\n%s", got)
			}
			if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			nextMessage(t, ch, "STOPPING=1", p)
			if code := p.wait(10 * time.Second); code != 0 {
				t.Fatalf("exit %d after SIGTERM:\n%s", code, p.out.String())
			}
		})
	}
	t.Run("no", func(t *testing.T) {
		sock, ch := notifySocket(t)
		t.Setenv("NOTIFY_SOCKET", sock)
		p := startServer(t, "")
		if got := p.raw(t).Do("INFO", "server"); !strings.Contains(got, "\r\nprocess_supervised:no\r\n") {
			t.Fatalf("INFO server:\n%s", got)
		}
		select {
		case m := <-ch:
			t.Fatalf("unsupervised server sent %q", m)
		case <-time.After(200 * time.Millisecond):
		}
	})
}

// TestUpstartStopsWhenReady: `supervised upstart` with UPSTART_JOB set stops the process with
// SIGSTOP once it serves (upstart's `expect stop`); continued, it serves.
func TestUpstartStopsWhenReady(t *testing.T) {
	t.Setenv("UPSTART_JOB", "hotkv")
	t.Setenv("NOTIFY_SOCKET", "")
	port := freePort(t)
	p := startProc(t, "", "--supervised", "upstart", "--port", strconv.Itoa(port), "--bind", "127.0.0.1")
	p.port = port
	stat := filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "stat")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if procState(stat) == "T" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("process never stopped itself:\n%s", p.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !p.waitReady(t, 10*time.Second) {
		t.Fatalf("not serving after SIGCONT:\n%s", p.out.String())
	}
}

// procState reads the state letter of /proc/<pid>/stat ("" if unreadable).
func procState(path string) string {
	data, err := readFileString(path)
	if err != nil {
		return ""
	}
	i := strings.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return ""
	}
	return data[i+2 : i+3]
}

func readFileString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

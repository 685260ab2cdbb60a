package procs

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// gone reports whether no process with pid exists (it was killed and reaped).
func gone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

func mustDo(t *testing.T, n *Node, want string, args ...string) {
	t.Helper()
	got, err := n.Do(10*time.Second, args...)
	if err != nil || got != want {
		t.Fatalf("%s %q: got %q %v, want %q", n.Name, args, got, err, want)
	}
}

// TestKillRestartKeepsData is the standalone durability path the failover tests build on:
// three real servers, a write acknowledged under appendfsync always, SIGKILL, restart from the
// same dir and port, and the data is back; the other nodes are untouched throughout.
func TestKillRestartKeepsData(t *testing.T) {
	nodes := StartN(t, 3, "--appendonly", "yes", "--appendfsync", "always")
	for i, n := range nodes {
		mustDo(t, n, "+OK", "SET", "k", "v"+strconv.Itoa(i+1))
	}
	n2 := nodes[1]
	port, dir, pid := n2.Port, n2.Dir, n2.Pid()
	mustDo(t, n2, "+OK", "SET", "only-on-2", "durable")

	n2.Kill()
	if n2.Running() || !gone(pid) {
		t.Fatal("node 2 still running after Kill")
	}
	if code, ok := n2.Wait(0); !ok || code != -1 {
		t.Fatalf("exit after SIGKILL: code %d ok %v, want -1 (signal)", code, ok)
	}
	if err := n2.Ping(time.Second); err == nil {
		t.Fatal("a killed node answered PING")
	}
	mustDo(t, nodes[0], "$2\nv1", "GET", "k")
	mustDo(t, nodes[2], "$2\nv3", "GET", "k")

	n2.Restart()
	if n2.Port != port || n2.Dir != dir || n2.Pid() == pid {
		t.Fatalf("restart changed port/dir or kept the pid: %d %s %d", n2.Port, n2.Dir, n2.Pid())
	}
	mustDo(t, n2, "$7\ndurable", "GET", "only-on-2")
	mustDo(t, n2, "$2\nv2", "GET", "k")
	mustDo(t, nodes[0], "$-1", "GET", "only-on-2") // nodes are independent

	// A wiped node comes back empty on the same port.
	n2.Kill()
	n2.Wipe()
	n2.Restart()
	mustDo(t, n2, "$-1", "GET", "only-on-2")
	if !strings.Contains(n2.Log(), "run 2") {
		t.Fatalf("log lacks the second run's header:\n%s", n2.Log())
	}
}

func TestPauseResume(t *testing.T) {
	n := Start(t, Options{Name: "paused"})
	c, err := net.Dial("tcp", n.Addr) // an open connection survives the pause
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n.Pause()
	start := time.Now()
	err = n.Ping(300 * time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("PING to a paused node: %v, want a timeout", err)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("timed out after %v", el)
	}
	if !n.Running() {
		t.Fatal("a paused node counts as running")
	}
	// The old connection is open: a command sent now is answered after Resume.
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	n.Resume()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 7)
	if _, err := c.Read(buf); err != nil || string(buf) != "+PONG\r\n" {
		t.Fatalf("old connection after resume: %q %v", buf, err)
	}
	if err := n.Ping(10 * time.Second); err != nil {
		t.Fatal("PING after resume:", err)
	}
}

func TestStopIsCleanAndRestarts(t *testing.T) {
	n := Start(t, Options{Name: "stopped", Args: []string{"--appendonly", "no", "--save", "3600 1"}})
	mustDo(t, n, "+OK", "SET", "a", "1")
	pid := n.Pid()
	if code := n.Stop(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d after SIGTERM\n%s", code, n.Log())
	}
	if !gone(pid) {
		t.Fatal("process still there after Stop")
	}
	// SIGTERM saved the snapshot (a save point is configured): the restart loads it.
	n.Restart()
	mustDo(t, n, "$1\n1", "GET", "a")

	// A paused node can be stopped too: Stop continues it first.
	n.Pause()
	if code := n.Stop(30 * time.Second); code != 0 {
		t.Fatalf("exit code %d stopping a paused node", code)
	}
}

func TestFixedPortAndDir(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mine")
	n := Start(t, Options{Name: "fixed", Port: port, Dir: dir})
	if n.Port != port || n.Dir != dir || n.Addr != "127.0.0.1:"+strconv.Itoa(port) {
		t.Fatalf("%+v", n)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}

// TestCleanupKillsPausedNodes: a subtest ends with its nodes paused (the hardest state to
// clean up: SIGTERM would stay pending); after it returns, no process is left.
func TestCleanupKillsPausedNodes(t *testing.T) {
	var pids []int
	t.Run("leaves nodes behind", func(t *testing.T) {
		for _, n := range StartN(t, 2) {
			n.Pause()
			pids = append(pids, n.Pid())
		}
	})
	for _, pid := range pids {
		if !gone(pid) {
			t.Errorf("pid %d survived its test's cleanup", pid)
		}
	}
}

// TestCleanupAfterPanic runs this test binary again with a test that starts a node and
// panics; the node must not outlive it.
func TestCleanupAfterPanic(t *testing.T) {
	if os.Getenv("PROCS_PANIC_CHILD") != "" {
		t.Skip("only runs as the parent")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PROCS_PANIC_CHILD="+pidFile, "HOTKV_SERVER_BIN="+Binary(t))
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "deliberate panic") {
		t.Fatalf("the child should have panicked: %v\n%s", err, out)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatalf("child wrote no pid: %v\n%s", rerr, out)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The child's cleanup kills and reaps the server before the child exits; poll briefly in
	// case only the parent-death signal got it (then init reaps it).
	deadline := time.Now().Add(10 * time.Second)
	for !gone(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("server pid %d outlived the panicking test", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPanicChild is the child of TestCleanupAfterPanic; it does nothing in a normal run.
func TestPanicChild(t *testing.T) {
	pidFile := os.Getenv("PROCS_PANIC_CHILD")
	if pidFile == "" {
		t.Skip("child of TestCleanupAfterPanic")
	}
	n := Start(t, Options{Name: "doomed"})
	n.Pause()
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(n.Pid())), 0o644); err != nil {
		t.Fatal(err)
	}
	panic("deliberate panic")
}

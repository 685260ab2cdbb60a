// Package procs runs real hotkv-server processes for multi-node tests: failover and
// durability tests need what goroutines cannot give them (SIGKILL with no chance to flush,
// SIGSTOP freezing every thread of a "zombie leader", a restart that re-reads the data dir).
//
// The binary is built once per test binary (with -race when the test binary has it, so the
// servers report races too) unless HOTKV_SERVER_BIN names one. Each Node has a port on
// 127.0.0.1 and a directory that survive its restarts, so a restarted node comes back with
// the same address and data, as an operator's restart would. Every process runs in its own
// process group and is killed, with its group, when the test ends, whether the test passed,
// failed or panicked; Linux's parent-death signal also kills it if the test binary itself dies.
// When a test fails, each node's log is printed.
package procs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/freeport"
)

var (
	buildOnce sync.Once
	buildBin  string
	buildDir  string
	buildErr  error
)

// Main runs a package's tests and then removes the binary built for them. Call it from
// TestMain (`func TestMain(m *testing.M) { procs.Main(m) }`); without it the binary stays in
// the temporary directory.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	if noRaceBin != "" {
		os.RemoveAll(filepath.Dir(noRaceBin))
	}
	os.Exit(code)
}

// Binary returns the hotkv-server binary, building it on first use: HOTKV_SERVER_BIN if set,
// else `go build ./cmd/hotkv-server` from the repository containing the working directory.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if bin := os.Getenv("HOTKV_SERVER_BIN"); bin != "" {
			buildBin = bin
			return
		}
		buildDir, buildBin, buildErr = build(raceEnabled())
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

var (
	noRaceOnce sync.Once
	noRaceBin  string
	noRaceErr  error
)

// binaryNoRace builds hotkv-server without the race detector, once, next to Binary's.
func binaryNoRace(t testing.TB) string {
	t.Helper()
	noRaceOnce.Do(func() { _, noRaceBin, noRaceErr = build(false) })
	if noRaceErr != nil {
		t.Fatal(noRaceErr)
	}
	return noRaceBin
}

// build runs `go build ./cmd/hotkv-server` (with -race if race) from the repository root into
// a new temporary directory, and returns the directory and the binary.
func build(race bool) (dir, bin string, err error) {
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	if dir, err = os.MkdirTemp("", "hotkv-procs-"); err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "hotkv-server")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "./cmd/hotkv-server")...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return dir, "", fmt.Errorf("building hotkv-server: %v\n%s", err, out)
	}
	return dir, bin, nil
}

// RaceBuilt reports whether the servers are built with the race detector (then they run
// several times slower, which timing-sensitive tests should allow for).
func RaceBuilt() bool { return raceEnabled() && os.Getenv("HOTKV_SERVER_BIN") == "" }

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// repoRoot is the nearest directory at or above the working directory holding
// cmd/hotkv-server (tests run in their package directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fi, err := os.Stat(filepath.Join(dir, "cmd", "hotkv-server")); err == nil && fi.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("procs: no cmd/hotkv-server above the working directory; set HOTKV_SERVER_BIN")
		}
		dir = parent
	}
}

// FreePort returns a loopback port for a node (freeport.Get: free now, never handed out
// before in this process). Another process may take it before the server binds it; Start
// retries on a new port when that happens.
func FreePort() (int, error) { return freeport.Get() }

// LogBuffer collects a process's output, written by its pipes while tests read it; a node's
// keeps every run's.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Options configure a node.
type Options struct {
	// Name labels the node in logs and failures ("n1"); default "node".
	Name string
	// Args are extra server arguments (`--appendonly yes`, ...). Start adds --port, --bind
	// 127.0.0.1 and --dir; they must not be in Args.
	Args []string
	// Dir is the node's data dir; "" means a new directory under the test's TempDir.
	Dir string
	// Port is the client port; 0 picks a free one (kept across restarts).
	Port int
	// ReadyTimeout bounds the wait for PING after each start; default 30 s (60 s with a race
	// build), generous because a loaded 2-core machine replays logs slowly.
	ReadyTimeout time.Duration
	// NoRace runs a server built without the race detector even when the test is (-race):
	// for tests of many processes whose point is the fault schedule, where six race-built
	// servers on two cores starve each other's Raft heartbeats into endless elections.
	NoRace bool
}

// Node is one hotkv-server process and what survives its restarts (port, dir, args, log).
type Node struct {
	t    testing.TB
	bin  string
	opts Options
	// Name, Port, Addr and Dir are fixed for the node's life.
	Name string
	Port int
	Addr string
	Dir  string
	log  LogBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current process has been reaped
	err    error         // Wait's result, once done is closed
	paused bool
	runs   int
}

// Start starts a node and waits until it answers PING. The node is killed (with its process
// group) when the test ends.
func Start(t testing.TB, o Options) *Node {
	t.Helper()
	if o.Name == "" {
		o.Name = "node"
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(t.TempDir(), o.Name)
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 30 * time.Second
		if RaceBuilt() {
			o.ReadyTimeout = 60 * time.Second
		}
	}
	bin := ""
	if o.NoRace && RaceBuilt() {
		bin = binaryNoRace(t)
	} else {
		bin = Binary(t)
	}
	n := &Node{t: t, bin: bin, opts: o, Name: o.Name, Dir: o.Dir}
	t.Cleanup(func() {
		n.killNow()
		if t.Failed() {
			t.Logf("---- log of %s (%s, dir %s) ----\n%s", n.Name, n.Addr, n.Dir, tail(n.Log(), 16<<10))
		}
	})
	fixed := o.Port != 0
	for attempt := 0; ; attempt++ {
		n.Port = o.Port
		if !fixed {
			p, err := FreePort()
			if err != nil {
				t.Fatal(err)
			}
			n.Port = p
		}
		n.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(n.Port))
		err := n.launch()
		if err == nil {
			return n
		}
		// Only a lost race for the port is retried; anything else is the test's failure.
		if fixed || attempt >= 4 || !strings.Contains(n.Log(), "listening socket") {
			t.Fatalf("%s: %v\n%s", n.Name, err, tail(n.Log(), 16<<10))
		}
	}
}

// StartN starts n nodes named n1..nN with the same args.
func StartN(t testing.TB, count int, args ...string) []*Node {
	t.Helper()
	nodes := make([]*Node, count)
	for i := range nodes {
		nodes[i] = Start(t, Options{Name: "n" + strconv.Itoa(i+1), Args: args})
	}
	return nodes
}

// launch starts one process of the node and waits for it to answer PING.
func (n *Node) launch() error {
	n.mu.Lock()
	if n.cmd != nil {
		select {
		case <-n.done:
		default:
			n.mu.Unlock()
			return errors.New("already running")
		}
	}
	n.runs++
	fmt.Fprintf(&n.log, "==== %s run %d: %s ====\n", n.Name, n.runs, time.Now().Format(time.RFC3339Nano))
	args := append([]string{"--port", strconv.Itoa(n.Port), "--bind", "127.0.0.1", "--dir", n.Dir}, n.opts.Args...)
	cmd := exec.Command(n.bin, args...)
	cmd.Dir = n.Dir
	cmd.Stdout, cmd.Stderr = &n.log, &n.log
	// Own process group: signals reach the server and anything it starts, and the test's
	// terminal signals (Ctrl-C to go test) do not. Pdeathsig kills the server if the test
	// binary dies without running cleanups (a timeout panic, os.Exit).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		n.mu.Unlock()
		return err
	}
	done := make(chan struct{})
	n.cmd, n.done, n.err, n.paused = cmd, done, nil, false
	n.mu.Unlock()
	go func() {
		err := cmd.Wait()
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(done)
	}()
	if err := n.WaitReady(n.opts.ReadyTimeout); err != nil {
		n.killNow()
		return err
	}
	return nil
}

// current returns the running process's command and done channel.
func (n *Node) current() (*exec.Cmd, chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cmd, n.done
}

// Running reports whether the node's process exists (paused counts as running).
func (n *Node) Running() bool {
	cmd, done := n.current()
	if cmd == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Pid is the current process id (0 before the first start).
func (n *Node) Pid() int {
	cmd, _ := n.current()
	if cmd == nil || cmd.Process == nil {
		return 0
	}
	return cmd.Process.Pid
}

// signal sends sig to the node's process group.
func (n *Node) signal(sig syscall.Signal) error {
	cmd, done := n.current()
	if cmd == nil {
		return errors.New("never started")
	}
	select {
	case <-done:
		return errors.New("not running")
	default:
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// DumpGoroutines sends SIGQUIT, which makes the Go runtime write every goroutine's stack to
// the node's log and exit: the post-mortem of a node that stopped making progress.
// The whole log, dump included, goes to a file in the system's temporary directory (a
// failing test prints only the log's tail), whose path the test log names.
func (n *Node) DumpGoroutines() {
	if err := n.signal(syscall.SIGQUIT); err != nil {
		return
	}
	n.Wait(5 * time.Second)
	name := strings.NewReplacer("/", "_", " ", "_").Replace(n.t.Name())
	path := filepath.Join(os.TempDir(), fmt.Sprintf("hotkv-%s-%s-%d.log", name, n.Name, time.Now().Unix()))
	if err := os.WriteFile(path, []byte(n.Log()), 0o644); err == nil {
		n.t.Logf("%s: goroutine dump and whole log in %s", n.Name, path)
	}
}

// killNow SIGKILLs the process group (stopped processes die too) and reaps it. It never
// fails a test: cleanups use it.
func (n *Node) killNow() {
	cmd, done := n.current()
	if cmd == nil {
		return
	}
	select {
	case <-done:
		return // reaped: its pid (and group id) may belong to someone else by now
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		n.t.Errorf("%s: pid %d survived SIGKILL for 30 s", n.Name, cmd.Process.Pid)
	}
}

// Kill SIGKILLs the node (no flush, no shutdown hooks: a crash) and waits until it is gone.
func (n *Node) Kill() {
	n.t.Helper()
	if !n.Running() {
		n.t.Fatalf("%s: Kill of a node that is not running", n.Name)
	}
	n.killNow()
}

// Pause freezes the node with SIGSTOP: connections stay open, nothing is answered, timers
// stop, as in a long GC pause or a VM stall. Resume continues it.
func (n *Node) Pause() {
	n.t.Helper()
	if err := n.signal(syscall.SIGSTOP); err != nil {
		n.t.Fatalf("%s: pause: %v", n.Name, err)
	}
	// kill(2) returns before every thread has stopped; a thread already running can still
	// answer a request. Wait until the kernel reports each thread stopped, so a test that
	// pauses and then probes sees a frozen node.
	if err := waitStopped(n.Pid(), 10*time.Second); err != nil {
		n.t.Fatalf("%s: pause: %v", n.Name, err)
	}
	n.mu.Lock()
	n.paused = true
	n.mu.Unlock()
}

// waitStopped polls /proc until every thread of pid is in state T (stopped).
func waitStopped(pid int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		all := len(tasks) > 0
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue // the thread exited
			}
			// The state follows the parenthesised command name, which may hold spaces.
			i := bytes.LastIndexByte(b, ')')
			if i < 0 || i+2 >= len(b) || (b[i+2] != 'T' && b[i+2] != 't') {
				all = false
				break
			}
		}
		if all {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("threads of pid %d not all stopped after %v", pid, d)
		}
		time.Sleep(time.Millisecond)
	}
}

// Resume continues a paused node (SIGCONT).
func (n *Node) Resume() {
	n.t.Helper()
	if err := n.signal(syscall.SIGCONT); err != nil {
		n.t.Fatalf("%s: resume: %v", n.Name, err)
	}
	n.mu.Lock()
	n.paused = false
	n.mu.Unlock()
}

// Stop sends SIGTERM (after SIGCONT, so a paused node can act on it), waits up to timeout for
// a clean exit and returns the exit code. A node that does not exit in time is killed and the
// test fails.
func (n *Node) Stop(timeout time.Duration) int {
	n.t.Helper()
	_ = n.signal(syscall.SIGCONT)
	if err := n.signal(syscall.SIGTERM); err != nil {
		n.t.Fatalf("%s: stop: %v", n.Name, err)
	}
	code, ok := n.Wait(timeout)
	if !ok {
		n.killNow()
		n.t.Fatalf("%s: did not exit within %v of SIGTERM\n%s", n.Name, timeout, tail(n.Log(), 16<<10))
	}
	return code
}

// Wait waits up to d for the process to exit and returns its exit code (-1 when killed by a
// signal); ok is false if it is still running.
func (n *Node) Wait(d time.Duration) (code int, ok bool) {
	cmd, done := n.current()
	if cmd == nil {
		return 0, false
	}
	select {
	case <-done: // already gone: answer even when d is 0
	default:
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			return 0, false
		}
	}
	n.mu.Lock()
	err := n.err
	n.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), true
	}
	return 0, true
}

// Exited is closed when the current process has exited.
func (n *Node) Exited() <-chan struct{} {
	_, done := n.current()
	return done
}

// Restart starts the node again with the same port, args and dir after Kill or Stop (or a
// crash), and waits until it answers PING. Restarting a running node is a test bug.
func (n *Node) Restart() {
	n.t.Helper()
	if n.Running() {
		n.t.Fatalf("%s: Restart of a running node (Kill or Stop it first)", n.Name)
	}
	if err := n.launch(); err != nil {
		n.t.Fatalf("%s: restart: %v\n%s", n.Name, err, tail(n.Log(), 16<<10))
	}
}

// Wipe empties the node's data dir while it is down, for the "restart with an empty data
// dir" nemesis (a replaced disk: the node must rejoin as a new member). The dir itself stays,
// so Restart works as usual.
func (n *Node) Wipe() {
	n.t.Helper()
	if n.Running() {
		n.t.Fatalf("%s: Wipe of a running node (Kill or Stop it first)", n.Name)
	}
	entries, err := os.ReadDir(n.Dir)
	if err != nil {
		n.t.Fatalf("%s: wipe: %v", n.Name, err)
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(n.Dir, e.Name())); err != nil {
			n.t.Fatalf("%s: wipe: %v", n.Name, err)
		}
	}
}

// Log returns everything the node printed, all runs, with a header line per run.
func (n *Node) Log() string { return n.log.String() }

// WaitReady polls until the node answers PING with +PONG, for at most d. A server still
// loading its data answers -LOADING, which is not ready.
func (n *Node) WaitReady(d time.Duration) error {
	deadline := time.Now().Add(d)
	_, done := n.current()
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return fmt.Errorf("exited before answering PING")
		default:
		}
		reply, err := n.Do(time.Second, "PING")
		if err == nil && reply == "+PONG" {
			return nil
		}
		last = err
		if err == nil {
			last = fmt.Errorf("PING: %s", reply)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("no PONG within %v (last: %v)", d, last)
}

// Ping sends PING on a new connection and reports an error unless +PONG arrives within
// timeout; a paused node times out.
func (n *Node) Ping(timeout time.Duration) error {
	reply, err := n.Do(timeout, "PING")
	if err != nil {
		return err
	}
	if reply != "+PONG" {
		return fmt.Errorf("PING: %s", reply)
	}
	return nil
}

// Do sends one command on a new connection and returns the first line of the reply (e.g.
// "+OK", "$5", ":1", "-ERR ..."), with the bulk payload appended after a newline for a bulk
// string reply. It is a minimal probe for harness checks; tests use a real client for load.
func (n *Node) Do(timeout time.Duration, args ...string) (string, error) {
	c, err := net.DialTimeout("tcp", n.Addr, timeout)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(b.String())); err != nil {
		return "", err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if strings.HasPrefix(line, "$") {
		size, err := strconv.Atoi(line[1:])
		if err == nil && size >= 0 {
			payload := make([]byte, size+2)
			if _, err := io.ReadFull(r, payload); err != nil {
				return "", err
			}
			return line + "\n" + string(payload[:size]), nil
		}
	}
	return line, nil
}

// tail returns the last max bytes of s.
func tail(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return "...\n" + s[len(s)-max:]
}

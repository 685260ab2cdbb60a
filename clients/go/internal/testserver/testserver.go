// Package testserver builds and runs a real hotkv-server for this module's tests, so the
// client is tested against the protocol as the server speaks it rather than against mocks.
//
// The server binary comes from HOTKV_SERVER_BIN when set; otherwise it is built from the
// repository that contains this module (found by walking up from the working directory to the
// directory holding cmd/hotkv-server). The server listens on a free loopback port with
// persistence off and DEBUG enabled, because the tests freeze its clock with DEBUG CLOCK SET to
// reproduce the specification's test vectors exactly.
package testserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// Server is a running hotkv-server.
type Server struct {
	// Addr is host:port to connect to.
	Addr string
	cmd  *exec.Cmd
	dir  string
	log  *os.File
}

// Start builds (unless HOTKV_SERVER_BIN names a binary) and starts a server in a fresh
// temporary directory. The caller must Stop it.
func Start() (*Server, error) {
	dir, err := os.MkdirTemp("", "hotkv-client-test-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	ok := false
	defer func() {
		if !ok {
			s.Stop()
		}
	}()

	bin := os.Getenv("HOTKV_SERVER_BIN")
	if bin == "" {
		root, err := repoRoot()
		if err != nil {
			return nil, err
		}
		bin = filepath.Join(dir, "hotkv-server")
		build := exec.Command("go", "build", "-o", bin, "./cmd/hotkv-server")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("building hotkv-server in %s: %v\n%s", root, err, out)
		}
	}

	// Several test binaries (this package's and httplimit's) start servers at the same time,
	// so a port that was free a moment ago may be taken: retry on a new port.
	var lastErr error
	for range 5 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		if lastErr = s.launch(bin, port); lastErr == nil {
			ok = true
			return s, nil
		}
	}
	return nil, lastErr
}

func (s *Server) launch(bin string, port int) error {
	if s.log != nil {
		s.log.Close()
	}
	logf, err := os.CreateTemp(s.dir, "server-*.log")
	if err != nil {
		return err
	}
	s.log = logf
	data := filepath.Join(s.dir, "data-"+strconv.Itoa(port))
	if err := os.MkdirAll(data, 0o755); err != nil {
		return err
	}
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--appendonly", "no",
		"--save", "",
		"--dir", data,
		"--enable-debug-command", "yes",
	)
	cmd.Stdout = logf
	cmd.Stderr = logf
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			out, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("hotkv-server exited early (%v):\n%s", err, out)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			s.cmd = cmd
			s.Addr = addr
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return errors.New("hotkv-server did not start listening within 15s")
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		_, _ = s.cmd.Process.Wait()
	}
	if s.log != nil {
		s.log.Close()
	}
	os.RemoveAll(s.dir)
}

// repoRoot finds the server's repository: the nearest directory at or above the working
// directory that contains cmd/hotkv-server. Tests run in their package directory
// (clients/go or clients/go/httplimit), so this is two or three levels up.
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
			return "", errors.New("cannot find cmd/hotkv-server above the working directory; set HOTKV_SERVER_BIN to a hotkv-server binary")
		}
		dir = parent
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

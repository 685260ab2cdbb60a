package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// waitFor polls until file contains want.
func waitFor(t *testing.T, file, want string) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		data, _ := os.ReadFile(file)
		if strings.Contains(string(data), want) {
			return string(data)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q:\n%s", file, want, data)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLogfileFollowsRotation: the log names the pid at start and says when it is ready; after
// the file is renamed away (logrotate without copytruncate), the next line starts a new file
// at the configured path. loglevel takes Redis's five names at run time and refuses others
// with Redis's error, and each level filters as documented.
func TestLogfileFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	p := startServer(t, dir, "--logfile", "hotkv.log", "--appendonly", "no", "--save", "")
	log := filepath.Join(dir, "hotkv.log")
	first := waitFor(t, log, "Ready to accept connections")
	pid := "pid=" + strconv.Itoa(p.cmd.Process.Pid)
	if !strings.Contains(first, "HotKV is starting") || !strings.Contains(first, pid) {
		t.Fatalf("no start line with %s:\n%s", pid, first)
	}
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	r := p.raw(t)
	if got := r.Do("SAVE"); got != "+OK\r\n" {
		t.Fatalf("SAVE: %q", got)
	}
	waitFor(t, log, "DB saved on disk")
	if old, _ := os.ReadFile(log + ".1"); strings.Contains(string(old), "DB saved on disk") {
		t.Fatalf("written to the rotated file:\n%s", old)
	}

	for _, level := range []string{"debug", "verbose", "notice", "warning", "nothing", "NOTICE"} {
		if got := r.Do("CONFIG", "SET", "loglevel", level); got != "+OK\r\n" {
			t.Fatalf("CONFIG SET loglevel %s: %q", level, got)
		}
	}
	if got := r.Do("CONFIG", "GET", "loglevel"); got != "*2\r\n$8\r\nloglevel\r\n$6\r\nnotice\r\n" {
		t.Fatalf("CONFIG GET loglevel: %q", got)
	}
	if got := r.Do("CONFIG", "SET", "loglevel", "loud"); got != "-ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning, nothing\r\n" {
		t.Fatalf("CONFIG SET loglevel loud: %q", got)
	}
	// warning hides SAVE's notice line; notice shows it again.
	if got := r.Do("CONFIG", "SET", "loglevel", "warning"); got != "+OK\r\n" {
		t.Fatal(got)
	}
	r.Do("SAVE")
	r.Do("CONFIG", "SET", "loglevel", "notice")
	r.Do("SET", "k", "v")
	r.Do("SAVE")
	data := waitFor(t, log, "keys=1")
	if n := strings.Count(data, "DB saved on disk"); n != 2 {
		t.Fatalf("%d save lines, want 2 (the one at loglevel warning hidden):\n%s", n, data)
	}
}

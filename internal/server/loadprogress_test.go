package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/store"
)

// lockedBuffer is a log destination shared by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startInDir starts a server on dir with no listener and returns it with its log.
func startInDir(t *testing.T, dir string, args ...string) (*Server, *lockedBuffer) {
	t.Helper()
	cfg, err := config.Load(config.Directives(), append([]string{"--dir", dir, "--port", "0", "--save", ""}, args...))
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	s := New(cfg, slog.New(slog.NewTextHandler(log, nil)))
	if err := s.Start(); err != nil {
		t.Fatalf("start: %v\n%s", err, log)
	}
	return s, log
}

var progressLine = regexp.MustCompile(`msg="Loading the ([a-z -]+)" percent=([0-9.]+) keys=(\d+) keys_per_sec=(\d+)(?: effects=(\d+) effects_per_sec=(\d+))? seconds=`)

// progress returns the progress lines' percentages, checking they never go down, and the
// last line's fields.
func progress(t *testing.T, log, what string) (count int, last []string) {
	t.Helper()
	prev := -1.0
	for _, m := range progressLine.FindAllStringSubmatch(log, -1) {
		if m[1] != what {
			continue
		}
		p, _ := strconv.ParseFloat(m[2], 64)
		if p < prev || p > 100 {
			t.Fatalf("percent %v after %v", p, prev)
		}
		prev = p
		count++
		last = m
	}
	return count, last
}

// TestLoadProgress: loading a snapshot, and then an append-only log (its base and its
// effects), logs progress lines with the percent done and the rate, and a final line with the
// keys loaded and the seconds taken.
func TestLoadProgress(t *testing.T) {
	old := loadProgressInterval
	loadProgressInterval = 0 // every ProgressEvery records, every 16th log batch
	defer func() { loadProgressInterval = old }()

	const n = 20000
	now := time.Now().UnixMilli()
	dir := t.TempDir()
	writeLoadSnapshot(t, dir, n)

	s, log := startInDir(t, dir, "--appendonly", "no")
	s.Close()
	count, last := progress(t, log.String(), "snapshot")
	if count < n/persist.ProgressEvery-1 {
		t.Fatalf("%d progress lines for %d keys:\n%s", count, n, log)
	}
	if p, _ := strconv.ParseFloat(last[2], 64); p < 80 {
		t.Fatalf("last progress line at %v%%: %q", p, last[0])
	}
	if k, _ := strconv.Atoi(last[3]); k < n-2*persist.ProgressEvery || k > n {
		t.Fatalf("last progress line: %q", last[0])
	}
	if !regexp.MustCompile(`msg="DB loaded from disk" .*seconds=[0-9.e-]+ keys=20000 `).MatchString(log.String()) {
		t.Fatalf("no final line with the keys and seconds:\n%s", log)
	}

	// With appendonly yes the snapshot becomes the log's base; effects appended after it
	// are replayed at the next start.
	s, _ = startInDir(t, dir, "--appendonly", "yes")
	for i := 0; i < 5000; i++ {
		s.aof().Append(store.Effect{DB: 0, Args: [][]byte{[]byte("SET"), []byte(fmt.Sprint("effect:", i)), []byte("v")}, Time: now + int64(i)})
	}
	s.Close()
	s, log = startInDir(t, dir, "--appendonly", "yes")
	defer s.Close()
	count, last = progress(t, log.String(), "append-only log")
	if count < 5 || last[5] == "" {
		t.Fatalf("%d progress lines, the last without effects:\n%s", count, log)
	}
	if !strings.Contains(log.String(), "msg=\"DB loaded from append only file\"") ||
		!regexp.MustCompile(`msg="DB loaded from append only file" .* keys=25000 `).MatchString(log.String()) {
		t.Fatalf("no final line with 25000 keys:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(dir, "appendonlydir")); err != nil {
		t.Fatal(err)
	}

}

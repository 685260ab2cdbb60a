package main

// Crash and corruption tests of the append-only log against the real binary: SIGKILL under
// write load, a torn tail, a flipped byte, a missing segment, and the --check-aof tool.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/testutil"
)

var ctx = testutil.Ctx

func client(p *proc) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: p.addr(), Protocol: 2, DisableIdentity: true,
		MaxRetries: -1, PoolSize: 2, DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
}

// crashWriter writes until the server dies, remembering what the server acknowledged:
// INCR c (the counter's last reply), MSET a i b i, a MULTI/EXEC of INCR x and INCR y, and an
// always-allowed GCRA.LIMIT (the number allowed).
type crashWriter struct {
	id      int
	counter atomic.Int64 // last acknowledged INCR reply
	allowed atomic.Int64 // acknowledged GCRA.LIMIT admissions
	// samples of (time, counter) for the everysec bound
	mu      sync.Mutex
	samples [][2]int64
}

func (w *crashWriter) run(c *redis.Client) {
	k := func(name string) string { return fmt.Sprintf("%s{%d}", name, w.id) }
	for i := 0; ; i++ {
		n, err := c.Incr(ctx, k("c")).Result()
		if err != nil {
			return
		}
		w.counter.Store(n)
		w.mu.Lock()
		w.samples = append(w.samples, [2]int64{time.Now().UnixMilli(), n})
		w.mu.Unlock()
		if err := c.MSet(ctx, k("a"), i, k("b"), i).Err(); err != nil {
			return
		}
		if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, k("x"))
			p.Incr(ctx, k("y"))
			return nil
		}); err != nil {
			return
		}
		v, err := c.Do(ctx, "GCRA.LIMIT", k("g"), 1_000_000, 1_000_000).Slice()
		if err != nil {
			return
		}
		if v[0].(int64) == 0 {
			w.allowed.Add(1)
		}
	}
}

// counterAt is the last counter acknowledged at or before ms.
func (w *crashWriter) counterAt(ms int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int64
	for _, s := range w.samples {
		if s[0] <= ms {
			n = s[1]
		}
	}
	return n
}

// crashRound starts the server on dir, writes with two clients for runFor, kills the server
// with SIGKILL, and returns the writers and the kill time.
func crashRound(t *testing.T, dir string, t0 int64, runFor time.Duration, args ...string) ([]*crashWriter, int64) {
	t.Helper()
	p := startServer(t, dir, args...)
	c := client(p)
	defer c.Close()
	if err := c.Do(ctx, "DEBUG", "CLOCK", "SET", t0).Err(); err != nil {
		t.Fatal(err)
	}
	ws := []*crashWriter{{id: 0}, {id: 1}}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func(w *crashWriter) {
			defer wg.Done()
			wc := client(p)
			defer wc.Close()
			w.run(wc)
		}(w)
	}
	time.Sleep(runFor)
	killed := time.Now().UnixMilli()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
	wg.Wait()
	return ws, killed
}

// checkAfterCrash restarts the server and checks every writer's state: nothing acknowledged
// lost (the counter at least minCounter(w)), nothing half-applied.
func checkAfterCrash(t *testing.T, dir string, t0 int64, ws []*crashWriter, minCounter func(*crashWriter) int64, args ...string) *proc {
	t.Helper()
	p := startServer(t, dir, args...)
	c := client(p)
	defer c.Close()
	now, err := c.Do(ctx, "DEBUG", "CLOCK", "GET").Int64()
	if err != nil || now < t0 {
		t.Fatalf("clock after the restart: %d, %v; want at least the log's time %d", now, err, t0)
	}
	for _, w := range ws {
		k := func(name string) string { return fmt.Sprintf("%s{%d}", name, w.id) }
		vals, err := c.MGet(ctx, k("c"), k("a"), k("b"), k("x"), k("y"), k("g")).Result()
		if err != nil {
			t.Fatal(err)
		}
		num := func(v any) int64 {
			if v == nil {
				return 0
			}
			n, err := strconv.ParseInt(v.(string), 10, 64)
			if err != nil {
				t.Fatalf("writer %d: %q is not a number", w.id, v)
			}
			return n
		}
		counter, acked := num(vals[0]), w.counter.Load()
		if min := minCounter(w); counter < min || counter > acked+1 {
			t.Fatalf("writer %d: counter %d after the crash; acknowledged %d, want at least %d\n%s", w.id, counter, acked, min, p.out.String())
		}
		if vals[1] != vals[2] {
			t.Fatalf("writer %d: MSET half-applied: a=%v b=%v", w.id, vals[1], vals[2])
		}
		if vals[3] != vals[4] {
			t.Fatalf("writer %d: MULTI/EXEC half-applied: x=%v y=%v", w.id, vals[3], vals[4])
		}
		// The GCRA key holds its TAT in ns: t0 plus 1 ms per admission (the clock is frozen).
		if allowed, got := w.allowed.Load(), (num(vals[5])/1_000_000)-t0; vals[5] != nil && got < allowed && minCounter(w) == acked {
			t.Fatalf("writer %d: GCRA state holds %d admissions, %d were acknowledged", w.id, got, allowed)
		}
	}
	return p
}

// TestAOFCrashAlways kills a server with appendfsync always at random moments under write
// load: after each restart no acknowledged write is missing and no write is half-applied.
func TestAOFCrashAlways(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--enable-debug-command", "yes", "--appendfsync", "always", "--save", ""}
	rng := rand.New(rand.NewPCG(20240601, 1))
	t0 := time.Now().UnixMilli() + 3_600_000 // ahead of the wall clock: keys stay live after restarts
	for round := 0; round < 3; round++ {
		ws, _ := crashRound(t, dir, t0, time.Duration(100+rng.IntN(300))*time.Millisecond, args...)
		p := checkAfterCrash(t, dir, t0, ws, func(w *crashWriter) int64 { return w.counter.Load() }, args...)
		t.Logf("round %d: counters %d and %d acknowledged", round, ws[0].counter.Load(), ws[1].counter.Load())
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait(10 * time.Second)
	}
	if code, out := runToExit(t, "", "--check-aof", dir); code != 0 {
		t.Fatalf("--check-aof after the crashes: exit %d\n%s", code, out)
	}
}

// TestAOFCrashEverysec: with everysec a killed process restarts cleanly and loses at most
// about a second of acknowledged writes (a process crash keeps what was written: at most the
// last 100 ms are lost).
func TestAOFCrashEverysec(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--enable-debug-command", "yes", "--save", ""} // appendfsync everysec: the default
	t0 := time.Now().UnixMilli() + 3_600_000
	ws, killed := crashRound(t, dir, t0, 1200*time.Millisecond, args...)
	p := checkAfterCrash(t, dir, t0, ws, func(w *crashWriter) int64 { return w.counterAt(killed - 1000) }, args...)
	if out := p.out.String(); !strings.Contains(out, "DB loaded from append only file") {
		t.Fatalf("no load from the log:\n%s", out)
	}
}

// writeFrames starts the binary on dir, writes n keys at distinct times (one frame each), and
// kills it (appendfsync always: every acknowledged write is in the log); it returns the
// segment's path, its bytes and the frames' offsets.
func writeFrames(t *testing.T, dir string, n int) (string, []byte, []int64) {
	t.Helper()
	p := startServer(t, dir, "--enable-debug-command", "yes", "--save", "", "--appendfsync", "always")
	r := p.raw(t)
	for i := 0; i < n; i++ {
		r.Do("DEBUG", "CLOCK", "SET", strconv.FormatInt(testutil.T0+int64(i), 10))
		if got := r.Do("SET", fmt.Sprint("k", i), strings.Repeat("v", 50)); got != "+OK\r\n" {
			t.Fatalf("SET: %q", got)
		}
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
	seg := filepath.Join(dir, "appendonlydir", persist.IncrName("appendonly.hkvl", 1))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(seg)
	defer f.Close()
	lr, err := persist.NewLogReader(f, int64(len(data)), seg, true)
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for b, err := lr.Next(); err == nil; b, err = lr.Next() {
		offs = append(offs, b.Offset)
	}
	if len(offs) != n {
		t.Fatalf("%d frames, want %d", len(offs), n)
	}
	return seg, data, offs
}

func wantOutput(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Fatalf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
}

// TestAOFTornTailBinary: the tool reports a torn tail and --fix cuts it; the server starts on
// a torn log with a warning (aof-load-truncated yes) or refuses (no).
func TestAOFTornTailBinary(t *testing.T) {
	dir := t.TempDir()
	seg, good, _ := writeFrames(t, dir, 4)
	frame := persist.AppendBatch(nil, testutil.T0+9, []store.Effect{{DB: 0, Args: [][]byte{[]byte("SET"), []byte("torn"), []byte("x")}}})
	torn := append(append([]byte(nil), good...), frame[:len(frame)-4]...)
	if err := os.WriteFile(seg, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	off := fmt.Sprintf("at offset %d", len(good))

	code, out := runToExit(t, "", "--check-aof", dir)
	if code != 1 {
		t.Fatalf("--check-aof on a torn log: exit %d\n%s", code, out)
	}
	wantOutput(t, "--check-aof", out, "torn append-only log tail", seg, off, "ok_up_to="+strconv.Itoa(len(good)), "--fix")

	code, out = runToExit(t, dir, "--port", strconv.Itoa(freePort(t)), "--aof-load-truncated", "no")
	if code != 1 {
		t.Fatalf("start with aof-load-truncated no: exit %d\n%s", code, out)
	}
	wantOutput(t, "start with aof-load-truncated no", out, "refusing to start", seg, off, "--check-aof --fix")

	p := startServer(t, dir, "--save", "")
	wantOutput(t, "start on a torn log", p.out.String(), "level=WARN", "torn frame", seg, "offset="+strconv.Itoa(len(good)), "aof-load-truncated")
	if got := p.raw(t).Do("GET", "k3"); got != "$50\r\n"+strings.Repeat("v", 50)+"\r\n" {
		t.Fatalf("GET k3 after loading a torn log: %q", got)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL) // it wrote nothing; a SIGTERM would only cost the race detector's exit delay
	p.wait(10 * time.Second)

	// The tool's repair, on a new torn tail.
	data, _ := os.ReadFile(seg)
	if err := os.WriteFile(seg, append(data, frame[:9]...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runToExit(t, "", "--check-aof", filepath.Join(dir, "appendonlydir"), "--fix")
	if code != 0 {
		t.Fatalf("--check-aof --fix: exit %d\n%s", code, out)
	}
	wantOutput(t, "--check-aof --fix", out, "Successfully truncated", fmt.Sprintf("from %d to %d bytes", len(data)+9, len(data)))
	if code, out = runToExit(t, "", "--check-aof", seg); code != 0 || !strings.Contains(out, "AOF is valid") {
		t.Fatalf("--check-aof after the fix: exit %d\n%s", code, out)
	}
}

// TestAOFCorruptionBinary: a flipped byte before the last frame stops the start naming the
// file and offset, and the tool reports it without "repairing" it; a missing segment stops the
// start too.
func TestAOFCorruptionBinary(t *testing.T) {
	dir := t.TempDir()
	seg, good, offs := writeFrames(t, dir, 4)
	bad := append([]byte(nil), good...)
	bad[offs[1]+20] ^= 0x10
	if err := os.WriteFile(seg, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	off := fmt.Sprintf("at offset %d", offs[1])
	code, out := runToExit(t, dir, "--port", strconv.Itoa(freePort(t)))
	if code != 1 {
		t.Fatalf("start on a corrupt log: exit %d\n%s", code, out)
	}
	wantOutput(t, "start on a corrupt log", out, "corrupt append-only log", seg, off, "CRC mismatch", "refusing to start")
	if strings.Contains(out, "Ready to accept connections") {
		t.Fatalf("served a corrupt log:\n%s", out)
	}
	code, out = runToExit(t, "", "--check-aof", dir, "--fix")
	if code != 1 {
		t.Fatalf("--check-aof --fix on a corrupt log: exit %d\n%s", code, out)
	}
	wantOutput(t, "--check-aof --fix", out, seg, off, "does not repair")
	if data, _ := os.ReadFile(seg); len(data) != len(bad) {
		t.Fatalf("--check-aof --fix changed a corrupt segment: %d bytes, was %d", len(data), len(bad))
	}

	if err := os.WriteFile(seg, good, 0o644); err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(dir, "appendonlydir", "appendonly.hkvl.manifest")
	m, _ := os.ReadFile(manifest)
	if err := os.WriteFile(manifest, append(m, "file appendonly.hkvl.2.incr.hkvl seq 2 type i\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runToExit(t, dir, "--port", strconv.Itoa(freePort(t)))
	if code != 1 {
		t.Fatalf("start with a missing segment: exit %d\n%s", code, out)
	}
	wantOutput(t, "start with a missing segment", out, "appendonly.hkvl.2.incr.hkvl", "does not exist", "refusing to start")
}

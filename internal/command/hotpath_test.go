package command

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/hotkv/hotkv/internal/acl"
	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// hotPath is the per-command path of a connection without the socket: parse one request from
// the read buffer, dispatch it through the full command table (lookup, arity, locks, handler,
// statistics, effects), and write the reply into the connection's buffer.
type hotPath struct {
	rd  *resp.Reader
	c   *Ctx
	tab *Table
}

func newHotPath(tb testing.TB, journal store.Journal) *hotPath {
	st := store.New(1, 64, clock.NewFake(harnessT0))
	st.Journal = journal
	c := &Ctx{W: resp.NewWriter(), Client: &Client{}, Srv: &rlBenchServer{}, Store: st, DB: st.DB(0), Now: harnessT0}
	c.W.Buf = make([]byte, 0, 1<<16)
	tab := Default()
	// A connection as the server makes it: the default user, unrestricted, authenticated,
	// so the dispatcher's ACL check is on the measured path.
	c.Client.SetDefaultAuth(acl.NewRegistry(tab.ACLCatalog()))
	return &hotPath{rd: resp.NewReader(nil), c: c, tab: tab}
}

func encodeRequest(args ...string) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b
}

// run parses and executes every request in req.
func (h *hotPath) run(tb testing.TB, req []byte) {
	h.rd.Feed(req)
	for {
		args, err := h.rd.Next()
		if err != nil {
			tb.Fatal(err)
		}
		if args == nil {
			return
		}
		h.c.Args = args
		h.c.W.Buf = h.c.W.Buf[:0]
		h.tab.Exec(h.c)
		if len(h.c.W.Buf) > 0 && h.c.W.Buf[0] == '-' {
			tb.Fatalf("%q: %s", args, h.c.W.Buf)
		}
	}
}

// hotCommands are the commands the benchmarks drive, on keys that exist (steady state).
var hotCommands = []struct {
	name  string
	setup [][]string
	args  []string
}{
	{"PING", nil, []string{"PING"}},
	{"GET", [][]string{{"SET", "key:1", "value"}}, []string{"GET", "key:1"}},
	{"SET", [][]string{{"SET", "key:1", "value"}}, []string{"SET", "key:1", "xxx"}},
	{"SET PX", [][]string{{"SET", "key:1", "value"}}, []string{"SET", "key:1", "xxx", "PX", "60000"}},
	{"INCR", nil, []string{"INCR", "counter:1"}},
	{"GCRA.LIMIT", nil, []string{"GCRA.LIMIT", "rl:1", "60000", "1000000"}},
	{"CL.THROTTLE", nil, []string{"CL.THROTTLE", "rl:2", "999999", "1000000", "60"}},
	{"RATELIMIT.CHECK sliding_window", [][]string{{"RATELIMIT.CREATE", "sw", "1000000", "60000", "ALGO", "sliding_window"}}, []string{"RATELIMIT.CHECK", "sw", "u:1"}},
	{"RATELIMIT.CHECK token_bucket", [][]string{{"RATELIMIT.CREATE", "tb", "1000000", "60000", "ALGO", "token_bucket"}}, []string{"RATELIMIT.CHECK", "tb", "u:1"}},
	{"RATELIMIT.CHECK leaky_bucket", [][]string{{"RATELIMIT.CREATE", "lb", "1000000", "60000", "ALGO", "leaky_bucket"}}, []string{"RATELIMIT.CHECK", "lb", "u:1"}},
}

// encodingJournal stands for the append-only log: it encodes each effect at once into a
// reused buffer, as the log does (internal/server's frameBuf), keeping nothing of it.
type encodingJournal struct{ buf []byte }

func (j *encodingJournal) Append(e store.Effect) {
	if len(j.buf) > 1<<20 {
		j.buf = j.buf[:0]
	}
	j.buf = persist.AppendEffect(j.buf, e)
}

// TestHotPathZeroAlloc guards the benchmarked commands: from the request bytes to the reply
// bytes, a command on an existing key allocates nothing (docs/benchmarks.md), with the
// append-only log off and on (effects built and handed to the log without copies).
func TestHotPathZeroAlloc(t *testing.T) {
	for _, logged := range []bool{false, true} {
		for _, hc := range hotCommands {
			name := hc.name
			if logged {
				name += " logged"
			}
			t.Run(name, func(t *testing.T) {
				var j store.Journal
				if logged {
					j = &encodingJournal{buf: make([]byte, 0, 2<<20)}
				}
				testHotPathZeroAlloc(t, hc.setup, hc.args, j)
			})
		}
	}
}

func testHotPathZeroAlloc(t *testing.T, setup [][]string, cmd []string, j store.Journal) {
	h := newHotPath(t, j)
	for _, s := range setup {
		h.run(t, encodeRequest(s...))
	}
	req := encodeRequest(cmd...)
	// Reach steady state: the key exists and a sliding window's log has grown to its bound
	// (ratelimit.sliding-window-max-entries).
	for range 3000 {
		h.run(t, req)
	}
	if n := testing.AllocsPerRun(500, func() { h.run(t, req) }); n != 0 {
		t.Errorf("%.1f allocations per command, want 0", n)
	}
}

// BenchmarkHotPath measures the same path (ns/op is one command); run with
// go test -run '^$' -bench HotPath ./internal/command/.
func BenchmarkHotPath(b *testing.B) {
	for _, hc := range hotCommands {
		b.Run(hc.name, func(b *testing.B) {
			h := newHotPath(b, nil)
			for _, s := range hc.setup {
				h.run(b, encodeRequest(s...))
			}
			req := encodeRequest(hc.args...)
			b.ReportAllocs()
			for b.Loop() {
				h.run(b, req)
			}
		})
	}
}

// lastInt is the last integer of a RESP reply in buf (":<n>\r\n" at its end): the lease id of
// a concurrency CHECK.
func lastInt(tb testing.TB, buf []byte) []byte {
	end := len(buf) - 2
	start := end
	for start > 0 && buf[start-1] != ':' {
		start--
	}
	if start == 0 || end <= start {
		tb.Fatalf("no integer at the end of %q", buf)
	}
	return buf[start:end]
}

// TestHotPathConcurrencyZeroAlloc is TestHotPathZeroAlloc for a concurrency limiter's
// RATELIMIT.CHECK followed by the RATELIMIT.RELEASE of the lease it acquired: the pair
// allocates nothing once the key exists (its emptied lease log is kept for reuse), with the
// append-only log off and on.
func TestHotPathConcurrencyZeroAlloc(t *testing.T) {
	for _, logged := range []bool{false, true} {
		t.Run(fmt.Sprint("logged=", logged), func(t *testing.T) {
			var j store.Journal
			if logged {
				j = &encodingJournal{buf: make([]byte, 0, 2<<20)}
			}
			h := newHotPath(t, j)
			h.run(t, encodeRequest("RATELIMIT.CREATE", "cc", "100", "60000", "ALGO", "concurrency"))
			check := encodeRequest("RATELIMIT.CHECK", "cc", "u:1")
			release := make([]byte, 0, 128)
			idBuf := make([]byte, 0, 20)
			pair := func() {
				h.run(t, check)
				idBuf = append(idBuf[:0], lastInt(t, h.c.W.Buf)...)
				release = append(release[:0], "*4\r\n$17\r\nRATELIMIT.RELEASE\r\n$2\r\ncc\r\n$3\r\nu:1\r\n$"...)
				release = strconv.AppendInt(release, int64(len(idBuf)), 10)
				release = append(release, "\r\n"...)
				release = append(release, idBuf...)
				release = append(release, "\r\n"...)
				h.run(t, release)
				if string(h.c.W.Buf) != ":1\r\n" {
					t.Fatalf("RELEASE %s: %q", idBuf, h.c.W.Buf)
				}
			}
			for range 100 {
				pair()
			}
			if n := testing.AllocsPerRun(500, pair); n != 0 {
				t.Errorf("%.1f allocations per CHECK+RELEASE, want 0", n)
			}
		})
	}
}

package command

import (
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// stringTestServer is the part of Server the string and bit handlers use.
type stringTestServer struct {
	Server
	maxBulk int64
	dirty   int64
}

func (s *stringTestServer) ProtoMaxBulkLen() int64 { return s.maxBulk }
func (s *stringTestServer) AddDirty(n int64)       { s.dirty += n }
func (s *stringTestServer) ErrorStat(string)       {}

// stringHarness runs string and bit commands in-process with a controlled clock, so that TTL
// rules can be checked to the millisecond without a server.
type stringHarness struct {
	t   testing.TB
	tab *Table
	srv *stringTestServer
	c   *Ctx
}

const harnessT0 = int64(1700000000000)

func newStringHarness(t testing.TB) *stringHarness {
	st := store.New(1, 4, clock.NewFake(harnessT0))
	srv := &stringTestServer{maxBulk: 512 << 20}
	c := &Ctx{W: resp.NewWriter(), Client: &Client{}, Srv: srv, Store: st, DB: st.DB(0), Now: harnessT0}
	return &stringHarness{t: t, tab: NewTable(stringCommands(), bitCommands()), srv: srv, c: c}
}

// do runs one command and returns its raw RESP reply.
func (h *stringHarness) do(args ...string) string {
	h.t.Helper()
	h.c.Args = make([][]byte, len(args))
	for i, a := range args {
		h.c.Args[i] = []byte(a)
	}
	h.c.W.Reset()
	h.tab.Exec(h.c)
	return string(h.c.W.Buf)
}

func (h *stringHarness) expect(want string, args ...string) {
	h.t.Helper()
	if got := h.do(args...); got != want {
		h.t.Errorf("%q: got %q, want %q", args, got, want)
	}
}

func (h *stringHarness) entry(key string) *store.Entry {
	s := h.c.DB.ShardFor([]byte(key))
	s.Lock()
	defer s.Unlock()
	return h.c.DB.Lookup([]byte(key), h.c.Now)
}

func (h *stringHarness) expireAt(key string) int64 {
	h.t.Helper()
	e := h.entry(key)
	if e == nil {
		h.t.Fatalf("%s: missing", key)
	}
	return e.ExpireAt()
}

// putList stores a non-string value, for WRONGTYPE checks.
func (h *stringHarness) putList(key string) {
	h.c.DB.Set([]byte(key), store.Value{Kind: store.KindList}, 0, false, h.c.Now)
}

const wrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"

func TestStringAndBitRowsParse(t *testing.T) {
	for _, c := range append(stringCommands(), bitCommands()...) {
		if _, err := c.DocArgs(); err != nil {
			t.Errorf("%s: %v", c.Name, err)
		}
		if len(c.KeySpecs) == 0 || c.FirstKey == 0 || c.Group == "" || c.Since == "" || c.Summary == "" || c.Handler == nil {
			t.Errorf("%s: incomplete row", c.Name)
		}
	}
}

func TestTTLKeptByInPlaceWrites(t *testing.T) {
	h := newStringHarness(t)
	at := harnessT0 + 10000
	for _, cmd := range [][]string{
		{"INCR", "k"}, {"DECRBY", "k", "3"}, {"INCRBYFLOAT", "k", "1.5"}, {"APPEND", "k", "x"},
		{"SETRANGE", "k", "0", "12"}, {"SETBIT", "k", "100", "1"}, {"BITFIELD", "k", "SET", "u8", "0", "65"},
	} {
		h.expect("+OK\r\n", "SET", "k", "10", "PX", "10000")
		h.do(cmd...)
		if got := h.expireAt("k"); got != at {
			t.Errorf("%q cleared or moved the TTL: %d", cmd, got)
		}
	}
	// KEEPTTL keeps it, GET-only commands never touch it.
	h.expect("+OK\r\n", "SET", "k", "v", "KEEPTTL")
	h.expect("$1\r\nv\r\n", "GETEX", "k")
	if got := h.expireAt("k"); got != at {
		t.Errorf("KEEPTTL/GETEX: %d", got)
	}
}

func TestTTLClearedBySetLikeWrites(t *testing.T) {
	h := newStringHarness(t)
	for _, cmd := range [][]string{
		{"SET", "k", "v"}, {"GETSET", "k", "v"}, {"MSET", "k", "v"}, {"BITOP", "NOT", "k", "src"},
	} {
		h.expect("+OK\r\n", "SET", "k", "v", "PX", "10000")
		h.expect("+OK\r\n", "SET", "src", "abc")
		h.do(cmd...)
		if got := h.expireAt("k"); got != 0 {
			t.Errorf("%q kept the TTL: %d", cmd, got)
		}
	}
}

func TestExpireOptions(t *testing.T) {
	h := newStringHarness(t)
	now := harnessT0
	h.expect("+OK\r\n", "SETEX", "a", "10", "v")
	h.expect("+OK\r\n", "PSETEX", "b", "1500", "v")
	h.expect("+OK\r\n", "SET", "c", "v", "EXAT", "1800000000")
	h.expect("+OK\r\n", "SET", "d", "v", "EX", "1", "EX", "2") // the last unit wins, as Redis
	for key, want := range map[string]int64{"a": now + 10000, "b": now + 1500, "c": 1800000000000, "d": now + 2000} {
		if got := h.expireAt(key); got != want {
			t.Errorf("%s: expireAt %d, want %d", key, got, want)
		}
	}
	h.expect("$1\r\nv\r\n", "GETEX", "a", "PX", "100")
	if got := h.expireAt("a"); got != now+100 {
		t.Errorf("GETEX PX: %d", got)
	}
	h.expect("$1\r\nv\r\n", "GETEX", "a", "PERSIST")
	if got := h.expireAt("a"); got != 0 {
		t.Errorf("GETEX PERSIST: %d", got)
	}
	h.expect("$1\r\nv\r\n", "GETEX", "a", "PXAT", "1800000000001")
	if got := h.expireAt("a"); got != 1800000000001 {
		t.Errorf("GETEX PXAT: %d", got)
	}
	// A past EXAT deletes the key after replying its value.
	h.expect("$1\r\nv\r\n", "GETEX", "a", "EXAT", "1")
	h.expect("$-1\r\n", "GET", "a")
	// Time passes: the PX key expires exactly after its millisecond.
	h.c.Now = now + 1500
	h.expect("$1\r\nv\r\n", "GET", "b")
	h.c.Now++
	h.expect("$-1\r\n", "GET", "b")

	h.expect("-ERR invalid expire time in 'setex' command\r\n", "SETEX", "k", "0", "v")
	h.expect("-ERR invalid expire time in 'psetex' command\r\n", "PSETEX", "k", "9223372036854775807", "v")
	h.expect("-ERR invalid expire time in 'set' command\r\n", "SET", "k", "v", "EX", "9223372036854776")
	h.expect("-ERR invalid expire time in 'getex' command\r\n", "GETEX", "c", "EX", "-1")
	h.expect("-ERR syntax error\r\n", "SET", "k", "v", "EX", "1", "PX", "1")
	h.expect("-ERR syntax error\r\n", "SET", "k", "v", "KEEPTTL", "EX", "1")
	h.expect("-ERR syntax error\r\n", "GETEX", "c", "KEEPTTL")
	h.expect("-ERR syntax error\r\n", "GETEX", "c", "PERSIST", "EX", "1")
	h.expect("-ERR syntax error\r\n", "SET", "k", "v", "NX", "XX")
	h.expect("-ERR syntax error\r\n", "SET", "k", "v", "EX")
	// GETEX checks the time only for an existing string key.
	h.expect("$-1\r\n", "GETEX", "missing", "EX", "abc")
}

func TestWrongTypeEverywhere(t *testing.T) {
	h := newStringHarness(t)
	h.putList("l")
	for _, cmd := range [][]string{
		{"GET", "l"}, {"SET", "l", "v", "GET"}, {"GETSET", "l", "v"}, {"GETDEL", "l"}, {"GETEX", "l"},
		{"APPEND", "l", "x"}, {"STRLEN", "l"}, {"GETRANGE", "l", "0", "1"}, {"SETRANGE", "l", "0", "x"},
		{"INCR", "l"}, {"DECRBY", "l", "1"}, {"INCRBYFLOAT", "l", "1"}, {"SETBIT", "l", "0", "1"},
		{"GETBIT", "l", "0"}, {"BITCOUNT", "l"}, {"BITPOS", "l", "1"}, {"BITOP", "AND", "d", "l"},
		{"BITFIELD", "l"}, {"BITFIELD", "l", "SET", "u8", "0", "1"}, {"BITFIELD_RO", "l", "GET", "u8", "0"},
	} {
		h.expect(wrongType, cmd...)
	}
	h.expect("-ERR The specified keys must contain string values\r\n", "LCS", "l", "x")
	h.expect("*2\r\n$-1\r\n$-1\r\n", "MGET", "l", "nokey")
	// Commands that replace values do not care about the old type.
	h.expect(":0\r\n", "SETNX", "l", "v")
	h.expect("+OK\r\n", "SET", "l", "v")
}

func TestIncrKeepsIntegerEncodingInPlace(t *testing.T) {
	h := newStringHarness(t)
	h.expect(":1\r\n", "INCR", "n")
	e := h.entry("n")
	h.expect(":11\r\n", "INCRBY", "n", "10")
	if h.entry("n") != e || !e.Val.IsInt || e.Val.Int != 11 {
		t.Fatalf("INCR must update the entry in place as an integer: %+v", e.Val)
	}
	// A byte string that holds a canonical integer becomes an integer again.
	h.expect(":3\r\n", "APPEND", "n", "5")
	if e.Val.IsInt {
		t.Fatal("APPEND must leave bytes")
	}
	h.expect(":116\r\n", "INCR", "n")
	if !e.Val.IsInt {
		t.Fatal("INCR must store an integer")
	}
	h.expect("-ERR increment or decrement would overflow\r\n", "INCRBY", "n", "9223372036854775807")
	h.expect("-ERR decrement would overflow\r\n", "DECRBY", "n", "-9223372036854775808")
	h.expect("$3\r\n116\r\n", "GET", "n")
}

func TestDirtyCounts(t *testing.T) {
	h := newStringHarness(t)
	for _, c := range []struct {
		cmd   []string
		dirty int64
	}{
		{[]string{"MSET", "a", "1", "b", "2", "c", "3"}, 3},
		{[]string{"MSETNX", "a", "1", "d", "2"}, 0},
		{[]string{"SETNX", "a", "1"}, 0},
		{[]string{"SETRANGE", "a", "0", ""}, 0},
		{[]string{"SETBIT", "a", "0", "0"}, 0},
		{[]string{"SETBIT", "a", "1", "1"}, 1},
		{[]string{"BITFIELD", "a", "GET", "u8", "0", "SET", "u8", "0", "1", "INCRBY", "u8", "0", "1"}, 2},
		{[]string{"GETEX", "a", "PERSIST"}, 0},
		{[]string{"GETEX", "a", "EX", "10"}, 1},
		{[]string{"BITOP", "AND", "x", "nokey"}, 0},
		{[]string{"GETDEL", "b"}, 1},
	} {
		h.srv.dirty = 0
		h.do(c.cmd...)
		if h.srv.dirty != c.dirty {
			t.Errorf("%q: dirty %d, want %d", c.cmd, h.srv.dirty, c.dirty)
		}
	}
}

func TestStringLimit(t *testing.T) {
	h := newStringHarness(t)
	h.srv.maxBulk = 16
	h.expect(":16\r\n", "SETRANGE", "k", "10", "abcdef")
	h.expect("-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n", "SETRANGE", "k", "11", "abcdef")
	h.expect("-ERR string exceeds maximum allowed size (proto-max-bulk-len)\r\n", "APPEND", "k", "x")
	h.expect(":16\r\n", "APPEND", "k", "")
	h.expect("-ERR bit offset is not an integer or out of range\r\n", "SETBIT", "k", "128", "1")
	h.expect(":0\r\n", "SETBIT", "k", "127", "1")
	h.srv.maxBulk = 100
	h.expect("+OK\r\n", "MSET", "a", "abcd", "b", "abcd")
	h.expect("$4\r\nabcd\r\n", "LCS", "a", "b")
	h.expect("+OK\r\n", "MSET", "a", "abcde", "b", "abcd")
	h.expect("-ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len\r\n", "LCS", "a", "b")
}

func TestLongDoubleParse(t *testing.T) {
	for in, want := range map[string]string{
		"1": "1", "10.5": "10.5", "0x10": "16", "0x1.8p1": "3", "+.5": "0.5", "5.": "5", "-0": "0",
		"1e-4950": "0", "INF": "", "-Infinity": "",
	} {
		f, ok := parseLongDouble([]byte(in))
		if !ok {
			t.Errorf("%q rejected", in)
			continue
		}
		if f.IsInf() {
			if want != "" {
				t.Errorf("%q: infinite", in)
			}
			continue
		}
		if got := string(formatLongDoubleHuman(f)); got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
	for _, in := range []string{
		"", " 1", "1 ", "1_0", "0b1", "nan", "NaN", ".", "e5", "1e", "1e+", "0x", "0xp1", "0x1p",
		"infin", "1.5\x00", "1e5000", "-1e5000", "1e-5000", "0x1p16384", "0x1p-16446", strings.Repeat("1", 5120),
	} {
		if _, ok := parseLongDouble([]byte(in)); ok {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestIncrbyfloatLikeRedis(t *testing.T) {
	// Each row was checked against Redis 7.0.15 on x86-64 (80-bit long double).
	h := newStringHarness(t)
	for _, c := range []struct{ start, incr, want string }{
		{"10.5", "0.1", "10.6"},
		{"0.1", "0.2", "0.3"},
		{"", "3.0e3", "3000"},
		{"3000", "5.0e3", "8000"},
		{"", "1.1e-10", "0.00000000011"},
		{"", "1.23456789012345678901234", "1.23456789012345679"},
		{"9223372036854775807", "1", "9223372036854775808"},
		{"", "-0.0000000000000000001", "0"},
		{"5", "-5", "0"},
		{"", "0x1.8p1", "3"},
		{"", "1e30", "1000000000000000000024696061952"},
	} {
		h.c.DB.Delete([]byte("f"), h.c.Now)
		if c.start != "" {
			h.do("SET", "f", c.start)
		}
		h.expect("$"+itoa(int64(len(c.want)))+"\r\n"+c.want+"\r\n", "INCRBYFLOAT", "f", c.incr)
	}
	h.expect("-ERR increment would produce NaN or Infinity\r\n", "INCRBYFLOAT", "f", "inf")
	h.expect("+OK\r\n", "SET", "f", "1.18973149535723176502e+4932")
	h.expect("-ERR increment would produce NaN or Infinity\r\n", "INCRBYFLOAT", "f", "1.18973149535723176502e+4932")
	h.expect("-ERR value is not a valid float\r\n", "INCRBYFLOAT", "f", "abc")
	h.expect("+OK\r\n", "SET", "f", "abc")
	h.expect("-ERR value is not a valid float\r\n", "INCRBYFLOAT", "f", "1")
	h.expect("+OK\r\n", "SET", "f", "")
	h.expect("-ERR value is not a valid float\r\n", "INCRBYFLOAT", "f", "1")
}

func TestLCSRanges(t *testing.T) {
	h := newStringHarness(t)
	h.do("MSET", "a", "ohmytext", "b", "mynewtext")
	h.expect("$6\r\nmytext\r\n", "LCS", "a", "b")
	h.expect(":6\r\n", "LCS", "a", "b", "LEN")
	h.expect("*4\r\n$7\r\nmatches\r\n*2\r\n*2\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n*2\r\n*2\r\n:2\r\n:3\r\n*2\r\n:0\r\n:1\r\n$3\r\nlen\r\n:6\r\n",
		"LCS", "a", "b", "IDX")
	h.c.W.Proto = 3
	h.expect("%2\r\n$7\r\nmatches\r\n*1\r\n*3\r\n*2\r\n:4\r\n:7\r\n*2\r\n:5\r\n:8\r\n:4\r\n$3\r\nlen\r\n:6\r\n",
		"LCS", "a", "b", "IDX", "MINMATCHLEN", "3", "WITHMATCHLEN")
	h.expect("-ERR If you want both the length and indexes, please just use IDX.\r\n", "LCS", "a", "b", "LEN", "IDX")
	h.expect("$0\r\n\r\n", "LCS", "x", "y")
}

// The hot paths must not allocate: GET and INCR touch only the entry and the reply buffer,
// MGET loops over them, and SET allocates only the copy of a non-integer value.
func TestHotPathAllocations(t *testing.T) {
	h := newStringHarness(t)
	h.do("SET", "s", "some value")
	h.do("SET", "n", "1")
	h.c.W.Buf = make([]byte, 0, 1<<16)
	run := func(handler Handler, args ...string) float64 {
		h.c.Args = make([][]byte, len(args))
		for i, a := range args {
			h.c.Args[i] = []byte(a)
		}
		return testing.AllocsPerRun(200, func() {
			h.c.W.Buf = h.c.W.Buf[:0]
			handler(h.c)
		})
	}
	for name, c := range map[string]struct {
		h    Handler
		args []string
		max  float64
	}{
		"GET":       {getCommand, []string{"GET", "s"}, 0},
		"GET int":   {getCommand, []string{"GET", "n"}, 0},
		"INCR":      {incrCommand, []string{"INCR", "n"}, 0},
		"INCRBY":    {incrbyCommand, []string{"INCRBY", "n", "5"}, 0},
		"MGET":      {mgetCommand, []string{"MGET", "s", "n", "missing"}, 0},
		"SET int":   {setCommand, []string{"SET", "n", "42"}, 0},
		"SET bytes": {setCommand, []string{"SET", "s", "another value"}, 1},
		"STRLEN":    {strlenCommand, []string{"STRLEN", "n"}, 0},
	} {
		h.c.Cmd = h.tab.Lookup([]byte(c.args[0]))
		if got := run(c.h, c.args...); got > c.max {
			t.Errorf("%s: %.1f allocations, want at most %.0f", name, got, c.max)
		}
	}
}

func benchHandler(b *testing.B, handler Handler, args ...string) {
	h := newStringHarness(b)
	h.do("SET", "s", "some value")
	h.do("SET", "n", "1")
	h.c.Args = make([][]byte, len(args))
	for i, a := range args {
		h.c.Args[i] = []byte(a)
	}
	h.c.Cmd = h.tab.Lookup([]byte(args[0]))
	h.c.W.Buf = make([]byte, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		h.c.W.Buf = h.c.W.Buf[:0]
		handler(h.c)
	}
}

func BenchmarkGet(b *testing.B)  { benchHandler(b, getCommand, "GET", "s") }
func BenchmarkSet(b *testing.B)  { benchHandler(b, setCommand, "SET", "s", "another value") }
func BenchmarkIncr(b *testing.B) { benchHandler(b, incrCommand, "INCR", "n") }
func BenchmarkMGet(b *testing.B) { benchHandler(b, mgetCommand, "MGET", "s", "n", "missing") }

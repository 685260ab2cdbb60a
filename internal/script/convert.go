package script

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/hotkv/hotkv/internal/resp"
)

// ParseReply converts the first RESP2 or RESP3 reply in b into a Lua value by Redis's rules
// (script_lua.c redisProtocolToLuaType) and returns it with the bytes after it:
//
//	integer          number
//	bulk string      string; null bulk and null array: false
//	array            table of the elements (a RESP3 null inside leaves a hole)
//	status           {ok=status}
//	error            {err="CODE message"} (ERR when it has no code)
//	RESP3 map        {map={[k]=v...}}; set {set={[member]=true...}}
//	RESP3 null       nil; boolean true/false; double {double=n}
//	big number       {big_number="digits"}; verbatim {verbatim_string={format=, string=}}
//	attribute        skipped: the reply that follows it is the value
//
// The bytes come from HotKV's own reply writer, so they are well formed; a truncated buffer
// yields nil rather than a panic.
func ParseReply(L *lua.LState, b []byte) (lua.LValue, []byte) {
	if len(b) < 3 {
		return lua.LNil, nil
	}
	eol := bytes.Index(b, []byte("\r\n"))
	if eol < 1 {
		return lua.LNil, nil
	}
	kind, line, rest := b[0], b[1:eol], b[eol+2:]
	switch kind {
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return lua.LNumber(n), rest
	case '$', '=':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < 0 {
			return lua.LFalse, rest
		}
		if len(rest) < n+2 {
			return lua.LNil, nil
		}
		s := rest[:n]
		rest = rest[n+2:]
		if kind == '=' {
			t := L.CreateTable(0, 1)
			v := L.CreateTable(0, 2)
			if len(s) >= 4 {
				v.RawSetString("string", lua.LString(s[4:]))
				v.RawSetString("format", lua.LString(s[:3]))
			}
			t.RawSetString("verbatim_string", v)
			return t, rest
		}
		return lua.LString(s), rest
	case '+':
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(line))
		return t, rest
	case '-':
		t := errorTable(L, "-"+string(line))
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return t, rest
	case '*', '~', '%', '|', '>':
		n, err := strconv.Atoi(string(line))
		if err != nil || n < 0 {
			return lua.LFalse, rest
		}
		switch kind {
		case '|':
			for i := 0; i < 2*n && rest != nil; i++ {
				_, rest = ParseReply(L, rest)
			}
			return ParseReply(L, rest)
		case '%':
			m := L.CreateTable(0, n)
			for i := 0; i < n && rest != nil; i++ {
				var k, v lua.LValue
				k, rest = ParseReply(L, rest)
				v, rest = ParseReply(L, rest)
				if k != lua.LNil {
					m.RawSet(k, v)
				}
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("map", m)
			return t, rest
		case '~':
			s := L.CreateTable(0, n)
			for i := 0; i < n && rest != nil; i++ {
				var k lua.LValue
				k, rest = ParseReply(L, rest)
				if k != lua.LNil {
					s.RawSet(k, lua.LTrue)
				}
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("set", s)
			return t, rest
		}
		t := L.CreateTable(n, 0)
		for i := 1; i <= n && rest != nil; i++ {
			var v lua.LValue
			v, rest = ParseReply(L, rest)
			if v != lua.LNil {
				t.RawSetInt(i, v)
			}
		}
		return t, rest
	case '_':
		return lua.LNil, rest
	case '#':
		return lua.LBool(len(line) > 0 && line[0] == 't'), rest
	case ',':
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(parseDouble(string(line))))
		return t, rest
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, rest
	}
	return lua.LNil, nil
}

func parseDouble(s string) float64 {
	switch s {
	case "inf":
		return math.Inf(1)
	case "-inf":
		return math.Inf(-1)
	case "nan", "-nan":
		return math.NaN()
	}
	f, _ := strconv.ParseFloat(s, 64)
	return f
}

// maxReplyDepth bounds the nesting of a script's reply: a table that contains itself would
// otherwise recurse for ever. Redis stops where the Lua C stack ends ("reached lua stack
// limit"); the depth here is of the same order.
const maxReplyDepth = 3000

// Reply is the outcome of converting a script's return value at the top level.
type Reply struct {
	// Err is set when the value is an error table: the error text ("CODE message"), not yet
	// written, so that the caller counts it as its own error reply.
	Err string
	// ErrNoStats is set when that error was counted already (a command's error passed on).
	ErrNoStats bool
}

// WriteReply writes a script's return value v to w by Redis's rules (luaReplyToRedisReply):
// strings as bulk strings, numbers as integers (truncated), true as 1 and false as null in
// RESP2 scripts (booleans in RESP3 ones, proto), tables with an err, ok, double, big_number,
// verbatim_string, map or set field as those replies, other tables as arrays up to the first
// nil, anything else as null. An error table at the top level is returned instead of written.
func WriteReply(w *resp.Writer, v lua.LValue, proto int) Reply {
	if t, ok := v.(*lua.LTable); ok {
		if e, ok := t.RawGetString("err").(lua.LString); ok {
			return Reply{Err: string(e), ErrNoStats: t.RawGetString("ignore_error_stats_update") == lua.LTrue}
		}
	}
	writeValue(w, v, proto, 0)
	return Reply{}
}

func writeValue(w *resp.Writer, v lua.LValue, proto, depth int) {
	if depth > maxReplyDepth {
		w.Error("ERR reached lua stack limit")
		return
	}
	switch x := v.(type) {
	case lua.LString:
		w.BulkString(string(x))
	case lua.LBool:
		if proto == 2 {
			if x {
				w.Int(1)
			} else {
				w.Null()
			}
			return
		}
		if w.Proto >= 3 {
			w.Bool(bool(x))
		} else if x {
			w.Int(1)
		} else {
			w.Int(0)
		}
	case lua.LNumber:
		w.Int(numberToInt(float64(x)))
	case *lua.LTable:
		writeTable(w, x, proto, depth)
	default:
		w.Null()
	}
}

// numberToInt is C's (long long) cast of a double as x86-64 does it: out of range and NaN
// give the smallest integer.
func numberToInt(f float64) int64 {
	if math.IsNaN(f) || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return math.MinInt64
	}
	return int64(f)
}

func writeTable(w *resp.Writer, t *lua.LTable, proto, depth int) {
	if e, ok := t.RawGetString("err").(lua.LString); ok {
		w.Error("-" + string(e))
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		w.Simple(noCRLF(string(s)))
		return
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		if f := float64(d); math.IsNaN(f) && math.Signbit(f) {
			w.DoubleText("-nan") // printf's spelling of a negative NaN, which 0/0 is
		} else {
			w.Double(f)
		}
		return
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		w.BigNumber(noCRLF(string(s)))
		return
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		f, fok := vt.RawGetString("format").(lua.LString)
		s, sok := vt.RawGetString("string").(lua.LString)
		if fok && sok {
			format := string(f)
			if len(format) > 3 {
				format = format[:3]
			}
			w.Verbatim(format, string(s))
			return
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		n := 0
		forEach(m, func(lua.LValue, lua.LValue) { n++ })
		w.Map(n)
		forEach(m, func(k, v lua.LValue) {
			writeValue(w, k, proto, depth+1)
			writeValue(w, v, proto, depth+1)
		})
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		n := 0
		forEach(s, func(lua.LValue, lua.LValue) { n++ })
		w.Set(n)
		forEach(s, func(k, _ lua.LValue) { writeValue(w, k, proto, depth+1) })
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	w.Array(n)
	for i := 1; i <= n; i++ {
		writeValue(w, t.RawGetInt(i), proto, depth+1)
	}
}

// noCRLF replaces CR and LF with spaces, as Redis's addReplyStatusSafe and big number replies
// do, so that a script cannot break the reply framing.
func noCRLF(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, s)
}

// forEach visits t's pairs in gopher-lua's next() order (array part, then keys in insertion
// order), which unlike LTable.ForEach does not depend on Go's map order: replies, JSON and
// MessagePack come out the same on every run.
func forEach(t *lua.LTable, fn func(k, v lua.LValue)) {
	k, v := t.Next(lua.LNil)
	for k != lua.LNil {
		fn(k, v)
		k, v = t.Next(k)
	}
}

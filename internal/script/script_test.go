package script

import (
	"strings"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/resp"
)

// fakeHost answers redis.call from a table of canned replies.
type fakeHost struct {
	replies map[string]string
	calls   [][]string
	logs    []string
}

func (h *fakeHost) Call(args [][]byte, proto int) ([]byte, string) {
	var a []string
	for _, x := range args {
		a = append(a, string(x))
	}
	h.calls = append(h.calls, a)
	if r, ok := h.replies[strings.ToLower(a[0])]; ok {
		return []byte(r), ""
	}
	return nil, "Unknown Redis command called from script"
}
func (h *fakeHost) ACLCheckCmd(args [][]byte) (bool, bool) { return true, true }
func (h *fakeHost) Log(level int, msg string)              { h.logs = append(h.logs, msg) }

func eval(t *testing.T, vm *VM, h *fakeHost, src string, proto int) (string, Reply) {
	t.Helper()
	p, err := Compile([]byte(src), "user_script")
	if err != nil {
		t.Fatalf("compile %q: %v", src, err)
	}
	w := &resp.Writer{Proto: proto}
	r := vm.Eval(&Run{Host: h, Proto: 2, Repl: ReplAll}, p, [][]byte{[]byte("k")}, [][]byte{[]byte("a")}, "sha", w)
	return string(w.Buf), r
}

func TestRESPToLuaAndBack(t *testing.T) {
	vm := NewVM(Config{Version: "7.0.0"})
	h := &fakeHost{replies: map[string]string{
		"int": ":42\r\n", "bulk": "$3\r\nabc\r\n", "nil": "$-1\r\n", "arr": "*3\r\n:1\r\n$1\r\nx\r\n*-1\r\n",
		"ok": "+OK\r\n", "err": "-WRONGTYPE bad\r\n", "map": "%1\r\n$1\r\nf\r\n$1\r\nv\r\n", "set": "~1\r\n$1\r\nm\r\n",
		"dbl": ",1.5\r\n", "big": "(123\r\n", "t": "#t\r\n", "null": "_\r\n", "verb": "=7\r\ntxt:abc\r\n",
		"attr": "|1\r\n+a\r\n:1\r\n:7\r\n",
	}}
	cases := []struct{ src, want string }{
		{"return redis.call('int')", ":42\r\n"},
		{"return redis.call('bulk')", "$3\r\nabc\r\n"},
		{"return redis.call('nil')", "$-1\r\n"},
		{"return redis.call('arr')", "*2\r\n:1\r\n$1\r\nx\r\n"}, // false ends the array? no: false is a value
		{"return redis.call('ok')", "+OK\r\n"},
		{"return redis.pcall('err')", ""},
		{"return redis.call('map')['map']['f']", "$1\r\nv\r\n"},
		{"return redis.call('set')['set']['m']", ":1\r\n"},
		{"return redis.call('dbl')", "$3\r\n1.5\r\n"},
		{"return redis.call('big')", "$3\r\n123\r\n"},
		{"return redis.call('t')", ":1\r\n"},
		{"return redis.call('null') == nil", ":1\r\n"},
		{"return redis.call('verb')['verbatim_string']['string']", "$3\r\nabc\r\n"},
		{"return redis.call('attr')", ":7\r\n"},
		{"return {KEYS[1], ARGV[1]}", "*2\r\n$1\r\nk\r\n$1\r\na\r\n"},
	}
	for _, c := range cases {
		got, r := eval(t, vm, h, c.src, 2)
		if c.src == "return redis.pcall('err')" {
			if r.Err != "WRONGTYPE bad" || !r.ErrNoStats {
				t.Errorf("%s: reply %+v", c.src, r)
			}
			continue
		}
		if c.src == "return redis.call('arr')" {
			// A false element ($-1/*-1 become false) is a value: the array has 3 elements,
			// the last a null.
			c.want = "*3\r\n:1\r\n$1\r\nx\r\n$-1\r\n"
		}
		if got != c.want || r.Err != "" {
			t.Errorf("%s: got %q (%+v), want %q", c.src, got, r, c.want)
		}
	}
	// A RESP3 caller sees doubles and booleans natively once the script uses RESP3.
	p, _ := Compile([]byte("redis.setresp(3) return {redis.call('dbl'), redis.call('t'), true}"), "user_script")
	w := &resp.Writer{Proto: 3}
	vm.Eval(&Run{Host: h, Proto: 2}, p, nil, nil, "sha", w)
	if got := string(w.Buf); got != "*3\r\n,1.5\r\n#t\r\n#t\r\n" {
		t.Errorf("RESP3: %q", got)
	}
}

func TestErrorsCarryTheirPlace(t *testing.T) {
	vm := NewVM(Config{Version: "7.0.0"})
	h := &fakeHost{replies: map[string]string{}}
	for src, want := range map[string]string{
		"return nosuch":                "ERR user_script:1: Script attempted to access nonexistent global variable 'nosuch' script: sha, on @user_script:1.",
		"\n\nerror('boom')":            "ERR user_script:3: boom script: sha, on @user_script:3.",
		"redis.call('x')":              "ERR Unknown Redis command called from script script: sha, on @user_script:1.",
		"return {err='CODE msg'}":      "CODE msg",
		"return redis.call()":          "ERR Please specify at least one argument for this redis lib call script: sha, on @user_script:1.",
		"x = 1":                        "ERR user_script:1: Attempt to modify a readonly table script: sha, on @user_script:1.",
		"local t = {} t.f()":           "ERR user_script:1: attempt to call field 'f' (a nil value) script: sha, on @user_script:1.",
		"return unpack({}, 1, 1e8)":    "ERR user_script:1: too many results to unpack script: sha, on @user_script:1.",
		"redis.log(redis.LOG_WARNING)": "ERR redis.log() requires two arguments or more. script: sha, on @user_script:1.",
	} {
		_, r := eval(t, vm, h, src, 2)
		if r.Err != want {
			t.Errorf("%q: error %q, want %q", src, r.Err, want)
		}
	}
	// The state stays usable after errors, and globals stay protected.
	if got, r := eval(t, vm, h, "return type(redis.call)", 2); got != "$8\r\nfunction\r\n" || r.Err != "" {
		t.Errorf("after errors: %q %+v", got, r)
	}
}

func TestKill(t *testing.T) {
	vm := NewVM(Config{Version: "7.0.0"})
	h := &fakeHost{}
	p, _ := Compile([]byte("local ok = pcall(function() while true do end end) while true do end"), "user_script")
	done := make(chan Reply, 1)
	go func() {
		done <- vm.Eval(&Run{Host: h, Proto: 2}, p, nil, nil, "sha", &resp.Writer{Proto: 2})
	}()
	for !vm.running() {
	}
	vm.Kill(errKilledEval)
	r := <-done
	if !strings.HasPrefix(r.Err, "ERR Script killed by user with SCRIPT KILL...") {
		t.Fatalf("killed script replied %+v", r)
	}
	// The next run is not killed.
	p2, _ := Compile([]byte("return 1"), "user_script")
	w := &resp.Writer{Proto: 2}
	if r := vm.Eval(&Run{Host: h, Proto: 2}, p2, nil, nil, "sha", w); r.Err != "" || string(w.Buf) != ":1\r\n" {
		t.Fatalf("after a kill: %q %+v", w.Buf, r)
	}
}

func TestShebang(t *testing.T) {
	for body, want := range map[string]string{
		"return 1":                           "",
		"#!lua\nreturn 1":                    "",
		"#!lua flags=no-writes,allow-oom\nx": "",
		"#!lua":                              "Invalid script shebang",
		"#!js\nx":                            "Unexpected engine in script shebang: #!js",
		"#!lua name=x\nx":                    "Unknown lua shebang option: name=x",
		"#!lua flags=no-writes,bogus\nx":     "Unexpected flag in script shebang: bogus",
		"#!lua \"flags=no-writes\"\nx":       "",
		"#!lua 'unbalanced\nx":               "Invalid engine in script shebang",
	} {
		_, _, err := ParseShebang([]byte(body))
		if err != want {
			t.Errorf("%q: %q, want %q", body, err, want)
		}
	}
	f, n, _ := ParseShebang([]byte("#!lua flags=no-writes\nreturn 1"))
	if f != FlagNoWrites || n != len("#!lua flags=no-writes") {
		t.Errorf("flags %v, length %d", f, n)
	}
	if f, _, _ := ParseShebang([]byte("return 1")); f != FlagEvalCompat {
		t.Errorf("no shebang: %v", f)
	}
}

func FuzzScriptReply(f *testing.F) {
	for _, s := range []string{"return {1,'a',{ok='x'},{err='E y'},{double=1.5},{map={a=1}},{set={b=true}}}", "return {}", "return nil"} {
		f.Add(s)
	}
	vm := NewVM(Config{Version: "7.0.0"})
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile([]byte(src), "user_script")
		if err != nil {
			return
		}
		for _, proto := range []int{2, 3} {
			w := &resp.Writer{Proto: proto}
			stop := time.AfterFunc(50*time.Millisecond, func() { vm.Kill(errKilledEval) }) // endless loops
			r := vm.Eval(&Run{Host: &fakeHost{}, Proto: 2}, p, nil, nil, "sha", w)
			stop.Stop()
			if r.Err != "" {
				continue
			}
			if _, _, err := resp.FormatCLI(w.Buf); err != nil && len(w.Buf) > 0 {
				t.Fatalf("%q wrote a malformed reply %q: %v", src, w.Buf, err)
			}
		}
	})
}

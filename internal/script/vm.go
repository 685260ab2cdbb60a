package script

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Host is what a running script asks of the server.
type Host interface {
	// Call runs one command for redis.call and redis.pcall and returns its reply encoded in
	// RESP of protocol proto (2 or 3, redis.setresp). A command refused before it ran (unknown,
	// wrong arity, not allowed from scripts or from a read-only script) returns refusal
	// instead, the text of the error the script sees (without its "ERR " code).
	Call(args [][]byte, proto int) (reply []byte, refusal string)
	// ACLCheckCmd tells redis.acl_check_cmd whether args name a command (exists) and whether
	// the script's user may run it with those arguments (allowed).
	ACLCheckCmd(args [][]byte) (exists, allowed bool)
	// Log writes a redis.log line at Redis's level (0 debug ... 3 warning).
	Log(level int, msg string)
}

// Run is one script invocation as the Lua API sees it.
type Run struct {
	Host Host
	// Proto is the protocol replies reach the script in: 2 unless it called redis.setresp(3).
	Proto int
	// Repl is what redis.set_repl last set (ReplAll unless changed).
	Repl int
}

// Replication flags of redis.set_repl (Redis's PROPAGATE_AOF and PROPAGATE_REPL).
const (
	ReplNone    = 0
	ReplAOF     = 1
	ReplReplica = 2
	ReplAll     = 3
)

// Config is what every state of a pool is built with.
type Config struct {
	// Version is the Redis version scripts see (redis.REDIS_VERSION, REDIS_VERSION_NUM).
	Version string
	// DeprecatedAPI makes setfenv, getfenv and newproxy available (lua-enable-deprecated-api).
	DeprecatedAPI bool
}

// Errors a state raises in a running script, worded as Redis's.
const (
	errReadonly   = "Attempt to modify a readonly table"
	errNoGlobal   = "Script attempted to access nonexistent global variable '%s'"
	errKilledEval = "Script killed by user with SCRIPT KILL..."
	errKilledFunc = "Script killed by user with FUNCTION KILL..."
	// ErrLoadTimeout is the error of a FUNCTION LOAD whose library code ran too long.
	ErrLoadTimeout = "FUNCTION LOAD timeout"
)

// VM is one sandboxed Lua state. A VM runs one script at a time; Pool hands them out.
type VM struct {
	L   *lua.LState
	cfg Config
	// globals is the real global table; env is the empty, read-only proxy every function
	// sees as its globals (its metatable indexes globals). Redis protects globals with a
	// patched Lua (readonly tables); gopher-lua has none, so every protected table is such a
	// proxy: writes go to __newindex, which refuses, and rawset and setmetatable refuse them.
	globals, env *lua.LTable
	envMeta      *lua.LTable
	protected    map[*lua.LTable]bool
	redisAPI     *lua.LTable
	errHandler   *lua.LFunction
	run          *Run
	rand         lrand48
	ctx          killCtx
	// argBuf and argv are redis.call's reusable argument space.
	argBuf []byte
	argv   [][]byte

	// Function engine only: lib is the library FUNCTION LOAD is running; libAPI is the
	// globals its code sees (redis.register_function, redis.log, the version).
	lib    *Library
	libAPI *lua.LTable
	// busy is set while a script runs (guarded by ctx.mu).
	busy bool
}

// killCtx is the context a VM runs under: closing done stops the script at its next
// instruction (SCRIPT KILL, FUNCTION KILL, the FUNCTION LOAD timeout). It is made once per
// run only after a kill, so an ordinary run allocates nothing for it.
type killCtx struct {
	mu   sync.Mutex
	done chan struct{}
	err  error
	// fired is set when done was closed; the next run makes a new channel.
	fired bool
}

func (k *killCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (k *killCtx) Done() <-chan struct{}       { return k.done }
func (k *killCtx) Value(any) any               { return nil }
func (k *killCtx) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Kill stops the script running in the VM at its next Lua instruction with msg as its error;
// any goroutine may call it. A script inside pcall is stopped again at every following
// instruction, so it cannot catch the kill and go on.
func (vm *VM) Kill(msg string) {
	k := &vm.ctx
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fired {
		return
	}
	k.fired = true
	k.err = errors.New(msg)
	close(k.done)
}

// Killed reports whether the current run was killed.
func (vm *VM) Killed() bool {
	k := &vm.ctx
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.fired
}

// arm prepares the kill switch for a new run.
func (vm *VM) arm() {
	k := &vm.ctx
	k.mu.Lock()
	if k.fired || k.done == nil {
		k.done = make(chan struct{})
		k.err = nil
		k.fired = false
	}
	k.mu.Unlock()
}

// NewVM builds a sandboxed state with Redis's Lua API for EVAL scripts.
func NewVM(cfg Config) *VM {
	vm := newVM(cfg)
	vm.lockDown()
	return vm
}

func newVM(cfg Config) *VM {
	// Lua 5.1 allows 20000 nested Lua calls; the call stack grows to that on demand rather
	// than taking its whole size in every pooled state.
	L := lua.NewState(lua.Options{
		SkipOpenLibs:        true,
		CallStackSize:       20000,
		MinimizeStackMemory: true,
		RegistrySize:        1024 * 4,
		RegistryMaxSize:     1024 * 256,
		RegistryGrowStep:    1024,
	})
	vm := &VM{L: L, cfg: cfg, protected: map[*lua.LTable]bool{}}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	vm.rand.seed(int32(binary.LittleEndian.Uint32(seed[:])))
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	vm.globals = g
	for _, name := range []string{"dofile", "loadfile", "print", "module", "require", "_printregs", "_GOPHER_LUA_VERSION"} {
		g.RawSetString(name, lua.LNil)
	}
	if !cfg.DeprecatedAPI {
		for _, name := range []string{"setfenv", "getfenv", "newproxy"} {
			g.RawSetString(name, lua.LNil)
		}
	}
	g.RawSetString("pcall", L.NewFunction(vm.luaPcall))
	g.RawSetString("setmetatable", L.NewFunction(vm.luaSetMetatable))
	g.RawSetString("rawset", L.NewFunction(vm.luaRawSet))
	g.RawSetString("getmetatable", L.NewFunction(luaGetMetatable))
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
	g.RawSetString("tostring", L.NewFunction(luaToString))
	g.RawSetString("gcinfo", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	g.RawSetString("loadstring", L.NewFunction(vm.luaLoadString))
	g.RawSetString("load", L.NewFunction(vm.luaLoad))
	g.RawSetString("_VERSION", lua.LString("Lua 5.1"))
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		// Lua 5.1's string.dump gives bytecode that Redis's loadstring refuses; gopher-lua has
		// no bytecode, so dump returns a binary chunk header, which loadstring refuses alike.
		str.RawSetString("dump", L.NewFunction(func(L *lua.LState) int {
			L.CheckFunction(1)
			L.Push(lua.LString("\x1bLua\x51"))
			return 1
		}))
	}
	if math, ok := g.RawGetString("math").(*lua.LTable); ok {
		math.RawSetString("random", L.NewFunction(vm.luaRandom))
		math.RawSetString("randomseed", L.NewFunction(vm.luaRandomSeed))
	}
	g.RawSetString("cjson", openCJSON(L))
	g.RawSetString("cmsgpack", openCMsgpack(L))
	g.RawSetString("bit", openBit(L))
	g.RawSetString("struct", openStruct(L))

	r := L.NewTable()
	r.RawSetString("call", L.NewFunction(func(L *lua.LState) int { return vm.redisCall(L, true) }))
	r.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int { return vm.redisCall(L, false) }))
	vm.registerLog(r)
	vm.registerVersion(r)
	r.RawSetString("setresp", L.NewFunction(vm.redisSetResp))
	r.RawSetString("sha1hex", L.NewFunction(redisSha1hex))
	r.RawSetString("error_reply", L.NewFunction(redisErrorReply))
	r.RawSetString("status_reply", L.NewFunction(redisStatusReply))
	r.RawSetString("set_repl", L.NewFunction(vm.redisSetRepl))
	r.RawSetString("REPL_NONE", lua.LNumber(ReplNone))
	r.RawSetString("REPL_AOF", lua.LNumber(ReplAOF))
	r.RawSetString("REPL_SLAVE", lua.LNumber(ReplReplica))
	r.RawSetString("REPL_REPLICA", lua.LNumber(ReplReplica))
	r.RawSetString("REPL_ALL", lua.LNumber(ReplAll))
	r.RawSetString("acl_check_cmd", L.NewFunction(vm.redisACLCheck))
	r.RawSetString("breakpoint", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LFalse); return 1 }))
	r.RawSetString("debug", L.NewFunction(func(*lua.LState) int { return 0 }))
	r.RawSetString("replicate_commands", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LTrue); return 1 }))
	vm.redisAPI = r
	g.RawSetString("redis", r)
	vm.errHandler = L.NewFunction(vm.luaErrHandler)
	return vm
}

// lockDown protects the globals and every table reachable from them, and the metatables of
// the basic types, then makes every function created from now on see the protected globals.
func (vm *VM) lockDown() {
	L := vm.L
	g := vm.globals
	// Library tables become read-only proxies, in place in the globals.
	forEach(g, func(k, v lua.LValue) {
		if t, ok := v.(*lua.LTable); ok && t != g {
			g.RawSet(k, vm.readonly(t))
		}
	})
	// Missing globals raise; new globals are refused even by code that reaches the real
	// table (there is none: every function's environment is the proxy).
	gm := L.NewTable()
	gm.RawSetString("__index", L.NewFunction(luaNoGlobal))
	gm.RawSetString("__newindex", L.NewFunction(luaReadonlyErr))
	L.SetMetatable(g, gm)
	vm.env = L.NewTable()
	vm.envMeta = L.NewTable()
	vm.envMeta.RawSetString("__index", g)
	vm.envMeta.RawSetString("__newindex", L.NewFunction(luaReadonlyErr))
	vm.envMeta.RawSetString("__metatable", vm.env)
	L.SetMetatable(vm.env, vm.envMeta)
	vm.protected[vm.env] = true
	g.RawSetString("_G", vm.env)
	L.Env = vm.env
	L.G.Global = vm.env
	// The basic types' metatables: the string one keeps its __index, every one of them reads
	// as a read-only table through getmetatable.
	strMeta := L.NewTable()
	if s, ok := g.RawGetString("string").(*lua.LTable); ok {
		strMeta.RawSetString("__index", s)
	}
	strMeta.RawSetString("__call", L.NewFunction(luaCallError))
	strMeta.RawSetString("__metatable", vm.readonly(strMeta))
	L.SetMetatable(lua.LString(""), strMeta)
	th, _ := L.NewThread()
	for _, v := range []lua.LValue{lua.LNil, lua.LNumber(0), lua.LFalse, L.NewFunction(luaReadonlyErr), th} {
		m := L.NewTable()
		if v.Type() != lua.LTFunction {
			// gopher-lua says "attempt to call a non-function object"; Lua 5.1 names the
			// variable and the type, and so do these metamethods (names.go).
			m.RawSetString("__call", L.NewFunction(luaCallError))
		}
		m.RawSetString("__index", L.NewFunction(luaIndexError))
		m.RawSetString("__newindex", L.NewFunction(luaIndexError))
		m.RawSetString("__metatable", vm.readonly(m))
		L.SetMetatable(v, m)
	}
}

// readonly returns a proxy of t that reads through to t and refuses every write.
func (vm *VM) readonly(t *lua.LTable) *lua.LTable {
	L := vm.L
	p := L.NewTable()
	m := L.NewTable()
	m.RawSetString("__index", t)
	m.RawSetString("__newindex", L.NewFunction(luaReadonlyErr))
	m.RawSetString("__metatable", p)
	L.SetMetatable(p, m)
	vm.protected[p] = true
	// Nested tables (none in the libraries today) are protected too.
	forEach(t, func(k, v lua.LValue) {
		if nt, ok := v.(*lua.LTable); ok && !vm.protected[nt] && nt != t {
			t.RawSet(k, vm.readonly(nt))
		}
	})
	return p
}

func luaReadonlyErr(L *lua.LState) int {
	L.RaiseError(errReadonly)
	return 0
}

// luaCallError raises Lua 5.1's error for calling a value that is not a function.
func luaCallError(L *lua.LState) int {
	typeError(L, "call", L.Get(1))
	return 0
}

// luaIndexError raises Lua 5.1's error for indexing a value that is not a table.
func luaIndexError(L *lua.LState) int {
	typeError(L, "index", L.Get(1))
	return 0
}

func luaNoGlobal(L *lua.LState) int {
	L.RaiseError(errNoGlobal, L.Get(2).String())
	return 0
}

// luaSetMetatable is setmetatable, refusing protected tables.
func (vm *VM) luaSetMetatable(L *lua.LState) int {
	t := L.CheckTable(1)
	if vm.protected[t] || t == vm.globals {
		L.Error(lua.LString(errReadonly), 0)
	}
	mt := L.Get(2)
	if mt != lua.LNil {
		if _, ok := mt.(*lua.LTable); !ok {
			L.ArgError(2, "nil or table expected")
		}
	}
	if cur, ok := L.GetMetatable(t).(*lua.LTable); ok && cur.RawGetString("__metatable") != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	L.SetMetatable(t, mt)
	L.SetTop(1)
	return 1
}

// luaGetMetatable is getmetatable as Redis's Lua answers it: tables and strings have
// metatables (a protected one reads as its __metatable field); the other basic types, whose
// metatables here only carry Lua 5.1's error messages, have none.
func luaGetMetatable(L *lua.LState) int {
	v := L.CheckAny(1)
	switch v.(type) {
	case *lua.LTable, *lua.LUserData, lua.LString:
	default:
		L.Push(lua.LNil)
		return 1
	}
	mt, ok := L.GetMetatable(v).(*lua.LTable)
	if !ok {
		L.Push(lua.LNil)
		return 1
	}
	if p := mt.RawGetString("__metatable"); p != lua.LNil {
		L.Push(p)
		return 1
	}
	L.Push(mt)
	return 1
}

// luaRawSet is rawset, refusing protected tables.
func (vm *VM) luaRawSet(L *lua.LState) int {
	t := L.CheckTable(1)
	if vm.protected[t] || t == vm.globals {
		L.Error(lua.LString(errReadonly), 0)
	}
	L.RawSet(t, L.CheckAny(2), L.CheckAny(3))
	L.SetTop(1)
	return 1
}

// luaUnpack is Lua 5.1's unpack with its "too many results" bound (the C stack limit), which
// gopher-lua lacks: unpack(t, 1, 2^31) must fail, not try to push two billion values.
func luaUnpack(L *lua.LState) int {
	t := L.CheckTable(1)
	i := L.OptInt64(2, 1)
	var e int64
	if L.Get(3) == lua.LNil || L.GetTop() < 3 {
		e = int64(t.Len())
	} else {
		e = L.CheckInt64(3)
	}
	if i > e {
		return 0
	}
	n := e - i + 1
	if n <= 0 || n >= 8000 {
		L.RaiseError("too many results to unpack")
	}
	for k := i; k <= e; k++ {
		L.Push(t.RawGetInt(int(k)))
	}
	return int(n)
}

// luaToString is tostring with Lua 5.1's number format (%.14g), which gopher-lua does not use.
func luaToString(L *lua.LState) int {
	v := L.CheckAny(1)
	if n, ok := v.(lua.LNumber); ok {
		L.Push(lua.LString(FormatNumber(float64(n))))
		return 1
	}
	if mt, ok := L.GetMetatable(v).(*lua.LTable); ok {
		if fn := mt.RawGetString("__tostring"); fn != lua.LNil {
			L.Push(fn)
			L.Push(v)
			L.Call(1, 1)
			return 1
		}
	}
	switch x := v.(type) {
	case lua.LString:
		L.Push(x)
	case *lua.LNilType:
		L.Push(lua.LString("nil"))
	case lua.LBool:
		L.Push(lua.LString(x.String()))
	default:
		L.Push(lua.LString(v.String()))
	}
	return 1
}

// FormatNumber formats a Lua number as Lua 5.1 does (LUA_NUMBER_FMT "%.14g").
func FormatNumber(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	s := strconv.FormatFloat(f, 'g', 14, 64)
	// C's %g writes at least two exponent digits, as Go does; nothing more to adjust.
	return s
}

// luaLoadString is loadstring: code it compiles sees the protected globals; binary chunks are
// refused as in Redis's Lua (nil and a message).
func (vm *VM) luaLoadString(L *lua.LState) int {
	src := L.CheckString(1)
	name := L.OptString(2, src)
	return vm.loadChunk(L, src, name)
}

func (vm *VM) luaLoad(L *lua.LState) int {
	fn := L.CheckFunction(1)
	name := L.OptString(2, "=(load)")
	var sb strings.Builder
	for {
		L.Push(fn)
		L.Call(0, 1)
		piece := L.Get(-1)
		L.Pop(1)
		if piece == lua.LNil {
			break
		}
		s, ok := piece.(lua.LString)
		if !ok {
			if n, isNum := piece.(lua.LNumber); isNum {
				s = lua.LString(FormatNumber(float64(n)))
			} else {
				L.Push(lua.LNil)
				L.Push(lua.LString("reader function must return a string"))
				return 2
			}
		}
		if len(s) == 0 {
			break
		}
		sb.WriteString(string(s))
	}
	return vm.loadChunk(L, sb.String(), name)
}

func (vm *VM) loadChunk(L *lua.LState, src, name string) int {
	if strings.HasPrefix(src, "\x1bLua") {
		L.Push(lua.LNil)
		L.Push(lua.LString("binary chunks are not allowed"))
		return 2
	}
	chunk := chunkName(name)
	proto, err := Compile([]byte(src), chunk)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(CompileError(chunk, []byte(src), err)))
		return 2
	}
	fn := L.NewFunctionFromProto(proto)
	if vm.env != nil {
		fn.Env = vm.env
	}
	L.Push(fn)
	return 1
}

// chunkName is how Lua 5.1 names a chunk in messages: "=name" and "@name" as given, source
// text as [string "first line..."].
func chunkName(name string) string {
	if strings.HasPrefix(name, "=") || strings.HasPrefix(name, "@") {
		return name[1:]
	}
	line := name
	if i := strings.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i] + "..."
	} else if len(line) > 45 {
		line = line[:45] + "..."
	}
	return `[string "` + line + `"]`
}

// luaPcall is Redis's pcall: an error raised as a table with an "err" field (redis.call's
// errors) reaches the caller as that string, as before Redis 7.
func (vm *VM) luaPcall(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(1, "value expected")
	}
	base := 0
	err := L.PCall(n-1, lua.MultRet, nil)
	if err != nil {
		var v lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok && ae.Object != nil {
			v = ae.Object
		}
		if t, ok := v.(*lua.LTable); ok {
			if s, ok := t.RawGetString("err").(lua.LString); ok {
				v = s
			}
		}
		L.Push(lua.LFalse)
		L.Push(v)
		return 2
	}
	top := L.GetTop()
	L.Insert(lua.LTrue, base+1)
	return top - base + 1
}

// luaErrHandler is Redis's __redis__err__handler: the error becomes a table with "err" (a
// plain error gets the ERR code) and the source and line of the Lua code that raised it.
func (vm *VM) luaErrHandler(L *lua.LState) int {
	e := L.Get(1)
	t, ok := e.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		msg := e.String()
		if n, isNum := e.(lua.LNumber); isNum {
			msg = FormatNumber(float64(n))
		}
		if e == lua.LNil {
			msg = "nil"
		}
		t.RawSetString("err", lua.LString("ERR "+msg))
	}
	level := 1
	if d, found := L.GetStack(level); found {
		_, _ = L.GetInfo("Sl", d, lua.LNil)
		if d.What == "G" {
			if d2, found := L.GetStack(level + 1); found {
				_, _ = L.GetInfo("Sl", d2, lua.LNil)
				d = d2
			} else {
				d = nil
			}
		}
		if d != nil && d.What != "G" {
			src := d.Source
			if !strings.HasPrefix(src, "@") && !strings.HasPrefix(src, "=") && !strings.HasPrefix(src, "[") {
				src = "@" + src
			}
			t.RawSetString("source", lua.LString(src))
			t.RawSetString("line", lua.LNumber(d.CurrentLine))
		}
	}
	L.Push(t)
	return 1
}

// redisCall is redis.call (raise) and redis.pcall.
func (vm *VM) redisCall(L *lua.LState, raise bool) int {
	run := vm.run
	if run == nil {
		L.Error(errorTable(L, "redis.call/pcall can only be called inside a script invocation"), 0)
		return 0
	}
	n := L.GetTop()
	if n == 0 {
		return vm.fail(L, errorTable(L, "Please specify at least one argument for this redis lib call"), raise)
	}
	args, ok := vm.args(L, n)
	if !ok {
		return vm.fail(L, errorTable(L, "Lua redis lib command arguments must be strings or integers"), raise)
	}
	reply, refusal := run.Host.Call(args, run.Proto)
	if refusal != "" {
		t := errorTable(L, refusal)
		t.RawSetString("ignore_error_stats_update", lua.LTrue)
		return vm.fail(L, t, raise)
	}
	v, _ := ParseReply(L, reply)
	if raise && len(reply) > 0 && reply[0] == '-' {
		L.Error(v, 0)
		return 0
	}
	L.Push(v)
	return 1
}

func (vm *VM) fail(L *lua.LState, t *lua.LTable, raise bool) int {
	if raise {
		L.Error(t, 0)
		return 0
	}
	L.Push(t)
	return 1
}

// args converts redis.call's arguments: strings as they are, numbers as %.17g (Lua's own
// conversion loses precision), anything else refused.
func (vm *VM) args(L *lua.LState, n int) ([][]byte, bool) {
	buf := vm.argBuf[:0]
	ends := make([]int, 0, 16)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = strconv.AppendFloat(buf, float64(v), 'g', 17, 64)
		default:
			return nil, false
		}
		ends = append(ends, len(buf))
	}
	vm.argBuf = buf
	argv := vm.argv[:0]
	start := 0
	for _, e := range ends {
		argv = append(argv, buf[start:e:e])
		start = e
	}
	vm.argv = argv
	return argv, true
}

// errorTable is Redis's luaPushErrorBuff: "-CODE msg" keeps its code, anything else gets ERR;
// the message loses leading and trailing CR and LF.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	code := "ERR"
	if strings.HasPrefix(msg, "-") {
		if sp := strings.IndexByte(msg, ' '); sp >= 0 {
			code, msg = msg[1:sp], msg[sp+1:]
		} else {
			msg = msg[1:]
		}
	}
	msg = strings.Trim(msg, "\r\n")
	t := L.CreateTable(0, 2)
	t.RawSetString("err", lua.LString(code+" "+msg))
	return t
}

func redisSha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.Error(errorTable(L, "wrong number of arguments"), 0)
		return 0
	}
	var s string
	switch v := L.Get(1).(type) {
	case lua.LString:
		s = string(v)
	case lua.LNumber:
		s = FormatNumber(float64(v))
	}
	L.Push(lua.LString(SHA1Hex([]byte(s))))
	return 1
}

func redisErrorReply(L *lua.LState) int {
	s, ok := L.Get(-1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	msg := string(s)
	if !strings.HasPrefix(msg, "-") {
		msg = "-" + msg
	}
	L.Push(errorTable(L, msg))
	return 1
}

func redisStatusReply(L *lua.LState) int {
	s, ok := L.Get(-1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errorTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

func (vm *VM) redisSetResp(L *lua.LState) int {
	if vm.run == nil {
		L.Error(errorTable(L, "redis.setresp can only be called inside a script invocation"), 0)
	}
	if L.GetTop() != 1 {
		L.Error(errorTable(L, "redis.setresp() requires one argument."), 0)
	}
	n := int(toNumber(L.Get(1)))
	if n != 2 && n != 3 {
		L.Error(errorTable(L, "RESP version must be 2 or 3."), 0)
	}
	vm.run.Proto = n
	return 0
}

func (vm *VM) redisSetRepl(L *lua.LState) int {
	if vm.run == nil {
		L.Error(errorTable(L, "redis.set_repl can only be called inside a script invocation"), 0)
	}
	if L.GetTop() != 1 {
		L.Error(errorTable(L, "redis.set_repl() requires two arguments."), 0)
	}
	n := int(toNumber(L.Get(1)))
	if n&^ReplAll != 0 {
		L.Error(errorTable(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."), 0)
	}
	vm.run.Repl = n
	return 0
}

func (vm *VM) redisACLCheck(L *lua.LState) int {
	if vm.run == nil {
		L.Error(errorTable(L, "redis.acl_check_cmd can only be called inside a script invocation"), 0)
	}
	n := L.GetTop()
	if n == 0 {
		L.Error(errorTable(L, "Please specify at least one argument for this redis lib call"), 0)
	}
	args, ok := vm.args(L, n)
	if !ok {
		L.Error(errorTable(L, "Lua redis lib command arguments must be strings or integers"), 0)
	}
	exists, allowed := vm.run.Host.ACLCheckCmd(args)
	if !exists {
		L.Error(errorTable(L, "Invalid command passed to redis.acl_check_cmd()"), 0)
	}
	L.Push(lua.LBool(allowed))
	return 1
}

func (vm *VM) registerLog(r *lua.LTable) {
	L := vm.L
	r.RawSetString("log", L.NewFunction(vm.redisLog))
	r.RawSetString("LOG_DEBUG", lua.LNumber(0))
	r.RawSetString("LOG_VERBOSE", lua.LNumber(1))
	r.RawSetString("LOG_NOTICE", lua.LNumber(2))
	r.RawSetString("LOG_WARNING", lua.LNumber(3))
}

func (vm *VM) registerVersion(r *lua.LTable) {
	v := vm.cfg.Version
	r.RawSetString("REDIS_VERSION", lua.LString(v))
	num := 0
	for i, p := range strings.SplitN(v, ".", 3) {
		n, _ := strconv.Atoi(p)
		num |= (n & 0xff) << (16 - 8*i)
	}
	r.RawSetString("REDIS_VERSION_NUM", lua.LNumber(num))
}

func (vm *VM) redisLog(L *lua.LState) int {
	n := L.GetTop()
	if n < 2 {
		L.Error(errorTable(L, "redis.log() requires two arguments or more."), 0)
	}
	lv, ok := L.Get(1).(lua.LNumber)
	if !ok {
		if s, isStr := L.Get(1).(lua.LString); isStr {
			if f, err := strconv.ParseFloat(strings.TrimSpace(string(s)), 64); err == nil {
				lv, ok = lua.LNumber(f), true
			}
		}
	}
	if !ok {
		L.Error(errorTable(L, "First argument must be a number (log level)."), 0)
	}
	level := int(lv)
	if level < 0 || level > 3 {
		L.Error(errorTable(L, "Invalid debug level."), 0)
	}
	var sb strings.Builder
	for i := 2; i <= n; i++ {
		var s string
		switch v := L.Get(i).(type) {
		case lua.LString:
			s = string(v)
		case lua.LNumber:
			s = FormatNumber(float64(v))
		default:
			continue
		}
		if i != 2 {
			sb.WriteByte(' ')
		}
		sb.WriteString(s)
	}
	if vm.run != nil && vm.run.Host != nil {
		vm.run.Host.Log(level, sb.String())
	} else if vm.lib != nil && vm.lib.log != nil {
		vm.lib.log(level, sb.String())
	}
	return 0
}

func toNumber(v lua.LValue) float64 {
	switch x := v.(type) {
	case lua.LNumber:
		return float64(x)
	case lua.LString:
		f, err := strconv.ParseFloat(strings.TrimSpace(string(x)), 64)
		if err == nil {
			return f
		}
	}
	return 0
}

// luaRandom is Redis's math.random: the same sequence for the same seed on every platform
// (Redis's redisLrand48, not libc's rand).
func (vm *VM) luaRandom(L *lua.LState) int {
	r := float64(vm.rand.next()%lrandMax) / float64(lrandMax)
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(r))
	case 1:
		u := checkInt(L, 1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u)) + 1))
	case 2:
		l, u := checkInt(L, 1), checkInt(L, 2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(math.Floor(r*float64(u-l+1)) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (vm *VM) luaRandomSeed(L *lua.LState) int {
	vm.rand.seed(int32(checkInt(L, 1)))
	return 0
}

// checkInt is luaL_checkint: a number, or a string that converts to one, truncated.
func checkInt(L *lua.LState, i int) int {
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		return int(v)
	case lua.LString:
		if f, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64); err == nil {
			return int(f)
		}
	}
	L.TypeError(i, lua.LTNumber)
	return 0
}

// lrand48 is Redis's rand.c: the 48-bit linear congruential generator of the POSIX lrand48.
type lrand48 struct{ x uint64 }

const lrandMax = 1<<31 - 1

func (r *lrand48) seed(s int32) { r.x = uint64(uint32(s))<<16 | 0x330E }

func (r *lrand48) next() uint64 {
	r.x = (0x5DEECE66D*r.x + 0xB) & (1<<48 - 1)
	return r.x >> 17
}

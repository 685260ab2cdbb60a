package script

import (
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/hotkv/hotkv/internal/resp"
)

// Pool keeps built EVAL states for reuse: building one costs far more than most scripts take
// to run. Scripts from different databases may run at once (each holds its database's
// locks), so there may be more than one in use.
type Pool struct {
	cfg  Config
	mu   sync.Mutex
	free []*VM
	max  int
}

// NewPool returns an empty pool that keeps up to max idle states.
func NewPool(cfg Config, max int) *Pool { return &Pool{cfg: cfg, max: max} }

// Get returns an idle state, building one when none is idle.
func (p *Pool) Get() *VM {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		vm := p.free[n-1]
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return vm
	}
	p.mu.Unlock()
	return NewVM(p.cfg)
}

// Put returns a state after its run; a state that was killed is dropped (its kill switch
// fired) and the pool keeps at most max.
func (p *Pool) Put(vm *VM) {
	p.mu.Lock()
	if len(p.free) < p.max {
		p.free = append(p.free, vm)
	}
	p.mu.Unlock()
}

// Reset drops every idle state (SCRIPT FLUSH), so that memory held by old scripts' garbage
// goes with them.
func (p *Pool) Reset() {
	p.mu.Lock()
	p.free = nil
	p.mu.Unlock()
}

// Idle reports how many states the pool holds, for INFO's used_memory_lua estimate.
func (p *Pool) Idle() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}

// stringArray builds a Lua array of strings (KEYS, ARGV).
func stringArray(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, b := range items {
		t.RawSetInt(i+1, lua.LString(b))
	}
	return t
}

// Eval runs a compiled EVAL script with KEYS and ARGV as globals and writes its reply to w;
// an error is returned in the Reply, not written. name is the script's SHA, for error
// messages.
func (vm *VM) Eval(run *Run, proto *lua.FunctionProto, keys, argv [][]byte, name string, w *resp.Writer) Reply {
	L := vm.L
	vm.globals.RawSetString("KEYS", stringArray(L, keys))
	vm.globals.RawSetString("ARGV", stringArray(L, argv))
	fn := L.NewFunctionFromProto(proto)
	fn.Env = vm.env
	L.Push(fn)
	// KEYS and ARGV stay until the next run replaces them, as in Redis.
	return vm.call(run, 0, name, errKilledEval, w)
}

// running reports whether a script is running in the VM (tests).
func (vm *VM) running() bool {
	vm.ctx.mu.Lock()
	defer vm.ctx.mu.Unlock()
	return vm.busy
}

// call runs the function and arguments pushed on the stack under run.
func (vm *VM) call(run *Run, nargs int, name, killMsg string, w *resp.Writer) Reply {
	L := vm.L
	vm.arm()
	L.SetContext(&vm.ctx)
	vm.run = run
	vm.setBusy(true)
	err := L.PCall(nargs, 1, vm.errHandler)
	vm.setBusy(false)
	vm.run = nil
	if err != nil {
		L.SetTop(0)
		return vm.failure(err, name, killMsg)
	}
	v := L.Get(-1)
	L.SetTop(0)
	return WriteReply(w, v, run.Proto)
}

// failure words a script's error as Redis's luaCallFunction does: the error table's message,
// then " script: NAME, on SOURCE:LINE." when the error handler found where it was raised.
func (vm *VM) failure(err error, name, killMsg string) Reply {
	var obj lua.LValue
	if ae, ok := err.(*lua.ApiError); ok {
		obj = ae.Object
	}
	t, ok := obj.(*lua.LTable)
	if s, isStr := obj.(lua.LString); !ok && isStr && strings.Contains(string(s), "callstack overflow") {
		// The error handler had no stack left to run in: Lua 5.1 reports this as "stack
		// overflow" through the handler.
		return Reply{Err: "ERR stack overflow script: " + name + "."}
	}
	if !ok {
		msg := "execution failure"
		if s, isStr := obj.(lua.LString); isStr {
			msg = string(s)
		} else if obj == nil {
			msg = err.Error()
		}
		if len(msg) > 100 {
			msg = msg[:100]
		}
		return Reply{Err: "ERR Error running script " + name + ", " + msg}
	}
	msg := ""
	if s, isStr := t.RawGetString("err").(lua.LString); isStr {
		msg = string(s)
	}
	if vm.Killed() {
		msg = "ERR " + killMsg
		if e := vm.ctx.Err(); e != nil && e.Error() != errKilledEval && e.Error() != errKilledFunc {
			msg = "ERR " + e.Error()
		}
	}
	src, srcOK := t.RawGetString("source").(lua.LString)
	line := t.RawGetString("line")
	if srcOK && line != lua.LNil {
		ln := line.String()
		if n, isNum := line.(lua.LNumber); isNum {
			ln = strconv.FormatInt(int64(n), 10)
		}
		msg += " script: " + name + ", on " + string(src) + ":" + ln + "."
	}
	return Reply{Err: msg, ErrNoStats: t.RawGetString("ignore_error_stats_update") == lua.LTrue}
}

// Function is one function a library registered.
type Function struct {
	Name        string
	Description string
	// HasDesc distinguishes an empty description from none (FUNCTION LIST's null).
	HasDesc bool
	Flags   Flags
	fn      *lua.LFunction
}

// Library is what FUNCTION LOAD's code registered, in registration order.
type Library struct {
	Functions []*Function
	log       func(level int, msg string)
	timedOut  bool
}

// NewFunctionVM builds the state that runs every function library (Redis keeps libraries in
// one Lua state too: their functions share the globals and each library's upvalues).
func NewFunctionVM(cfg Config) *VM {
	vm := newVM(cfg)
	L := vm.L
	api := L.NewTable()
	r := L.NewTable()
	r.RawSetString("register_function", L.NewFunction(vm.registerFunction))
	vm.registerLog(r)
	vm.registerVersion(r)
	errMeta := L.NewTable()
	errMeta.RawSetString("__index", L.NewFunction(luaNoGlobal))
	L.SetMetatable(r, errMeta)
	api.RawSetString("redis", r)
	vm.lockDown()
	// The load-time globals: only the library API, read-only, missing names raise.
	apiMeta := L.NewTable()
	apiMeta.RawSetString("__index", L.NewFunction(luaNoGlobal))
	L.SetMetatable(api, apiMeta)
	rp := vm.readonly(r)
	// readonly's proxy reads through to r, whose metatable raises on missing names.
	api.RawSetString("redis", rp)
	vm.libAPI = api
	return vm
}

// LoadLibrary runs a library's code (after its "#!lua name=..." line) so that it registers its
// functions, and returns them; err is FUNCTION LOAD's error. Code running longer than timeout
// (0: no limit) is stopped.
func (vm *VM) LoadLibrary(code []byte, timeout time.Duration, log func(int, string)) (*Library, string) {
	L := vm.L
	proto, cerr := Compile(code, "user_function")
	if cerr != nil {
		return nil, "Error compiling function: " + CompileError("user_function", code, cerr)
	}
	lib := &Library{log: log}
	vm.lib = lib
	vm.envMeta.RawSetString("__index", vm.libAPI)
	defer func() {
		vm.envMeta.RawSetString("__index", vm.globals)
		vm.lib = nil
	}()
	fn := L.NewFunctionFromProto(proto)
	fn.Env = vm.env
	vm.arm()
	L.SetContext(&vm.ctx)
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { vm.Kill(ErrLoadTimeout) })
		defer t.Stop()
	}
	L.Push(fn)
	err := L.PCall(0, 0, nil)
	if err != nil {
		L.SetTop(0)
		msg := err.Error()
		if ae, ok := err.(*lua.ApiError); ok && ae.Object != nil {
			switch o := ae.Object.(type) {
			case *lua.LTable:
				if s, ok := o.RawGetString("err").(lua.LString); ok {
					msg = string(s)
				}
			case lua.LString:
				msg = "ERR " + string(o)
			}
		}
		if vm.Killed() {
			msg = "ERR " + ErrLoadTimeout
		}
		return nil, "Error registering functions: " + msg
	}
	return lib, ""
}

// CallFunction runs a registered function with its KEYS and ARGV tables as arguments and
// writes its reply to w; an error is returned in the Reply.
func (vm *VM) CallFunction(run *Run, f *Function, keys, argv [][]byte, w *resp.Writer) Reply {
	L := vm.L
	L.Push(f.fn)
	L.Push(stringArray(L, keys))
	L.Push(stringArray(L, argv))
	return vm.call(run, 2, f.Name, errKilledFunc, w)
}

// ValidName reports whether a library or function name has only letters, digits and
// underscores, and at least one of them (functionsVerifyName).
func ValidName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

const errBadName = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

// registerFunction is redis.register_function, valid only while FUNCTION LOAD runs the code:
// (name, callback) or one table of named arguments (function_name, callback, flags,
// description).
func (vm *VM) registerFunction(L *lua.LState) int {
	lib := vm.lib
	if lib == nil {
		L.Error(errorTable(L, "redis.register_function can only be called on FUNCTION LOAD command"), 0)
		return 0
	}
	f := &Function{}
	n := L.GetTop()
	fail := func(msg string) int {
		L.Error(errorTable(L, msg), 0)
		return 0
	}
	switch n {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var bad string
		forEach(t, func(k, v lua.LValue) {
			if bad != "" {
				return
			}
			ks, ok := luaString(k)
			if !ok {
				bad = "named argument key given to redis.register_function is not a string"
				return
			}
			switch strings.ToLower(string(ks)) {
			case "function_name":
				s, ok := luaString(v)
				if !ok {
					bad = "function_name argument given to redis.register_function must be a string"
					return
				}
				f.Name = string(s)
			case "description":
				s, ok := luaString(v)
				if !ok {
					bad = "description argument given to redis.register_function must be a string"
					return
				}
				f.Description, f.HasDesc = string(s), true
			case "callback":
				fn, ok := v.(*lua.LFunction)
				if !ok {
					bad = "callback argument given to redis.register_function must be a function"
					return
				}
				f.fn = fn
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				for i := 1; ; i++ {
					fv := ft.RawGetInt(i)
					if fv == lua.LNil {
						break
					}
					s, ok := fv.(lua.LString)
					flag, known := FlagByName(string(s))
					if !ok || !known {
						bad = "unknown flag given"
						return
					}
					f.Flags |= flag
				}
			default:
				bad = "unknown argument given to redis.register_function"
			}
		})
		if bad != "" {
			return fail(bad)
		}
		if f.Name == "" && !hasKey(t, "function_name") {
			return fail("redis.register_function must get a function name argument")
		}
		if f.fn == nil {
			return fail("redis.register_function must get a callback argument")
		}
	case 2:
		s, ok := luaString(L.Get(1))
		if !ok {
			return fail("first argument to redis.register_function must be a string")
		}
		fn, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			return fail("second argument to redis.register_function must be a function")
		}
		f.Name, f.fn = string(s), fn
	default:
		return fail("wrong number of arguments to redis.register_function")
	}
	if !ValidName(f.Name) {
		return fail(errBadName)
	}
	for _, other := range lib.Functions {
		if other.Name == f.Name {
			return fail("Function already exists in the library")
		}
	}
	lib.Functions = append(lib.Functions, f)
	return 0
}

func hasKey(t *lua.LTable, name string) bool {
	found := false
	forEach(t, func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); ok && strings.EqualFold(string(s), name) {
			found = true
		}
	})
	return found
}

// luaString is lua_isstring plus lua_tostring: strings, and numbers as Lua prints them.
func luaString(v lua.LValue) (lua.LString, bool) {
	switch x := v.(type) {
	case lua.LString:
		return x, true
	case lua.LNumber:
		return lua.LString(FormatNumber(float64(x))), true
	}
	return "", false
}

func (vm *VM) setBusy(b bool) {
	vm.ctx.mu.Lock()
	vm.busy = b
	vm.ctx.mu.Unlock()
}

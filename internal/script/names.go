package script

import (
	"reflect"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1 names the variable in "attempt to call" and "attempt to index" errors ("attempt to
// call field 'register_function' (a nil value)"); gopher-lua says "attempt to call a
// non-function object". Redis's tests and users' error handling match Lua's words, so the
// basic types' metatables get __call and __index handlers that raise Lua's message, naming the
// variable the way Lua's getobjname does: from the instruction that loaded the register.
//
// That needs the calling frame's program counter, which gopher-lua keeps in an unexported
// field of lua.Debug. Its location is found by reflection once; if gopher-lua's layout ever
// changes so that it is not found, the messages simply name no variable.

var frameLayout = func() (l struct {
	frame, pc, fn uintptr
	ok            bool
}) {
	f, ok := reflect.TypeOf(lua.Debug{}).FieldByName("frame")
	if !ok || f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct {
		return
	}
	pc, okPC := f.Type.Elem().FieldByName("Pc")
	fn, okFn := f.Type.Elem().FieldByName("Fn")
	if !okPC || !okFn || pc.Type.Kind() != reflect.Int || fn.Type != reflect.TypeOf((*lua.LFunction)(nil)) {
		return
	}
	l.frame, l.pc, l.fn, l.ok = f.Offset, pc.Offset, fn.Offset, true
	return
}()

// callerInstruction returns the Lua function at stack level and the index of the instruction
// it is executing.
func callerInstruction(L *lua.LState, level int) (*lua.FunctionProto, int, bool) {
	if !frameLayout.ok {
		return nil, 0, false
	}
	d, ok := L.GetStack(level)
	if !ok {
		return nil, 0, false
	}
	frame := *(*unsafe.Pointer)(unsafe.Add(unsafe.Pointer(d), frameLayout.frame))
	if frame == nil {
		return nil, 0, false
	}
	fn := *(**lua.LFunction)(unsafe.Add(frame, frameLayout.fn))
	pc := *(*int)(unsafe.Add(frame, frameLayout.pc)) - 1
	if fn == nil || fn.IsG || fn.Proto == nil || pc < 0 || pc >= len(fn.Proto.Code) {
		return nil, 0, false
	}
	return fn.Proto, pc, true
}

func opCode(i uint32) int { return int(i >> 26) }
func opA(i uint32) int    { return int(i>>18) & 0xff }
func opB(i uint32) int    { return int(i & 0x1ff) }
func opC(i uint32) int    { return int(i>>9) & 0x1ff }
func opBx(i uint32) int   { return int(i & 0x3ffff) }

const opBitRK = 1 << 8

// constantName is the string constant an RK operand names, if it is one.
func constantName(p *lua.FunctionProto, rk int) (string, bool) {
	if rk&opBitRK == 0 {
		return "", false
	}
	if i := rk &^ opBitRK; i < len(p.Constants) {
		if s, ok := p.Constants[i].(lua.LString); ok {
			return string(s), true
		}
	}
	return "", false
}

// localName is the name of register reg if a local variable lives there at pc.
func localName(p *lua.FunctionProto, reg, pc int) (string, bool) {
	n := 0
	for _, l := range p.DbgLocals {
		if l.StartPc > pc {
			break
		}
		if pc < l.EndPc {
			if n == reg {
				return l.Name, true
			}
			n++
		}
	}
	return "", false
}

// objName describes register reg at instruction pc as Lua 5.1's getobjname does: "global
// 'x'", "local 'x'", "field 'x'", "method 'x'", "upvalue 'x'", or "" when it cannot tell.
func objName(p *lua.FunctionProto, pc, reg int) string {
	if name, ok := localName(p, reg, pc); ok {
		return "local '" + name + "'"
	}
	// The last instruction before pc that wrote reg, in straight-line code (Lua simulates
	// the jumps too; a name is only a hint, so the simpler scan is enough).
	for i := pc - 1; i >= 0; i-- {
		ins := p.Code[i]
		op, a := opCode(ins), opA(ins)
		switch op {
		case lua.OP_JMP, lua.OP_EQ, lua.OP_LT, lua.OP_LE, lua.OP_TEST, lua.OP_RETURN, lua.OP_FORLOOP,
			lua.OP_FORPREP, lua.OP_TFORLOOP:
			return "" // control flow: where the value came from is not known here
		case lua.OP_SETGLOBAL, lua.OP_SETUPVAL, lua.OP_SETTABLE, lua.OP_SETTABLEKS, lua.OP_SETLIST, lua.OP_CLOSE, lua.OP_NOP:
			continue
		case lua.OP_LOADNIL:
			if reg >= a && reg <= opB(ins) {
				return ""
			}
			continue
		case lua.OP_SELF:
			if reg == a {
				if k, ok := constantName(p, opC(ins)); ok {
					return "method '" + k + "'"
				}
				return ""
			}
			if reg == a+1 {
				return ""
			}
			continue
		case lua.OP_CALL, lua.OP_VARARG:
			if reg >= a {
				return ""
			}
			continue
		}
		if a != reg {
			continue
		}
		switch op {
		case lua.OP_GETGLOBAL:
			if bx := opBx(ins); bx < len(p.Constants) {
				if s, ok := p.Constants[bx].(lua.LString); ok {
					return "global '" + string(s) + "'"
				}
			}
		case lua.OP_GETTABLE, lua.OP_GETTABLEKS:
			if k, ok := constantName(p, opC(ins)); ok {
				return "field '" + k + "'"
			}
		case lua.OP_GETUPVAL:
			if b := opB(ins); b < len(p.DbgUpvalues) {
				return "upvalue '" + p.DbgUpvalues[b] + "'"
			}
		case lua.OP_MOVE:
			if b := opB(ins); b < a {
				return objName(p, i, b)
			}
		}
		return ""
	}
	return ""
}

// typeError raises Lua 5.1's "attempt to <op> <name> (a <type> value)" for the value v of
// the instruction being run by the Lua function that called the metamethod.
func typeError(L *lua.LState, op string, v lua.LValue) {
	desc := ""
	if p, pc, ok := callerInstruction(L, 1); ok {
		ins := p.Code[pc]
		reg := -1
		switch code := opCode(ins); {
		case op == "call" && (code == lua.OP_CALL || code == lua.OP_TAILCALL):
			reg = opA(ins)
		case op == "index" && (code == lua.OP_GETTABLE || code == lua.OP_GETTABLEKS || code == lua.OP_SELF):
			reg = opB(ins)
		case op == "index" && (code == lua.OP_SETTABLE || code == lua.OP_SETTABLEKS):
			reg = opA(ins)
		}
		if reg >= 0 {
			desc = objName(p, pc, reg)
		}
	}
	t := v.Type().String()
	if desc != "" {
		L.RaiseError("attempt to %s %s (a %s value)", op, desc, t)
	}
	L.RaiseError("attempt to %s a %s value", op, t)
}

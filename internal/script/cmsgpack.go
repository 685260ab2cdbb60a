package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library, as lua-cmsgpack 0.4 (Redis's lua_cmsgpack.c) behaves: pack encodes its
// arguments one after another; integers take the smallest MessagePack integer form, other
// numbers a float32 when that is exact, else a float64; strings use fixstr, str8, str16 or
// str32; a table whose keys are exactly 1..n is an array, any other a map; tables nested
// deeper than 16 encode as nil. unpack decodes every value; unpack_one and unpack_limit
// decode from an offset and return the offset after (-1 at the end) before the values.

const msgpackMaxNesting = 16

func openCMsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(msgpackPack))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return msgpackUnpack(L, 0, 0, false) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, 1, L.OptInt(2, 0), true)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return msgpackUnpack(L, L.CheckInt(2), L.OptInt(3, 0), true)
	}))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

func msgpackPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.RaiseError("bad argument #0 to 'pack' (MessagePack pack needs input.)")
	}
	var b []byte
	for i := 1; i <= n; i++ {
		b = msgpackEncode(b, L.Get(i), 0)
	}
	L.Push(lua.LString(b))
	return 1
}

func msgpackEncode(b []byte, v lua.LValue, level int) []byte {
	switch x := v.(type) {
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = append(b, 0xda, byte(n>>8), byte(n))
		default:
			b = append(b, 0xdb)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		return append(b, x...)
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if !math.IsInf(f, 0) && !math.IsNaN(f) && f == math.Trunc(f) && f >= -9.223372036854775808e18 && f < 9.223372036854775807e18 {
			return msgpackInt(b, int64(f))
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case *lua.LTable:
		if level >= msgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := msgpackArrayLen(x); ok {
			switch {
			case n <= 15:
				b = append(b, 0x90|byte(n))
			case n <= 0xffff:
				b = append(b, 0xdc, byte(n>>8), byte(n))
			default:
				b = append(b, 0xdd)
				b = binary.BigEndian.AppendUint32(b, uint32(n))
			}
			for i := 1; i <= n; i++ {
				b = msgpackEncode(b, x.RawGetInt(i), level+1)
			}
			return b
		}
		n := 0
		forEach(x, func(lua.LValue, lua.LValue) { n++ })
		switch {
		case n <= 15:
			b = append(b, 0x80|byte(n))
		case n <= 0xffff:
			b = append(b, 0xde, byte(n>>8), byte(n))
		default:
			b = append(b, 0xdf)
			b = binary.BigEndian.AppendUint32(b, uint32(n))
		}
		forEach(x, func(k, val lua.LValue) {
			b = msgpackEncode(b, k, level+1)
			b = msgpackEncode(b, val, level+1)
		})
		return b
	}
	return append(b, 0xc0)
}

func msgpackInt(b []byte, n int64) []byte {
	if n >= 0 {
		u := uint64(n)
		switch {
		case u <= 127:
			return append(b, byte(u))
		case u <= 0xff:
			return append(b, 0xcc, byte(u))
		case u <= 0xffff:
			return append(b, 0xcd, byte(u>>8), byte(u))
		case u <= 0xffffffff:
			b = append(b, 0xce)
			return binary.BigEndian.AppendUint32(b, uint32(u))
		}
		b = append(b, 0xcf)
		return binary.BigEndian.AppendUint64(b, u)
	}
	switch {
	case n >= -32:
		return append(b, byte(int8(n)))
	case n >= -128:
		return append(b, 0xd0, byte(int8(n)))
	case n >= -32768:
		b = append(b, 0xd1)
		return binary.BigEndian.AppendUint16(b, uint16(int16(n)))
	case n >= -2147483648:
		b = append(b, 0xd2)
		return binary.BigEndian.AppendUint32(b, uint32(int32(n)))
	}
	b = append(b, 0xd3)
	return binary.BigEndian.AppendUint64(b, uint64(n))
}

// msgpackArrayLen reports whether t's keys are exactly 1..n (table_is_an_array).
func msgpackArrayLen(t *lua.LTable) (int, bool) {
	count, max := 0, 0
	ok := true
	forEach(t, func(k, _ lua.LValue) {
		if !ok {
			return
		}
		n, isNum := k.(lua.LNumber)
		if !isNum || float64(n) != math.Trunc(float64(n)) || n < 1 {
			ok = false
			return
		}
		count++
		if int(n) > max {
			max = int(n)
		}
	})
	return max, ok && max == count
}

type msgpackReader struct {
	L   *lua.LState
	b   string
	pos int
	err bool
}

func (r *msgpackReader) take(n int) string {
	if n < 0 || r.pos+n > len(r.b) {
		r.err = true
		r.pos = len(r.b)
		return ""
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *msgpackReader) u8() uint64 {
	s := r.take(1)
	if s == "" {
		return 0
	}
	return uint64(s[0])
}

func (r *msgpackReader) be(n int) uint64 {
	s := r.take(n)
	var v uint64
	for i := 0; i < len(s); i++ {
		v = v<<8 | uint64(s[i])
	}
	return v
}

func (r *msgpackReader) decode() lua.LValue {
	if r.err {
		return lua.LNil
	}
	c := byte(r.u8())
	if r.err {
		return lua.LNil
	}
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		return lua.LString(r.take(int(c & 0x1f)))
	case c&0xf0 == 0x90:
		return r.array(int(c & 0x0f))
	case c&0xf0 == 0x80:
		return r.dict(int(c & 0x0f))
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xcc:
		return lua.LNumber(r.u8())
	case 0xcd:
		return lua.LNumber(r.be(2))
	case 0xce:
		return lua.LNumber(r.be(4))
	case 0xcf:
		return lua.LNumber(r.be(8))
	case 0xd0:
		return lua.LNumber(int8(r.u8()))
	case 0xd1:
		return lua.LNumber(int16(r.be(2)))
	case 0xd2:
		return lua.LNumber(int32(r.be(4)))
	case 0xd3:
		return lua.LNumber(int64(r.be(8)))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(r.be(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(r.be(8)))
	case 0xc4, 0xd9:
		return lua.LString(r.take(int(r.u8())))
	case 0xc5, 0xda:
		return lua.LString(r.take(int(r.be(2))))
	case 0xc6, 0xdb:
		return lua.LString(r.take(int(r.be(4))))
	case 0xdc:
		return r.array(int(r.be(2)))
	case 0xdd:
		return r.array(int(r.be(4)))
	case 0xde:
		return r.dict(int(r.be(2)))
	case 0xdf:
		return r.dict(int(r.be(4)))
	}
	r.err = true
	return lua.LNil
}

func (r *msgpackReader) array(n int) lua.LValue {
	if n > len(r.b)-r.pos {
		r.err = true
		return lua.LNil
	}
	t := r.L.CreateTable(n, 0)
	for i := 1; i <= n && !r.err; i++ {
		t.RawSetInt(i, r.decode())
	}
	return t
}

func (r *msgpackReader) dict(n int) lua.LValue {
	if n > len(r.b)-r.pos {
		r.err = true
		return lua.LNil
	}
	t := r.L.CreateTable(0, n)
	for i := 0; i < n && !r.err; i++ {
		k := r.decode()
		v := r.decode()
		if k != lua.LNil && !r.err {
			t.RawSet(k, v)
		}
	}
	return t
}

// msgpackUnpack decodes up to limit values (0: all) from offset; withOffset puts the offset
// after them (-1 at the end of the input) before the values.
func msgpackUnpack(L *lua.LState, limit, offset int, withOffset bool) int {
	s := L.CheckString(1)
	if offset < 0 || limit < 0 {
		L.ArgError(2, "Invalid request to unpack with offset of "+itoa(offset)+" and limit of "+itoa(limit)+".")
	}
	if offset > len(s) {
		L.ArgError(2, "Start offset "+itoa(offset)+" greater than input length "+itoa(len(s))+".")
	}
	r := &msgpackReader{L: L, b: s, pos: offset}
	var out []lua.LValue
	for r.pos < len(s) && (limit == 0 || len(out) < limit) {
		v := r.decode()
		if r.err {
			L.RaiseError("Missing bytes in input.")
		}
		out = append(out, v)
	}
	if withOffset {
		if r.pos >= len(s) {
			L.Push(lua.LNumber(-1))
		} else {
			L.Push(lua.LNumber(r.pos))
		}
	}
	for _, v := range out {
		L.Push(v)
	}
	if withOffset {
		return len(out) + 1
	}
	return len(out)
}

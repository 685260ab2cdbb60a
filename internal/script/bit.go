package script

import (
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The bit library, as LuaBitOp 1.0 (Redis's lua_bit.c) behaves: every operation works on
// 32-bit integers and returns a signed 32-bit result. Numbers are normalised by rounding to
// the nearest integer (ties to even) and taking the low 32 bits, as BitOp's 2^52+2^51 trick
// does.

func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	unary := func(op func(uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			L.Push(lua.LNumber(int32(op(tobit(L, 1)))))
			return 1
		}
	}
	variadic := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			r := tobit(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				r = op(r, tobit(L, i))
			}
			L.Push(lua.LNumber(int32(r)))
			return 1
		}
	}
	shift := func(op func(a uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			a, n := tobit(L, 1), tobit(L, 2)&31
			L.Push(lua.LNumber(int32(op(a, uint(n)))))
			return 1
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit": unary(func(a uint32) uint32 { return a }),
		"bnot":  unary(func(a uint32) uint32 { return ^a }),
		"bswap": unary(func(a uint32) uint32 {
			return a>>24 | (a>>8)&0xff00 | (a&0xff00)<<8 | a<<24
		}),
		"band":    variadic(func(a, b uint32) uint32 { return a & b }),
		"bor":     variadic(func(a, b uint32) uint32 { return a | b }),
		"bxor":    variadic(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(a uint32, n uint) uint32 { return a << n }),
		"rshift":  shift(func(a uint32, n uint) uint32 { return a >> n }),
		"arshift": shift(func(a uint32, n uint) uint32 { return uint32(int32(a) >> n) }),
		"rol":     shift(func(a uint32, n uint) uint32 { return a<<n | a>>(32-n) }),
		"ror":     shift(func(a uint32, n uint) uint32 { return a>>n | a<<(32-n) }),
		"tohex":   bitToHex,
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	return t
}

// tobit reads argument i as BitOp does.
func tobit(L *lua.LState, i int) uint32 {
	f := float64(L.CheckNumber(i))
	r := math.Mod(math.RoundToEven(f), 4294967296)
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return 0
	}
	return uint32(int64(r))
}

// bitToHex is bit.tohex(x [, n]): n hex digits (8 by default, at most 8), upper case when n
// is negative. The smallest n is taken as -(2^31-1), as Redis fixed it.
func bitToHex(L *lua.LState) int {
	b := tobit(L, 1)
	n := int64(8)
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		n = int64(int32(tobit(L, 2)))
	}
	digits := "0123456789abcdef"
	if n == math.MinInt32 {
		n = math.MinInt32 + 1
	}
	if n < 0 {
		n = -n
		digits = "0123456789ABCDEF"
	}
	if n > 8 {
		n = 8
	}
	buf := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		buf[i] = digits[b&15]
		b >>= 4
	}
	L.Push(lua.LString(buf))
	return 1
}

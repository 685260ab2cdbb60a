package script

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The struct library (Roberto Ierusalimschy's struct.c, as Redis ships it): pack, unpack and
// size of binary records described by a format string.
//
//	>  <  =   big, little, native (little) endian       !n  maximum alignment (n or 8)
//	x         one zero byte of padding                    b B h H l L T   1 1 2 2 8 8 8 bytes
//	i[n] I[n] n-byte integer (4 by default)               f d   float, double
//	s         zero-terminated string                      c[n] n chars; c0: the string's own length
//	                                                      (unpack: the previous value)

const structMaxIntSize = 32

type structState struct {
	little bool
	align  int
}

func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

// structOpt reads the next option: its letter and size; ok false at the end.
func structOpt(L *lua.LState, st *structState, f string, i *int) (opt byte, size int, ok bool) {
	for *i < len(f) {
		opt = f[*i]
		*i++
		switch opt {
		case 'b', 'B':
			return opt, 1, true
		case 'h', 'H':
			return opt, 2, true
		case 'l', 'L', 'T':
			return opt, 8, true
		case 'f':
			return opt, 4, true
		case 'd':
			return opt, 8, true
		case 'x':
			return opt, 1, true
		case 's':
			return opt, 0, true
		case 'c':
			return opt, structNum(f, i, 1), true
		case 'i', 'I':
			n := structNum(f, i, 4)
			if n > structMaxIntSize {
				L.RaiseError("integral size %d is larger than limit of %d", n, structMaxIntSize)
			}
			return opt, n, true
		case ' ':
		case '>':
			st.little = false
		case '<', '=':
			st.little = true
		case '!':
			st.align = structNum(f, i, 8)
		default:
			L.RaiseError("invalid format option '%c'", opt)
		}
	}
	return 0, 0, false
}

func structNum(f string, i *int, def int) int {
	if *i >= len(f) || f[*i] < '0' || f[*i] > '9' {
		return def
	}
	n := 0
	for *i < len(f) && f[*i] >= '0' && f[*i] <= '9' && n < 1<<20 {
		n = n*10 + int(f[*i]-'0')
		*i++
	}
	return n
}

// structPad is the padding before an item of the given size at offset n.
func structPad(st *structState, opt byte, size, n int) int {
	if size <= 1 || opt == 'c' || st.align <= 1 {
		return 0
	}
	a := size
	if a > st.align {
		a = st.align
	}
	if a&(a-1) != 0 {
		return 0
	}
	return (a - (n & (a - 1))) & (a - 1)
}

func structPack(L *lua.LState) int {
	f := L.CheckString(1)
	st := structState{little: true, align: 1}
	var b []byte
	arg := 2
	for i := 0; ; {
		opt, size, ok := structOpt(L, &st, f, &i)
		if !ok {
			break
		}
		for pad := structPad(&st, opt, size, len(b)); pad > 0; pad-- {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := float64(L.CheckNumber(arg))
			arg++
			var v uint64
			if n < 0 {
				v = uint64(int64(n))
			} else {
				v = uint64(n)
			}
			b = putInt(b, v, size, st.little, n < 0)
		case 'x':
			b = append(b, 0)
		case 'f':
			var tmp [4]byte
			bits := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			if st.little {
				binary.LittleEndian.PutUint32(tmp[:], bits)
			} else {
				binary.BigEndian.PutUint32(tmp[:], bits)
			}
			b = append(b, tmp[:]...)
		case 'd':
			var tmp [8]byte
			bits := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			if st.little {
				binary.LittleEndian.PutUint64(tmp[:], bits)
			} else {
				binary.BigEndian.PutUint64(tmp[:], bits)
			}
			b = append(b, tmp[:]...)
		case 'c', 's':
			s := L.CheckString(arg)
			arg++
			l := len(s)
			if size == 0 {
				size = l
			}
			if l < size {
				L.ArgError(arg-1, "string too short")
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
			}
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func putInt(b []byte, v uint64, size int, little, neg bool) []byte {
	out := make([]byte, size)
	for k := 0; k < size; k++ {
		var byt byte
		if k < 8 {
			byt = byte(v >> (8 * k))
		} else if neg {
			byt = 0xff
		}
		if little {
			out[k] = byt
		} else {
			out[size-1-k] = byt
		}
	}
	return append(b, out...)
}

func structUnpack(L *lua.LState) int {
	f := L.CheckString(1)
	data := L.CheckString(2)
	pos := L.OptInt(3, 1) - 1
	if pos < 0 || pos > len(data) {
		L.ArgError(3, "offset must be 1 or greater")
	}
	st := structState{little: true, align: 1}
	n := 0
	prev := lua.LValue(lua.LNil)
	for i := 0; ; {
		opt, size, ok := structOpt(L, &st, f, &i)
		if !ok {
			break
		}
		pos += structPad(&st, opt, size, pos)
		if opt != 's' && (pos+size > len(data) || pos+size < pos) {
			L.ArgError(2, "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var v uint64
			for k := 0; k < size; k++ {
				var byt byte
				if st.little {
					byt = data[pos+size-1-k]
				} else {
					byt = data[pos+k]
				}
				v = v<<8 | uint64(byt)
			}
			signed := opt == 'b' || opt == 'h' || opt == 'l' || opt == 'i'
			var num lua.LNumber
			if signed {
				if size < 8 {
					shift := uint(64 - 8*size)
					num = lua.LNumber(int64(v<<shift) >> shift)
				} else {
					num = lua.LNumber(int64(v))
				}
			} else {
				num = lua.LNumber(v)
			}
			prev = num
			L.Push(num)
			n++
		case 'x':
		case 'f':
			var bits uint32
			if st.little {
				bits = binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			} else {
				bits = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			}
			L.Push(lua.LNumber(math.Float32frombits(bits)))
			n++
		case 'd':
			var bits uint64
			if st.little {
				bits = binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			} else {
				bits = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			L.Push(lua.LNumber(math.Float64frombits(bits)))
			n++
		case 'c':
			if size == 0 {
				pn, ok := prev.(lua.LNumber)
				if !ok || n == 0 {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(pn)
				L.Pop(1)
				n--
				if pos+size > len(data) || size < 0 {
					L.ArgError(2, "data string too short")
				}
			}
			L.Push(lua.LString(data[pos : pos+size]))
			n++
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = e + 1
			L.Push(lua.LString(data[pos : pos+e]))
			n++
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	f := L.CheckString(1)
	st := structState{little: true, align: 1}
	total := 0
	for i := 0; ; {
		opt, size, ok := structOpt(L, &st, f, &i)
		if !ok {
			break
		}
		if opt == 's' || (opt == 'c' && size == 0) {
			L.ArgError(1, "options 'c0' - 's' have undefined sizes")
		}
		total += structPad(&st, opt, size, total) + size
	}
	L.Push(lua.LNumber(total))
	return 1
}

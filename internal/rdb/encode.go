package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Dump encodes o as a DUMP payload, footer included.
func Dump(o *Object) []byte {
	var b []byte
	switch o.Kind {
	case String:
		b = append(b, typeString)
		b = appendString(b, o.Str)
	case List, Set:
		t := byte(typeList)
		if o.Kind == Set {
			t = typeSet
		}
		b = append(b, t)
		b = appendLen(b, uint64(len(o.Elems)))
		for _, e := range o.Elems {
			b = appendString(b, e)
		}
	case ZSet:
		b = append(b, typeZSet2)
		b = appendLen(b, uint64(len(o.Elems)))
		for i, e := range o.Elems {
			b = appendString(b, e)
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(o.Scores[i]))
		}
	case Hash:
		b = append(b, typeHash)
		b = appendLen(b, uint64(len(o.Elems)/2))
		for _, e := range o.Elems {
			b = appendString(b, e)
		}
	case Private:
		b = append(b, TypeHotKV, o.PrivateKind)
		b = appendString(b, o.Str)
	}
	return seal(b)
}

// appendLen is rdbSaveLen: 6, 14, 32 or 64 bits, big-endian beyond the first byte.
func appendLen(b []byte, n uint64) []byte {
	switch {
	case n < 1<<6:
		return append(b, byte(n))
	case n < 1<<14:
		return append(b, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		b = append(b, 0x80)
		return binary.BigEndian.AppendUint32(b, uint32(n))
	default:
		b = append(b, 0x81)
		return binary.BigEndian.AppendUint64(b, n)
	}
}

// appendString is rdbSaveRawString without compression: a short canonical integer in its
// 8, 16 or 32-bit encoding, as Redis writes it, otherwise the length and the bytes.
func appendString(b, s []byte) []byte {
	if len(s) > 0 && len(s) <= 11 {
		if v, err := strconv.ParseInt(string(s), 10, 64); err == nil && strconv.FormatInt(v, 10) == string(s) {
			switch {
			case v >= math.MinInt8 && v <= math.MaxInt8:
				return append(b, 0xC0, byte(v))
			case v >= math.MinInt16 && v <= math.MaxInt16:
				b = append(b, 0xC1)
				return binary.LittleEndian.AppendUint16(b, uint16(v))
			case v >= math.MinInt32 && v <= math.MaxInt32:
				b = append(b, 0xC2)
				return binary.LittleEndian.AppendUint32(b, uint32(v))
			}
		}
	}
	b = appendLen(b, uint64(len(s)))
	return append(b, s...)
}

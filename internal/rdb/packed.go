package rdb

import (
	"encoding/binary"
	"strconv"
)

// The two compact containers Redis writes inside RDB strings.
const (
	ziplist = iota
	listpack
)

// parseZiplist returns a ziplist's entries (Redis ≤ 6.2's small lists, hashes and sorted sets):
// header zlbytes, zltail, zllen; entries of prevlen, encoding, data; 0xFF. Integers come back
// as decimal text. ok is false for any inconsistency.
func parseZiplist(z []byte) (elems [][]byte, ok bool) {
	if len(z) < 11 || binary.LittleEndian.Uint32(z) != uint32(len(z)) || z[len(z)-1] != 0xFF {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(z[8:]))
	p := 10
	end := len(z) - 1
	for p < end {
		// prevlen: one byte below 254, else 0xFE and four bytes.
		switch {
		case z[p] < 254:
			p++
		case z[p] == 254:
			p += 5
		default:
			return nil, false
		}
		if p >= end {
			return nil, false
		}
		b := z[p]
		var data []byte
		var n int64
		isInt := true
		switch {
		case b>>6 == 0:
			data, p = slice(z, p+1, int(b&0x3F), end)
			isInt = false
		case b>>6 == 1:
			if p+1 >= end {
				return nil, false
			}
			data, p = slice(z, p+2, int(b&0x3F)<<8|int(z[p+1]), end)
			isInt = false
		case b == 0x80:
			if p+5 > end {
				return nil, false
			}
			data, p = slice(z, p+5, int(binary.BigEndian.Uint32(z[p+1:])), end)
			isInt = false
		case b == 0xC0 || b == 0xD0 || b == 0xE0 || b == 0xF0 || b == 0xFE:
			data, p = slice(z, p+1, zipIntWidth(b), end)
			n = leInt(data)
		case b >= 0xF1 && b <= 0xFD:
			n, p, data = int64(b&0x0F)-1, p+1, []byte{}
		default:
			return nil, false
		}
		if data == nil || p < 0 {
			return nil, false
		}
		elems = append(elems, element(isInt, n, data))
	}
	return complete(elems, p, end, count)
}

// element is one decoded entry: an integer as decimal text, a string copied.
func element(isInt bool, n int64, data []byte) []byte {
	if isInt {
		return strconv.AppendInt(nil, n, 10)
	}
	return append([]byte(nil), data...)
}

// complete checks that a container's entries ended exactly at its end byte and that their
// number matches the header's (0xFFFF: too many to count there).
func complete(elems [][]byte, p, end, count int) ([][]byte, bool) {
	if p != end || (count != 0xFFFF && count != len(elems)) {
		return nil, false
	}
	return elems, true
}

// zipIntWidth is the size of a ziplist integer entry's data by its encoding byte: int16, int32,
// int64, int24, int8.
func zipIntWidth(b byte) int {
	switch b {
	case 0xC0:
		return 2
	case 0xD0:
		return 4
	case 0xE0:
		return 8
	case 0xF0:
		return 3
	}
	return 1
}

// leInt reads a little-endian signed integer of 1, 2, 3, 4 or 8 bytes (0 for nil).
func leInt(b []byte) int64 {
	var u uint64
	for i := len(b) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	if n := uint(len(b)); n > 0 && n < 8 {
		shift := 64 - 8*n
		return int64(u<<shift) >> shift // sign-extend
	}
	return int64(u)
}

// slice returns z[at:at+n] and the position after it, or nil when it passes end.
func slice(z []byte, at, n, end int) ([]byte, int) {
	if n < 0 || at > end || n > end-at {
		return nil, -1
	}
	return z[at : at+n], at + n
}

// parseListpack returns a listpack's entries (Redis 7's small values): header total bytes and
// count; entries of encoding, data and a back-length; 0xFF.
func parseListpack(l []byte) (elems [][]byte, ok bool) {
	if len(l) < 7 || binary.LittleEndian.Uint32(l) != uint32(len(l)) || l[len(l)-1] != 0xFF {
		return nil, false
	}
	count := int(binary.LittleEndian.Uint16(l[4:]))
	p := 6
	end := len(l) - 1
	for p < end {
		b := l[p]
		start := p
		var data []byte
		var n int64
		isInt := true
		switch {
		case b&0x80 == 0:
			n, p, data = int64(b&0x7F), p+1, []byte{}
		case b&0xC0 == 0x80:
			data, p = slice(l, p+1, int(b&0x3F), end)
			isInt = false
		case b&0xE0 == 0xC0:
			data, p = slice(l, p+1, 1, end)
			if data != nil {
				v := int64(b&0x1F)<<8 | int64(data[0])
				if v >= 1<<12 {
					v -= 1 << 13
				}
				n = v
			}
		case b&0xF0 == 0xE0:
			if p+1 >= end {
				return nil, false
			}
			data, p = slice(l, p+2, int(b&0x0F)<<8|int(l[p+1]), end)
			isInt = false
		case b == 0xF0:
			if p+5 > end {
				return nil, false
			}
			data, p = slice(l, p+5, int(binary.LittleEndian.Uint32(l[p+1:])), end)
			isInt = false
		case b >= 0xF1 && b <= 0xF4: // 16, 24, 32 and 64-bit integers
			data, p = slice(l, p+1, [...]int{2, 3, 4, 8}[b-0xF1], end)
			n = leInt(data)
		default:
			return nil, false
		}
		if data == nil || p < 0 {
			return nil, false
		}
		// The back-length: the entry's size in 1 to 5 bytes.
		size := p - start
		switch {
		case size <= 127:
			p++
		case size < 16383:
			p += 2
		case size < 2097151:
			p += 3
		case size < 268435455:
			p += 4
		default:
			p += 5
		}
		if p > end {
			return nil, false
		}
		elems = append(elems, element(isInt, n, data))
	}
	return complete(elems, p, end, count)
}

// lzfDecompress expands LZF data (Redis's compressed RDB strings) that must come to exactly n
// bytes: a control byte below 32 copies that many plus one literal bytes; otherwise its top
// three bits (7: plus the next byte) plus two is a length, copied from a distance of its low
// five bits, the next byte, plus one back in the output.
func lzfDecompress(in []byte, n int) ([]byte, bool) {
	out := make([]byte, 0, n)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 {
			run := ctrl + 1
			if i+run > len(in) || len(out)+run > n {
				return nil, false
			}
			out = append(out, in[i:i+run]...)
			i += run
			continue
		}
		length := ctrl >> 5
		if length == 7 {
			if i >= len(in) {
				return nil, false
			}
			length += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, false
		}
		ref := len(out) - (ctrl&0x1F)<<8 - int(in[i]) - 1
		i++
		length += 2
		if ref < 0 || len(out)+length > n {
			return nil, false
		}
		for k := range length { // byte by byte: the source may overlap what is written
			out = append(out, out[ref+k])
		}
	}
	return out, len(out) == n
}

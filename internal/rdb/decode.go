package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Restore decodes a DUMP payload: ErrChecksum when its footer is wrong, ErrFormat when the
// object does not decode. Like Redis it refuses empty collections and duplicate members.
// Nothing in a payload, however hostile, makes it panic or allocate more than a small multiple
// of the payload's size (fuzzed).
func Restore(p []byte) (*Object, error) {
	if err := Verify(p); err != nil {
		return nil, err
	}
	r := &reader{b: p[:len(p)-10]}
	o := r.object()
	if r.bad {
		return nil, ErrFormat
	}
	return o, nil
}

// reader walks a payload; any read past its end or malformed field sets bad, after which
// every read returns zero values.
type reader struct {
	b   []byte
	pos int
	bad bool
}

func (r *reader) fail() { r.bad, r.pos = true, len(r.b) }

func (r *reader) left() int { return len(r.b) - r.pos }

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || n > r.left() {
		r.fail()
		return nil
	}
	s := r.b[r.pos : r.pos+n]
	r.pos += n
	return s
}

func (r *reader) byte() byte {
	s := r.take(1)
	if s == nil {
		return 0
	}
	return s[0]
}

// length is rdbLoadLen; encoded reports a special string encoding (the low bits are its
// kind then).
func (r *reader) length() (n uint64, encoded bool) {
	b := r.byte()
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3F), false
	case 1:
		return uint64(b&0x3F)<<8 | uint64(r.byte()), false
	case 3:
		return uint64(b & 0x3F), true
	}
	switch b {
	case 0x80:
		if s := r.take(4); s != nil {
			return uint64(binary.BigEndian.Uint32(s)), false
		}
	case 0x81:
		if s := r.take(8); s != nil {
			return binary.BigEndian.Uint64(s), false
		}
	default:
		r.fail()
	}
	return 0, false
}

// count reads a collection length and checks it against what is left (every element takes a
// byte at least), so a hostile count cannot make the caller allocate.
func (r *reader) count() int {
	n, enc := r.length()
	if enc || n == 0 || n > uint64(r.left()) {
		r.fail()
		return 0
	}
	return int(n)
}

// str is rdbGenericLoadStringObject: integers in 8, 16 or 32 bits, LZF-compressed strings, or
// plain ones. The result is a copy.
func (r *reader) str() []byte {
	n, enc := r.length()
	if r.bad {
		return nil
	}
	if !enc {
		if n > uint64(r.left()) {
			r.fail()
			return nil
		}
		return append([]byte(nil), r.take(int(n))...)
	}
	switch n {
	case 0:
		return strconv.AppendInt(nil, int64(int8(r.byte())), 10)
	case 1:
		if s := r.take(2); s != nil {
			return strconv.AppendInt(nil, int64(int16(binary.LittleEndian.Uint16(s))), 10)
		}
	case 2:
		if s := r.take(4); s != nil {
			return strconv.AppendInt(nil, int64(int32(binary.LittleEndian.Uint32(s))), 10)
		}
	case 3:
		clen, e1 := r.length()
		ulen, e2 := r.length()
		if e1 || e2 || clen > uint64(r.left()) || ulen > maxLZFRatio*clen+64 {
			r.fail()
			return nil
		}
		out, ok := lzfDecompress(r.take(int(clen)), int(ulen))
		if !ok {
			r.fail()
			return nil
		}
		return out
	default:
		r.fail()
	}
	return nil
}

// maxLZFRatio bounds how much an LZF string may expand: a back reference of 264 bytes costs
// 3, so no honest compressed string grows more than ~90 times.
const maxLZFRatio = 100

// object is rdbLoadObjectType and rdbLoadObject for the types HotKV reads.
func (r *reader) object() *Object {
	t := r.byte()
	o := &Object{}
	switch t {
	case typeString:
		o.Kind, o.Str = String, r.str()
	case typeList, typeSet:
		o.Kind = List
		if t == typeSet {
			o.Kind = Set
		}
		n := r.count()
		o.Elems = make([][]byte, 0, min(n, 1024))
		for range n {
			o.Elems = append(o.Elems, r.str())
		}
	case typeZSet, typeZSet2:
		o.Kind = ZSet
		n := r.count()
		for range n {
			o.Elems = append(o.Elems, r.str())
			if t == typeZSet2 {
				s := r.take(8)
				if s == nil {
					break
				}
				o.Scores = append(o.Scores, math.Float64frombits(binary.LittleEndian.Uint64(s)))
			} else {
				o.Scores = append(o.Scores, r.asciiDouble())
			}
		}
	case typeHash:
		o.Kind = Hash
		n := r.count()
		for range 2 * n {
			o.Elems = append(o.Elems, r.str())
		}
	case typeListZiplist:
		o.Kind = List
		o.Elems = r.packed(ziplist)
	case typeListQuicklist, typeListQuicklist2:
		o.Kind = List
		n := r.count()
		for range n {
			kind := uint64(2) // quicklist nodes of RDB type 14 are all ziplists
			if t == typeListQuicklist2 {
				kind, _ = r.length()
			}
			switch {
			case kind == 1: // a plain node: one large element
				o.Elems = append(o.Elems, r.str())
			case kind == 2 && t == typeListQuicklist:
				o.Elems = append(o.Elems, r.packedBlob(ziplist)...)
			case kind == 2:
				o.Elems = append(o.Elems, r.packedBlob(listpack)...)
			default:
				r.fail()
			}
		}
	case typeSetIntset:
		o.Kind = Set
		o.Elems = r.intset()
	case typeSetListpack:
		o.Kind = Set
		o.Elems = r.packed(listpack)
	case typeZSetZiplist, typeZSetListpack, typeHashZiplist, typeHashListpack:
		format := ziplist
		if t == typeZSetListpack || t == typeHashListpack {
			format = listpack
		}
		elems := r.packed(format)
		if len(elems)%2 != 0 {
			r.fail()
			break
		}
		if t == typeHashZiplist || t == typeHashListpack {
			o.Kind, o.Elems = Hash, elems
			break
		}
		o.Kind = ZSet
		for i := 0; i < len(elems); i += 2 {
			v, err := strconv.ParseFloat(string(elems[i+1]), 64)
			if err != nil && !isRangeErr(err) {
				r.fail()
				break
			}
			o.Elems = append(o.Elems, elems[i])
			o.Scores = append(o.Scores, v)
		}
	case typeStreamListpacks, typeStreamListpacks2, typeStreamListpacks3:
		o.Kind, o.Stream = StreamValue, r.stream(t)
	case TypeHotKV:
		o.Kind, o.PrivateKind = Private, r.byte()
		o.Str = r.str()
	default:
		r.fail()
	}
	if !r.bad {
		r.check(o)
	}
	return o
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// check refuses what Redis's loader refuses: empty collections, duplicate members or fields,
// NaN scores.
func (r *reader) check(o *Object) {
	switch o.Kind {
	case List:
		if len(o.Elems) == 0 {
			r.fail()
		}
	case Set, ZSet, Hash:
		step := 1
		if o.Kind == Hash {
			step = 2
		}
		if len(o.Elems) == 0 {
			r.fail()
			return
		}
		seen := make(map[string]struct{}, len(o.Elems)/step)
		for i := 0; i < len(o.Elems); i += step {
			if _, dup := seen[string(o.Elems[i])]; dup {
				r.fail()
				return
			}
			seen[string(o.Elems[i])] = struct{}{}
		}
		for _, s := range o.Scores {
			if math.IsNaN(s) {
				r.fail()
				return
			}
		}
	}
}

// asciiDouble is rdbLoadDoubleValue, the scores of the old ZSET type: a length byte (253 NaN,
// 254 +inf, 255 -inf) and the number as text.
func (r *reader) asciiDouble() float64 {
	n := r.byte()
	switch n {
	case 253:
		return math.NaN()
	case 254:
		return math.Inf(1)
	case 255:
		return math.Inf(-1)
	}
	v, err := strconv.ParseFloat(string(r.take(int(n))), 64)
	if err != nil && !isRangeErr(err) {
		r.fail()
	}
	return v
}

// packed reads a string holding a ziplist or listpack and returns its entries.
func (r *reader) packed(format int) [][]byte {
	elems := r.packedBlob(format)
	if !r.bad && len(elems) == 0 {
		r.fail()
	}
	return elems
}

// packedBlob is packed that allows an empty blob (a quicklist may hold empty nodes, which
// Redis skips).
func (r *reader) packedBlob(format int) [][]byte {
	blob := r.str()
	if r.bad {
		return nil
	}
	var elems [][]byte
	var ok bool
	if format == ziplist {
		elems, ok = parseZiplist(blob)
	} else {
		elems, ok = parseListpack(blob)
	}
	if !ok {
		r.fail()
		return nil
	}
	return elems
}

// intset reads an intset blob: encoding (2, 4 or 8 bytes), count, then the integers in
// strictly ascending order, all little-endian.
func (r *reader) intset() [][]byte {
	blob := r.str()
	if r.bad || len(blob) < 8 {
		r.fail()
		return nil
	}
	enc := binary.LittleEndian.Uint32(blob)
	n := uint64(binary.LittleEndian.Uint32(blob[4:]))
	if (enc != 2 && enc != 4 && enc != 8) || n == 0 || uint64(len(blob)-8) != n*uint64(enc) {
		r.fail()
		return nil
	}
	out := make([][]byte, 0, n)
	var prev int64
	for i := range int(n) {
		p := blob[8+i*int(enc):]
		var v int64
		switch enc {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && v <= prev {
			r.fail()
			return nil
		}
		prev = v
		out = append(out, strconv.AppendInt(nil, v, 10))
	}
	return out
}

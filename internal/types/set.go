package types

import (
	"encoding/binary"
	"errors"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// Set is a Redis set, with Redis 7.0's two encodings as OBJECT ENCODING names them. It is
// defined as a store.Value, so that a keyspace entry's value is the set itself (as Hash is).
// While every member is a canonical integer (Redis's string2ll: no sign but '-', no leading
// zeros, fits an int64) and there are at most set-max-intset-entries of them, the set is an
// `intset`: the value holds the members sorted, in little-endian integers of one width (2, 4
// or 8 bytes, the narrowest that holds them all, widened as needed, never narrowed, as in
// Redis's intset), searched by bisection and listed in numeric order, as Redis lists its
// intsets. A member that is not an integer, or one member too many, turns it into a
// `hashtable` (the value points at a Table of members with empty values) for good: SREM does
// not convert back, as in Redis. Redis 7.2's listpack encoding of small sets does not exist
// in 7.0, and not here.
type Set store.Value

func init() {
	store.RegisterInline(store.KindSet, func(v *store.Value) any { return (*Set)(v) })
}

// maxIntsetEntries is set-max-intset-entries (Redis's default 512), process-wide like the
// server's configuration, atomic because CONFIG SET changes it while commands run.
var maxIntsetEntries atomic.Int64

func init() { SetIntsetLimit(512) }

// SetIntsetLimit sets the most members an all-integer set may hold and stay an intset. Redis
// caps it at 2^30 (intset internals); so does this. Sets already converted stay tables.
func SetIntsetLimit(entries int64) {
	maxIntsetEntries.Store(min(max(entries, 0), 1<<30))
}

// NewSet returns an empty set in the intset encoding (Redis's createIntsetObject), outside the
// keyspace: adding a first member that is not an integer converts it at once, which is what
// Redis's setTypeCreate decides up front.
func NewSet() *Set {
	v := NewSetValue()
	return (*Set)(&v)
}

// NewSetValue returns an empty set as a value to store in the keyspace.
func NewSetValue() store.Value { return store.PackedValue(store.KindSet, nil, 0) }

// Value returns the set as a value to store in the keyspace. Its memory goes with it: do not
// use s afterwards (use the stored entry's Obj()).
func (s *Set) Value() store.Value { return store.Value(*s) }

func (s *Set) val() *store.Value { return (*store.Value)(s) }

// table returns the hashtable encoding, or nil for an intset.
func (s *Set) table() *Table { return (*Table)(s.val().Direct()) }

// ParseSetInt reports whether member is a canonical integer that an intset can hold: Redis's
// string2ll, which also decides the integer encoding of strings.
func ParseSetInt(member string) (int64, bool) {
	return resp.ParseInt(unsafe.Slice(unsafe.StringData(member), len(member)))
}

// ---- the intset ----

// intWidth is the narrowest intset width that holds n.
func intWidth(n int64) int {
	switch {
	case n == int64(int16(n)):
		return 2
	case n == int64(int32(n)):
		return 4
	}
	return 8
}

// intAt reads member i of an intset of width w.
func intAt(p []byte, w, i int) int64 {
	switch w {
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(p[2*i:])))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(p[4*i:])))
	}
	return int64(binary.LittleEndian.Uint64(p[8*i:]))
}

func putInt(p []byte, w, i int, n int64) {
	switch w {
	case 2:
		binary.LittleEndian.PutUint16(p[2*i:], uint16(n))
	case 4:
		binary.LittleEndian.PutUint32(p[4*i:], uint32(n))
	default:
		binary.LittleEndian.PutUint64(p[8*i:], uint64(n))
	}
}

// ints returns the intset's bytes, member count and width (2 for an empty set).
func (s *Set) ints() (p []byte, n, w int) {
	p, n = s.val().Packed()
	if n == 0 {
		return p, 0, 2
	}
	return p, n, len(p) / n
}

// intIndex bisects the intset for x: its index, or where it belongs.
func intIndex(p []byte, n, w int, x int64) (int, bool) {
	lo, hi := 0, n
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if intAt(p, w, m) < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < n && intAt(p, w, lo) == x
}

// intInsert adds x, which is absent, at index i.
func (s *Set) intInsert(i int, x int64) {
	p, n, w := s.ints()
	nw := max(w, intWidth(x))
	var out []byte
	if nw == w && len(p)+w <= cap(p) {
		out = p[:len(p)+w]
		copy(out[(i+1)*w:], p[i*w:])
	} else {
		// A new exact-size allocation, widening every member if x needs it (Redis's
		// intsetUpgradeAndAdd).
		out = allocPack((n + 1) * nw)
		for j := n - 1; j >= 0; j-- {
			k := j
			if j >= i {
				k++
			}
			putInt(out, nw, k, intAt(p, w, j))
		}
	}
	putInt(out, nw, i, x)
	s.val().SetPacked(out, n+1)
}

// EachInt calls fn for every member of an intset in ascending order, until fn returns false;
// it does nothing for a hashtable.
func (s *Set) EachInt(fn func(n int64) bool) {
	if s.table() != nil {
		return
	}
	p, n, w := s.ints()
	for i := range n {
		if !fn(intAt(p, w, i)) {
			return
		}
	}
}

// ---- operations ----

// Len is the number of members.
func (s *Set) Len() int {
	if t := s.table(); t != nil {
		return t.Len()
	}
	_, n := s.val().Packed()
	return n
}

// Encoding is OBJECT ENCODING's answer.
func (s *Set) Encoding() string {
	if s.table() != nil {
		return "hashtable"
	}
	return "intset"
}

// IsIntset reports whether the set uses the intset encoding.
func (s *Set) IsIntset() bool { return s.table() == nil }

// Ints returns the members of an intset, in ascending order, and nil for a hashtable.
func (s *Set) Ints() []int64 {
	if s.table() != nil {
		return nil
	}
	out := make([]int64, 0, s.Len())
	s.EachInt(func(n int64) bool {
		out = append(out, n)
		return true
	})
	return out
}

// Has reports whether member is in the set.
func (s *Set) Has(member string) bool {
	if t := s.table(); t != nil {
		_, ok := t.Get(member)
		return ok
	}
	x, ok := ParseSetInt(member)
	if !ok {
		return false
	}
	p, n, w := s.ints()
	_, found := intIndex(p, n, w, x)
	return found
}

// Add adds member and reports whether it is new; it converts an intset to a hashtable for a
// member that is not an integer or for one member past set-max-intset-entries (Redis's
// setTypeAdd). The member is copied.
func (s *Set) Add(member string) bool {
	t := s.table()
	if t == nil {
		x, ok := ParseSetInt(member)
		if ok {
			p, n, w := s.ints()
			i, found := intIndex(p, n, w, x)
			if found {
				return false
			}
			s.intInsert(i, x)
			if int64(n+1) > maxIntsetEntries.Load() {
				s.convert()
			}
			return true
		}
		t = s.convert()
	}
	return t.Set(member, "")
}

// convert moves an intset into a Table and returns it.
func (s *Set) convert() *Table {
	t := &Table{}
	var buf [20]byte
	s.EachInt(func(n int64) bool {
		t.Set(string(strconv.AppendInt(buf[:0], n, 10)), "")
		return true
	})
	s.val().SetDirect(unsafe.Pointer(t))
	return t
}

// Remove removes member and reports whether it was there. The encoding stays.
func (s *Set) Remove(member string) bool {
	if t := s.table(); t != nil {
		return t.Delete(member)
	}
	x, ok := ParseSetInt(member)
	if !ok {
		return false
	}
	p, n, w := s.ints()
	i, found := intIndex(p, n, w, x)
	if !found {
		return false
	}
	s.val().SetPacked(packSplice(p, i*w, (i+1)*w, nil), n-1)
	return true
}

// Each calls fn for every member, in the set's order (ascending for an intset), until fn returns
// false. A table's strings alias the set; an intset's are formatted for the call.
func (s *Set) Each(fn func(member string) bool) {
	if t := s.table(); t != nil {
		t.Each(func(f, _ string) bool { return fn(f) })
		return
	}
	s.EachInt(func(n int64) bool { return fn(strconv.FormatInt(n, 10)) })
}

// Members returns every member, in the set's order.
func (s *Set) Members() []string {
	out := make([]string, 0, s.Len())
	s.Each(func(m string) bool {
		out = append(out, m)
		return true
	})
	return out
}

// Random returns a random member, drawing numbers from rnd (which returns [0, n)); "" for an
// empty set. A table's string aliases the set.
func (s *Set) Random(rnd func(n uint64) uint64) string {
	if t := s.table(); t != nil {
		f, _ := t.Random(rnd)
		return f
	}
	p, n, w := s.ints()
	if n == 0 {
		return ""
	}
	return strconv.FormatInt(intAt(p, w, int(rnd(uint64(n)))), 10)
}

// Scan is SSCAN's step: an intset returns everything at once (cursor 0 next), as Redis does;
// a table walks its buckets with reverse-binary cursors.
func (s *Set) Scan(cursor uint64, fn func(member string)) uint64 {
	if t := s.table(); t != nil {
		return t.Scan(cursor, func(f, _ string) { fn(f) })
	}
	s.Each(func(m string) bool {
		fn(m)
		return true
	})
	return 0
}

// Clone implements store.Cloner: a copy outside the keyspace.
func (s *Set) Clone() any {
	v := s.CloneValue()
	return (*Set)(&v)
}

// CloneValue implements store.ValueCloner: a copy sharing no memory with s.
func (s *Set) CloneValue() store.Value {
	if t := s.table(); t != nil {
		return store.DirectValue(store.KindSet, unsafe.Pointer(t.Clone()))
	}
	p, n := s.val().Packed()
	return store.PackedValue(store.KindSet, exactCopy(p), n)
}

// MemoryUsage implements MEMORY USAGE's estimate (every member is counted; samples is ignored).
func (s *Set) MemoryUsage(samples int) int64 {
	if t := s.table(); t != nil {
		return int64(unsafe.Sizeof(Table{})) + t.Bytes()
	}
	p, _ := s.val().Packed()
	return int64(cap(p))
}

// AppendPayload appends the set's snapshot payload: uvarint count, then each member as uvarint
// length and bytes, whatever the encoding (implements store.Payloader).
func (s *Set) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(s.Len()))
	if t := s.table(); t != nil {
		t.Each(func(f, _ string) bool {
			dst = appendPacked(dst, f)
			return true
		})
		return dst
	}
	s.EachInt(func(n int64) bool {
		var buf [20]byte
		d := strconv.AppendInt(buf[:0], n, 10)
		dst = binary.AppendUvarint(dst, uint64(len(d)))
		dst = append(dst, d...)
		return true
	})
	return dst
}

// ErrBadSetPayload is returned for a set payload that does not decode.
var ErrBadSetPayload = errors.New("malformed set payload")

// SetFromPayload decodes AppendPayload's output, copying what it keeps. The encoding is chosen
// again as the members are added, as Redis does when it loads a set: an all-integer set of at
// most set-max-intset-entries members comes back an intset.
func SetFromPayload(p []byte) (*Set, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > uint64(len(p)) {
		return nil, ErrBadSetPayload
	}
	p = p[k:]
	s := NewSet()
	if n > uint64(maxIntsetEntries.Load()) {
		s.convert()
	}
	seen := uint64(0)
	for i := 0; i < len(p); {
		var m string
		var ok bool
		if m, i, ok = readPacked(p, i); !ok {
			return nil, ErrBadSetPayload
		}
		if !s.Add(m) { // Add copies the member
			return nil, errors.New("duplicate member in set payload")
		}
		seen++
	}
	if seen != n {
		return nil, ErrBadSetPayload
	}
	return s, nil
}

package types

import (
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/hotkv/hotkv/internal/resp"
)

// Set is a Redis set, with Redis 7.0's two encodings as OBJECT ENCODING names them. While every
// member is a canonical integer (Redis's string2ll: no sign but '-', no leading zeros, fits an
// int64) and there are at most set-max-intset-entries of them, the set is an `intset`: a sorted
// []int64, searched by bisection, eight bytes a member and listed in numeric order, as Redis
// lists its intsets. A member that is not an integer, or one member too many, turns it into a
// `hashtable` (a Table of members with empty values) for good: SREM does not convert back, as in
// Redis. Redis 7.2's listpack encoding of small sets does not exist in 7.0, and not here.
type Set struct {
	ints  []int64 // the intset encoding, sorted; unused once table is set
	table *Table  // the hashtable encoding
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

// NewSet returns an empty set in the intset encoding (Redis's createIntsetObject): adding a
// first member that is not an integer converts it at once, which is what Redis's setTypeCreate
// decides up front.
func NewSet() *Set { return &Set{} }

// ParseSetInt reports whether member is a canonical integer that an intset can hold: Redis's
// string2ll, which also decides the integer encoding of strings.
func ParseSetInt(member string) (int64, bool) {
	return resp.ParseInt(unsafe.Slice(unsafe.StringData(member), len(member)))
}

// Len is the number of members.
func (s *Set) Len() int {
	if s.table != nil {
		return s.table.Len()
	}
	return len(s.ints)
}

// Encoding is OBJECT ENCODING's answer.
func (s *Set) Encoding() string {
	if s.table != nil {
		return "hashtable"
	}
	return "intset"
}

// IsIntset reports whether the set uses the intset encoding.
func (s *Set) IsIntset() bool { return s.table == nil }

// Ints returns the members of an intset, in ascending order, and nil for a hashtable. The slice
// aliases the set: do not keep it past a change.
func (s *Set) Ints() []int64 {
	if s.table != nil {
		return nil
	}
	return s.ints
}

func (s *Set) intIndex(n int64) (int, bool) { return slices.BinarySearch(s.ints, n) }

// Has reports whether member is in the set.
func (s *Set) Has(member string) bool {
	if s.table != nil {
		_, ok := s.table.Get(member)
		return ok
	}
	n, ok := ParseSetInt(member)
	if !ok {
		return false
	}
	_, found := s.intIndex(n)
	return found
}

// Add adds member and reports whether it is new; it converts an intset to a hashtable for a
// member that is not an integer or for one member past set-max-intset-entries (Redis's
// setTypeAdd). The member is copied.
func (s *Set) Add(member string) bool {
	if s.table == nil {
		n, ok := ParseSetInt(member)
		if ok {
			i, found := s.intIndex(n)
			if found {
				return false
			}
			s.ints = slices.Insert(s.ints, i, n)
			if int64(len(s.ints)) > maxIntsetEntries.Load() {
				s.convert()
			}
			return true
		}
		s.convert()
	}
	return s.table.Set(member, "")
}

// convert moves an intset into a Table.
func (s *Set) convert() {
	t := &Table{}
	var buf [20]byte
	for _, n := range s.ints {
		t.Set(string(strconv.AppendInt(buf[:0], n, 10)), "")
	}
	s.table, s.ints = t, nil
}

// Remove removes member and reports whether it was there. The encoding stays.
func (s *Set) Remove(member string) bool {
	if s.table != nil {
		return s.table.Delete(member)
	}
	n, ok := ParseSetInt(member)
	if !ok {
		return false
	}
	i, found := s.intIndex(n)
	if !found {
		return false
	}
	s.ints = slices.Delete(s.ints, i, i+1)
	if len(s.ints) == 0 {
		s.ints = nil
	}
	return true
}

// Each calls fn for every member, in the set's order (ascending for an intset), until fn returns
// false. A table's strings alias the set; an intset's are formatted for the call.
func (s *Set) Each(fn func(member string) bool) {
	if s.table != nil {
		s.table.Each(func(f, _ string) bool { return fn(f) })
		return
	}
	for _, n := range s.ints {
		if !fn(strconv.FormatInt(n, 10)) {
			return
		}
	}
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
	if s.table != nil {
		f, _ := s.table.Random(rnd)
		return f
	}
	if len(s.ints) == 0 {
		return ""
	}
	return strconv.FormatInt(s.ints[rnd(uint64(len(s.ints)))], 10)
}

// Scan is SSCAN's step: an intset returns everything at once (cursor 0 next), as Redis does;
// a table walks its buckets with reverse-binary cursors.
func (s *Set) Scan(cursor uint64, fn func(member string)) uint64 {
	if s.table != nil {
		return s.table.Scan(cursor, func(f, _ string) { fn(f) })
	}
	s.Each(func(m string) bool {
		fn(m)
		return true
	})
	return 0
}

// Clone implements store.Cloner.
func (s *Set) Clone() any {
	if s.table != nil {
		return &Set{table: s.table.Clone()}
	}
	return &Set{ints: slices.Clone(s.ints)}
}

// MemoryUsage implements MEMORY USAGE's estimate (every member is counted; samples is ignored).
func (s *Set) MemoryUsage(samples int) int64 {
	if s.table != nil {
		return 32 + s.table.Bytes()
	}
	return 32 + 8*int64(cap(s.ints))
}

// AppendPayload appends the set's snapshot payload: uvarint count, then each member as uvarint
// length and bytes, whatever the encoding (implements store.Payloader).
func (s *Set) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(s.Len()))
	if s.table != nil {
		s.table.Each(func(f, _ string) bool {
			dst = appendPacked(dst, f)
			return true
		})
		return dst
	}
	for _, n := range s.ints {
		var buf [20]byte
		d := strconv.AppendInt(buf[:0], n, 10)
		dst = binary.AppendUvarint(dst, uint64(len(d)))
		dst = append(dst, d...)
	}
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
		s.table = &Table{}
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

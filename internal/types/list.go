package types

import (
	"encoding/binary"
	"errors"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/hotkv/hotkv/internal/store"
)

// List is a Redis list. It is defined as a store.Value, so that a keyspace entry's value is the
// list itself (as Hash is), in one of two encodings:
//
//   - packed while it fits one of Redis's quicklist nodes (list-max-listpack-size): the value
//     holds one byte string of elements, head first, each a uvarint length and its bytes, and
//     the element count. A short list costs its key's entry and one exact-size allocation.
//     Pushes and pops at either end move the bytes (at most a node's worth); indexing scans.
//   - a ring buffer of strings beyond that (the value points at it), so pushes and pops at
//     either end are O(1) and indexing is O(1) too (Redis's quicklist walks nodes for LINDEX;
//     this does not need to). A list that shrinks stays a ring until it is rebuilt whole.
//
// Redis 7.0 reports every list as "quicklist" whatever its size; so does this, so the choice
// is invisible to clients.
type List store.Value

// listRing is the large encoding.
type listRing struct {
	buf  []string
	head int // index of the first element in buf
	n    int
}

func init() {
	store.RegisterInline(store.KindList, func(v *store.Value) any { return (*List)(v) })
}

// listPackLimit is list-max-listpack-size: negative, a node's size in bytes (-1 is 4 KiB, -2
// 8 KiB ... -5 64 KiB); positive, its element count. Atomic, as the other limits are.
var listPackLimit atomic.Int64

func init() { SetListPackLimit(-2) }

// SetListPackLimit sets list-max-listpack-size: how large a list may grow and stay packed.
// Lists already in a ring stay there.
func SetListPackLimit(n int64) { listPackLimit.Store(n) }

// listPackSafety is Redis's SIZE_SAFETY_LIMIT: a node limited by element count still holds
// at most 8 KiB.
const listPackSafety = 8192

// listFits reports whether a packed list of n elements in size bytes stays packed.
func listFits(n, size int) bool {
	lim := listPackLimit.Load()
	if lim >= 0 {
		return int64(n) <= max(lim, 1) && size <= listPackSafety
	}
	return int64(size) <= 4096<<min(-lim-1, 4)
}

// NewList returns an empty list, outside the keyspace.
func NewList() *List {
	v := NewListValue()
	return (*List)(&v)
}

// NewListValue returns an empty list as a value to store in the keyspace.
func NewListValue() store.Value { return store.PackedValue(store.KindList, nil, 0) }

// Value returns the list as a value to store in the keyspace. Its memory goes with it: do not
// use l afterwards (use the stored entry's Obj()).
func (l *List) Value() store.Value { return store.Value(*l) }

func (l *List) val() *store.Value { return (*store.Value)(l) }

// ring returns the large encoding, or nil while packed.
func (l *List) ring() *listRing { return (*listRing)(l.val().Direct()) }

// Len is the number of elements.
func (l *List) Len() int {
	if r := l.ring(); r != nil {
		return r.n
	}
	_, n := l.val().Packed()
	return n
}

// Encoding is OBJECT ENCODING's answer in Redis 7.0.
func (l *List) Encoding() string { return "quicklist" }

// packOffset returns the offset of element i of a packed list (len(p) for i == n).
func packOffset(p []byte, i int) int {
	off := 0
	for ; i > 0; i-- {
		_, off = packNext(p, off)
	}
	return off
}

// toRing moves a packed list into a ring buffer with room for extra more elements.
func (l *List) toRing(extra int) *listRing {
	p, n := l.val().Packed()
	r := &listRing{buf: make([]string, max(8, n+extra)), n: n}
	for i, off := 0, 0; i < n; i++ {
		var s string
		s, off = packNext(p, off)
		r.buf[i] = strings.Clone(s)
	}
	l.val().SetDirect(unsafe.Pointer(r))
	return r
}

func (r *listRing) grow() {
	nb := make([]string, max(8, 2*len(r.buf)))
	for i := range r.n {
		nb[i] = r.buf[(r.head+i)%len(r.buf)]
	}
	r.buf, r.head = nb, 0
}

func (r *listRing) shrink() {
	if len(r.buf) > 64 && r.n*4 < len(r.buf) {
		nb := make([]string, len(r.buf)/2)
		for i := range r.n {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
}

func (r *listRing) at(i int) *string { return &r.buf[(r.head+i)%len(r.buf)] }

// Index returns element i (0 is the head); i must be in range. The string aliases the list:
// copy it before the list changes.
func (l *List) Index(i int) string {
	if r := l.ring(); r != nil {
		return *r.at(i)
	}
	p, _ := l.val().Packed()
	s, _ := packNext(p, packOffset(p, i))
	return s
}

// Range calls fn for elements from, from+1, ... until fn returns false or the list ends. The
// strings alias the list.
func (l *List) Range(from int, fn func(v string) bool) {
	if r := l.ring(); r != nil {
		for i := from; i < r.n; i++ {
			if !fn(*r.at(i)) {
				return
			}
		}
		return
	}
	p, n := l.val().Packed()
	off := packOffset(p, from)
	for i := from; i < n; i++ {
		var s string
		s, off = packNext(p, off)
		if !fn(s) {
			return
		}
	}
}

// RangeRev calls fn for elements from, from-1, ... down to the head until fn returns false.
func (l *List) RangeRev(from int, fn func(v string) bool) {
	if r := l.ring(); r != nil {
		for i := from; i >= 0; i-- {
			if !fn(*r.at(i)) {
				return
			}
		}
		return
	}
	// Packed elements decode forwards only: collect the offsets first (a node's worth).
	p, _ := l.val().Packed()
	var stack [128]int
	offs := stack[:0]
	for i, off := 0, 0; i <= from; i++ {
		offs = append(offs, off)
		_, off = packNext(p, off)
	}
	for k := len(offs) - 1; k >= 0; k-- {
		s, _ := packNext(p, offs[k])
		if !fn(s) {
			return
		}
	}
}

// SetIndex replaces element i; v is copied.
func (l *List) SetIndex(i int, v string) {
	if r := l.ring(); r != nil {
		*r.at(i) = strings.Clone(v)
		return
	}
	p, n := l.val().Packed()
	off := packOffset(p, i)
	_, end := packNext(p, off)
	if !listFits(n, len(p)-(end-off)+uvarintLen(uint64(len(v)))+len(v)) {
		*l.toRing(0).at(i) = strings.Clone(v)
		return
	}
	l.val().SetPacked(packSplice(p, off, end, nil, v), n)
}

// push adds v (copied) at the head or the tail.
func (l *List) push(v string, left bool) {
	r := l.ring()
	if r == nil {
		p, n := l.val().Packed()
		if listFits(n+1, len(p)+uvarintLen(uint64(len(v)))+len(v)) {
			at := len(p)
			if left {
				at = 0
			}
			l.val().SetPacked(packSplice(p, at, at, nil, v), n+1)
			return
		}
		r = l.toRing(1)
	}
	if r.n == len(r.buf) {
		r.grow()
	}
	v = strings.Clone(v)
	if left {
		r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
		r.buf[r.head] = v
	} else {
		r.buf[(r.head+r.n)%len(r.buf)] = v
	}
	r.n++
}

// PushLeft adds v (copied) at the head.
func (l *List) PushLeft(v string) { l.push(v, true) }

// PushRight adds v (copied) at the tail.
func (l *List) PushRight(v string) { l.push(v, false) }

// pop removes and returns the head or the tail; the list must not be empty.
func (l *List) pop(left bool) string {
	if r := l.ring(); r != nil {
		i := r.head
		if !left {
			i = (r.head + r.n - 1) % len(r.buf)
		}
		v := r.buf[i]
		r.buf[i] = ""
		if left {
			r.head = (r.head + 1) % len(r.buf)
		}
		r.n--
		r.shrink()
		return v
	}
	p, n := l.val().Packed()
	off := 0
	if !left {
		off = packOffset(p, n-1)
	}
	s, end := packNext(p, off)
	v := strings.Clone(s) // the bytes move below
	l.val().SetPacked(packSplice(p, off, end, nil), n-1)
	return v
}

// PopLeft removes and returns the head; the list must not be empty.
func (l *List) PopLeft() string { return l.pop(true) }

// PopRight removes and returns the tail; the list must not be empty.
func (l *List) PopRight() string { return l.pop(false) }

// Replace sets the list's elements to vs (LTRIM, LREM, LINSERT rebuild through it), choosing
// the encoding afresh. The strings are copied when packed and kept as they are in a ring:
// pass strings the list may own.
func (l *List) Replace(vs []string) {
	size := 0
	for _, v := range vs {
		size += uvarintLen(uint64(len(v))) + len(v)
	}
	if listFits(len(vs), size) {
		p := allocPack(size)[:0]
		for _, v := range vs {
			p = appendPacked(p, v)
		}
		l.val().SetPacked(p, len(vs))
		return
	}
	r := &listRing{buf: make([]string, max(8, len(vs))), n: len(vs)}
	copy(r.buf, vs)
	l.val().SetDirect(unsafe.Pointer(r))
}

// Slice returns copies of elements [from, to) as a new slice.
func (l *List) Slice(from, to int) []string {
	out := make([]string, 0, max(to-from, 0))
	if from >= to {
		return out
	}
	l.Range(from, func(v string) bool {
		out = append(out, strings.Clone(v))
		return len(out) < to-from
	})
	return out
}

// Clone implements store.Cloner: a copy outside the keyspace.
func (l *List) Clone() any {
	v := l.CloneValue()
	return (*List)(&v)
}

// CloneValue implements store.ValueCloner: a copy sharing no memory with l.
func (l *List) CloneValue() store.Value {
	if l.ring() == nil {
		p, n := l.val().Packed()
		return store.PackedValue(store.KindList, exactCopy(p), n)
	}
	c := NewList()
	c.Replace(l.Slice(0, l.Len()))
	return c.Value()
}

// MemoryUsage implements MEMORY USAGE's estimate.
func (l *List) MemoryUsage(samples int) int64 {
	r := l.ring()
	if r == nil {
		p, _ := l.val().Packed()
		return int64(cap(p))
	}
	n := int64(unsafe.Sizeof(listRing{}) + 16*uintptr(len(r.buf)))
	for i := range r.n {
		n += int64(len(*r.at(i)))
	}
	return n
}

// AppendPayload appends the snapshot payload: uvarint count, then each element as uvarint
// length and bytes, head first (a packed list's own layout).
func (l *List) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(l.Len()))
	if l.ring() == nil {
		p, _ := l.val().Packed()
		return append(dst, p...)
	}
	l.Range(0, func(v string) bool {
		dst = appendPacked(dst, v)
		return true
	})
	return dst
}

// ListFromPayload decodes AppendPayload's output, copying what it keeps.
func ListFromPayload(p []byte) (*List, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n == 0 || n > uint64(len(p)) {
		return nil, errors.New("malformed list payload")
	}
	vs := make([]string, 0, n)
	for i := k; i < len(p); {
		v, next, ok := readPacked(p, i)
		if !ok {
			return nil, errors.New("malformed list payload")
		}
		vs = append(vs, string([]byte(v)))
		i = next
	}
	if uint64(len(vs)) != n {
		return nil, errors.New("malformed list payload")
	}
	l := NewList()
	l.Replace(vs)
	return l, nil
}

package types

import (
	"encoding/binary"
	"errors"
)

// List is a Redis list: a ring buffer of elements, so pushes and pops at either end are O(1)
// and indexing is O(1) too (Redis's quicklist walks nodes for LINDEX; this does not need to).
// Redis 7.0 reports every list as "quicklist"; so does this.
type List struct {
	buf  []string
	head int // index of the first element in buf
	n    int
}

// NewList returns an empty list.
func NewList() *List { return &List{} }

// Len is the number of elements.
func (l *List) Len() int { return l.n }

// Encoding is OBJECT ENCODING's answer in Redis 7.0.
func (l *List) Encoding() string { return "quicklist" }

func (l *List) grow() {
	nb := make([]string, max(8, 2*len(l.buf)))
	for i := range l.n {
		nb[i] = l.buf[(l.head+i)%len(l.buf)]
	}
	l.buf, l.head = nb, 0
}

func (l *List) shrink() {
	if len(l.buf) > 64 && l.n*4 < len(l.buf) {
		nb := make([]string, len(l.buf)/2)
		for i := range l.n {
			nb[i] = l.buf[(l.head+i)%len(l.buf)]
		}
		l.buf, l.head = nb, 0
	}
}

// Index returns element i (0 is the head); i must be in range.
func (l *List) Index(i int) string { return l.buf[(l.head+i)%len(l.buf)] }

// SetIndex replaces element i.
func (l *List) SetIndex(i int, v string) { l.buf[(l.head+i)%len(l.buf)] = v }

// PushLeft adds v at the head.
func (l *List) PushLeft(v string) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.head = (l.head - 1 + len(l.buf)) % len(l.buf)
	l.buf[l.head] = v
	l.n++
}

// PushRight adds v at the tail.
func (l *List) PushRight(v string) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.buf[(l.head+l.n)%len(l.buf)] = v
	l.n++
}

// PopLeft removes and returns the head; the list must not be empty.
func (l *List) PopLeft() string {
	v := l.buf[l.head]
	l.buf[l.head] = ""
	l.head = (l.head + 1) % len(l.buf)
	l.n--
	l.shrink()
	return v
}

// PopRight removes and returns the tail; the list must not be empty.
func (l *List) PopRight() string {
	i := (l.head + l.n - 1) % len(l.buf)
	v := l.buf[i]
	l.buf[i] = ""
	l.n--
	l.shrink()
	return v
}

// Replace sets the list's elements to vs (LTRIM, LREM, LINSERT rebuild through it).
func (l *List) Replace(vs []string) {
	l.buf, l.head, l.n = nil, 0, 0
	if len(vs) > 0 {
		l.buf = make([]string, max(8, len(vs)))
		copy(l.buf, vs)
		l.n = len(vs)
	}
}

// Slice returns elements [from, to) as a new slice.
func (l *List) Slice(from, to int) []string {
	out := make([]string, 0, max(to-from, 0))
	for i := from; i < to; i++ {
		out = append(out, l.Index(i))
	}
	return out
}

// Clone implements store.Cloner.
func (l *List) Clone() any {
	c := &List{}
	c.Replace(l.Slice(0, l.n))
	return c
}

// MemoryUsage implements MEMORY USAGE's estimate.
func (l *List) MemoryUsage(samples int) int64 {
	n := int64(40 + 16*len(l.buf))
	for i := range l.n {
		n += int64(len(l.Index(i)))
	}
	return n
}

// AppendPayload appends the snapshot payload: uvarint count, then each element as uvarint
// length and bytes, head first.
func (l *List) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(l.n))
	for i := range l.n {
		dst = appendPacked(dst, l.Index(i))
	}
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
	l := &List{}
	l.Replace(vs)
	return l, nil
}

// Package types holds the aggregate values (hashes, and the other Redis types as they come):
// their compact and large encodings and the operations the commands need, free of protocol
// and locking, which the command layer and the snapshot codec share.
package types

import (
	"hash/maphash"
	"math/bits"
	"unsafe"
)

// seed hashes every table's fields; a process-wide seed keeps tables small (no per-table
// seed) and Go's maphash keeps it secret from clients, so chains cannot be attacked.
var seed = maphash.MakeSeed()

// Table is a chained hash table of field → value strings, the large encoding of hashes (and
// the member index of sets and sorted sets). It is Redis's dict in the ways clients can see:
// SCAN-style cursors walk buckets in reverse-binary order, so an element present for the
// whole scan is returned at least once however the table grows or shrinks in between, and
// Random picks an element in O(1) expected time. A Go map can do neither.
//
// Each pair is one allocation holding field and value back to back, referenced from a 32-byte
// slot; buckets are int32 slot indexes, so the arrays hold no pointers but the slots'.
type Table struct {
	buckets []int32 // slot index + 1, 0 = empty
	slots   []slot
	free    []int32
	count   int
}

type slot struct {
	kv   *byte  // field then value
	flen uint32 // field length
	vlen uint32 // value length
	hash uint32 // low 32 bits of the field's hash: its bucket, and a cheap inequality test
	next int32  // chain link (index + 1), or -1 while the slot is free
	_    uint32
}

func (s *slot) field() string { return unsafe.String(s.kv, s.flen) }
func (s *slot) value() string {
	if s.vlen == 0 {
		return "" // the pointer past an empty value would point past the allocation
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(s.kv), s.flen)), s.vlen)
}

func hashOf(field string) uint64 { return maphash.String(seed, field) }

// Len is the number of fields.
func (t *Table) Len() int { return t.count }

func (t *Table) find(field string, h uint64) *slot {
	if t.count == 0 {
		return nil
	}
	h32 := uint32(h)
	for i := t.buckets[h&uint64(len(t.buckets)-1)]; i != 0; {
		s := &t.slots[i-1]
		if s.hash == h32 && s.flen == uint32(len(field)) && s.field() == field {
			return s
		}
		i = s.next
	}
	return nil
}

// Get returns field's value.
func (t *Table) Get(field string) (string, bool) {
	if s := t.find(field, hashOf(field)); s != nil {
		return s.value(), true
	}
	return "", false
}

// Set stores field = value and reports whether the field is new.
func (t *Table) Set(field, value string) bool {
	h := hashOf(field)
	kv := make([]byte, len(field)+len(value))
	copy(kv, field)
	copy(kv[len(field):], value)
	var p *byte
	if len(kv) > 0 {
		p = &kv[0]
	}
	if s := t.find(field, h); s != nil {
		s.kv, s.vlen = p, uint32(len(value))
		return false
	}
	if t.count >= len(t.buckets) {
		t.resize(max(8, 2*len(t.buckets)))
	}
	var idx int32
	if n := len(t.free); n > 0 {
		idx = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		t.slots = append(t.slots, slot{})
		idx = int32(len(t.slots) - 1)
	}
	b := h & uint64(len(t.buckets)-1)
	t.slots[idx] = slot{kv: p, flen: uint32(len(field)), vlen: uint32(len(value)), hash: uint32(h), next: t.buckets[b]}
	t.buckets[b] = idx + 1
	t.count++
	return true
}

// Delete removes field and reports whether it was there.
func (t *Table) Delete(field string) bool {
	if t.count == 0 {
		return false
	}
	h := hashOf(field)
	link := &t.buckets[h&uint64(len(t.buckets)-1)]
	for *link != 0 {
		idx := *link - 1
		s := &t.slots[idx]
		if s.hash == uint32(h) && s.field() == field {
			*link = s.next
			t.slots[idx] = slot{next: -1}
			t.free = append(t.free, idx)
			t.count--
			if t.count == 0 {
				*t = Table{}
			} else if len(t.buckets) > 8 && t.count*8 < len(t.buckets) {
				t.compact()
			}
			return true
		}
		link = &s.next
	}
	return false
}

// resize rebuilds the buckets with n (a power of two) using the stored hash bits.
func (t *Table) resize(n int) {
	nb := make([]int32, n)
	mask := uint64(n - 1)
	for i := range t.slots {
		s := &t.slots[i]
		if s.next < 0 {
			continue
		}
		b := uint64(s.hash) & mask
		s.next = nb[b]
		nb[b] = int32(i) + 1
	}
	t.buckets = nb
}

// compact drops free slots and shrinks the buckets after many deletions.
func (t *Table) compact() {
	live := make([]slot, 0, t.count)
	for _, s := range t.slots {
		if s.next >= 0 {
			live = append(live, s)
		}
	}
	t.slots, t.free = live, nil
	t.resize(max(8, 1<<bits.Len(uint(t.count))))
}

// Each calls fn for every pair until fn returns false.
func (t *Table) Each(fn func(field, value string) bool) {
	for i := range t.slots {
		if s := &t.slots[i]; s.next >= 0 {
			if !fn(s.field(), s.value()) {
				return
			}
		}
	}
}

// Random returns a random pair, drawing numbers from rnd (which returns [0, n)).
func (t *Table) Random(rnd func(n uint64) uint64) (field, value string) {
	if t.count == 0 {
		return "", ""
	}
	// Free slots are at most 7/8 of the slab (compact keeps it so), so this ends quickly.
	for {
		s := &t.slots[rnd(uint64(len(t.slots)))]
		if s.next >= 0 {
			return s.field(), s.value()
		}
	}
}

// Scan calls fn for the pairs in the bucket cursor names (and those mapping to it in a larger
// table) and returns the next cursor, 0 when the walk is over: Redis's reverse-binary cursor.
func (t *Table) Scan(cursor uint64, fn func(field, value string)) uint64 {
	if t.count == 0 {
		return 0
	}
	mask := uint64(len(t.buckets) - 1)
	for i := t.buckets[cursor&mask]; i != 0; {
		s := &t.slots[i-1]
		fn(s.field(), s.value())
		i = s.next
	}
	cursor |= ^mask
	cursor = bits.Reverse64(cursor)
	cursor++
	return bits.Reverse64(cursor)
}

// Bytes estimates the table's memory, for MEMORY USAGE.
func (t *Table) Bytes() int64 {
	n := int64(len(t.buckets))*4 + int64(cap(t.slots))*int64(unsafe.Sizeof(slot{})) + int64(cap(t.free))*4
	for i := range t.slots {
		if s := &t.slots[i]; s.next >= 0 {
			n += int64(s.flen + s.vlen)
		}
	}
	return n
}

// Clone returns a deep copy (values share no memory with t's: COPY, then writes to either).
func (t *Table) Clone() *Table {
	c := &Table{}
	t.Each(func(f, v string) bool {
		c.Set(f, v)
		return true
	})
	return c
}

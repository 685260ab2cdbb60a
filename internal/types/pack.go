package types

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Helpers for the packed small encodings (hash and sorted set listpacks, small lists,
// intsets). A packed aggregate is the bytes of one allocation held directly in its
// store.Value: there are millions of small aggregates, so its size is what a key costs.
// Redis reallocates a listpack to the exact size on every change, and so do these: an
// allocation is rounded up only to the allocator's size class, never doubled, and a packed
// value that shrinks well below its capacity moves to a smaller one.

// allocPack returns a slice of length n whose capacity is n rounded up to Go's size class
// (the bytes the allocator spends anyway). append of a make'd slice onto nil is compiled into
// one allocation with that rounding, and no temporary.
func allocPack(n int) []byte {
	if n == 0 {
		return nil
	}
	return append([]byte(nil), make([]byte, n)...)
}

// wasteful reports whether a packed value of length n in an allocation of capacity c should
// move to a smaller one: more than half the allocation and more than a size-class step idle.
func wasteful(n, c int) bool { return c-n > 32 && c > 2*n }

// uvarintLen is the length of x as a uvarint.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// overlaps reports whether s's bytes lie inside p's allocation.
func overlaps(p []byte, s string) bool {
	if cap(p) == 0 || len(s) == 0 {
		return false
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
	a := uintptr(unsafe.Pointer(unsafe.StringData(s)))
	return a >= lo && a < lo+uintptr(cap(p))
}

// packSplice replaces p[from:to] with head followed by each of strs as a uvarint length and
// its bytes, and returns the result: p itself, changed in place, when it fits (and, when it
// shrinks, would not leave most of the allocation idle), otherwise a new exact-size
// allocation. strs may alias p.
func packSplice(p []byte, from, to int, head []byte, strs ...string) []byte {
	add := len(head)
	alias := false
	for _, s := range strs {
		add += uvarintLen(uint64(len(s))) + len(s)
		alias = alias || overlaps(p, s)
	}
	n := len(p) - (to - from) + add
	var out []byte
	if !alias && n <= cap(p) && (n >= len(p) || !wasteful(n, cap(p))) {
		out = p[:n]
		copy(out[from+add:], p[to:]) // memmove: the tail moves within p
	} else {
		out = allocPack(n)
		copy(out, p[:from])
		copy(out[from+add:], p[to:])
	}
	i := from + copy(out[from:], head)
	for _, s := range strs {
		i += binary.PutUvarint(out[i:], uint64(len(s)))
		i += copy(out[i:], s)
	}
	if n == 0 {
		return nil
	}
	return out
}

// exactCopy returns a copy of p in an allocation of its own size class.
func exactCopy(p []byte) []byte {
	out := allocPack(len(p))
	copy(out, p)
	return out
}

// unaliased returns s, or a copy of it when its bytes lie inside p (which is about to change).
func unaliased(p []byte, s string) string {
	if overlaps(p, s) {
		return string([]byte(s))
	}
	return s
}

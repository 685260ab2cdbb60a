package types

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/hotkv/hotkv/internal/store"
)

// Hash is a Redis hash. It is defined as a store.Value, so that a keyspace entry's value is the
// hash itself (e.Val.Obj() returns the entry's own Value as a *Hash, see store.RegisterInline):
//
//   - "listpack" while small: the value holds one packed byte string of (field, value) pairs,
//     each string prefixed with its length as a uvarint, like Redis's listpack, and the field
//     count. A hash of a few short fields costs its key's entry and one exact-size allocation;
//     operations scan it linearly.
//   - "hashtable" past MaxPackEntries fields, or once a field or value is longer than
//     MaxPackValue (see SetHashPackLimits): the value points straight at a Table. A hash does
//     not convert back (Redis does not either).
//
// A Hash outside the keyspace (NewHash, HashFromPayload, Clone) is handed to it by Value.
type Hash store.Value

func init() {
	store.RegisterInline(store.KindHash, func(v *store.Value) any { return (*Hash)(v) })
}

// Limits of the packed encoding, hash-max-listpack-entries and hash-max-listpack-value (Redis's
// defaults 128 and 64). They are process-wide, as the server's configuration is, and atomic
// because CONFIG SET changes them while commands run.
var maxPackEntries, maxPackValue atomic.Int64

func init() { SetHashPackLimits(128, 64) }

// SetHashPackLimits sets the largest number of fields and the longest field or value a hash
// may have and stay packed. Hashes already converted stay tables.
func SetHashPackLimits(entries, value int64) {
	maxPackEntries.Store(entries)
	maxPackValue.Store(value)
}

// NewHash returns an empty hash, outside the keyspace.
func NewHash() *Hash {
	v := NewHashValue()
	return (*Hash)(&v)
}

// NewHashValue returns an empty hash as a value to store in the keyspace.
func NewHashValue() store.Value { return store.PackedValue(store.KindHash, nil, 0) }

// Value returns the hash as a value to store in the keyspace. The hash's memory goes with it:
// do not use h afterwards (use the stored entry's Obj()).
func (h *Hash) Value() store.Value { return store.Value(*h) }

func (h *Hash) val() *store.Value { return (*store.Value)(h) }

// table returns the large encoding, or nil while packed.
func (h *Hash) table() *Table { return (*Table)(h.val().Direct()) }

// Len is the number of fields.
func (h *Hash) Len() int {
	if t := h.table(); t != nil {
		return t.Len()
	}
	_, n := h.val().Packed()
	return n
}

// Encoding is OBJECT ENCODING's answer.
func (h *Hash) Encoding() string {
	if h.table() != nil {
		return "hashtable"
	}
	return "listpack"
}

// packNext decodes the string at p[i:], returning it and the offset after it.
func packNext(p []byte, i int) (string, int) {
	l, n := binary.Uvarint(p[i:])
	i += n
	return unsafe.String(unsafe.SliceData(p[i:]), int(l)), i + int(l)
}

// hashPackFind returns the offsets of field's entry and of its value in p, or -1.
func hashPackFind(p []byte, field string) (entry, value int) {
	for i := 0; i < len(p); {
		f, vi := packNext(p, i)
		_, next := packNext(p, vi)
		if f == field {
			return i, vi
		}
		i = next
	}
	return -1, -1
}

// Get returns field's value. The string aliases the hash: copy it before the hash changes.
func (h *Hash) Get(field string) (string, bool) {
	if t := h.table(); t != nil {
		return t.Get(field)
	}
	p, _ := h.val().Packed()
	if _, vi := hashPackFind(p, field); vi >= 0 {
		v, _ := packNext(p, vi)
		return v, true
	}
	return "", false
}

func appendPacked(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Set stores field = value and reports whether the field is new. Both are copied.
func (h *Hash) Set(field, value string) bool {
	t := h.table()
	if t == nil && (int64(len(field)) > maxPackValue.Load() || int64(len(value)) > maxPackValue.Load()) {
		t = h.convert()
	}
	if t != nil {
		return t.Set(field, value)
	}
	p, n := h.val().Packed()
	if ei, vi := hashPackFind(p, field); ei >= 0 {
		_, end := packNext(p, vi)
		h.val().SetPacked(packSplice(p, vi, end, nil, value), n)
		return false
	}
	if int64(n+1) > maxPackEntries.Load() {
		return h.convert().Set(field, value)
	}
	h.val().SetPacked(packSplice(p, len(p), len(p), nil, field, value), n+1)
	return true
}

// Reserve makes room for the packed fields and values in args before a command adds them
// all (HSET with many pairs), so that the packed encoding is allocated once rather than once
// per field: the room is exact when every field is new. It changes nothing else.
func (h *Hash) Reserve(args [][]byte) {
	p, n := h.val().Packed()
	if h.table() != nil || int64(n+len(args)/2) > maxPackEntries.Load() {
		return
	}
	need := len(p)
	for _, a := range args {
		need += uvarintLen(uint64(len(a))) + len(a)
	}
	if need <= cap(p) {
		return
	}
	q := allocPack(need)[:len(p)]
	copy(q, p)
	h.val().SetPacked(q, n)
}

// Compact gives back what Reserve over-estimated once a command is done adding.
func (h *Hash) Compact() {
	if p, n := h.val().Packed(); h.table() == nil && wasteful(len(p), cap(p)) {
		h.val().SetPacked(exactCopy(p), n)
	}
}

// convert moves a packed hash into a Table and returns it.
func (h *Hash) convert() *Table {
	t := &Table{}
	h.Each(func(f, v string) bool {
		t.Set(f, v)
		return true
	})
	h.val().SetDirect(unsafe.Pointer(t))
	return t
}

// Delete removes field and reports whether it was there.
func (h *Hash) Delete(field string) bool {
	if t := h.table(); t != nil {
		return t.Delete(field)
	}
	p, n := h.val().Packed()
	ei, vi := hashPackFind(p, field)
	if ei < 0 {
		return false
	}
	_, end := packNext(p, vi)
	h.val().SetPacked(packSplice(p, ei, end, nil), n-1)
	return true
}

// Each calls fn for every pair, in the hash's order, until fn returns false. The strings
// alias the hash.
func (h *Hash) Each(fn func(field, value string) bool) {
	if t := h.table(); t != nil {
		t.Each(fn)
		return
	}
	p, _ := h.val().Packed()
	for i := 0; i < len(p); {
		f, vi := packNext(p, i)
		v, next := packNext(p, vi)
		if !fn(f, v) {
			return
		}
		i = next
	}
}

// Random returns a random pair.
func (h *Hash) Random(rnd func(n uint64) uint64) (field, value string) {
	if t := h.table(); t != nil {
		return t.Random(rnd)
	}
	k := int(rnd(uint64(h.Len())))
	h.Each(func(f, v string) bool {
		field, value = f, v
		k--
		return k >= 0
	})
	return field, value
}

// Scan is HSCAN's step: a packed hash returns everything at once (cursor 0 next), as Redis
// does for listpacks; a table walks its buckets.
func (h *Hash) Scan(cursor uint64, fn func(field, value string)) uint64 {
	if t := h.table(); t != nil {
		return t.Scan(cursor, fn)
	}
	h.Each(func(f, v string) bool {
		fn(f, v)
		return true
	})
	return 0
}

// Packed reports whether the hash uses the small encoding.
func (h *Hash) Packed() bool { return h.table() == nil }

// Clone implements store.Cloner: a copy outside the keyspace.
func (h *Hash) Clone() any {
	v := h.CloneValue()
	return (*Hash)(&v)
}

// CloneValue implements store.ValueCloner: a copy sharing no memory with h.
func (h *Hash) CloneValue() store.Value {
	if t := h.table(); t != nil {
		return store.DirectValue(store.KindHash, unsafe.Pointer(t.Clone()))
	}
	p, n := h.val().Packed()
	return store.PackedValue(store.KindHash, exactCopy(p), n)
}

// MemoryUsage implements MEMORY USAGE's estimate (every field is counted; samples is ignored).
// A packed hash is its bytes alone: the value holds them without a struct.
func (h *Hash) MemoryUsage(samples int) int64 {
	if t := h.table(); t != nil {
		return int64(unsafe.Sizeof(Table{})) + t.Bytes()
	}
	p, _ := h.val().Packed()
	return int64(cap(p))
}

// AppendPayload appends the hash's snapshot payload: uvarint count, then each field and value
// as uvarint length and bytes (the packed form's layout, whatever the encoding).
func (h *Hash) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(h.Len()))
	if t := h.table(); t != nil {
		t.Each(func(f, v string) bool {
			dst = appendPacked(appendPacked(dst, f), v)
			return true
		})
		return dst
	}
	p, _ := h.val().Packed()
	return append(dst, p...)
}

// ErrBadPayload is returned for a payload that does not decode.
var ErrBadPayload = errors.New("malformed hash payload")

// HashFromPayload decodes AppendPayload's output, copying what it keeps.
func HashFromPayload(p []byte) (*Hash, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil, ErrBadPayload
	}
	p = p[k:]
	h := NewHash()
	if n <= uint64(maxPackEntries.Load()) {
		q := allocPack(len(p))[:0] // the payload's strings are the packed layout: exact room
		h.val().SetPacked(q, 0)
	}
	seen := 0
	for i := 0; i < len(p); {
		var f, v string
		var ok bool
		if f, i, ok = readPacked(p, i); !ok {
			return nil, ErrBadPayload
		}
		if v, i, ok = readPacked(p, i); !ok {
			return nil, ErrBadPayload
		}
		if !h.Set(f, v) { // Set copies both into the hash
			return nil, errors.New("duplicate field in hash payload")
		}
		seen++
	}
	if uint64(seen) != n || seen == 0 {
		return nil, ErrBadPayload
	}
	h.Compact()
	return h, nil
}

func readPacked(p []byte, i int) (string, int, bool) {
	l, n := binary.Uvarint(p[i:])
	if n <= 0 || l > uint64(len(p)-i-n) {
		return "", 0, false
	}
	i += n
	return unsafe.String(unsafe.SliceData(p[i:]), int(l)), i + int(l), true
}

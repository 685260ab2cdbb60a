package types

import (
	"encoding/binary"
	"errors"
	"sync/atomic"
	"unsafe"
)

// Hash is a Redis hash. Small hashes are one packed byte string of (field, value) pairs, each
// string prefixed with its length as a uvarint, like Redis's listpack: a hash of a few short
// fields costs one allocation and a few bytes per field, and operations scan it linearly.
// Past MaxPackEntries fields, or once a field or value is longer than MaxPackValue, it turns
// into a Table for good (Redis does not convert back either): see SetHashPackLimits.
type Hash struct {
	pack  []byte // the small encoding; nil once big
	n     int    // fields in pack
	table *Table // the large encoding
}

// Limits of the packed encoding, hash-max-listpack-entries and hash-max-listpack-value (Redis's
// defaults 512 and 64). They are process-wide, as the server's configuration is, and atomic
// because CONFIG SET changes them while commands run.
var maxPackEntries, maxPackValue atomic.Int64

func init() { SetHashPackLimits(512, 64) }

// SetHashPackLimits sets the largest number of fields and the longest field or value a hash
// may have and stay packed. Hashes already converted stay tables.
func SetHashPackLimits(entries, value int64) {
	maxPackEntries.Store(entries)
	maxPackValue.Store(value)
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{} }

// Len is the number of fields.
func (h *Hash) Len() int {
	if h.table != nil {
		return h.table.Len()
	}
	return h.n
}

// Encoding is OBJECT ENCODING's answer.
func (h *Hash) Encoding() string {
	if h.table != nil {
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

// packFind returns the offsets of field's entry and of its value, or -1.
func (h *Hash) packFind(field string) (entry, value int) {
	for i := 0; i < len(h.pack); {
		f, vi := packNext(h.pack, i)
		_, next := packNext(h.pack, vi)
		if f == field {
			return i, vi
		}
		i = next
	}
	return -1, -1
}

// Get returns field's value. The string aliases the hash: copy it before the hash changes.
func (h *Hash) Get(field string) (string, bool) {
	if h.table != nil {
		return h.table.Get(field)
	}
	if _, vi := h.packFind(field); vi >= 0 {
		v, _ := packNext(h.pack, vi)
		return v, true
	}
	return "", false
}

func appendPacked(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Set stores field = value and reports whether the field is new.
func (h *Hash) Set(field, value string) bool {
	if h.table == nil && (int64(len(field)) > maxPackValue.Load() || int64(len(value)) > maxPackValue.Load()) {
		h.convert()
	}
	if h.table != nil {
		return h.table.Set(field, value)
	}
	if ei, vi := h.packFind(field); ei >= 0 {
		_, end := packNext(h.pack, vi)
		// Splice the new value in place of the old one.
		tail := append([]byte(nil), h.pack[end:]...)
		h.pack = append(appendPacked(h.pack[:vi], value), tail...)
		return false
	}
	if int64(h.n+1) > maxPackEntries.Load() {
		h.convert()
		return h.table.Set(field, value)
	}
	h.pack = appendPacked(appendPacked(h.pack, field), value)
	h.n++
	return true
}

// convert moves a packed hash into a Table.
func (h *Hash) convert() {
	t := &Table{}
	h.Each(func(f, v string) bool {
		t.Set(f, v)
		return true
	})
	h.table, h.pack, h.n = t, nil, 0
}

// Delete removes field and reports whether it was there.
func (h *Hash) Delete(field string) bool {
	if h.table != nil {
		return h.table.Delete(field)
	}
	ei, vi := h.packFind(field)
	if ei < 0 {
		return false
	}
	_, end := packNext(h.pack, vi)
	h.pack = append(h.pack[:ei], h.pack[end:]...)
	h.n--
	return true
}

// Each calls fn for every pair, in the hash's order, until fn returns false. The strings
// alias the hash.
func (h *Hash) Each(fn func(field, value string) bool) {
	if h.table != nil {
		h.table.Each(fn)
		return
	}
	for i := 0; i < len(h.pack); {
		f, vi := packNext(h.pack, i)
		v, next := packNext(h.pack, vi)
		if !fn(f, v) {
			return
		}
		i = next
	}
}

// Random returns a random pair.
func (h *Hash) Random(rnd func(n uint64) uint64) (field, value string) {
	if h.table != nil {
		return h.table.Random(rnd)
	}
	k := int(rnd(uint64(h.n)))
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
	if h.table != nil {
		return h.table.Scan(cursor, fn)
	}
	h.Each(func(f, v string) bool {
		fn(f, v)
		return true
	})
	return 0
}

// Packed reports whether the hash uses the small encoding.
func (h *Hash) Packed() bool { return h.table == nil }

// Clone implements store.Cloner.
func (h *Hash) Clone() any {
	if h.table != nil {
		return &Hash{table: h.table.Clone()}
	}
	return &Hash{pack: append([]byte(nil), h.pack...), n: h.n}
}

// MemoryUsage implements MEMORY USAGE's estimate (every field is counted; samples is ignored).
func (h *Hash) MemoryUsage(samples int) int64 {
	if h.table != nil {
		return 24 + h.table.Bytes()
	}
	return 32 + int64(cap(h.pack))
}

// AppendPayload appends the hash's snapshot payload: uvarint count, then each field and value
// as uvarint length and bytes (the packed form's layout, whatever the encoding).
func (h *Hash) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(h.Len()))
	if h.table == nil {
		return append(dst, h.pack...)
	}
	h.table.Each(func(f, v string) bool {
		dst = appendPacked(appendPacked(dst, f), v)
		return true
	})
	return dst
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

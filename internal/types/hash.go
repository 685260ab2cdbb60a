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
//   - "listpackex" once a field of a packed hash got a TTL (HEXPIRE and friends), as in Redis
//     7.4: each entry carries a third uvarint, the field's absolute expiry in Unix ms (0 for
//     none), and entries are kept in expiry order, fields without one last, as Redis orders
//     its listpackex; so the earliest expiry is the first entry's. The value's variant marks
//     the layout, and a hash never goes back to the plain one (Redis does not either).
//   - "hashtable" past MaxPackEntries fields, or once a field or value is longer than
//     MaxPackValue (see SetHashPackLimits): the value points straight at a hashTable, a Table
//     plus the TTLs of the fields that have one. A hash does not convert back.
//
// Field TTLs (Redis 7.4's hash field expiration) are absolute. Reading methods do not look at
// the clock: the command layer expires due fields first (ExpireFields, through
// store.DB.ExpireFieldsIfDue), so no command sees an expired field. Len counts every field.
//
// A Hash outside the keyspace (NewHash, HashFromPayload, Clone) is handed to it by Value.
type Hash store.Value

// hashTable is a large hash: the table and, for the fields with a TTL, their expiry.
type hashTable struct {
	Table
	ttl map[string]int64
	// minTTL is at or before the earliest expiry in ttl (it may be stale after the field with
	// that expiry went; ExpireFields makes it exact).
	minTTL int64
}

// variantTTL marks a packed hash whose entries carry TTLs (listpackex).
const variantTTL = 1

func init() {
	store.RegisterInline(store.KindHash, func(v *store.Value) any { return (*Hash)(v) })
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

// big returns the large encoding, or nil while packed.
func (h *Hash) big() *hashTable { return (*hashTable)(h.val().Direct()) }

// table returns the large encoding's table, or nil while packed.
func (h *Hash) table() *Table {
	if b := h.big(); b != nil {
		return &b.Table
	}
	return nil
}

// ex reports whether a packed hash uses the listpackex layout.
func (h *Hash) ex() bool { return h.val().Variant() == variantTTL }

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
	switch {
	case h.table() != nil:
		return "hashtable"
	case h.ex():
		return "listpackex"
	}
	return "listpack"
}

// packNext decodes the string at p[i:], returning it and the offset after it.
func packNext(p []byte, i int) (string, int) {
	l, n := binary.Uvarint(p[i:])
	i += n
	return unsafe.String(unsafe.SliceData(p[i:]), int(l)), i + int(l)
}

// hashEntry decodes the entry at p[i:]: its field, the offset of its value, its TTL (0 for
// none, or in a plain layout) and the offset of the next entry.
func hashEntry(p []byte, i int, ex bool) (field string, vi int, ttl int64, next int) {
	field, vi = packNext(p, i)
	_, next = packNext(p, vi)
	if ex {
		t, n := binary.Uvarint(p[next:])
		ttl, next = int64(t), next+n
	}
	return field, vi, ttl, next
}

// hashPackFind returns the offset of field's entry (-1 when missing), of its value, its TTL
// and the offset after the entry.
func hashPackFind(p []byte, field string, ex bool) (entry, value int, ttl int64, next int) {
	for i := 0; i < len(p); {
		f, vi, t, nx := hashEntry(p, i, ex)
		if f == field {
			return i, vi, t, nx
		}
		i = nx
	}
	return -1, -1, 0, 0
}

// Get returns field's value. The string aliases the hash: copy it before the hash changes.
func (h *Hash) Get(field string) (string, bool) {
	if t := h.table(); t != nil {
		return t.Get(field)
	}
	p, _ := h.val().Packed()
	if _, vi, _, _ := hashPackFind(p, field, h.ex()); vi >= 0 {
		v, _ := packNext(p, vi)
		return v, true
	}
	return "", false
}

func appendPacked(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// Set stores field = value and reports whether the field is new. Both are copied. An existing
// field loses its TTL, as HSET's overwrite does in Redis 7.4.
func (h *Hash) Set(field, value string) bool { return h.set(field, value, false) }

// SetKeepTTL is Set for changes of a value in place (HINCRBY, HINCRBYFLOAT): the field keeps
// its TTL, as Redis 7.4 keeps it.
func (h *Hash) SetKeepTTL(field, value string) bool { return h.set(field, value, true) }

func (h *Hash) set(field, value string, keepTTL bool) bool {
	b := h.big()
	if b == nil && (int64(len(field)) > maxPackValue.Load() || int64(len(value)) > maxPackValue.Load()) {
		b = h.convert()
	}
	if b != nil {
		isNew := b.Table.Set(field, value)
		if !isNew && !keepTTL && len(b.ttl) > 0 {
			delete(b.ttl, field)
		}
		return isNew
	}
	p, n := h.val().Packed()
	ex := h.ex()
	if ei, vi, ttl, end := hashPackFind(p, field, ex); ei >= 0 {
		if !ex || ttl == 0 || keepTTL {
			// The value changes in place; a listpackex entry's TTL after it stays.
			_, vend := packNext(p, vi)
			h.val().SetPacked(packSplice(p, vi, vend, nil, value), n)
			return false
		}
		// The TTL goes and the field moves among those without one, at the end.
		f, v := unaliased(p, field), unaliased(p, value)
		p = packSplice(p, ei, end, nil)
		h.val().SetPacked(packSplice(p, len(p), len(p), nil, f, v), n)
		h.appendNoTTL()
		return false
	}
	if int64(n+1) > maxPackEntries.Load() {
		return h.convert().Table.Set(field, value)
	}
	h.val().SetPacked(packSplice(p, len(p), len(p), nil, field, value), n+1)
	if ex {
		h.appendNoTTL()
	}
	return true
}

// appendNoTTL appends the TTL 0 that completes a listpackex entry just appended without one.
func (h *Hash) appendNoTTL() {
	p, n := h.val().Packed()
	h.val().SetPacked(packSplice(p, len(p), len(p), []byte{0}), n)
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
	if h.ex() {
		need += len(args) / 2
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

// convert moves a packed hash into a hashTable and returns it.
func (h *Hash) convert() *hashTable {
	b := &hashTable{}
	p, _ := h.val().Packed()
	ex := h.ex()
	for i := 0; i < len(p); {
		f, vi, ttl, next := hashEntry(p, i, ex)
		v, _ := packNext(p, vi)
		b.Table.Set(f, v)
		if ttl != 0 {
			b.setTTL(f, ttl)
		}
		i = next
	}
	h.val().SetDirect(unsafe.Pointer(b))
	return b
}

func (b *hashTable) setTTL(field string, at int64) {
	if b.ttl == nil {
		b.ttl = make(map[string]int64)
	}
	if s := b.find(field, hashOf(field)); s != nil {
		b.ttl[s.field()] = at // the table's copy of the name: no allocation
	}
	if len(b.ttl) == 1 || at < b.minTTL {
		b.minTTL = at
	}
}

// Delete removes field and reports whether it was there.
func (h *Hash) Delete(field string) bool {
	if b := h.big(); b != nil {
		if len(b.ttl) > 0 {
			delete(b.ttl, field)
		}
		return b.Table.Delete(field)
	}
	p, n := h.val().Packed()
	ei, _, _, end := hashPackFind(p, field, h.ex())
	if ei < 0 {
		return false
	}
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
	ex := h.ex()
	for i := 0; i < len(p); {
		f, vi, _, next := hashEntry(p, i, ex)
		v, _ := packNext(p, vi)
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

// ---- field TTLs ----

// FieldExpiry returns field's expiry in absolute Unix ms (0 for none) and whether the field
// exists.
func (h *Hash) FieldExpiry(field string) (at int64, exists bool) {
	if b := h.big(); b != nil {
		if _, ok := b.Get(field); !ok {
			return 0, false
		}
		return b.ttl[field], true
	}
	p, _ := h.val().Packed()
	ei, _, ttl, _ := hashPackFind(p, field, h.ex())
	return ttl, ei >= 0
}

// SetFieldExpiry gives an existing field the expiry at (absolute Unix ms, > 0) and reports
// whether the field exists. A packed hash turns listpackex, and the entry moves to its place
// in expiry order (after the fields expiring at the same time).
func (h *Hash) SetFieldExpiry(field string, at int64) bool {
	if b := h.big(); b != nil {
		if _, ok := b.Get(field); !ok {
			return false
		}
		b.setTTL(field, at)
		return true
	}
	h.toEx()
	p, n := h.val().Packed()
	ei, vi, _, end := hashPackFind(p, field, true)
	if ei < 0 {
		return false
	}
	f, _ := packNext(p, ei)
	v, _ := packNext(p, vi)
	f, v = string([]byte(f)), string([]byte(v)) // the entry moves: copy it out first
	h.val().SetPacked(packSplice(p, ei, end, nil), n-1)
	h.packInsertTTL(f, v, at)
	return true
}

// packInsertTTL inserts (field, value, at) into a listpackex hash in expiry order.
func (h *Hash) packInsertTTL(field, value string, at int64) {
	p, n := h.val().Packed()
	pos := len(p)
	for i := 0; i < len(p); {
		_, _, ttl, next := hashEntry(p, i, true)
		if ttl == 0 || ttl > at {
			pos = i
			break
		}
		i = next
	}
	var buf [binary.MaxVarintLen64]byte
	tail := binary.PutUvarint(buf[:], uint64(at))
	// field, value, then the TTL: splice the strings, then the TTL after them.
	p = packSplice(p, pos, pos, nil, field, value)
	after := pos + uvarintLen(uint64(len(field))) + len(field) + uvarintLen(uint64(len(value))) + len(value)
	h.val().SetPacked(packSplice(p, after, after, buf[:tail]), n+1)
}

// toEx turns a plain packed hash into the listpackex layout: every entry gets TTL 0, in place.
func (h *Hash) toEx() {
	if h.ex() || h.table() != nil {
		return
	}
	p, n := h.val().Packed()
	out := allocPack(len(p) + n)[:0]
	for i := 0; i < len(p); {
		_, vi := packNext(p, i)
		_, next := packNext(p, vi)
		out = append(append(out, p[i:next]...), 0)
		i = next
	}
	h.val().SetPacked(out, n)
	h.val().SetVariant(variantTTL)
}

// PersistField removes field's TTL and reports whether it had one. In listpackex the field
// moves to the end, among the fields without a TTL, as Redis moves it.
func (h *Hash) PersistField(field string) bool {
	if b := h.big(); b != nil {
		if _, ok := b.ttl[field]; !ok {
			return false
		}
		delete(b.ttl, field)
		return true
	}
	if !h.ex() {
		return false
	}
	p, n := h.val().Packed()
	ei, vi, ttl, end := hashPackFind(p, field, true)
	if ei < 0 || ttl == 0 {
		return false
	}
	f, _ := packNext(p, ei)
	v, _ := packNext(p, vi)
	f, v = string([]byte(f)), string([]byte(v))
	p = packSplice(p, ei, end, nil)
	h.val().SetPacked(packSplice(p, len(p), len(p), nil, f, v), n)
	h.appendNoTTL()
	return true
}

// NextFieldExpiry implements store.FieldExpirer: the earliest field expiry, 0 for none.
func (h *Hash) NextFieldExpiry() int64 {
	if b := h.big(); b != nil {
		if len(b.ttl) == 0 {
			return 0
		}
		return b.minTTL
	}
	if !h.ex() {
		return 0
	}
	p, _ := h.val().Packed()
	if len(p) == 0 {
		return 0
	}
	_, _, ttl, _ := hashEntry(p, 0, true)
	return ttl
}

// ExpireFields implements store.FieldExpirer: it deletes the fields whose expiry is before
// now, calling deleted (when not nil) with each name, and returns the next expiry.
func (h *Hash) ExpireFields(now int64, deleted func(field string)) int64 {
	if b := h.big(); b != nil {
		if len(b.ttl) == 0 {
			return 0
		}
		next := int64(0)
		for f, at := range b.ttl {
			if at < now {
				if deleted != nil {
					deleted(f)
				}
				delete(b.ttl, f)
				b.Table.Delete(f)
			} else if next == 0 || at < next {
				next = at
			}
		}
		b.minTTL = next
		return next
	}
	if !h.ex() {
		return 0
	}
	for {
		p, n := h.val().Packed()
		if len(p) == 0 {
			return 0
		}
		f, _, ttl, end := hashEntry(p, 0, true)
		if ttl == 0 || ttl >= now {
			return ttl
		}
		if deleted != nil {
			deleted(f)
		}
		h.val().SetPacked(packSplice(p, 0, end, nil), n-1)
	}
}

// HasFieldTTLs reports whether some field has a TTL.
func (h *Hash) HasFieldTTLs() bool { return h.NextFieldExpiry() != 0 }

// ---- copies, sizes and payloads ----

// Clone implements store.Cloner: a copy outside the keyspace.
func (h *Hash) Clone() any {
	v := h.CloneValue()
	return (*Hash)(&v)
}

// CloneValue implements store.ValueCloner: a copy sharing no memory with h, TTLs included.
func (h *Hash) CloneValue() store.Value {
	if b := h.big(); b != nil {
		c := &hashTable{Table: *b.Table.Clone()}
		for f, at := range b.ttl {
			c.setTTL(f, at)
		}
		return store.DirectValue(store.KindHash, unsafe.Pointer(c))
	}
	p, n := h.val().Packed()
	v := store.PackedValue(store.KindHash, exactCopy(p), n)
	v.SetVariant(h.val().Variant())
	return v
}

// MemoryUsage implements MEMORY USAGE's estimate (every field is counted; samples is ignored).
// A packed hash is its bytes alone: the value holds them without a struct.
func (h *Hash) MemoryUsage(samples int) int64 {
	if b := h.big(); b != nil {
		return int64(unsafe.Sizeof(hashTable{})) + b.Bytes() + int64(len(b.ttl))*32
	}
	p, _ := h.val().Packed()
	return int64(cap(p))
}

// hashPayloadTTL is the first byte of a payload whose fields carry TTLs: an old payload starts
// with its field count, never 0 (no empty hash is saved), so old payloads still load.
const hashPayloadTTL = 0

// AppendPayload appends the hash's snapshot payload: uvarint count, then each field and value
// as uvarint length and bytes (the packed form's layout, whatever the encoding). A hash with
// field TTLs writes a 0, a format version (1), the count, and each field, value and expiry
// (uvarint absolute Unix ms, 0 for none).
func (h *Hash) AppendPayload(dst []byte) []byte {
	if h.HasFieldTTLs() {
		dst = append(dst, hashPayloadTTL, 1)
		dst = binary.AppendUvarint(dst, uint64(h.Len()))
		if b := h.big(); b != nil {
			b.Table.Each(func(f, v string) bool {
				dst = appendPacked(appendPacked(dst, f), v)
				dst = binary.AppendUvarint(dst, uint64(b.ttl[f]))
				return true
			})
			return dst
		}
		p, _ := h.val().Packed()
		return append(dst, p...)
	}
	dst = binary.AppendUvarint(dst, uint64(h.Len()))
	if b := h.big(); b != nil {
		b.Table.Each(func(f, v string) bool {
			dst = appendPacked(appendPacked(dst, f), v)
			return true
		})
		return dst
	}
	p, _ := h.val().Packed()
	if !h.ex() {
		return append(dst, p...)
	}
	for i := 0; i < len(p); { // listpackex without TTLs left: the plain layout
		_, vi, _, next := hashEntry(p, i, true)
		_, vend := packNext(p, vi)
		dst = append(dst, p[i:vend]...)
		i = next
	}
	return dst
}

// ErrBadPayload is returned for a payload that does not decode.
var ErrBadPayload = errors.New("malformed hash payload")

// HashFromPayload decodes AppendPayload's output (either layout), copying what it keeps.
// Fields keep their TTLs, expired or not: the loader drops expired ones (ExpireFields).
func HashFromPayload(p []byte) (*Hash, error) {
	withTTL := false
	if len(p) >= 2 && p[0] == hashPayloadTTL {
		if p[1] != 1 {
			return nil, errors.New("unknown hash payload version")
		}
		withTTL, p = true, p[2:]
	}
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil, ErrBadPayload
	}
	p = p[k:]
	h := NewHash()
	if !withTTL && n <= uint64(maxPackEntries.Load()) {
		q := allocPack(len(p))[:0] // the payload's strings are the packed layout: exact room
		h.val().SetPacked(q, 0)
	}
	type ttlField struct {
		f  string
		at int64
	}
	var ttls []ttlField
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
		if withTTL {
			at, m := binary.Uvarint(p[i:])
			if m <= 0 || at > 1<<62 {
				return nil, ErrBadPayload
			}
			i += m
			if at != 0 {
				ttls = append(ttls, ttlField{f, int64(at)})
			}
		}
		seen++
	}
	if uint64(seen) != n || seen == 0 {
		return nil, ErrBadPayload
	}
	for _, t := range ttls {
		h.SetFieldExpiry(t.f, t.at)
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

package types

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/hotkv/hotkv/internal/store"
)

// ZSet is a Redis sorted set: members ordered by score, then by member bytes. It is defined
// as a store.Value, so that a keyspace entry's value is the set itself (as Hash is). Like
// Redis 7.0 it has two encodings, which OBJECT ENCODING reports:
//
//   - "listpack" while small: the value holds one packed byte string of entries in order and
//     the member count. An entry is its score, then the member as a uvarint length and bytes.
//     A score that is an integer of at most 2^53 in magnitude is a uvarint of its zigzag form
//     shifted left once (1 byte up to ±63, as Redis's listpack stores integer scores as
//     integers); any other score is the byte 1 then its 8 IEEE 754 bytes, little endian.
//     Every operation scans it linearly, as Redis does its listpack; a score of -0 is kept as
//     0, as Redis's listpack (which stores scores as text) does.
//   - "skiplist" past zset-max-listpack-entries members, or once a member is longer than
//     zset-max-listpack-value bytes (see SetZSetPackLimits): the value points at a Table from
//     member to score (its 8 bytes as the value), which answers ZSCORE in O(1) and gives ZSCAN
//     its cursor, plus a skip list with spans, Redis's own structure, for O(log N) ranks and
//     ranges. The skip list's nodes share the member bytes of the Table's entries.
//
// A sorted set never converts back while it lives (Redis does not either); a snapshot reload
// builds it again, small ones packed, as Redis's RDB loading does.
//
// Strings passed to callbacks and returned alias the set: copy them before changing the set.
type ZSet store.Value

// zsetBig is the skip list encoding.
type zsetBig struct {
	dict *Table
	zsl  *skiplist
}

func init() {
	store.RegisterInline(store.KindZSet, func(v *store.Value) any { return (*ZSet)(v) })
}

// Limits of the packed encoding, zset-max-listpack-entries and zset-max-listpack-value
// (Redis's defaults 128 and 64), process-wide and atomic as the hash ones are.
var maxZPackEntries, maxZPackValue atomic.Int64

func init() { SetZSetPackLimits(128, 64) }

// SetZSetPackLimits sets the most members and the longest member a sorted set may have and stay
// packed. Sorted sets already converted stay skip lists.
func SetZSetPackLimits(entries, value int64) {
	maxZPackEntries.Store(entries)
	maxZPackValue.Store(value)
}

// ZSetFitsPack reports whether a sorted set of n members, the longest maxLen bytes, is packed
// when built from scratch under the current limits.
func ZSetFitsPack(n, maxLen int) bool {
	return int64(n) <= maxZPackEntries.Load() && int64(maxLen) <= maxZPackValue.Load()
}

// NewZSet returns an empty sorted set (packed), outside the keyspace.
func NewZSet() *ZSet {
	v := store.PackedValue(store.KindZSet, nil, 0)
	return (*ZSet)(&v)
}

// NewZSetFor returns an empty sorted set in the encoding a set of n members, the longest maxLen
// bytes, ends up in when Redis builds it whole and converts it afterwards if small (ZUNIONSTORE
// and friends, RDB loading): a skip list unless it fits the packed limits. Unlike growing a
// packed set member by member, a skip list built this way keeps scores of -0.
func NewZSetFor(n, maxLen int) *ZSet {
	if ZSetFitsPack(n, maxLen) {
		return NewZSet()
	}
	v := store.DirectValue(store.KindZSet, unsafe.Pointer(&zsetBig{dict: &Table{}, zsl: newSkiplist()}))
	return (*ZSet)(&v)
}

// Value returns the set as a value to store in the keyspace. Its memory goes with it: do not
// use z afterwards (use the stored entry's Obj()).
func (z *ZSet) Value() store.Value { return store.Value(*z) }

func (z *ZSet) val() *store.Value { return (*store.Value)(z) }

// big returns the skip list encoding, or nil while packed.
func (z *ZSet) big() *zsetBig { return (*zsetBig)(z.val().Direct()) }

// Len is the number of members.
func (z *ZSet) Len() int {
	if b := z.big(); b != nil {
		return b.zsl.length
	}
	_, n := z.val().Packed()
	return n
}

// Encoding is OBJECT ENCODING's answer.
func (z *ZSet) Encoding() string {
	if z.big() != nil {
		return "skiplist"
	}
	return "listpack"
}

// Packed reports whether the set uses the small encoding.
func (z *ZSet) Packed() bool { return z.big() == nil }

// ---- ranges ----

// ScoreRange is a score interval as ZRANGEBYSCORE takes it; MinEx and MaxEx make an end open.
type ScoreRange struct {
	Min, Max     float64
	MinEx, MaxEx bool
}

func (r *ScoreRange) gteMin(v float64) bool {
	if r.MinEx {
		return v > r.Min
	}
	return v >= r.Min
}

func (r *ScoreRange) lteMax(v float64) bool {
	if r.MaxEx {
		return v < r.Max
	}
	return v <= r.Max
}

// empty reports a range no score can be in.
func (r *ScoreRange) empty() bool {
	return r.Min > r.Max || (r.Min == r.Max && (r.MinEx || r.MaxEx))
}

// LexBound is one end of a ZRANGEBYLEX range: Inf -1 is "-" (below every string), +1 is "+"
// (above every string), 0 a string Value, included unless Ex.
type LexBound struct {
	Inf   int8
	Value string
	Ex    bool
}

// LexRange is a ZRANGEBYLEX interval.
type LexRange struct{ Min, Max LexBound }

// cmpBound compares a member with a bound, as Redis's sdscmplex does.
func cmpBound(v string, b *LexBound) int {
	switch b.Inf {
	case -1:
		return 1
	case 1:
		return -1
	}
	return strings.Compare(v, b.Value)
}

func (r *LexRange) gteMin(v string) bool {
	c := cmpBound(v, &r.Min)
	if r.Min.Ex {
		return c > 0
	}
	return c >= 0
}

func (r *LexRange) lteMax(v string) bool {
	c := cmpBound(v, &r.Max)
	if r.Max.Ex {
		return c < 0
	}
	return c <= 0
}

func (r *LexRange) empty() bool {
	var c int
	switch {
	case r.Min.Inf != 0 && r.Min.Inf == r.Max.Inf:
		c = 0
	case r.Min.Inf == -1 || r.Max.Inf == 1:
		c = -1
	case r.Min.Inf == 1 || r.Max.Inf == -1:
		c = 1
	default:
		c = strings.Compare(r.Min.Value, r.Max.Value)
	}
	return c > 0 || (c == 0 && (r.Min.Ex || r.Max.Ex))
}

// zless is the set's order: by score, then by member bytes.
func zless(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

// ---- the packed encoding ----

// maxExactInt is the largest magnitude of the integer scores packed as integers: every
// integer up to it is exactly a float64, so the score comes back bit for bit.
const maxExactInt = 1 << 53

// appendZScore appends a packed score (see ZSet).
func appendZScore(dst []byte, score float64) []byte {
	if score == math.Trunc(score) && math.Abs(score) <= maxExactInt {
		i := int64(score) // -0 becomes 0, as Redis's listpack keeps it
		zz := uint64(i<<1) ^ uint64(i>>63)
		return binary.AppendUvarint(dst, zz<<1)
	}
	dst = append(dst, 1)
	return binary.LittleEndian.AppendUint64(dst, math.Float64bits(score))
}

// zpNext decodes the entry at p[i:], returning it and the offset of the next one.
func zpNext(p []byte, i int) (member string, score float64, next int) {
	t, n := binary.Uvarint(p[i:])
	i += n
	if t&1 == 0 {
		zz := t >> 1
		score = float64(int64(zz>>1) ^ -int64(zz&1))
	} else {
		score = math.Float64frombits(binary.LittleEndian.Uint64(p[i:]))
		i += 8
	}
	l, n := binary.Uvarint(p[i:])
	j := i + n
	return unsafe.String(unsafe.SliceData(p[j:]), int(l)), score, j + int(l)
}

// zpEntry splices (member, score) into p at [from, to), returning the new bytes.
func zpSplice(p []byte, from, to int, member string, score float64) []byte {
	var buf [9]byte
	return packSplice(p, from, to, appendZScore(buf[:0], score), member)
}

// packFind returns member's entry offset (-1 when missing), its score and the next offset.
func zpFind(p []byte, member string) (off int, score float64, next int) {
	for i := 0; i < len(p); {
		m, s, nx := zpNext(p, i)
		if m == member {
			return i, s, nx
		}
		i = nx
	}
	return -1, 0, 0
}

// zpInsertAt returns the offset where (member, score) belongs in p's order.
func zpInsertAt(p []byte, member string, score float64) int {
	for i := 0; i < len(p); {
		m, s, nx := zpNext(p, i)
		if zless(score, member, s, m) {
			return i
		}
		i = nx
	}
	return len(p)
}

// zpInsertAtSkip is zpInsertAt over p without the entry at skip: the offset, in p, of the
// first other entry that (member, score) sorts before.
func zpInsertAtSkip(p []byte, member string, score float64, skip int) int {
	for i := 0; i < len(p); {
		m, s, nx := zpNext(p, i)
		if i != skip && zless(score, member, s, m) {
			return i
		}
		i = nx
	}
	return len(p)
}

// packInsert inserts a new entry at its place in the order.
func (z *ZSet) packInsert(member string, score float64) {
	if score == 0 {
		score = 0
	}
	p, n := z.val().Packed()
	at := zpInsertAt(p, member, score)
	z.val().SetPacked(zpSplice(p, at, at, member, score), n+1)
}

// packDeleteRange removes the entries in p[off:next], k of them.
func (z *ZSet) packDeleteRange(off, next, k int) {
	p, n := z.val().Packed()
	z.val().SetPacked(packSplice(p, off, next, nil), n-k)
}

// packOffsets returns the offsets of the first k entries.
func packOffsets(p []byte, k int) []int {
	out := make([]int, 0, k)
	for i := 0; i < len(p) && len(out) < k; {
		out = append(out, i)
		_, _, i = zpNext(p, i)
	}
	return out
}

// convert moves a packed set into the skip list encoding and returns it.
func (z *ZSet) convert() *zsetBig {
	p, _ := z.val().Packed()
	b := &zsetBig{dict: &Table{}, zsl: newSkiplist()}
	for i := 0; i < len(p); {
		m, s, nx := zpNext(p, i)
		b.insert(m, s)
		i = nx
	}
	z.val().SetDirect(unsafe.Pointer(b))
	return b
}

// ---- the skip list encoding's member index ----

// slotScore reads the score a dict slot holds as its 8-byte value.
func slotScore(s *slot) float64 {
	b := (*[8]byte)(unsafe.Add(unsafe.Pointer(s.kv), s.flen))
	return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
}

// setSlotScore changes the score in place: the bytes belong to the set alone.
func setSlotScore(s *slot, f float64) {
	b := (*[8]byte)(unsafe.Add(unsafe.Pointer(s.kv), s.flen))
	binary.LittleEndian.PutUint64(b[:], math.Float64bits(f))
}

func scoreOf(v string) float64 {
	return math.Float64frombits(binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(v), 8)))
}

// insert adds a new member to the dict and the skip list, which shares the dict's copy of
// the member.
func (b *zsetBig) insert(member string, score float64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], math.Float64bits(score))
	b.dict.Set(member, unsafe.String(&buf[0], 8))
	s := b.dict.find(member, hashOf(member))
	b.zsl.insert(score, s.field())
}

// ---- operations ----

// Score returns member's score.
func (z *ZSet) Score(member string) (float64, bool) {
	if b := z.big(); b != nil {
		if s := b.dict.find(member, hashOf(member)); s != nil {
			return slotScore(s), true
		}
		return 0, false
	}
	p, _ := z.val().Packed()
	if off, s, _ := zpFind(p, member); off >= 0 {
		return s, true
	}
	return 0, false
}

// Set adds member with score, or moves an existing member to score, and reports whether the
// member is new. score must not be NaN. A packed set converts when the new member would make
// it too large, as Redis's zsetAdd checks before inserting. The member is copied.
func (z *ZSet) Set(member string, score float64) bool {
	b := z.big()
	if b == nil {
		p, n := z.val().Packed()
		if off, cur, next := zpFind(p, member); off >= 0 {
			if cur != score {
				if score == 0 {
					score = 0
				}
				// In place when the new score keeps the member between the same neighbours
				// (zpSplice copies member first if it aliases the entry it replaces),
				// otherwise removed and inserted again.
				if zpInsertAtSkip(p, member, score, off) == next {
					z.val().SetPacked(zpSplice(p, off, next, member, score), n)
					return false
				}
				m := strings.Clone(member) // member may alias the entry being removed
				z.packDeleteRange(off, next, 1)
				z.packInsert(m, score)
			}
			return false
		}
		if int64(n+1) <= maxZPackEntries.Load() && int64(len(member)) <= maxZPackValue.Load() {
			z.packInsert(member, score)
			return true
		}
		b = z.convert()
	}
	if s := b.dict.find(member, hashOf(member)); s != nil {
		if cur := slotScore(s); cur != score {
			b.zsl.updateScore(cur, s.field(), score)
			setSlotScore(s, score)
		}
		return false
	}
	b.insert(member, score)
	return true
}

// Delete removes member and reports whether it was there.
func (z *ZSet) Delete(member string) bool {
	b := z.big()
	if b == nil {
		p, _ := z.val().Packed()
		off, _, next := zpFind(p, member)
		if off < 0 {
			return false
		}
		z.packDeleteRange(off, next, 1)
		return true
	}
	s := b.dict.find(member, hashOf(member))
	if s == nil {
		return false
	}
	score, field := slotScore(s), s.field()
	b.zsl.delete(score, field)
	b.dict.Delete(field)
	return true
}

// Rank returns member's 0-based rank in ascending order.
func (z *ZSet) Rank(member string) (int, bool) {
	b := z.big()
	if b == nil {
		p, _ := z.val().Packed()
		rank := 0
		for i := 0; i < len(p); rank++ {
			m, _, nx := zpNext(p, i)
			if m == member {
				return rank, true
			}
			i = nx
		}
		return 0, false
	}
	s := b.dict.find(member, hashOf(member))
	if s == nil {
		return 0, false
	}
	return b.zsl.getRank(slotScore(s), s.field()) - 1, true
}

// Walk calls fn for the members from the one at rank (0-based, ascending) towards the highest
// score, or with rev towards the lowest, until fn returns false or the set ends.
func (z *ZSet) Walk(rank int, rev bool, fn func(member string, score float64) bool) {
	n := z.Len()
	if rank < 0 || rank >= n {
		return
	}
	if b := z.big(); b != nil {
		var x *zslNode
		switch rank {
		case 0:
			x = b.zsl.header.level[0].forward
		case n - 1:
			x = b.zsl.tail
		default:
			x = b.zsl.getByRank(rank + 1)
		}
		for x != nil && fn(x.member, x.score) {
			if rev {
				x = x.backward
			} else {
				x = x.level[0].forward
			}
		}
		return
	}
	p, _ := z.val().Packed()
	if !rev {
		k := 0
		for i := 0; i < len(p); k++ {
			m, s, nx := zpNext(p, i)
			if k >= rank && !fn(m, s) {
				return
			}
			i = nx
		}
		return
	}
	var stack [128]int
	offs := stack[:0]
	for i := 0; i < len(p) && len(offs) <= rank; {
		offs = append(offs, i)
		_, _, i = zpNext(p, i)
	}
	for k := len(offs) - 1; k >= 0; k-- {
		m, s, _ := zpNext(p, offs[k])
		if !fn(m, s) {
			return
		}
	}
}

// Each calls fn for every member in ascending order until fn returns false.
func (z *ZSet) Each(fn func(member string, score float64) bool) { z.Walk(0, false, fn) }

// FirstInScore returns the rank of the first member whose score is in r, or -1.
func (z *ZSet) FirstInScore(r *ScoreRange) int {
	if b := z.big(); b != nil {
		_, rank := b.zsl.firstInRange(r)
		return rank - 1
	}
	if r.empty() {
		return -1
	}
	p, _ := z.val().Packed()
	rank := 0
	for i := 0; i < len(p); rank++ {
		_, s, nx := zpNext(p, i)
		if r.gteMin(s) {
			if r.lteMax(s) {
				return rank
			}
			return -1
		}
		i = nx
	}
	return -1
}

// LastInScore returns the rank of the last member whose score is in r, or -1.
func (z *ZSet) LastInScore(r *ScoreRange) int {
	if b := z.big(); b != nil {
		_, rank := b.zsl.lastInRange(r)
		return rank - 1
	}
	if r.empty() {
		return -1
	}
	p, _ := z.val().Packed()
	last, lastScore := -1, 0.0
	rank := 0
	for i := 0; i < len(p); rank++ {
		_, s, nx := zpNext(p, i)
		if r.lteMax(s) {
			last, lastScore = rank, s
		}
		i = nx
	}
	if last < 0 || !r.gteMin(lastScore) {
		return -1
	}
	return last
}

// packInLex is Redis's zzlIsInLexRange: the range is not empty, the last member is not below
// it and the first not above it.
func packInLex(p []byte, r *LexRange) bool {
	if r.empty() || len(p) == 0 {
		return false
	}
	first, _, _ := zpNext(p, 0)
	var last string
	for i := 0; i < len(p); {
		last, _, i = zpNext(p, i)
	}
	return r.gteMin(last) && r.lteMax(first)
}

// FirstInLex returns the rank of the first member in the lexicographic range r, or -1. Lex
// ranges assume members of equal scores; on others the answer is the encoding's, as in Redis.
func (z *ZSet) FirstInLex(r *LexRange) int {
	if b := z.big(); b != nil {
		_, rank := b.zsl.firstInLex(r)
		return rank - 1
	}
	p, _ := z.val().Packed()
	if !packInLex(p, r) {
		return -1
	}
	rank := 0
	for i := 0; i < len(p); rank++ {
		m, _, nx := zpNext(p, i)
		if r.gteMin(m) {
			if r.lteMax(m) {
				return rank
			}
			return -1
		}
		i = nx
	}
	return -1
}

// LastInLex returns the rank of the last member in the lexicographic range r, or -1.
func (z *ZSet) LastInLex(r *LexRange) int {
	if b := z.big(); b != nil {
		_, rank := b.zsl.lastInLex(r)
		return rank - 1
	}
	p, _ := z.val().Packed()
	if !packInLex(p, r) {
		return -1
	}
	last, lastMember := -1, ""
	rank := 0
	for i := 0; i < len(p); rank++ {
		m, _, nx := zpNext(p, i)
		if r.lteMax(m) {
			last, lastMember = rank, m
		}
		i = nx
	}
	if last < 0 || !r.gteMin(lastMember) {
		return -1
	}
	return last
}

// CountScore is ZCOUNT.
func (z *ZSet) CountScore(r *ScoreRange) int {
	if b := z.big(); b != nil {
		x, first := b.zsl.firstInRange(r)
		if x == nil {
			return 0
		}
		count := b.zsl.length - (first - 1)
		if y, last := b.zsl.lastInRange(r); y != nil {
			count -= b.zsl.length - last
		}
		return count
	}
	first := z.FirstInScore(r)
	if first < 0 {
		return 0
	}
	count := 0
	z.Walk(first, false, func(_ string, s float64) bool {
		if !r.lteMax(s) {
			return false
		}
		count++
		return true
	})
	return count
}

// CountLex is ZLEXCOUNT.
func (z *ZSet) CountLex(r *LexRange) int {
	if b := z.big(); b != nil {
		x, first := b.zsl.firstInLex(r)
		if x == nil {
			return 0
		}
		count := b.zsl.length - (first - 1)
		if y, last := b.zsl.lastInLex(r); y != nil {
			count -= b.zsl.length - last
		}
		return count
	}
	first := z.FirstInLex(r)
	if first < 0 {
		return 0
	}
	count := 0
	z.Walk(first, false, func(m string, _ float64) bool {
		if !r.lteMax(m) {
			return false
		}
		count++
		return true
	})
	return count
}

// DeleteRangeByRank removes the members ranked start to end (0-based, inclusive, within the
// set) and returns how many went.
func (z *ZSet) DeleteRangeByRank(start, end int) int {
	if b := z.big(); b != nil {
		return b.zsl.deleteRangeByRank(start+1, end+1, b.dict)
	}
	p, _ := z.val().Packed()
	offs := packOffsets(p, end+2)
	from := offs[start]
	to := len(p)
	if end+1 < len(offs) {
		to = offs[end+1]
	}
	z.packDeleteRange(from, to, end-start+1)
	return end - start + 1
}

// DeleteRangeByScore removes the members whose score is in r and returns how many went.
func (z *ZSet) DeleteRangeByScore(r *ScoreRange) int {
	if b := z.big(); b != nil {
		return b.zsl.deleteRangeByScore(r, b.dict)
	}
	first := z.FirstInScore(r)
	if first < 0 {
		return 0
	}
	n := 0
	z.Walk(first, false, func(_ string, s float64) bool {
		if !r.lteMax(s) {
			return false
		}
		n++
		return true
	})
	return z.DeleteRangeByRank(first, first+n-1)
}

// DeleteRangeByLex removes the members in the lexicographic range r and returns how many went.
func (z *ZSet) DeleteRangeByLex(r *LexRange) int {
	if b := z.big(); b != nil {
		return b.zsl.deleteRangeByLex(r, b.dict)
	}
	first := z.FirstInLex(r)
	if first < 0 {
		return 0
	}
	n := 0
	z.Walk(first, false, func(m string, _ float64) bool {
		if !r.lteMax(m) {
			return false
		}
		n++
		return true
	})
	return z.DeleteRangeByRank(first, first+n-1)
}

// Random returns a random member, drawing numbers from rnd (which returns [0, n)).
func (z *ZSet) Random(rnd func(n uint64) uint64) (member string, score float64) {
	if b := z.big(); b != nil {
		f, v := b.dict.Random(rnd)
		return f, scoreOf(v)
	}
	n := z.Len()
	if n == 0 {
		return "", 0
	}
	k := int(rnd(uint64(n)))
	z.Walk(k, false, func(m string, s float64) bool {
		member, score = m, s
		return false
	})
	return member, score
}

// Scan is ZSCAN's step: a packed set returns everything at once (cursor 0 next), as Redis
// does for listpacks; a skip list walks its dict's buckets.
func (z *ZSet) Scan(cursor uint64, fn func(member string, score float64)) uint64 {
	if b := z.big(); b != nil {
		return b.dict.Scan(cursor, func(f, v string) { fn(f, scoreOf(v)) })
	}
	z.Each(func(m string, s float64) bool {
		fn(m, s)
		return true
	})
	return 0
}

// Clone implements store.Cloner: a copy outside the keyspace.
func (z *ZSet) Clone() any {
	v := z.CloneValue()
	return (*ZSet)(&v)
}

// CloneValue implements store.ValueCloner: a copy sharing no memory with z.
func (z *ZSet) CloneValue() store.Value {
	b := z.big()
	if b == nil {
		p, n := z.val().Packed()
		return store.PackedValue(store.KindZSet, exactCopy(p), n)
	}
	c := &zsetBig{dict: &Table{}, zsl: newSkiplist()}
	// From the highest down: each insertion stops at the head.
	for x := b.zsl.tail; x != nil; x = x.backward {
		c.insert(x.member, x.score)
	}
	return store.DirectValue(store.KindZSet, unsafe.Pointer(c))
}

// MemoryUsage implements MEMORY USAGE's estimate (every member is counted; samples is ignored).
// A packed set is its bytes alone: the value holds them without a struct.
func (z *ZSet) MemoryUsage(samples int) int64 {
	b := z.big()
	if b == nil {
		p, _ := z.val().Packed()
		return int64(cap(p))
	}
	n := int64(unsafe.Sizeof(zsetBig{})) + 48 + b.dict.Bytes() + int64(zslMaxLevel)*16 + 48
	for x := b.zsl.header.level[0].forward; x != nil; x = x.level[0].forward {
		n += 48 + int64(len(x.level))*16
	}
	return n
}

// AppendPayload appends the set's snapshot payload: uvarint count, then each member in
// ascending order as uvarint length and bytes followed by its score's 8 IEEE 754 bytes, little
// endian.
func (z *ZSet) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(z.Len()))
	z.Each(func(m string, s float64) bool {
		dst = binary.AppendUvarint(dst, uint64(len(m)))
		dst = append(dst, m...)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s))
		return true
	})
	return dst
}

// ErrBadZSetPayload is returned for a sorted set payload that does not decode.
var ErrBadZSetPayload = errors.New("malformed sorted set payload")

// ZSetFromPayload decodes AppendPayload's output, copying what it keeps. It rejects NaN
// scores, duplicate members and an empty set. The encoding follows the final size, as Redis
// loads sorted sets (NewZSetFor).
func ZSetFromPayload(p []byte) (*ZSet, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)) {
		return nil, ErrBadZSetPayload
	}
	p = p[k:]
	type entry struct {
		m string
		s float64
	}
	entries := make([]entry, 0, n)
	maxLen := 0
	for i := 0; i < len(p); {
		var m string
		var ok bool
		if m, i, ok = readPacked(p, i); !ok || len(p)-i < 8 {
			return nil, ErrBadZSetPayload
		}
		s := math.Float64frombits(binary.LittleEndian.Uint64(p[i:]))
		i += 8
		if math.IsNaN(s) {
			return nil, errors.New("NaN score in sorted set payload")
		}
		entries = append(entries, entry{m, s})
		maxLen = max(maxLen, len(m))
	}
	if uint64(len(entries)) != n || n == 0 {
		return nil, ErrBadZSetPayload
	}
	z := NewZSetFor(len(entries), maxLen)
	if z.Packed() {
		// Built in one allocation: sort a copy of the entries, then pack them in order.
		sorted := slices.Clone(entries)
		slices.SortFunc(sorted, func(a, b entry) int {
			if zless(a.s, a.m, b.s, b.m) {
				return -1
			}
			if zless(b.s, b.m, a.s, a.m) {
				return 1
			}
			return 0
		})
		var buf []byte
		for _, e := range sorted {
			buf = appendZScore(buf, e.s)
			buf = appendPacked(buf, e.m)
		}
		z.val().SetPacked(exactCopy(buf), len(sorted))
		seen := make(map[string]struct{}, len(sorted))
		for _, e := range sorted {
			if _, dup := seen[e.m]; dup {
				return nil, errors.New("duplicate member in sorted set payload")
			}
			seen[e.m] = struct{}{}
		}
		return z, nil
	}
	for _, e := range entries {
		if !z.Set(e.m, e.s) { // Set copies the member
			return nil, errors.New("duplicate member in sorted set payload")
		}
	}
	return z, nil
}

// ---- the skip list ----

// zslMaxLevel and the 1/4 probability of each further level are Redis's ZSKIPLIST_MAXLEVEL
// and ZSKIPLIST_P.
const zslMaxLevel = 32

type zslLevel struct {
	forward *zslNode
	span    int // members between this node and forward, counting forward
}

type zslNode struct {
	member   string
	score    float64
	backward *zslNode
	level    []zslLevel
}

// skiplist is Redis's zskiplist: a skip list ordered by (score, member) whose links record how
// many members they skip, so that ranks come out of the same O(log N) descent that finds a
// member, plus backward links at level 0 for reverse walks.
type skiplist struct {
	header *zslNode
	tail   *zslNode
	length int
	level  int
}

func newSkiplist() *skiplist {
	return &skiplist{header: &zslNode{level: make([]zslLevel, zslMaxLevel)}, level: 1}
}

func zslRandomLevel() int {
	level := 1
	for level < zslMaxLevel && rand.Uint32()&0xFFFF < 0xFFFF/4 {
		level++
	}
	return level
}

// newZslNode allocates a node and its levels together for the common heights (three nodes in
// four have one level).
func newZslNode(level int, score float64, member string) *zslNode {
	var x *zslNode
	switch level {
	case 1:
		n := &struct {
			zslNode
			l [1]zslLevel
		}{}
		n.level, x = n.l[:], &n.zslNode
	case 2:
		n := &struct {
			zslNode
			l [2]zslLevel
		}{}
		n.level, x = n.l[:], &n.zslNode
	case 3, 4:
		n := &struct {
			zslNode
			l [4]zslLevel
		}{}
		n.level, x = n.l[:level], &n.zslNode
	default:
		x = &zslNode{level: make([]zslLevel, level)}
	}
	x.score, x.member = score, member
	return x
}

func (zsl *skiplist) insert(score float64, member string) *zslNode {
	var update [zslMaxLevel]*zslNode
	var rank [zslMaxLevel]int
	x := zsl.header
	for i := zsl.level - 1; i >= 0; i-- {
		if i < zsl.level-1 {
			rank[i] = rank[i+1]
		}
		for f := x.level[i].forward; f != nil && zless(f.score, f.member, score, member); f = x.level[i].forward {
			rank[i] += x.level[i].span
			x = f
		}
		update[i] = x
	}
	level := zslRandomLevel()
	if level > zsl.level {
		for i := zsl.level; i < level; i++ {
			rank[i] = 0
			update[i] = zsl.header
			update[i].level[i].span = zsl.length
		}
		zsl.level = level
	}
	x = newZslNode(level, score, member)
	for i := 0; i < level; i++ {
		x.level[i].forward = update[i].level[i].forward
		update[i].level[i].forward = x
		x.level[i].span = update[i].level[i].span - (rank[0] - rank[i])
		update[i].level[i].span = rank[0] - rank[i] + 1
	}
	for i := level; i < zsl.level; i++ {
		update[i].level[i].span++
	}
	if update[0] != zsl.header {
		x.backward = update[0]
	}
	if x.level[0].forward != nil {
		x.level[0].forward.backward = x
	} else {
		zsl.tail = x
	}
	zsl.length++
	return x
}

func (zsl *skiplist) deleteNode(x *zslNode, update []*zslNode) {
	for i := 0; i < zsl.level; i++ {
		if update[i].level[i].forward == x {
			update[i].level[i].span += x.level[i].span - 1
			update[i].level[i].forward = x.level[i].forward
		} else {
			update[i].level[i].span--
		}
	}
	if x.level[0].forward != nil {
		x.level[0].forward.backward = x.backward
	} else {
		zsl.tail = x.backward
	}
	for zsl.level > 1 && zsl.header.level[zsl.level-1].forward == nil {
		zsl.level--
	}
	zsl.length--
}

// find descends to the node before (score, member), filling update.
func (zsl *skiplist) find(score float64, member string, update *[zslMaxLevel]*zslNode) *zslNode {
	x := zsl.header
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && zless(f.score, f.member, score, member); f = x.level[i].forward {
			x = f
		}
		update[i] = x
	}
	return x.level[0].forward
}

func (zsl *skiplist) delete(score float64, member string) bool {
	var update [zslMaxLevel]*zslNode
	x := zsl.find(score, member, &update)
	if x != nil && x.score == score && x.member == member {
		zsl.deleteNode(x, update[:])
		return true
	}
	return false
}

// updateScore moves the member from curscore to newscore: in place when its neighbours allow,
// otherwise by removing and inserting it, as Redis's zslUpdateScore.
func (zsl *skiplist) updateScore(curscore float64, member string, newscore float64) {
	var update [zslMaxLevel]*zslNode
	x := zsl.find(curscore, member, &update)
	if (x.backward == nil || x.backward.score < newscore) &&
		(x.level[0].forward == nil || x.level[0].forward.score > newscore) {
		x.score = newscore
		return
	}
	zsl.deleteNode(x, update[:])
	zsl.insert(newscore, x.member)
}

// getRank returns the 1-based rank of (score, member), 0 when it is missing.
func (zsl *skiplist) getRank(score float64, member string) int {
	rank := 0
	x := zsl.header
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && (f.score < score || (f.score == score && f.member <= member)); f = x.level[i].forward {
			rank += x.level[i].span
			x = f
		}
		if x != zsl.header && x.member == member {
			return rank
		}
	}
	return 0
}

// getByRank returns the node at a 1-based rank.
func (zsl *skiplist) getByRank(rank int) *zslNode {
	traversed := 0
	x := zsl.header
	for i := zsl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && traversed+x.level[i].span <= rank {
			traversed += x.level[i].span
			x = x.level[i].forward
		}
		if traversed == rank {
			return x
		}
	}
	return nil
}

func (zsl *skiplist) isInRange(r *ScoreRange) bool {
	if r.empty() || zsl.tail == nil {
		return false
	}
	return r.gteMin(zsl.tail.score) && r.lteMax(zsl.header.level[0].forward.score)
}

// firstInRange returns the first node in r and its 1-based rank, or nil and 0.
func (zsl *skiplist) firstInRange(r *ScoreRange) (*zslNode, int) {
	if !zsl.isInRange(r) {
		return nil, 0
	}
	x, rank := zsl.header, 0
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && !r.gteMin(f.score); f = x.level[i].forward {
			rank += x.level[i].span
			x = f
		}
	}
	x = x.level[0].forward
	if x == nil || !r.lteMax(x.score) {
		return nil, 0
	}
	return x, rank + 1
}

func (zsl *skiplist) lastInRange(r *ScoreRange) (*zslNode, int) {
	if !zsl.isInRange(r) {
		return nil, 0
	}
	x, rank := zsl.header, 0
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && r.lteMax(f.score); f = x.level[i].forward {
			rank += x.level[i].span
			x = f
		}
	}
	if x == zsl.header || !r.gteMin(x.score) {
		return nil, 0
	}
	return x, rank
}

func (zsl *skiplist) isInLex(r *LexRange) bool {
	if r.empty() || zsl.tail == nil {
		return false
	}
	return r.gteMin(zsl.tail.member) && r.lteMax(zsl.header.level[0].forward.member)
}

func (zsl *skiplist) firstInLex(r *LexRange) (*zslNode, int) {
	if !zsl.isInLex(r) {
		return nil, 0
	}
	x, rank := zsl.header, 0
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && !r.gteMin(f.member); f = x.level[i].forward {
			rank += x.level[i].span
			x = f
		}
	}
	x = x.level[0].forward
	if x == nil || !r.lteMax(x.member) {
		return nil, 0
	}
	return x, rank + 1
}

func (zsl *skiplist) lastInLex(r *LexRange) (*zslNode, int) {
	if !zsl.isInLex(r) {
		return nil, 0
	}
	x, rank := zsl.header, 0
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && r.lteMax(f.member); f = x.level[i].forward {
			rank += x.level[i].span
			x = f
		}
	}
	if x == zsl.header || !r.gteMin(x.member) {
		return nil, 0
	}
	return x, rank
}

// deleteFrom removes nodes from x on while keep says so, from the dict too.
func (zsl *skiplist) deleteFrom(x *zslNode, update []*zslNode, dict *Table, keep func(*zslNode) bool) int {
	removed := 0
	for x != nil && keep(x) {
		next := x.level[0].forward
		zsl.deleteNode(x, update)
		dict.Delete(x.member)
		removed++
		x = next
	}
	return removed
}

func (zsl *skiplist) deleteRangeByScore(r *ScoreRange, dict *Table) int {
	var update [zslMaxLevel]*zslNode
	x := zsl.header
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && !r.gteMin(f.score); f = x.level[i].forward {
			x = f
		}
		update[i] = x
	}
	return zsl.deleteFrom(x.level[0].forward, update[:], dict, func(n *zslNode) bool { return r.lteMax(n.score) })
}

func (zsl *skiplist) deleteRangeByLex(r *LexRange, dict *Table) int {
	var update [zslMaxLevel]*zslNode
	x := zsl.header
	for i := zsl.level - 1; i >= 0; i-- {
		for f := x.level[i].forward; f != nil && !r.gteMin(f.member); f = x.level[i].forward {
			x = f
		}
		update[i] = x
	}
	return zsl.deleteFrom(x.level[0].forward, update[:], dict, func(n *zslNode) bool { return r.lteMax(n.member) })
}

// deleteRangeByRank removes ranks start to end, 1-based and inclusive.
func (zsl *skiplist) deleteRangeByRank(start, end int, dict *Table) int {
	var update [zslMaxLevel]*zslNode
	traversed := 0
	x := zsl.header
	for i := zsl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && traversed+x.level[i].span < start {
			traversed += x.level[i].span
			x = x.level[i].forward
		}
		update[i] = x
	}
	traversed++
	return zsl.deleteFrom(x.level[0].forward, update[:], dict, func(*zslNode) bool {
		ok := traversed <= end
		traversed++
		return ok
	})
}

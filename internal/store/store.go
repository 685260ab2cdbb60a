// Package store is HotKV's keyspace: numbered databases, each split into shards that own a
// mutex, a hash table and an expiry wheel.
//
// Handlers run inline in the connection goroutine and hold the lock of every shard they touch
// (ARCHITECTURE.md §1): a single-key command locks one shard; multi-key commands, MULTI/EXEC
// and scripts lock their shards in ascending global order (database, then shard), which is the
// store's only lock order and why it cannot deadlock. Methods on Shard and the DB accessors
// that take a key assume the caller holds the right lock; the package never locks behind a
// handler's back except in the active expiry cycle.
package store

import (
	"hash/maphash"
	"math/bits"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/ratelimit"
)

// Kind is a value's Redis type.
type Kind uint8

// The Redis types. KindNone marks an unused entry.
const (
	KindNone Kind = iota
	KindString
	KindList
	KindSet
	KindZSet
	KindHash
	KindStream
)

// TypeName is the name TYPE replies for k.
func (k Kind) TypeName() string {
	switch k {
	case KindString:
		return "string"
	case KindList:
		return "list"
	case KindSet:
		return "set"
	case KindZSet:
		return "zset"
	case KindHash:
		return "hash"
	case KindStream:
		return "stream"
	}
	return "none"
}

// Value is a key's value, packed into 24 bytes because there is one per key: millions of
// rate-limit keys make every byte count (issue budget: <= 100 B per live GCRA key).
//
// Strings that are canonical integers are kept in Int (Redis's "int" encoding) so INCR and
// GCRA state updates never allocate. Other strings keep their bytes behind ref, with the
// length and capacity packed into Int. Use the accessors; only IsInt and Int are meant to be
// read directly (and Int only when IsInt).
//
// Aggregates are held one of three ways (enc):
//   - boxed (ObjValue): ref points at a box holding any Go value; Obj returns it. Any type
//     can live here, at the cost of the box and the value's own structure.
//   - packed (PackedValue): ref, Int and n hold a byte string and an element count in the
//     kind's small encoding (Redis's listpack and intset). The Value is the whole aggregate:
//     a small hash costs the entry, the key and one exact-size allocation of packed bytes, as
//     in Redis, with no box or struct in between.
//   - direct (DirectValue): ref points straight at the kind's large structure, without a box.
//
// Packed and direct values belong to a type package that registered a view for the kind
// (RegisterInline); Obj hands out that view, a typed pointer to the Value itself, so
// e.Val.Obj().(*types.Hash) works whatever the encoding, and changes made through the view
// change the entry in place.
type Value struct {
	Int   int64
	ref   unsafe.Pointer
	Kind  Kind
	IsInt bool
	// Raw marks a string changed in place (APPEND, SETRANGE, SETBIT ...): Redis reports those
	// as "raw" in OBJECT ENCODING even when short. It lives in padding and costs nothing.
	Raw bool
	enc valueEnc
	// n is a packed aggregate's element count; it, too, fills padding.
	n uint32
}

// valueEnc says how an aggregate Value's ref is read (its low two bits) and carries the type
// package's variant of that encoding (the bits above, see Variant).
type valueEnc uint8

const (
	encBox valueEnc = iota
	encPacked
	encDirect

	encMask     valueEnc = 3
	variantBits          = 2
)

// objBox holds an aggregate value behind Value.ref.
type objBox struct{ v any }

// BytesValue is a string value owning b (the caller must not keep or reuse b).
func BytesValue(b []byte) Value {
	v := Value{Kind: KindString}
	v.SetBytes(b)
	return v
}

// ObjValue is an aggregate value of kind k holding o, boxed. Types without a registered
// inline view (streams, HyperLogLogs ...) live this way; Obj returns o.
func ObjValue(k Kind, o any) Value {
	return Value{Kind: k, ref: unsafe.Pointer(&objBox{v: o})}
}

// PackedValue is an aggregate of kind k held as b (owned by the value from now on) with n
// elements, in the small encoding of the type package that registered kind k's view.
func PackedValue(k Kind, b []byte, n int) Value {
	v := Value{Kind: k}
	v.SetPacked(b, n)
	return v
}

// DirectValue is an aggregate of kind k whose large structure p belongs to the type package
// that registered kind k's view.
func DirectValue(k Kind, p unsafe.Pointer) Value {
	return Value{Kind: k, ref: p, enc: encDirect}
}

// inlineViews are the registered views of packed and direct values, by kind.
var inlineViews [KindStream + 1]func(v *Value) any

// RegisterInline makes view the way Obj presents packed and direct values of kind k: it
// must return a pointer type whose pointer is v, so that changes through it land in v. Type
// packages register at init, before any such value exists.
func RegisterInline(k Kind, view func(v *Value) any) { inlineViews[k] = view }

// IsPacked reports whether v holds a packed aggregate.
func (v *Value) IsPacked() bool { return v.enc&encMask == encPacked && v.Kind != KindString }

// Variant returns the variant a type package gave its packed or direct value (0 unless it set
// one): a small number telling layouts of one encoding apart, such as a packed hash whose
// entries carry field TTLs. Copies, moves and clones of the Value keep it.
func (v *Value) Variant() uint8 { return uint8(v.enc >> variantBits) }

// SetVariant sets the variant (0 to 63); the encoding is kept.
func (v *Value) SetVariant(x uint8) { v.enc = v.enc&encMask | valueEnc(x)<<variantBits }

// Packed returns a packed aggregate's bytes and element count; nil and 0 for any other
// value. The bytes belong to the value: change them only under the shard lock, and store
// them back with SetPacked when their length, capacity or count changes.
func (v *Value) Packed() ([]byte, int) {
	if !v.IsPacked() {
		return nil, 0
	}
	n, c := int(uint32(v.Int)), int(uint32(v.Int>>32))
	if c == 0 {
		return nil, int(v.n)
	}
	return unsafe.Slice((*byte)(v.ref), c)[:n], int(v.n)
}

// SetPacked makes v (an aggregate, whose Kind is kept) hold b with n elements, taking
// ownership of b. Packed encodings stay far below 4 GiB (Redis caps listpacks at 1 GiB).
func (v *Value) SetPacked(b []byte, n int) {
	v.enc, v.IsInt, v.Raw, v.n = v.enc&^encMask|encPacked, false, false, uint32(n)
	if cap(b) == 0 {
		v.ref, v.Int = nil, 0
		return
	}
	v.ref = unsafe.Pointer(unsafe.SliceData(b))
	v.Int = int64(uint32(len(b))) | int64(uint32(cap(b)))<<32
}

// Direct returns a direct aggregate's structure, or nil.
func (v *Value) Direct() unsafe.Pointer {
	if v.enc&encMask != encDirect || v.Kind == KindString {
		return nil
	}
	return v.ref
}

// SetDirect makes v (an aggregate, whose Kind and variant are kept) point at structure p.
func (v *Value) SetDirect(p unsafe.Pointer) {
	v.enc, v.IsInt, v.Raw, v.n, v.Int, v.ref = v.enc&^encMask|encDirect, false, false, 0, 0, p
}

// Bytes returns a raw string's bytes (nil for an integer-encoded string or an aggregate). The
// slice aliases the store: modify it only under the shard lock, and re-store it with SetBytes
// after growing it.
func (v *Value) Bytes() []byte {
	if v.IsInt || v.Kind != KindString || v.ref == nil {
		return nil
	}
	n, c := int(uint32(v.Int)), int(uint32(v.Int>>32))
	return unsafe.Slice((*byte)(v.ref), c)[:n]
}

// SetBytes makes v a raw string holding b, taking ownership of b.
func (v *Value) SetBytes(b []byte) {
	v.Kind = KindString
	v.IsInt = false
	v.enc, v.n = encBox, 0
	if cap(b) == 0 {
		v.ref, v.Int = nil, 0
		return
	}
	v.ref = unsafe.Pointer(unsafe.SliceData(b))
	v.Int = int64(uint32(len(b))) | int64(uint32(cap(b)))<<32
}

// Obj returns an aggregate's structure (for a packed or direct value, its type's view of v
// itself), or nil for strings.
func (v *Value) Obj() any {
	if v.Kind == KindString || v.Raw {
		return nil
	}
	if v.enc&encMask != encBox {
		return inlineViews[v.Kind](v)
	}
	if v.ref == nil {
		return nil
	}
	return (*objBox)(v.ref).v
}

// Payloader is implemented by aggregate values: AppendPayload appends the value's snapshot
// encoding. A background save calls it under the shard's lock, copying the value out so that
// it can be written while commands change the original.
type Payloader interface {
	AppendPayload(dst []byte) []byte
}

// Payload returns the snapshot encoding of an aggregate entry handed to a SnapshotWalk
// visitor, appending to scratch when it must encode it now (a walk holding every lock visits
// live entries); nil for strings. On an aggregate's copy, Raw marks that ref holds the encoded
// bytes rather than the structure.
func (e *Entry) Payload(scratch []byte) []byte {
	v := &e.Val
	if v.Kind == KindString {
		return nil
	}
	if v.Raw {
		n, c := int(uint32(v.Int)), int(uint32(v.Int>>32))
		return unsafe.Slice((*byte)(v.ref), c)[:n]
	}
	if p, ok := v.Obj().(Payloader); ok {
		return p.AppendPayload(scratch)
	}
	return nil
}

// Entry is one key: 64 bytes with the value. Its address is stable while the shard is locked.
type Entry struct {
	// The key is kptr/klen (a string header with a 32-bit length) and hash holds the low 32
	// bits of its hash, which choose its bucket. Chains compare hashes before bytes, so a
	// lookup reads the key bytes of the entry it finds and of no other (a cache miss each on
	// a large keyspace), and resizing and unlinking hash nothing. The 4 bytes the hash takes
	// are those a full string header spends on a length no key reaches (proto-max-bulk-len
	// caps keys far below 4 GiB).
	kptr *byte
	klen uint32
	hash uint32
	// expireAt is the absolute expiry in Unix ms, 0 for none. Change it only through
	// SetExpire so the wheel learns about it.
	expireAt int64

	Val Value

	next int32 // chain link (index+1), or -1 while the slot is free
	self int32 // own slab index
	// wheelAt is the wheel bucket (second) this key is registered in, 0 for none. Later
	// registrations of the same key are skipped while an earlier one is pending (lazy
	// re-bucketing): the earlier visit re-files the key at its real time.
	wheelAt uint32
	// lru packs Redis's 24-bit LRU clock (seconds, wrapping every 194 days as in Redis) with an
	// 8-bit LFU counter in the top byte, as Redis packs its robj lru field.
	lru uint32
}

// Key returns the key's name. It shares memory with the store; do not retain it past the lock.
func (e *Entry) Key() string { return unsafe.String(e.kptr, e.klen) }

// ExpireAt returns the absolute expiry in Unix ms, or 0 when the key is persistent.
func (e *Entry) ExpireAt() int64 { return e.expireAt }

// Shard owns a slice of one database's keys and the lock that guards them.
type Shard struct {
	mu    sync.Mutex
	dict  dict
	wheel wheel
	// fields files the keys whose value has elements with their own expiry (hash fields with
	// a TTL) by the second the earliest one is due, as wheel does keys; fieldAt is the second
	// each such entry (by slab index) is filed at, which tells live registrations from stale.
	fields  wheel
	fieldAt map[int32]uint32
	// pending is the number of wheel registrations (both wheels), read without the lock by the
	// expiry cycle to skip idle shards.
	pending atomic.Int64

	// volatile counts the keys with an expiry, so that the volatile-* eviction policies
	// sample only shards that have some and know when nothing is evictable.
	volatile int

	// Counters, updated under the lock and summed by INFO.
	ExpiredKeys   int64
	Hits, Misses  int64
	ExpireVisited int64

	_ [64]byte // keep neighbouring shards' locks off one cache line
}

// Lock and Unlock guard the shard. Callers taking several shards must go in ascending order.
func (s *Shard) Lock()   { s.mu.Lock() }
func (s *Shard) Unlock() { s.mu.Unlock() }

// Len is the number of keys, including expired ones not reclaimed yet. Caller holds the lock.
func (s *Shard) Len() int { return s.dict.count }

// DB is one numbered database.
type DB struct {
	ID     int
	store  *Store
	shards []Shard
	// view is the read-only view of the same shards (ReadOnlyView), and live the database a
	// view belongs to (the database itself for the live one).
	view, live *DB
	// readOnly marks the view: its lookups report expired keys as missing without deleting
	// them.
	readOnly bool
}

// ReadOnlyView returns a view of the database whose lookups never change the dataset: an
// expired key is reported missing and stays where it is, as on a Redis replica. A Raft
// follower runs its clients' reads (READONLY) through it, because its dataset must stay
// byte-identical with the leader's at the same applied index: only the log's effects may
// change it. Writes through a view are not meant to happen (the gate refuses them).
func (db *DB) ReadOnlyView() *DB { return db.view }

// Live returns the database a view belongs to (the database itself when it is not a view).
func (db *DB) Live() *DB { return db.live }

// IsReadOnlyView reports whether db is a ReadOnlyView.
func (db *DB) IsReadOnlyView() bool { return db.readOnly }

// Store is the whole keyspace: every database and the clock they expire by.
type Store struct {
	// Waiters are the clients blocked on keys (BLPOP and friends).
	Waiters Waiters
	// Watches are the keys clients WATCH for MULTI/EXEC.
	Watches Watches
	dbs     []*DB
	seed    maphash.Seed
	shift   uint // 64 - log2(shards per DB)
	Clock   clock.Clock

	// OnExpire, when set, is called under the shard lock for each key the server deletes
	// because it expired (lazily or actively); persistence and replication hook in here.
	OnExpire func(db int, key string)
	// OnEvict is the hook for keys deleted to free memory (maxmemory eviction, evict.go). The
	// eviction code calls it under the shard lock for each key it deletes, after the deletion,
	// and touches WATCH (Watches.Touch) as expire does: the server hangs the "evicted"
	// keyspace event and client-side caching's invalidation on it, and the journal a DEL.
	OnEvict func(db int, key string)
	// ExpireGate, when set, is asked before each active expiry cycle whether it may run (not
	// while CLIENT PAUSE holds clients, as Redis's activeExpireCycle returns then; only on a
	// serving Raft leader). A cycle that may run calls done when it ends: the server holds its
	// world lock meanwhile, so that a node rebuilding after a lost leadership never has a cycle
	// deleting keys under the log's replay.
	ExpireGate func() (done func(), ok bool)
	// KeyEvents raises the keyspace events that only the store sees (a key created, a read
	// missing a key).
	KeyEvents KeyEvents

	// OnFieldExpire, when set, is called under the shard lock for each element the server
	// deletes from a value because the element expired (a hash field past its TTL), before the
	// key itself goes if that emptied it; persistence journals it as HDEL key field.
	OnFieldExpire func(db int, key, field string)

	// Journal, when set, receives the effect of every write (internal/command/effects.go lists
	// them). It is nil when nothing consumes effects, and writers then skip building them.
	Journal Journal

	// Mem is the memory limit and its eviction policy (evict.go).
	Mem Memory

	// Limiters are the named RATELIMIT limiters. They belong to the dataset (snapshots hold
	// them, FLUSHALL drops them) but to no database (spec §8.1).
	Limiters *Limiters

	// Decisions count GCRA.LIMIT and CL.THROTTLE outcomes for the metrics listener. They
	// describe traffic, not data: snapshots and FLUSHALL leave them alone.
	Decisions ratelimit.Decisions

	// snapCut is the progress of the snapshot walk in progress (shards done, in global lock
	// order), or snapshotIdle; see SnapshotProgress.
	snapCut atomic.Int64
	// snapWalks counts finished walks; it is raised before snapCut goes idle.
	snapWalks atomic.Int64
}

// New creates numDBs databases of shardsPerDB shards (rounded up to a power of two).
func New(numDBs, shardsPerDB int, clk clock.Clock) *Store {
	n := nextPow2(max(1, shardsPerDB))
	st := &Store{seed: maphash.MakeSeed(), Clock: clk, shift: uint(64 - bits.TrailingZeros(uint(n))), Limiters: NewLimiters()}
	if n == 1 {
		st.shift = 64
	}
	st.snapCut.Store(snapshotIdle)
	// Redis's defaults until the config says otherwise (maxmemory-samples and the LFU knobs).
	st.Mem.SetSamples(5)
	st.Mem.SetTenacity(10)
	st.Mem.SetLFU(10, 1)
	st.dbs = make([]*DB, numDBs)
	for i := range st.dbs {
		db := &DB{ID: i, store: st, shards: make([]Shard, n)}
		db.live = db
		db.view = &DB{ID: i, store: st, shards: db.shards, readOnly: true, live: db}
		db.view.view = db.view
		st.dbs[i] = db
	}
	return st
}

// NumDBs is the number of databases.
func (st *Store) NumDBs() int { return len(st.dbs) }

// DB returns database i.
func (st *Store) DB(i int) *DB { return st.dbs[i] }

// Hash returns the hash a key is placed by.
func (st *Store) Hash(key []byte) uint64 { return maphash.Bytes(st.seed, key) }

// ShardOfHash returns which shard of any database holds a key with hash h.
func (st *Store) ShardOfHash(h uint64) int { return st.shardOf(h) }

// ShardIndex returns which shard of any database holds key.
func (st *Store) ShardIndex(key []byte) int {
	return st.shardOf(st.Hash(key))
}

func (st *Store) shardOf(h uint64) int {
	if st.shift == 64 {
		return 0
	}
	return int(h >> st.shift)
}

// NumShards is the number of shards per database.
func (db *DB) NumShards() int { return len(db.shards) }

// Shard returns shard i.
func (db *DB) Shard(i int) *Shard { return &db.shards[i] }

// ShardFor returns the shard holding key.
func (db *DB) ShardFor(key []byte) *Shard { return &db.shards[db.store.ShardIndex(key)] }

// Lookup returns the live entry for key, deleting it first if it has expired (lazy expiry).
// It does not count a hit or a miss; see LookupRead. Caller holds the key's shard lock.
func (db *DB) Lookup(key []byte, now int64) *Entry {
	return db.LookupHashed(key, db.store.Hash(key), now)
}

// LookupHashed is Lookup with the key's hash already computed (Store.Hash), so the dispatcher's
// hash for locking is not computed again by the handler.
func (db *DB) LookupHashed(key []byte, h uint64, now int64) *Entry {
	_, e := db.find(key, h, now)
	return e
}

// find locates a live entry and its shard, deleting the entry first if it has expired (lazy
// expiry). Every lookup variant goes through it.
func (db *DB) find(key []byte, h uint64, now int64) (*Shard, *Entry) {
	s := &db.shards[db.store.shardOf(h)]
	e := s.dict.find(key, h)
	if e != nil && e.expireAt != 0 && now > e.expireAt {
		if !db.readOnly {
			db.expire(s, e)
		}
		e = nil
	}
	return s, e
}

// LookupRead is Lookup for read commands: it counts keyspace hits and misses and refreshes the
// key's access time, as Redis's lookupKeyRead does.
func (db *DB) LookupRead(key []byte, now int64) *Entry {
	s, e := db.find(key, db.store.Hash(key), now)
	if e == nil {
		s.Misses++
		if db.store.KeyEvents.on.Load()&KeyEventMiss != 0 {
			db.store.KeyEvents.Fn(db.ID, key, KeyEventMiss)
		}
		return nil
	}
	s.Hits++
	db.store.touch(e, now)
	return e
}

const lruMask = 1<<24 - 1

// touch records an access: under an LFU policy the decayed, logarithmically incremented
// counter (evict.go), otherwise the LRU clock, as Redis's updateLFU and LRU_CLOCK do.
func (st *Store) touch(e *Entry, now int64) {
	if st.Mem.lfu.Load() {
		st.Mem.lfuTouch(e, now)
		return
	}
	e.lru = e.lru&^lruMask | uint32(now/1000)&lruMask
}

// SetIdle makes the key look last accessed secs seconds before now (RESTORE ... IDLETIME).
func (e *Entry) SetIdle(now, secs int64) {
	clk := now/1000 - secs
	e.lru = e.lru&^lruMask | uint32(clk)&lruMask
}

// SetFreq sets the access frequency counter (RESTORE ... FREQ).
func (e *Entry) SetFreq(f uint8) {
	e.lru = uint32(f)<<24 | e.lru&lruMask
}

// IdleSeconds is OBJECT IDLETIME, computed on the 24-bit clock with Redis's wrap-around rule.
func (e *Entry) IdleSeconds(now int64) int64 {
	clk := uint32(now/1000) & lruMask
	last := e.lru & lruMask
	if clk >= last {
		return int64(clk - last)
	}
	return int64(clk + (lruMask - last))
}

// LRUClock is the entry's 24-bit access clock (seconds) as DEBUG OBJECT shows it under
// LRU policies; under LFU policies the same bits hold the decay time instead, as in Redis.
func (e *Entry) LRUClock() uint32 { return e.lru & lruMask }

// Freq is OBJECT FREQ's counter.
func (e *Entry) Freq() int { return int(e.lru >> 24) }

// Set stores v at key, replacing any value. expireAt is absolute Unix ms or 0 for none; with
// keepTTL the existing expiry is kept. It returns the entry. Caller holds the lock.
func (db *DB) Set(key []byte, v Value, expireAt int64, keepTTL bool, now int64) *Entry {
	h := db.store.Hash(key)
	s := &db.shards[db.store.shardOf(h)]
	e := s.dict.find(key, h)
	if e != nil && e.expireAt != 0 && now > e.expireAt {
		keepTTL = false
	}
	if e == nil {
		e = s.dict.insert(key, h)
		e.lru = db.store.Mem.initialLRU(now)
		keepTTL = false
		if db.store.KeyEvents.on.Load()&KeyEventNew != 0 {
			db.store.KeyEvents.Fn(db.ID, key, KeyEventNew)
		}
	} else if e.Val.Kind == KindStream {
		db.store.Waiters.KeyReplaced(db.ID, e.Key())
	}
	e.Val = v
	if !keepTTL {
		s.setExpire(e, expireAt)
	}
	if v.Kind == KindHash {
		// A hash with field TTLs (restored, copied, renamed) is filed for the active cycle.
		if fe, ok := e.Val.Obj().(FieldExpirer); ok {
			if at := fe.NextFieldExpiry(); at != 0 {
				s.watchFields(e, at)
			}
		}
	}
	return e
}

// Add inserts a key that the caller knows is absent (after Lookup returned nil).
func (db *DB) Add(key []byte, v Value, now int64) *Entry {
	return db.Set(key, v, 0, false, now)
}

// Delete removes key if present and live; it reports whether it did. Caller holds the lock.
func (db *DB) Delete(key []byte, now int64) bool {
	e := db.Lookup(key, now)
	if e == nil {
		return false
	}
	db.Remove(e)
	return true
}

// Remove deletes an entry obtained from Lookup. Caller holds the lock.
func (db *DB) Remove(e *Entry) {
	s := &db.shards[db.store.ShardIndex(keyBytes(e.Key()))]
	if e.Val.Kind == KindStream {
		// A client blocked in XREADGROUP on this stream must fail (Redis 7.0).
		db.store.Waiters.KeyReplaced(db.ID, e.Key())
	}
	s.remove(e)
}

// remove unlinks e from the table and from the field wheel's bookkeeping.
func (s *Shard) remove(e *Entry) {
	if e.expireAt != 0 {
		s.volatile--
	}
	if s.fieldAt != nil {
		delete(s.fieldAt, e.self)
	}
	s.dict.remove(e)
}

// SetExpire sets e's absolute expiry (0 removes it). Caller holds the lock.
func (db *DB) SetExpire(e *Entry, at int64) {
	if at != 0 && e.expireAt != 0 && e.wheelAt != 0 && int64(e.wheelAt) <= at/1000 {
		// The expiry moved later than a pending registration (every allowed GCRA call):
		// that visit will re-file the key, so neither the shard nor its wheel is needed.
		e.expireAt = at
		return
	}
	db.shards[db.store.ShardIndex(keyBytes(e.Key()))].setExpire(e, at)
}

func (db *DB) expire(s *Shard, e *Entry) {
	s.ExpiredKeys++
	if f := db.store.OnExpire; f != nil {
		f(db.ID, e.Key())
	}
	if e.Val.Kind == KindStream {
		db.store.Waiters.KeyReplaced(db.ID, e.Key())
	}
	if db.store.Watches.Any() {
		key := []byte(e.Key()) // copied: the entry's key bytes go with it
		s.remove(e)
		db.store.Watches.Touch(db, key)
		return
	}
	s.remove(e)
}

// Keys returns the number of keys in db, including expired keys not yet reclaimed, as Redis's
// DBSIZE does. It locks each shard in turn.
func (db *DB) Keys() int {
	n := 0
	for i := range db.shards {
		s := &db.shards[i]
		s.Lock()
		n += s.dict.count
		s.Unlock()
	}
	return n
}

// Expires returns the number of keys and of keys with a TTL, for INFO keyspace. It locks each
// shard unless held is set (the caller already holds every lock, as EXEC does).
func (db *DB) Expires(held bool) (keys, expires int) {
	for i := range db.shards {
		s := &db.shards[i]
		if !held {
			s.Lock()
		}
		keys += s.dict.count
		s.dict.each(func(e *Entry) bool {
			if e.expireAt != 0 {
				expires++
			}
			return true
		})
		if !held {
			s.Unlock()
		}
	}
	return keys, expires
}

// Flush deletes every key of db, shard by shard.
func (db *DB) Flush() {
	for i := range db.shards {
		s := &db.shards[i]
		s.Lock()
		s.reset()
		s.Unlock()
	}
	db.store.Waiters.DBReplaced(db.ID)
}

func (s *Shard) reset() {
	s.dict = dict{}
	s.wheel = wheel{}
	s.fields, s.fieldAt = wheel{}, nil
	s.pending.Store(0)
	s.volatile = 0
}

// SwapWith exchanges the contents of shard i of db and other; both must be locked.
func (s *Shard) SwapWith(o *Shard) {
	s.dict, o.dict = o.dict, s.dict
	s.wheel, o.wheel = o.wheel, s.wheel
	s.fields, o.fields = o.fields, s.fields
	s.fieldAt, o.fieldAt = o.fieldAt, s.fieldAt
	s.volatile, o.volatile = o.volatile, s.volatile
	p := s.pending.Load()
	s.pending.Store(o.pending.Load())
	o.pending.Store(p)
}

// Scan visits one step of the shard's table for SCAN (see dict.scan). Expired keys are
// skipped, not deleted, so the table does not change under the cursor. Caller holds the lock.
func (s *Shard) Scan(cursor uint64, now int64, fn func(e *Entry)) uint64 {
	return s.dict.scan(cursor, func(e *Entry) {
		if e.expireAt != 0 && now > e.expireAt {
			return
		}
		fn(e)
	})
}

// Each visits every live key of the shard until fn returns false. Caller holds the lock.
func (s *Shard) Each(now int64, fn func(e *Entry) bool) {
	s.dict.each(func(e *Entry) bool {
		if e.expireAt != 0 && now > e.expireAt {
			return true
		}
		return fn(e)
	})
}

// EachUnordered is Each in memory order rather than bucket order: faster over a large shard,
// for walks that do not care about order (snapshots).
func (s *Shard) EachUnordered(now int64, fn func(e *Entry) bool) {
	s.dict.eachSlab(func(e *Entry) bool {
		if e.expireAt != 0 && now > e.expireAt {
			return true
		}
		return fn(e)
	})
}

// Random returns a random live key of the shard, or nil. Expired keys met on the way are
// deleted, as Redis's RANDOMKEY does. Caller holds the lock.
func (db *DB) Random(s *Shard, now int64) *Entry {
	for tries := 0; tries < 100; tries++ {
		e := s.dict.random(rand.Uint64N)
		if e == nil {
			return nil
		}
		if e.expireAt != 0 && now > e.expireAt {
			if !db.readOnly {
				db.expire(s, e)
			}
			continue
		}
		return e
	}
	return nil
}

// keyBytes views a stored key as bytes for hashing, without copying. The bytes must not be
// modified.
func keyBytes(k string) []byte { return unsafe.Slice(unsafe.StringData(k), len(k)) }

// Keyspace events the store raises itself (KeyEvents).
const (
	// KeyEventNew: Set created a key (Redis's "new" event, raised in dbAdd).
	KeyEventNew uint32 = 1 << iota
	// KeyEventMiss: a read command's lookup (LookupRead) found no key ("keymiss").
	KeyEventMiss
)

// KeyEvents raises the keyspace events that only the store sees, under the key's shard lock:
// a key created and a read of a missing key. The server sets Fn once and turns the kinds on
// and off with Enable as notify-keyspace-events changes; while a kind is off it costs one
// atomic load.
type KeyEvents struct {
	on atomic.Uint32
	Fn func(db int, key []byte, kind uint32)
}

// Enable turns on the kinds (KeyEventNew, KeyEventMiss) in kinds and off the others. Fn
// must be set first.
func (k *KeyEvents) Enable(kinds uint32) { k.on.Store(kinds) }

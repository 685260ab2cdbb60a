package store

import (
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Policy is a maxmemory-policy: which keys eviction may delete and in what order.
type Policy uint32

// The Redis eviction policies. PolicyNoEviction is Redis's default.
const (
	PolicyNoEviction Policy = iota
	PolicyAllKeysLRU
	PolicyAllKeysLFU
	PolicyAllKeysRandom
	PolicyVolatileLRU
	PolicyVolatileLFU
	PolicyVolatileRandom
	PolicyVolatileTTL
)

var policyNames = [...]string{"noeviction", "allkeys-lru", "allkeys-lfu", "allkeys-random",
	"volatile-lru", "volatile-lfu", "volatile-random", "volatile-ttl"}

// String is the policy's maxmemory-policy name.
func (p Policy) String() string {
	if int(p) < len(policyNames) {
		return policyNames[p]
	}
	return "noeviction"
}

// ParsePolicy reads a maxmemory-policy name (lower case, as the config table normalizes it).
func ParsePolicy(name string) (Policy, bool) {
	for i, n := range policyNames {
		if n == name {
			return Policy(i), true
		}
	}
	return PolicyNoEviction, false
}

// LFU reports whether the policy keeps access frequencies (OBJECT FREQ) rather than idle
// times (OBJECT IDLETIME) in an entry's lru field.
func (p Policy) LFU() bool { return p == PolicyAllKeysLFU || p == PolicyVolatileLFU }

func (p Policy) volatile() bool { return p >= PolicyVolatileLRU }

func (p Policy) random() bool { return p == PolicyAllKeysRandom || p == PolicyVolatileRandom }

// EvictResult is what PerformEvictions achieved, as Redis's EVICT_OK/RUNNING/FAIL.
type EvictResult int

const (
	// EvictOK: used memory is within the limit (or there is none).
	EvictOK EvictResult = iota
	// EvictRunning: still over the limit but the tenacity time ran out while keys were being
	// evicted; commands go ahead and the next one carries on.
	EvictRunning
	// EvictFail: over the limit and nothing (more) can be evicted: denyoom commands are refused.
	EvictFail
)

// lfuInitVal is the counter a new key starts with under an LFU policy (Redis's LFU_INIT_VAL),
// so that a new key is not the first to go.
const lfuInitVal = 5

// evictPoolSize is the number of candidates the LRU/LFU/TTL pool keeps, as Redis's EVPOOL_SIZE.
const evictPoolSize = 16

// sampleInterval is how often the background sampler reads the Go heap while a limit is set:
// often enough that a burst of writes cannot run far past the limit between samples (their
// arguments are counted meanwhile, see Admitted), rarely enough to cost nothing measurable
// (reading two runtime metrics takes about a microsecond).
const sampleInterval = time.Millisecond

// Memory is the keyspace's memory limit and eviction state. Every field the hot path reads is
// an atomic: with no limit set, a command pays one atomic load (Limit) for all of this.
//
// How used memory is measured, and why: the heap of a Go program holds live objects and dead
// ones the collector has not freed yet, and only a collection tells them apart. Reading the
// runtime's heap metrics costs about a microsecond, too much per command but nothing every
// millisecond, so a background goroutine samples them while a limit is set. Used memory is
// the smaller of two estimates, minus the estimated size of the keys evicted since the last
// collection (their memory is garbage until it runs):
//   - the heap's objects at the last sample: never below the live data, but garbage counts;
//   - what the last collection found live, plus the arguments (and a per-key overhead) of the
//     denyoom commands admitted since: garbage does not count, overwrites do.
//
// Each is wrong in one direction only, and a collection resets the second. When the heap is
// over the limit with a quarter or more of it possibly garbage, the sampler forces a
// collection (at most every 100 ms), and a command is refused only after one (collect).
type Memory struct {
	limit    atomic.Int64
	policy   atomic.Uint32
	lfu      atomic.Bool
	samples  atomic.Int32
	tenacity atomic.Int32
	logFac   atomic.Int32
	decay    atomic.Int32

	heap     atomic.Int64  // heap objects at the last sample
	base     atomic.Int64  // live heap the last collection found (the heap before any)
	admitted atomic.Int64  // argument bytes of denyoom commands since the last collection
	freed    atomic.Int64  // estimated bytes evicted since the last collection
	cycles   atomic.Uint64 // the collection count base, admitted and freed date from
	evicted  atomic.Int64  // keys evicted since start (INFO evicted_keys)

	// mu guards the pool, the shard lists and the sampler's life; evictors hold it for one
	// key at a time.
	mu     sync.Mutex
	pool   []poolEntry
	cands  evictCands
	nextDB int
	// background: a goroutine carries on evicting (evictInBackground).
	background atomic.Bool
	// lastGC is when collect last forced a collection (Unix ns).
	lastGC   atomic.Int64
	stop     chan struct{}
	sampling bool
}

// poolEntry is an eviction candidate: a higher score goes first.
type poolEntry struct {
	score uint64
	db    int
	key   string
}

// Limit is maxmemory in bytes, 0 for none.
func (m *Memory) Limit() int64 { return m.limit.Load() }

// Policy is the current maxmemory-policy.
func (m *Memory) Policy() Policy { return Policy(m.policy.Load()) }

// Evicted is the number of keys evicted since start (INFO evicted_keys).
func (m *Memory) Evicted() int64 { return m.evicted.Load() }

// SetPolicy applies maxmemory-policy. Switching between LRU and LFU leaves each key's field
// in the old meaning until it is next accessed, as in Redis.
func (m *Memory) SetPolicy(p Policy) {
	m.policy.Store(uint32(p))
	m.lfu.Store(p.LFU())
	m.mu.Lock()
	m.pool = m.pool[:0]
	m.cands.dbs = nil
	m.mu.Unlock()
}

// SetSamples applies maxmemory-samples.
func (m *Memory) SetSamples(n int) { m.samples.Store(int32(max(1, min(n, 1<<20)))) }

// SetTenacity applies maxmemory-eviction-tenacity (0 to 100).
func (m *Memory) SetTenacity(n int) { m.tenacity.Store(int32(n)) }

// SetLFU applies lfu-log-factor and lfu-decay-time (minutes).
func (m *Memory) SetLFU(logFactor, decayMinutes int) {
	m.logFac.Store(int32(logFactor))
	m.decay.Store(int32(decayMinutes))
}

// SetLimit applies maxmemory (bytes, 0 for none), starting the heap sampler when a limit
// appears and stopping it when it goes. The first sample is taken now, so a command right
// after CONFIG SET maxmemory already sees where memory stands.
func (m *Memory) SetLimit(bytes int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.limit.Store(bytes)
	if bytes > 0 && !m.sampling {
		// Start from a collection: until now nothing counted what commands added, so the
		// last collection's live figure may be from before most of the data arrived, and
		// eviction measured against it would take too much once the next collection corrects
		// it. One collection, when a limit first appears.
		runtime.GC()
		m.sampling = true
		m.stop = make(chan struct{})
		go m.sampleLoop(newSampler(), m.stop)
	} else if bytes == 0 && m.sampling {
		m.sampling = false
		close(m.stop)
	}
	if bytes > 0 {
		newSampler().read(m)
	}
}

// Close stops the sampler; the server calls it when it shuts down.
func (m *Memory) Close() { m.SetLimit(0) }

// Used is used memory as eviction counts it (see Memory): never negative.
func (m *Memory) Used() int64 {
	return max(0, min(m.heap.Load(), m.base.Load()+m.admitted.Load())-m.freed.Load())
}

// keyOverhead approximates what a new key costs beyond its argument bytes (its entry, the
// rounding of its allocations).
const keyOverhead = 64

// Admitted counts n bytes of arguments a denyoom command brings in, until the next
// collection measures them. Only called while a limit is set.
func (m *Memory) Admitted(n int) { m.admitted.Add(int64(n) + keyOverhead) }

// HeapUsed reads the Go heap's objects bytes now, for INFO's used_memory when no limit is set.
func HeapUsed() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// sampler holds the metrics read each tick and what the last one saw.
type sampler struct {
	s        []metrics.Sample
	lastGC   time.Time
	forcedGC time.Time
}

func newSampler() *sampler {
	return &sampler{s: []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/live:bytes"},
	}}
}

// read takes one sample: the heap, and a collection since the last sample makes the evicted
// estimate moot (that memory is free now). Which collection was last seen is the Memory's, not
// the sampler's: a new sampler (SetLimit's) must not forget the bytes admitted and evicted
// since a collection it did not see.
func (s *sampler) read(m *Memory) (heap, live int64) {
	metrics.Read(s.s)
	heap = int64(s.s[0].Value.Uint64())
	if s.s[2].Value.Kind() == metrics.KindUint64 {
		live = int64(s.s[2].Value.Uint64())
	}
	if c := s.s[1].Value.Uint64(); c != m.cycles.Load() || c == 0 {
		m.cycles.Store(c)
		if c == 0 || live == 0 {
			live = heap // no collection yet: the heap is all there is to go by
		}
		m.base.Store(live)
		m.admitted.Store(0)
		m.freed.Store(0)
	}
	m.heap.Store(heap)
	return heap, live
}

func (m *Memory) sampleLoop(s *sampler, stop chan struct{}) {
	t := time.NewTicker(sampleInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		heap, live := s.read(m)
		limit := m.limit.Load()
		// Over the limit with a quarter of the heap or more possibly garbage: collect, so
		// that eviction (or an OOM refusal) is decided on data rather than on garbage.
		if limit > 0 && heap-m.freed.Load() > limit && heap > live+live/4 && time.Since(s.forcedGC) > 100*time.Millisecond {
			runtime.GC()
			s.forcedGC = time.Now()
			s.read(m)
		}
	}
}

// lfuMinutes is the LFU clock: minutes, on the entry's 24 clock bits (Redis keeps 16).
func lfuMinutes(now int64) uint32 { return uint32(now/60000) & lruMask }

// initialLRU is a new key's lru field: the LRU clock, or the LFU clock with the initial
// counter under an LFU policy, as Redis's createObject.
func (m *Memory) initialLRU(now int64) uint32 {
	if m.lfu.Load() {
		return lfuInitVal<<24 | lfuMinutes(now)
	}
	return uint32(now/1000) & lruMask
}

// lfuDecayed is the entry's counter after the decay its idle minutes call for (Redis's
// LFUDecrAndReturn); it changes nothing.
func (m *Memory) lfuDecayed(e *Entry, now int64) uint32 {
	counter := e.lru >> 24
	ldt := e.lru & lruMask
	cur := lfuMinutes(now)
	var elapsed uint32
	if cur >= ldt {
		elapsed = cur - ldt
	} else {
		elapsed = lruMask - ldt + cur
	}
	if d := m.decay.Load(); d > 0 {
		periods := elapsed / uint32(d)
		if periods >= counter {
			return 0
		}
		counter -= periods
	}
	return counter
}

// lfuTouch decays the counter, then increments it with a probability falling as it grows
// (Redis's updateLFU with LFULogIncr), so that 8 bits rank accesses over millions.
func (m *Memory) lfuTouch(e *Entry, now int64) {
	counter := m.lfuDecayed(e, now)
	if counter < 255 {
		base := float64(int(counter) - lfuInitVal)
		if base < 0 {
			base = 0
		}
		if rand.Float64() < 1/(base*float64(m.logFac.Load())+1) {
			counter++
		}
	}
	e.lru = counter<<24 | lfuMinutes(now)
}

// Freq is OBJECT FREQ under an LFU policy: the counter with its pending decay applied.
func (st *Store) Freq(e *Entry, now int64) int { return int(st.Mem.lfuDecayed(e, now)) }

// score ranks an eviction candidate: higher goes first (Redis's "idle" in evictionPoolPopulate).
func (m *Memory) score(p Policy, e *Entry, now int64) uint64 {
	switch p {
	case PolicyAllKeysLFU, PolicyVolatileLFU:
		return uint64(255 - m.lfuDecayed(e, now))
	case PolicyVolatileTTL:
		return math.MaxUint64 - uint64(e.expireAt)
	}
	return uint64(e.IdleSeconds(now))
}

// timeLimit is how long one PerformEvictions call may run (Redis's evictionTimeLimitUs).
func (m *Memory) timeLimit() time.Duration {
	t := m.tenacity.Load()
	switch {
	case t <= 10:
		return time.Duration(50*t) * time.Microsecond
	case t < 100:
		return time.Duration(500*math.Pow(1.15, float64(t-10))) * time.Microsecond
	}
	return time.Duration(math.MaxInt64)
}

// PerformEvictions evicts keys by the policy until used memory is back under the limit, as
// Redis's performEvictions does before each command. The caller holds no shard lock. Clients
// over the limit at the same moment evict side by side, one key at a time each (the pool and
// the shard lists are guarded by Memory.mu, held for one key), so eviction keeps pace with as
// many writers as there are, and all of them stop once memory is back under the limit.
func (st *Store) PerformEvictions(now int64) EvictResult {
	m := &st.Mem
	limit := m.limit.Load()
	if limit <= 0 || m.Used() <= limit {
		return EvictOK
	}
	p := m.Policy()
	if p == PolicyNoEviction {
		if m.collect() && m.Used() <= limit {
			return EvictOK
		}
		return EvictFail
	}
	start := time.Now()
	budget := m.timeLimit()
	for n := 0; m.Used() > limit; n++ {
		if st.evictKey(p, now) < 0 {
			if m.collect() && m.Used() <= limit {
				return EvictOK // it was garbage, not data
			}
			return EvictFail
		}
		if n&15 == 15 && time.Since(start) > budget {
			if m.background.CompareAndSwap(false, true) {
				go st.evictInBackground()
			}
			return EvictRunning
		}
	}
	return EvictOK
}

// collect runs a garbage collection and samples the heap again before a command is refused,
// so that a refusal is about data, not garbage (deleted keys, replies already sent), at most
// every gcMinInterval; it reports whether it ran one.
func (m *Memory) collect() bool {
	last := m.lastGC.Load()
	nowNs := time.Now().UnixNano()
	if nowNs-last < int64(gcMinInterval) || !m.lastGC.CompareAndSwap(last, nowNs) {
		return false
	}
	runtime.GC()
	newSampler().read(m)
	return true
}

// gcMinInterval bounds the collections eviction forces: a server refusing writes at its limit
// with noeviction would otherwise collect for every command.
const gcMinInterval = 100 * time.Millisecond

// evictKey evicts one key under Memory.mu and returns its estimated size, or -1 when nothing
// is left to evict.
func (st *Store) evictKey(p Policy, now int64) int64 {
	m := &st.Mem
	m.mu.Lock()
	defer m.mu.Unlock()
	fresh := false
	if m.cands.dbs == nil || m.cands.policy != p || time.Since(m.cands.at) > candsMaxAge {
		st.findCandidates(p)
		fresh = true
	}
	got := st.evictOne(p, now)
	if got < 0 && !fresh {
		// The shard lists may miss shards that got keys since they were made.
		st.findCandidates(p)
		got = st.evictOne(p, now)
	}
	return got
}

// evictInBackground carries on evicting after a command ran out of its tenacity time, as
// Redis's evictionTimeProc does, in slices with pauses for the commands queued meanwhile.
func (st *Store) evictInBackground() {
	m := &st.Mem
	defer m.background.Store(false)
	for {
		time.Sleep(100 * time.Microsecond)
		limit := m.limit.Load()
		p := m.Policy()
		if limit <= 0 || p == PolicyNoEviction {
			return
		}
		var now int64
		if st.Clock != nil {
			now = st.Clock.NowMs()
		}
		start := time.Now()
		for m.Used() > limit && time.Since(start) < 500*time.Microsecond {
			if st.evictKey(p, now) < 0 {
				return
			}
		}
		if m.Used() <= limit {
			return
		}
	}
}

// candsMaxAge is how long the lists of shards worth sampling are reused: making them locks
// every shard of every database, too much for each command of a server that sits at its
// limit; shards that empty meanwhile are dropped as sampling finds them empty, and ones that
// fill are found at the next refresh (or at once, before eviction gives up).
const candsMaxAge = 100 * time.Millisecond

// evictCands lists, per database, the shards that held keys the policy may evict (keys with an
// expiry for the volatile ones), so that sampling does not lock empty shards over and over.
// Guarded by Memory.mu.
type evictCands struct {
	policy Policy
	at     time.Time
	dbs    [][]int
}

func (st *Store) findCandidates(p Policy) {
	c := &st.Mem.cands
	c.policy, c.at = p, time.Now()
	if len(c.dbs) != len(st.dbs) {
		c.dbs = make([][]int, len(st.dbs))
	}
	for d, db := range st.dbs {
		c.dbs[d] = c.dbs[d][:0]
		for i := range db.shards {
			s := &db.shards[i]
			s.Lock()
			if s.dict.count > 0 && (!p.volatile() || s.volatile > 0) {
				c.dbs[d] = append(c.dbs[d], i)
			}
			s.Unlock()
		}
	}
}

// dropCandidate removes the j-th shard of database d's list (found empty).
func (c *evictCands) dropCandidate(d, j int) {
	l := c.dbs[d]
	l[j] = l[len(l)-1]
	c.dbs[d] = l[:len(l)-1]
}

// pickEntry returns a random key of s the policy may evict, or nil. Volatile policies draw a
// few times and then walk the shard, so a shard with few keys with an expiry among many
// without still yields them. Caller holds the lock.
func pickEntry(s *Shard, p Policy) *Entry {
	if s.dict.count == 0 {
		return nil
	}
	if !p.volatile() {
		return s.dict.random(rand.Uint64N)
	}
	if s.volatile == 0 {
		return nil
	}
	for range 8 {
		if e := s.dict.random(rand.Uint64N); e.expireAt != 0 {
			return e
		}
	}
	var found *Entry
	s.dict.eachSlab(func(e *Entry) bool {
		if e.expireAt != 0 {
			found = e
			return false
		}
		return true
	})
	return found
}

// evictOne deletes one key by the policy and returns its estimated size, or -1 when there is
// nothing left to evict. Caller holds Memory.mu.
func (st *Store) evictOne(p Policy, now int64) int64 {
	m := &st.Mem
	c := &m.cands
	if p.random() {
		// A random key of a random candidate shard, the databases visited in turn as Redis
		// does.
		for range len(c.dbs) {
			d := m.nextDB % len(c.dbs)
			m.nextDB++
			for len(c.dbs[d]) > 0 {
				j := rand.IntN(len(c.dbs[d]))
				db := st.dbs[d]
				s := &db.shards[c.dbs[d][j]]
				s.Lock()
				if e := pickEntry(s, p); e != nil {
					n := db.evict(s, e)
					s.Unlock()
					return n
				}
				s.Unlock()
				c.dropCandidate(d, j)
			}
		}
		return -1
	}
	// LRU, LFU and TTL: sample each database (one random candidate shard of it) into the pool,
	// then evict the best candidate that is still there.
	samples := max(1, int(m.samples.Load()))
	for round := 0; round < 64; round++ {
		sampled := false
		for d := range c.dbs {
			if len(c.dbs[d]) == 0 {
				continue
			}
			sampled = true
			j := rand.IntN(len(c.dbs[d]))
			s := &st.dbs[d].shards[c.dbs[d][j]]
			s.Lock()
			got := false
			for range samples {
				e := pickEntry(s, p)
				if e == nil {
					break
				}
				got = true
				m.poolInsert(poolEntry{score: m.score(p, e, now), db: d, key: e.Key()})
			}
			s.Unlock()
			if !got {
				c.dropCandidate(d, j)
			}
		}
		for len(m.pool) > 0 {
			cand := m.pool[len(m.pool)-1]
			m.pool = m.pool[:len(m.pool)-1]
			db := st.dbs[cand.db]
			key := keyBytes(cand.key)
			h := st.Hash(key)
			s := &db.shards[st.shardOf(h)]
			s.Lock()
			_, e := db.find(key, h, now)
			if e != nil && (!p.volatile() || e.expireAt != 0) {
				n := db.evict(s, e)
				s.Unlock()
				return n
			}
			s.Unlock()
		}
		if !sampled {
			break
		}
	}
	return -1
}

// poolInsert files a candidate in the pool, kept sorted by ascending score with at most
// evictPoolSize entries; a key already there is refreshed. The key is copied: the entry's
// bytes go when the key does.
func (m *Memory) poolInsert(c poolEntry) {
	for i := range m.pool {
		if m.pool[i].db == c.db && m.pool[i].key == c.key {
			m.pool = append(m.pool[:i], m.pool[i+1:]...)
			break
		}
	}
	i := 0
	for i < len(m.pool) && m.pool[i].score < c.score {
		i++
	}
	if len(m.pool) >= evictPoolSize {
		if i == 0 {
			return // worse than every candidate of a full pool
		}
		c.key = string([]byte(c.key))
		// Drop the worst (first) to make room just below the first better one.
		copy(m.pool[:i-1], m.pool[1:i])
		m.pool[i-1] = c
		return
	}
	c.key = string([]byte(c.key))
	m.pool = append(m.pool, poolEntry{})
	copy(m.pool[i+1:], m.pool[i:])
	m.pool[i] = c
}

// evict deletes e to free memory and returns its estimated size: counted, WATCH touched, then
// OnEvict told (after the deletion, under the lock, as its contract says). Caller holds s.
func (db *DB) evict(s *Shard, e *Entry) int64 {
	st := db.store
	n := entrySize(e)
	key := e.Key()
	if st.Watches.Any() || st.OnEvict != nil {
		key = string([]byte(key)) // the entry's key bytes go with it
	}
	if e.Val.Kind == KindStream {
		st.Waiters.KeyReplaced(db.ID, key)
	}
	s.remove(e)
	st.Mem.evicted.Add(1)
	st.Mem.freed.Add(n)
	if st.Watches.Any() {
		st.Watches.Touch(db, keyBytes(key))
	}
	if f := st.OnEvict; f != nil {
		f(db.ID, key)
	}
	return n
}

// entrySize estimates what deleting e frees: the entry, its key and its value, with the
// value's own MEMORY USAGE estimate for aggregates.
func entrySize(e *Entry) int64 {
	n := int64(unsafe.Sizeof(Entry{})) + int64(e.klen)
	v := &e.Val
	switch {
	case v.Kind == KindString:
		if b := v.Bytes(); b != nil {
			n += int64(cap(b))
		}
	case v.IsPacked():
		b, _ := v.Packed()
		n += int64(cap(b))
	default:
		if mu, ok := v.Obj().(interface{ MemoryUsage(samples int) int64 }); ok {
			n += mu.MemoryUsage(5)
		} else {
			n += 64
		}
	}
	return n
}

// Parts returns the terms of Used (heap at the last sample, live at the last collection,
// admitted and evicted bytes since), for diagnostics.
func (m *Memory) Parts() (heap, base, admitted, freed int64) {
	return m.heap.Load(), m.base.Load(), m.admitted.Load(), m.freed.Load()
}

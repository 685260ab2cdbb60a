package store

import (
	"hash/maphash"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hotkv/hotkv/internal/ratelimit"
)

// Algo is a named limiter's algorithm.
type Algo uint8

// The RATELIMIT algorithms (spec §8).
const (
	SlidingWindow Algo = iota
	TokenBucket
	LeakyBucket
	// Concurrency limits units in flight: an allowed CHECK acquires a lease that holds its
	// units until RATELIMIT.RELEASE or until it expires window_ms after it was acquired
	// (docs/ratelimit.md, "Concurrency limits").
	Concurrency
)

// String is the algorithm's name as CREATE takes it and STATS replies it.
func (a Algo) String() string {
	switch a {
	case TokenBucket:
		return "token_bucket"
	case LeakyBucket:
		return "leaky_bucket"
	case Concurrency:
		return "concurrency"
	}
	return "sliding_window"
}

// limiterShards splits a limiter's per-key state so that checks of different keys of one
// popular limiter (say "api", checked for every user) do not queue on one mutex.
const limiterShards = 64

// Limiter is a named limiter: its definition, its totals and the state of every key. Limiters
// live outside the keyspace (spec §8.1): no database owns them and they are never evicted.
type Limiter struct {
	Name     string
	Algo     Algo
	Limit    int64
	WindowMs int64
	// Rate is the bucket algorithms' emission rate; for sliding_window it is unused.
	Rate ratelimit.Rate
	// Shadow makes every CHECK allowed while the decisions are still computed, recorded as an
	// enforced limiter would record them and counted (docs/ratelimit.md, "Shadow mode").
	Shadow bool
	// Limit, WindowMs, Rate and Shadow change only in Update, with every shard lock held: a
	// check reads them under its key's shard lock; other readers use Definition.

	totalShadowDenied atomic.Int64

	totalAllowed atomic.Int64
	totalDenied  atomic.Int64
	// journaledDenied is the denied total the journal last carried (in a key's state effect
	// or a totals effect): denials journal nothing themselves, so DeniedBacklog tells the
	// server's periodic flush which limiters owe the journal their newer count.
	journaledDenied atomic.Int64
	seed            maphash.Seed
	// nameBytes is Name as bytes for state effects, made once when the limiter is
	// registered (CreateThen); shards share it rather than each keeping a copy, which keeps
	// a shard within its two cache lines.
	nameBytes []byte
	shards    [limiterShards]limiterShard
}

type limiterShard struct {
	mu sync.Mutex
	// tat holds bucket state: the key's theoretical arrival time in ns. Values are pointers so
	// that an existing key's TAT is updated in place: assigning m[string(key)] allocates the
	// key string even when it is present, which a lookup does not.
	tat map[string]*int64
	// log holds sliding_window state.
	log map[string]*ratelimit.Window
	// lease holds concurrency state. A key whose last lease was released keeps its (empty)
	// entry until the sweep reclaims it, so that CHECK+RELEASE cycles on a key allocate
	// nothing; an empty entry is no state to every reader.
	lease map[string]*ratelimit.Leases
	// lastLease is the largest lease id issued or applied (journal, snapshot) in this shard:
	// a new id is max(now_ms * 10^6, lastLease + 1), so ids ascend per key and never repeat
	// one the key held, on this node or on a replica that applied its effects.
	lastLease int64
	// dropped is set, under this shard's lock, when the limiter is dropped (DROP, FLUSHALL):
	// a check that obtained the limiter just before then acts as on an unknown limiter, so no
	// state effect can be journaled after the limiter's removal.
	dropped bool
	// args and nums are stateEffect's scratch space (guarded by mu): a journaled CHECK
	// allocates nothing (Journal's contract lets effects point into it).
	args [][]byte
	nums []byte
	offs []int   // where each number in nums ends
	_    [8]byte // pads the shard to 128 bytes (layout_test.go)
}

// Totals returns total_allowed and total_denied.
func (l *Limiter) Totals() (allowed, denied int64) {
	return l.totalAllowed.Load(), l.totalDenied.Load()
}

// ShadowDenied is total_shadow_denied: units a shadow-mode limiter denied but let through.
func (l *Limiter) ShadowDenied() int64 { return l.totalShadowDenied.Load() }

// SetShadowDenied replaces total_shadow_denied (loading a snapshot).
func (l *Limiter) SetShadowDenied(v int64) { l.totalShadowDenied.Store(v) }

// Definition is the changeable part of a limiter's definition (RATELIMIT.UPDATE).
type Definition struct {
	Limit    int64
	WindowMs int64
	Rate     ratelimit.Rate
	Shadow   bool
}

// Definition reads the limiter's current definition. Update holds every shard lock while it
// changes it, so holding one is enough to read it whole.
func (l *Limiter) Definition() Definition {
	s := &l.shards[0]
	s.mu.Lock()
	defer s.mu.Unlock()
	return l.definitionLocked()
}

func (l *Limiter) definitionLocked() Definition {
	return Definition{Limit: l.Limit, WindowMs: l.WindowMs, Rate: l.Rate, Shadow: l.Shadow}
}

// Update replaces the definition in place at atMs (RATELIMIT.UPDATE), keeping every key's
// state and the totals, converted as docs/ratelimit.md defines: sliding_window logs are pruned
// with the old window at atMs and kept as they are (a smaller limit denies until entries age
// out, a larger window keeps them longer); a bucket key's TAT is re-expressed under the new
// interval so that its units in use are preserved, clamped to the new capacity
// (ratelimit.ConvertTAT). build, called with every shard lock held and the current definition,
// returns the new one or ok false to change nothing (validation against the live definition);
// done, if set, journals the change before any other command can see it. Update reports false
// if the limiter was dropped meanwhile.
func (l *Limiter) Update(atMs int64, build func(old Definition) (Definition, bool), done func(old, nu Definition)) (dropped, ok bool) {
	l.LockState()
	defer l.UnlockState()
	if l.shards[0].dropped {
		return true, false
	}
	old := l.definitionLocked()
	nu, ok := build(old)
	if !ok {
		return false, false
	}
	if l.Algo == SlidingWindow {
		for i := range l.shards {
			s := &l.shards[i]
			for k, w := range s.log {
				if !w.Prune(atMs, old.WindowMs) {
					delete(s.log, k)
				}
			}
		}
	} else if l.Algo == Concurrency {
		// As sliding_window: expired leases go with the old window, the rest are kept and
		// each counts until ts + the new window.
		for i := range l.shards {
			s := &l.shards[i]
			for k, ls := range s.lease {
				if !ls.Prune(atMs, old.WindowMs) {
					delete(s.lease, k)
				}
			}
		}
	} else if nu.Rate.IntervalNs != old.Rate.IntervalNs || nu.Limit != old.Limit {
		now := atMs * ratelimit.NsPerMs
		for i := range l.shards {
			for _, p := range l.shards[i].tat {
				*p = ratelimit.ConvertTAT(*p, now, old.Rate.IntervalNs, nu.Rate.IntervalNs, nu.Limit)
			}
		}
	}
	l.Limit, l.WindowMs, l.Rate, l.Shadow = nu.Limit, nu.WindowMs, nu.Rate, nu.Shadow
	if done != nil {
		done(old, nu)
	}
	return false, true
}

// SetTotals replaces the totals; loading a snapshot or applying an effect uses it.
func (l *Limiter) SetTotals(allowed, denied int64) {
	l.totalAllowed.Store(allowed)
	l.totalDenied.Store(denied)
	l.journaledDenied.Store(denied) // loaded totals are durable already
}

// addSat adds n to a counter, saturating at 2^63-1 as the spec requires of the totals.
func addSat(c *atomic.Int64, n int64) {
	for {
		old := c.Load()
		v := old + n
		if old > ratelimit.Max-n {
			v = ratelimit.Max
		}
		if c.CompareAndSwap(old, v) {
			return
		}
	}
}

func (l *Limiter) shard(key []byte) *limiterShard {
	return &l.shards[maphash.Bytes(l.seed, key)&(limiterShards-1)]
}

// Result is a CHECK or PEEK reply: [allowed, remaining, retry_after_ms, limit, current].
type Result [5]int64

// Check is CheckLease for callers that need no lease id.
func (l *Limiter) Check(key []byte, cost, nowMs, maxEntries int64, record bool, j Journal) (Result, bool) {
	res, _, changed := l.CheckLease(key, cost, nowMs, maxEntries, record, j)
	return res, changed
}

// CheckLease runs RATELIMIT.CHECK (record true) or RATELIMIT.PEEK (record false, cost 1) for key at
// nowMs. maxEntries is ratelimit.sliding-window-max-entries. It reports the reply and whether
// state changed (allowed CHECKs only, spec §10). When j is set, a change is journaled, under
// the key's lock, as the key's complete new state and the limiter's totals (EffectState).
//
// On a concurrency limiter an allowed CHECK acquires a lease: leaseID is its id (0 otherwise).
func (l *Limiter) CheckLease(key []byte, cost, nowMs, maxEntries int64, record bool, j Journal) (res Result, leaseID int64, changed bool) {
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return Result{}, 0, false // as an unknown limiter: [0,0,0,0,0]
	}
	switch l.Algo {
	case SlidingWindow:
		res, changed = l.checkWindow(s, key, cost, nowMs, maxEntries, record)
	case Concurrency:
		res, leaseID = l.checkLeases(s, key, cost, nowMs, record)
		changed = leaseID != 0
	default:
		res, changed = l.checkBucket(s, key, cost, nowMs, record)
	}
	if record {
		if res[0] == 1 {
			addSat(&l.totalAllowed, cost)
		} else {
			addSat(&l.totalDenied, cost)
			if l.Shadow {
				addSat(&l.totalShadowDenied, cost)
			}
		}
	}
	if l.Shadow {
		// The reply keeps the real decision's remaining, retry_after_ms and current: a
		// shadow denial is told apart by a retry_after_ms other than 0.
		res[0] = 1
	}
	if changed && j != nil {
		j.Append(Effect{DB: -1, Args: l.stateEffect(s, key)})
	}
	return res, leaseID, changed
}

// checkLeases decides a concurrency request and, when allowed and recording, acquires a lease
// (ratelimit.Leases). Caller holds s.mu.
func (l *Limiter) checkLeases(s *limiterShard, key []byte, cost, nowMs int64, record bool) (Result, int64) {
	ls := s.lease[string(key)]
	var r ratelimit.WindowResult
	if ls != nil {
		ls.Prune(nowMs, l.WindowMs) // an emptied entry stays for reuse (see lease)
		r = ls.Check(nowMs, l.WindowMs, l.Limit, cost)
	} else {
		var none ratelimit.Leases
		r = none.Check(nowMs, l.WindowMs, l.Limit, cost)
	}
	if !r.Allowed {
		return Result{0, max(0, l.Limit-r.Current), r.RetryMs, l.Limit, r.Current}, 0
	}
	if !record {
		return Result{1, l.Limit - r.Current, 0, l.Limit, r.Current}, 0
	}
	if ls == nil {
		ls = new(ratelimit.Leases)
		if s.lease == nil {
			s.lease = map[string]*ratelimit.Leases{}
		}
		s.lease[string(key)] = ls
	}
	id := ratelimit.NextLeaseID(nowMs, s.lastLease)
	s.lastLease = id
	ls.Acquire(id, nowMs, cost, l.Limit)
	return Result{1, l.Limit - r.Current - cost, 0, l.Limit, r.Current}, id
}

// ReleaseCommand is the command that gives a concurrency lease back.
const ReleaseCommand = "RATELIMIT.RELEASE"

// Release gives back the live lease id of key (RATELIMIT.RELEASE) and reports whether there
// was one: an expired, released or never issued lease is not, and releasing is idempotent.
// Totals do not change. When j is set, a release is journaled under the key's lock as the
// key's complete remaining leases (RATELIMIT.SETSTATE ... LEASES), like Check's effects.
// dropped reports a limiter dropped meanwhile (as if unknown).
func (l *Limiter) Release(key []byte, id, nowMs int64, j Journal) (released, dropped bool) {
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return false, true
	}
	ls := s.lease[string(key)]
	if ls == nil {
		return false, false
	}
	ls.Prune(nowMs, l.WindowMs)
	if !ls.Release(id) {
		return false, false
	}
	if j != nil {
		j.Append(Effect{DB: -1, Args: l.stateEffect(s, key)})
	}
	return true, false
}

// SetStateCommand is the command that carries a limiter key's state in the journal.
const SetStateCommand = "RATELIMIT.SETSTATE"

// stateEffect encodes key's state and the totals as
//
//	RATELIMIT.SETSTATE name key TAT <ns> TOTALS <allowed> <denied>
//	RATELIMIT.SETSTATE name key LOG <n> <ts> <units> ... TOTALS <allowed> <denied>
//	RATELIMIT.SETSTATE name key LEASES <n> <id> <ts> <units> ... TOTALS <allowed> <denied>
//
// Totals only grow, so applying them as a maximum makes effects from different keys commute:
// the order in which two shards of one limiter journal does not matter.
func (l *Limiter) stateEffect(s *limiterShard, key []byte) [][]byte {
	// Numbers are formatted into one buffer, remembering where each ends, and sliced once the
	// buffer is complete, since appending may move it.
	s.nums = s.nums[:0]
	offs := s.offs[:0]
	itoa := func(v int64) {
		s.nums = strconv.AppendInt(s.nums, v, 10)
		offs = append(offs, len(s.nums))
	}
	var w *ratelimit.Window
	var ls *ratelimit.Leases
	switch l.Algo {
	case SlidingWindow:
		w = s.log[string(key)]
		itoa(int64(len(w.Entries)))
		for _, e := range w.Entries {
			itoa(e.TS)
			itoa(e.Units)
		}
	case Concurrency:
		ls = s.lease[string(key)] // the complete remaining leases: LEASES 0 deletes the state
		itoa(int64(len(ls.Held)))
		for _, e := range ls.Held {
			itoa(e.ID)
			itoa(e.TS)
			itoa(e.Units)
		}
	default:
		itoa(*s.tat[string(key)])
	}
	a, d := l.Totals()
	sd := l.totalShadowDenied.Load()
	raise(&l.journaledDenied, d)
	itoa(a)
	itoa(d)
	if sd > 0 {
		itoa(sd)
	}
	s.offs = offs
	num := func(i int) []byte {
		start := 0
		if i > 0 {
			start = offs[i-1]
		}
		return s.nums[start:offs[i]:offs[i]]
	}
	args := append(s.args[:0], effSetState, l.nameBytes, key)
	i := 0
	switch {
	case w != nil:
		args = append(args, effLog, num(0))
		i = 1
		for range w.Entries {
			args = append(args, num(i), num(i+1))
			i += 2
		}
	case ls != nil:
		args = append(args, effLeases, num(0))
		i = 1
		for range ls.Held {
			args = append(args, num(i), num(i+1), num(i+2))
			i += 3
		}
	default:
		args = append(args, effTAT, num(0))
		i = 1
	}
	args = append(args, effTotals, num(i), num(i+1))
	if sd > 0 {
		// The shadow total rides along only once there is one, so limiters that never ran
		// in shadow mode journal exactly what older versions read.
		args = append(args, num(i+2))
	}
	s.args = args
	return args
}

// Effect words, allocated once.
var (
	effSetState = []byte(SetStateCommand)
	effLog      = []byte("LOG")
	effLeases   = []byte("LEASES")
	effTAT      = []byte("TAT")
	effTotals   = []byte("TOTALS")
)

// SetState applies a journaled key state (RATELIMIT.SETSTATE): tat for bucket limiters, entries
// for sliding_window, and totals raised to at least the given values. It reads no clock and no
// configuration, so replicas and log replay reach the primary's exact state.
func (l *Limiter) SetState(key []byte, tat int64, entries []ratelimit.WindowEntry, allowed, denied int64) {
	l.SetStateShadow(key, tat, entries, allowed, denied, 0)
}

// SetStateShadow is SetState that also raises total_shadow_denied to at least shadowDenied.
func (l *Limiter) SetStateShadow(key []byte, tat int64, entries []ratelimit.WindowEntry, allowed, denied, shadowDenied int64) {
	raise(&l.totalShadowDenied, shadowDenied)
	s := l.shard(key)
	s.mu.Lock()
	if l.Algo == SlidingWindow {
		if len(entries) == 0 {
			delete(s.log, string(key))
		} else {
			w := &ratelimit.Window{Entries: entries}
			for _, e := range entries {
				w.Sum += e.Units
			}
			if s.log == nil {
				s.log = map[string]*ratelimit.Window{}
			}
			s.log[string(key)] = w
		}
	} else {
		s.setTAT(key, tat)
	}
	s.mu.Unlock()
	raise(&l.totalAllowed, allowed)
	raise(&l.totalDenied, denied)
	raise(&l.journaledDenied, denied) // the effect applied came from the journal
}

// SetStateLeases applies a concurrency key's journaled leases (RATELIMIT.SETSTATE ... LEASES),
// normalized by ratelimit.NormalizeLeases, replacing the key's state (no leases: no state),
// raises the shard's lease-id counter past them and the totals to at least the given values.
// It reads no clock, like SetState.
func (l *Limiter) SetStateLeases(key []byte, leases []ratelimit.Lease, allowed, denied, shadowDenied int64) {
	raise(&l.totalShadowDenied, shadowDenied)
	s := l.shard(key)
	s.mu.Lock()
	s.setLeases(key, leases)
	s.mu.Unlock()
	raise(&l.totalAllowed, allowed)
	raise(&l.totalDenied, denied)
	raise(&l.journaledDenied, denied)
}

// setLeases replaces key's leases (ascending ids) and raises lastLease. Caller holds s.mu.
func (s *limiterShard) setLeases(key []byte, leases []ratelimit.Lease) {
	if len(leases) == 0 {
		delete(s.lease, string(key))
		return
	}
	ls := &ratelimit.Leases{Held: leases}
	for _, e := range leases {
		ls.Sum += e.Units
	}
	s.lastLease = max(s.lastLease, leases[len(leases)-1].ID)
	if s.lease == nil {
		s.lease = map[string]*ratelimit.Leases{}
	}
	s.lease[string(key)] = ls
}

// RaiseTotals raises the totals to at least allowed and denied: the totals-only effect
// (RATELIMIT.SETSTATE name TOTALS allowed denied) that carries denied counts to the journal.
func (l *Limiter) RaiseTotals(allowed, denied int64) { l.RaiseTotalsShadow(allowed, denied, 0) }

// RaiseTotalsShadow is RaiseTotals that also raises total_shadow_denied.
func (l *Limiter) RaiseTotalsShadow(allowed, denied, shadowDenied int64) {
	raise(&l.totalShadowDenied, shadowDenied)
	raise(&l.totalAllowed, allowed)
	raise(&l.totalDenied, denied)
	raise(&l.journaledDenied, denied)
}

// DeniedBacklog reports the totals when denials were counted since the journal last carried
// the denied total, and marks them carried: the caller must journal them (TotalsCommand).
func (l *Limiter) DeniedBacklog() (allowed, denied int64, owed bool) {
	allowed, denied = l.Totals()
	for {
		j := l.journaledDenied.Load()
		if denied <= j {
			return allowed, denied, false
		}
		if l.journaledDenied.CompareAndSwap(j, denied) {
			return allowed, denied, true
		}
	}
}

func raise(c *atomic.Int64, v int64) {
	for {
		old := c.Load()
		if v <= old || c.CompareAndSwap(old, v) {
			return
		}
	}
}

func (l *Limiter) checkWindow(s *limiterShard, key []byte, cost, nowMs, maxEntries int64, record bool) (Result, bool) {
	w := s.log[string(key)]
	var scratch ratelimit.Window
	if w == nil {
		w = &scratch
	} else if !w.Prune(nowMs, l.WindowMs) {
		delete(s.log, string(key))
		w = &scratch
	}
	r := w.Check(nowMs, l.WindowMs, l.Limit, cost, maxEntries, record)
	remaining := max(0, l.Limit-r.Current)
	switch {
	case r.Allowed && record:
		remaining = l.Limit - r.Current - cost
		if w == &scratch {
			if s.log == nil {
				s.log = map[string]*ratelimit.Window{}
			}
			nw := scratch
			s.log[string(key)] = &nw
		}
		return Result{1, remaining, 0, l.Limit, r.Current}, true
	case r.Allowed:
		return Result{1, remaining, 0, l.Limit, r.Current}, false
	}
	return Result{0, remaining, r.RetryMs, l.Limit, r.Current}, false
}

// setTAT stores key's TAT, in place when the key has state already. Caller holds s.mu.
func (s *limiterShard) setTAT(key []byte, tat int64) {
	if p := s.tat[string(key)]; p != nil {
		*p = tat
		return
	}
	if s.tat == nil {
		s.tat = map[string]*int64{}
	}
	p := new(int64) // not &tat: that would move the parameter to the heap on every call
	*p = tat
	s.tat[string(key)] = p
}

func (l *Limiter) checkBucket(s *limiterShard, key []byte, cost, nowMs int64, record bool) (Result, bool) {
	now := nowMs * ratelimit.NsPerMs
	var tat int64
	p, present := s.tat[string(key)]
	if present {
		tat = *p
	}
	if present && tat <= now {
		delete(s.tat, string(key)) // dead state is no state
		present = false
	}
	r := ratelimit.Bucket(now, tat, present, l.Rate.IntervalNs, l.Limit, cost)
	switch {
	case r.Allowed && record:
		s.setTAT(key, r.TAT)
		return Result{1, r.Avail - cost, 0, l.Limit, r.Current}, true
	case r.Allowed:
		return Result{1, r.Avail, 0, l.Limit, r.Current}, false
	}
	return Result{0, r.Avail, r.RetryMs, l.Limit, r.Current}, false
}

// ResetCommand is the command that carries the removal of a limiter key's state.
const ResetCommand = "RATELIMIT.RESET"

// Reset forgets key's state and reports whether it had live state. When j is set, removing
// live state is journaled as RATELIMIT.RESET name key under the key's lock, like Check's
// effects, so that it can never be journaled after a later check of the same key.
func (l *Limiter) Reset(key []byte, nowMs int64, j Journal) bool {
	s := l.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	live := false
	if l.Algo == SlidingWindow {
		if w := s.log[string(key)]; w != nil {
			live = w.Prune(nowMs, l.WindowMs)
			delete(s.log, string(key))
		}
	} else if ls := s.lease[string(key)]; ls != nil {
		live = ls.Prune(nowMs, l.WindowMs)
		delete(s.lease, string(key))
	} else if tat, ok := s.tat[string(key)]; ok {
		live = *tat > nowMs*ratelimit.NsPerMs
		delete(s.tat, string(key))
	}
	if live && j != nil {
		j.Append(Effect{DB: -1, Args: [][]byte{[]byte(ResetCommand), []byte(l.Name), append([]byte(nil), key...)}})
	}
	return live
}

// UniqueKeys counts keys with live state at nowMs, reclaiming dead state on the way.
func (l *Limiter) UniqueKeys(nowMs int64) int64 {
	var n int64
	for i := range l.shards {
		n += int64(l.sweepShard(&l.shards[i], nowMs, -1))
	}
	return n
}

// Sweep reclaims dead state, visiting at most budget keys per shard; the active expiry cycle
// calls it so that limiters with many one-off keys do not grow without bound.
func (l *Limiter) Sweep(nowMs int64, budget int) {
	for i := range l.shards {
		l.sweepShard(&l.shards[i], nowMs, budget)
	}
}

// sweepShard deletes dead state and returns the number of live keys seen (all of them when
// budget < 0).
func (l *Limiter) sweepShard(s *limiterShard, nowMs int64, budget int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	live, seen := 0, 0
	now := nowMs * ratelimit.NsPerMs
	for k, tat := range s.tat {
		if budget >= 0 && seen >= budget {
			break
		}
		seen++
		if *tat <= now {
			delete(s.tat, k)
		} else {
			live++
		}
	}
	for k, w := range s.log {
		if budget >= 0 && seen >= budget {
			break
		}
		seen++
		if !w.Prune(nowMs, l.WindowMs) {
			delete(s.log, k)
		} else {
			live++
		}
	}
	for k, ls := range s.lease {
		if budget >= 0 && seen >= budget {
			break
		}
		seen++
		if !ls.Prune(nowMs, l.WindowMs) {
			delete(s.lease, k)
		} else {
			live++
		}
	}
	return live
}

// Limiters is the server-wide registry of named limiters.
type Limiters struct {
	mu     sync.RWMutex
	byName map[string]*Limiter
}

// NewLimiters returns an empty registry.
func NewLimiters() *Limiters { return &Limiters{byName: map[string]*Limiter{}} }

// Get returns the limiter called name, or nil.
func (ls *Limiters) Get(name []byte) *Limiter {
	ls.mu.RLock()
	l := ls.byName[string(name)]
	ls.mu.RUnlock()
	return l
}

// Create adds a limiter unless the name exists or maxLimiters are already defined.
func (ls *Limiters) Create(l *Limiter, maxLimiters int64) bool {
	return ls.CreateThen(l, maxLimiters, nil)
}

// CreateThen is Create that calls done, if the limiter was created, before any other client can
// see it: RATELIMIT.CREATE journals its effect there, so no effect of the new limiter can
// precede its creation in the journal.
func (ls *Limiters) CreateThen(l *Limiter, maxLimiters int64, done func()) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if _, dup := ls.byName[l.Name]; dup || int64(len(ls.byName)) >= maxLimiters {
		return false
	}
	l.seed = maphash.MakeSeed()
	l.nameBytes = []byte(l.Name)
	if done != nil {
		done()
	}
	ls.byName[l.Name] = l
	return true
}

// Drop removes a limiter and reports whether it existed.
func (ls *Limiters) Drop(name []byte) bool { return ls.DropThen(name, nil) }

// DropThen removes a limiter, marks it dropped in every shard (so a check already holding it
// journals nothing more), then calls done, which journals the removal: every state effect of
// the limiter precedes its DROP in the journal.
func (ls *Limiters) DropThen(name []byte, done func()) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l, ok := ls.byName[string(name)]
	if !ok {
		return false
	}
	delete(ls.byName, string(name))
	l.markDropped()
	if done != nil {
		done()
	}
	return true
}

func (l *Limiter) markDropped() {
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		s.dropped = true
		s.tat, s.log, s.lease = nil, nil, nil
		s.mu.Unlock()
	}
}

// Names lists every limiter name sorted bytewise (RATELIMIT.LIST).
func (ls *Limiters) Names() []string {
	ls.mu.RLock()
	out := make([]string, 0, len(ls.byName))
	for n := range ls.byName {
		out = append(out, n)
	}
	ls.mu.RUnlock()
	sort.Strings(out)
	return out
}

// Len is the number of limiters.
func (ls *Limiters) Len() int {
	ls.mu.RLock()
	defer ls.mu.RUnlock()
	return len(ls.byName)
}

// Clear drops every limiter (FLUSHALL).
func (ls *Limiters) Clear() {
	ls.mu.Lock()
	for _, l := range ls.byName {
		l.markDropped()
	}
	ls.byName = map[string]*Limiter{}
	ls.mu.Unlock()
}

// Sweep reclaims dead per-key state in every limiter, a bounded amount per call.
func (ls *Limiters) Sweep(nowMs int64, budget int) {
	ls.mu.RLock()
	all := make([]*Limiter, 0, len(ls.byName))
	for _, l := range ls.byName {
		all = append(all, l)
	}
	ls.mu.RUnlock()
	for _, l := range all {
		l.Sweep(nowMs, budget)
	}
}

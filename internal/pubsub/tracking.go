package pubsub

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
)

// Tracking is the server side of client-side caching (CLIENT TRACKING), as Redis 7.0's
// tracking.c: in the default mode a table of the keys tracking clients read, each with the IDs
// of the clients that may cache it; in broadcasting mode (BCAST) a table of prefixes, each with
// its clients. A write to a key invalidates it: every client in its entry gets one
// invalidation and the entry goes, so the next read tracks it again. Keys are global, not per
// database, as in Redis.
//
// Invalidations caused by a command are collected in the command's Batch: those for the
// executing connection itself go out after its reply, and broadcast ones are grouped per
// prefix, one message per prefix with every key the command changed, as Redis groups them per
// event-loop iteration.
type Tracking struct {
	hub *Hub
	mu  sync.Mutex
	// keys maps a key to the IDs of the clients that read it while tracking.
	keys  map[string]map[int64]struct{}
	items int
	// prefixes maps a BCAST prefix to its clients.
	prefixes map[string]map[*Sub]struct{}
	// trackers are the connections with tracking on.
	trackers map[*Sub]struct{}
	maxKeys  atomic.Int64
	// active is set while anything is tracked: writers skip Invalidate otherwise.
	active atomic.Bool
}

func newTracking(h *Hub) *Tracking {
	t := &Tracking{hub: h, keys: map[string]map[int64]struct{}{},
		prefixes: map[string]map[*Sub]struct{}{}, trackers: map[*Sub]struct{}{}}
	t.maxKeys.Store(1000000)
	return t
}

// trackState is one connection's tracking settings, guarded by Tracking.mu.
type trackState struct {
	on, bcast, optin, optout, noloop, broken bool
	redirect                                 int64
	// prefixes are its BCAST prefixes, sorted (CLIENT TRACKINGINFO lists them so).
	prefixes []string
}

// Options are CLIENT TRACKING ON's options.
type Options struct {
	Redirect                     int64
	BCast, OptIn, OptOut, NoLoop bool
	Prefixes                     []string
}

// Info is a connection's tracking state, for CLIENT TRACKING's checks, TRACKINGINFO, GETREDIR
// and CLIENT LIST.
type Info struct {
	On, BCast, OptIn, OptOut, NoLoop, BrokenRedirect bool
	Redirect                                         int64
	Prefixes                                         []string
}

// Active reports whether any key or client is tracked; one atomic load.
func (t *Tracking) Active() bool { return t.active.Load() }

func (t *Tracking) syncActive() { t.active.Store(len(t.trackers) > 0 || t.items > 0) }

// Info returns s's tracking state.
func (t *Tracking) Info(s *Sub) Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &s.trk
	return Info{On: st.on, BCast: st.bcast, OptIn: st.optin, OptOut: st.optout, NoLoop: st.noloop,
		BrokenRedirect: st.broken, Redirect: st.redirect, Prefixes: slices.Clone(st.prefixes)}
}

// Enable turns tracking on for s, or changes its options (CLIENT TRACKING ON); the caller has
// checked them against s's state as Redis does. Prefixes add to those s has.
func (t *Tracking) Enable(s *Sub, o Options) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &s.trk
	st.on = true
	st.broken = false
	st.redirect = o.Redirect
	st.bcast, st.optin, st.optout, st.noloop = o.BCast, o.OptIn, o.OptOut, o.NoLoop
	t.trackers[s] = struct{}{}
	if o.BCast {
		ps := o.Prefixes
		if len(ps) == 0 {
			ps = []string{""}
		}
		for _, p := range ps {
			subs := t.prefixes[p]
			if subs == nil {
				subs = map[*Sub]struct{}{}
				t.prefixes[p] = subs
			}
			if _, ok := subs[s]; !ok {
				subs[s] = struct{}{}
				st.prefixes = append(st.prefixes, p)
			}
		}
		sort.Strings(st.prefixes)
	}
	t.syncActive()
}

// Disable turns tracking off for s (CLIENT TRACKING OFF, RESET, disconnection). Its entries
// in the key table stay, as in Redis, and are dropped lazily when those keys change.
func (t *Tracking) Disable(s *Sub) {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &s.trk
	for _, p := range st.prefixes {
		if subs := t.prefixes[p]; subs != nil {
			delete(subs, s)
			if len(subs) == 0 {
				delete(t.prefixes, p)
			}
		}
	}
	*st = trackState{}
	delete(t.trackers, s)
	t.syncActive()
}

// Remember records that s read keys (a read-only command in the default mode).
func (t *Tracking) Remember(s *Sub, keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	t.mu.Lock()
	for _, k := range keys {
		ids := t.keys[string(k)]
		if ids == nil {
			ids = map[int64]struct{}{}
			t.keys[string(k)] = ids
		}
		if _, ok := ids[s.ID]; !ok {
			ids[s.ID] = struct{}{}
			t.items++
		}
	}
	t.syncActive()
	t.mu.Unlock()
	t.Limit()
}

// SetMaxKeys sets tracking-table-max-keys (0: no limit) and applies it at once.
func (t *Tracking) SetMaxKeys(n int64) {
	t.maxKeys.Store(n)
	t.Limit()
}

// Limit evicts keys from the table while it holds more than tracking-table-max-keys, telling
// their clients as if the keys changed (Redis's trackingLimitUsedSlots).
func (t *Tracking) Limit() {
	max := t.maxKeys.Load()
	if max <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for int64(len(t.keys)) > max {
		for k := range t.keys { // map order: a random victim
			t.invalidateLocked([]byte(k), nil)
			break
		}
	}
	t.syncActive()
}

// Batch collects what one command's writes invalidate, sent when the command is done
// (Flush): invalidations for the executing connection, which go after its reply, and the keys
// changed for BCAST clients. A nil *Batch sends everything at once (expiry, eviction).
type Batch struct {
	exec *Sub
	// self lists the keys invalidated for the executing connection; selfNull is a flush.
	self     [][]byte
	selfNull bool
	// changed lists the keys the command changed, for the prefix tables.
	changed [][]byte
}

// Reset makes b collect for a command of exec's.
func (b *Batch) Reset(exec *Sub) {
	b.exec = exec
	clear(b.self)
	b.self = b.self[:0]
	b.selfNull = false
	clear(b.changed)
	b.changed = b.changed[:0]
}

// Empty reports whether b holds nothing to send.
func (b *Batch) Empty() bool { return len(b.self) == 0 && !b.selfNull && len(b.changed) == 0 }

// Invalidate handles a change of key (Redis's trackingInvalidateKey with bcast): every client
// that read it and is still tracking in the default mode is told, except the executing one in
// NOLOOP mode, and the entry goes. b is the executing command's batch (nil outside commands).
func (t *Tracking) Invalidate(key []byte, b *Batch) {
	if !t.active.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.prefixes) > 0 {
		if b != nil {
			b.changed = append(b.changed, append([]byte(nil), key...))
		} else {
			t.broadcastLocked([][]byte{key}, nil, Local{})
		}
	}
	t.invalidateLocked(key, b)
	t.syncActive()
}

func (t *Tracking) invalidateLocked(key []byte, b *Batch) {
	ids, ok := t.keys[string(key)]
	if !ok {
		return
	}
	var exec *Sub
	if b != nil {
		exec = b.exec
	}
	for id := range ids {
		target := t.hub.Lookup(id)
		if target == nil || !target.trk.on || target.trk.bcast {
			continue
		}
		if target == exec {
			if target.trk.noloop {
				continue
			}
			b.self = append(b.self, append([]byte(nil), key...))
			continue
		}
		t.sendLocked(target, keyArray([][]byte{key}), Local{})
	}
	t.items -= len(ids)
	delete(t.keys, string(key))
}

// Flush sends what b collected: the executing connection's own invalidations (into local, its
// reply buffer, after its reply) and one message per BCAST prefix that the changed keys match.
func (t *Tracking) Flush(b *Batch, local Local) {
	if b.Empty() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if b.exec != nil && b.exec.trk.on {
		if b.selfNull {
			t.sendLocked(b.exec, []byte(nullByProto[b.exec.Proto()]), local)
		}
		for _, k := range b.self {
			t.sendLocked(b.exec, keyArray([][]byte{k}), local)
		}
	}
	if len(b.changed) > 0 && len(t.prefixes) > 0 {
		t.broadcastLocked(b.changed, b.exec, local)
	}
	b.Reset(b.exec)
}

// broadcastLocked sends each prefix's clients the changed keys under that prefix, sorted and
// without repeats (Redis keeps them in a radix tree), leaving out keys changed by a NOLOOP
// client itself: here all of them were changed by exec.
func (t *Tracking) broadcastLocked(changed [][]byte, exec *Sub, local Local) {
	// Prefixes in order, as Redis walks its radix tree: the messages come in that order.
	prefixes := make([]string, 0, len(t.prefixes))
	for p := range t.prefixes {
		prefixes = append(prefixes, p)
	}
	sort.Strings(prefixes)
	for _, p := range prefixes {
		subs := t.prefixes[p]
		var keys [][]byte
		for _, k := range changed {
			if len(k) >= len(p) && string(k[:len(p)]) == p {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		slices.SortFunc(keys, func(a, b []byte) int { return compareBytes(a, b) })
		keys = slices.CompactFunc(keys, func(a, b []byte) bool { return string(a) == string(b) })
		payload := keyArray(keys)
		for s := range subs {
			if s == exec && s.trk.noloop {
				continue
			}
			t.sendLocked(s, payload, local)
		}
	}
}

func compareBytes(a, b []byte) int {
	switch {
	case string(a) < string(b):
		return -1
	case string(a) > string(b):
		return 1
	}
	return 0
}

// FlushAll tells every tracking client that all keys are invalid (a null invalidation) and
// empties the key table (FLUSHALL, FLUSHDB: keys are not per database).
func (t *Tracking) FlushAll(b *Batch) {
	if !t.active.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.trackers {
		if b != nil && s == b.exec {
			b.selfNull = true
			continue
		}
		t.sendLocked(s, []byte(nullByProto[s.Proto()]), Local{})
	}
	t.keys = map[string]map[int64]struct{}{}
	t.items = 0
	t.syncActive()
}

// Stats returns the numbers of tracked keys, (key, client) items and BCAST prefixes, and of
// tracking clients, for INFO.
func (t *Tracking) Stats() (keys, items, prefixes, clients int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys), t.items, len(t.prefixes), len(t.trackers)
}

func keyArray(keys [][]byte) []byte {
	b := []byte{'*'}
	b = strconv.AppendInt(b, int64(len(keys)), 10)
	b = append(b, '\r', '\n')
	for _, k := range keys {
		b = appendBulk(b, k)
	}
	return b
}

var (
	invalidateHead3 = []byte(">2\r\n$10\r\ninvalidate\r\n")
	invalidateHead2 = []byte("*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n")
)

// InvalidationChannel is where RESP2 clients receive the invalidations redirected to them.
const InvalidationChannel = "__redis__:invalidate"

// sendLocked delivers an invalidation (payload: a RESP array of keys, or a null) for tracking
// client s, as Redis's sendTrackingMessage: to its redirect target when it has one (telling s
// in RESP3 when that target is gone), as a push in RESP3, or as a message on
// __redis__:invalidate to a RESP2 redirect target in pub/sub mode; a RESP2 client without
// redirection gets nothing.
func (t *Tracking) sendLocked(s *Sub, payload []byte, local Local) {
	target := s
	redirected := false
	if s.trk.redirect != 0 {
		r := t.hub.Lookup(s.trk.redirect)
		if r == nil {
			s.trk.broken = true
			if s.Proto() == 3 {
				msg := []byte(">2\r\n$21\r\ntracking-redir-broken\r\n:")
				msg = strconv.AppendInt(msg, s.trk.redirect, 10)
				msg = append(msg, '\r', '\n')
				t.emit(s, msg, local)
			}
			return
		}
		target, redirected = r, true
	}
	var msg []byte
	switch {
	case target.Proto() == 3:
		msg = append(append([]byte(nil), invalidateHead3...), payload...)
	case redirected && target.Subscribed():
		msg = append(append([]byte(nil), invalidateHead2...), payload...)
	default:
		return
	}
	t.emit(target, msg, local)
}

func (t *Tracking) emit(s *Sub, msg []byte, local Local) {
	if local.Sub != nil && s == local.Sub && local.W != nil {
		local.W.Raw(msg)
		return
	}
	t.hub.push(s, msg)
}

// TrackingInfo is s's tracking state (Tracking.Info).
func (s *Sub) TrackingInfo() Info { return s.hub.Tracking.Info(s) }

// Package pubsub is HotKV's publish/subscribe and client-side caching machinery: the registry
// of channel, pattern and shard-channel subscriptions (Redis's server.pubsub_channels,
// pubsub_patterns and pubsubshard_channels), the per-connection queues that pushes wait in,
// keyspace-event naming, and the tracking table of CLIENT TRACKING.
//
// Delivery never blocks a publisher: a message is encoded once per protocol and queued on each
// subscriber's outbox, whose own writer goroutine sends it (see outbox). Publishes are
// serialized by the hub's lock, so every subscriber sees messages in one global order, the
// order PUBLISH returned in, as with Redis's single thread.
//
// Lock order: a keyspace shard lock (keyspace events and invalidations happen inside
// commands), then Tracking.mu, then Hub.mu, then an outbox's mu. Nothing here calls back out
// while holding a lock except an outbox's kill function, called with no lock held.
package pubsub

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/hotkv/hotkv/internal/glob"
	"github.com/hotkv/hotkv/internal/resp"
)

// Client classes of client-output-buffer-limit, in Redis's order.
const (
	ClassNormal = iota
	ClassReplica
	ClassPubSub
)

// Limit is one client class's client-output-buffer-limit: a connection whose unsent output
// reaches Hard bytes, or stays at or above Soft bytes for more than SoftSeconds, is closed.
// Zero disables a bound.
type Limit struct {
	Hard, Soft, SoftSeconds int64
}

// Hub is the server's pub/sub registry. The zero value is not usable; call NewHub.
type Hub struct {
	mu       sync.Mutex
	channels map[string]map[*Sub]struct{}
	patterns map[string]map[*Sub]struct{}
	shard    map[string]map[*Sub]struct{}
	// patList is patterns' keys, so that a publish walks a slice rather than a map.
	patList []string

	// clients maps connection IDs to their Sub, for tracking redirection.
	cmu     sync.RWMutex
	clients map[int64]*Sub

	limits [3]atomic.Pointer[Limit]
	// events is notify-keyspace-events; subscribers counts channels and patterns with
	// subscribers, so that keyspace events cost nothing to build when no one listens.
	events      atomic.Uint32
	subscribers atomic.Int32

	// Disconnects counts connections closed for going over their output buffer limits.
	Disconnects atomic.Int64
	// NetOutput counts bytes written by pushes' writers and flushes through outboxes.
	NetOutput atomic.Int64
	// OnDisconnect, when set, is told about each such connection (for the server log).
	OnDisconnect func(id int64, class int)

	// Tracking is the client-side caching table (CLIENT TRACKING).
	Tracking *Tracking
}

// NewHub returns an empty registry with Redis's default output buffer limits.
func NewHub() *Hub {
	h := &Hub{
		channels: map[string]map[*Sub]struct{}{},
		patterns: map[string]map[*Sub]struct{}{},
		shard:    map[string]map[*Sub]struct{}{},
		clients:  map[int64]*Sub{},
	}
	h.SetLimit(ClassNormal, Limit{})
	h.SetLimit(ClassReplica, Limit{Hard: 256 << 20, Soft: 64 << 20, SoftSeconds: 60})
	h.SetLimit(ClassPubSub, Limit{Hard: 32 << 20, Soft: 8 << 20, SoftSeconds: 60})
	h.Tracking = newTracking(h)
	return h
}

// SetLimit sets a client class's output buffer limit (client-output-buffer-limit).
func (h *Hub) SetLimit(class int, l Limit) { h.limits[class].Store(&l) }

// Sub is one connection's side of pub/sub and client-side caching: its subscriptions, its
// tracking state and the outbox its pushes wait in. The connection owns it; other goroutines
// only queue pushes on it.
type Sub struct {
	ID  int64
	hub *Hub
	// proto is the connection's protocol, which publishers encode for.
	proto atomic.Int32

	// The connection's subscriptions, guarded by hub.mu; seq orders them for UNSUBSCRIBE
	// without arguments, which Redis answers in subscription order for patterns.
	channels map[string]uint64
	patterns map[string]uint64
	shard    map[string]uint64
	seq      uint64
	// nSub and nShard mirror the counts for lock-free reads (CLIENT LIST, the RESP2
	// subscribed-mode check): channels plus patterns, and shard channels.
	nChannels, nPatterns, nShard atomic.Int32

	out outbox
	trk trackState
}

// NewSub registers a connection with the hub: w is its socket, kill closes it (used when it
// goes over its output buffer limits or its socket fails).
func (h *Hub) NewSub(id int64, w interface{ Write([]byte) (int, error) }, kill func()) *Sub {
	s := &Sub{ID: id, hub: h}
	s.proto.Store(2)
	s.out.init(w, kill, &h.NetOutput)
	h.cmu.Lock()
	h.clients[id] = s
	h.cmu.Unlock()
	return s
}

// Lookup finds a connection's Sub by its client ID.
func (h *Hub) Lookup(id int64) *Sub {
	h.cmu.RLock()
	defer h.cmu.RUnlock()
	return h.clients[id]
}

// Close drops every subscription and the tracking state of a connection that closed, and
// discards its queued pushes.
func (s *Sub) Close() { s.hub.Release(s) }

// Subscriptions lists the connection's channels, shard channels and patterns, for ACL's check
// of a user whose channel rules were narrowed.
func (s *Sub) Subscriptions() (channels, shard, patterns []string) {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	for n := range s.channels {
		channels = append(channels, n)
	}
	for n := range s.shard {
		shard = append(shard, n)
	}
	for n := range s.patterns {
		patterns = append(patterns, n)
	}
	return channels, shard, patterns
}

// Release drops every subscription and the tracking state of a connection that closed.
func (h *Hub) Release(s *Sub) {
	h.Tracking.Disable(s)
	h.mu.Lock()
	for ch := range s.channels {
		h.removeLocked(h.channels, ch, s)
	}
	for p := range s.patterns {
		h.removePatternLocked(p, s)
	}
	for ch := range s.shard {
		h.removeLocked(h.shard, ch, s)
	}
	s.channels, s.patterns, s.shard = nil, nil, nil
	s.nChannels.Store(0)
	s.nPatterns.Store(0)
	s.nShard.Store(0)
	h.mu.Unlock()
	h.cmu.Lock()
	if h.clients[s.ID] == s {
		delete(h.clients, s.ID)
	}
	h.cmu.Unlock()
	s.out.mu.Lock()
	s.out.closeLocked()
	s.out.mu.Unlock()
}

// SetProto records the connection's protocol (HELLO, RESET), which its pushes are encoded in.
func (s *Sub) SetProto(p int) { s.proto.Store(int32(p)) }

// Proto is the protocol the connection speaks.
func (s *Sub) Proto() int { return int(s.proto.Load()) }

// Counts returns the connection's channel, pattern and shard-channel subscription counts.
func (s *Sub) Counts() (channels, patterns, shard int) {
	return int(s.nChannels.Load()), int(s.nPatterns.Load()), int(s.nShard.Load())
}

// Subscribed reports whether the connection is in pub/sub mode (Redis's CLIENT_PUBSUB):
// subscribed to any channel, pattern or shard channel.
func (s *Sub) Subscribed() bool {
	return s.nChannels.Load()+s.nPatterns.Load()+s.nShard.Load() > 0
}

// Active reports whether the connection's output goes through its outbox.
func (s *Sub) Active() bool { return s.out.active.Load() }

// Flush writes the connection's replies after whatever pushes were queued before them. The
// connection's goroutine calls it instead of writing its socket once Active.
func (s *Sub) Flush(reply []byte) error { return s.out.flush(reply) }

// Pending is the size of the connection's unsent output (CLIENT LIST omem).
func (s *Sub) Pending() int64 { return s.out.Pending() }

// Take moves the connection's unsent replies into its outbox, behind the pushes queued
// already, and makes the outbox carry its output from now on.
func (s *Sub) Take(reply []byte) { s.out.take(reply) }

// Hold keeps pushes queued, without a writer, while the connection waits in a blocking
// command (BLPOP and friends): when the command is served, its reply must reach the client
// before any push that the same write caused (an invalidation of the key it moved to), as
// Redis writes an unblocked client's reply first. Meanwhile Wake is signalled for each push
// and the connection sends them with Flush(nil). Unhold ends the wait: the connection's next
// Flush writes its reply first, then what is queued, and lets writers run again.
func (s *Sub) Hold() {
	s.out.mu.Lock()
	s.out.held = true
	s.out.mu.Unlock()
}

// Unhold ends Hold; see there. Pushes stay held until the connection's next Flush, which
// it makes right after writing the blocked command's reply: the outbox is made active so
// that the flush goes through it.
func (s *Sub) Unhold() {
	s.out.mu.Lock()
	if s.out.held {
		s.out.replyFirst = true
		s.out.active.Store(true)
	}
	s.out.mu.Unlock()
}

// Wake is signalled when a push is queued while the connection holds its pushes.
func (s *Sub) Wake() <-chan struct{} { return s.out.wake }

// HasQueued reports whether pushes wait in the queue.
func (s *Sub) HasQueued() bool {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	return len(s.out.queue) > 0
}

// class is the connection's client-output-buffer-limit class.
func (s *Sub) class() int {
	if s.Subscribed() {
		return ClassPubSub
	}
	return ClassNormal
}

// push queues an encoded push on s, applying its output buffer limit.
func (h *Hub) push(s *Sub, chunk []byte) {
	class := s.class()
	_, over := s.out.enqueue(chunk, *h.limits[class].Load(), nowMs())
	if over {
		h.Disconnects.Add(1)
		if h.OnDisconnect != nil {
			h.OnDisconnect(s.ID, class)
		}
	}
}

// PushRaw queues bytes already encoded for the connection (a MONITOR line), under its
// output buffer limit like any push; they are shared, never copied or changed.
func (s *Sub) PushRaw(chunk []byte) { s.hub.push(s, chunk) }

// QueuedChunks is the number of pushes waiting in the outbox (CLIENT LIST oll).
func (s *Sub) QueuedChunks() int {
	s.out.mu.Lock()
	defer s.out.mu.Unlock()
	return len(s.out.queue)
}

// Local is the connection executing the current command, if any: pushes for it go into its
// reply buffer W, in order with its replies, instead of its outbox.
type Local struct {
	Sub *Sub
	W   *resp.Writer
}

// Kinds of subscription.
const (
	KindChannel = iota
	KindPattern
	KindShard
)

var (
	wordSubscribe    = []string{"subscribe", "psubscribe", "ssubscribe"}
	wordUnsubscribe  = []string{"unsubscribe", "punsubscribe", "sunsubscribe"}
	wordMessage      = []byte("message")
	wordPMessage     = []byte("pmessage")
	wordSMessage     = []byte("smessage")
	nullByProto      = [4]string{2: "$-1\r\n", 3: "_\r\n"}
	arrayHeadByProto = [4]byte{2: '*', 3: '>'}
)

func (s *Sub) set(kind int) *map[string]uint64 {
	switch kind {
	case KindPattern:
		return &s.patterns
	case KindShard:
		return &s.shard
	}
	return &s.channels
}

func (h *Hub) table(kind int) map[string]map[*Sub]struct{} {
	switch kind {
	case KindPattern:
		return h.patterns
	case KindShard:
		return h.shard
	}
	return h.channels
}

// count is the number a (un)subscribe confirmation reports: channels plus patterns, or shard
// channels for the shard kind.
func (s *Sub) count(kind int) int64 {
	if kind == KindShard {
		return int64(len(s.shard))
	}
	return int64(len(s.channels) + len(s.patterns))
}

func (s *Sub) syncCounts() {
	s.nChannels.Store(int32(len(s.channels)))
	s.nPatterns.Store(int32(len(s.patterns)))
	s.nShard.Store(int32(len(s.shard)))
}

// Subscribe adds s to each name's subscribers (SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE) and writes a
// confirmation per name into w, the connection's reply buffer. Before it lets the hub go, it
// moves w's contents into s's outbox when moveOut is set, so that the confirmations precede
// every message the subscriptions let in.
func (h *Hub) Subscribe(s *Sub, kind int, names [][]byte, w *resp.Writer, moveOut func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := s.set(kind)
	if *m == nil {
		*m = map[string]uint64{}
	}
	for _, n := range names {
		name := string(n)
		if _, ok := (*m)[name]; !ok {
			s.seq++
			(*m)[name] = s.seq
			t := h.table(kind)
			subs := t[name]
			if subs == nil {
				subs = map[*Sub]struct{}{}
				t[name] = subs
				if kind == KindPattern {
					h.patList = append(h.patList, name)
				}
			}
			subs[s] = struct{}{}
		}
		s.syncCounts()
		confirm(w, wordSubscribe[kind], n, s.count(kind))
	}
	h.syncSubscribers()
	moveOut()
}

// Unsubscribe removes s from each name (UNSUBSCRIBE and friends); no names means all of s's
// subscriptions of that kind, in the order they were made. Each gets a confirmation in w; when
// s had none, one confirmation with a null name, as Redis replies.
func (h *Hub) Unsubscribe(s *Sub, kind int, names [][]byte, w *resp.Writer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := s.set(kind)
	if len(names) == 0 {
		if len(*m) == 0 {
			confirmNull(w, wordUnsubscribe[kind], s.count(kind))
			return
		}
		all := make([]string, 0, len(*m))
		for n := range *m {
			all = append(all, n)
		}
		sort.Slice(all, func(i, j int) bool { return (*m)[all[i]] < (*m)[all[j]] })
		for _, n := range all {
			h.unsubscribeLocked(s, kind, n)
			confirm(w, wordUnsubscribe[kind], []byte(n), s.count(kind))
		}
		return
	}
	for _, n := range names {
		h.unsubscribeLocked(s, kind, string(n))
		confirm(w, wordUnsubscribe[kind], n, s.count(kind))
	}
}

// UnsubscribeAll drops every subscription of s without confirmations (RESET).
func (h *Hub) UnsubscribeAll(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, kind := range []int{KindChannel, KindPattern, KindShard} {
		for n := range *s.set(kind) {
			h.unsubscribeLocked(s, kind, n)
		}
	}
}

func (h *Hub) unsubscribeLocked(s *Sub, kind int, name string) {
	m := s.set(kind)
	if _, ok := (*m)[name]; !ok {
		return
	}
	delete(*m, name)
	if kind == KindPattern {
		h.removePatternLocked(name, s)
	} else {
		h.removeLocked(h.table(kind), name, s)
	}
	s.syncCounts()
}

func (h *Hub) removeLocked(t map[string]map[*Sub]struct{}, name string, s *Sub) {
	subs := t[name]
	delete(subs, s)
	if len(subs) == 0 {
		delete(t, name)
	}
	h.syncSubscribers()
}

func (h *Hub) syncSubscribers() { h.subscribers.Store(int32(len(h.channels) + len(h.patterns))) }

func (h *Hub) removePatternLocked(name string, s *Sub) {
	subs := h.patterns[name]
	delete(subs, s)
	if len(subs) == 0 {
		delete(h.patterns, name)
		if i := slices.Index(h.patList, name); i >= 0 {
			h.patList = slices.Delete(h.patList, i, i+1)
		}
	}
	h.syncSubscribers()
}

func confirm(w *resp.Writer, word string, name []byte, n int64) {
	w.Push(3)
	w.BulkString(word)
	w.Bulk(name)
	w.Int(n)
}

func confirmNull(w *resp.Writer, word string, n int64) {
	w.Push(3)
	w.BulkString(word)
	w.Null()
	w.Int(n)
}

// message encodes a pub/sub message for one protocol: [kind, (pattern,) channel, payload].
type message struct {
	kind    []byte
	pattern []byte
	channel []byte
	payload []byte
	// raw, when set, is the payload already in RESP (tracking's key arrays, a null).
	raw bool
	enc [4][]byte
}

func (m *message) bytes(proto int) []byte {
	if proto != 3 {
		proto = 2
	}
	if b := m.enc[proto]; b != nil {
		return b
	}
	n := 3
	if m.pattern != nil {
		n = 4
	}
	size := 16 + len(m.kind) + len(m.pattern) + len(m.channel) + len(m.payload) + 4*16
	b := make([]byte, 0, size)
	b = append(b, arrayHeadByProto[proto])
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, '\r', '\n')
	b = appendBulk(b, m.kind)
	if m.pattern != nil {
		b = appendBulk(b, m.pattern)
	}
	b = appendBulk(b, m.channel)
	if m.raw {
		b = append(b, m.payload...)
	} else {
		b = appendBulk(b, m.payload)
	}
	m.enc[proto] = b
	return b
}

func appendBulk(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

// deliver sends m to s: into the executing connection's reply buffer when s is it, otherwise
// onto s's outbox.
func (h *Hub) deliver(s *Sub, m *message, local Local) {
	if local.Sub != nil && s == local.Sub && local.W != nil {
		local.W.Raw(m.bytes(local.W.Proto))
		return
	}
	h.push(s, m.bytes(s.Proto()))
}

// Publish sends message to channel's subscribers and to the subscribers of every pattern that
// matches it (PUBLISH), and returns how many deliveries it made, as Redis counts them: a
// connection subscribed to the channel and to two matching patterns counts three times.
func (h *Hub) Publish(channel, payload []byte, local Local) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	if subs := h.channels[string(channel)]; len(subs) > 0 {
		m := &message{kind: wordMessage, channel: channel, payload: payload}
		for s := range subs {
			h.deliver(s, m, local)
			n++
		}
	}
	for _, p := range h.patList {
		if !glob.Match(p, string(channel), false) {
			continue
		}
		m := &message{kind: wordPMessage, pattern: []byte(p), channel: channel, payload: payload}
		for s := range h.patterns[p] {
			h.deliver(s, m, local)
			n++
		}
	}
	return n
}

// PublishShard sends message to a shard channel's subscribers (SPUBLISH); patterns do not
// apply.
func (h *Hub) PublishShard(channel, payload []byte, local Local) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs := h.shard[string(channel)]
	if len(subs) == 0 {
		return 0
	}
	m := &message{kind: wordSMessage, channel: channel, payload: payload}
	for s := range subs {
		h.deliver(s, m, local)
	}
	return len(subs)
}

// HasSubscribers reports whether anyone could receive a message (a cheap check that lets
// keyspace events skip building channel names). It takes the lock: call it only when events
// are enabled.
func (h *Hub) HasSubscribers() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.channels) > 0 || len(h.patterns) > 0
}

// Channels lists the channels (shard channels for KindShard) with at least one subscriber
// that match pattern (all when nil), for PUBSUB CHANNELS and SHARDCHANNELS.
func (h *Hub) Channels(kind int, pattern []byte) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for ch := range h.table(kind) {
		if pattern == nil || glob.Match(string(pattern), ch, false) {
			out = append(out, ch)
		}
	}
	return out
}

// NumSub is a channel's (or shard channel's) subscriber count, patterns not included.
func (h *Hub) NumSub(kind int, channel []byte) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.table(kind)[string(channel)])
}

// Stats returns the numbers of channels, patterns and shard channels with subscribers, for
// INFO (pubsub_channels, pubsub_patterns, pubsubshard_channels) and PUBSUB NUMPAT.
func (h *Hub) Stats() (channels, patterns, shard int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.channels), len(h.patterns), len(h.shard)
}

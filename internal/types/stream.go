package types

import (
	"encoding/binary"
	"math"
	"sort"
	"strconv"
	"sync/atomic"
	"unsafe"
)

// Stream is a Redis stream: entries ordered by ID, each a list of field-value pairs, plus the
// 7.0 metadata (last generated ID, recorded first ID, largest deleted ID, entries ever added)
// and the consumer groups.
//
// Entries live in nodes, as Redis keeps them in listpacks hung off a radix tree: a node holds up
// to stream-node-max-entries entries (live and deleted) and about stream-node-max-bytes bytes in
// one packed byte slice, and the nodes sit in a slice ordered by their first ("master") ID. An
// entry stores its ID as deltas from the master ID and its field names only when they differ
// from the fields of the node's first entry, so an entry of one small field costs a handful of
// bytes and no pointer. Appending touches the last node (O(1)); a range read finds its first
// node by binary search and scans within it (O(log N) plus the node); XDEL marks an entry deleted
// in place and drops its node once the node has no live entry left; trimming drops whole nodes
// from the head and, when exact, marks entries within the next one, exactly as Redis does, so
// that approximate trimming ("~") removes what Redis would remove.
//
// Strings passed to callbacks alias the stream: copy them before changing it.
type Stream struct {
	nodes        []*streamNode
	length       uint64
	lastID       StreamID
	firstID      StreamID
	maxDeletedID StreamID
	entriesAdded uint64
	groups       []*StreamGroup // ordered by name
}

// StreamID is an entry ID: a millisecond time and a sequence number, ordered as one 128-bit
// number.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the largest ID ("+").
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Compare returns -1, 0 or 1 as a is smaller than, equal to or greater than b.
func (a StreamID) Compare(b StreamID) int {
	switch {
	case a.Ms < b.Ms:
		return -1
	case a.Ms > b.Ms:
		return 1
	case a.Seq < b.Seq:
		return -1
	case a.Seq > b.Seq:
		return 1
	}
	return 0
}

// Less reports a < b.
func (a StreamID) Less(b StreamID) bool { return a.Ms < b.Ms || (a.Ms == b.Ms && a.Seq < b.Seq) }

// IsZero reports whether the ID is 0-0.
func (a StreamID) IsZero() bool { return a.Ms == 0 && a.Seq == 0 }

// Next returns the following ID; ok is false (and the ID 0-0) past the largest one, as Redis's
// streamIncrID wraps.
func (a StreamID) Next() (StreamID, bool) {
	switch {
	case a.Seq != math.MaxUint64:
		return StreamID{a.Ms, a.Seq + 1}, true
	case a.Ms != math.MaxUint64:
		return StreamID{a.Ms + 1, 0}, true
	}
	return StreamID{}, false
}

// Prev returns the preceding ID; ok is false (and the ID the largest) before 0-0.
func (a StreamID) Prev() (StreamID, bool) {
	switch {
	case a.Seq != 0:
		return StreamID{a.Ms, a.Seq - 1}, true
	case a.Ms != 0:
		return StreamID{a.Ms - 1, math.MaxUint64}, true
	}
	return MaxStreamID, false
}

// AppendTo appends the ID as "ms-seq".
func (a StreamID) AppendTo(dst []byte) []byte {
	dst = strconv.AppendUint(dst, a.Ms, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, a.Seq, 10)
}

// String formats the ID as "ms-seq".
func (a StreamID) String() string { return string(a.AppendTo(make([]byte, 0, 41))) }

// Node limits, stream-node-max-bytes and stream-node-max-entries (Redis's defaults 4096 and 100),
// process-wide and atomic as the other types' limits are.
var streamNodeMaxBytes, streamNodeMaxEntries atomic.Int64

func init() { SetStreamNodeLimits(4096, 100) }

// SetStreamNodeLimits sets how many bytes and entries a stream node may hold before appends
// open a new one; 0 means no limit (bytes are still capped at 1 GiB, as in Redis). Existing
// nodes keep their size.
func SetStreamNodeLimits(bytes, entries int64) {
	streamNodeMaxBytes.Store(bytes)
	streamNodeMaxEntries.Store(entries)
}

// StreamTrimLimitDefault is the LIMIT an approximate trim gets when none is given: 100 nodes'
// worth of entries, within Redis's bounds.
func StreamTrimLimitDefault() int64 {
	l := 100 * streamNodeMaxEntries.Load()
	if l <= 0 {
		l = 10000
	}
	return min(l, 1000000)
}

const (
	streamMaxNodeBytes = 1 << 30
	entryDeleted       = 1 << 0
	entrySameFields    = 1 << 1
	// nodeOverhead approximates a listpack's header and master entry bookkeeping, so that
	// stream-node-max-bytes splits nodes about where Redis does.
	nodeOverhead = 16
)

// streamNode is a run of consecutive entries: Redis's listpack under one radix tree key.
type streamNode struct {
	master StreamID // the first entry's ID; entries store deltas from it
	last   StreamID // the last entry's ID, deleted or not
	// fields are the master fields (the first entry's field names), packed.
	fields  []byte
	nfields int
	live    int // entries not deleted
	deleted int // entries marked deleted
	// data holds the entries, each: flags byte, uvarint ms delta, zigzag varint seq delta,
	// then, unless entrySameFields, uvarint field count and field/value pairs, otherwise the
	// values alone; every string is a uvarint length and its bytes.
	data []byte
}

func (n *streamNode) bytes() int { return nodeOverhead + len(n.fields) + len(n.data) }

func appendStreamStr(dst []byte, s []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// nodeStr decodes the string at p[i:] without checks: node data is written only by this file.
func nodeStr(p []byte, i int) (string, int) {
	l, k := binary.Uvarint(p[i:])
	i += k
	return unsafe.String(unsafe.SliceData(p[i:]), int(l)), i + int(l)
}

// entryAt decodes the entry starting at data[i]: its flags, its ID and where its strings start,
// and the offset of the next entry (computed only when fv is given or next is needed).
type nodeEntry struct {
	off   int // offset of the flags byte
	flags byte
	id    StreamID
}

// scan calls fn for every entry of the node in order, with the entry's field-value strings in
// fv when fill is set, until fn returns false.
func (n *streamNode) scan(fill bool, fv []string, fn func(e nodeEntry, fv []string) bool) {
	p := n.data
	for i := 0; i < len(p); {
		e := nodeEntry{off: i, flags: p[i]}
		i++
		msd, k := binary.Uvarint(p[i:])
		i += k
		seqd, k := binary.Varint(p[i:])
		i += k
		e.id = StreamID{n.master.Ms + msd, n.master.Seq + uint64(seqd)}
		fv = fv[:0]
		if e.flags&entrySameFields != 0 {
			fi := 0
			for range n.nfields {
				var f, v string
				if fill {
					f, fi = nodeStr(n.fields, fi)
				}
				v, i = nodeStr(p, i)
				if fill {
					fv = append(fv, f, v)
				}
			}
		} else {
			nf, k := binary.Uvarint(p[i:])
			i += k
			for range 2 * nf {
				var s string
				s, i = nodeStr(p, i)
				if fill {
					fv = append(fv, s)
				}
			}
		}
		if !fn(e, fv) {
			return
		}
	}
}

// Len is the number of entries.
func (s *Stream) Len() uint64 { return s.length }

// LastID is the last generated ID (last-generated-id): the largest ID ever added or set with
// XSETID, which new IDs must exceed.
func (s *Stream) LastID() StreamID { return s.lastID }

// FirstID is the recorded first entry ID (recorded-first-entry-id): the first live entry's,
// or 0-0 when the stream is empty.
func (s *Stream) FirstID() StreamID { return s.firstID }

// MaxDeletedID is the largest ID XDEL removed (max-deleted-entry-id).
func (s *Stream) MaxDeletedID() StreamID { return s.maxDeletedID }

// EntriesAdded counts every entry ever added (entries-added).
func (s *Stream) EntriesAdded() uint64 { return s.entriesAdded }

// SetMeta is XSETID's change: the last ID, and the entries-added counter and the largest
// deleted ID when given (ok flags). The caller has checked them against the entries.
func (s *Stream) SetMeta(last StreamID, entriesAdded uint64, setAdded bool, maxDeleted StreamID) {
	s.lastID = last
	if setAdded {
		s.entriesAdded = entriesAdded
	}
	if !maxDeleted.IsZero() {
		s.maxDeletedID = maxDeleted
	}
}

// Nodes is the number of nodes (XINFO STREAM's radix-tree-keys).
func (s *Stream) Nodes() int { return len(s.nodes) }

// Encoding is OBJECT ENCODING's answer.
func (s *Stream) Encoding() string { return "stream" }

// RaxNodes is the number of nodes of the radix tree Redis would keep over this stream's nodes
// (XINFO STREAM's radix-tree-nodes): each node's master ID is a 16-byte big-endian key, and a
// compressed radix tree has one node per run of shared bytes, per branching point and per key.
func (s *Stream) RaxNodes() int {
	if len(s.nodes) == 0 {
		return 1 // the empty root
	}
	keys := make([][16]byte, len(s.nodes))
	for i, n := range s.nodes {
		binary.BigEndian.PutUint64(keys[i][:8], n.master.Ms)
		binary.BigEndian.PutUint64(keys[i][8:], n.master.Seq)
	}
	return raxCount(keys, 0)
}

// raxCount counts the radix tree nodes below depth d for sorted, distinct keys sharing their
// first d bytes.
func raxCount(keys [][16]byte, d int) int {
	if d == 16 {
		return 1 // the key's own (leaf) node
	}
	first, last := keys[0], keys[len(keys)-1]
	p := d
	for p < 16 && first[p] == last[p] {
		p++
	}
	if p > d {
		return 1 + raxCount(keys, p) // a compressed node for the shared run
	}
	n := 1 // a branching node, then one subtree per distinct byte
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j][d] == keys[i][d] {
			j++
		}
		n += raxCount(keys[i:j], d+1)
		i = j
	}
	return n
}

// NewStream returns an empty stream.
func NewStream() *Stream { return &Stream{} }

// NextID returns the ID XADD * generates at time nowMs: nowMs-0 when later than the last ID,
// otherwise the last ID plus one (ok false when that overflows).
func (s *Stream) NextID(nowMs uint64) (StreamID, bool) {
	if nowMs > s.lastID.Ms {
		return StreamID{nowMs, 0}, true
	}
	return s.lastID.Next()
}

// Append adds an entry with the given ID, which the caller has checked is greater than LastID;
// fv holds the field-value pairs, which are copied.
func (s *Stream) Append(id StreamID, fv [][]byte) {
	nf := len(fv) / 2
	total := 0
	for _, x := range fv {
		total += len(x)
	}
	var n *streamNode
	if len(s.nodes) > 0 {
		n = s.nodes[len(s.nodes)-1]
		maxBytes := streamNodeMaxBytes.Load()
		if maxBytes <= 0 || maxBytes > streamMaxNodeBytes {
			maxBytes = streamMaxNodeBytes
		}
		if int64(n.bytes()+total) >= maxBytes {
			n = nil
		} else if me := streamNodeMaxEntries.Load(); me > 0 && int64(n.live+n.deleted) >= me {
			n = nil
		}
	}
	flags := byte(0)
	if n == nil {
		n = &streamNode{master: id, nfields: nf}
		for i := 0; i < len(fv); i += 2 {
			n.fields = appendStreamStr(n.fields, fv[i])
		}
		s.nodes = append(s.nodes, n)
		flags = entrySameFields
	} else if nf == n.nfields {
		flags = entrySameFields
		fi := 0
		for i := 0; i < len(fv); i += 2 {
			var f string
			f, fi = nodeStr(n.fields, fi)
			if f != string(fv[i]) {
				flags = 0
				break
			}
		}
	}
	n.data = append(n.data, flags)
	n.data = binary.AppendUvarint(n.data, id.Ms-n.master.Ms)
	n.data = binary.AppendVarint(n.data, int64(id.Seq-n.master.Seq))
	if flags&entrySameFields != 0 {
		for i := 1; i < len(fv); i += 2 {
			n.data = appendStreamStr(n.data, fv[i])
		}
	} else {
		n.data = binary.AppendUvarint(n.data, uint64(nf))
		for _, x := range fv {
			n.data = appendStreamStr(n.data, x)
		}
	}
	n.live++
	n.last = id
	s.length++
	s.entriesAdded++
	s.lastID = id
	if s.length == 1 {
		s.firstID = id
	}
}

// nodeFor returns the index of the node that may hold id: the last node whose master ID is
// not greater than id (0 when id precedes them all).
func (s *Stream) nodeFor(id StreamID) int {
	i := sort.Search(len(s.nodes), func(i int) bool { return id.Less(s.nodes[i].master) })
	return max(i-1, 0)
}

// Range calls fn for each live entry with an ID in [start, end], in ID order or, with rev, in
// reverse, until fn returns false. fv holds the entry's fields and values, alternating, and is
// valid during the call only.
func (s *Stream) Range(start, end StreamID, rev bool, fn func(id StreamID, fv []string) bool) {
	if len(s.nodes) == 0 || end.Less(start) {
		return
	}
	fv := make([]string, 0, 8)
	if !rev {
		for ni := s.nodeFor(start); ni < len(s.nodes); ni++ {
			n := s.nodes[ni]
			if end.Less(n.master) {
				return
			}
			if n.last.Less(start) {
				continue
			}
			stop := false
			n.scan(true, fv, func(e nodeEntry, fv []string) bool {
				if e.id.Less(start) || e.flags&entryDeleted != 0 {
					return true
				}
				if end.Less(e.id) || !fn(e.id, fv) {
					stop = true
					return false
				}
				return true
			})
			if stop {
				return
			}
		}
		return
	}
	var offs []int
	for ni := s.nodeFor(end); ni >= 0; ni-- {
		n := s.nodes[ni]
		if n.last.Less(start) {
			return
		}
		if end.Less(n.master) {
			continue
		}
		// Nodes are scanned forward; their live entries in range are replayed backwards.
		offs = offs[:0]
		n.scan(false, nil, func(e nodeEntry, _ []string) bool {
			if end.Less(e.id) {
				return false
			}
			if !e.id.Less(start) && e.flags&entryDeleted == 0 {
				offs = append(offs, e.off)
			}
			return true
		})
		for j := len(offs) - 1; j >= 0; j-- {
			sub := streamNode{master: n.master, fields: n.fields, nfields: n.nfields, data: n.data[offs[j]:]}
			stop := false
			sub.scan(true, fv, func(e nodeEntry, fv []string) bool {
				stop = !fn(e.id, fv)
				return false
			})
			if stop {
				return
			}
		}
	}
}

// Get returns the fields and values of the entry id, valid until the stream changes.
func (s *Stream) Get(id StreamID) ([]string, bool) {
	var out []string
	found := false
	s.Range(id, id, false, func(_ StreamID, fv []string) bool {
		out, found = append([]string(nil), fv...), true
		return false
	})
	return out, found
}

// Exists reports whether a live entry has this ID.
func (s *Stream) Exists(id StreamID) bool {
	found := false
	s.Range(id, id, false, func(StreamID, []string) bool {
		found = true
		return false
	})
	return found
}

// FirstEntryID returns the first live entry's ID; ok is false when the stream is empty.
func (s *Stream) FirstEntryID() (id StreamID, ok bool) {
	s.Range(StreamID{}, MaxStreamID, false, func(x StreamID, _ []string) bool {
		id, ok = x, true
		return false
	})
	return id, ok
}

// LastEntryID returns the last live entry's ID; ok is false when the stream is empty.
func (s *Stream) LastEntryID() (id StreamID, ok bool) {
	s.Range(StreamID{}, MaxStreamID, true, func(x StreamID, _ []string) bool {
		id, ok = x, true
		return false
	})
	return id, ok
}

// Delete removes the entry id (XDEL) and reports whether it existed. The recorded first ID and
// the largest deleted ID are updated as XDEL updates them.
func (s *Stream) Delete(id StreamID) bool {
	if len(s.nodes) == 0 {
		return false
	}
	ni := s.nodeFor(id)
	n := s.nodes[ni]
	found := false
	n.scan(false, nil, func(e nodeEntry, _ []string) bool {
		if e.id.Less(id) {
			return true
		}
		if e.id == id && e.flags&entryDeleted == 0 {
			n.data[e.off] |= entryDeleted
			found = true
		}
		return false
	})
	if !found {
		return false
	}
	n.live--
	n.deleted++
	if n.live == 0 {
		s.nodes = append(s.nodes[:ni], s.nodes[ni+1:]...)
	}
	s.length--
	if s.maxDeletedID.Less(id) {
		s.maxDeletedID = id
	}
	if s.length == 0 {
		s.firstID = StreamID{}
	} else if id == s.firstID {
		s.firstID, _ = s.FirstEntryID()
	}
	return true
}

// Trim strategies.
const (
	TrimNone = iota
	TrimMaxLen
	TrimMinID
)

// TrimArgs is XADD's and XTRIM's trimming request.
type TrimArgs struct {
	Strategy int
	MaxLen   uint64
	MinID    StreamID
	// Approx removes whole nodes only ("~").
	Approx bool
	// Limit caps the entries removed; 0 for none.
	Limit int64
}

// Trim removes entries from the head as a requests, the way Redis's streamTrim does (whole
// nodes first; within a node only when exact), and returns how many it removed.
func (s *Stream) Trim(a TrimArgs) int64 {
	if a.Strategy == TrimNone {
		return 0
	}
	var deleted int64
	drop := 0 // whole nodes removed from the head
	for drop < len(s.nodes) {
		if a.Strategy == TrimMaxLen && s.length <= a.MaxLen {
			break
		}
		n := s.nodes[drop]
		entries := int64(n.live)
		if a.Limit != 0 && deleted+entries > a.Limit {
			break
		}
		var remove bool
		if a.Strategy == TrimMaxLen {
			remove = s.length-uint64(entries) >= a.MaxLen
		} else {
			remove = n.last.Less(a.MinID)
		}
		if remove {
			drop++
			s.length -= uint64(entries)
			deleted += entries
			continue
		}
		if a.Approx {
			break
		}
		var marked int
		n.scan(false, nil, func(e nodeEntry, _ []string) bool {
			if a.Strategy == TrimMaxLen {
				if s.length <= a.MaxLen {
					return false
				}
			} else if !e.id.Less(a.MinID) {
				return false
			}
			if e.flags&entryDeleted == 0 {
				n.data[e.off] |= entryDeleted
				marked++
				s.length--
			}
			return true
		})
		n.live -= marked
		n.deleted += marked
		deleted += int64(marked)
		break
	}
	if drop > 0 {
		clear(s.nodes[:drop])
		s.nodes = s.nodes[drop:]
	}
	if s.length == 0 {
		s.firstID = StreamID{}
	} else if deleted > 0 {
		s.firstID, _ = s.FirstEntryID()
	}
	return deleted
}

// RangeHasTombstones reports whether an entry deleted by XDEL may lie in [start, +] (Redis's
// streamRangeHasTombstones with no end): lag is computed only without one.
func (s *Stream) rangeHasTombstones(start StreamID) bool {
	if s.length == 0 || s.maxDeletedID.IsZero() {
		return false
	}
	if s.maxDeletedID.Less(s.firstID) {
		return false
	}
	return !s.maxDeletedID.Less(start)
}

// EstimateEntriesRead is the entries-read Redis gives a group loaded from a payload that has
// none (Redis 6.2 and older): estimateDistance of its last-delivered ID.
func (s *Stream) EstimateEntriesRead(id StreamID) int64 { return s.estimateDistance(id) }

// estimateDistance is Redis's streamEstimateDistanceFromFirstEverEntry: the logical read
// counter of id, or -1 when it cannot be known.
func (s *Stream) estimateDistance(id StreamID) int64 {
	if s.entriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Compare(s.lastID) < 1 {
		return int64(s.entriesAdded)
	}
	switch id.Compare(s.lastID) {
	case 0:
		return int64(s.entriesAdded)
	case 1:
		return -1
	}
	if s.maxDeletedID.IsZero() || s.maxDeletedID.Less(s.firstID) {
		switch id.Compare(s.firstID) {
		case -1:
			return int64(s.entriesAdded - s.length)
		case 0:
			return int64(s.entriesAdded - s.length + 1)
		}
	}
	return -1
}

// Lag is a group's lag (XINFO GROUPS): entries not yet delivered to it; ok is false when it
// cannot be known (deleted entries ahead of it).
func (s *Stream) Lag(g *StreamGroup) (int64, bool) {
	if s.entriesAdded == 0 {
		return 0, true
	}
	if g.EntriesRead >= 0 && !s.rangeHasTombstones(g.LastID) {
		return int64(s.entriesAdded) - g.EntriesRead, true
	}
	if read := s.estimateDistance(g.LastID); read >= 0 {
		return int64(s.entriesAdded) - read, true
	}
	return 0, false
}

// Deliver records that the group delivered entry id (a read with ">"): it moves the group's
// last ID and keeps its read counter, as Redis's streamReplyWithRange does. It reports whether
// the last ID moved.
func (s *Stream) Deliver(g *StreamGroup, id StreamID) bool {
	if !g.LastID.Less(id) {
		return false
	}
	if g.EntriesRead >= 0 && !s.rangeHasTombstones(id) {
		g.EntriesRead++
	} else if s.entriesAdded != 0 {
		g.EntriesRead = s.estimateDistance(id)
	}
	g.LastID = id
	return true
}

// ---- Consumer groups ----

// StreamGroup is a consumer group: its last delivered ID, its read counter (-1 when unknown),
// its pending entries list and its consumers.
type StreamGroup struct {
	Name        string
	LastID      StreamID
	EntriesRead int64
	pel         nackIndex
	consumers   []*StreamConsumer // ordered by name
}

// StreamConsumer is a consumer of a group, with its own pending entries.
type StreamConsumer struct {
	Name     string
	SeenTime int64
	pel      nackIndex
}

// NACK is a pending entry: delivered to Consumer and not acknowledged yet. The group's PEL and
// its consumer's PEL share it.
type NACK struct {
	ID            StreamID
	DeliveryTime  int64
	DeliveryCount uint64
	Consumer      *StreamConsumer
}

// Groups returns the groups in name order; the slice must not be changed.
func (s *Stream) Groups() []*StreamGroup { return s.groups }

func (s *Stream) groupIndex(name string) (int, bool) {
	i := sort.Search(len(s.groups), func(i int) bool { return s.groups[i].Name >= name })
	return i, i < len(s.groups) && s.groups[i].Name == name
}

// Group returns the group called name, or nil.
func (s *Stream) Group(name string) *StreamGroup {
	if i, ok := s.groupIndex(name); ok {
		return s.groups[i]
	}
	return nil
}

// CreateGroup adds a group; nil when the name is taken.
func (s *Stream) CreateGroup(name string, last StreamID, entriesRead int64) *StreamGroup {
	i, ok := s.groupIndex(name)
	if ok {
		return nil
	}
	g := &StreamGroup{Name: name, LastID: last, EntriesRead: entriesRead}
	s.groups = append(s.groups, nil)
	copy(s.groups[i+1:], s.groups[i:])
	s.groups[i] = g
	return g
}

// DestroyGroup removes the group called name and reports whether there was one.
func (s *Stream) DestroyGroup(name string) bool {
	i, ok := s.groupIndex(name)
	if !ok {
		return false
	}
	s.groups = append(s.groups[:i], s.groups[i+1:]...)
	return true
}

// Consumers returns the group's consumers in name order; the slice must not be changed.
func (g *StreamGroup) Consumers() []*StreamConsumer { return g.consumers }

func (g *StreamGroup) consumerIndex(name string) (int, bool) {
	i := sort.Search(len(g.consumers), func(i int) bool { return g.consumers[i].Name >= name })
	return i, i < len(g.consumers) && g.consumers[i].Name == name
}

// Consumer returns the consumer called name, or nil.
func (g *StreamGroup) Consumer(name string) *StreamConsumer {
	if i, ok := g.consumerIndex(name); ok {
		return g.consumers[i]
	}
	return nil
}

// CreateConsumer adds a consumer seen at now; nil when the name is taken.
func (g *StreamGroup) CreateConsumer(name string, now int64) *StreamConsumer {
	i, ok := g.consumerIndex(name)
	if ok {
		return nil
	}
	c := &StreamConsumer{Name: name, SeenTime: now}
	g.consumers = append(g.consumers, nil)
	copy(g.consumers[i+1:], g.consumers[i:])
	g.consumers[i] = c
	return c
}

// DeleteConsumer removes a consumer and its pending entries from the group, returning how many
// entries it had pending.
func (g *StreamGroup) DeleteConsumer(c *StreamConsumer) int {
	n := c.pel.Len()
	c.pel.each(func(x *NACK) { g.pel.remove(x.ID) })
	if i, ok := g.consumerIndex(c.Name); ok {
		g.consumers = append(g.consumers[:i], g.consumers[i+1:]...)
	}
	return n
}

// PendingLen is the size of the group's PEL.
func (g *StreamGroup) PendingLen() int { return g.pel.Len() }

// PendingLen is the size of the consumer's PEL.
func (c *StreamConsumer) PendingLen() int { return c.pel.Len() }

// Pending returns the group's pending entry id, or nil.
func (g *StreamGroup) Pending(id StreamID) *NACK { return g.pel.find(id) }

// PendingFrom returns the group's first pending entry with an ID >= id, or nil.
func (g *StreamGroup) PendingFrom(id StreamID) *NACK { return g.pel.ceil(id) }

// PendingFrom returns the consumer's first pending entry with an ID >= id, or nil.
func (c *StreamConsumer) PendingFrom(id StreamID) *NACK { return c.pel.ceil(id) }

// FirstPending and LastPending return the group's smallest and largest pending IDs.
func (g *StreamGroup) FirstPending() *NACK { return g.pel.first() }

// LastPending returns the group's largest pending entry, or nil.
func (g *StreamGroup) LastPending() *NACK { return g.pel.last() }

// Ack removes id from the PELs and reports whether it was pending.
func (g *StreamGroup) Ack(id StreamID) bool {
	n := g.pel.remove(id)
	if n == nil {
		return false
	}
	if n.Consumer != nil {
		n.Consumer.pel.remove(id)
	}
	return true
}

// Assign makes c the owner of pending entry id, creating the entry (delivered once, at now)
// when it is not pending, or moving it from its previous owner with its delivery time and count
// left to the caller. It returns the entry.
func (g *StreamGroup) Assign(id StreamID, c *StreamConsumer, now int64) *NACK {
	n := g.pel.find(id)
	if n == nil {
		n = &NACK{ID: id, DeliveryTime: now, DeliveryCount: 1, Consumer: c}
		g.pel.insert(n)
		c.pel.insert(n)
		return n
	}
	if n.Consumer != c {
		if n.Consumer != nil {
			n.Consumer.pel.remove(id)
		}
		n.Consumer = c
		c.pel.insert(n)
	}
	return n
}

// ---- nackIndex: an ID-ordered set of pending entries ----

// nackIndex keeps NACKs ordered by ID in chunks of bounded size, found by binary search over
// the chunks' last IDs and then within the chunk: O(log N) lookups and small, cache-friendly
// moves for inserts and removals, without a node per entry.
type nackIndex struct {
	chunks [][]*NACK
	n      int
}

const nackChunkMax = 128

func (x *nackIndex) Len() int { return x.n }

// chunkFor returns the first chunk whose last ID is >= id (len(chunks) when none).
func (x *nackIndex) chunkFor(id StreamID) int {
	return sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return !c[len(c)-1].ID.Less(id)
	})
}

func searchChunk(c []*NACK, id StreamID) int {
	return sort.Search(len(c), func(i int) bool { return !c[i].ID.Less(id) })
}

func (x *nackIndex) find(id StreamID) *NACK {
	ci := x.chunkFor(id)
	if ci == len(x.chunks) {
		return nil
	}
	c := x.chunks[ci]
	if j := searchChunk(c, id); j < len(c) && c[j].ID == id {
		return c[j]
	}
	return nil
}

func (x *nackIndex) ceil(id StreamID) *NACK {
	ci := x.chunkFor(id)
	if ci == len(x.chunks) {
		return nil
	}
	c := x.chunks[ci]
	return c[searchChunk(c, id)]
}

func (x *nackIndex) first() *NACK {
	if x.n == 0 {
		return nil
	}
	return x.chunks[0][0]
}

func (x *nackIndex) last() *NACK {
	if x.n == 0 {
		return nil
	}
	c := x.chunks[len(x.chunks)-1]
	return c[len(c)-1]
}

// insert adds n and reports false when its ID is already there.
func (x *nackIndex) insert(n *NACK) bool {
	if len(x.chunks) == 0 {
		x.chunks = [][]*NACK{{n}}
		x.n = 1
		return true
	}
	ci := x.chunkFor(n.ID)
	if ci == len(x.chunks) {
		ci-- // past every ID: the last chunk takes it
	}
	c := x.chunks[ci]
	j := searchChunk(c, n.ID)
	if j < len(c) && c[j].ID == n.ID {
		return false
	}
	c = append(c, nil)
	copy(c[j+1:], c[j:])
	c[j] = n
	if len(c) > nackChunkMax {
		half := len(c) / 2
		right := append([]*NACK(nil), c[half:]...)
		clear(c[half:])
		c = c[:half:half]
		x.chunks = append(x.chunks, nil)
		copy(x.chunks[ci+2:], x.chunks[ci+1:])
		x.chunks[ci+1] = right
	}
	x.chunks[ci] = c
	x.n++
	return true
}

// remove deletes id and returns its NACK, or nil.
func (x *nackIndex) remove(id StreamID) *NACK {
	ci := x.chunkFor(id)
	if ci == len(x.chunks) {
		return nil
	}
	c := x.chunks[ci]
	j := searchChunk(c, id)
	if j == len(c) || c[j].ID != id {
		return nil
	}
	n := c[j]
	copy(c[j:], c[j+1:])
	c[len(c)-1] = nil
	c = c[:len(c)-1]
	if len(c) == 0 {
		x.chunks = append(x.chunks[:ci], x.chunks[ci+1:]...)
	} else {
		x.chunks[ci] = c
	}
	x.n--
	return n
}

// each calls fn for every NACK in ID order; fn must not change the index.
func (x *nackIndex) each(fn func(n *NACK)) {
	for _, c := range x.chunks {
		for _, n := range c {
			fn(n)
		}
	}
}

// EachPending calls fn for the group's pending entries in ID order until it returns false;
// fn must not change the PEL.
func (g *StreamGroup) EachPending(fn func(n *NACK) bool) {
	for _, c := range g.pel.chunks {
		for _, n := range c {
			if !fn(n) {
				return
			}
		}
	}
}

// EachPending calls fn for the consumer's pending entries in ID order until it returns false;
// fn must not change the PEL.
func (c *StreamConsumer) EachPending(fn func(n *NACK) bool) {
	for _, ch := range c.pel.chunks {
		for _, n := range ch {
			if !fn(n) {
				return
			}
		}
	}
}

// ---- Copies, size, snapshots ----

// Clone implements store.Cloner (COPY): a stream sharing nothing with s.
func (s *Stream) Clone() any {
	c := &Stream{length: s.length, lastID: s.lastID, firstID: s.firstID, maxDeletedID: s.maxDeletedID,
		entriesAdded: s.entriesAdded, nodes: make([]*streamNode, len(s.nodes))}
	for i, n := range s.nodes {
		cn := *n
		cn.fields = append([]byte(nil), n.fields...)
		cn.data = append([]byte(nil), n.data...)
		c.nodes[i] = &cn
	}
	for _, g := range s.groups {
		cg := &StreamGroup{Name: g.Name, LastID: g.LastID, EntriesRead: g.EntriesRead}
		for _, con := range g.consumers {
			cc := &StreamConsumer{Name: con.Name, SeenTime: con.SeenTime}
			cg.consumers = append(cg.consumers, cc)
			con.pel.each(func(n *NACK) {
				cn := &NACK{ID: n.ID, DeliveryTime: n.DeliveryTime, DeliveryCount: n.DeliveryCount, Consumer: cc}
				cc.pel.insert(cn)
				cg.pel.insert(cn)
			})
		}
		c.groups = append(c.groups, cg)
	}
	return c
}

// MemoryUsage implements MEMORY USAGE's estimate (every entry and pending entry counted).
func (s *Stream) MemoryUsage(samples int) int64 {
	size := int64(96 + 8*cap(s.nodes))
	for _, n := range s.nodes {
		size += 96 + int64(cap(n.fields)+cap(n.data))
	}
	for _, g := range s.groups {
		size += 96 + int64(len(g.Name)) + int64(g.pel.Len())*(48+16)
		for _, c := range g.consumers {
			size += 64 + int64(len(c.Name))
		}
	}
	return size
}

// AppendPayload appends the stream's snapshot payload (docs/persistence.md, STREAM record):
//
//	uvarint length | uvarint entries_added | id last | id max_deleted
//	entries: length times: uvarint ms_delta (from the previous entry; the first from 0)
//	         | uvarint seq | uvarint pair_count | pairs as uvarint length + bytes
//	uvarint group_count, each: string name | id last_delivered | varint entries_read
//	         | uvarint consumer_count, each: string name | varint seen_time
//	         | uvarint pending_count, each: id | varint delivery_time | uvarint delivery_count
//
// where id is two uvarints (ms, seq) and a string a uvarint length and bytes. Deleted entries
// are left out, and a group's PEL is the union of its consumers' (each pending entry has one
// owner), so the payload is the stream's logical content, whatever its node layout.
func (s *Stream) AppendPayload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, s.length)
	dst = binary.AppendUvarint(dst, s.entriesAdded)
	dst = appendPayloadID(dst, s.lastID)
	dst = appendPayloadID(dst, s.maxDeletedID)
	var prevMs uint64
	for _, n := range s.nodes {
		n.scan(true, nil, func(e nodeEntry, fv []string) bool {
			if e.flags&entryDeleted != 0 {
				return true
			}
			dst = binary.AppendUvarint(dst, e.id.Ms-prevMs)
			prevMs = e.id.Ms
			dst = binary.AppendUvarint(dst, e.id.Seq)
			dst = binary.AppendUvarint(dst, uint64(len(fv)/2))
			for _, x := range fv {
				dst = binary.AppendUvarint(dst, uint64(len(x)))
				dst = append(dst, x...)
			}
			return true
		})
	}
	dst = binary.AppendUvarint(dst, uint64(len(s.groups)))
	for _, g := range s.groups {
		dst = binary.AppendUvarint(dst, uint64(len(g.Name)))
		dst = append(dst, g.Name...)
		dst = appendPayloadID(dst, g.LastID)
		dst = binary.AppendVarint(dst, g.EntriesRead)
		dst = binary.AppendUvarint(dst, uint64(len(g.consumers)))
		for _, c := range g.consumers {
			dst = binary.AppendUvarint(dst, uint64(len(c.Name)))
			dst = append(dst, c.Name...)
			dst = binary.AppendVarint(dst, c.SeenTime)
			dst = binary.AppendUvarint(dst, uint64(c.pel.Len()))
			c.pel.each(func(n *NACK) {
				dst = appendPayloadID(dst, n.ID)
				dst = binary.AppendVarint(dst, n.DeliveryTime)
				dst = binary.AppendUvarint(dst, n.DeliveryCount)
			})
		}
	}
	return dst
}

func appendPayloadID(dst []byte, id StreamID) []byte {
	dst = binary.AppendUvarint(dst, id.Ms)
	return binary.AppendUvarint(dst, id.Seq)
}

// streamReader decodes a payload, remembering the first error.
type streamReader struct {
	p   []byte
	bad bool
}

func (r *streamReader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, k := binary.Uvarint(r.p)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[k:]
	return v
}

func (r *streamReader) varint() int64 {
	if r.bad {
		return 0
	}
	v, k := binary.Varint(r.p)
	if k <= 0 {
		r.bad = true
		return 0
	}
	r.p = r.p[k:]
	return v
}

func (r *streamReader) id() StreamID { return StreamID{r.uvarint(), r.uvarint()} }

// count reads a count of items that each take at least minBytes, rejecting counts the rest of
// the payload cannot hold (so a crafted count cannot make the decoder allocate).
func (r *streamReader) count(minBytes int) int {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.p)/minBytes) {
		r.bad = true
		return 0
	}
	return int(n)
}

func (r *streamReader) bytes() []byte {
	l := r.uvarint()
	if r.bad || l > uint64(len(r.p)) {
		r.bad = true
		return nil
	}
	b := r.p[:l:l]
	r.p = r.p[l:]
	return b
}

// errBadStream is StreamFromPayload's error for a payload that does not decode or describes an
// impossible stream.
type errBadStream string

func (e errBadStream) Error() string { return "malformed stream payload: " + string(e) }

// StreamFromPayload decodes AppendPayload's output, copying what it keeps. It rejects payloads
// that do not decode or describe a stream the commands could not have built (IDs out of order,
// a last ID below an entry, pending entries owned twice), never panicking.
func StreamFromPayload(p []byte) (*Stream, error) {
	r := &streamReader{p: p}
	s := NewStream()
	length := r.count(3)
	added := r.uvarint()
	last := r.id()
	maxDel := r.id()
	if r.bad {
		return nil, errBadStream("truncated header")
	}
	var prev StreamID
	var ms uint64
	var fv [][]byte
	for i := 0; i < length; i++ {
		d := r.uvarint()
		seq := r.uvarint()
		pairs := r.count(2)
		if r.bad {
			return nil, errBadStream("truncated entry")
		}
		if ms+d < ms {
			return nil, errBadStream("entry ID overflows")
		}
		ms += d
		id := StreamID{ms, seq}
		if (i > 0 && !prev.Less(id)) || id.IsZero() {
			return nil, errBadStream("entry IDs out of order")
		}
		if pairs == 0 {
			return nil, errBadStream("entry without fields")
		}
		fv = fv[:0]
		for range 2 * pairs {
			fv = append(fv, r.bytes())
		}
		if r.bad {
			return nil, errBadStream("truncated entry")
		}
		s.Append(id, fv) // copies
		prev = id
	}
	if length > 0 && last.Less(prev) {
		return nil, errBadStream("last ID below the last entry")
	}
	if added < uint64(length) {
		return nil, errBadStream("entries-added below the length")
	}
	if last.Less(maxDel) {
		return nil, errBadStream("max deleted ID above the last ID")
	}
	s.lastID, s.entriesAdded, s.maxDeletedID = last, added, maxDel
	ngroups := r.count(4)
	for range ngroups {
		name := r.bytes()
		glast := r.id()
		read := r.varint()
		nc := r.count(3)
		if r.bad {
			return nil, errBadStream("truncated group")
		}
		if read < -1 {
			return nil, errBadStream("negative entries-read")
		}
		g := s.CreateGroup(string(name), glast, read)
		if g == nil {
			return nil, errBadStream("duplicate group")
		}
		for range nc {
			cname := r.bytes()
			seen := r.varint()
			np := r.count(4)
			if r.bad {
				return nil, errBadStream("truncated consumer")
			}
			c := g.CreateConsumer(string(cname), seen)
			if c == nil {
				return nil, errBadStream("duplicate consumer")
			}
			for range np {
				id := r.id()
				at := r.varint()
				cnt := r.uvarint()
				if r.bad {
					return nil, errBadStream("truncated pending entry")
				}
				n := &NACK{ID: id, DeliveryTime: at, DeliveryCount: cnt, Consumer: c}
				if !g.pel.insert(n) {
					return nil, errBadStream("pending entry owned twice")
				}
				c.pel.insert(n)
			}
		}
	}
	if r.bad {
		return nil, errBadStream("truncated")
	}
	if len(r.p) != 0 {
		return nil, errBadStream("trailing bytes")
	}
	return s, nil
}

package rdb

import (
	"encoding/binary"
	"strconv"
)

// Redis's stream object types: 5.0 to 6.2 (no counters), 7.0 (entries-added, max deleted ID,
// first ID, each group's entries-read) and 7.2 (each consumer's active time).
const (
	typeStreamListpacks  = 15
	typeStreamListpacks2 = 19
	typeStreamListpacks3 = 21
)

// ID is a stream entry ID.
type ID struct{ Ms, Seq uint64 }

// Less orders IDs.
func (a ID) Less(b ID) bool { return a.Ms < b.Ms || (a.Ms == b.Ms && a.Seq < b.Seq) }

// Stream is a stream read from a Redis payload, in plain terms for the caller to build its own
// value from: live entries in ID order, the stream's counters, and the consumer groups.
type Stream struct {
	Entries      []StreamEntry
	LastID       ID
	MaxDeleted   ID
	EntriesAdded uint64
	// Legacy is set for a payload of Redis 6.2 or older, which has no entries-added, max
	// deleted ID or entries-read: Redis then takes entries-added as the length and estimates
	// each group's entries-read, and so must the caller (EntriesRead is -1).
	Legacy bool
	Groups []StreamGroup
}

// StreamEntry is one entry: its ID and its fields and values, alternately.
type StreamEntry struct {
	ID     ID
	Fields [][]byte
}

// StreamGroup is a consumer group with its pending entries, each owned by one consumer.
type StreamGroup struct {
	Name        []byte
	LastID      ID
	EntriesRead int64 // -1: unknown (legacy payloads)
	Consumers   []StreamConsumer
}

// StreamConsumer is a consumer and the pending entries it owns.
type StreamConsumer struct {
	Name     []byte
	SeenTime int64
	Pending  []Pending
}

// Pending is a delivered, unacknowledged entry.
type Pending struct {
	ID            ID
	DeliveryTime  int64
	DeliveryCount uint64
}

// Stream entry flags in a listpack node.
const (
	entryDeleted    = 1
	entrySameFields = 2
)

// stream reads a stream object of type t (rdbLoadObject's stream branch).
func (r *reader) stream(t byte) *Stream {
	s := &Stream{Legacy: t == typeStreamListpacks}
	nodes := r.count0()
	for range nodes {
		key := r.str()
		if len(key) != 16 {
			r.fail()
			return nil
		}
		master := ID{binary.BigEndian.Uint64(key), binary.BigEndian.Uint64(key[8:])}
		elems := r.packedBlob(listpack)
		if r.bad || len(elems) == 0 || !s.readNode(master, elems) {
			r.fail()
			return nil
		}
	}
	length := r.uint()
	s.LastID = ID{r.uint(), r.uint()}
	if t == typeStreamListpacks {
		s.EntriesAdded = length
	} else {
		_ = ID{r.uint(), r.uint()} // the first entry's ID, which the entries give
		s.MaxDeleted = ID{r.uint(), r.uint()}
		s.EntriesAdded = r.uint()
	}
	if r.bad || length != uint64(len(s.Entries)) || (length > 0 && s.LastID.Less(s.Entries[length-1].ID)) {
		r.fail()
		return nil
	}
	groups := r.count0()
	for range groups {
		g := StreamGroup{Name: r.str(), LastID: ID{r.uint(), r.uint()}, EntriesRead: -1}
		if t != typeStreamListpacks {
			g.EntriesRead = int64(r.uint())
		}
		// The group's PEL has the delivery data; each consumer then names the entries it owns.
		type nack struct {
			p     Pending
			owned bool
		}
		pel := map[ID]*nack{}
		for range r.count0() {
			raw := r.take(16)
			tm := r.take(8)
			cnt := r.uint()
			if r.bad {
				return nil
			}
			id := ID{binary.BigEndian.Uint64(raw), binary.BigEndian.Uint64(raw[8:])}
			pel[id] = &nack{p: Pending{ID: id, DeliveryTime: int64(binary.LittleEndian.Uint64(tm)), DeliveryCount: cnt}}
		}
		for range r.count0() {
			c := StreamConsumer{Name: r.str()}
			if tm := r.take(8); tm != nil {
				c.SeenTime = int64(binary.LittleEndian.Uint64(tm))
			}
			if t == typeStreamListpacks3 {
				r.take(8) // active time: HotKV keeps seen time only
			}
			for range r.count0() {
				raw := r.take(16)
				if r.bad {
					return nil
				}
				n := pel[ID{binary.BigEndian.Uint64(raw), binary.BigEndian.Uint64(raw[8:])}]
				if n == nil || n.owned {
					r.fail() // Redis refuses a consumer entry missing from the group's PEL
					return nil
				}
				n.owned = true
				c.Pending = append(c.Pending, n.p)
			}
			g.Consumers = append(g.Consumers, c)
		}
		for _, n := range pel {
			if !n.owned {
				r.fail() // every pending entry has an owner
				return nil
			}
		}
		s.Groups = append(s.Groups, g)
	}
	if r.bad {
		return nil
	}
	return s
}

// count0 is count for collections that may be empty (a stream's nodes, groups, PELs).
func (r *reader) count0() int {
	n, enc := r.length()
	if enc || n > uint64(r.left()) {
		r.fail()
		return 0
	}
	return int(n)
}

// uint reads a plain length-encoded number.
func (r *reader) uint() uint64 {
	n, enc := r.length()
	if enc {
		r.fail()
	}
	return n
}

// readNode decodes one listpack node of a stream: the master entry (count, deleted, the master
// fields, 0), then each entry (flags, ms and seq deltas from the master ID, its fields or only
// values when it has the master's fields, and its element count), appending live entries.
func (s *Stream) readNode(master ID, elems [][]byte) bool {
	i := 0
	num := func() (int64, bool) {
		if i >= len(elems) {
			return 0, false
		}
		v, err := strconv.ParseInt(string(elems[i]), 10, 64)
		i++
		return v, err == nil
	}
	count, ok1 := num()
	deleted, ok2 := num()
	nmf, ok3 := num()
	if !ok1 || !ok2 || !ok3 || count < 0 || deleted < 0 || nmf <= 0 || int(nmf) > len(elems)-i {
		return false
	}
	masterFields := elems[i : i+int(nmf)]
	i += int(nmf)
	if end, ok := num(); !ok || end != 0 {
		return false
	}
	for i < len(elems) {
		flags, ok1 := num()
		msd, ok2 := num()
		seqd, ok3 := num()
		if !ok1 || !ok2 || !ok3 {
			return false
		}
		id := ID{master.Ms + uint64(msd), master.Seq + uint64(seqd)}
		var fv [][]byte
		if flags&entrySameFields != 0 {
			if int(nmf) > len(elems)-i {
				return false
			}
			for _, f := range masterFields {
				fv = append(fv, f, elems[i])
				i++
			}
		} else {
			nf, ok := num()
			if !ok || nf <= 0 || 2*int(nf) > len(elems)-i {
				return false
			}
			fv = append(fv, elems[i:i+2*int(nf)]...)
			i += 2 * int(nf)
		}
		if _, ok := num(); !ok { // the entry's element count, for backward walks
			return false
		}
		if flags&entryDeleted != 0 {
			continue
		}
		if n := len(s.Entries); n > 0 && !s.Entries[n-1].ID.Less(id) {
			return false
		}
		s.Entries = append(s.Entries, StreamEntry{ID: id, Fields: fv})
	}
	return true
}

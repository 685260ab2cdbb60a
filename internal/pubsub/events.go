package pubsub

import (
	"strconv"
	"strings"
)

// Keyspace event classes: the bits of notify-keyspace-events, Redis's NOTIFY_* values.
const (
	EventKeyspace uint32 = 1 << 0  // K: __keyspace@<db>__:<key> channels
	EventKeyevent uint32 = 1 << 1  // E: __keyevent@<db>__:<event> channels
	EventGeneric  uint32 = 1 << 2  // g: DEL, EXPIRE, RENAME, ...
	EventString   uint32 = 1 << 3  // $
	EventList     uint32 = 1 << 4  // l
	EventSet      uint32 = 1 << 5  // s
	EventHash     uint32 = 1 << 6  // h
	EventZSet     uint32 = 1 << 7  // z
	EventExpired  uint32 = 1 << 8  // x
	EventEvicted  uint32 = 1 << 9  // e
	EventStream   uint32 = 1 << 10 // t
	EventKeyMiss  uint32 = 1 << 11 // m (not part of A)
	EventModule   uint32 = 1 << 13 // d
	EventNew      uint32 = 1 << 14 // n (not part of A)
	// EventAll is A: every class but m and n.
	EventAll = EventGeneric | EventString | EventList | EventSet | EventHash | EventZSet |
		EventExpired | EventEvicted | EventStream | EventModule
)

// ParseEvents reads a notify-keyspace-events value as Redis's keyspaceEventsStringToFlags;
// ok is false when it holds a character that names no class.
func ParseEvents(s string) (flags uint32, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'A':
			flags |= EventAll
		case 'g':
			flags |= EventGeneric
		case '$':
			flags |= EventString
		case 'l':
			flags |= EventList
		case 's':
			flags |= EventSet
		case 'h':
			flags |= EventHash
		case 'z':
			flags |= EventZSet
		case 'x':
			flags |= EventExpired
		case 'e':
			flags |= EventEvicted
		case 'K':
			flags |= EventKeyspace
		case 'E':
			flags |= EventKeyevent
		case 't':
			flags |= EventStream
		case 'm':
			flags |= EventKeyMiss
		case 'd':
			flags |= EventModule
		case 'n':
			flags |= EventNew
		default:
			return 0, false
		}
	}
	return flags, true
}

// FormatEvents writes flags in Redis's canonical form (keyspaceEventsFlagsToString), which
// CONFIG GET reports: "AKE" rather than "KEA", classes before K, E and m.
func FormatEvents(flags uint32) string {
	var b strings.Builder
	if flags&EventAll == EventAll {
		b.WriteByte('A')
	} else {
		for _, c := range []struct {
			f  uint32
			ch byte
		}{{EventGeneric, 'g'}, {EventString, '$'}, {EventList, 'l'}, {EventSet, 's'},
			{EventHash, 'h'}, {EventZSet, 'z'}, {EventExpired, 'x'}, {EventEvicted, 'e'},
			{EventStream, 't'}, {EventModule, 'd'}, {EventNew, 'n'}} {
			if flags&c.f != 0 {
				b.WriteByte(c.ch)
			}
		}
	}
	if flags&EventKeyspace != 0 {
		b.WriteByte('K')
	}
	if flags&EventKeyevent != 0 {
		b.WriteByte('E')
	}
	if flags&EventKeyMiss != 0 {
		b.WriteByte('m')
	}
	return b.String()
}

// SetEvents sets the enabled keyspace event classes (notify-keyspace-events).
func (h *Hub) SetEvents(flags uint32) { h.events.Store(flags) }

// EventsOn reports whether events of class are published: the one atomic load every write
// pays when notifications are off.
func (h *Hub) EventsOn(class uint32) bool {
	f := h.events.Load()
	return f&class != 0 && f&(EventKeyspace|EventKeyevent) != 0
}

// KeyspaceEvent publishes event for key of database db, if its class is enabled (Redis's
// notifyKeyspaceEvent): "<event>" on __keyspace@<db>__:<key> (K) and "<key>" on
// __keyevent@<db>__:<event> (E).
func (h *Hub) KeyspaceEvent(class uint32, event string, db int, key []byte, local Local) {
	f := h.events.Load()
	if f&class == 0 || h.subscribers.Load() == 0 {
		return
	}
	dbs := strconv.Itoa(db)
	if f&EventKeyspace != 0 {
		ch := make([]byte, 0, 16+len(dbs)+len(key))
		ch = append(append(append(append(ch, "__keyspace@"...), dbs...), "__:"...), key...)
		h.Publish(ch, []byte(event), local)
	}
	if f&EventKeyevent != 0 {
		ch := make([]byte, 0, 16+len(dbs)+len(event))
		ch = append(append(append(append(ch, "__keyevent@"...), dbs...), "__:"...), event...)
		h.Publish(ch, key, local)
	}
}

package server

import (
	"strconv"
	"strings"

	"github.com/hotkv/hotkv/internal/pubsub"
	"github.com/hotkv/hotkv/internal/store"
)

// watchKeyspace connects the keys the store deletes by itself to keyspace events and
// client-side caching: an expired key (lazily or in the active cycle) publishes "expired"
// (class x) and invalidates the key for tracking clients, as Redis's
// deleteExpiredKeyAndPropagate does; an evicted one publishes "evicted" (class e). Each costs
// an atomic load or two when nothing listens.
func (s *Server) watchKeyspace() {
	hub := s.hub
	prev := s.store.OnExpire
	s.store.OnExpire = func(db int, key string) {
		if prev != nil {
			prev(db, key)
		}
		keyspaceDeleted(hub, pubsub.EventExpired, "expired", db, key)
	}
	s.store.KeyEvents.Fn = func(db int, key []byte, kind uint32) {
		if kind == store.KeyEventNew {
			hub.KeyspaceEvent(pubsub.EventNew, "new", db, key, pubsub.Local{})
		} else {
			hub.KeyspaceEvent(pubsub.EventKeyMiss, "keymiss", db, key, pubsub.Local{})
		}
	}
	prevEvict := s.store.OnEvict
	s.store.OnEvict = func(db int, key string) {
		if prevEvict != nil {
			prevEvict(db, key)
		}
		keyspaceDeleted(hub, pubsub.EventEvicted, "evicted", db, key)
	}
}

func keyspaceDeleted(hub *pubsub.Hub, class uint32, event string, db int, key string) {
	events, tracking := hub.EventsOn(class), hub.Tracking.Active()
	if !events && !tracking {
		return
	}
	k := []byte(key)
	if events {
		hub.KeyspaceEvent(class, event, db, k, pubsub.Local{})
	}
	if tracking {
		hub.Tracking.Invalidate(k, nil)
	}
}

// infoPubSub renders INFO stats' pub/sub and tracking lines, as Redis 7.0 orders them.
func (s *Server) infoPubSubStats() (pubsubLines, trackingLines string) {
	ch, pat, shard := s.hub.Stats()
	keys, items, prefixes, _ := s.hub.Tracking.Stats()
	var b strings.Builder
	b.WriteString("pubsub_channels:" + strconv.Itoa(ch) + "\r\n")
	b.WriteString("pubsub_patterns:" + strconv.Itoa(pat) + "\r\n")
	b.WriteString("pubsubshard_channels:" + strconv.Itoa(shard) + "\r\n")
	pubsubLines = b.String()
	b.Reset()
	b.WriteString("tracking_total_keys:" + strconv.Itoa(keys) + "\r\n")
	b.WriteString("tracking_total_items:" + strconv.Itoa(items) + "\r\n")
	b.WriteString("tracking_total_prefixes:" + strconv.Itoa(prefixes) + "\r\n")
	b.WriteString("client_output_buffer_limit_disconnections:" + strconv.FormatInt(s.hub.Disconnects.Load(), 10) + "\r\n")
	trackingLines = b.String()
	return
}

// trackingClients is INFO clients' tracking_clients.
func (s *Server) trackingClients() int {
	_, _, _, n := s.hub.Tracking.Stats()
	return n
}

// setKeyspaceEvents applies notify-keyspace-events: the hub's classes, and the store's own
// events (new keys, key misses) only when they can be published.
func (s *Server) setKeyspaceEvents(value string) {
	flags, _ := pubsub.ParseEvents(value)
	s.hub.SetEvents(flags)
	var kinds uint32
	if flags&(pubsub.EventKeyspace|pubsub.EventKeyevent) != 0 {
		if flags&pubsub.EventNew != 0 {
			kinds |= store.KeyEventNew
		}
		if flags&pubsub.EventKeyMiss != 0 {
			kinds |= store.KeyEventMiss
		}
	}
	s.store.KeyEvents.Enable(kinds)
}

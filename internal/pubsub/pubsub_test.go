package pubsub

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hotkv/hotkv/internal/resp"
)

// syncBuf is a goroutine-safe writer that can be made to block, standing in for a socket.
type syncBuf struct {
	mu    sync.Mutex
	b     bytes.Buffer
	block chan struct{} // writes wait while it is open
}

func (s *syncBuf) Write(p []byte) (int, error) {
	if s.block != nil {
		<-s.block
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}

func subscribe(h *Hub, s *Sub, kind int, names ...string) string {
	w := resp.NewWriter()
	w.Proto = s.Proto()
	var args [][]byte
	for _, n := range names {
		args = append(args, []byte(n))
	}
	h.Subscribe(s, kind, args, w, func() {})
	return string(w.Buf)
}

func TestPublishEncodesPerProtocol(t *testing.T) {
	h := NewHub()
	var w2, w3 syncBuf
	s2 := h.NewSub(1, &w2, nil)
	s3 := h.NewSub(2, &w3, nil)
	s3.SetProto(3)
	if got := subscribe(h, s2, KindChannel, "ch"); got != "*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n" {
		t.Fatalf("confirmation %q", got)
	}
	if got := subscribe(h, s3, KindPattern, "c?"); got != ">3\r\n$10\r\npsubscribe\r\n$2\r\nc?\r\n:1\r\n" {
		t.Fatalf("confirmation %q", got)
	}
	if n := h.Publish([]byte("ch"), []byte("hi"), Local{}); n != 2 {
		t.Fatalf("receivers %d", n)
	}
	waitFor(t, func() bool { return w2.String() != "" && w3.String() != "" })
	if got := w2.String(); got != "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n" {
		t.Fatalf("RESP2 message %q", got)
	}
	if got := w3.String(); got != ">4\r\n$8\r\npmessage\r\n$2\r\nc?\r\n$2\r\nch\r\n$2\r\nhi\r\n" {
		t.Fatalf("RESP3 pmessage %q", got)
	}
	// The executing connection's own message goes into its reply buffer.
	local := resp.NewWriter()
	h.Publish([]byte("ch"), []byte("me"), Local{Sub: s2, W: local})
	if got := string(local.Buf); got != "*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nme\r\n" {
		t.Fatalf("local %q", got)
	}
	h.Release(s2)
	h.Release(s3)
	if ch, pat, sh := h.Stats(); ch+pat+sh != 0 {
		t.Fatalf("left after release: %d %d %d", ch, pat, sh)
	}
}

func TestOutboxHardLimitDisconnects(t *testing.T) {
	h := NewHub()
	h.SetLimit(ClassPubSub, Limit{Hard: 1000})
	w := &syncBuf{block: make(chan struct{})}
	var killed atomic.Bool
	s := h.NewSub(1, w, func() { killed.Store(true) })
	subscribe(h, s, KindChannel, "ch")
	payload := bytes.Repeat([]byte("x"), 100)
	for i := 0; i < 20 && !killed.Load(); i++ {
		h.Publish([]byte("ch"), payload, Local{})
	}
	if !killed.Load() || h.Disconnects.Load() != 1 {
		t.Fatalf("killed %v, disconnects %d", killed.Load(), h.Disconnects.Load())
	}
	close(w.block)
	if err := s.Flush([]byte("+OK\r\n")); err == nil {
		t.Fatal("flush on a closed outbox succeeded")
	}
}

func TestOutboxSoftLimit(t *testing.T) {
	h := NewHub()
	h.SetLimit(ClassPubSub, Limit{Soft: 100, SoftSeconds: 0})
	w := &syncBuf{block: make(chan struct{})}
	defer close(w.block)
	var killed atomic.Bool
	s := h.NewSub(1, w, func() { killed.Store(true) })
	subscribe(h, s, KindChannel, "ch")
	payload := bytes.Repeat([]byte("x"), 200)
	h.Publish([]byte("ch"), payload, Local{}) // over the soft limit: the clock starts
	if killed.Load() {
		t.Fatal("killed at once")
	}
	time.Sleep(5 * time.Millisecond)
	h.Publish([]byte("ch"), payload, Local{}) // still over, past 0 s
	if !killed.Load() {
		t.Fatal("not killed after soft-seconds over the soft limit")
	}
}

// TestFlushOrdersRepliesAfterQueuedPushes: the connection's reply follows the pushes queued
// before it, and a subscription's confirmation (take) precedes the messages after it.
func TestFlushOrdersRepliesAfterQueuedPushes(t *testing.T) {
	h := NewHub()
	w := &syncBuf{}
	s := h.NewSub(1, w, nil)
	reply := resp.NewWriter()
	reply.Simple("BEFORE")
	var args [][]byte
	args = append(args, []byte("ch"))
	h.Subscribe(s, KindChannel, args, reply, func() { s.Take(reply.Buf); reply.Reset() })
	h.Publish([]byte("ch"), []byte("m1"), Local{})
	waitFor(t, func() bool { return bytes.Contains([]byte(w.String()), []byte("m1")) })
	if err := s.Flush([]byte("+AFTER\r\n")); err != nil {
		t.Fatal(err)
	}
	want := "+BEFORE\r\n*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n*3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nm1\r\n+AFTER\r\n"
	if got := w.String(); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestHoldPutsReplyFirst(t *testing.T) {
	h := NewHub()
	w := &syncBuf{}
	s := h.NewSub(1, w, nil)
	s.SetProto(3)
	subscribe(h, s, KindChannel, "ch")
	s.Take(nil)
	s.Hold()
	h.Publish([]byte("ch"), []byte("late"), Local{})
	select {
	case <-s.Wake():
	case <-time.After(time.Second):
		t.Fatal("no wake while held")
	}
	if w.String() != "" {
		t.Fatalf("written while held: %q", w.String())
	}
	s.Unhold()
	if err := s.Flush([]byte(":1\r\n")); err != nil {
		t.Fatal(err)
	}
	if got := w.String(); got != ":1\r\n>3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$4\r\nlate\r\n" {
		t.Fatalf("got %q", got)
	}
}

func TestEventsParseFormat(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"", ""}, {"KEA", "AKE"}, {"gKE", "gKE"}, {"$lshzxeKE", "$lshzxeKE"}, {"EA", "AE"},
		{"nmKE$", "$nKEm"}, {"Etd", "tdE"}, {"AKEmn", "AKEm"},
	} {
		f, ok := ParseEvents(c.in)
		if !ok {
			t.Fatalf("%q rejected", c.in)
		}
		if got := FormatEvents(f); got != c.out {
			t.Errorf("%q: got %q, want %q", c.in, got, c.out)
		}
	}
	if _, ok := ParseEvents("KEq"); ok {
		t.Fatal("q accepted")
	}
}

func TestKeyspaceEventChannels(t *testing.T) {
	h := NewHub()
	w := &syncBuf{}
	s := h.NewSub(1, w, nil)
	subscribe(h, s, KindPattern, "__key*__:*")
	h.KeyspaceEvent(EventString, "set", 3, []byte("k"), Local{}) // events off
	flags, _ := ParseEvents("KE$")
	h.SetEvents(flags)
	if !h.EventsOn(EventString) || h.EventsOn(EventList) {
		t.Fatal("EventsOn")
	}
	h.KeyspaceEvent(EventString, "set", 3, []byte("k"), Local{})
	want := "*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$16\r\n__keyspace@3__:k\r\n$3\r\nset\r\n" +
		"*4\r\n$8\r\npmessage\r\n$10\r\n__key*__:*\r\n$18\r\n__keyevent@3__:set\r\n$1\r\nk\r\n"
	waitFor(t, func() bool { return len(w.String()) >= len(want) })
	if got := w.String(); got != want {
		t.Fatalf("got %q", got)
	}
}

func TestTrackingInvalidation(t *testing.T) {
	h := NewHub()
	var wa, wr syncBuf
	a := h.NewSub(1, &wa, nil)
	a.SetProto(3)
	r := h.NewSub(2, &wr, nil)
	subscribe(h, r, KindChannel, InvalidationChannel)
	tr := h.Tracking
	tr.Enable(a, Options{})
	tr.Remember(a, [][]byte{[]byte("k1"), []byte("k2")})
	if keys, items, _, clients := tr.Stats(); keys != 2 || items != 2 || clients != 1 {
		t.Fatalf("stats %d %d %d", keys, items, clients)
	}
	tr.Invalidate([]byte("k1"), nil)
	waitFor(t, func() bool { return wa.String() != "" })
	if got := wa.String(); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk1\r\n" {
		t.Fatalf("push %q", got)
	}
	// The executing client's own invalidation waits for the end of its command.
	var b Batch
	b.Reset(a)
	tr.Invalidate([]byte("k2"), &b)
	local := resp.NewWriter()
	local.Proto = 3
	tr.Flush(&b, Local{Sub: a, W: local})
	if got := string(local.Buf); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nk2\r\n" {
		t.Fatalf("deferred %q", got)
	}
	// Redirected to a RESP2 subscriber: a message on __redis__:invalidate.
	tr.Enable(a, Options{Redirect: 2})
	tr.Remember(a, [][]byte{[]byte("k3")})
	tr.Invalidate([]byte("k3"), nil)
	want := "*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$2\r\nk3\r\n"
	waitFor(t, func() bool { return len(wr.String()) >= len(want) })
	if got := wr.String(); got != want {
		t.Fatalf("redirected %q", got)
	}
	// The table's limit evicts keys, telling their clients.
	tr.Enable(a, Options{})
	for i := range 10 {
		tr.Remember(a, [][]byte{[]byte(fmt.Sprint("e", i))})
	}
	tr.SetMaxKeys(3)
	if keys, _, _, _ := tr.Stats(); keys != 3 {
		t.Fatalf("%d keys after the limit", keys)
	}
	tr.Disable(a)
	if _, _, _, clients := tr.Stats(); clients != 0 {
		t.Fatal("still tracking")
	}
}

// BenchmarkPublishFanout measures PUBLISH to n subscribers whose writers discard: the cost of
// encoding once and queueing on every subscriber, and of their writers draining.
func BenchmarkPublishFanout(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) {
			h := NewHub()
			h.SetLimit(ClassPubSub, Limit{})
			for i := range n {
				s := h.NewSub(int64(i+1), io.Discard, nil)
				subscribe(h, s, KindChannel, "bench")
			}
			payload := bytes.Repeat([]byte("p"), 64)
			ch := []byte("bench")
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				h.Publish(ch, payload, Local{})
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "deliveries/s")
		})
	}
}

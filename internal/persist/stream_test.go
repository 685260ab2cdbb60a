package persist

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// sampleStream is a stream with deleted entries, metadata set by XSETID, two groups with
// consumers, pending entries and a consumer without any.
func sampleStream() *types.Stream {
	s := types.NewStream()
	for i := 1; i <= 250; i++ {
		fv := [][]byte{[]byte("f"), []byte(fmt.Sprint(i))}
		if i%7 == 0 {
			fv = append(fv, []byte("other"), []byte(strings.Repeat("v", i)))
		}
		s.Append(types.StreamID{Ms: uint64(1000 + i), Seq: uint64(i % 3)}, fv)
	}
	s.Delete(types.StreamID{Ms: 1001, Seq: 1})
	s.Delete(types.StreamID{Ms: 1100, Seq: 1})
	s.Trim(types.TrimArgs{Strategy: types.TrimMaxLen, MaxLen: 240})
	s.SetMeta(types.StreamID{Ms: 9999, Seq: 5}, 300, true, types.StreamID{Ms: 1100, Seq: 1})
	g := s.CreateGroup("g1", types.StreamID{Ms: 1200, Seq: 0}, 190)
	alice := g.CreateConsumer("alice", 5000)
	bob := g.CreateConsumer("bob", 6000)
	g.CreateConsumer("idle", 7000)
	for i := 20; i < 60; i++ {
		c := alice
		if i%2 == 0 {
			c = bob
		}
		n := g.Assign(types.StreamID{Ms: uint64(1000 + i), Seq: uint64(i % 3)}, c, int64(10000+i))
		n.DeliveryCount = uint64(i % 5)
	}
	s.CreateGroup("g0", types.StreamID{}, -1)
	return s
}

// streamSeedPayloads are valid and broken STREAM bodies for the fuzzer's corpus.
func streamSeedPayloads() [][]byte {
	good := sampleStream().AppendPayload(nil)
	empty := types.NewStream().AppendPayload(nil)
	return [][]byte{good, empty, good[:len(good)/2], append(bytes.Clone(good), 0), good[:7]}
}

func streamDump(s *types.Stream) string {
	var b strings.Builder
	fmt.Fprintf(&b, "len=%d last=%v first=%v maxdel=%v added=%d\n", s.Len(), s.LastID(), s.FirstID(), s.MaxDeletedID(), s.EntriesAdded())
	s.Range(types.StreamID{}, types.MaxStreamID, false, func(id types.StreamID, fv []string) bool {
		fmt.Fprintf(&b, "%v %q\n", id, fv)
		return true
	})
	for _, g := range s.Groups() {
		fmt.Fprintf(&b, "group %s last=%v read=%d pel=%d\n", g.Name, g.LastID, g.EntriesRead, g.PendingLen())
		g.EachPending(func(n *types.NACK) bool {
			fmt.Fprintf(&b, "  %v %s %d %d\n", n.ID, n.Consumer.Name, n.DeliveryTime, n.DeliveryCount)
			return true
		})
		for _, c := range g.Consumers() {
			fmt.Fprintf(&b, "  consumer %s seen=%d pel=%d\n", c.Name, c.SeenTime, c.PendingLen())
		}
	}
	return b.String()
}

// Streams round-trip through a snapshot with their entries, metadata, groups, consumers and
// pending entries, under SAVE (every lock held) and BGSAVE (copied shard by shard).
func TestStreamRoundTrip(t *testing.T) {
	for _, held := range []bool{true, false} {
		st := store.New(2, 4, clock.NewFake(0))
		s := sampleStream()
		st.DB(1).Set([]byte("s"), store.ObjValue(store.KindStream, s), 5000, false, 0)
		st.DB(0).Set([]byte("empty"), store.ObjValue(store.KindStream, types.NewStream()), 0, false, 0)
		var buf bytes.Buffer
		if _, err := Write(&buf, st, SaveOptions{Held: held}); err != nil {
			t.Fatal(err)
		}
		st2 := store.New(2, 4, clock.NewFake(0))
		if _, err := Load(bytes.NewReader(buf.Bytes()), "dump.hkv", st2, LoadOptions{Now: func() int64 { return 0 }}); err != nil {
			t.Fatal(err)
		}
		e := st2.DB(1).Lookup([]byte("s"), 0)
		if e == nil || e.ExpireAt() != 5000 || e.Val.Kind != store.KindStream {
			t.Fatalf("held=%v: %v", held, e)
		}
		if got, want := streamDump(e.Val.Obj().(*types.Stream)), streamDump(s); got != want {
			t.Fatalf("held=%v:\n%s\nwant\n%s", held, got, want)
		}
		if e := st2.DB(0).Lookup([]byte("empty"), 0); e == nil || e.Val.Obj().(*types.Stream).Len() != 0 {
			t.Fatalf("empty stream: %v", e)
		}
	}
}

// The decoder rejects malformed stream payloads with an error naming the record.
func TestStreamPayloadErrors(t *testing.T) {
	id := func(b []byte, ms, seq uint64) []byte { return binary.AppendUvarint(binary.AppendUvarint(b, ms), seq) }
	str := func(b []byte, s string) []byte { return append(binary.AppendUvarint(b, uint64(len(s))), s...) }
	header := func(length, added uint64, lastMs uint64) []byte {
		b := binary.AppendUvarint(nil, length)
		b = binary.AppendUvarint(b, added)
		b = id(b, lastMs, 0)
		return id(b, 0, 0)
	}
	entry := func(b []byte, msDelta, seq uint64) []byte {
		b = id(b, msDelta, seq)
		b = binary.AppendUvarint(b, 1)
		return str(str(b, "f"), "v")
	}
	noGroups := func(b []byte) []byte { return binary.AppendUvarint(b, 0) }
	good := noGroups(entry(entry(header(2, 2, 9), 5, 0), 1, 0))
	if _, err := types.StreamFromPayload(good); err != nil {
		t.Fatalf("good payload: %v", err)
	}
	group := func(name string, consumers ...[]byte) []byte {
		b := str(nil, name)
		b = id(b, 0, 0)
		b = binary.AppendVarint(b, -1)
		b = binary.AppendUvarint(b, uint64(len(consumers)))
		for _, c := range consumers {
			b = append(b, c...)
		}
		return b
	}
	consumer := func(name string, pending ...uint64) []byte {
		b := str(nil, name)
		b = binary.AppendVarint(b, 1)
		b = binary.AppendUvarint(b, uint64(len(pending)))
		for _, ms := range pending {
			b = id(b, ms, 0)
			b = binary.AppendVarint(b, 1)
			b = binary.AppendUvarint(b, 1)
		}
		return b
	}
	withGroups := func(gs ...[]byte) []byte {
		b := entry(entry(header(2, 2, 9), 5, 0), 1, 0)
		b = binary.AppendUvarint(b, uint64(len(gs)))
		for _, g := range gs {
			b = append(b, g...)
		}
		return b
	}
	if _, err := types.StreamFromPayload(withGroups(group("g", consumer("a", 5), consumer("b", 6)))); err != nil {
		t.Fatalf("good groups: %v", err)
	}
	for name, p := range map[string][]byte{
		"empty":              nil,
		"truncated":          good[:len(good)-2],
		"trailing":           append(bytes.Clone(good), 0),
		"huge length":        noGroups(binary.AppendUvarint(nil, 1<<40)),
		"out of order":       noGroups(entry(entry(header(2, 2, 9), 5, 0), 0, 0)),
		"zero ID":            noGroups(entry(header(1, 1, 9), 0, 0)),
		"last below entry":   noGroups(entry(header(1, 1, 2), 5, 0)),
		"added below length": noGroups(entry(entry(header(2, 1, 9), 5, 0), 1, 0)),
		"no fields":          noGroups(binary.AppendUvarint(id(header(1, 1, 9), 5, 0), 0)),
		"duplicate group":    withGroups(group("g"), group("g")),
		"duplicate consumer": withGroups(group("g", consumer("a"), consumer("a"))),
		"owned twice":        withGroups(group("g", consumer("a", 5), consumer("b", 5))),
		"huge group count":   binary.AppendUvarint(entry(entry(header(2, 2, 9), 5, 0), 1, 0), 1<<50),
	} {
		if _, err := types.StreamFromPayload(p); err == nil {
			t.Errorf("%s: decoded", name)
		}
		data := encode(t, Header{Databases: 1}, 0, func(e *Encoder) { e.Record(TypeStream, 0, []byte("x"), 0, p) })
		st := store.New(1, 1, clock.NewFake(0))
		if _, err := Load(bytes.NewReader(data), "dump.hkv", st, LoadOptions{Now: func() int64 { return 0 }}); err == nil || !strings.Contains(err.Error(), "STREAM") {
			t.Errorf("%s: load error %v", name, err)
		}
	}
}

package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/ratelimit"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

const t0 = int64(1700000000000)

// encode builds a snapshot from fn's records.
func encode(t testing.TB, h Header, floor int64, fn func(e *Encoder)) []byte {
	t.Helper()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	fn(e)
	if err := e.Close(floor); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeAll reads every record, copying them.
func decodeAll(data []byte, name string) ([]Record, *Decoder, error) {
	d, err := NewDecoder(bytes.NewReader(data), name)
	if err != nil {
		return nil, nil, err
	}
	var out []Record
	for {
		r, err := d.Next()
		if err == io.EOF {
			return out, d, nil
		}
		if err != nil {
			return out, d, err
		}
		c := *r
		c.Key = bytes.Clone(r.Key)
		c.Body = bytes.Clone(r.Body)
		out = append(out, c)
	}
}

func TestCodecRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3*MaxChunk/16+7) // spans four chunks
	h := Header{CreatedMs: t0, TimeFloorMs: t0 + 5, HotKVVersion: "test", Databases: 16}
	data := encode(t, h, t0+9, func(e *Encoder) {
		e.StringRaw(0, []byte("plain"), 0, []byte("hello"))
		e.StringRaw(15, []byte(""), t0+1000, []byte(""))
		e.StringInt(3, []byte("n"), t0+1, -1<<63)
		e.StringInt(3, []byte("m"), 0, 1<<63-1)
		e.StringRaw(1, big[:100], 1<<62, big)
		e.LimiterDef(LimiterDef{Name: "api", Algo: 1, Limit: 100, WindowMs: 60000, RateText: "2.5", IntervalNs: 400_000_000, TotalAllowed: 7, TotalDenied: 1 << 62})
		e.LimiterKey(LimiterKey{Limiter: "api", Key: []byte("user:1"), Kind: StateTAT, TAT: -5})
		e.LimiterKey(LimiterKey{Limiter: "api", Key: []byte("user:2"), Kind: StateLog, Entries: [][2]int64{{t0, 1}, {t0 + 3, 1 << 40}}})
	})
	recs, d, err := decodeAll(data, "mem")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Header(); got != h {
		t.Fatalf("header %+v, want %+v", got, h)
	}
	if f := d.Footer(); f.Records != 8 || f.Chunks != 4 || f.TimeFloorMs != t0+9 {
		t.Fatalf("footer %+v", f)
	}
	if len(recs) != 8 {
		t.Fatalf("%d records", len(recs))
	}
	check := func(i int, typ RecordType, db int, key string, exp int64) {
		t.Helper()
		r := recs[i]
		if r.Type != typ || r.DB != db || string(r.Key) != key || r.ExpireAt != exp {
			t.Fatalf("record %d: %s db %d key %.20q exp %d", i, r.Type, r.DB, r.Key, r.ExpireAt)
		}
	}
	check(0, TypeString, 0, "plain", 0)
	check(1, TypeString, 15, "", t0+1000)
	check(2, TypeString, 3, "n", t0+1)
	check(4, TypeString, 1, string(big[:100]), 1<<62)
	if isInt, _, raw, err := ParseString(&recs[0]); err != nil || isInt || string(raw) != "hello" {
		t.Fatalf("raw string: %v %v %q", err, isInt, raw)
	}
	if isInt, n, _, err := ParseString(&recs[2]); err != nil || !isInt || n != -1<<63 {
		t.Fatalf("int string: %v %v %d", err, isInt, n)
	}
	if isInt, n, _, err := ParseString(&recs[3]); err != nil || !isInt || n != 1<<63-1 {
		t.Fatalf("int string: %v %v %d", err, isInt, n)
	}
	if _, _, raw, err := ParseString(&recs[4]); err != nil || !bytes.Equal(raw, big) {
		t.Fatalf("big string: %v, %d bytes", err, len(raw))
	}
	def, err := ParseLimiterDef(&recs[5])
	if err != nil || def != (LimiterDef{Name: "api", Algo: 1, Limit: 100, WindowMs: 60000, RateText: "2.5", IntervalNs: 400_000_000, TotalAllowed: 7, TotalDenied: 1 << 62}) {
		t.Fatalf("limiter def: %v %+v", err, def)
	}
	k1, err := ParseLimiterKey(&recs[6])
	if err != nil || k1.Limiter != "api" || string(k1.Key) != "user:1" || k1.Kind != StateTAT || k1.TAT != -5 {
		t.Fatalf("limiter key TAT: %v %+v", err, k1)
	}
	k2, err := ParseLimiterKey(&recs[7])
	if err != nil || k2.Kind != StateLog || fmt.Sprint(k2.Entries) != fmt.Sprint([][2]int64{{t0, 1}, {t0 + 3, 1 << 40}}) {
		t.Fatalf("limiter key LOG: %v %+v", err, k2)
	}
	// The record offsets point at the type bytes.
	for _, r := range recs {
		if data[r.Offset] != byte(r.Type) {
			t.Fatalf("record at offset %d: byte %#x is not its type %s", r.Offset, data[r.Offset], r.Type)
		}
	}
}

func TestEmptySnapshot(t *testing.T) {
	data := encode(t, Header{Databases: 1}, 0, func(*Encoder) {})
	recs, d, err := decodeAll(data, "empty")
	if err != nil || len(recs) != 0 || d.Footer().Chunks != 0 {
		t.Fatalf("empty snapshot: %v %d records %+v", err, len(recs), d.Footer())
	}
}

// sampleStore is a store with every kind of state a snapshot holds.
func sampleStore(t testing.TB, dbs int) *store.Store {
	t.Helper()
	st := store.New(dbs, 4, clock.NewFake(t0))
	set := func(db int, key string, v store.Value, exp int64) {
		d := st.DB(db)
		s := d.ShardFor([]byte(key))
		s.Lock()
		d.Set([]byte(key), v, exp, false, t0)
		s.Unlock()
	}
	for db := 0; db < dbs; db++ {
		set(db, "db", store.Value{Kind: store.KindString, IsInt: true, Int: int64(db)}, 0)
		set(db, fmt.Sprint("raw", db), store.BytesValue([]byte(fmt.Sprint("value of ", db))), 0)
	}
	set(0, "ttl", store.BytesValue([]byte("soon")), t0+12345)
	set(0, "gone", store.BytesValue([]byte("expired")), t0-1) // already expired: not saved
	set(0, "010", store.BytesValue([]byte("010")), 0)         // not a canonical integer: stays raw
	set(0, "gcra", store.Value{Kind: store.KindString, IsInt: true, Int: (t0 + 6000) * ratelimit.NsPerMs}, t0+6000)
	set(dbs-1, "empty", store.BytesValue([]byte{}), 0)

	mk := func(name string, algo store.Algo, limit, window int64, rate string) *store.Limiter {
		r := ratelimit.DefaultRate(limit, window)
		if rate != "" {
			var err error
			if r, err = ratelimit.ParseRate(rate, limit); err != nil {
				t.Fatal(err)
			}
		}
		l := &store.Limiter{Name: name, Algo: algo, Limit: limit, WindowMs: window, Rate: r}
		if !st.Limiters.Create(l, 100) {
			t.Fatal("create", name)
		}
		return l
	}
	sw := mk("sw", store.SlidingWindow, 5, 1000, "")
	tb := mk("tb", store.TokenBucket, 20, 4000, "5")
	lb := mk("lb", store.LeakyBucket, 3, 3000, "0.75")
	for i := int64(0); i < 7; i++ {
		for _, l := range []*store.Limiter{sw, tb, lb} {
			l.Check([]byte(fmt.Sprint("u", i%3)), 1, t0+i*100, 1024, true, nil)
		}
	}
	mk("idle", store.SlidingWindow, 1, 1, "")
	return st
}

// dump renders a store's whole observable state at now, for comparing stores.
func dump(t testing.TB, st *store.Store, now int64) string {
	t.Helper()
	var lines []string
	err := st.SnapshotWalk(now, false, func(db int, e *store.Entry) bool {
		v := fmt.Sprintf("raw:%q", e.Val.Bytes())
		if e.Val.IsInt {
			v = fmt.Sprintf("int:%d", e.Val.Int)
		}
		lines = append(lines, fmt.Sprintf("db%d %q %s exp=%d", db, e.Key(), v, e.ExpireAt()))
		return true
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range st.Limiters.All() {
		a, d := l.Totals()
		lines = append(lines, fmt.Sprintf("limiter %s %s %d %d %+v %d/%d", l.Name, l.Algo, l.Limit, l.WindowMs, l.Rate, a, d))
		_ = l.EachState(now, false, func(k string, tat int64, es []ratelimit.WindowEntry, ls []ratelimit.Lease) {
			lines = append(lines, fmt.Sprintf("  %s %s %d %v %v", l.Name, k, tat, es, ls))
		}, nil)
	}
	sortStrings(lines)
	return strings.Join(lines, "\n")
}

func require(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func TestStoreRoundTrip(t *testing.T) {
	st := sampleStore(t, 16)
	var buf bytes.Buffer
	stats, err := Write(&buf, st, SaveOptions{Now: t0 + 600, TimeFloor: func() int64 { return t0 + 700 }, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Keys != 16*2+4 || stats.Limiters != 4 || stats.LimiterKeys != 8 {
		t.Fatalf("stats %+v", stats)
	}
	st2 := store.New(16, 8, clock.NewFake(t0)) // another shard count: placement is by hash
	var floors []int64
	ls, err := Load(bytes.NewReader(buf.Bytes()), "mem", st2, LoadOptions{
		SetFloor: func(ms int64) { floors = append(floors, ms) },
		Now:      func() int64 { return t0 + 600 },
	})
	if err != nil {
		t.Fatal(err)
	}
	if ls.Keys != stats.Keys || ls.Limiters != 4 || ls.LimiterKeys != 8 || ls.Expired != 0 {
		t.Fatalf("load stats %+v", ls)
	}
	if fmt.Sprint(floors) != fmt.Sprint([]int64{t0 + 700, t0 + 700}) {
		t.Fatalf("floors %v", floors)
	}
	if a, b := dump(t, st, t0+600), dump(t, st2, t0+600); a != b {
		t.Fatalf("state differs after a round trip:\n--- saved\n%s\n--- loaded\n%s", a, b)
	}
	// SAVE's way, every lock held by the caller, writes the same state.
	st.LockAll()
	var held bytes.Buffer
	_, err = Write(&held, st, SaveOptions{Now: t0 + 600, Held: true})
	st.UnlockAll()
	require(t, err)
	st4 := store.New(16, 2, clock.NewFake(t0))
	_, err = Load(bytes.NewReader(held.Bytes()), "held", st4, LoadOptions{Now: func() int64 { return t0 + 600 }})
	require(t, err)
	if a, b := dump(t, st, t0+600), dump(t, st4, t0+600); a != b {
		t.Fatalf("held save differs:\n--- saved\n%s\n--- loaded\n%s", a, b)
	}
	// Loading later skips keys that have expired meanwhile.
	st3 := store.New(16, 4, clock.NewFake(0))
	ls, err = Load(bytes.NewReader(buf.Bytes()), "mem", st3, LoadOptions{Now: func() int64 { return t0 + 12346 }})
	if err != nil || ls.Expired != 2 || ls.Keys != stats.Keys-2 {
		t.Fatalf("late load: %v %+v", err, ls)
	}
	// The next decision continues exactly: same replies from both stores.
	for _, name := range []string{"sw", "tb", "lb"} {
		for i := 0; i < 4; i++ {
			now := t0 + 700 + int64(i)*50
			a, _ := st.Limiters.Get([]byte(name)).Check([]byte("u1"), 1, now, 1024, true, nil)
			b, _ := st2.Limiters.Get([]byte(name)).Check([]byte("u1"), 1, now, 1024, true, nil)
			if a != b {
				t.Fatalf("%s check %d: saved store %v, loaded store %v", name, i, a, b)
			}
		}
	}
}

func TestLoadRejectsWhatItCannotApply(t *testing.T) {
	h := Header{Databases: 16}
	cases := []struct {
		name string
		fn   func(e *Encoder)
		want string
	}{
		{"db out of range", func(e *Encoder) { e.StringRaw(16, []byte("k"), 0, []byte("v")) }, "key in database 16, but this server has 16 databases"},
		{"duplicate key", func(e *Encoder) {
			e.StringRaw(0, []byte("k"), 0, []byte("v"))
			e.StringInt(0, []byte("k"), 0, 1)
		}, `duplicate key "k" in database 0`},
		{"bad string encoding", func(e *Encoder) { e.Record(TypeString, 0, []byte("k"), 0, []byte{9}) }, "unknown encoding 9"},
		{"int with trailing bytes", func(e *Encoder) { e.Record(TypeString, 0, []byte("k"), 0, []byte{StringInt, 2, 0}) }, "trailing"},
		{"key of unknown limiter", func(e *Encoder) {
			e.LimiterKey(LimiterKey{Limiter: "nope", Key: []byte("k"), Kind: StateTAT, TAT: 1})
		}, "no such limiter"},
		{"duplicate limiter", func(e *Encoder) {
			d := LimiterDef{Name: "x", Limit: 1, WindowMs: 1, IntervalNs: 1}
			e.LimiterDef(d)
			e.LimiterDef(d)
		}, `duplicate limiter "x"`},
		{"zero limit", func(e *Encoder) { e.LimiterDef(LimiterDef{Name: "x", Limit: 0, WindowMs: 1, IntervalNs: 1}) }, "limit 0 out of range"},
		{"unknown algorithm", func(e *Encoder) { e.LimiterDef(LimiterDef{Name: "x", Algo: 7, Limit: 1, WindowMs: 1, IntervalNs: 1}) }, "unknown algorithm 7"},
		{"state of the wrong kind", func(e *Encoder) {
			e.LimiterDef(LimiterDef{Name: "x", Limit: 1, WindowMs: 1, IntervalNs: 1})
			e.LimiterKey(LimiterKey{Limiter: "x", Key: []byte("k"), Kind: StateTAT, TAT: 1})
		}, "does not fit algorithm sliding_window"},
		{"log entry without units", func(e *Encoder) {
			e.LimiterDef(LimiterDef{Name: "x", Limit: 9, WindowMs: 1, IntervalNs: 1})
			e.LimiterKey(LimiterKey{Limiter: "x", Key: []byte("k"), Kind: StateLog, Entries: [][2]int64{{5, 1}, {6, 0}}})
		}, "has no units"},
		{"leases out of order", func(e *Encoder) {
			e.LimiterDef(LimiterDef{Name: "x", Algo: 3, Limit: 9, WindowMs: 1, IntervalNs: 1})
			e.LimiterKey(LimiterKey{Limiter: "x", Key: []byte("k"), Kind: StateLeases, Leases: [][3]int64{{7, 5, 1}, {7, 6, 1}}})
		}, "strictly ascending"},
		{"leases on a sliding window", func(e *Encoder) {
			e.LimiterDef(LimiterDef{Name: "x", Limit: 9, WindowMs: 1, IntervalNs: 1})
			e.LimiterKey(LimiterKey{Limiter: "x", Key: []byte("k"), Kind: StateLeases, Leases: [][3]int64{{7, 5, 1}}})
		}, "does not fit algorithm sliding_window"},
		{"concurrency limit too large", func(e *Encoder) {
			e.LimiterDef(LimiterDef{Name: "x", Algo: 3, Limit: 100_001, WindowMs: 1, IntervalNs: 1})
		}, "above 100000"},
		{"unknown data type", func(e *Encoder) { e.Record(RecordType(0x07), 0, []byte("x"), 0) }, "unknown record type 0x07"},
		{"malformed hash", func(e *Encoder) { e.Record(TypeHash, 0, []byte("h"), 0, []byte{2, 1, 'f'}) }, "HASH: malformed hash payload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := encode(t, h, 0, tc.fn)
			_, err := Load(bytes.NewReader(data), "dump.hkv", store.New(16, 2, clock.NewFake(0)), LoadOptions{Now: func() int64 { return 0 }})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "dump.hkv at offset ") {
				t.Fatalf("got %v, want a corrupt-snapshot error naming the file and offset and mentioning %q", err, tc.want)
			}
		})
	}
}

func TestSkippableRecordsAreSkipped(t *testing.T) {
	data := encode(t, Header{Databases: 1}, 0, func(e *Encoder) {
		e.Record(Skippable|0x3E, 0, []byte("hint"), 0, []byte("future data"))
		e.StringRaw(0, []byte("k"), 0, []byte("v"))
		e.Record(Skippable|0x7E, 0, nil, 0)
	})
	recs, d, err := decodeAll(data, "x")
	if err != nil || len(recs) != 1 || string(recs[0].Key) != "k" || d.Footer().Records != 3 {
		t.Fatalf("skippable records: %v, %d records, footer %+v", err, len(recs), d.Footer())
	}
}

// sample is a small snapshot with a record in every chunk region, for the corruption tests.
func sample(t testing.TB) []byte {
	return encode(t, Header{CreatedMs: t0, TimeFloorMs: t0, HotKVVersion: "test", Databases: 2}, t0, func(e *Encoder) {
		e.StringRaw(0, []byte("key"), t0+5000, []byte("value"))
		e.StringInt(1, []byte("n"), 0, 42)
		e.LimiterDef(LimiterDef{Name: "l", Algo: 1, Limit: 5, WindowMs: 1000, IntervalNs: 200_000_000, TotalAllowed: 3, TotalDenied: 1})
		e.LimiterKey(LimiterKey{Limiter: "l", Key: []byte("u"), Kind: StateTAT, TAT: (t0 + 100) * 1_000_000})
	})
}

func load(data []byte) (LoadStats, error) {
	return Load(bytes.NewReader(data), "dump.hkv", store.New(2, 2, clock.NewFake(0)), LoadOptions{Now: func() int64 { return t0 }})
}

// TestEveryFlippedByteIsRejected flips each byte of a snapshot in turn: every region (magic,
// version, header length, header, header CRC, chunk frame, payload, footer) must be caught,
// with an error that names the file and an offset.
func TestEveryFlippedByteIsRejected(t *testing.T) {
	good := sample(t)
	if _, err := load(good); err != nil {
		t.Fatal(err)
	}
	for i := range good {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			bad := bytes.Clone(good)
			bad[i] ^= mask
			_, err := load(bad)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("byte %d ^ %#x: got %v, want a *FormatError", i, mask, err)
			}
			if !strings.Contains(err.Error(), "dump.hkv at offset ") {
				t.Fatalf("byte %d: error %q does not name the file and offset", i, err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(good)) {
				t.Fatalf("byte %d: offset %d outside the file", i, fe.Offset)
			}
		}
	}
}

func TestEveryTruncationIsRejected(t *testing.T) {
	good := sample(t)
	for n := 0; n < len(good); n++ {
		_, err := load(good[:n])
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated to %d of %d bytes: got %v, want ErrCorrupt", n, len(good), err)
		}
		if n >= 8 && !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("truncated to %d: %q does not say so", n, err)
		}
	}
	if _, err := load(append(bytes.Clone(good), 0)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "after the END footer") {
		t.Fatalf("trailing byte: %v", err)
	}
}

// withVersion rewrites the header's version and fixes the header CRC, as a real newer
// writer would produce it.
func withVersion(good []byte, major, minor uint16) []byte {
	b := bytes.Clone(good)
	binary.LittleEndian.PutUint16(b[8:], major)
	binary.LittleEndian.PutUint16(b[10:], minor)
	n := binary.LittleEndian.Uint32(b[12:])
	end := 16 + int(n)
	binary.LittleEndian.PutUint32(b[end:], crc32.Checksum(b[:end], castagnoli))
	return b
}

func TestMagicAndVersions(t *testing.T) {
	good := sample(t)
	if _, err := load(withVersion(good, Major, Minor+3)); err != nil {
		t.Fatalf("a newer minor version must load: %v", err)
	}
	_, err := load(withVersion(good, Major+1, 0))
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "format version 2.0 is newer") || !strings.Contains(err.Error(), "dump.hkv at offset 8") {
		t.Fatalf("newer major: %v", err)
	}
	bad := bytes.Clone(good)
	copy(bad, "REDIS0010")
	if _, err := load(bad); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "not a HotKV snapshot") {
		t.Fatalf("wrong magic: %v", err)
	}
	if _, err := load(nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("empty file: %v", err)
	}
}

func TestChunkCRCErrorNamesTheChunkOffset(t *testing.T) {
	good := sample(t)
	hdrEnd := 16 + int(binary.LittleEndian.Uint32(good[12:])) + 4
	bad := bytes.Clone(good)
	bad[hdrEnd+8+3] ^= 1 // a payload byte of the first chunk
	_, err := load(bad)
	want := fmt.Sprintf("dump.hkv at offset %d: chunk 0 CRC mismatch", hdrEnd)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "dump.hkv")
	if _, err := WriteFile(path, func(w io.Writer) error { _, err := w.Write([]byte("first")); return err }); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	if _, err := WriteFile(path, func(w io.Writer) error {
		_, _ = w.Write([]byte("half of the second"))
		return boom
	}); err != boom {
		t.Fatalf("failed write: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Fatalf("a failed write changed the snapshot: %q", b)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	st := sampleStore(t, 2)
	stats, err := SaveFile(path, st, SaveOptions{Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() != stats.Bytes {
		t.Fatalf("stats say %d bytes, file has %d", stats.Bytes, fi.Size())
	}
	if _, err := LoadFile(path, store.New(2, 1, clock.NewFake(0)), LoadOptions{Now: func() int64 { return t0 }}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadFile(filepath.Join(dir, "none"), store.New(1, 1, nil), LoadOptions{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

func TestSaveRefusesUnknownValueKinds(t *testing.T) {
	st := store.New(1, 1, clock.NewFake(0))
	st.DB(0).Set([]byte("x"), store.ObjValue(store.Kind(42), []string{}), 0, false, 0)
	if _, err := Write(io.Discard, st, SaveOptions{}); err == nil || !strings.Contains(err.Error(), "cannot hold none values") {
		t.Fatalf("got %v", err)
	}
}

// Hashes round-trip through a snapshot in both encodings, with their expiry, whether the
// save holds every lock (SAVE) or copies shard by shard (BGSAVE).
func TestHashRoundTrip(t *testing.T) {
	for _, held := range []bool{true, false} {
		st := store.New(2, 4, clock.NewFake(0))
		small := types.NewHash()
		small.Set("f1", "v1")
		small.Set("", "empty field")
		big := types.NewHash()
		for i := range 300 {
			big.Set(fmt.Sprintf("field:%d", i), strings.Repeat("x", i%70))
		}
		st.DB(0).Set([]byte("small"), store.ObjValue(store.KindHash, small), 0, false, 0)
		st.DB(1).Set([]byte("big"), store.ObjValue(store.KindHash, big), 5000, false, 0)
		var buf bytes.Buffer
		if _, err := Write(&buf, st, SaveOptions{Held: held}); err != nil {
			t.Fatal(err)
		}
		st2 := store.New(2, 4, clock.NewFake(0))
		if _, err := Load(bytes.NewReader(buf.Bytes()), "dump.hkv", st2, LoadOptions{Now: func() int64 { return 0 }}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			db   int
			key  string
			want *types.Hash
			exp  int64
		}{{0, "small", small, 0}, {1, "big", big, 5000}} {
			e := st2.DB(tc.db).Lookup([]byte(tc.key), 0)
			if e == nil || e.ExpireAt() != tc.exp {
				t.Fatalf("held=%v %s: %v", held, tc.key, e)
			}
			got := e.Val.Obj().(*types.Hash)
			if got.Len() != tc.want.Len() || got.Encoding() != tc.want.Encoding() {
				t.Fatalf("held=%v %s: %d fields %s, want %d %s", held, tc.key, got.Len(), got.Encoding(), tc.want.Len(), tc.want.Encoding())
			}
			tc.want.Each(func(f, v string) bool {
				if g, ok := got.Get(f); !ok || g != v {
					t.Fatalf("held=%v %s: field %q = %q, want %q", held, tc.key, f, g, v)
				}
				return true
			})
		}
	}
}

// Field TTLs survive a snapshot; fields that expired by load time are not loaded, and a hash
// left with none is not either.
func TestHashFieldTTLRoundTrip(t *testing.T) {
	for _, tableEnc := range []bool{false, true} {
		st := store.New(1, 4, clock.NewFake(0))
		mixed := types.NewHash()
		for i := range map[bool]int{false: 3, true: 200}[tableEnc] {
			mixed.Set(fmt.Sprintf("f%d", i), "v")
		}
		mixed.SetFieldExpiry("f0", 1000)
		mixed.SetFieldExpiry("f1", 5000)
		gone := types.NewHash()
		gone.Set("x", "1")
		gone.SetFieldExpiry("x", 1500)
		st.DB(0).Set([]byte("mixed"), mixed.Value(), 0, false, 0)
		st.DB(0).Set([]byte("gone"), gone.Value(), 0, false, 0)
		var buf bytes.Buffer
		if _, err := Write(&buf, st, SaveOptions{}); err != nil {
			t.Fatal(err)
		}
		st2 := store.New(1, 4, clock.NewFake(2000))
		stats, err := Load(bytes.NewReader(buf.Bytes()), "dump.hkv", st2, LoadOptions{Now: func() int64 { return 2000 }})
		if err != nil {
			t.Fatal(err)
		}
		if st2.DB(0).Lookup([]byte("gone"), 2000) != nil || stats.Expired != 1 {
			t.Fatalf("table=%v: a hash whose fields all expired was loaded (expired %d)", tableEnc, stats.Expired)
		}
		h := st2.DB(0).Lookup([]byte("mixed"), 2000).Val.Obj().(*types.Hash)
		if _, ok := h.Get("f0"); ok {
			t.Fatalf("table=%v: the expired field was loaded", tableEnc)
		}
		if at, ok := h.FieldExpiry("f1"); !ok || at != 5000 {
			t.Fatalf("table=%v: f1 expiry %d %v", tableEnc, at, ok)
		}
		if at, ok := h.FieldExpiry("f2"); !ok || at != 0 {
			t.Fatalf("table=%v: f2 expiry %d %v", tableEnc, at, ok)
		}
	}
}

// FuzzDecode feeds arbitrary bytes to the loader: it must return an error or load, never
// panic, hang or allocate without bound.
func FuzzDecode(f *testing.F) {
	good := sample(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(withVersion(good, Major, 9))
	f.Add(encode(f, Header{Databases: 1}, 0, func(e *Encoder) {
		e.LimiterDef(LimiterDef{Name: "s", Algo: 0, Limit: 3, WindowMs: 100, IntervalNs: 1})
		e.LimiterKey(LimiterKey{Limiter: "s", Key: []byte("k"), Kind: StateLog, Entries: [][2]int64{{1, 1}, {2, 2}}})
		e.LimiterDef(LimiterDef{Name: "c", Algo: 3, Limit: 3, WindowMs: 100, IntervalNs: 1})
		e.LimiterKey(LimiterKey{Limiter: "c", Key: []byte("k"), Kind: StateLeases, Leases: [][3]int64{{1_000_000, 1, 1}, {1_000_001, 1, 2}}})
		e.Record(Skippable|0x50, 0, []byte("x"), 0, []byte("y"))
		e.Record(TypeHash, 0, []byte("h"), 0, []byte{2, 1, 'a', 1, 'b', 1, 'c', 0})
	}))
	for _, body := range streamSeedPayloads() {
		f.Add(encode(f, Header{Databases: 1}, 0, func(e *Encoder) { e.Record(TypeStream, 0, []byte("x"), 0, body) }))
	}
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, data []byte) {
		st := store.New(2, 1, clock.NewFake(0))
		_, _ = Load(bytes.NewReader(data), "fuzz", st, LoadOptions{Now: func() int64 { return t0 }})
		// The raw decoder with every body parser too.
		d, err := NewDecoder(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for {
			r, err := d.Next()
			if err != nil {
				return
			}
			_, _, _, _ = ParseString(r)
			_, _ = ParseLimiterDef(r)
			_, _ = ParseLimiterKey(r)
		}
	})
}

// benchStore is a store of n string keys (a third with a TTL, a third integers) of 16 databases.
func benchStore(b *testing.B, n int) *store.Store {
	st := store.New(16, 64, clock.NewFake(t0))
	for i := 0; i < n; i++ {
		db := st.DB(i % 16)
		key := []byte(fmt.Sprintf("user:%08d", i))
		var v store.Value
		var exp int64
		switch i % 3 {
		case 0:
			v = store.BytesValue([]byte(fmt.Sprintf("value-%d-some-bytes", i)))
		case 1:
			v = store.Value{Kind: store.KindString, IsInt: true, Int: int64(i) * 1_000_000}
			exp = t0 + 60_000
		default:
			v = store.BytesValue([]byte("x"))
			exp = t0 + 3_600_000
		}
		db.Set(key, v, exp, false, t0)
	}
	return st
}

// BenchmarkSnapshotWrite measures encoding 100k keys with a BGSAVE-style walk (locking shard
// by shard) to io.Discard.
func BenchmarkSnapshotWrite(b *testing.B) {
	st := benchStore(b, 100_000)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		stats, err := Write(io.Discard, st, SaveOptions{Now: t0})
		if err != nil || stats.Keys != 100_000 {
			b.Fatal(err, stats)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/key")
}

// BenchmarkSnapshotLoad measures decoding and inserting 100k keys.
func BenchmarkSnapshotLoad(b *testing.B) {
	var buf bytes.Buffer
	if _, err := Write(&buf, benchStore(b, 100_000), SaveOptions{Now: t0}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		st := store.New(16, 64, clock.NewFake(t0))
		if _, err := Load(bytes.NewReader(buf.Bytes()), "bench", st, LoadOptions{Now: func() int64 { return t0 }}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/100_000, "ns/key")
}

// The snapshot writer numbers aggregate records as the store's kinds.
func TestRecordTypesAreKinds(t *testing.T) {
	for k, rt := range map[store.Kind]RecordType{store.KindList: TypeList, store.KindSet: TypeSet,
		store.KindZSet: TypeZSet, store.KindHash: TypeHash, store.KindStream: TypeStream} {
		if RecordType(k) != rt {
			t.Fatalf("kind %v is record type %v, not %v", k, RecordType(k), rt)
		}
	}
}

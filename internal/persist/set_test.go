package persist

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Sets round-trip through a snapshot in both encodings, with their expiry, whether the save
// holds every lock (SAVE) or copies shard by shard (BGSAVE); an expired one is not loaded.
func TestSetRoundTrip(t *testing.T) {
	for _, held := range []bool{true, false} {
		st := store.New(2, 4, clock.NewFake(0))
		ints := types.NewSet()
		for _, m := range []string{"3", "-9223372036854775808", "1", "9223372036854775807"} {
			ints.Add(m)
		}
		mixed := types.NewSet()
		mixed.Add("a")
		mixed.Add("")
		mixed.Add("bin\x00\r\n")
		mixed.Add("42")
		big := types.NewSet()
		for i := range 600 {
			big.Add(fmt.Sprint(i))
		}
		gone := types.NewSet()
		gone.Add("x")
		st.DB(0).Set([]byte("ints"), store.ObjValue(store.KindSet, ints), 0, false, 0)
		st.DB(0).Set([]byte("mixed"), store.ObjValue(store.KindSet, mixed), 0, false, 0)
		st.DB(1).Set([]byte("big"), store.ObjValue(store.KindSet, big), 5000, false, 0)
		st.DB(1).Set([]byte("gone"), store.ObjValue(store.KindSet, gone), 10, false, 0)
		var buf bytes.Buffer
		if _, err := Write(&buf, st, SaveOptions{Held: held}); err != nil {
			t.Fatal(err)
		}
		st2 := store.New(2, 4, clock.NewFake(0))
		stats, err := Load(bytes.NewReader(buf.Bytes()), "dump.hkv", st2, LoadOptions{Now: func() int64 { return 100 }})
		if err != nil {
			t.Fatal(err)
		}
		if stats.Keys != 3 || stats.Expired != 1 {
			t.Fatalf("held=%v: %+v", held, stats)
		}
		for _, tc := range []struct {
			db   int
			key  string
			want *types.Set
			enc  string
			exp  int64
		}{{0, "ints", ints, "intset", 0}, {0, "mixed", mixed, "hashtable", 0}, {1, "big", big, "hashtable", 5000}} {
			e := st2.DB(tc.db).Lookup([]byte(tc.key), 100)
			if e == nil || e.ExpireAt() != tc.exp || e.Val.Kind != store.KindSet {
				t.Fatalf("held=%v %s: %v", held, tc.key, e)
			}
			got := e.Val.Obj().(*types.Set)
			if got.Len() != tc.want.Len() || got.Encoding() != tc.enc {
				t.Fatalf("held=%v %s: %d members %s, want %d %s", held, tc.key, got.Len(), got.Encoding(), tc.want.Len(), tc.enc)
			}
			tc.want.Each(func(m string) bool {
				if !got.Has(m) {
					t.Fatalf("held=%v %s: member %q missing", held, tc.key, m)
				}
				return true
			})
		}
		if st2.DB(1).Lookup([]byte("gone"), 100) != nil {
			t.Fatal("an expired set was loaded")
		}
	}
}

// A set record that does not decode, or that names a database the server lacks, is a corrupt
// snapshot, reported with the file and offset.
func TestLoadRejectsBadSets(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(e *Encoder)
		want string
	}{
		{"malformed set", func(e *Encoder) { e.Record(TypeSet, 0, []byte("s"), 0, []byte{2, 1, 'a'}) }, "SET: malformed set payload"},
		{"empty set", func(e *Encoder) { e.Record(TypeSet, 0, []byte("s"), 0, []byte{0}) }, "SET: malformed set payload"},
		{"duplicate member", func(e *Encoder) { e.Record(TypeSet, 0, []byte("s"), 0, []byte{2, 1, '1', 1, '1'}) }, "duplicate member"},
		{"db out of range", func(e *Encoder) { e.Record(TypeSet, 16, []byte("s"), 0, []byte{1, 1, 'a'}) }, "key in database 16"},
		{"duplicate key", func(e *Encoder) {
			e.Record(TypeSet, 0, []byte("s"), 0, []byte{1, 1, 'a'})
			e.StringRaw(0, []byte("s"), 0, []byte("v"))
		}, `duplicate key "s"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := encode(t, Header{Databases: 16}, 0, tc.fn)
			_, err := Load(bytes.NewReader(data), "dump.hkv", store.New(16, 2, clock.NewFake(0)), LoadOptions{Now: func() int64 { return 0 }})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "dump.hkv at offset ") {
				t.Fatalf("got %v, want a corrupt-snapshot error mentioning %q", err, tc.want)
			}
		})
	}
}

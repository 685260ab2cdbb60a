package persist

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Sorted sets round-trip through a snapshot in both encodings, with their expiry and exact
// scores (inf, -0 in a skip list, subnormals), whether the save holds every lock (SAVE) or
// copies shard by shard (BGSAVE).
func TestZSetRoundTrip(t *testing.T) {
	for _, held := range []bool{true, false} {
		st := store.New(2, 4, clock.NewFake(0))
		small := types.NewZSet()
		small.Set("a", 1.5)
		small.Set("", math.Inf(-1))
		small.Set("c", 0.1)
		big := types.NewZSet()
		for i := range 300 {
			big.Set(fmt.Sprintf("member:%d", i), float64(i%37)/3)
		}
		big.Set("negzero", math.Copysign(0, -1))
		big.Set("tiny", 5e-324)
		big.Set("top", math.Inf(1))
		long := types.NewZSet()
		long.Set(strings.Repeat("m", 100), 7)
		st.DB(0).Set([]byte("small"), store.ObjValue(store.KindZSet, small), 0, false, 0)
		st.DB(1).Set([]byte("big"), store.ObjValue(store.KindZSet, big), 5000, false, 0)
		st.DB(1).Set([]byte("long"), store.ObjValue(store.KindZSet, long), 0, false, 0)
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
			want *types.ZSet
			exp  int64
		}{{0, "small", small, 0}, {1, "big", big, 5000}, {1, "long", long, 0}} {
			e := st2.DB(tc.db).Lookup([]byte(tc.key), 0)
			if e == nil || e.ExpireAt() != tc.exp || e.Val.Kind != store.KindZSet {
				t.Fatalf("held=%v %s: %v", held, tc.key, e)
			}
			got := e.Val.Obj().(*types.ZSet)
			if got.Len() != tc.want.Len() || got.Encoding() != tc.want.Encoding() {
				t.Fatalf("held=%v %s: %d members %s, want %d %s", held, tc.key, got.Len(), got.Encoding(), tc.want.Len(), tc.want.Encoding())
			}
			var wantPairs, gotPairs []string
			tc.want.Each(func(m string, s float64) bool {
				wantPairs = append(wantPairs, fmt.Sprintf("%q=%x", m, math.Float64bits(s)))
				return true
			})
			got.Each(func(m string, s float64) bool {
				gotPairs = append(gotPairs, fmt.Sprintf("%q=%x", m, math.Float64bits(s)))
				return true
			})
			if strings.Join(gotPairs, " ") != strings.Join(wantPairs, " ") {
				t.Fatalf("held=%v %s: members differ", held, tc.key)
			}
		}
	}
}

// A malformed sorted set record is a corrupt snapshot, reported with the file and offset.
func TestZSetRecordRejected(t *testing.T) {
	entry := func(m string, s float64) []byte {
		b := binary.AppendUvarint(nil, uint64(len(m)))
		b = append(b, m...)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(s))
	}
	for name, body := range map[string][]byte{
		"truncated": {1, 1, 'a', 0, 0},
		"nan":       append([]byte{1}, entry("a", math.NaN())...),
		"duplicate": append(append([]byte{2}, entry("a", 1)...), entry("a", 2)...),
		"empty":     {0},
	} {
		data := encode(t, Header{Databases: 16}, 0, func(e *Encoder) { e.Record(TypeZSet, 0, []byte("z"), 0, body) })
		_, err := Load(bytes.NewReader(data), "dump.hkv", store.New(16, 2, clock.NewFake(0)), LoadOptions{Now: func() int64 { return 0 }})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "ZSET: ") || !strings.Contains(err.Error(), "dump.hkv at offset ") {
			t.Fatalf("%s: got %v, want a corrupt-snapshot error about the ZSET record", name, err)
		}
	}
}

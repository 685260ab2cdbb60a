package types

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// zmodel is a sorted slice of entries: the obvious sorted set the real one is checked against.
type zentry struct {
	m string
	s float64
}

type zmodel []zentry

func (md zmodel) sort() {
	sort.Slice(md, func(i, j int) bool { return zless(md[i].s, md[i].m, md[j].s, md[j].m) })
}

func (md zmodel) find(m string) int {
	for i, e := range md {
		if e.m == m {
			return i
		}
	}
	return -1
}

func zsetEntries(z *ZSet) zmodel {
	var out zmodel
	z.Each(func(m string, s float64) bool {
		out = append(out, zentry{m, s})
		return true
	})
	return out
}

func checkZSet(t *testing.T, z *ZSet, md zmodel, what string) {
	t.Helper()
	got := zsetEntries(z)
	if len(got) != len(md) || z.Len() != len(md) {
		t.Fatalf("%s: %d entries (Len %d), model %d\n got %v\nwant %v", what, len(got), z.Len(), len(md), got, md)
	}
	for i := range md {
		if got[i].m != md[i].m || got[i].s != md[i].s {
			t.Fatalf("%s: entry %d is %v, model %v", what, i, got[i], md[i])
		}
	}
	// Reverse walks and ranks agree too.
	var rev zmodel
	if n := z.Len(); n > 0 {
		z.Walk(n-1, true, func(m string, s float64) bool {
			rev = append(rev, zentry{m, s})
			return true
		})
	}
	slices.Reverse(rev)
	if len(rev) != len(md) {
		t.Fatalf("%s: reverse walk has %d entries, want %d", what, len(rev), len(md))
	}
	for i, e := range md {
		if rev[i] != e {
			t.Fatalf("%s: reverse walk entry %d is %v, want %v", what, i, rev[i], e)
		}
		if r, ok := z.Rank(e.m); !ok || r != i {
			t.Fatalf("%s: rank of %q = %d %v, want %d", what, e.m, r, ok, i)
		}
		if s, ok := z.Score(e.m); !ok || s != e.s {
			t.Fatalf("%s: score of %q = %v %v, want %v", what, e.m, s, ok, e.s)
		}
	}
}

func randomScoreRange(rng *rand.Rand) ScoreRange {
	pick := func() float64 {
		switch rng.IntN(10) {
		case 0:
			return math.Inf(-1)
		case 1:
			return math.Inf(1)
		}
		return float64(rng.IntN(40) - 5)
	}
	r := ScoreRange{Min: pick(), Max: pick(), MinEx: rng.IntN(3) == 0, MaxEx: rng.IntN(3) == 0}
	if rng.IntN(4) != 0 && r.Min > r.Max {
		r.Min, r.Max = r.Max, r.Min
	}
	return r
}

func randomLexRange(rng *rand.Rand) LexRange {
	pick := func() LexBound {
		switch rng.IntN(8) {
		case 0:
			return LexBound{Inf: -1, Ex: true}
		case 1:
			return LexBound{Inf: 1, Ex: true}
		}
		return LexBound{Value: fmt.Sprintf("m%02d", rng.IntN(45)), Ex: rng.IntN(2) == 0}
	}
	return LexRange{Min: pick(), Max: pick()}
}

// TestZSetModel runs random operations on sorted sets of both encodings (tiny pack limits make
// the conversion happen early) and compares every state and answer with the model.
func TestZSetModel(t *testing.T) {
	defer SetZSetPackLimits(128, 64)
	for _, limits := range [][2]int64{{128, 64}, {8, 64}, {0, 64}, {1000, 3}} {
		SetZSetPackLimits(limits[0], limits[1])
		for seed := uint64(1); seed <= 4; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(limits[0])))
			z := NewZSet()
			var md zmodel
			sameScore := seed%2 == 0 // lex ranges are only defined on equal scores
			for op := 0; op < 3000; op++ {
				m := fmt.Sprintf("m%02d", rng.IntN(40))
				score := float64(rng.IntN(30))
				if sameScore {
					score = 7
				} else if rng.IntN(20) == 0 {
					score = math.Inf(rng.IntN(2)*2 - 1)
				}
				what := fmt.Sprintf("limits %v seed %d op %d", limits, seed, op)
				switch rng.IntN(10) {
				case 0, 1, 2, 3:
					i := md.find(m)
					if added := z.Set(m, score); added != (i < 0) {
						t.Fatalf("%s: Set(%q) added=%v", what, m, added)
					}
					if i >= 0 {
						md[i].s = score
					} else {
						md = append(md, zentry{m, score})
					}
					md.sort()
				case 4:
					i := md.find(m)
					if z.Delete(m) != (i >= 0) {
						t.Fatalf("%s: Delete(%q)", what, m)
					}
					if i >= 0 {
						md = slices.Delete(md, i, i+1)
					}
				case 5:
					r := randomScoreRange(rng)
					first, last, count := -1, -1, 0
					for i, e := range md {
						if r.gteMin(e.s) && r.lteMax(e.s) {
							if first < 0 {
								first = i
							}
							last = i
							count++
						}
					}
					if got := z.FirstInScore(&r); got != first {
						t.Fatalf("%s: FirstInScore(%+v) = %d, want %d", what, r, got, first)
					}
					if got := z.LastInScore(&r); got != last {
						t.Fatalf("%s: LastInScore(%+v) = %d, want %d", what, r, got, last)
					}
					if got := z.CountScore(&r); got != count {
						t.Fatalf("%s: CountScore(%+v) = %d, want %d", what, r, got, count)
					}
					if rng.IntN(4) == 0 {
						if got := z.DeleteRangeByScore(&r); got != count {
							t.Fatalf("%s: DeleteRangeByScore = %d, want %d", what, got, count)
						}
						if count > 0 {
							md = slices.Delete(md, first, last+1)
						}
					}
				case 6:
					if !sameScore {
						continue
					}
					r := randomLexRange(rng)
					first, last, count := -1, -1, 0
					for i, e := range md {
						if r.gteMin(e.m) && r.lteMax(e.m) {
							if first < 0 {
								first = i
							}
							last = i
							count++
						}
					}
					if got := z.FirstInLex(&r); got != first {
						t.Fatalf("%s: FirstInLex(%+v) = %d, want %d", what, r, got, first)
					}
					if got := z.LastInLex(&r); got != last {
						t.Fatalf("%s: LastInLex(%+v) = %d, want %d", what, r, got, last)
					}
					if got := z.CountLex(&r); got != count {
						t.Fatalf("%s: CountLex(%+v) = %d, want %d", what, r, got, count)
					}
					if rng.IntN(4) == 0 {
						if got := z.DeleteRangeByLex(&r); got != count {
							t.Fatalf("%s: DeleteRangeByLex = %d, want %d", what, got, count)
						}
						if count > 0 {
							md = slices.Delete(md, first, last+1)
						}
					}
				case 7:
					if len(md) == 0 || rng.IntN(3) != 0 {
						continue
					}
					a, b := rng.IntN(len(md)), rng.IntN(len(md))
					if a > b {
						a, b = b, a
					}
					if got := z.DeleteRangeByRank(a, b); got != b-a+1 {
						t.Fatalf("%s: DeleteRangeByRank(%d, %d) = %d", what, a, b, got)
					}
					md = slices.Delete(md, a, b+1)
				case 8:
					// A walk from a random rank, both ways, for a few steps.
					if len(md) == 0 {
						continue
					}
					start, rev, k := rng.IntN(len(md)), rng.IntN(2) == 0, rng.IntN(6)+1
					var got zmodel
					z.Walk(start, rev, func(m string, s float64) bool {
						got = append(got, zentry{m, s})
						return len(got) < k
					})
					for j, e := range got {
						i := start + j
						if rev {
							i = start - j
						}
						if md[i] != e {
							t.Fatalf("%s: Walk(%d, %v) step %d = %v, want %v", what, start, rev, j, e, md[i])
						}
					}
				case 9:
					c := z.Clone().(*ZSet)
					checkZSet(t, c, md, what+" clone")
					if c.Encoding() != z.Encoding() {
						t.Fatalf("%s: clone encoding %s, want %s", what, c.Encoding(), z.Encoding())
					}
					c.Set("zz-clone-only", 1)
					if _, ok := z.Score("zz-clone-only"); ok {
						t.Fatalf("%s: clone shares memory", what)
					}
				}
				if op%50 == 0 || z.Len() < 3 {
					checkZSet(t, z, md, what)
				}
				if len(md) > 0 && z.Encoding() == "listpack" && (int64(len(md)) > limits[0]) {
					t.Fatalf("%s: %d members still packed", what, len(md))
				}
			}
			checkZSet(t, z, md, "final")
		}
	}
}

func TestZSetEncodingAndNegativeZero(t *testing.T) {
	defer SetZSetPackLimits(128, 64)
	SetZSetPackLimits(2, 5)
	z := NewZSet()
	z.Set("a", math.Copysign(0, -1))
	if s, _ := z.Score("a"); math.Signbit(s) {
		t.Fatal("a packed set keeps -0 as 0, as Redis's listpack does")
	}
	z.Set("b", 1)
	if z.Encoding() != "listpack" {
		t.Fatal(z.Encoding())
	}
	z.Set("c", 2)
	if z.Encoding() != "skiplist" {
		t.Fatal("3 members: past the entries limit")
	}
	z.Set("d", math.Copysign(0, -1))
	if s, _ := z.Score("d"); !math.Signbit(s) {
		t.Fatal("a skip list keeps -0")
	}
	z.Delete("a")
	z.Delete("b")
	if z.Encoding() != "skiplist" {
		t.Fatal("no conversion back")
	}
	long := NewZSet()
	long.Set("abcdef", 1)
	if long.Encoding() != "skiplist" {
		t.Fatal("a member past the value limit converts at once")
	}
}

// ZSCAN over the skip list returns every member at least once, however the set changes between
// calls, for the members that stay.
func TestZSetScan(t *testing.T) {
	z := NewZSet()
	for i := range 1000 {
		z.Set(fmt.Sprintf("m%d", i), float64(i))
	}
	seen := map[string]float64{}
	cursor, calls := uint64(0), 0
	for {
		cursor = z.Scan(cursor, func(m string, s float64) { seen[m] = s })
		calls++
		// Grow and shrink the set while scanning; m0..m499 stay throughout.
		if calls%3 == 0 && calls < 100 {
			for i := range 50 {
				z.Set(fmt.Sprintf("extra%d-%d", calls, i), -1)
			}
		}
		if calls%5 == 0 && calls < 300 {
			for i := 500 + calls; i < 1000; i += 7 {
				z.Delete(fmt.Sprintf("m%d", i))
			}
		}
		if cursor == 0 {
			break
		}
	}
	for i := range 500 {
		m := fmt.Sprintf("m%d", i)
		if s, ok := seen[m]; !ok || s != float64(i) {
			t.Fatalf("%s not returned (or wrong score %v)", m, s)
		}
	}
}

func TestZSetPayloadRoundTrip(t *testing.T) {
	for _, n := range []int{1, 5, 128, 129, 1000} {
		z := NewZSet()
		for i := range n {
			z.Set(fmt.Sprintf("member-%d", i), float64(i%17)-3.25)
		}
		z.Set("", math.Inf(1))
		z.Set("neg", math.Inf(-1))
		p := z.AppendPayload(nil)
		got, err := ZSetFromPayload(p)
		if err != nil {
			t.Fatal(err)
		}
		if got.Encoding() != z.Encoding() {
			t.Fatalf("n=%d: encoding %s, want %s", n, got.Encoding(), z.Encoding())
		}
		checkZSet(t, got, zsetEntries(z), fmt.Sprint("n=", n))
	}
}

func TestZSetPayloadGarbage(t *testing.T) {
	entry := func(m string, s float64) []byte {
		b := binary.AppendUvarint(nil, uint64(len(m)))
		b = append(b, m...)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(s))
	}
	withCount := func(n uint64, parts ...[]byte) []byte {
		b := binary.AppendUvarint(nil, n)
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	bad := map[string][]byte{
		"empty":          nil,
		"zero members":   {0},
		"count too high": withCount(2, entry("a", 1)),
		"count too low":  withCount(1, entry("a", 1), entry("b", 2)),
		"short score":    withCount(1, entry("a", 1)[:5]),
		"long length":    withCount(1, []byte{0x7f, 'a'}),
		"nan":            withCount(1, entry("a", math.NaN())),
		"duplicate":      withCount(2, entry("a", 1), entry("a", 2)),
		"bad varint":     {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
	}
	for name, p := range bad {
		if _, err := ZSetFromPayload(p); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
	rng := rand.New(rand.NewPCG(9, 9))
	good := NewZSet()
	for i := range 200 {
		good.Set(fmt.Sprint(i), float64(i))
	}
	p := good.AppendPayload(nil)
	for range 2000 {
		q := slices.Clone(p[:rng.IntN(len(p)+1)])
		for range rng.IntN(4) {
			if len(q) > 0 {
				q[rng.IntN(len(q))] = byte(rng.Uint32())
			}
		}
		_, _ = ZSetFromPayload(q) // must not panic
	}
}

func BenchmarkZSetAdd(b *testing.B) {
	z := NewZSet()
	members := make([]string, 4096)
	for i := range members {
		members[i] = fmt.Sprintf("member:%d", i)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		z.Set(members[i%len(members)], float64(i%1000))
	}
}

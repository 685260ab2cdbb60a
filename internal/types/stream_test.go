package types

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

type modelEntry struct {
	id StreamID
	fv []string
}

// rangeModel is Range over a plain slice.
func rangeModel(m []modelEntry, start, end StreamID, rev bool) []modelEntry {
	var out []modelEntry
	for _, e := range m {
		if !e.id.Less(start) && !end.Less(e.id) {
			out = append(out, e)
		}
	}
	if rev {
		slices.Reverse(out)
	}
	return out
}

func collect(s *Stream, start, end StreamID, rev bool, limit int) []modelEntry {
	var out []modelEntry
	s.Range(start, end, rev, func(id StreamID, fv []string) bool {
		out = append(out, modelEntry{id, slices.Clone(fv)})
		return limit == 0 || len(out) < limit
	})
	return out
}

// Appends, deletions, trimming (exact and approximate) and ranges in both directions agree
// with a plain sorted slice, across node sizes, with entries that share their node's fields and
// entries that do not.
func TestStreamMatchesModel(t *testing.T) {
	defer SetStreamNodeLimits(4096, 100)
	for _, limits := range [][2]int64{{4096, 100}, {4096, 1}, {4096, 3}, {64, 0}, {0, 7}} {
		SetStreamNodeLimits(limits[0], limits[1])
		rng := rand.New(rand.NewPCG(uint64(limits[1]), 7))
		s := NewStream()
		var m []modelEntry
		last := StreamID{}
		randID := func() StreamID {
			if len(m) == 0 || rng.IntN(4) == 0 {
				return StreamID{uint64(rng.IntN(int(last.Ms) + 50)), uint64(rng.IntN(3))}
			}
			return m[rng.IntN(len(m))].id
		}
		for step := 0; step < 3000; step++ {
			switch op := rng.IntN(20); {
			case op < 12:
				id := StreamID{last.Ms + uint64(rng.IntN(3)), 0}
				if id.Ms == last.Ms && last.Seq > math.MaxUint64-4 {
					id.Ms++
				}
				if id.Ms == last.Ms {
					id.Seq = last.Seq + 1 + uint64(rng.IntN(2))
				}
				if rng.IntN(50) == 0 {
					id = StreamID{last.Ms + 1, math.MaxUint64 - 1} // seq deltas below the master's
				}
				fv := []string{"f", fmt.Sprint(step)}
				if rng.IntN(3) == 0 {
					fv = []string{"g", "", "h", fmt.Sprint(step * 7)}
				}
				bs := make([][]byte, len(fv))
				for i, x := range fv {
					bs[i] = []byte(x)
				}
				s.Append(id, bs)
				m = append(m, modelEntry{id, fv})
				last = id
			case op < 15:
				id := randID()
				i := slices.IndexFunc(m, func(e modelEntry) bool { return e.id == id })
				if got := s.Delete(id); got != (i >= 0) {
					t.Fatalf("limits %v step %d: Delete(%v) = %v", limits, step, id, got)
				}
				if i >= 0 {
					m = slices.Delete(m, i, i+1)
				}
			case op < 16:
				a := TrimArgs{Strategy: TrimMaxLen, MaxLen: uint64(rng.IntN(len(m) + 2)), Approx: rng.IntN(2) == 0}
				if rng.IntN(2) == 0 {
					a = TrimArgs{Strategy: TrimMinID, MinID: randID(), Approx: rng.IntN(2) == 0}
				}
				if a.Approx && rng.IntN(2) == 0 {
					a.Limit = int64(rng.IntN(10) + 1)
				}
				n := s.Trim(a)
				removed := m[:n]
				m = m[n:]
				switch {
				case a.Strategy == TrimMaxLen && uint64(len(m)) < a.MaxLen && n > 0:
					t.Fatalf("step %d: MAXLEN %d left %d", step, a.MaxLen, len(m))
				case a.Strategy == TrimMaxLen && !a.Approx && uint64(len(m)) > a.MaxLen:
					t.Fatalf("step %d: exact MAXLEN %d left %d", step, a.MaxLen, len(m))
				case a.Strategy == TrimMinID && !a.Approx && len(m) > 0 && m[0].id.Less(a.MinID):
					t.Fatalf("step %d: exact MINID %v left %v", step, a.MinID, m[0].id)
				}
				for _, e := range removed {
					if a.Strategy == TrimMinID && !e.id.Less(a.MinID) {
						t.Fatalf("step %d: MINID %v removed %v", step, a.MinID, e.id)
					}
				}
			default:
				start, end := randID(), randID()
				if rng.IntN(4) == 0 {
					start, end = StreamID{}, MaxStreamID
				}
				rev := rng.IntN(2) == 0
				limit := rng.IntN(4)
				want := rangeModel(m, start, end, rev)
				if limit > 0 && len(want) > limit {
					want = want[:limit]
				}
				if got := collect(s, start, end, rev, limit); !slices.EqualFunc(got, want, func(a, b modelEntry) bool {
					return a.id == b.id && slices.Equal(a.fv, b.fv)
				}) {
					t.Fatalf("step %d: Range(%v, %v, rev %v, limit %d) = %v, want %v", step, start, end, rev, limit, got, want)
				}
			}
			if s.Len() != uint64(len(m)) {
				t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(m))
			}
			first := StreamID{}
			if len(m) > 0 {
				first = m[0].id
			}
			if s.FirstID() != first {
				t.Fatalf("step %d: FirstID %v, want %v", step, s.FirstID(), first)
			}
		}
		// The snapshot payload rebuilds the same logical stream.
		back, err := StreamFromPayload(s.AppendPayload(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got := collect(back, StreamID{}, MaxStreamID, false, 0); len(got) != len(m) {
			t.Fatalf("payload: %d entries, want %d", len(got), len(m))
		}
		if back.LastID() != s.LastID() || back.EntriesAdded() != s.EntriesAdded() || back.MaxDeletedID() != s.MaxDeletedID() {
			t.Fatalf("payload metadata differs")
		}
	}
}

// The PEL index keeps pending entries ordered under inserts and removals in any order.
func TestNACKIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var x nackIndex
	have := map[StreamID]bool{}
	for i := 0; i < 20000; i++ {
		id := StreamID{uint64(rng.IntN(3000)), uint64(rng.IntN(2))}
		if rng.IntN(3) == 0 {
			if (x.remove(id) != nil) != have[id] {
				t.Fatalf("remove %v", id)
			}
			delete(have, id)
		} else if x.insert(&NACK{ID: id}) == have[id] {
			t.Fatalf("insert %v", id)
		} else {
			have[id] = true
		}
		if x.Len() != len(have) {
			t.Fatalf("len %d, want %d", x.Len(), len(have))
		}
	}
	var prev *NACK
	n := 0
	x.each(func(a *NACK) {
		if prev != nil && !prev.ID.Less(a.ID) {
			t.Fatalf("out of order: %v then %v", prev.ID, a.ID)
		}
		if x.find(a.ID) != a {
			t.Fatalf("find %v", a.ID)
		}
		prev = a
		n++
	})
	if n != len(have) {
		t.Fatalf("each saw %d", n)
	}
	for _, id := range []StreamID{{}, {1500, 1}, {2999, 1}, {5000, 0}} {
		c := x.ceil(id)
		var want *NACK
		x.each(func(a *NACK) {
			if want == nil && !a.ID.Less(id) {
				want = a
			}
		})
		if c != want {
			t.Fatalf("ceil(%v) = %v, want %v", id, c, want)
		}
	}
}

// RaxNodes counts the radix tree nodes Redis reports for the same node keys (checked against
// Redis 7.0: one key 2 nodes, keys 1..5 12, plus 300 15, plus 301 18).
func TestStreamRaxNodes(t *testing.T) {
	defer SetStreamNodeLimits(4096, 100)
	SetStreamNodeLimits(4096, 1)
	s := NewStream()
	if s.RaxNodes() != 1 {
		t.Fatal(s.RaxNodes())
	}
	want := map[uint64]int{1: 2, 2: 6, 3: 8, 4: 10, 5: 12, 300: 15, 301: 18, 70000: 21, 1000000: 23}
	for _, ms := range []uint64{1, 2, 3, 4, 5, 300, 301, 70000, 1000000} {
		s.Append(StreamID{ms, 1}, [][]byte{[]byte("f"), []byte("v")})
		if got := s.RaxNodes(); got != want[ms] {
			t.Fatalf("after %d: %d nodes, want %d", ms, got, want[ms])
		}
	}
}

// FuzzStreamPayload: any bytes either decode to a stream that encodes back to the same bytes,
// or fail with an error; never a panic.
func FuzzStreamPayload(f *testing.F) {
	s := NewStream()
	for i := 1; i < 40; i++ {
		s.Append(StreamID{uint64(i), 0}, [][]byte{[]byte("k"), []byte(fmt.Sprint(i))})
	}
	g := s.CreateGroup("g", StreamID{10, 0}, 3)
	c := g.CreateConsumer("c", 5)
	g.Assign(StreamID{3, 0}, c, 9)
	f.Add(s.AppendPayload(nil))
	f.Add(NewStream().AppendPayload(nil))
	f.Add([]byte{1, 1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, p []byte) {
		s, err := StreamFromPayload(p)
		if err != nil {
			return
		}
		if again := s.AppendPayload(nil); string(again) != string(p) {
			// Varints may be written longer than needed in p; the decoded stream must still
			// round-trip from its own encoding.
			if _, err := StreamFromPayload(again); err != nil {
				t.Fatalf("re-encoding does not decode: %v", err)
			}
		}
	})
}

package types

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/hotkv/hotkv/internal/store"
)

// A list behaves as a Go slice through random pushes, pops, sets and rebuilds, whether it is
// packed or in a ring and across the conversion between them; its clone and payload hold the
// same elements, and a small list stays packed.
func TestListMatchesSlice(t *testing.T) {
	defer SetListPackLimit(-2)
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 30 {
		switch round % 3 {
		case 0:
			SetListPackLimit(-2)
		case 1:
			SetListPackLimit(-1)
		case 2:
			SetListPackLimit(int64(5 + round))
		}
		l, m := NewList(), []string(nil)
		for range 2000 {
			v := strings.Repeat(strconv.Itoa(rng.IntN(100)), rng.IntN(20+round*10))
			switch r := rng.IntN(10); {
			case r < 3:
				l.PushLeft(v)
				m = append([]string{v}, m...)
			case r < 6:
				l.PushRight(v)
				m = append(m, v)
			case r < 7 && len(m) > 0:
				if got := l.PopLeft(); got != m[0] {
					t.Fatalf("PopLeft %q, want %q", got, m[0])
				}
				m = m[1:]
			case r < 8 && len(m) > 0:
				if got := l.PopRight(); got != m[len(m)-1] {
					t.Fatalf("PopRight %q, want %q", got, m[len(m)-1])
				}
				m = m[:len(m)-1]
			case r < 9 && len(m) > 0:
				i := rng.IntN(len(m))
				l.SetIndex(i, v)
				m[i] = v
			case len(m) > 2:
				from, to := rng.IntN(len(m)/2), len(m)/2+rng.IntN(len(m)/2)
				l.Replace(l.Slice(from, to))
				m = slices.Clone(m[from:to])
			}
			if l.Len() != len(m) {
				t.Fatalf("Len %d, want %d", l.Len(), len(m))
			}
		}
		checkList(t, l, m)
		checkList(t, l.Clone().(*List), m)
		if len(m) > 0 {
			back, err := ListFromPayload(l.AppendPayload(nil))
			if err != nil {
				t.Fatal(err)
			}
			checkList(t, back, m)
		}
	}
	SetListPackLimit(-2)
	l := NewList()
	for i := range 100 {
		l.PushRight("item-" + strconv.Itoa(i))
	}
	if l.ring() != nil {
		t.Fatal("100 short elements must stay packed under list-max-listpack-size -2")
	}
	l.PushRight(strings.Repeat("x", 9000))
	if l.ring() == nil {
		t.Fatal("a list past 8 KiB must move to a ring")
	}
}

func checkList(t *testing.T, l *List, m []string) {
	t.Helper()
	if l.Len() != len(m) {
		t.Fatalf("Len %d, want %d", l.Len(), len(m))
	}
	for i, v := range m {
		if got := l.Index(i); got != v {
			t.Fatalf("Index(%d) = %q, want %q", i, got, v)
		}
	}
	if got := l.Slice(0, len(m)); !slices.Equal(got, m) && len(m) > 0 {
		t.Fatalf("Slice = %q, want %q", got, m)
	}
	var rev []string
	if len(m) > 0 {
		l.RangeRev(len(m)-1, func(v string) bool {
			rev = append(rev, v)
			return true
		})
	}
	slices.Reverse(rev)
	if len(m) > 0 && !slices.Equal(rev, m) {
		t.Fatalf("RangeRev = %q, want %q", rev, m)
	}
}

// Packed scores come back bit for bit: small integers in a byte, large and fractional ones in
// nine, -0 as 0 (Redis's listpack keeps it so).
func TestZSetPackedScores(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 8, 63, -64, 64, 1e6, -123456789, 1 << 53, -(1 << 53), 1<<53 + 2, 1.5, -0.25,
		math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64, 1700000000000, math.Copysign(0, -1)} {
		z := NewZSet()
		z.Set("m", f)
		got, ok := z.Score("m")
		want := f
		if want == 0 {
			want = 0
		}
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("score %v came back %v", f, got)
		}
	}
	z := NewZSet()
	for i := 1; i <= 8; i++ {
		z.Set("member-"+strconv.Itoa(i), float64(i))
	}
	if p, _ := z.val().Packed(); len(p) != 8*(1+1+8) {
		t.Fatalf("8 small-integer entries take %d bytes, want 80", len(p))
	}
}

// Moving a member to a new score keeps the order, in place or not, with a member string that
// aliases the set itself.
func TestZSetPackedMoveAliasing(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	z := NewZSet()
	model := map[string]float64{}
	for i := range 50 {
		m := fmt.Sprintf("m%02d", i)
		z.Set(m, float64(i))
		model[m] = float64(i)
	}
	for range 2000 {
		m, _ := z.Random(rng.Uint64N) // aliases the packed bytes
		s := float64(rng.IntN(60)) + []float64{0, 0.5}[rng.IntN(2)]
		want := strings.Clone(m)
		z.Set(m, s)
		model[want] = s
	}
	prev, prevScore := "", math.Inf(-1)
	n := 0
	z.Each(func(m string, s float64) bool {
		if s < prevScore || (s == prevScore && m <= prev) {
			t.Fatalf("out of order: %q %v after %q %v", m, s, prev, prevScore)
		}
		if model[m] != s {
			t.Fatalf("%q has %v, want %v", m, s, model[m])
		}
		prev, prevScore = m, s
		n++
		return true
	})
	if n != len(model) {
		t.Fatalf("%d members, want %d", n, len(model))
	}
}

// An intset widens from 2 to 4 to 8 bytes a member as members need it, stays sorted, and
// removing the wide member does not narrow it (as in Redis).
func TestIntsetWidths(t *testing.T) {
	s := NewSet()
	for _, n := range []int64{5, -3, 100} {
		s.Add(strconv.FormatInt(n, 10))
	}
	width := func() int { _, _, w := s.ints(); return w }
	if width() != 2 {
		t.Fatalf("width %d, want 2", width())
	}
	s.Add("70000")
	if width() != 4 {
		t.Fatalf("width %d, want 4", width())
	}
	s.Add("-5000000000")
	if width() != 8 {
		t.Fatalf("width %d, want 8", width())
	}
	if got := s.Ints(); !slices.Equal(got, []int64{-5000000000, -3, 5, 100, 70000}) {
		t.Fatalf("members %v", got)
	}
	s.Remove("-5000000000")
	if width() != 8 || !slices.Equal(s.Ints(), []int64{-3, 5, 100, 70000}) {
		t.Fatalf("after remove: width %d, members %v", width(), s.Ints())
	}
}

// A view from the keyspace is the entry's own value: changes through it land in the entry,
// and a clone shares no memory with it.
func TestInlineViewsChangeTheEntry(t *testing.T) {
	st := store.New(1, 4, nil)
	db := st.DB(0)
	e := db.Set([]byte("h"), NewHashValue(), 0, false, 0)
	h := e.Val.Obj().(*Hash)
	if unsafe.Pointer(h) != unsafe.Pointer(&e.Val) {
		t.Fatal("the view must be the entry's value")
	}
	h.Set("f", "v")
	if got, _ := db.Lookup([]byte("h"), 0).Val.Obj().(*Hash).Get("f"); got != "v" {
		t.Fatalf("entry sees %q", got)
	}
	c := store.CloneValue(e.Val)
	h.Set("f", "changed")
	if got, _ := c.Obj().(*Hash).Get("f"); got != "v" {
		t.Fatalf("the clone sees %q", got)
	}
	for range 600 { // past hash-max-listpack-entries (512)
		h.Set(strconv.Itoa(len(h.Encoding())+h.Len()), strings.Repeat("x", 10))
	}
	if h.Encoding() != "hashtable" || e.Val.Obj().(*Hash).Len() != 601 {
		t.Fatalf("converted view: %s, %d fields", h.Encoding(), e.Val.Obj().(*Hash).Len())
	}
}

// packSplice keeps strings that alias the bytes it rewrites intact.
func TestPackSpliceAliasing(t *testing.T) {
	p := allocPack(64)[:0]
	p = appendPacked(p, "hello")
	p = appendPacked(p, "world")
	s := unsafe.String(&p[7], 5) // "world", inside p
	q := packSplice(p, 0, 0, nil, s)
	f, i := packNext(q, 0)
	g, _ := packNext(q, i)
	if f != "world" || g != "hello" {
		t.Fatalf("got %q %q", f, g)
	}
}

package types

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"testing"
)

// A set behaves as a Go map of members through random adds and removes, with integer and other
// members, across both encodings and the conversion between them; its encoding is what Redis
// 7.0 would report at every step, and its clone and payload hold the same members.
func TestSetMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 40 {
		s, m := NewSet(), map[string]bool{}
		intset := true // what Redis's encoding would be now
		span := 5 + round*20
		nonInt := round%3 == 0 // a third of the rounds mix in members that are not integers
		for range 3000 {
			var member string
			switch r := rng.IntN(10); {
			case nonInt && r == 0:
				member = fmt.Sprintf("m%d", rng.IntN(span))
			case r == 1:
				member = strconv.FormatInt(rng.Int64()-1<<62, 10) // large, some negative
			default:
				member = strconv.Itoa(rng.IntN(span) - span/2)
			}
			if rng.IntN(3) > 0 {
				added := s.Add(member)
				if added == m[member] {
					t.Fatalf("Add(%q) = %v with the member present = %v", member, added, m[member])
				}
				m[member] = true
				if _, isInt := ParseSetInt(member); !isInt || len(m) > 512 {
					intset = false
				}
			} else {
				if s.Remove(member) != m[member] {
					t.Fatalf("Remove(%q) != %v", member, m[member])
				}
				delete(m, member)
			}
			if got := s.Encoding(); got != map[bool]string{true: "intset", false: "hashtable"}[intset] {
				t.Fatalf("round %d: encoding %s with %d members (intset expected: %v)", round, got, len(m), intset)
			}
		}
		checkSet(t, s, m)
		checkSet(t, s.Clone().(*Set), m)
		back, err := SetFromPayload(s.AppendPayload(nil))
		if len(m) == 0 {
			if err == nil {
				t.Fatal("an empty set's payload must not decode (Redis never keeps empty sets)")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		checkSet(t, back, m)
		// Loading chooses the encoding again, as Redis's loader does.
		allInts := len(m) <= 512
		for member := range m {
			if _, ok := ParseSetInt(member); !ok {
				allInts = false
			}
		}
		if back.IsIntset() != allInts {
			t.Fatalf("loaded %s, all integers and small: %v", back.Encoding(), allInts)
		}
	}
}

func checkSet(t *testing.T, s *Set, m map[string]bool) {
	t.Helper()
	if s.Len() != len(m) {
		t.Fatalf("Len %d, want %d", s.Len(), len(m))
	}
	for member := range m {
		if !s.Has(member) {
			t.Fatalf("Has(%q) false", member)
		}
	}
	members := s.Members()
	if len(members) != len(m) {
		t.Fatalf("Members: %d, want %d", len(members), len(m))
	}
	seen := map[string]bool{}
	for _, member := range members {
		if !m[member] || seen[member] {
			t.Fatalf("Members lists %q (in the set: %v, twice: %v)", member, m[member], seen[member])
		}
		seen[member] = true
	}
	if s.IsIntset() {
		ints := s.Ints()
		if !slices.IsSorted(ints) {
			t.Fatalf("intset not sorted: %v", ints)
		}
		for i, n := range ints {
			if members[i] != strconv.FormatInt(n, 10) {
				t.Fatalf("Members[%d] = %q, Ints %d", i, members[i], n)
			}
		}
	}
	if len(m) > 0 {
		for range 20 {
			if r := s.Random(rand.Uint64N); !m[r] {
				t.Fatalf("Random gave %q, not a member", r)
			}
		}
	}
}

// Redis's string2ll decides which members an intset can hold.
func TestParseSetInt(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"123", 123, true},
		{"9223372036854775807", 9223372036854775807, true}, {"-9223372036854775808", -9223372036854775808, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false}, {"18446744073709551616", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"00", 0, false}, {"01", 0, false}, {"+1", 0, false},
		{" 1", 0, false}, {"1 ", 0, false}, {"1.0", 0, false}, {"1e3", 0, false}, {"abc", 0, false},
		{"123456789012345678901", 0, false},
	} {
		n, ok := ParseSetInt(tc.in)
		if ok != tc.ok || n != tc.n {
			t.Errorf("ParseSetInt(%q) = %d %v, want %d %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

// set-max-intset-entries decides when an all-integer set converts; a set converted stays a
// table when members go.
func TestSetIntsetLimit(t *testing.T) {
	t.Cleanup(func() { SetIntsetLimit(512) })
	SetIntsetLimit(3)
	s := NewSet()
	for _, m := range []string{"3", "1", "2"} {
		s.Add(m)
	}
	if s.Encoding() != "intset" || !slices.Equal(s.Members(), []string{"1", "2", "3"}) {
		t.Fatalf("%s %v", s.Encoding(), s.Members())
	}
	s.Add("2")
	if s.Encoding() != "intset" {
		t.Fatal("adding a member already there converted the set")
	}
	s.Add("4")
	if s.Encoding() != "hashtable" {
		t.Fatal("4 members past a limit of 3 did not convert")
	}
	s.Remove("4")
	s.Remove("3")
	if s.Encoding() != "hashtable" || s.Len() != 2 {
		t.Fatalf("%s %d: a hashtable stays one", s.Encoding(), s.Len())
	}
	SetIntsetLimit(0)
	z := NewSet()
	z.Add("1")
	if z.Encoding() != "hashtable" {
		t.Fatal("limit 0: the first integer must convert")
	}
	SetIntsetLimit(1 << 40)
	if maxIntsetEntries.Load() != 1<<30 {
		t.Fatalf("the limit is capped at 2^30 as in Redis, got %d", maxIntsetEntries.Load())
	}
}

// SSCAN over a table returns every member present for the whole scan at least once, while
// the set grows and shrinks between calls; an intset answers at once.
func TestSetScan(t *testing.T) {
	s := NewSet()
	for i := range 100 {
		s.Add(strconv.Itoa(i))
	}
	var all []string
	if next := s.Scan(7, func(m string) { all = append(all, m) }); next != 0 || len(all) != 100 {
		t.Fatalf("intset scan: next %d, %d members", next, len(all))
	}
	s.Add("x") // a hashtable now
	seen := map[string]bool{}
	cursor, calls := uint64(0), 0
	for {
		cursor = s.Scan(cursor, func(m string) { seen[m] = true })
		calls++
		if calls%3 == 0 && calls < 30 {
			for i := range 50 {
				s.Add(fmt.Sprintf("new%d-%d", calls, i)) // growth
			}
		}
		if calls%7 == 0 && calls < 60 {
			for i := range 60 {
				s.Remove(fmt.Sprintf("new%d-%d", calls-1, i)) // shrink what was added
			}
		}
		if cursor == 0 {
			break
		}
		if calls > 100000 {
			t.Fatal("the scan does not end")
		}
	}
	for i := range 100 {
		if !seen[strconv.Itoa(i)] {
			t.Fatalf("member %d, present throughout, was not returned", i)
		}
	}
	if !seen["x"] {
		t.Fatal("x missing")
	}
}

// Garbage payloads are errors, never panics.
func TestSetPayloadErrors(t *testing.T) {
	good := NewSet()
	for _, m := range []string{"a", "1", "", "bb"} {
		good.Add(m)
	}
	p := good.AppendPayload(nil)
	cases := [][]byte{
		nil, {}, {0}, {1}, {2, 1, 'a'}, {1, 5, 'a'}, {1, 1, 'a', 1, 'b'}, {2, 1, 'a', 1, 'a'},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
		binary.AppendUvarint(nil, 1<<40),
	}
	for i := 0; i < len(p); i++ {
		cases = append(cases, p[:i])
	}
	for _, c := range cases {
		if s, err := SetFromPayload(c); err == nil {
			t.Errorf("payload %v decoded to %v", c, s.Members())
		}
	}
	back, err := SetFromPayload(p)
	if err != nil {
		t.Fatal(err)
	}
	got := back.Members()
	sort.Strings(got)
	if !slices.Equal(got, []string{"", "1", "a", "bb"}) {
		t.Fatalf("%q", got)
	}
	// Random bytes and flipped bytes: no panic.
	rng := rand.New(rand.NewPCG(5, 6))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		_, _ = SetFromPayload(b)
		q := slices.Clone(p)
		q[rng.IntN(len(q))] ^= byte(1 + rng.IntN(255))
		_, _ = SetFromPayload(q)
	}
}

// FuzzSetPayload: any bytes decode or fail, and what decodes re-encodes to a payload that
// decodes to the same members.
func FuzzSetPayload(f *testing.F) {
	s := NewSet()
	s.Add("1")
	s.Add("x")
	f.Add(s.AppendPayload(nil))
	f.Add([]byte{2, 1, '1', 1, '2'})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := SetFromPayload(data)
		if err != nil {
			return
		}
		back, err := SetFromPayload(s.AppendPayload(nil))
		if err != nil || back.Len() != s.Len() {
			t.Fatalf("re-encoding failed: %v", err)
		}
	})
}

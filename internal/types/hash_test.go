package types

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// A hash behaves as a map through random sets and deletes across both encodings and the
// conversion between them, and its payload decodes to the same contents.
func TestHashMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		h, m := NewHash(), map[string]string{}
		fields := 10 + round*15 // some rounds stay packed, some convert
		for range 2000 {
			f := fmt.Sprintf("f%d", rng.IntN(fields))
			switch rng.IntN(3) {
			case 0, 1:
				v := fmt.Sprintf("%0*d", rng.IntN(round*4+1), rng.IntN(1000))
				_, had := m[f]
				if created := h.Set(f, v); created == had {
					t.Fatalf("Set(%q) created=%v, field existed=%v", f, created, had)
				}
				m[f] = v
			default:
				_, had := m[f]
				if h.Delete(f) != had {
					t.Fatalf("Delete(%q) != %v", f, had)
				}
				delete(m, f)
			}
		}
		check(t, h, m)
		back, err := HashFromPayload(h.AppendPayload(nil))
		if len(m) == 0 {
			if err == nil {
				t.Fatal("an empty hash's payload must not decode (Redis never keeps empty hashes)")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		check(t, back, m)
		check(t, h.Clone().(*Hash), m)
	}
}

func check(t *testing.T, h *Hash, m map[string]string) {
	t.Helper()
	if h.Len() != len(m) {
		t.Fatalf("Len %d, want %d", h.Len(), len(m))
	}
	for f, v := range m {
		if g, ok := h.Get(f); !ok || g != v {
			t.Fatalf("Get(%q) = %q %v, want %q", f, g, ok, v)
		}
	}
	n := 0
	h.Each(func(f, v string) bool {
		if m[f] != v {
			t.Fatalf("Each gave %q=%q, want %q", f, v, m[f])
		}
		n++
		return true
	})
	if n != len(m) {
		t.Fatalf("Each visited %d, want %d", n, len(m))
	}
}

// Redis's SCAN guarantee on the table encoding: a field present for the whole scan is
// returned at least once, even when the table grows and shrinks between calls.
func TestTableScanSurvivesResizes(t *testing.T) {
	tb := &Table{}
	for i := range 1000 {
		tb.Set(fmt.Sprintf("keep%d", i), "v")
	}
	seen := map[string]bool{}
	var cursor uint64
	step := 0
	for {
		cursor = tb.Scan(cursor, func(f, v string) { seen[f] = true })
		step++
		switch {
		case step == 20: // grow: many new fields
			for i := range 5000 {
				tb.Set(fmt.Sprintf("tmp%d", i), "v")
			}
		case step == 60: // shrink: drop them again
			for i := range 5000 {
				tb.Delete(fmt.Sprintf("tmp%d", i))
			}
		}
		if cursor == 0 {
			break
		}
	}
	for i := range 1000 {
		if !seen[fmt.Sprintf("keep%d", i)] {
			t.Fatalf("keep%d never returned", i)
		}
	}
}

// Malformed payloads are errors, never panics.
func TestHashPayloadErrors(t *testing.T) {
	for _, p := range [][]byte{nil, {0}, {1}, {1, 5, 'a'}, {2, 1, 'a', 1, 'b'}, {1, 1, 'a', 1, 'b', 9}, {1, 1, 'a', 1, 'b', 1, 'a', 1, 'c'}} {
		if _, err := HashFromPayload(p); err == nil {
			t.Errorf("%q decoded", p)
		}
	}
}

package types

import (
	"fmt"
	"math/rand/v2"
	"strings"
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

// Field TTLs behave as a model of (value, expiry) pairs through random sets, TTL changes,
// persists, deletes and expiry, in both encodings and across the conversion between them;
// payloads of either layout load back with the same TTLs.
func TestHashFieldTTLModel(t *testing.T) {
	type fv struct {
		v  string
		at int64
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 20 {
		h, m := NewHash(), map[string]fv{}
		fields := 5 + round*10
		now := int64(1000)
		for range 1500 {
			f := fmt.Sprintf("f%d", rng.IntN(fields))
			switch rng.IntN(8) {
			case 0, 1:
				v := fmt.Sprint(rng.IntN(100))
				h.Set(f, v)
				m[f] = fv{v, 0}
			case 2:
				if cur, ok := m[f]; ok {
					v := fmt.Sprint(rng.IntN(100))
					h.SetKeepTTL(f, v)
					m[f] = fv{v, cur.at}
				}
			case 3, 4:
				at := now + int64(rng.IntN(50))
				_, ok := m[f]
				if h.SetFieldExpiry(f, at) != ok {
					t.Fatalf("SetFieldExpiry(%q) = %v, field exists %v", f, !ok, ok)
				}
				if ok {
					m[f] = fv{m[f].v, at}
				}
			case 5:
				cur, ok := m[f]
				if h.PersistField(f) != (ok && cur.at != 0) {
					t.Fatalf("PersistField(%q) with %v", f, cur)
				}
				if ok {
					m[f] = fv{cur.v, 0}
				}
			case 6:
				h.Delete(f)
				delete(m, f)
			default:
				now += int64(rng.IntN(10))
				var gone []string
				h.ExpireFields(now, func(f string) { gone = append(gone, strings.Clone(f)) })
				for _, g := range gone {
					if at := m[g].at; at == 0 || at >= now {
						t.Fatalf("expired %q with expiry %d at %d", g, at, now)
					}
					delete(m, g)
				}
				for f, x := range m {
					if x.at != 0 && x.at < now {
						t.Fatalf("%q (expiry %d) survived ExpireFields(%d)", f, x.at, now)
					}
				}
			}
			next := int64(0)
			for _, x := range m {
				if x.at != 0 && (next == 0 || x.at < next) {
					next = x.at
				}
			}
			if got := h.NextFieldExpiry(); got > next || (next == 0) != (got == 0) {
				t.Fatalf("NextFieldExpiry %d, earliest %d", got, next)
			}
		}
		checkTTL := func(h *Hash) {
			t.Helper()
			if h.Len() != len(m) {
				t.Fatalf("Len %d, want %d", h.Len(), len(m))
			}
			for f, x := range m {
				v, ok := h.Get(f)
				at, exists := h.FieldExpiry(f)
				if !ok || !exists || v != x.v || at != x.at {
					t.Fatalf("%q: %q@%d (%v), want %q@%d", f, v, at, ok, x.v, x.at)
				}
			}
		}
		checkTTL(h)
		checkTTL(h.Clone().(*Hash))
		if len(m) > 0 {
			back, err := HashFromPayload(h.AppendPayload(nil))
			if err != nil {
				t.Fatal(err)
			}
			checkTTL(back)
		}
	}
}

// A payload written before field TTLs existed loads as it always did.
func TestHashPayloadOldLayout(t *testing.T) {
	old := []byte{2, 1, 'a', 1, '1', 1, 'b', 0}
	h, err := HashFromPayload(old)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := h.Get("a"); v != "1" || h.Len() != 2 || h.HasFieldTTLs() {
		t.Fatalf("loaded %d fields, a=%q, TTLs %v", h.Len(), v, h.HasFieldTTLs())
	}
	if got := h.AppendPayload(nil); string(got) != string(old) {
		t.Fatalf("a hash without TTLs writes the old layout: %q", got)
	}
	if _, err := HashFromPayload([]byte{0, 2, 1, 1, 'a', 0, 0}); err == nil {
		t.Fatal("an unknown payload version must not load")
	}
}

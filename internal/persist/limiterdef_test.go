package persist

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// oldLimiterDefBody is a LimiterDef body exactly as versions before shadow mode wrote it.
func oldLimiterDefBody(d LimiterDef) []byte {
	b := []byte{d.Algo}
	for _, v := range []int64{d.Limit, d.WindowMs, int64(len(d.RateText))} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	b = append(b, d.RateText...)
	for _, v := range []int64{d.IntervalNs, d.TotalAllowed, d.TotalDenied} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

// TestLimiterDefShadowCompat checks the optional tail of a LimiterDef body (flags and
// total_shadow_denied): absent it loads as zero, so old snapshots load; it is written only
// when needed, so a limiter that never used shadow mode writes the old body byte for byte
// (which older versions read); with it, it round-trips; unknown flags are refused.
func TestLimiterDefShadowCompat(t *testing.T) {
	plain := LimiterDef{Name: "api", Algo: 1, Limit: 100, WindowMs: 60000, RateText: "2.5", IntervalNs: 400_000_000, TotalAllowed: 7, TotalDenied: 9}
	if got := plain.appendBody(nil); !bytes.Equal(got, oldLimiterDefBody(plain)) {
		t.Fatalf("a plain limiter's body changed: %x vs %x", got, oldLimiterDefBody(plain))
	}
	def, err := ParseLimiterDef(&Record{Key: []byte("api"), Body: oldLimiterDefBody(plain)})
	if err != nil || def != plain {
		t.Fatalf("old body: %v %+v", err, def)
	}
	for _, d := range []LimiterDef{
		{Name: "s", Algo: 0, Limit: 2, WindowMs: 1000, IntervalNs: 500_000_000, TotalAllowed: 2, TotalDenied: 4, Flags: LimiterShadow, TotalShadowDenied: 4},
		{Name: "was", Algo: 2, Limit: 2, WindowMs: 1000, IntervalNs: 500_000_000, TotalDenied: 1 << 62, TotalShadowDenied: 1 << 62},
	} {
		got, err := ParseLimiterDef(&Record{Key: []byte(d.Name), Body: d.appendBody(nil)})
		if err != nil || got != d {
			t.Fatalf("round trip: %v %+v, want %+v", err, got, d)
		}
	}
	bad := append(oldLimiterDefBody(plain), 2, 0)
	if _, err := ParseLimiterDef(&Record{Key: []byte("api"), Body: bad}); err == nil || !strings.Contains(err.Error(), "flags") {
		t.Fatalf("unknown flag: %v", err)
	}
	if _, err := ParseLimiterDef(&Record{Key: []byte("api"), Body: append(oldLimiterDefBody(plain), 1)}); err == nil {
		t.Fatal("a tail without total_shadow_denied loaded")
	}
}

// TestLimiterKeyLeasesRoundTrip checks the StateLeases body (ids, times and units of a
// concurrency key) and that a crafted lease count cannot make the decoder allocate.
func TestLimiterKeyLeasesRoundTrip(t *testing.T) {
	k := LimiterKey{Limiter: "c", Key: []byte("u"), Kind: StateLeases,
		Leases: [][3]int64{{1_700_000_000_000_000_000, 1_700_000_000_000, 2}, {1_700_000_000_000_000_001, 1_700_000_000_000, 1}}}
	got, err := ParseLimiterKey(&Record{Key: k.Key, Body: k.appendBody(nil)})
	if err != nil || got.Kind != StateLeases || len(got.Leases) != 2 || got.Leases[0] != k.Leases[0] || got.Leases[1] != k.Leases[1] {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	if _, err := ParseLimiterKey(&Record{Key: k.Key, Body: []byte{1, 'c', StateLeases, 200}}); err == nil {
		t.Fatal("a lease count beyond the record loaded")
	}
}

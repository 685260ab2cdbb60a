package command

import "testing"

func TestLatencyBuckets(t *testing.T) {
	// Bucket bounds: every duration lands in the bucket whose range holds it.
	for _, ns := range []int64{1, 1024, 1025, 1100, 2048, 2049, 4095, 65536, 999_999, 1_000_000_000} {
		i := latIndex(ns)
		if up := latUpperNs(i); uint64(ns) > up {
			t.Fatalf("%d ns in bucket %d with upper bound %d", ns, i, up)
		}
		if i > 0 {
			if lo := latUpperNs(i - 1); uint64(ns) <= lo {
				t.Fatalf("%d ns in bucket %d but fits bucket %d (upper %d)", ns, i, i-1, lo)
			}
		}
	}
	if latIndex(latMaxNs) >= latBuckets {
		t.Fatal("one second falls outside the buckets")
	}

	var c Command
	for _, ns := range []int64{500, 3000, 3000, 70_000, 5_000_000_000} {
		c.latency.record(ns)
		c.Usec.Add(ns / 1000)
	}
	s := c.Latency()
	if s.Count != 5 {
		t.Fatalf("count %d", s.Count)
	}
	if want := uint64(0+3+3+70+5_000_000) * 1000; s.SumNs != want {
		t.Fatalf("sum %d, want %d", s.SumNs, want)
	}
	b := s.Buckets()
	want := map[int]uint64{0: 1, 1: 1, 2: 3, 6: 3, 7: 4, 19: 4, 20: 5}
	for k, n := range want {
		if b[k].Count != n {
			t.Fatalf("bucket %d (≤ %g s): %d, want %d", k, b[k].UpperSeconds, b[k].Count, n)
		}
	}
	if b[0].UpperSeconds != 1.024e-6 || b[len(b)-1].Count != s.Count {
		t.Fatalf("buckets %+v", b)
	}
	// p50 is the third call (3000 ns): its bucket's upper bound, within 12.5%.
	if p := s.Percentile(50); p < 3.0 || p > 3.0*1.125 {
		t.Fatalf("p50 %g µs", p)
	}
	if p := s.Percentile(100); p < 1e6 || p > 1.125e6 {
		t.Fatalf("p100 %g µs", p)
	}
	c.ResetLatency()
	if s := c.Latency(); s.Count != 0 {
		t.Fatal("reset left calls")
	}
	// Redis's labels for its power-of-two buckets.
	for k, us := range map[int]int64{0: 1, 4: 16, 5: 33, 6: 66, 17: 135266, 20: 1082130} {
		if got := redisOctaveUsec(k); got != us {
			t.Fatalf("label %d: %d, want %d", k, got, us)
		}
	}
}

package store

import (
	"strconv"
	"sync"
	"testing"

	"github.com/hotkv/hotkv/internal/ratelimit"
)

// TestLimiterUpdateConcurrent changes a limiter's definition while other goroutines check it,
// read its definition and walk its state (run with -race): Update holds every shard lock, so
// a check sees one definition or the other, never half of each, and the invariant of the
// bucket state (no key above the capacity of the definition it was last checked under) holds.
func TestLimiterUpdateConcurrent(t *testing.T) {
	ls := NewLimiters()
	l := &Limiter{Name: "tb", Algo: TokenBucket, Limit: 10, WindowMs: 1000, Rate: ratelimit.DefaultRate(10, 1000)}
	if !ls.Create(l, 10) {
		t.Fatal("create")
	}
	const now = int64(1_700_000_000_000)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				r, _ := l.Check([]byte("k"+strconv.Itoa((g*7+i)%16)), 1, now+int64(i%50), 1024, true, nil)
				if r[3] != 10 && r[3] != 3 {
					t.Errorf("limit %d", r[3])
					return
				}
				if r[4] > r[3] {
					t.Errorf("current %d above limit %d", r[4], r[3])
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 200 {
			limit := int64(10)
			if i%2 == 0 {
				limit = 3
			}
			l.Update(now+int64(i%50), func(old Definition) (Definition, bool) {
				old.Limit, old.Rate, old.Shadow = limit, ratelimit.DefaultRate(limit, old.WindowMs), i%3 == 0
				return old, true
			}, nil)
			_ = l.Definition()
			_ = l.UniqueKeys(now)
			_ = l.EachState(now, false, func(string, int64, []ratelimit.WindowEntry, []ratelimit.Lease) {}, nil)
		}
	}()
	wg.Wait()
}

// BenchmarkLimiterUpdate measures RATELIMIT.UPDATE's conversion: a limiter of 100,000 live
// keys changes its limit back and forth, every key's state converted under the limiter's
// locks (ns/op is one whole UPDATE; divide by the keys for the cost per key).
func BenchmarkLimiterUpdate(b *testing.B) {
	const now, keys = int64(1_700_000_000_000), 100_000
	for _, algo := range []Algo{TokenBucket, SlidingWindow, Concurrency} {
		b.Run(algo.String(), func(b *testing.B) {
			l := &Limiter{Name: "u", Algo: algo, Limit: 10, WindowMs: 60_000, Rate: ratelimit.DefaultRate(10, 60_000)}
			if !NewLimiters().Create(l, 10) {
				b.Fatal("create")
			}
			for i := range keys {
				l.Check([]byte("key:"+strconv.Itoa(i)), 3, now, 1024, true, nil)
			}
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				limit := int64(10 + i%2)
				l.Update(now+1, func(old Definition) (Definition, bool) {
					old.Limit = limit
					if algo == TokenBucket {
						old.Rate = ratelimit.DefaultRate(limit, old.WindowMs)
					}
					return old, true
				}, nil)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
		})
	}
}

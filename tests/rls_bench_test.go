package tests

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

const rlsBenchConfig = `
domain: bench
descriptors:
  - key: gcra
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: sliding
    rate_limit: {unit: second, requests_per_unit: 1000, algorithm: sliding_window}
  - key: fixed
    rate_limit: {unit: second, requests_per_unit: 1000000000, algorithm: fixed_window}
`

// BenchmarkRLSShouldRateLimit measures ShouldRateLimit through gRPC against an in-process
// server: one descriptor per request over 10000 distinct values, per algorithm; serial (the
// latency of one call, ns/op, with p50/p99), parallel (32 callers on one gRPC connection:
// throughput, decisions/s) and in-process (the service called directly, without gRPC).
//
//	go test ./tests/ -run '^$' -bench RLSShouldRateLimit -benchtime 20000x
func BenchmarkRLSShouldRateLimit(b *testing.B) {
	for _, algo := range []string{"gcra", "sliding", "fixed"} {
		for _, mode := range []string{"serial", "parallel", "inprocess"} {
			b.Run(algo+"/"+mode, func(b *testing.B) {
				env := startRLS(b, 2, rlsBenchConfig)
				call := func(ctx context.Context, r *rlpb.RateLimitRequest) (*rlpb.RateLimitResponse, error) {
					return env.rl.ShouldRateLimit(ctx, r)
				}
				if mode == "inprocess" {
					// The service without gRPC: what the decision itself costs.
					call = env.s.RLSService().ShouldRateLimit
				}
				reqs := make([]*rlpb.RateLimitRequest, 10000)
				for i := range reqs {
					reqs[i] = &rlpb.RateLimitRequest{Domain: "bench", Descriptors: []*rlcommon.RateLimitDescriptor{
						{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: algo, Value: "user" + strconv.Itoa(i)}}}}}
				}
				ctx := context.Background()
				var n atomic.Int64
				var mu sync.Mutex
				var lat []time.Duration
				b.ResetTimer()
				start := time.Now()
				if mode != "parallel" {
					lat = make([]time.Duration, 0, b.N)
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						if _, err := call(ctx, reqs[i%len(reqs)]); err != nil {
							b.Fatal(err)
						}
						lat = append(lat, time.Since(t0))
					}
				} else {
					b.SetParallelism(16)
					b.RunParallel(func(pb *testing.PB) {
						var mine []time.Duration
						for pb.Next() {
							i := n.Add(1)
							t0 := time.Now()
							if _, err := call(ctx, reqs[int(i)%len(reqs)]); err != nil {
								b.Error(err)
								return
							}
							mine = append(mine, time.Since(t0))
						}
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					})
				}
				el := time.Since(start)
				b.StopTimer()
				sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
				if len(lat) > 0 {
					b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
				}
				b.ReportMetric(float64(b.N)/el.Seconds(), "decisions/s")
			})
		}
	}
}

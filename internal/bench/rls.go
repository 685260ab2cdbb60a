package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// RLSConfig is one run of the Envoy rate limit service benchmark (hotkv-bench rls).
type RLSConfig struct {
	HotKVBin string
	// Addr is a running service's gRPC address to measure instead of starting one; its
	// configuration must have the domain "bench" of rlsBenchConfig.
	Addr string
	// Algorithm is the rule measured: gcra, sliding or fixed.
	Algorithm string
	// Conns gRPC connections (HTTP/2, each multiplexing its callers), Callers concurrent calls
	// in all, spread over Keys distinct descriptor values.
	Conns, Callers, Keys int
	Duration, Warmup     time.Duration
}

// RLSResult is what one run measured: every ShouldRateLimit call, from the client's side.
type RLSResult struct {
	Algorithm           string
	Conns, Callers      int
	Calls, Errors       int64
	Seconds             float64
	RPS                 float64
	P50, P99, P999, Max time.Duration
}

// rlsBenchConfig has a rule per algorithm, limits high enough that every call is allowed and
// recorded (the costly path).
const rlsBenchConfig = `domain: bench
descriptors:
  - key: gcra
    rate_limit: {unit: second, requests_per_unit: 1000000000}
  - key: sliding
    rate_limit: {unit: second, requests_per_unit: 1000000, algorithm: sliding_window}
  - key: fixed
    rate_limit: {unit: second, requests_per_unit: 1000000000, algorithm: fixed_window}
`

// RunRLS starts a HotKV with the service (unless cfg.Addr is set) and measures ShouldRateLimit
// with one descriptor per call.
func RunRLS(ctx context.Context, cfg RLSConfig) (*RLSResult, error) {
	addr := cfg.Addr
	if addr == "" {
		dir, err := os.MkdirTemp("", "hotkv-bench-rls-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		conf := filepath.Join(dir, "ratelimit.yaml")
		if err := os.WriteFile(conf, []byte(rlsBenchConfig), 0o644); err != nil {
			return nil, err
		}
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		p, err := StartHotKV(ctx, "hotkv", cfg.HotKVBin, nil, "--rls-port", strconv.Itoa(port), "--rls-config", conf)
		if err != nil {
			return nil, err
		}
		defer p.Stop()
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	clients := make([]rlpb.RateLimitServiceClient, cfg.Conns)
	for i := range clients {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, err
		}
		defer cc.Close()
		clients[i] = rlpb.NewRateLimitServiceClient(cc)
	}
	reqs := make([]*rlpb.RateLimitRequest, cfg.Keys)
	for i := range reqs {
		reqs[i] = &rlpb.RateLimitRequest{Domain: "bench", Descriptors: []*rlcommon.RateLimitDescriptor{
			{Entries: []*rlcommon.RateLimitDescriptor_Entry{{Key: cfg.Algorithm, Value: "user" + strconv.Itoa(i)}}}}}
	}
	run := func(d time.Duration, h *Histogram) (calls, errs int64, el time.Duration) {
		var n, bad atomic.Int64
		var mu sync.Mutex
		var wg sync.WaitGroup
		stop := time.Now().Add(d)
		start := time.Now()
		for w := range cfg.Callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var mine Histogram
				cl := clients[w%len(clients)]
				for i := w; time.Now().Before(stop) && ctx.Err() == nil; i += cfg.Callers {
					t0 := time.Now()
					_, err := cl.ShouldRateLimit(ctx, reqs[i%len(reqs)])
					mine.Record(time.Since(t0))
					n.Add(1)
					if err != nil {
						bad.Add(1)
					}
				}
				mu.Lock()
				h.Merge(&mine)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return n.Load(), bad.Load(), time.Since(start)
	}
	if cfg.Warmup > 0 {
		run(cfg.Warmup, &Histogram{})
	}
	var h Histogram
	calls, errs, el := run(cfg.Duration, &h)
	if calls > 0 && errs == calls {
		return nil, fmt.Errorf("every ShouldRateLimit call failed")
	}
	return &RLSResult{Algorithm: cfg.Algorithm, Conns: cfg.Conns, Callers: cfg.Callers, Calls: calls, Errors: errs,
		Seconds: el.Seconds(), RPS: float64(calls) / el.Seconds(), P50: h.Quantile(0.5), P99: h.Quantile(0.99),
		P999: h.Quantile(0.999), Max: h.Max()}, nil
}

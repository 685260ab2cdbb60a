package tests

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	rlcommon "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/hotkv/hotkv/internal/server"
	"github.com/hotkv/hotkv/internal/testutil"
)

// rlsEnv is a server with the Envoy rate limit service on an ephemeral port, its clock frozen
// at T0, a gRPC client and a RESP client.
type rlsEnv struct {
	s    *testutil.Server
	rl   rlpb.RateLimitServiceClient
	c    *redis.Client
	conf string
}

func startRLS(t testing.TB, proto int, yaml string, args ...string) *rlsEnv {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "ratelimit.yaml")
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := testutil.Launch(t, testutil.Options{ClockMs: testutil.T0, Args: append([]string{"--rls-config", conf}, args...),
		Setup: func(srv *server.Server) { srv.AddRLSListener(ln); srv.AddMetricsListener(mln) }})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(s.RLSAddr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return &rlsEnv{s: s, rl: rlpb.NewRateLimitServiceClient(cc), c: s.Client(t, proto), conf: conf}
}

func desc(kv ...string) *rlcommon.RateLimitDescriptor {
	d := &rlcommon.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlcommon.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

func (e *rlsEnv) ask(t *testing.T, domain string, hits uint32, ds ...*rlcommon.RateLimitDescriptor) *rlpb.RateLimitResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := e.rl.ShouldRateLimit(ctx, &rlpb.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	if err != nil {
		t.Fatalf("ShouldRateLimit: %v", err)
	}
	return r
}

func (e *rlsEnv) advance(t *testing.T, ms int64) {
	t.Helper()
	if err := e.c.Do(context.Background(), "DEBUG", "CLOCK", "ADVANCE", ms).Err(); err != nil {
		t.Fatal(err)
	}
}

// expect checks one descriptor status: code, remaining, and the duration until reset in ms
// (-1: not checked).
func expect(t *testing.T, r *rlpb.RateLimitResponse, i int, code rlpb.RateLimitResponse_Code, remaining uint32, resetMs int64) {
	t.Helper()
	st := r.Statuses[i]
	if st.Code != code || st.LimitRemaining != remaining {
		t.Fatalf("status %d: code %v remaining %d, want %v %d (%v)", i, st.Code, st.LimitRemaining, code, remaining, r)
	}
	if resetMs >= 0 {
		if got := st.DurationUntilReset.AsDuration().Milliseconds(); got != resetMs {
			t.Fatalf("status %d: reset %d ms, want %d", i, got, resetMs)
		}
	}
}

const (
	rlsOK   = rlpb.RateLimitResponse_OK
	rlsOver = rlpb.RateLimitResponse_OVER_LIMIT
)

// rlsReadme is envoyproxy/ratelimit's README examples, the files internal/rls's unit tests
// parse, as one configuration; decided with the default algorithm, GCRA with burst =
// requests_per_unit.
var rlsReadme = func() string {
	var docs []string
	for _, name := range []string{"mongo_cps", "messaging", "edge_proxy_per_ip"} {
		b, err := os.ReadFile(filepath.Join("..", "internal", "rls", "testdata", "readme", name+".yaml"))
		if err != nil {
			panic(err)
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n")
}()

func TestRLSReadmeExamplesGCRA(t *testing.T) {
	e := startRLS(t, 2, rlsReadme)
	// 500 per second: the whole budget at once, then one every 2 ms.
	r := e.ask(t, "mongo_cps", 500, desc("database", "users"))
	if r.OverallCode != rlsOK {
		t.Fatalf("%v", r)
	}
	expect(t, r, 0, rlsOK, 0, 1000)
	if l := r.Statuses[0].CurrentLimit; l.RequestsPerUnit != 500 || l.Unit != rlpb.RateLimitResponse_RateLimit_SECOND {
		t.Fatalf("current limit %v", l)
	}
	r = e.ask(t, "mongo_cps", 0, desc("database", "users"))
	if r.OverallCode != rlsOver {
		t.Fatalf("%v", r)
	}
	expect(t, r, 0, rlsOver, 0, 2) // retry after one emission interval
	// The other database has its own budget; an unconfigured one is not limited.
	r = e.ask(t, "mongo_cps", 0, desc("database", "default"), desc("database", "other"))
	if r.OverallCode != rlsOK || r.Statuses[1].CurrentLimit != nil {
		t.Fatalf("%v", r)
	}
	expect(t, r, 0, rlsOK, 499, 2)
	e.advance(t, 2)
	expect(t, e.ask(t, "mongo_cps", 0, desc("database", "users")), 0, rlsOK, 0, 1000)

	// messaging: 5 marketing messages a day per number, 100 a day to any number.
	for i := range 5 {
		r = e.ask(t, "messaging", 0, desc("message_type", "marketing", "to_number", "2061234567"), desc("to_number", "2061234567"))
		expect(t, r, 0, rlsOK, uint32(4-i), -1)
		expect(t, r, 1, rlsOK, uint32(99-i), -1)
	}
	r = e.ask(t, "messaging", 0, desc("message_type", "marketing", "to_number", "2061234567"), desc("to_number", "2061234567"))
	if r.OverallCode != rlsOver {
		t.Fatalf("%v", r)
	}
	expect(t, r, 0, rlsOver, 0, 86400*1000/5)
	expect(t, r, 1, rlsOK, 94, -1) // charged although the request is over: envoyproxy does too
	r = e.ask(t, "messaging", 0, desc("message_type", "marketing", "to_number", "2069999999"))
	expect(t, r, 0, rlsOK, 4, -1)
	r = e.ask(t, "messaging", 0, desc("message_type", "transactional", "to_number", "2061234567"))
	if r.OverallCode != rlsOK || r.Statuses[0].CurrentLimit != nil {
		t.Fatalf("unconfigured message type limited: %v", r)
	}

	// edge_proxy_per_ip: 10 per second per address, 50.0.0.5 blocked.
	for i := range 10 {
		expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.1")), 0, rlsOK, uint32(9-i), -1)
	}
	expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.1")), 0, rlsOver, 0, 100)
	expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.2")), 0, rlsOK, 9, -1)
	r = e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "50.0.0.5"))
	if r.OverallCode != rlsOver || r.Statuses[0].CurrentLimit.RequestsPerUnit != 0 {
		t.Fatalf("blocked address: %v", r)
	}
	// An unknown domain is answered OK, as envoyproxy/ratelimit does.
	if r = e.ask(t, "nope", 0, desc("a", "b")); r.OverallCode != rlsOK || r.Statuses[0].CurrentLimit != nil {
		t.Fatalf("%v", r)
	}
}

// The state is GCRA.LIMIT's, on the documented key: GCRA.PEEK reads it, GCRA.RESET resets it.
func TestRLSInspectAndResetThroughRESP(t *testing.T) {
	for _, proto := range []int{2, 3} {
		e := startRLS(t, proto, rlsReadme)
		ctx := context.Background()
		for range 10 {
			e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.1"))
		}
		key := "rls:edge_proxy_per_ip:remote_address=10.0.0.1"
		got, err := e.c.Do(ctx, "GCRA.PEEK", key, 1000, 10).Int64Slice()
		if err != nil || len(got) != 5 || got[0] != 1 || got[2] != 0 || got[3] != 100 {
			t.Fatalf("RESP%d GCRA.PEEK %v %v", proto, got, err)
		}
		if err := e.c.Do(ctx, "GCRA.RESET", key).Err(); err != nil {
			t.Fatal(err)
		}
		expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.1")), 0, rlsOK, 9, -1)
		// An address with ':' is escaped in the key.
		e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "::1"))
		if n, err := e.c.Exists(ctx, "rls:edge_proxy_per_ip:remote_address=%3A%3A1").Result(); err != nil || n != 1 {
			t.Fatalf("escaped key: %d %v", n, err)
		}
	}
}

const rlsAlgorithms = `
domain: algo
descriptors:
  - key: fixed
    rate_limit: {unit: minute, requests_per_unit: 3, algorithm: fixed_window}
  - key: sliding
    rate_limit: {unit: second, requests_per_unit: 2, algorithm: sliding_window}
  - key: burst
    rate_limit: {unit: minute, requests_per_unit: 60, burst: 2}
`

// fixed_window is envoyproxy/ratelimit's algorithm: a counter per window start, expiring at
// the window's end, reset exactly at the window boundary.
func TestRLSFixedWindow(t *testing.T) {
	e := startRLS(t, 2, rlsAlgorithms)
	ctx := context.Background()
	// T0 is 1700000000 s: the minute window started at 1699999980, 40 s are left.
	for i := range 3 {
		expect(t, e.ask(t, "algo", 0, desc("fixed", "x")), 0, rlsOK, uint32(2-i), 40000)
	}
	expect(t, e.ask(t, "algo", 0, desc("fixed", "x")), 0, rlsOver, 0, 40000)
	key := "rls:algo:fixed=x:1699999980"
	if v, err := e.c.Get(ctx, key).Int(); err != nil || v != 4 {
		t.Fatalf("counter %d %v", v, err)
	}
	if ms, err := e.c.PTTL(ctx, key).Result(); err != nil || ms != 40*time.Second {
		t.Fatalf("PTTL %v %v", ms, err)
	}
	e.advance(t, 39999)
	expect(t, e.ask(t, "algo", 0, desc("fixed", "x")), 0, rlsOver, 0, 1000)
	e.advance(t, 1)
	expect(t, e.ask(t, "algo", 0, desc("fixed", "x")), 0, rlsOK, 2, 60000)
}

// sliding_window runs RATELIMIT.CHECK on a named limiter per rule, keyed by the descriptor.
func TestRLSSlidingWindow(t *testing.T) {
	e := startRLS(t, 3, rlsAlgorithms)
	ctx := context.Background()
	expect(t, e.ask(t, "algo", 0, desc("sliding", "a")), 0, rlsOK, 1, 1000)
	e.advance(t, 400)
	expect(t, e.ask(t, "algo", 0, desc("sliding", "a")), 0, rlsOK, 0, 1000)
	expect(t, e.ask(t, "algo", 0, desc("sliding", "a")), 0, rlsOver, 0, 600)
	expect(t, e.ask(t, "algo", 0, desc("sliding", "b")), 0, rlsOK, 1, 1000)
	got, err := e.c.Do(ctx, "RATELIMIT.PEEK", "rls:algo.sliding", "sliding=a").Int64Slice()
	if err != nil || got[0] != 0 || got[4] != 2 {
		t.Fatalf("RATELIMIT.PEEK %v %v", got, err)
	}
	e.advance(t, 600)
	expect(t, e.ask(t, "algo", 0, desc("sliding", "a")), 0, rlsOK, 0, 1000)
	// Dropped (or never created here): created again on the next request.
	if err := e.c.Do(ctx, "RATELIMIT.DROP", "rls:algo.sliding").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, e.ask(t, "algo", 0, desc("sliding", "a")), 0, rlsOK, 1, 1000)
	// burst overrides requests_per_unit for GCRA: 2 at once, then one a second.
	expect(t, e.ask(t, "algo", 0, desc("burst", "a")), 0, rlsOK, 1, -1)
	expect(t, e.ask(t, "algo", 0, desc("burst", "a")), 0, rlsOK, 0, -1)
	expect(t, e.ask(t, "algo", 0, desc("burst", "a")), 0, rlsOver, 0, 1000)
}

const rlsFeatures = `
domain: f
descriptors:
  - key: shadow
    shadow_mode: true
    rate_limit: {unit: hour, requests_per_unit: 1}
  - key: key1
    value: value1
    rate_limit: {name: base, unit: minute, requests_per_unit: 10}
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 1
      name: strict
      replaces:
        - name: base
  - key: free
    rate_limit: {unlimited: true}
`

func TestRLSShadowReplacesUnlimitedHeaders(t *testing.T) {
	e := startRLS(t, 2, rlsFeatures)
	// Shadow mode: counted, never over.
	e.ask(t, "f", 0, desc("shadow", "a"))
	r := e.ask(t, "f", 0, desc("shadow", "a"))
	if r.OverallCode != rlsOK {
		t.Fatalf("shadow: %v", r)
	}
	expect(t, r, 0, rlsOK, 0, -1)
	// replaces: with both descriptors, "base" is not applied.
	r = e.ask(t, "f", 0, desc("key1", "value1"), desc("key2", "value2"))
	if r.Statuses[0].CurrentLimit != nil || r.Statuses[1].CurrentLimit.Name != "strict" {
		t.Fatalf("replaces: %v", r)
	}
	if r = e.ask(t, "f", 0, desc("key1", "value1"), desc("key2", "value2")); r.OverallCode != rlsOver {
		t.Fatalf("replacing rule not applied: %v", r)
	}
	expect(t, e.ask(t, "f", 0, desc("key1", "value1")), 0, rlsOK, 9, -1) // alone, base applies
	// unlimited: OK with the largest remaining, no state.
	r = e.ask(t, "f", 1000, desc("free", "x"))
	expect(t, r, 0, rlsOK, math.MaxUint32, -1)
	if n, _ := e.c.Exists(context.Background(), "rls:f:free=x").Result(); n != 0 {
		t.Fatal("unlimited descriptor kept state")
	}
	// Headers: the descriptor with the least remaining.
	r = e.ask(t, "f", 0, desc("key1", "value1"), desc("free", "y"))
	h := map[string]string{}
	for _, hv := range r.ResponseHeadersToAdd {
		h[hv.Key] = hv.Value
	}
	if h["x-ratelimit-limit"] != `10, 10;w=60;name="base"` || h["x-ratelimit-remaining"] != "8" || h["x-ratelimit-reset"] != "12" {
		t.Fatalf("headers %v", h)
	}
	if err := e.c.ConfigSet(context.Background(), "rls-response-headers", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if r = e.ask(t, "f", 0, desc("key1", "value1")); len(r.ResponseHeadersToAdd) != 0 {
		t.Fatalf("headers off: %v", r.ResponseHeadersToAdd)
	}
	// Metrics per descriptor key.
	var shadow, over uint64
	for _, st := range e.s.RLSService().Stats() {
		if st.Domain == "f" && st.Key == "shadow" {
			shadow, over = st.ShadowMode, st.OverLimit
		}
	}
	if shadow != 1 || over != 1 {
		t.Fatalf("shadow stats %d %d: %+v", shadow, over, e.s.RLSService().Stats())
	}
	res, err := http.Get("http://" + e.s.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	for _, want := range []string{`hotkv_rls_shadow_mode_total{descriptor="shadow",domain="f"} 1`,
		`hotkv_rls_hits_total{descriptor="key1_value1",domain="f"} 3`, `hotkv_rls_over_limit_total{descriptor="key2_value2",domain="f"} 1`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestRLSReloadAndBadConfig(t *testing.T) {
	e := startRLS(t, 2, rlsReadme)
	ctx := context.Background()
	expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.1")), 0, rlsOK, 9, -1)
	// A bad file is refused with its name, line and problem; the old configuration stays.
	bad := "domain: edge_proxy_per_ip\ndescriptors:\n  - key: remote_address\n    rate_limit:\n      unit: sec\n      requests_per_unit: 1\n"
	if err := os.WriteFile(e.conf, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err := e.c.Do(ctx, "RLS", "RELOAD").Err()
	if err == nil || !strings.Contains(err.Error(), e.conf+":5: invalid rate limit unit 'sec'") {
		t.Fatalf("RLS RELOAD of a bad file: %v", err)
	}
	err = e.c.ConfigSet(ctx, "rls-config", e.conf).Err()
	if err == nil || !strings.Contains(err.Error(), e.conf+":5: invalid rate limit unit 'sec'") {
		t.Fatalf("CONFIG SET of a bad file: %v", err)
	}
	expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.1")), 0, rlsOK, 8, -1)
	// A good file takes effect at once; the state (same key) carries over.
	good := strings.Replace(bad, "unit: sec", "unit: minute", 1)
	if err := os.WriteFile(e.conf, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Do(ctx, "RLS", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	r := e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.9"))
	expect(t, r, 0, rlsOK, 0, 60000)
	expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.9")), 0, rlsOver, 0, -1)
	if r := e.ask(t, "mongo_cps", 0, desc("database", "users")); r.Statuses[0].CurrentLimit != nil {
		t.Fatal("domain removed by the reload still limited")
	}
	// CONFIG SET to another file.
	other := filepath.Join(filepath.Dir(e.conf), "other.yaml")
	if err := os.WriteFile(other, []byte("domain: x\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ConfigSet(ctx, "rls-config", other).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ConfigSet(ctx, "rls-config", "").Err(); err == nil || !strings.Contains(err.Error(), "rls-config cannot be empty") {
		t.Fatalf("CONFIG SET rls-config \"\": %v", err)
	}
	if v, _ := e.c.ConfigGet(ctx, "rls-config").Result(); v["rls-config"] != other {
		t.Fatalf("CONFIG GET %v", v)
	}
	// CONFIG SET is all or nothing: with another parameter refused, the service keeps the
	// configuration it had, as rls-config keeps its value.
	third := filepath.Join(filepath.Dir(e.conf), "third.yaml")
	if err := os.WriteFile(third, []byte("domain: y\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ConfigSet(ctx, "rls-config", third).Err(); err != nil {
		t.Fatal(err) // third is a good file: only the parameter below makes the next SET fail
	}
	if err := e.c.ConfigSet(ctx, "rls-config", other).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Do(ctx, "CONFIG", "SET", "rls-config", third, "maxmemory-policy", "bogus").Err(); err == nil {
		t.Fatal("CONFIG SET with a bad maxmemory-policy succeeded")
	}
	if v, _ := e.c.ConfigGet(ctx, "rls-config").Result(); v["rls-config"] != other {
		t.Fatalf("CONFIG GET after a refused CONFIG SET: %v", v)
	}
	if r := e.ask(t, "y", 0, desc("k", "v")); r.Statuses[0].CurrentLimit != nil {
		t.Fatal("the refused CONFIG SET's rls-config was installed")
	}
	expect(t, e.ask(t, "x", 0, desc("k", "v")), 0, rlsOK, 0, 1000)
	// A sliding-window rule whose limit changes keeps its limiter's state (RATELIMIT.UPDATE).
	sliding := "domain: x\ndescriptors:\n  - key: s\n    rate_limit: {unit: second, requests_per_unit: %d, algorithm: sliding_window}\n"
	if err := os.WriteFile(other, []byte(fmt.Sprintf(sliding, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Do(ctx, "RLS", "RELOAD").Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, e.ask(t, "x", 0, desc("s", "v")), 0, rlsOK, 1, -1)
	expect(t, e.ask(t, "x", 0, desc("s", "v")), 0, rlsOK, 0, -1)
	expect(t, e.ask(t, "x", 0, desc("s", "v")), 0, rlsOver, 0, -1)
	if err := os.WriteFile(other, []byte(fmt.Sprintf(sliding, 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.c.ConfigSet(ctx, "rls-config", other).Err(); err != nil {
		t.Fatal(err)
	}
	expect(t, e.ask(t, "x", 0, desc("s", "v")), 0, rlsOK, 0, -1) // 3rd of 3: the 2 before count
	expect(t, e.ask(t, "x", 0, desc("s", "v")), 0, rlsOver, 0, -1)
	if got, err := e.c.Do(ctx, "RATELIMIT.PEEK", "rls:x.s", "s=v").Int64Slice(); err != nil || got[3] != 3 || got[4] != 3 {
		t.Fatalf("limiter after reload: %v %v", got, err)
	}
	st, err := e.c.Do(ctx, "RLS", "STATUS").Result()
	if err != nil || !strings.Contains(fmt.Sprint(st), "domains x") || !strings.Contains(fmt.Sprint(st), "rules 1") {
		t.Fatalf("RLS STATUS %v %v", st, err)
	}
}

func TestRLSBadRequestsAndStartErrors(t *testing.T) {
	e := startRLS(t, 2, rlsReadme)
	ctx := context.Background()
	_, err := e.rl.ShouldRateLimit(ctx, &rlpb.RateLimitRequest{Domain: "", Descriptors: []*rlcommon.RateLimitDescriptor{desc("a", "b")}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("empty domain: %v", err)
	}
	_, err = e.rl.ShouldRateLimit(ctx, &rlpb.RateLimitRequest{Domain: "mongo_cps"})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no descriptors: %v", err)
	}
	// A descriptor without entries, or with empty keys, matches nothing.
	if r := e.ask(t, "mongo_cps", 0, &rlcommon.RateLimitDescriptor{}, desc("", "")); r.OverallCode != rlsOK {
		t.Fatalf("%v", r)
	}
	// A key holding another type: the decision fails rather than guessing.
	e.c.Set(ctx, "rls:mongo_cps:database=users", "hello", 0)
	if _, err := e.rl.ShouldRateLimit(ctx, &rlpb.RateLimitRequest{Domain: "mongo_cps", Descriptors: []*rlcommon.RateLimitDescriptor{desc("database", "users")}}); status.Code(err) != codes.Internal {
		t.Fatalf("WRONGTYPE: %v", err)
	}
	// A bad file stops the start, naming the file and line.
	conf := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(conf, []byte("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	_, err = testutil.Launch(t, testutil.Options{Args: []string{"--rls-config", conf}, Setup: func(srv *server.Server) { srv.AddRLSListener(ln) }})
	if err == nil || !strings.Contains(err.Error(), conf+":4: requests_per_unit must be an integer") {
		t.Fatalf("start with a bad file: %v", err)
	}
	ln2, _ := net.Listen("tcp", "127.0.0.1:0")
	_, err = testutil.Launch(t, testutil.Options{Setup: func(srv *server.Server) { srv.AddRLSListener(ln2) }})
	if err == nil || !strings.Contains(err.Error(), "rls-config is empty") {
		t.Fatalf("start without rls-config: %v", err)
	}
}

func grpcClient(t *testing.T, addr string) rlpb.RateLimitServiceClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cc.Close() })
	return rlpb.NewRateLimitServiceClient(cc)
}

// healthOf is what the gRPC health service at addr reports for the rate limit service and
// for the server as a whole ("").
func healthOf(t *testing.T, addr string) (svc, server healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	hc := healthpb.NewHealthClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i, name := range []string{"envoy.service.ratelimit.v3.RateLimitService", ""} {
		r, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: name})
		if err != nil {
			t.Fatalf("health check of %q at %s: %v", name, addr, err)
		}
		if i == 0 {
			svc = r.Status
		} else {
			server = r.Status
		}
	}
	return svc, server
}

// waitHealth waits until the health service at addr reports want for both names.
func waitHealth(t *testing.T, addr string, want healthpb.HealthCheckResponse_ServingStatus) {
	t.Helper()
	waitUntil(t, "health "+want.String()+" at "+addr, 10*time.Second, func() bool {
		a, b := healthOf(t, addr)
		return a == want && b == want
	})
}

// The standard gRPC health service runs on the rate limit service's port: SERVING once the
// server is ready; a service it does not know is NOT_FOUND.
func TestRLSHealth(t *testing.T) {
	e := startRLS(t, 2, rlsReadme)
	addr := e.s.RLSAddr().String()
	waitHealth(t, addr, healthpb.HealthCheckResponse_SERVING)
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	_, err = healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("unknown service: %v", err)
	}
	if v, err := e.c.Do(context.Background(), "RLS", "STATUS").Slice(); err != nil || !strings.Contains(fmt.Sprint(v), "serving yes") {
		t.Fatalf("RLS STATUS: %v %v", v, err)
	}
}

// In a Raft group only the leader decides. A follower relays its calls to the leader and
// answers with the leader's decision (rls-forward, the default); with rls-forward no it answers
// UNAVAILABLE so that Envoy applies its failure mode. The service listens on rls-port (the
// bind addresses).
func TestRLSRaftFollowerForwards(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ratelimit.yaml")
	// Units of a day: no state expires while the test compares the nodes.
	raft := "domain: raft\ndescriptors:\n  - key: fixed\n    rate_limit: {unit: day, requests_per_unit: 5, algorithm: fixed_window}\n" +
		"  - key: sliding\n    rate_limit: {unit: day, requests_per_unit: 5, algorithm: sliding_window}\n"
	if err := os.WriteFile(conf, []byte(rlsReadme+"\n---\n"+raft), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := []int{freePort(t), freePort(t)}
	nodes := make([]*raftNode, 2)
	for i := range nodes {
		nodes[i] = &raftNode{id: fmt.Sprintf("n%d", i+1), dir: t.TempDir(), raftPort: freePort(t),
			extra: []string{"--rls-config", conf, "--rls-port", strconv.Itoa(ports[i])}}
		nodes[i].start(t, i == 0)
	}
	waitLeader(t, nodes[:1])
	if err := nodes[0].c.Do(context.Background(), "RAFT", "ADD", "n2", "127.0.0.1:"+strconv.Itoa(nodes[1].raftPort)).Err(); err != nil {
		t.Fatal(err)
	}
	leader := waitLeader(t, nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i, n := range nodes {
		rl := grpcClient(t, "127.0.0.1:"+strconv.Itoa(ports[i]))
		for _, q := range []struct {
			domain string
			d      *rlcommon.RateLimitDescriptor
		}{{"messaging", desc("message_type", "marketing", "to_number", "1")}, {"messaging", desc("to_number", "1")},
			{"raft", desc("sliding", "a")}, {"raft", desc("fixed", "a")}} {
			d := q.d
			r, err := rl.ShouldRateLimit(ctx, &rlpb.RateLimitRequest{Domain: q.domain, Descriptors: []*rlcommon.RateLimitDescriptor{d}})
			if err != nil || r.OverallCode != rlsOK {
				t.Fatalf("%s (leader %v) %v: %v %v", n.id, n == leader, d, r, err)
			}
			// Each node's call is the second or the first unit of the same limit: one state.
			if want := uint32(i + 1); d.Entries[0].Key == "sliding" && r.Statuses[0].LimitRemaining != 5-want {
				t.Fatalf("%s: sliding window remaining %d after %d calls", n.id, r.Statuses[0].LimitRemaining, want)
			}
		}
	}
	var follower *raftNode
	for _, n := range nodes {
		if n != leader {
			follower = n
		}
	}
	st := rlsStatus(t, follower)
	if st["forward"] != "yes" || st["forwarded"] == "0" || st["forward_errors"] != "0" || st["serving"] != "yes" {
		t.Fatalf("follower's RLS STATUS: %v", st)
	}
	// Both nodes answer, so both report SERVING to health checks.
	for i := range nodes {
		waitHealth(t, "127.0.0.1:"+strconv.Itoa(ports[i]), healthpb.HealthCheckResponse_SERVING)
	}
	if st := rlsStatus(t, leader); st["forwarded"] != "0" {
		t.Fatalf("leader's RLS STATUS: %v", st)
	}
	// The decisions are replicated as ordinary effects: the follower holds the same keys and
	// the same sliding-window limiter state.
	waitApplied(t, leader, nodes)
	want := dumpAll(t, leader)
	fixed := 0
	for k := range want {
		if strings.HasPrefix(k, "rls:raft:fixed=a:") {
			fixed++
		}
	}
	if _, ok := want["rls:messaging:to_number=1"]; !ok || fixed != 1 {
		t.Fatalf("leader's keys: %v", want)
	}
	// Hand leadership to the follower: it now holds the same state and decides, and the old
	// leader relays to it.
	if err := leader.c.Do(ctx, "RAFT", "TRANSFER", follower.id).Err(); err != nil {
		t.Fatal(err)
	}
	if nl := waitLeader(t, nodes); nl != follower {
		t.Fatalf("leadership went to %s", nl.id)
	}
	if got := dumpAll(t, follower); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: %v, leader had %v", follower.id, got, want)
	}
	v, err := follower.c.Do(ctx, "RATELIMIT.PEEK", "rls:raft.sliding", "sliding=a").Int64Slice()
	if err != nil || v[4] != 2 {
		t.Fatalf("sliding limiter on the new leader: %v %v", v, err)
	}
	for i, n := range nodes {
		rl := grpcClient(t, "127.0.0.1:"+strconv.Itoa(ports[i]))
		// 100 a day: the two units spent through the old leader are still spent, and each
		// node's call spends one more, wherever it is made.
		r, err := rl.ShouldRateLimit(ctx, &rlpb.RateLimitRequest{Domain: "messaging", Descriptors: []*rlcommon.RateLimitDescriptor{desc("to_number", "1")}})
		if err != nil || r.Statuses[0].LimitRemaining != uint32(97-i) {
			t.Fatalf("%s (leader %v): %v %v, want %d remaining", n.id, n == follower, r, err, 97-i)
		}
	}
	// Without forwarding the old leader, now a follower, answers UNAVAILABLE.
	if err := leader.c.ConfigSet(ctx, "rls-forward", "no").Err(); err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		rl := grpcClient(t, "127.0.0.1:"+strconv.Itoa(ports[i]))
		r, err := rl.ShouldRateLimit(ctx, &rlpb.RateLimitRequest{Domain: "messaging", Descriptors: []*rlcommon.RateLimitDescriptor{desc("to_number", "1")}})
		if n == follower {
			if err != nil || r.Statuses[0].LimitRemaining != 95 {
				t.Fatalf("new leader: %v %v", r, err)
			}
		} else if status.Code(err) != codes.Unavailable {
			t.Fatalf("old leader with rls-forward no: %v %v, want UNAVAILABLE", r, err)
		}
	}
	// Health checks then send Envoy to the leader only.
	for i, n := range nodes {
		want := healthpb.HealthCheckResponse_SERVING
		if n != follower {
			want = healthpb.HealthCheckResponse_NOT_SERVING
		}
		waitHealth(t, "127.0.0.1:"+strconv.Itoa(ports[i]), want)
	}
	if st := rlsStatus(t, leader); st["serving"] != "no: a follower, and rls-forward is no" {
		t.Fatalf("old leader's RLS STATUS: %v", st)
	}
}

// rlsStatus is RLS STATUS as a map.
func rlsStatus(t *testing.T, n *raftNode) map[string]string {
	t.Helper()
	v, err := n.c.Do(context.Background(), "RLS", "STATUS").StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for i := 0; i+1 < len(v); i += 2 {
		m[v[i]] = v[i+1]
	}
	return m
}

// A descriptor's own limit (Envoy's limit override), per-descriptor hits_addend,
// is_negative_hits (a GCRA refund) and detailed_metric.
func TestRLSOverridesRefundsDetailedMetric(t *testing.T) {
	e := startRLS(t, 2, rlsReadme+"\n---\ndomain: dm\ndescriptors:\n  - key: user\n    detailed_metric: true\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	// The override wins over the configured 10/s of remote_address.
	d := desc("remote_address", "10.9.9.9")
	d.Limit = &rlcommon.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: typev3.RateLimitUnit_MINUTE}
	r := e.ask(t, "edge_proxy_per_ip", 0, d)
	expect(t, r, 0, rlsOK, 2, 20000)
	if l := r.Statuses[0].CurrentLimit; l.RequestsPerUnit != 3 || l.Unit != rlpb.RateLimitResponse_RateLimit_MINUTE {
		t.Fatalf("override limit %v", l)
	}
	// Per-descriptor hits_addend wins over the request's.
	d2 := desc("user", "alice")
	d2.HitsAddend = wrapperspb.UInt64(3)
	expect(t, e.ask(t, "dm", 1, d2), 0, rlsOK, 2, 36000)
	// A refund gives units back.
	d3 := desc("user", "alice")
	d3.HitsAddend = wrapperspb.UInt64(2)
	d3.IsNegativeHits = true
	expect(t, e.ask(t, "dm", 0, d3), 0, rlsOK, 4, 12000)
	e.ask(t, "dm", 0, desc("user", "bob"))
	var keys []string
	for _, st := range e.s.RLSService().Stats() {
		if st.Domain == "dm" {
			keys = append(keys, fmt.Sprintf("%s=%d", st.Key, st.TotalHits))
		}
	}
	if strings.Join(keys, " ") != "user_alice=3 user_bob=1" {
		t.Fatalf("detailed metric series: %v", keys)
	}
}

// In a sharded cluster each decision is made by the shard that owns its key. A node relays a
// call for another shard's key there and answers with that shard's decision (rls-forward), for
// all three algorithms (fixed window's MULTI goes whole); with rls-forward no it answers
// UNAVAILABLE with the MOVED inside.
func TestRLSShardedForwards(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "ratelimit.yaml")
	// Units of a day: nothing refills between the calls (the nodes' clocks run).
	yaml := "domain: sh\ndescriptors:\n  - key: gcra\n    rate_limit: {unit: day, requests_per_unit: 100}\n" +
		"  - key: fixed\n    rate_limit: {unit: day, requests_per_unit: 100, algorithm: fixed_window}\n" +
		"  - key: sliding\n    rate_limit: {unit: day, requests_per_unit: 100, algorithm: sliding_window}\n"
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	rlsPorts := map[*raftNode]int{}
	sc := newShardedClusterWith(t, 2, 1, true, func(n *raftNode) {
		rlsPorts[n] = freePort(t)
		n.extra = append(n.extra, "--rls-config", conf, "--rls-port", strconv.Itoa(rlsPorts[n]))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ask := func(n *raftNode, d *rlcommon.RateLimitDescriptor) (*rlpb.RateLimitResponse, error) {
		return grpcClient(t, "127.0.0.1:"+strconv.Itoa(rlsPorts[n])).ShouldRateLimit(ctx,
			&rlpb.RateLimitRequest{Domain: "sh", Descriptors: []*rlcommon.RateLimitDescriptor{d}})
	}
	owners := [2]int{}
	for _, v := range []string{"1", "2", "3", "4", "5", "6"} {
		key := "rls:sh:gcra=" + v
		slot, err := sc.shards[0][0].c.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		owner := 0
		if slot >= 8192 {
			owner = 1
		}
		owners[owner]++
		// Each shard's node in turn: the second call sees the first one's unit spent.
		for s, sh := range sc.shards {
			for _, k := range []string{"gcra", "fixed", "sliding"} {
				r, err := ask(sh[0], desc(k, v))
				if err != nil || r.OverallCode != rlsOK || r.Statuses[0].LimitRemaining != uint32(99-s) {
					t.Fatalf("%s=%s (gcra key in slot %d, shard s%d) asked on s%d: %v %v, want %d remaining", k, v, slot, owner+1, s+1, r, err, 99-s)
				}
			}
		}
		// The GCRA state is on the owner only.
		for s, sh := range sc.shards {
			n, err := sh[0].c.Exists(ctx, key).Result()
			if s == owner && (err != nil || n != 1) {
				t.Fatalf("%s on its owner s%d: %d %v", key, s+1, n, err)
			}
			if s != owner && (err == nil || !strings.HasPrefix(err.Error(), "MOVED")) {
				t.Fatalf("%s on s%d, which does not own it: %d %v, want MOVED", key, s+1, n, err)
			}
		}
	}
	if owners[0] == 0 || owners[1] == 0 {
		t.Fatalf("the keys did not cover both shards: %v", owners)
	}
	for s, sh := range sc.shards {
		if st := rlsStatus(t, sh[0]); st["forwarded"] == "0" || st["forward_errors"] != "0" {
			t.Fatalf("s%d RLS STATUS: %v", s+1, st)
		}
	}
	// rls-forward no: a node decides for its own keys and answers UNAVAILABLE for the others.
	for _, sh := range sc.shards {
		if err := sh[0].c.ConfigSet(ctx, "rls-forward", "no").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range []string{"1", "2", "3", "4", "5", "6"} {
		slot, err := sc.shards[0][0].c.ClusterKeySlot(ctx, "rls:sh:gcra="+v).Result()
		if err != nil {
			t.Fatal(err)
		}
		for s, sh := range sc.shards {
			r, err := ask(sh[0], desc("gcra", v))
			if (slot >= 8192) == (s == 1) {
				if err != nil || r.Statuses[0].LimitRemaining != 97 {
					t.Fatalf("gcra=%s on its shard s%d: %v %v", v, s+1, r, err)
				}
			} else if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "MOVED") {
				t.Fatalf("gcra=%s on shard s%d: %v %v, want UNAVAILABLE", v, s+1, r, err)
			}
		}
	}
}

// rls-tls serves the rate limit service and its health service over TLS with the server's
// tls-* settings: a client certificate is required as tls-auth-clients says, plaintext is
// refused, and a CONFIG SET of the certificate applies to new connections.
func TestRLSTLS(t *testing.T) {
	te := newTLSEnv(t)
	e := startRLS(t, 2, rlsReadme, te.args("--rls-tls", "yes")...)
	addr := e.s.RLSAddr().String()
	dial := func(cfg *tls.Config) (rlpb.RateLimitServiceClient, healthpb.HealthClient) {
		creds := insecure.NewCredentials()
		if cfg != nil {
			creds = credentials.NewTLS(cfg)
		}
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })
		return rlpb.NewRateLimitServiceClient(cc), healthpb.NewHealthClient(cc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := &rlpb.RateLimitRequest{Domain: "edge_proxy_per_ip", Descriptors: []*rlcommon.RateLimitDescriptor{desc("remote_address", "10.0.0.1")}}

	rl, hc := dial(te.clientConfig(&te.clientCert))
	r, err := rl.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	require.Equal(t, rlsOK, r.OverallCode)
	h, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, h.Status)

	// Without a client certificate, and in plaintext: no call gets through.
	for name, cfg := range map[string]*tls.Config{"no client certificate": te.clientConfig(nil), "plaintext": nil} {
		rl, _ := dial(cfg)
		_, err := rl.ShouldRateLimit(ctx, req)
		require.Equal(t, codes.Unavailable, status.Code(err), "%s: %v", name, err)
	}

	// A new certificate set with CONFIG SET is what the next connections get.
	require.Equal(t, "server-1", servedCN(t, addr, te.clientConfig(&te.clientCert)))
	c2, k2 := te.ca.issue(t, "server-2", false)
	cert2, key2 := writeFile(t, te.dir, "server2.crt", c2), writeFile(t, te.dir, "server2.key", k2)
	require.NoError(t, e.c.Do(ctx, "CONFIG", "SET", "tls-cert-file", cert2, "tls-key-file", key2).Err())
	require.Equal(t, "server-2", servedCN(t, addr, te.clientConfig(&te.clientCert)))
	rl, _ = dial(te.clientConfig(&te.clientCert))
	r, err = rl.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	require.Equal(t, uint32(8), r.Statuses[0].LimitRemaining) // the second of 10 a second (clock frozen)
}

// The service's own commands do not depend on what rename-command left clients.
func TestRLSWithRenamedCommands(t *testing.T) {
	e := startRLS(t, 2, rlsReadme, "--rename-command", "gcra.limit", "", "--rename-command", "multi", "m-8f2a",
		"--rename-command", "exec", "e-8f2a", "--rename-command", "ratelimit.check", "")
	expect(t, e.ask(t, "edge_proxy_per_ip", 0, desc("remote_address", "10.0.0.1")), 0, rlsOK, 9, -1)
	require.Contains(t, e.c.Do(context.Background(), "GCRA.LIMIT", "k", "1000", "10").Err().Error(), "unknown command")
}

// TestRLSClientPause: a decision that CLIENT PAUSE WRITE holds is answered UNAVAILABLE at once
// (Envoy applies its failure mode) instead of keeping the gRPC call waiting; it is decided
// again once the pause is lifted.
func TestRLSClientPause(t *testing.T) {
	e := startRLS(t, 2, rlsReadme)
	require.Equal(t, "OK", e.c.Do(ctx, "CLIENT", "PAUSE", "100000", "WRITE").Val())
	ctx2, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := e.rl.ShouldRateLimit(ctx2, &rlpb.RateLimitRequest{Domain: "mongo_cps", Descriptors: []*rlcommon.RateLimitDescriptor{desc("database", "users")}, HitsAddend: 1})
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Contains(t, err.Error(), "CLIENT PAUSE")
	require.Equal(t, "OK", e.c.Do(ctx, "CLIENT", "UNPAUSE").Val())
	r := e.ask(t, "mongo_cps", 1, desc("database", "users"))
	require.Equal(t, rlsOK, r.OverallCode)
	expect(t, r, 0, rlsOK, 499, -1)
}

package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
	"github.com/hotkv/hotkv/clients/go/httplimit"
	"github.com/hotkv/hotkv/clients/go/internal/testserver"
)

// serverAddr is the real hotkv-server TestMain started; the examples use it too.
var serverAddr string

// t0 is the specification's vector epoch; tests freeze the server clock there.
const t0 = int64(1700000000000)

var ctx = context.Background()

func TestMain(m *testing.M) {
	srv, err := testserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting hotkv-server:", err)
		os.Exit(1)
	}
	serverAddr = srv.Addr
	code := m.Run()
	srv.Stop()
	os.Exit(code)
}

// setup empties the server, freezes its clock at t0 and returns a client for it.
func setup(t *testing.T) *hotkv.Client {
	t.Helper()
	c := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	t.Cleanup(func() { c.Close() })
	for _, args := range [][]any{{"flushall"}, {"debug", "clock", "set", t0}} {
		if err := c.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func at(t *testing.T, c *hotkv.Client, ms int64) {
	t.Helper()
	if err := c.Do(ctx, "debug", "clock", "set", t0+ms).Err(); err != nil {
		t.Fatal(err)
	}
}

func mustNew(t *testing.T, c httplimit.Client, opts httplimit.Options) http.Handler {
	t.Helper()
	mw, err := httplimit.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
}

// get sends one request from the given client address.
func get(h http.Handler, remote string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// want checks the status and the listed headers; "" means the header must be absent.
func want(t *testing.T, rec *httptest.ResponseRecorder, status int, headers ...string) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d (body %q)", rec.Code, status, rec.Body.String())
	}
	for i := 0; i+1 < len(headers); i += 2 {
		name, value := headers[i], headers[i+1]
		if got, ok := rec.Header()[http.CanonicalHeaderKey(name)]; value == "" && ok {
			t.Fatalf("%s: %q, want absent", name, got)
		} else if value != "" && rec.Header().Get(name) != value {
			t.Fatalf("%s: %q, want %q", name, rec.Header().Get(name), value)
		}
	}
}

const client = "192.0.2.1:1234"

// TestGCRAHeaders is the specification's own example (§12): V1 and the V4b denial.
func TestGCRAHeaders(t *testing.T) {
	c := setup(t)
	h := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.GCRA("api", time.Minute, 10)}})
	want(t, get(h, client), 200,
		"RateLimit-Policy", `"api";q=10;w=60`,
		"RateLimit", `"api";r=9;t=6`,
		"Retry-After", "",
		"X-RateLimit-Limit", "")
	for range 9 {
		want(t, get(h, client), 200)
	}
	want(t, get(h, client), 429,
		"Retry-After", "6",
		"RateLimit-Policy", `"api";q=10;w=60`,
		"RateLimit", `"api";r=0;t=6`)
	// The state lives in an ordinary key, rl:<name>:<client IP>.
	if v := c.Get(ctx, "rl:api:192.0.2.1").Val(); v != "1700000060000000000" {
		t.Fatalf("state key = %q", v)
	}
	// Another client has its own budget.
	want(t, get(h, "192.0.2.2:5555"), 200, "RateLimit", `"api";r=9;t=6`)
	// Waiting Retry-After is enough.
	at(t, c, 6000)
	want(t, get(h, client), 200, "RateLimit", `"api";r=0;t=60`)
}

func TestRetryAfterRoundsUp(t *testing.T) {
	c := setup(t)
	// 3 per second: the fourth request must wait 334 ms, announced as 1 s (V9).
	h := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.GCRA("s", time.Second, 3)}, LegacyHeaders: true})
	want(t, get(h, client), 200, "RateLimit", `"s";r=2;t=1`, "X-RateLimit-Limit", "3", "X-RateLimit-Remaining", "2", "X-RateLimit-Reset", "1")
	get(h, client)
	get(h, client)
	want(t, get(h, client), 429, "Retry-After", "1", "RateLimit", `"s";r=0;t=1`,
		"X-RateLimit-Limit", "3", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1")
	// A 1.5 s period is announced as a 2 s window.
	c2 := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.GCRA("h", 1500*time.Millisecond, 1)}})
	want(t, get(c2, client), 200, "RateLimit-Policy", `"h";q=1;w=2`, "RateLimit", `"h";r=0;t=2`)
	want(t, get(c2, client), 429, "Retry-After", "2")
}

func TestNamedLimiterHeaders(t *testing.T) {
	c := setup(t)
	for _, args := range []struct {
		name   string
		limit  int64
		window time.Duration
		opts   *hotkv.RateLimitOptions
	}{
		{"api", 100, time.Minute, nil},
		{"login", 3, time.Second, nil},
		{"uploads", 20, 4 * time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: 5}},
		{"half", 2, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: 0.5}},
		{"leaky", 3, 1500 * time.Millisecond, &hotkv.RateLimitOptions{Algorithm: hotkv.LeakyBucket}},
		{"odd", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket, Refill: 3}},
	} {
		if err := c.RateLimitCreate(ctx, args.name, args.limit, args.window, args.opts).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// w: sliding window ceil(window_ms/1000); buckets ceil(limit/rate). RATELIMIT.CHECK has no
	// reset time, so t is omitted while allowed.
	for _, c2 := range []struct{ name, policy, state string }{
		{"api", `"api";q=100;w=60`, `"api";r=99`},
		{"uploads", `"uploads";q=20;w=4`, `"uploads";r=19`},
		{"half", `"half";q=2;w=4`, `"half";r=1`},
		{"leaky", `"leaky";q=3;w=2`, `"leaky";r=2`},
		{"odd", `"odd";q=10;w=4`, `"odd";r=9`},
	} {
		h := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.Limiter(c2.name)}, LegacyHeaders: true})
		want(t, get(h, client), 200, "RateLimit-Policy", c2.policy, "RateLimit", c2.state, "X-RateLimit-Reset", "")
	}
	// The documented login example: the fourth request in a second waits 1000 ms.
	h := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.Limiter("login")}})
	for range 3 {
		want(t, get(h, client), 200)
	}
	want(t, get(h, client), 429, "Retry-After", "1", "RateLimit", `"login";r=0;t=1`, "RateLimit-Policy", `"login";q=3;w=1`)
	st := c.RateLimitStats(ctx, "login").Val()
	if st.TotalAllowed != 3 || st.TotalDenied != 1 {
		t.Fatalf("login totals %+v", st)
	}
	// A dropped and recreated limiter with another limit: the policy is reread.
	c.RateLimitDrop(ctx, "login")
	c.RateLimitCreate(ctx, "login", 5, 2*time.Second, nil)
	want(t, get(h, client), 200, "RateLimit-Policy", `"login";q=5;w=2`, "RateLimit", `"login";r=4`)
}

func TestCost(t *testing.T) {
	c := setup(t)
	c.RateLimitCreate(ctx, "api", 10, time.Minute, nil)
	cost := func(r *http.Request) int64 {
		n, _ := strconv.ParseInt(r.Header.Get("X-Cost"), 10, 64)
		return n
	}
	h := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.GCRA("g", time.Minute, 10)}, Cost: cost})
	want(t, get(h, client, "X-Cost", "3"), 200, "RateLimit", `"g";r=7;t=18`)
	// Cost 0 exempts the request: no check, no headers.
	want(t, get(h, client, "X-Cost", "0"), 200, "RateLimit", "", "RateLimit-Policy", "")
	// More than the burst can never pass: 429 without Retry-After, t as when allowed (§12).
	want(t, get(h, client, "X-Cost", "11"), 429, "Retry-After", "", "RateLimit", `"g";r=0;t=18`)
	want(t, get(h, client, "X-Cost", "8"), 429, "Retry-After", "6", "RateLimit", `"g";r=0;t=6`)

	n := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.Limiter("api")}, Cost: cost})
	want(t, get(n, client, "X-Cost", "4"), 200, "RateLimit", `"api";r=6`)
	rec := get(n, client, "X-Cost", "11")
	want(t, rec, 429, "Retry-After", "", "RateLimit", `"api";r=6`)
	if !strings.Contains(rec.Body.String(), "exceeds") {
		t.Fatalf("too-large body %q", rec.Body.String())
	}
	want(t, get(n, client, "X-Cost", "7"), 429, "Retry-After", "60", "RateLimit", `"api";r=6;t=60`)
}

// TestSeveralLimits checks that all limits must allow, that a refused request is charged
// nowhere, and the header items and Retry-After for several policies.
func TestSeveralLimits(t *testing.T) {
	c := setup(t)
	c.RateLimitCreate(ctx, "hourly", 5, time.Hour, nil)
	h := mustNew(t, c, httplimit.Options{
		Limits:        []httplimit.Limit{httplimit.GCRA("burst", time.Second, 2), httplimit.Limiter("hourly")},
		LegacyHeaders: true,
	})
	want(t, get(h, client), 200,
		"RateLimit-Policy", `"burst";q=2;w=1, "hourly";q=5;w=3600`,
		"RateLimit", `"burst";r=1;t=1, "hourly";r=4`,
		"X-RateLimit-Limit", "2", "X-RateLimit-Remaining", "1", "X-RateLimit-Reset", "1")
	want(t, get(h, client), 200, "RateLimit", `"burst";r=0;t=1, "hourly";r=3`)

	// The GCRA limit refuses: the named limiter is not charged and does not count a denial.
	tat := c.Get(ctx, "rl:burst:192.0.2.1").Val()
	want(t, get(h, client), 429, "Retry-After", "1",
		"RateLimit", `"burst";r=0;t=1, "hourly";r=3`,
		"X-RateLimit-Limit", "2", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1")
	if st := c.RateLimitStats(ctx, "hourly").Val(); st.TotalAllowed != 2 || st.TotalDenied != 0 {
		t.Fatalf("hourly after GCRA refusal: %+v", st)
	}
	if v := c.Get(ctx, "rl:burst:192.0.2.1").Val(); v != tat {
		t.Fatalf("refused request changed the GCRA state: %s -> %s", tat, v)
	}

	// Three more requests, a second apart, use up the hourly limit.
	for i := int64(1); i <= 3; i++ {
		at(t, c, 1000*i)
		want(t, get(h, client), 200)
	}
	// Now the named limiter refuses and the GCRA limit would allow: the GCRA key is untouched,
	// the refusal is counted in total_denied, and Retry-After is the limiter's wait (the first
	// unit leaves the hour window at t0+3600000).
	at(t, c, 10000)
	tat = c.Get(ctx, "rl:burst:192.0.2.1").Val()
	want(t, get(h, client), 429, "Retry-After", "3590",
		"RateLimit", `"burst";r=2;t=1, "hourly";r=0;t=3590`,
		"X-RateLimit-Limit", "5", "X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "3590")
	if v := c.Get(ctx, "rl:burst:192.0.2.1").Val(); v != tat {
		t.Fatalf("refused request changed the GCRA state: %s -> %s", tat, v)
	}
	if st := c.RateLimitStats(ctx, "hourly").Val(); st.TotalAllowed != 5 || st.TotalDenied != 1 {
		t.Fatalf("hourly after its refusal: %+v", st)
	}

	// Both refuse: Retry-After is the longest wait.
	get(h, "192.0.2.9:1")
	get(h, "192.0.2.9:1")
	both := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{
		httplimit.GCRA("burst", time.Second, 2), httplimit.Limiter("hourly").WithKey(func(*http.Request) string { return "192.0.2.1" }),
	}})
	want(t, get(both, "192.0.2.9:1"), 429, "Retry-After", "3590", "RateLimit", `"burst";r=0;t=1, "hourly";r=0;t=3590`)
}

// TestSeveralLimitsCost: with a cost above 1 a named limiter is decided by its remaining units
// (RATELIMIT.PEEK answers for one unit), and its Retry-After is the exact wait for that cost.
func TestSeveralLimitsCost(t *testing.T) {
	c := setup(t)
	c.RateLimitCreate(ctx, "w", 10, 10*time.Second, nil)
	cost := func(r *http.Request) int64 { n, _ := strconv.ParseInt(r.Header.Get("X-Cost"), 10, 64); return n }
	h := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.GCRA("g", time.Minute, 100), httplimit.Limiter("w")}, Cost: cost})
	want(t, get(h, client, "X-Cost", "4"), 200, "RateLimit", `"g";r=96;t=3, "w";r=6`)
	at(t, c, 5000)
	want(t, get(h, client, "X-Cost", "5"), 200, "RateLimit", `"g";r=95;t=3, "w";r=1`)
	at(t, c, 6000)
	// One unit is left, so a one-unit peek passes, but 2 units must wait for the 4 units of
	// t=0 to leave the window (t=10000) and 6 units for those of t=5000 too (t=15000). The GCRA
	// limit would allow and is not charged: its r is what was left before the request, its t
	// the reset as if counted.
	want(t, get(h, client, "X-Cost", "2"), 429, "Retry-After", "4", "RateLimit", `"g";r=96;t=4, "w";r=1;t=4`)
	want(t, get(h, client, "X-Cost", "6"), 429, "Retry-After", "9", "RateLimit", `"g";r=96;t=6, "w";r=1;t=9`)
	// A cost above the limiter's limit is too large: no Retry-After, no t for it.
	want(t, get(h, client, "X-Cost", "11"), 429, "Retry-After", "", "RateLimit", `"g";r=96;t=9, "w";r=1`)
	if st := c.RateLimitStats(ctx, "w").Val(); st.TotalAllowed != 9 || st.TotalDenied != 19 {
		t.Fatalf("totals %+v", st)
	}
	if v := c.Get(ctx, "rl:g:192.0.2.1").Val(); v != "1700000008000000000" {
		t.Fatalf("GCRA state %s: refused requests were charged", v)
	}
}

func TestFailOpenAndClosed(t *testing.T) {
	// A port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	down := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1, DialerRetries: 1, DialTimeout: 200 * time.Millisecond})
	defer down.Close()
	limits := []httplimit.Limit{httplimit.GCRA("api", time.Minute, 10)}

	var seen []error
	onError := func(_ *http.Request, err error) { seen = append(seen, err) }
	open := mustNew(t, down, httplimit.Options{Limits: limits, FailOpen: true, OnError: onError})
	want(t, get(open, client), 200, "RateLimit", "", "RateLimit-Policy", "")
	closed := mustNew(t, down, httplimit.Options{Limits: limits, OnError: onError})
	want(t, get(closed, client), 503, "RateLimit", "")
	if len(seen) != 2 {
		t.Fatalf("OnError saw %v", seen)
	}
	custom := mustNew(t, down, httplimit.Options{Limits: limits, ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
		w.WriteHeader(http.StatusTeapot)
	}})
	want(t, get(custom, client), http.StatusTeapot)

	// An unknown limiter is a configuration error, handled the same way (the server's all-zero
	// reply would otherwise refuse everything).
	c := setup(t)
	var got error
	unknown := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{httplimit.Limiter("missing")}, OnError: func(_ *http.Request, err error) { got = err }})
	want(t, get(unknown, client), 503)
	if !errors.Is(got, httplimit.ErrUnknownLimiter) {
		t.Fatalf("error %v", got)
	}
	both := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{limits[0], httplimit.Limiter("missing")}, FailOpen: true})
	want(t, get(both, client), 200, "RateLimit", "")
}

func TestKeyFunctions(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	byIP := httplimit.ByIP(proxies...)
	for _, c := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"192.0.2.1:1234", nil, "192.0.2.1"},
		// An untrusted peer's X-Forwarded-For is ignored.
		{"192.0.2.1:1234", []string{"198.51.100.7"}, "192.0.2.1"},
		// Behind a trusted proxy: the right-most untrusted address.
		{"10.0.0.2:80", []string{"203.0.113.5, 198.51.100.7"}, "198.51.100.7"},
		{"10.0.0.2:80", []string{"203.0.113.5, 198.51.100.7, 10.0.0.9"}, "198.51.100.7"},
		{"10.0.0.2:80", []string{"203.0.113.5", "198.51.100.7, 10.0.0.9"}, "198.51.100.7"},
		{"10.0.0.2:80", []string{"10.1.1.1, 10.0.0.9"}, "10.1.1.1"},
		{"10.0.0.2:80", nil, "10.0.0.2"},
		{"[::1]:80", []string{"[2001:db8::1]"}, "[2001:db8::1]"},
		{"[::1]:80", []string{"2001:db8::1"}, "2001:db8::1"},
		{"[::ffff:192.0.2.1]:80", nil, "192.0.2.1"},
		{"10.0.0.2:80", []string{"::ffff:198.51.100.7"}, "198.51.100.7"},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = c.remote
		for _, v := range c.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		if got := byIP(req); got != c.want {
			t.Errorf("ByIP(%s, %q) = %q, want %q", c.remote, c.xff, got, c.want)
		}
	}
	// Without trusted proxies X-Forwarded-For is never read.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "10.0.0.2:80"
	req.Header.Set("X-Forwarded-For", "198.51.100.7")
	if got := httplimit.ByIP()(req); got != "10.0.0.2" {
		t.Errorf("ByIP() = %q", got)
	}

	// ByHeader and a per-limit key, end to end.
	c := setup(t)
	h := mustNew(t, c, httplimit.Options{
		Key: httplimit.ByHeader("X-API-Key"),
		Limits: []httplimit.Limit{
			httplimit.GCRA("key", time.Minute, 10),
			httplimit.GCRA("ip", time.Minute, 100).WithKey(httplimit.ByIP()).WithPrefix("ip-limit:"),
		},
	})
	want(t, get(h, client, "X-API-Key", "k1"), 200, "RateLimit", `"key";r=9;t=6, "ip";r=99;t=1`)
	want(t, get(h, "192.0.2.2:1", "X-API-Key", "k1"), 200, "RateLimit", `"key";r=8;t=12, "ip";r=99;t=1`)
	for _, k := range []string{"rl:key:k1", "ip-limit:192.0.2.1", "ip-limit:192.0.2.2"} {
		if c.Exists(ctx, k).Val() != 1 {
			t.Fatalf("key %s missing", k)
		}
	}
}

func TestDeniedHandlerAndDecision(t *testing.T) {
	c := setup(t)
	mw, err := httplimit.New(c, httplimit.Options{
		Limits: []httplimit.Limit{httplimit.GCRA("api", time.Minute, 1).WithPolicy(`my "api"`)},
		DeniedHandler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, _ := httplimit.FromContext(r.Context())
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintf(w, "wait %ds (%v)", d.RetryAfter, d.Results[0].Allowed)
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	var seen *httplimit.Decision
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen, _ = httplimit.FromContext(r.Context()) }))
	want(t, get(h, client), 200, "RateLimit-Policy", `"my \"api\"";q=1;w=60`)
	if seen == nil || !seen.Allowed || seen.Results[0] != (httplimit.Result{Policy: `my "api"`, Allowed: true, Quota: 1, Window: 60, Remaining: 0, Reset: 60}) {
		t.Fatalf("decision %+v", seen)
	}
	rec := get(h, client)
	want(t, rec, 429, "Retry-After", "60")
	if rec.Body.String() != "wait 60s (false)" {
		t.Fatalf("body %q", rec.Body.String())
	}
}

func TestConfigurationErrors(t *testing.T) {
	c := setup(t)
	for _, opts := range []httplimit.Options{
		{},
		{Limits: []httplimit.Limit{httplimit.GCRA("", time.Minute, 1)}},
		{Limits: []httplimit.Limit{httplimit.GCRA("a", time.Minute, 1), httplimit.Limiter("a")}},
		{Limits: []httplimit.Limit{httplimit.GCRA("a", time.Microsecond, 1)}},
		{Limits: []httplimit.Limit{httplimit.GCRA("a", time.Minute, 0)}},
		{Limits: []httplimit.Limit{httplimit.Limiter("bad\nname")}},
	} {
		if _, err := httplimit.New(c, opts); err == nil {
			t.Errorf("New(%+v) accepted", opts)
		}
	}
	if _, err := httplimit.New(nil, httplimit.Options{Limits: []httplimit.Limit{httplimit.Limiter("a")}}); err == nil {
		t.Error("New(nil client) accepted")
	}
}

// TestClusterClient runs the middleware over a go-redis cluster client (the single test server
// presented as owning every slot), since HotKV has no cluster mode yet.
func TestClusterClient(t *testing.T) {
	setup(t)
	cc := hotkv.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: serverAddr}}}}, nil
		},
	})
	defer cc.Close()
	if err := cc.RateLimitCreate(ctx, "api", 100, time.Minute, nil).Err(); err != nil {
		t.Fatal(err)
	}
	h := mustNew(t, cc, httplimit.Options{Limits: []httplimit.Limit{httplimit.GCRA("g", time.Minute, 10), httplimit.Limiter("api")}})
	want(t, get(h, client), 200, "RateLimit", `"g";r=9;t=6, "api";r=99`)
}

// TestConcurrencyLimiter: a concurrency limiter's lease is held while the handler runs and
// released when it returns, so at most limit requests are in the handler at once; a request
// refused by another limit keeps no lease.
func TestConcurrencyLimiter(t *testing.T) {
	c := setup(t)
	if err := c.RateLimitCreate(ctx, "inflight", 1, time.Minute, &hotkv.RateLimitOptions{Algorithm: hotkv.Concurrency}).Err(); err != nil {
		t.Fatal(err)
	}
	mw, err := httplimit.New(c, httplimit.Options{Limits: []httplimit.Limit{httplimit.Limiter("inflight")}})
	if err != nil {
		t.Fatal(err)
	}
	entered, leave := make(chan struct{}), make(chan struct{})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") != "" {
			entered <- struct{}{}
			<-leave
		}
		fmt.Fprint(w, "ok")
	}))
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		req := httptest.NewRequest(http.MethodGet, "/?slow=1", nil)
		req.RemoteAddr = client
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		done <- rec
	}()
	<-entered
	// The slow request holds the only slot.
	want(t, get(h, client), 429, "RateLimit", `"inflight";r=0;t=60`, "Retry-After", "60")
	close(leave)
	want(t, <-done, 200, "RateLimit", `"inflight";r=0`)
	// Released when the handler returned.
	if r := c.RateLimitPeek(ctx, "inflight", "192.0.2.1").Val(); r.Current != 0 || !r.Allowed {
		t.Fatalf("after the request: %+v", r)
	}
	want(t, get(h, client), 200)
	want(t, get(h, client), 200)

	// With a GCRA limit that refuses, the concurrency limiter keeps nothing.
	h2 := mustNew(t, c, httplimit.Options{Limits: []httplimit.Limit{
		httplimit.GCRA("burst", time.Minute, 1), httplimit.Limiter("inflight")}})
	want(t, get(h2, client), 200)
	want(t, get(h2, client), 429)
	if r := c.RateLimitPeek(ctx, "inflight", "192.0.2.1").Val(); r.Current != 0 {
		t.Fatalf("a lease left after the requests: %+v", r)
	}
	st := c.RateLimitStats(ctx, "inflight").Val()
	if st.TotalAllowed != 4 || st.TotalDenied != 1 {
		t.Fatalf("totals %+v", st)
	}
}

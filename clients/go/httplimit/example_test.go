package httplimit_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
	"github.com/hotkv/hotkv/clients/go/httplimit"
)

// freshServer empties the test server and freezes its clock, so the examples' times are exact
// (serverAddr stands for your HotKV server's address).
func freshServer() {
	admin := redis.NewClient(&redis.Options{Addr: serverAddr})
	defer admin.Close()
	for _, args := range [][]any{{"flushall"}, {"debug", "clock", "set", t0}} {
		if err := admin.Do(context.Background(), args...).Err(); err != nil {
			log.Fatal(err)
		}
	}
}

// Ten requests a minute per API key: the eleventh gets 429 with Retry-After and the IETF
// RateLimit headers.
func ExampleNew() {
	freshServer()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	limit, err := httplimit.New(client, httplimit.Options{
		Key:    httplimit.ByHeader("X-API-Key"),
		Limits: []httplimit.Limit{httplimit.GCRA("api", time.Minute, 10)},
	})
	if err != nil {
		log.Fatal(err)
	}
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello")
	}))

	for i := 1; i <= 11; i++ {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-API-Key", "key-42")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if i == 1 || i == 11 {
			h := rec.Header()
			fmt.Println(rec.Code, h.Get("Retry-After"), h.Get("RateLimit-Policy"), h.Get("RateLimit"))
		}
	}
	// Output:
	// 200  "api";q=10;w=60 "api";r=9;t=6
	// 429 6 "api";q=10;w=60 "api";r=0;t=6
}

// A short GCRA limit and a long named limiter together: a request must pass both, and one
// that either refuses is counted by neither.
func ExampleNew_severalLimits() {
	freshServer()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()
	// Named limiters are created once, for example at start-up; "already exists" is fine.
	client.RateLimitCreate(context.Background(), "hourly", 1000, time.Hour, nil)

	limit, err := httplimit.New(client, httplimit.Options{
		Limits: []httplimit.Limit{
			httplimit.GCRA("per-second", time.Second, 5),
			httplimit.Limiter("hourly"),
		},
		LegacyHeaders: true,
	})
	if err != nil {
		log.Fatal(err)
	}
	handler := limit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Println(rec.Header().Get("RateLimit-Policy"))
	fmt.Println(rec.Header().Get("RateLimit"))
	fmt.Println(rec.Header().Get("X-RateLimit-Remaining"))
	// Output:
	// "per-second";q=5;w=1, "hourly";q=1000;w=3600
	// "per-second";r=4;t=1, "hourly";r=999
	// 4
}

// Behind your own load balancers, key by the address they saw, not by a forgeable
// X-Forwarded-For entry.
func ExampleByIP() {
	key := httplimit.ByIP(netip.MustParsePrefix("10.0.0.0/8"))

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = "10.0.0.7:41234"                               // the load balancer
	req.Header.Set("X-Forwarded-For", "203.0.113.9, 198.51.100.23") // forged, then real
	fmt.Println(key(req))
	// Output: 198.51.100.23
}

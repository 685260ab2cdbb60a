package hotkv_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

func (e *env) update(name string, u hotkv.RateLimitUpdate) error {
	return do(e, func(c hotkv.Commands) *redis.StatusCmd { return c.RateLimitUpdate(ctx, name, u) }).Err()
}

// TestRateLimitUpdate runs docs/ratelimit.md's U4 vector (a token bucket's units in use kept
// across a change of limit and rate) and the errors a typed update can produce.
func TestRateLimitUpdate(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		e.mustCreate("tb", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.TokenBucket})
		e.at(0)
		e.wantRL(e.check("tb", "u", 6), [5]int64{1, 4, 0, 10, 0})
		e.at(100)
		e.wantRL(e.rlPeek("tb", "u"), [5]int64{1, 5, 0, 10, 5})
		if err := e.update("tb", hotkv.RateLimitUpdate{Limit: 20}); err != nil {
			t.Fatal(err)
		}
		e.wantRL(e.rlPeek("tb", "u"), [5]int64{1, 15, 0, 20, 5})
		if err := e.update("tb", hotkv.RateLimitUpdate{Limit: 3, Refill: 1, Window: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		e.wantRL(e.rlPeek("tb", "u"), [5]int64{0, 0, 1000, 3, 3})
		st := e.stats("tb").Val()
		if st.Limit != 3 || st.WindowMs != 5000 || st.RefillPerSec != 1 || st.Shadow || st.TotalShadowDenied != 0 {
			t.Fatalf("stats after update: %+v", st)
		}
		for _, c := range []struct {
			name string
			u    hotkv.RateLimitUpdate
			want string
		}{
			{"tb", hotkv.RateLimitUpdate{}, "ERR syntax error"},
			{"tb", hotkv.RateLimitUpdate{Drain: 2}, "ERR syntax error"},
			{"tb", hotkv.RateLimitUpdate{Limit: -1}, "ERR invalid limit: must be a positive integer"},
			{"nolimiter", hotkv.RateLimitUpdate{Limit: 1}, "ERR limiter not found"},
		} {
			if err := e.update(c.name, c.u); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("update %s %+v: %v, want %q", c.name, c.u, err, c.want)
			}
		}
	})
}

// TestRateLimitShadow runs docs/ratelimit.md's S1 vector through the typed client.
func TestRateLimitShadow(t *testing.T) {
	forEachEnv(t, func(t *testing.T, e *env) {
		e.at(0)
		e.mustCreate("s", 2, time.Second, &hotkv.RateLimitOptions{Shadow: true})
		e.wantRL(e.check("s", "u", 1), [5]int64{1, 1, 0, 2, 0})
		e.wantRL(e.check("s", "u", 1), [5]int64{1, 0, 0, 2, 1})
		e.wantRL(e.check("s", "u", 1), [5]int64{1, 0, 1000, 2, 2})
		e.wantRL(e.check("s", "u", 3), [5]int64{1, 0, -1, 2, 2})
		st := e.stats("s").Val()
		if !st.Shadow || st.TotalAllowed != 2 || st.TotalDenied != 4 || st.TotalShadowDenied != 4 {
			t.Fatalf("shadow stats: %+v", st)
		}
		off := false
		if err := e.update("s", hotkv.RateLimitUpdate{Shadow: &off}); err != nil {
			t.Fatal(err)
		}
		e.wantRL(e.check("s", "u", 1), [5]int64{0, 0, 1000, 2, 2})
		st = e.stats("s").Val()
		if st.Shadow || st.TotalDenied != 5 || st.TotalShadowDenied != 4 {
			t.Fatalf("stats after SHADOW OFF: %+v", st)
		}
	})
}

package hotkv_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

func (e *env) release(name, key string, id int64) *redis.BoolCmd {
	return do(e, func(c hotkv.Commands) *redis.BoolCmd { return c.RateLimitRelease(ctx, name, key, id) })
}

// wantLease is wantRL for a concurrency CHECK: the five fields and the lease id.
func (e *env) wantLease(cmd *hotkv.RateLimitCmd, want [5]int64, id int64) {
	e.t.Helper()
	e.wantRL(cmd, want)
	if got := cmd.Val().LeaseID; got != id {
		e.t.Fatalf("%v: lease id %d, want %d", cmd.Args(), got, id)
	}
}

func (e *env) wantReleased(name, key string, id int64, want bool) {
	e.t.Helper()
	got, err := e.release(name, key, id).Result()
	if err != nil || got != want {
		e.t.Fatalf("RateLimitRelease %s %s %d = %v, %v; want %v", name, key, id, got, err, want)
	}
}

// TestRateLimitConcurrency runs docs/ratelimit.md's C1 to C5 vectors (leases acquired to the
// limit, a denial's retry, releases, expiry, costs, RESET) and the RELEASE errors through the
// typed client, in every protocol, client and mode.
func TestRateLimitConcurrency(t *testing.T) {
	id := func(ms int64) int64 { return (t0 + ms) * 1_000_000 }
	forEachEnv(t, func(t *testing.T, e *env) {
		e.at(0)
		e.mustCreate("c", 3, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.Concurrency})
		e.wantLease(e.check("c", "u", 1), [5]int64{1, 2, 0, 3, 0}, id(0))
		e.wantLease(e.check("c", "u", 1), [5]int64{1, 1, 0, 3, 1}, id(0)+1)
		e.at(100)
		e.wantLease(e.check("c", "u", 1), [5]int64{1, 0, 0, 3, 2}, id(100))
		e.at(200)
		e.wantLease(e.check("c", "u", 1), [5]int64{0, 0, 800, 3, 3}, 0)
		e.wantLease(e.rlPeek("c", "u"), [5]int64{0, 0, 800, 3, 3}, 0)
		e.wantReleased("c", "u", id(0)+1, true)
		e.wantReleased("c", "u", id(0)+1, false)
		e.wantLease(e.check("c", "u", 1), [5]int64{1, 0, 0, 3, 2}, id(200))
		e.wantReleased("c", "v", id(0), false)
		e.at(1000)
		e.wantLease(e.check("c", "u", 1), [5]int64{1, 0, 0, 3, 2}, id(1000))
		e.wantReleased("c", "u", id(0), false) // expired
		st := e.stats("c").Val()
		if st.Algorithm != hotkv.Concurrency || st.Limit != 3 || st.UniqueKeys != 1 || st.TotalAllowed != 5 || st.TotalDenied != 1 {
			t.Fatalf("stats: %+v", st)
		}

		e.at(0)
		e.mustCreate("d", 10, time.Second, &hotkv.RateLimitOptions{Algorithm: "CONCURRENCY"})
		e.wantLease(e.check("d", "u", 4), [5]int64{1, 6, 0, 10, 0}, id(0))
		e.at(200)
		e.wantLease(e.check("d", "u", 4), [5]int64{1, 2, 0, 10, 4}, id(200))
		e.at(400)
		e.wantLease(e.check("d", "u", 4), [5]int64{0, 2, 600, 10, 8}, 0)
		if r := e.check("d", "u", 11).Val(); !r.TooLarge() || r.LeaseID != 0 {
			t.Fatalf("cost above the limit: %+v", r)
		}
		e.wantReleased("d", "u", id(0), true)
		e.wantLease(e.check("d", "u", 4), [5]int64{1, 2, 0, 10, 4}, id(400))

		// Other algorithms keep five fields and no lease.
		e.mustCreate("api", 10, time.Second, nil)
		e.wantLease(e.check("api", "u", 1), [5]int64{1, 9, 0, 10, 0}, 0)
		for _, c := range []struct {
			name string
			id   int64
			want string
		}{
			{"c", 0, "ERR invalid lease: must be a positive integer"},
			{"c", -5, "ERR invalid lease: must be a positive integer"},
			{"nolimiter", 1, "ERR limiter not found"},
			{"api", 1, "ERR limiter is not a concurrency limiter"},
		} {
			wantErr(t, "RateLimitRelease "+c.name, e.release(c.name, "u", c.id).Err(), c.want)
		}
		wantErr(t, "create", e.create("big", 100001, time.Second, &hotkv.RateLimitOptions{Algorithm: hotkv.Concurrency}),
			"ERR invalid limit: must be at most 100000 for ALGO concurrency")
	})
}

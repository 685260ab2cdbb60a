package hotkv_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// The examples run against the real server TestMain started (serverAddr; in your code, the
// address of your HotKV server). Each begins with freshServer, which empties that server and
// freezes its clock with DEBUG CLOCK SET so the printed times are exact; a real server's clock
// runs, so your numbers can be a few milliseconds smaller.

// freshServer resets the test server for one example.
func freshServer() {
	admin := redis.NewClient(&redis.Options{Addr: serverAddr})
	defer admin.Close()
	for _, args := range [][]any{
		{"flushall"},
		{"config", "set", "throttle-compat", "redis-cell"},
		{"debug", "clock", "set", t0},
	} {
		if err := admin.Do(context.Background(), args...).Err(); err != nil {
			log.Fatal(err)
		}
	}
}

// The GCRA.LIMIT snippet of the rate-limiting guide: 10 requests a minute per user.
func ExampleClient_GCRALimit() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	result, err := client.GCRALimit(ctx, "api:user:42", time.Minute, 10, 1).Result()
	if err != nil {
		log.Fatal(err)
	}
	if result.Denied {
		fmt.Printf("slow down, retry in %d ms\n", result.RetryAfterMs)
	} else {
		fmt.Printf("%d requests left\n", result.Remaining)
	}
	// Output: 9 requests left
}

// After ten quick calls the eleventh is refused (the guide's second CLI example), and the
// same snippet takes its other branch.
func ExampleClient_GCRALimit_denied() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	for range 10 {
		client.GCRALimit(ctx, "api:user:42", time.Minute, 10, 1)
	}
	result, err := client.GCRALimit(ctx, "api:user:42", time.Minute, 10, 1).Result()
	if err != nil {
		log.Fatal(err)
	}
	if result.Denied {
		fmt.Printf("slow down, retry in %d ms\n", result.RetryAfterMs)
	} else {
		fmt.Printf("%d requests left\n", result.Remaining)
	}
	fmt.Println(result.RetryAfter(), result.ResetAfter())
	// Output:
	// slow down, retry in 6000 ms
	// 6s 1m0s
}

// The GCRA.LIMIT reference page: two single requests, then a request for 10 units that does
// not fit and is refused without changing anything.
func ExampleClient_GCRALimit_count() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	for _, count := range []int64{1, 1, 10} {
		r, err := client.GCRALimit(ctx, "ratelimit:user:42", time.Minute, 10, count).Result()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%+v\n", r)
	}
	// Output:
	// {Denied:false Limit:10 Remaining:9 RetryAfterMs:-1 ResetAfterMs:6000}
	// {Denied:false Limit:10 Remaining:8 RetryAfterMs:-1 ResetAfterMs:12000}
	// {Denied:true Limit:10 Remaining:0 RetryAfterMs:12000 ResetAfterMs:12000}
}

// Server errors come back unchanged, with the server's text.
func ExampleClient_GCRALimit_errors() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	client.Set(ctx, "greeting", "hello", 0)
	fmt.Println(client.GCRALimit(ctx, "greeting", time.Minute, 10, 1).Err())
	fmt.Println(client.GCRALimit(ctx, "ratelimit:user:7", 0, 10, 1).Err())
	// Output:
	// WRONGTYPE Operation against a key holding the wrong kind of value
	// ERR invalid period: must be a positive integer (milliseconds)
}

// GCRA.PEEK answers what GCRA.LIMIT would, including the units the request would use, and
// records nothing.
func ExampleClient_GCRAPeek() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	peek := client.GCRAPeek(ctx, "ratelimit:user:42", time.Minute, 10, 1).Val()
	fmt.Println(peek.Remaining, client.Exists(ctx, "ratelimit:user:42").Val())
	client.GCRALimit(ctx, "ratelimit:user:42", time.Minute, 10, 1)
	peek = client.GCRAPeek(ctx, "ratelimit:user:42", time.Minute, 10, 1).Val()
	fmt.Println(peek.Remaining, peek.ResetAfterMs)
	// Output:
	// 9 0
	// 8 12000
}

// GCRA.RESET counts the keys that existed; a key listed twice counts once.
func ExampleClient_GCRAReset() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	client.GCRALimit(ctx, "ratelimit:user:42", time.Minute, 10, 1)
	client.GCRALimit(ctx, "ratelimit:user:43", time.Minute, 10, 1)
	n, err := client.GCRAReset(ctx, "ratelimit:user:42", "ratelimit:user:43", "nokey", "ratelimit:user:42").Result()
	fmt.Println(n, err)
	// Output: 2 <nil>
}

// The Dragonfly CL.THROTTLE page's example: one request per 10 seconds, no burst. The server
// rounds seconds the redis-cell way by default (an exact 10 s wait reads 10).
func ExampleClient_CLThrottle() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	for range 2 {
		r, err := client.CLThrottle(ctx, "user123", 0, 1, 10*time.Second, 1).Result()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%+v\n", r)
	}
	// Output:
	// {Limited:false Limit:1 Remaining:0 RetryAfterSec:-1 ResetAfterSec:10}
	// {Limited:true Limit:1 Remaining:0 RetryAfterSec:10 ResetAfterSec:10}
}

// With throttle-compat dragonfly the server rounds seconds as Dragonfly does, which reproduces
// the Dragonfly page exactly when the second call comes a moment later (here DEBUG CLOCK
// moves the frozen test clock by 1 ms).
func ExampleClient_CLThrottle_dragonfly() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	client.ConfigSet(ctx, "throttle-compat", "dragonfly")
	first := client.CLThrottle(ctx, "user123", 0, 1, 10*time.Second, 1).Val()
	client.Do(ctx, "debug", "clock", "advance", 1)
	second := client.CLThrottle(ctx, "user123", 0, 1, 10*time.Second, 1).Val()
	fmt.Println(throttleFive(first))
	fmt.Println(throttleFive(second))
	// Output:
	// [0 1 0 -1 11]
	// [1 1 0 10 10]
}

// The RATELIMIT snippet of the rate-limiting guide, followed by what the check returned.
func ExampleClient_RateLimitCheck() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	client.RateLimitCreate(ctx, "api", 100, time.Minute, nil)

	check, err := client.RateLimitCheck(ctx, "api", "user:42", 1).Result()
	if err == nil && !check.Allowed {
		fmt.Printf("retry in %d ms\n", check.RetryAfterMs)
	}
	fmt.Printf("%+v\n", check)
	// Output: {Allowed:true Remaining:99 RetryAfterMs:0 Limit:100 Current:0 LeaseID:0}
}

// A sliding window of 3 requests a second (the RATELIMIT.CHECK reference page): the fourth
// request must wait until the first leaves the window.
func ExampleClient_RateLimitCheck_denied() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	client.RateLimitCreate(ctx, "login", 3, time.Second, nil)
	for range 4 {
		check, err := client.RateLimitCheck(ctx, "login", "203.0.113.7", 1).Result()
		if err == nil && !check.Allowed {
			fmt.Printf("retry in %d ms\n", check.RetryAfterMs)
		} else {
			fmt.Println("allowed, remaining", check.Remaining)
		}
	}
	// Output:
	// allowed, remaining 2
	// allowed, remaining 1
	// allowed, remaining 0
	// retry in 1000 ms
}

// The guide's CLI session: create, two checks (the second costs 5), then the statistics.
func ExampleClient_RateLimitStats() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	fmt.Println(client.RateLimitCreate(ctx, "api", 100, time.Minute, nil).Val())
	fmt.Printf("%+v\n", client.RateLimitCheck(ctx, "api", "user:42", 1).Val())
	fmt.Printf("%+v\n", client.RateLimitCheck(ctx, "api", "user:42", 5).Val())
	stats, err := client.RateLimitStats(ctx, "api").Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%+v\n", stats)
	// Output:
	// OK
	// {Allowed:true Remaining:99 RetryAfterMs:0 Limit:100 Current:0 LeaseID:0}
	// {Allowed:true Remaining:94 RetryAfterMs:0 Limit:100 Current:1 LeaseID:0}
	// {Name:api Algorithm:sliding_window Limit:100 WindowMs:60000 UniqueKeys:1 TotalAllowed:6 TotalDenied:0 RefillPerSec:0 DrainPerSec:0 Shadow:false TotalShadowDenied:0}
}

// The guide's token bucket: bursts of 20 and a steady 5 requests per second.
func ExampleClient_RateLimitCreate() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	err := client.RateLimitCreate(ctx, "uploads", 20, 4*time.Second, &hotkv.RateLimitOptions{
		Algorithm: hotkv.TokenBucket,
		Refill:    5,
	}).Err()
	fmt.Println(err)
	// Names are unique, even with identical settings.
	fmt.Println(client.RateLimitCreate(ctx, "uploads", 20, 4*time.Second, nil).Err())
	fmt.Println(client.RateLimitList(ctx).Val())
	// Output:
	// <nil>
	// ERR limiter already exists or limit reached
	// [uploads]
}

// RATELIMIT.PEEK answers for a cost of 1 and counts nothing; RESET forgets a key; DROP deletes
// the limiter, after which checks reply all zeros.
func ExampleClient_RateLimitPeek() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	client.RateLimitCreate(ctx, "api", 100, time.Minute, nil)
	client.RateLimitCheck(ctx, "api", "user:42", 6)
	fmt.Println(client.RateLimitPeek(ctx, "api", "user:42").Val().Remaining)
	fmt.Println(client.RateLimitReset(ctx, "api", "user:42").Val())
	fmt.Println(client.RateLimitPeek(ctx, "api", "user:42").Val().Remaining)
	fmt.Println(client.RateLimitDrop(ctx, "api").Val())
	fmt.Println(client.RateLimitCheck(ctx, "api", "user:42", 1).Val().UnknownLimiter())
	// Output:
	// 94
	// 1
	// 100
	// OK
	// true
}

// Wrap adds the commands to a pipeline (or TxPipelined, or any go-redis client): here a short
// and a long limit checked in one round trip. Replies are read after the pipeline ran.
func ExampleWrap() {
	freshServer()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: serverAddr})
	defer rdb.Close()

	var perSecond, perHour *hotkv.GCRACmd
	_, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		rl := hotkv.Wrap(pipe)
		perSecond = rl.GCRAPeek(ctx, "rl:{user:42}:sec", time.Second, 10, 1)
		perHour = rl.GCRAPeek(ctx, "rl:{user:42}:hour", time.Hour, 1000, 1)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(perSecond.Val().Allowed() && perHour.Val().Allowed())
	// Output: true
}

// A cluster client gets the same methods; each command is routed by its key, or by the
// limiter name for RATELIMIT.*. (Not run: HotKV has no cluster mode yet.)
func ExampleNewClusterClient() {
	ctx := context.Background()
	client := hotkv.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{"hotkv-1:6379", "hotkv-2:6379", "hotkv-3:6379"},
	})
	defer client.Close()

	result, err := client.GCRALimit(ctx, "rl:{user:42}:search", time.Minute, 10, 1).Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(result.Remaining)
}

// A concurrency limiter: at most 2 exports in flight per tenant. Each allowed check acquires a
// lease; releasing it frees its slot at once (a lease never released expires after the window).
func ExampleClient_RateLimitRelease() {
	freshServer()
	ctx := context.Background()
	client := hotkv.NewClient(&redis.Options{Addr: serverAddr})
	defer client.Close()

	opts := &hotkv.RateLimitOptions{Algorithm: hotkv.Concurrency}
	fmt.Println(client.RateLimitCreate(ctx, "exports", 2, 10*time.Minute, opts).Val())
	first := client.RateLimitCheck(ctx, "exports", "tenant:7", 1).Val()
	second := client.RateLimitCheck(ctx, "exports", "tenant:7", 1).Val()
	third := client.RateLimitCheck(ctx, "exports", "tenant:7", 1).Val()
	fmt.Println(first.Allowed, second.Allowed, third.Allowed, third.LeaseID)
	fmt.Println(client.RateLimitRelease(ctx, "exports", "tenant:7", first.LeaseID).Val())
	fmt.Println(client.RateLimitRelease(ctx, "exports", "tenant:7", first.LeaseID).Val()) // idempotent
	fmt.Println(client.RateLimitCheck(ctx, "exports", "tenant:7", 1).Val().Allowed)
	// Output:
	// OK
	// true true false 0
	// true
	// false
	// true
}

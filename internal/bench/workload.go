package bench

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The Redis way of rate limiting is a Lua script per decision. These are written for this
// benchmark in the style of the libraries people use (go-redis's redis_rate for GCRA, the
// INCR+PEXPIRE fixed window, the sorted-set sliding log, the hash token bucket), each doing
// in Lua what the HotKV command does natively, reading the server's clock with TIME.

// GCRALua is GCRA in the style of redis_rate: KEYS[1] holds the theoretical arrival time in
// ms; ARGV are burst, rate (per period), period in seconds and cost. It replies
// {allowed, remaining, retry_after_ms, reset_after_ms} and, like redis_rate, writes nothing
// on a denial. The TAT is stored as a whole number of ms so Redis keeps it int-encoded, its
// most compact form.
const GCRALua = `
local burst = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local period = tonumber(ARGV[3]) * 1000
local cost = tonumber(ARGV[4])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = period / rate
local tat = tonumber(redis.call("GET", KEYS[1])) or now
if tat < now then tat = now end
local newtat = tat + interval * cost
local diff = now - (newtat - interval * burst)
if diff < 0 then
  return {0, 0, math.ceil(-diff), math.ceil(tat - now)}
end
local reset = math.ceil(newtat - now)
redis.call("SET", KEYS[1], math.ceil(newtat), "PX", reset)
return {cost, math.floor(diff / interval), -1, reset}
`

// FixedWindowLua is the common INCR+PEXPIRE fixed window: ARGV are window ms and limit.
const FixedWindowLua = `
local n = redis.call("INCR", KEYS[1])
if n == 1 then redis.call("PEXPIRE", KEYS[1], ARGV[1]) end
local limit = tonumber(ARGV[2])
if n > limit then return {0, 0, redis.call("PTTL", KEYS[1])} end
return {1, limit - n, -1}
`

// SlidingLogLua is the sorted-set sliding log: one member per admitted request, trimmed to
// the window on every call. ARGV are window ms, limit and cost; a member is named by the
// server's TIME in microseconds (one script run takes longer than that, so names never repeat).
const SlidingLogLua = `
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - window)
local used = redis.call("ZCARD", KEYS[1])
if used + cost > limit then
  local oldest = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
  return {0, limit - used, tonumber(oldest[2]) + window - now}
end
for i = 1, cost do
  redis.call("ZADD", KEYS[1], now, t[1] .. t[2] .. ":" .. i)
end
redis.call("PEXPIRE", KEYS[1], window)
return {1, limit - used - cost, -1}
`

// TokenBucketLua is the hash token bucket: fields tokens and ts; ARGV are capacity, refill per
// second and cost.
const TokenBucketLua = `
local capacity = tonumber(ARGV[1])
local refill = tonumber(ARGV[2]) / 1000
local cost = tonumber(ARGV[3])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local s = redis.call("HMGET", KEYS[1], "tokens", "ts")
local tokens = tonumber(s[1]) or capacity
local ts = tonumber(s[2]) or now
tokens = math.min(capacity, tokens + (now - ts) * refill)
if tokens < cost then
  return {0, math.floor(tokens), math.ceil((cost - tokens) / refill)}
end
tokens = tokens - cost
redis.call("HSET", KEYS[1], "tokens", tokens, "ts", now)
redis.call("PEXPIRE", KEYS[1], math.ceil(capacity / refill))
return {1, math.floor(tokens), -1}
`

// SemaphoreLua is the expiring sorted-set semaphore (the pattern of redis-semaphore and
// similar libraries): one member per lease, scored by its acquisition time, leases older than
// the timeout dropped on every call. ARGV are the timeout in ms and the limit; it replies
// {acquired, lease} where lease is the member to ZREM on release.
const SemaphoreLua = `
local timeout = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - timeout)
if redis.call("ZCARD", KEYS[1]) >= limit then
  return {0, ""}
end
local lease = t[1] .. t[2]
redis.call("ZADD", KEYS[1], now, lease)
redis.call("PEXPIRE", KEYS[1], timeout)
return {1, lease}
`

// GCRARefundLua gives count units back to a key of GCRALua (what GCRA.REFUND does): the TAT
// moves back by count intervals, never below now (a full bucket), and a key that becomes
// full is deleted. ARGV are rate (per period), period in seconds and count.
const GCRARefundLua = `
local rate = tonumber(ARGV[1])
local period = tonumber(ARGV[2]) * 1000
local count = tonumber(ARGV[3])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local tat = tonumber(redis.call("GET", KEYS[1]))
if not tat or tat <= now then return 0 end
local newtat = tat - period / rate * count
if newtat <= now then
  redis.call("DEL", KEYS[1])
  return 0
end
redis.call("SET", KEYS[1], math.ceil(newtat), "PX", math.ceil(newtat - now))
return 1
`

// SHA1 is a script's EVALSHA name.
func SHA1(script string) string {
	h := sha1.Sum([]byte(script))
	return hex.EncodeToString(h[:])
}

// Workload is one job done both ways: HotKV's command and the Redis way of doing the same job.
type Workload struct {
	// Name is the short name `hotkv-bench -w` takes.
	Name string
	// HotKV is the command line sent to HotKV, with RandPlaceholder where the key goes.
	HotKV []string
	// Redis is the command line sent to Redis; "{sha:NAME}" stands for a script's SHA1,
	// loaded with SCRIPT LOAD before the run.
	Redis []string
	// Scripts are the Lua scripts the Redis side needs, by name.
	Scripts map[string]string
	// HotKVSetup and RedisSetup are commands run once on the server before the workload.
	HotKVSetup [][]string
	RedisSetup [][]string
	// Note explains the pairing in the report.
	Note string
}

// Workloads are the jobs the suite measures, in report order.
var Workloads = []Workload{
	{Name: "ping", HotKV: []string{"PING"}, Redis: []string{"PING"}},
	{Name: "set", HotKV: []string{"SET", "key:" + RandPlaceholder, "xxx"}, Redis: []string{"SET", "key:" + RandPlaceholder, "xxx"}},
	{Name: "get", HotKV: []string{"GET", "key:" + RandPlaceholder}, Redis: []string{"GET", "key:" + RandPlaceholder},
		Note: "over keys the suite filled first, so every GET hits"},
	{Name: "incr", HotKV: []string{"INCR", "counter:" + RandPlaceholder}, Redis: []string{"INCR", "counter:" + RandPlaceholder}},
	{Name: "setpx", HotKV: []string{"SET", "key:" + RandPlaceholder, "xxx", "PX", "60000"}, Redis: []string{"SET", "key:" + RandPlaceholder, "xxx", "PX", "60000"}},
	{Name: "gcra-vs-set", HotKV: []string{"GCRA.LIMIT", "rl:" + RandPlaceholder, "60000", "10"},
		Redis: []string{"SET", "rl:" + RandPlaceholder, "1700000006000"},
		Note:  "a whole rate-limit decision against Redis's cheapest write on the same key pattern"},
	{Name: "gcra", HotKV: []string{"GCRA.LIMIT", "rl:" + RandPlaceholder, "60000", "10"},
		Redis:   []string{"EVALSHA", "{sha:gcra}", "1", "rl:" + RandPlaceholder, "10", "10", "60", "1"},
		Scripts: map[string]string{"gcra": GCRALua},
		Note:    "10 per minute, burst 10, both ways"},
	{Name: "throttle", HotKV: []string{"CL.THROTTLE", "rl:" + RandPlaceholder, "9", "10", "60", "1"},
		Redis:   []string{"EVALSHA", "{sha:gcra}", "1", "rl:" + RandPlaceholder, "10", "10", "60", "1"},
		Scripts: map[string]string{"gcra": GCRALua},
		Note:    "redis-cell's command against the same GCRA in Lua"},
	{Name: "sliding", HotKV: []string{"RATELIMIT.CHECK", "api", "sw:" + RandPlaceholder},
		HotKVSetup: [][]string{{"RATELIMIT.DROP", "api"}, {"RATELIMIT.CREATE", "api", "100", "60000", "ALGO", "sliding_window"}},
		Redis:      []string{"EVALSHA", "{sha:sliding}", "1", "sw:" + RandPlaceholder, "60000", "100", "1"},
		Scripts:    map[string]string{"sliding": SlidingLogLua},
		Note:       "100 per minute; Redis: the sorted-set sliding log"},
	{Name: "fixed", HotKV: []string{"RATELIMIT.CHECK", "api", "fw:" + RandPlaceholder},
		HotKVSetup: [][]string{{"RATELIMIT.DROP", "api"}, {"RATELIMIT.CREATE", "api", "100", "60000", "ALGO", "sliding_window"}},
		Redis:      []string{"EVALSHA", "{sha:fixed}", "1", "fw:" + RandPlaceholder, "60000", "100"},
		Scripts:    map[string]string{"fixed": FixedWindowLua},
		Note:       "HotKV's sliding window against Redis's cheapest limiter, the INCR+PEXPIRE fixed window"},
	{Name: "token", HotKV: []string{"RATELIMIT.CHECK", "tb", "tb:" + RandPlaceholder},
		HotKVSetup: [][]string{{"RATELIMIT.DROP", "tb"}, {"RATELIMIT.CREATE", "tb", "100", "60000", "ALGO", "token_bucket"}},
		Redis:      []string{"EVALSHA", "{sha:token}", "1", "tb:" + RandPlaceholder, "100", "1.6667", "1"},
		Scripts:    map[string]string{"token": TokenBucketLua},
		Note:       "capacity 100 refilling 100 per minute; Redis: the hash token bucket"},
	{Name: "leaky", HotKV: []string{"RATELIMIT.CHECK", "lb", "lb:" + RandPlaceholder},
		HotKVSetup: [][]string{{"RATELIMIT.DROP", "lb"}, {"RATELIMIT.CREATE", "lb", "100", "60000", "ALGO", "leaky_bucket"}},
		Redis:      []string{"EVALSHA", "{sha:token}", "1", "lb:" + RandPlaceholder, "100", "1.6667", "1"},
		Scripts:    map[string]string{"token": TokenBucketLua},
		Note:       "a leaky bucket (as a meter) makes a token bucket's decisions; Redis: the hash token bucket"},
	{Name: "refund", HotKV: []string{"GCRA.REFUND", "rl:" + RandPlaceholder, "60000", "10"},
		HotKVSetup: [][]string{{"GCRA.LIMIT", "rl:1", "60000", "10"}},
		Redis:      []string{"EVALSHA", "{sha:refund}", "1", "rl:" + RandPlaceholder, "10", "60", "1"},
		Scripts:    map[string]string{"refund": GCRARefundLua},
		Note:       "giving a unit back to a GCRA key (charge-on-success flows), over the keys the gcra case filled; Redis: the same in Lua on the GCRA script's keys"},
	{Name: "shadow", HotKV: []string{"RATELIMIT.CHECK", "shadow", "sh:" + RandPlaceholder},
		HotKVSetup: [][]string{{"RATELIMIT.DROP", "shadow"}, {"RATELIMIT.CREATE", "shadow", "100", "60000", "ALGO", "sliding_window", "SHADOW"}},
		Redis:      []string{"EVALSHA", "{sha:sliding}", "1", "sh:" + RandPlaceholder, "60000", "100", "1"},
		Scripts:    map[string]string{"sliding": SlidingLogLua},
		Note:       "a sliding-window limiter in shadow mode (decisions computed and counted, every request let through): what trying a limit on live traffic costs; Redis: the sorted-set sliding log, enforcing"},
	{Name: "concurrency", HotKV: []string{"RATELIMIT.CHECK", "conc", "cc:" + RandPlaceholder},
		HotKVSetup: [][]string{{"RATELIMIT.DROP", "conc"}, {"RATELIMIT.CREATE", "conc", "10", "1000", "ALGO", "concurrency"}},
		Redis:      []string{"EVALSHA", "{sha:semaphore}", "1", "cc:" + RandPlaceholder, "1000", "10"},
		Scripts:    map[string]string{"semaphore": SemaphoreLua},
		Note: "acquiring a lease, at most 10 in flight per key, leases expiring after 1 s; Redis: the expiring sorted-set semaphore. " +
			"Acquisitions only (the load generator sends fixed commands, and a release needs the lease from the reply): " +
			"RATELIMIT.RELEASE costs about what a CHECK does (`BenchmarkRateLimitCheckRelease`, docs/ratelimit.md)"},
}

// FindWorkload returns the workload called name.
func FindWorkload(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Prepare runs a workload's setup on one server (loading scripts, creating limiters) and
// returns its request template for that server.
func (w Workload) Prepare(ctx context.Context, addr string, redisSide bool) (Template, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	defer c.Close()
	setup, line := w.HotKVSetup, w.HotKV
	if redisSide {
		setup, line = w.RedisSetup, w.Redis
		for name, src := range w.Scripts {
			sha, err := c.ScriptLoad(ctx, src).Result()
			if err != nil {
				return Template{}, fmt.Errorf("%s: SCRIPT LOAD %s: %w", addr, name, err)
			}
			if sha != SHA1(src) {
				return Template{}, fmt.Errorf("%s: SCRIPT LOAD %s returned %s, want %s", addr, name, sha, SHA1(src))
			}
		}
	}
	for _, cmd := range setup {
		args := make([]any, len(cmd))
		for i, a := range cmd {
			args[i] = a
		}
		if err := c.Do(ctx, args...).Err(); err != nil && err != redis.Nil && !strings.Contains(err.Error(), "limiter not found") {
			return Template{}, fmt.Errorf("%s: %s: %w", addr, strings.Join(cmd, " "), err)
		}
	}
	args := make([]string, len(line))
	for i, a := range line {
		if name, ok := strings.CutPrefix(a, "{sha:"); ok {
			name = strings.TrimSuffix(name, "}")
			a = SHA1(w.Scripts[name])
		}
		args[i] = a
	}
	return ParseTemplate(args...), nil
}

// Title is the workload's row name in the report.
func (w Workload) Title() string {
	if strings.Join(w.HotKV, " ") == strings.Join(w.Redis, " ") {
		return w.HotKV[0] + map[bool]string{true: " PX", false: ""}[w.Name == "setpx"]
	}
	redisTitle := w.Redis[0]
	if redisTitle == "EVALSHA" {
		redisTitle = "EVALSHA " + firstKey(w.Scripts) + ".lua"
	}
	hk := w.HotKV[0]
	if hk == "RATELIMIT.CHECK" {
		hk += " " + algoOf(w.HotKVSetup)
		for _, c := range w.HotKVSetup {
			if c[len(c)-1] == "SHADOW" {
				hk += " (shadow)"
			}
		}
	}
	return hk + " vs " + redisTitle
}

func firstKey(m map[string]string) string {
	for k := range m {
		return k
	}
	return ""
}

func algoOf(setup [][]string) string {
	for _, c := range setup {
		for i, a := range c {
			if a == "ALGO" && i+1 < len(c) {
				return c[i+1]
			}
		}
	}
	return ""
}

// HotKVPair is a job done two ways on HotKV alone, for what Redis has no counterpart of: One
// is a single command per decision, Many the commands a client would otherwise send for the
// same decision (a run cycles through them, so one decision costs len(Many) requests).
type HotKVPair struct {
	Name string
	One  []string
	Many [][]string
	Note string
}

// HotKVPairs are the HotKV-only comparisons (`hotkv-bench -w` does not run them; the
// suite may add them later). limitall: a request under a per-minute and a per-second limit,
// checked all-or-nothing in one GCRA.LIMITALL, against two GCRA.LIMIT round trips (which are
// not all-or-nothing: the first spends its unit even when the second denies). The keys share a
// hash tag, as a cluster needs for GCRA.LIMITALL.
var HotKVPairs = []HotKVPair{
	{Name: "limitall",
		One: []string{"GCRA.LIMITALL", "2", "{rl:" + RandPlaceholder + "}:m", "60000", "10", "{rl:" + RandPlaceholder + "}:s", "1000", "2"},
		Many: [][]string{
			{"GCRA.LIMIT", "{rl:" + RandPlaceholder + "}:m", "60000", "10"},
			{"GCRA.LIMIT", "{rl:" + RandPlaceholder + "}:s", "1000", "2"},
		},
		Note: "two limits per decision: one GCRA.LIMITALL against two GCRA.LIMIT round trips"},
}

// Templates returns the pair's request templates: the single command, then the several.
func (p HotKVPair) Templates() (one []Template, many []Template) {
	many = make([]Template, len(p.Many))
	for i, m := range p.Many {
		many[i] = ParseTemplate(m...)
	}
	return []Template{ParseTemplate(p.One...)}, many
}

package hotkv

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// replyCmd is what the typed commands share: the go-redis command that was sent. The typed
// commands parse its reply on every call to Result, Val or Err instead of once, because inside
// a pipeline the reply only arrives at Exec, after the typed command was returned.
type replyCmd struct {
	cmd *redis.Cmd
}

// Cmd returns the underlying go-redis command: the one go-redis hooks see and Exec returns,
// with the raw reply.
func (c replyCmd) Cmd() *redis.Cmd { return c.cmd }

// Name returns the command's name in lower case, as go-redis reports it.
func (c replyCmd) Name() string { return c.cmd.Name() }

// Args returns the arguments sent, the command name first.
func (c replyCmd) Args() []any { return c.cmd.Args() }

// String renders the command and its raw reply or error, like go-redis's commands do.
func (c replyCmd) String() string { return c.cmd.String() }

// reply returns the raw reply, or the command's error.
func (c replyCmd) reply() (any, error) {
	v, err := c.cmd.Result()
	if err != nil {
		return nil, err
	}
	if v == nil {
		// Typed commands are never answered with a null; a nil value means no reply was read,
		// typically because a pipeline's Exec has not run yet.
		return nil, fmt.Errorf("hotkv: %s: no reply (was the pipeline executed?)", c.cmd.Name())
	}
	return v, nil
}

// fiveInts parses the five-integer array every decision command replies with. The array is
// the same in RESP2 and RESP3.
func (c replyCmd) fiveInts() ([5]int64, error) {
	var out [5]int64
	v, err := c.reply()
	if err != nil {
		return out, err
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 5 {
		return out, fmt.Errorf("hotkv: %s: expected an array of 5 integers, got %v", c.cmd.Name(), v)
	}
	for i, e := range arr {
		n, ok := e.(int64)
		if !ok {
			return out, fmt.Errorf("hotkv: %s: expected an array of 5 integers, got %v", c.cmd.Name(), v)
		}
		out[i] = n
	}
	return out, nil
}

// msDuration converts a wire time in milliseconds to a Duration for the helpers: 0 for the
// wire's -1 when the request passed, and -1 ms (negative) when it can never pass.
func msDuration(ms int64, passed bool) time.Duration {
	if ms < 0 {
		if passed {
			return 0
		}
		return -time.Millisecond
	}
	return time.Duration(ms) * time.Millisecond
}

// GCRAResult is the reply of GCRA.LIMIT and GCRA.PEEK:
// [denied, limit, remaining, retry_after_ms, reset_after_ms].
type GCRAResult struct {
	// Denied is true when the request is refused. A denied request changed nothing.
	Denied bool
	// Limit is the burst the call was made with.
	Limit int64
	// Remaining is the number of units still available after this request (0 when denied).
	Remaining int64
	// RetryAfterMs is -1 when allowed; when denied, the milliseconds until this same request
	// would be allowed if nothing else happens (at least 1), or -1 when count > burst and no
	// wait can help. Waits are rounded up, so waiting this long is enough.
	RetryAfterMs int64
	// ResetAfterMs is the milliseconds until a full burst is available again; right after an
	// allowed GCRA.LIMIT it equals the key's PTTL.
	ResetAfterMs int64
}

// Allowed is !Denied, for readability at call sites.
func (r GCRAResult) Allowed() bool { return !r.Denied }

// TooLarge reports a request that can never be allowed because its count exceeds the burst:
// the application should answer "too large" rather than ask the caller to wait.
func (r GCRAResult) TooLarge() bool { return r.Denied && r.RetryAfterMs < 0 }

// RetryAfter is RetryAfterMs as a Duration: 0 when allowed, the wait when denied, and negative
// (-1 ms) when the request can never be allowed (TooLarge).
func (r GCRAResult) RetryAfter() time.Duration { return msDuration(r.RetryAfterMs, !r.Denied) }

// ResetAfter is ResetAfterMs as a Duration: the time until a full burst is available again.
func (r GCRAResult) ResetAfter() time.Duration {
	return time.Duration(r.ResetAfterMs) * time.Millisecond
}

// GCRACmd is the command returned by GCRALimit and GCRAPeek. Its reply is parsed on demand,
// so it works unchanged inside pipelines and transactions once they have been executed.
type GCRACmd struct{ replyCmd }

// Result returns the parsed reply, or the server's error (exact text) or a parse error.
func (c *GCRACmd) Result() (GCRAResult, error) {
	v, err := c.fiveInts()
	if err != nil {
		return GCRAResult{}, err
	}
	return GCRAResult{Denied: v[0] != 0, Limit: v[1], Remaining: v[2], RetryAfterMs: v[3], ResetAfterMs: v[4]}, nil
}

// Val returns the parsed reply, or the zero GCRAResult on error.
func (c *GCRACmd) Val() GCRAResult { r, _ := c.Result(); return r }

// Err returns the command's error, including a reply that could not be parsed.
func (c *GCRACmd) Err() error { _, err := c.Result(); return err }

// GCRALimitAllResult is the reply of GCRA.LIMITALL:
// [denied, retry_after_ms, <GCRA.LIMIT reply of each limit>...].
type GCRALimitAllResult struct {
	// Denied is true when at least one limit refused the request; then nothing was recorded.
	Denied bool
	// RetryAfterMs is -1 when admitted; when denied, the largest wait among the denying
	// limits, or -1 when one of them can never allow the count (count > its burst).
	RetryAfterMs int64
	// Limits holds each limit's GCRA.LIMIT reply, in the order the limits were given. When
	// the request was denied they say what each limit would have answered; none was recorded.
	Limits []GCRAResult
}

// Allowed is !Denied, for readability at call sites.
func (r GCRALimitAllResult) Allowed() bool { return !r.Denied }

// TooLarge reports a request that can never be admitted: its count exceeds a limit's burst.
func (r GCRALimitAllResult) TooLarge() bool { return r.Denied && r.RetryAfterMs < 0 }

// RetryAfter is RetryAfterMs as a Duration: 0 when admitted, the wait when denied, and
// negative (-1 ms) when the request can never be admitted (TooLarge).
func (r GCRALimitAllResult) RetryAfter() time.Duration { return msDuration(r.RetryAfterMs, !r.Denied) }

// GCRALimitAllCmd is the command returned by GCRALimitAll, parsed on demand like GCRACmd.
type GCRALimitAllCmd struct{ replyCmd }

// Result returns the parsed reply, or the server's error (exact text) or a parse error.
func (c *GCRALimitAllCmd) Result() (GCRALimitAllResult, error) {
	v, err := c.reply()
	if err != nil {
		return GCRALimitAllResult{}, err
	}
	bad := func() (GCRALimitAllResult, error) {
		return GCRALimitAllResult{}, fmt.Errorf("hotkv: %s: expected [denied, retry, 5-integer arrays...], got %v", c.cmd.Name(), v)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 3 {
		return bad()
	}
	denied, ok1 := arr[0].(int64)
	retry, ok2 := arr[1].(int64)
	if !ok1 || !ok2 {
		return bad()
	}
	out := GCRALimitAllResult{Denied: denied != 0, RetryAfterMs: retry, Limits: make([]GCRAResult, 0, len(arr)-2)}
	for _, e := range arr[2:] {
		l, ok := e.([]any)
		if !ok || len(l) != 5 {
			return bad()
		}
		var n [5]int64
		for i, x := range l {
			if n[i], ok = x.(int64); !ok {
				return bad()
			}
		}
		out.Limits = append(out.Limits, GCRAResult{Denied: n[0] != 0, Limit: n[1], Remaining: n[2], RetryAfterMs: n[3], ResetAfterMs: n[4]})
	}
	return out, nil
}

// Val returns the parsed reply, or the zero GCRALimitAllResult on error.
func (c *GCRALimitAllCmd) Val() GCRALimitAllResult { r, _ := c.Result(); return r }

// Err returns the command's error, including a reply that could not be parsed.
func (c *GCRALimitAllCmd) Err() error { _, err := c.Result(); return err }

// ThrottleResult is the reply of CL.THROTTLE:
// [limited, limit, remaining, retry_after_s, reset_after_s], times in whole seconds.
type ThrottleResult struct {
	// Limited is true when the request is refused (nothing was written).
	Limited bool
	// Limit is max_burst + 1.
	Limit int64
	// Remaining is the units available after this request; unlike GCRA.LIMIT a refusal
	// reports the true remaining, as redis-cell does.
	Remaining int64
	// RetryAfterSec is -1 when allowed, or when quantity exceeds the limit and no wait helps;
	// else the seconds to wait, rounded as the server's throttle-compat setting says. In the
	// default redis-cell mode a wait under 1 ms reads 0.
	RetryAfterSec int64
	// ResetAfterSec is the seconds until the limit is fully restored.
	ResetAfterSec int64
}

// Allowed is !Limited.
func (r ThrottleResult) Allowed() bool { return !r.Limited }

// TooLarge reports a quantity above the limit, which can never be allowed.
func (r ThrottleResult) TooLarge() bool { return r.Limited && r.RetryAfterSec < 0 }

// RetryAfter is RetryAfterSec as a Duration: 0 when allowed, negative (-1 s) when the request
// can never be allowed.
func (r ThrottleResult) RetryAfter() time.Duration {
	if r.RetryAfterSec < 0 {
		if r.Limited {
			return -time.Second
		}
		return 0
	}
	return time.Duration(r.RetryAfterSec) * time.Second
}

// ResetAfter is ResetAfterSec as a Duration.
func (r ThrottleResult) ResetAfter() time.Duration {
	return time.Duration(r.ResetAfterSec) * time.Second
}

// ThrottleCmd is the command returned by CLThrottle.
type ThrottleCmd struct{ replyCmd }

// Result returns the parsed reply, or the server's error (exact text) or a parse error.
func (c *ThrottleCmd) Result() (ThrottleResult, error) {
	v, err := c.fiveInts()
	if err != nil {
		return ThrottleResult{}, err
	}
	return ThrottleResult{Limited: v[0] != 0, Limit: v[1], Remaining: v[2], RetryAfterSec: v[3], ResetAfterSec: v[4]}, nil
}

// Val returns the parsed reply, or the zero ThrottleResult on error.
func (c *ThrottleCmd) Val() ThrottleResult { r, _ := c.Result(); return r }

// Err returns the command's error, including a reply that could not be parsed.
func (c *ThrottleCmd) Err() error { _, err := c.Result(); return err }

// RateLimitResult is the reply of RATELIMIT.CHECK and RATELIMIT.PEEK:
// [allowed, remaining, retry_after_ms, limit, current], and a sixth field, lease_id, for a
// CHECK on a Concurrency limiter. Note the polarity: the first field is "allowed", where
// GCRA's is "denied".
type RateLimitResult struct {
	// Allowed is true when the request passes (CHECK counted it).
	Allowed bool
	// Remaining is limit - current - cost when allowed (PEEK: limit - current), and
	// max(0, limit - current) when denied.
	Remaining int64
	// RetryAfterMs is 0 when allowed; when denied, the milliseconds until a request of this
	// cost would pass if nothing else happens (at least 1), or -1 when cost > limit.
	RetryAfterMs int64
	// Limit is the limiter's limit; 0 means the limiter does not exist (UnknownLimiter).
	Limit int64
	// Current is the number of units in use before this request.
	Current int64
	// LeaseID is the lease an allowed check on a Concurrency limiter acquired, to give back
	// with RateLimitRelease; 0 when none was (denied, PEEK, or another algorithm).
	LeaseID int64
}

// UnknownLimiter reports the all-zero reply the server gives for a limiter that does not
// exist. It is not an error on the wire, but it is a configuration problem: Allowed is false.
func (r RateLimitResult) UnknownLimiter() bool { return r.Limit == 0 }

// TooLarge reports a cost above the limit, which can never be allowed.
func (r RateLimitResult) TooLarge() bool { return !r.Allowed && r.RetryAfterMs < 0 }

// RetryAfter is RetryAfterMs as a Duration: 0 when allowed, the wait when denied, negative
// (-1 ms) when the request can never be allowed.
func (r RateLimitResult) RetryAfter() time.Duration { return msDuration(r.RetryAfterMs, r.Allowed) }

// RateLimitCmd is the command returned by RateLimitCheck and RateLimitPeek.
type RateLimitCmd struct{ replyCmd }

// Result returns the parsed reply, or the server's error (exact text) or a parse error.
func (c *RateLimitCmd) Result() (RateLimitResult, error) {
	v, err := c.reply()
	if err != nil {
		return RateLimitResult{}, err
	}
	// Five integers, or six from a concurrency limiter's CHECK (the lease id).
	arr, ok := v.([]any)
	var n [6]int64
	if ok && (len(arr) == 5 || len(arr) == 6) {
		for i, e := range arr {
			if n[i], ok = e.(int64); !ok {
				break
			}
		}
	}
	if !ok || (len(arr) != 5 && len(arr) != 6) {
		return RateLimitResult{}, fmt.Errorf("hotkv: %s: expected an array of 5 or 6 integers, got %v", c.cmd.Name(), v)
	}
	return RateLimitResult{Allowed: n[0] != 0, Remaining: n[1], RetryAfterMs: n[2], Limit: n[3], Current: n[4], LeaseID: n[5]}, nil
}

// Val returns the parsed reply, or the zero RateLimitResult on error.
func (c *RateLimitCmd) Val() RateLimitResult { r, _ := c.Result(); return r }

// Err returns the command's error, including a reply that could not be parsed.
func (c *RateLimitCmd) Err() error { _, err := c.Result(); return err }

// RateLimitStats is the reply of RATELIMIT.STATS.
type RateLimitStats struct {
	// Name is the limiter's name.
	Name string
	// Algorithm is the limiter's algorithm, in lower case.
	Algorithm Algorithm
	// Limit is the limiter's limit L.
	Limit int64
	// WindowMs is the window in milliseconds (for bucket algorithms it only sets the default
	// rate).
	WindowMs int64
	// UniqueKeys is the number of keys with live state now; it drops as state expires.
	UniqueKeys int64
	// TotalAllowed is the units allowed since creation (saturating at 2^63-1).
	TotalAllowed int64
	// TotalDenied is the units denied since creation, including requests larger than the
	// limit.
	TotalDenied int64
	// RefillPerSec is the token_bucket rate (0 for other algorithms).
	RefillPerSec float64
	// DrainPerSec is the leaky_bucket rate (0 for other algorithms).
	DrainPerSec float64
	// Shadow reports shadow mode: checks are all allowed, decisions still counted.
	Shadow bool
	// TotalShadowDenied is the units denied in shadow mode and let through anyway (they are
	// in TotalDenied too). Servers without shadow mode report neither field: false and 0.
	TotalShadowDenied int64
}

// Window is WindowMs as a Duration.
func (s RateLimitStats) Window() time.Duration { return time.Duration(s.WindowMs) * time.Millisecond }

// Rate is the configured rate in units per second of a bucket limiter (RefillPerSec or
// DrainPerSec), or 0 for a sliding window.
func (s RateLimitStats) Rate() float64 {
	if s.RefillPerSec != 0 {
		return s.RefillPerSec
	}
	return s.DrainPerSec
}

// RateLimitStatsCmd is the command returned by RateLimitStats.
type RateLimitStatsCmd struct{ replyCmd }

// Result returns the parsed reply, or the server's error (exact text, for example
// "ERR limiter not found") or a parse error. Fields the client does not know are ignored, so
// a newer server can add some.
func (c *RateLimitStatsCmd) Result() (RateLimitStats, error) {
	var s RateLimitStats
	v, err := c.reply()
	if err != nil {
		return s, err
	}
	// RESP2 sends a flat array of names and values, RESP3 a map; both become one list of pairs.
	var pairs [][2]any
	switch t := v.(type) {
	case []any:
		if len(t)%2 != 0 {
			return s, c.statsErr(v)
		}
		for i := 0; i < len(t); i += 2 {
			pairs = append(pairs, [2]any{t[i], t[i+1]})
		}
	case map[any]any:
		for k, val := range t {
			pairs = append(pairs, [2]any{k, val})
		}
	default:
		return s, c.statsErr(v)
	}
	const required = 7 // name, algo, limit, window_ms, unique_keys, total_allowed, total_denied
	seen := 0
	for _, p := range pairs {
		name, ok := p[0].(string)
		if !ok {
			return s, c.statsErr(v)
		}
		var perr error
		switch name {
		case "name", "algo":
			str, ok := p[1].(string)
			if !ok {
				return s, c.statsErr(v)
			}
			if name == "name" {
				s.Name = str
			} else {
				s.Algorithm = Algorithm(str)
			}
			seen++
		case "limit":
			s.Limit, perr = asInt(p[1])
			seen++
		case "window_ms":
			s.WindowMs, perr = asInt(p[1])
			seen++
		case "unique_keys":
			s.UniqueKeys, perr = asInt(p[1])
			seen++
		case "total_allowed":
			s.TotalAllowed, perr = asInt(p[1])
			seen++
		case "total_denied":
			s.TotalDenied, perr = asInt(p[1])
			seen++
		case "refill_per_sec":
			s.RefillPerSec, perr = asFloat(p[1])
		case "drain_per_sec":
			s.DrainPerSec, perr = asFloat(p[1])
		case "shadow":
			var on int64
			on, perr = asInt(p[1])
			s.Shadow = on != 0
		case "total_shadow_denied":
			s.TotalShadowDenied, perr = asInt(p[1])
		}
		if perr != nil {
			return RateLimitStats{}, c.statsErr(v)
		}
	}
	if seen != required {
		return RateLimitStats{}, c.statsErr(v)
	}
	return s, nil
}

func (c *RateLimitStatsCmd) statsErr(v any) error {
	return fmt.Errorf("hotkv: %s: unexpected reply %v", c.cmd.Name(), v)
}

// Val returns the parsed reply, or the zero RateLimitStats on error.
func (c *RateLimitStatsCmd) Val() RateLimitStats { r, _ := c.Result(); return r }

// Err returns the command's error, including a reply that could not be parsed.
func (c *RateLimitStatsCmd) Err() error { _, err := c.Result(); return err }

func asInt(v any) (int64, error) {
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("not an integer: %v", v)
	}
	return n, nil
}

// asFloat reads the rate: a RESP3 double arrives as float64, a RESP2 bulk string as the
// shortest decimal that reads back as the server's double.
func asFloat(v any) (float64, error) {
	switch t := v.(type) {
	case float64:
		return t, nil
	case int64:
		return float64(t), nil
	case string:
		return strconv.ParseFloat(t, 64)
	}
	return 0, fmt.Errorf("not a number: %v", v)
}

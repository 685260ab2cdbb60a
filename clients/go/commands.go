package hotkv

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// durationMs converts a period or window to the whole milliseconds the server expects,
// truncating toward zero. Sub-millisecond and non-positive durations are sent as they come
// out (0 or negative) so that the server answers with its own error text.
func durationMs(d time.Duration) int64 { return d.Milliseconds() }

// durationSec converts a CL.THROTTLE period to whole seconds, truncating toward zero.
func durationSec(d time.Duration) int64 { return int64(d / time.Second) }

// keyed builds a command whose routing key is its first argument after the name. Setting the
// position explicitly keeps cluster routing correct even before go-redis has loaded COMMAND
// metadata, and for RATELIMIT.* it makes the limiter name the routing key, as the server
// defines it.
func keyed(ctx context.Context, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(1)
	return cmd
}

// GCRALimit runs GCRA.LIMIT key period burst count: it allows or denies a request of count
// units under a limit of burst units per period with smooth refill, and records it if
// allowed, in one atomic step. A denied request changes nothing.
//
// period is sent in whole milliseconds (truncated); the server accepts 1 ms to 10^12 ms.
// count must be at least 1; a count above burst is always denied with RetryAfterMs -1.
// A key holding anything but an integer string is answered with WRONGTYPE and left alone, so
// use a dedicated key prefix (an integer-valued key of yours would be taken as state).
func (c Commands) GCRALimit(ctx context.Context, key string, period time.Duration, burst, count int64) *GCRACmd {
	cmd := keyed(ctx, "gcra.limit", key, durationMs(period), burst, count)
	c.process(ctx, cmd)
	return &GCRACmd{replyCmd{cmd}}
}

// GCRAPeek runs GCRA.PEEK key period burst count: it reports exactly what [Commands.GCRALimit]
// with the same arguments would reply now, including the units the request would use, and
// records nothing. It is read-only, so replicas may serve it.
func (c Commands) GCRAPeek(ctx context.Context, key string, period time.Duration, burst, count int64) *GCRACmd {
	cmd := keyed(ctx, "gcra.peek", key, durationMs(period), burst, count)
	c.process(ctx, cmd)
	return &GCRACmd{replyCmd{cmd}}
}

// GCRALimitSpec is one limit of [Commands.GCRALimitAll]: a key with its own period and burst.
type GCRALimitSpec struct {
	Key    string
	Period time.Duration
	Burst  int64
}

// GCRALimitAll runs GCRA.LIMITALL numlimits key period burst ... COUNT count: the request of
// count units is admitted only if every limit allows it, and is then recorded in every key as
// [Commands.GCRALimit] would; if any limit denies, nothing is recorded. Two GCRALimit calls
// cannot do this: the first spends its unit even when the second denies.
//
// The server accepts 1 to 256 limits; a key listed twice is charged twice. In a cluster all
// keys must hash to one slot (use a hash tag such as {user42}); the command is routed by the
// first key.
func (c Commands) GCRALimitAll(ctx context.Context, count int64, limits ...GCRALimitSpec) *GCRALimitAllCmd {
	args := make([]any, 0, 4+3*len(limits))
	args = append(args, "gcra.limitall", len(limits))
	for _, l := range limits {
		args = append(args, l.Key, durationMs(l.Period), l.Burst)
	}
	args = append(args, "count", count)
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetFirstKeyPos(2)
	c.process(ctx, cmd)
	return &GCRALimitAllCmd{replyCmd{cmd}}
}

// GCRARefund runs GCRA.REFUND key period burst count: it gives count units back to a GCRA
// key, for "charge only on success" flows (GCRALimit before the work, GCRARefund when the work
// should not have counted). The refund never goes beyond a full burst; an absent or full key
// is left alone, and a key that becomes full is deleted. The reply has Denied false; Remaining
// and ResetAfterMs describe the key after the refund. Use the period and burst of the limit.
func (c Commands) GCRARefund(ctx context.Context, key string, period time.Duration, burst, count int64) *GCRACmd {
	cmd := keyed(ctx, "gcra.refund", key, durationMs(period), burst, count)
	c.process(ctx, cmd)
	return &GCRACmd{replyCmd{cmd}}
}

// GCRAReset runs GCRA.RESET key [key ...]: it deletes GCRA state (also CL.THROTTLE's, which is
// the same) and replies how many of the listed keys existed; a key listed twice counts once.
// If any existing key is not GCRA state the server replies WRONGTYPE and deletes nothing. In a
// cluster all keys must hash to one slot.
func (c Commands) GCRAReset(ctx context.Context, keys ...string) *redis.IntCmd {
	args := make([]any, 0, 1+len(keys))
	args = append(args, "gcra.reset")
	for _, k := range keys {
		args = append(args, k)
	}
	cmd := redis.NewIntCmd(ctx, args...)
	cmd.SetFirstKeyPos(1)
	c.process(ctx, cmd)
	return cmd
}

// CLThrottle runs CL.THROTTLE key max_burst count_per_period period quantity, the redis-cell
// compatible form: countPerPeriod units per period, bursts of maxBurst+1. period is sent in
// whole seconds (truncated), as the command takes seconds; a period under one second becomes
// 0 and the server answers "ERR zero rates are not supported". quantity 0 only reports the
// state. It stores the same state as GCRA.LIMIT, so the two can share keys.
//
// The reply's times are whole seconds, rounded as the server's throttle-compat setting says
// (redis-cell by default).
func (c Commands) CLThrottle(ctx context.Context, key string, maxBurst, countPerPeriod int64, period time.Duration, quantity int64) *ThrottleCmd {
	cmd := keyed(ctx, "cl.throttle", key, maxBurst, countPerPeriod, durationSec(period), quantity)
	c.process(ctx, cmd)
	return &ThrottleCmd{replyCmd{cmd}}
}

// Algorithm names a RATELIMIT limiter algorithm. The server compares them case-insensitively.
type Algorithm string

// The algorithms RATELIMIT.CREATE accepts.
const (
	// SlidingWindow (the server's default) admits at most limit units in any window.
	SlidingWindow Algorithm = "sliding_window"
	// TokenBucket holds limit tokens, starts full and refills at RateLimitOptions.Refill per
	// second (default limit per window).
	TokenBucket Algorithm = "token_bucket"
	// LeakyBucket has size limit, starts empty and drains at RateLimitOptions.Drain per second
	// (default limit per window); it replies exactly like a token bucket with the same rate.
	LeakyBucket Algorithm = "leaky_bucket"
	// Concurrency admits at most limit units in flight per key: an allowed check acquires a
	// lease (RateLimitResult.LeaseID) that holds its units until RateLimitRelease, or until
	// window after it was acquired, so the slot of a client that died frees itself. Its
	// limit is at most 100000.
	Concurrency Algorithm = "concurrency"
)

// RateLimitOptions are RATELIMIT.CREATE's optional arguments. A nil *RateLimitOptions, and
// every zero field, means "not given": the server's default applies.
type RateLimitOptions struct {
	// Algorithm is sent as ALGO when not empty; the server defaults to SlidingWindow.
	Algorithm Algorithm
	// Refill is the token_bucket refill rate in tokens per second, sent as REFILL when not 0.
	// It is written as the shortest decimal that reads back as the same float64, without an
	// exponent (0.5, 2.5, 0.00000001), which is the syntax the server accepts.
	Refill float64
	// Drain is the leaky_bucket drain rate in units per second, sent as DRAIN when not 0.
	Drain float64
	// Shadow creates the limiter in shadow mode (the SHADOW flag): every check is allowed,
	// while decisions are still recorded and counted as an enforced limiter would, so a
	// limit can be measured in production before it is enforced (RateLimitUpdate turns it
	// off). A shadow denial is allowed with a RetryAfter other than 0.
	Shadow bool
}

// formatRate writes a rate in the server's rate syntax: plain decimal, no exponent. Negative,
// NaN and infinite values are written as they are and rejected by the server with
// "ERR invalid rate: must be a positive number".
func formatRate(r float64) string { return strconv.FormatFloat(r, 'f', -1, 64) }

// RateLimitCreate runs RATELIMIT.CREATE name limit window_ms [ALGO a] [REFILL r] [DRAIN r] [SHADOW] and
// replies OK. window is sent in whole milliseconds (truncated; the server accepts 1 ms to
// 10^12 ms). Creating a name that exists fails with "ERR limiter already exists or limit
// reached", even with identical settings, so applications that create their limiters at
// start-up may ignore that error. To change a limiter in place, keeping its state, use RateLimitUpdate.
func (c Commands) RateLimitCreate(ctx context.Context, name string, limit int64, window time.Duration, opts *RateLimitOptions) *redis.StatusCmd {
	args := []any{"ratelimit.create", name, limit, durationMs(window)}
	if opts != nil {
		if opts.Algorithm != "" {
			args = append(args, "ALGO", string(opts.Algorithm))
		}
		if opts.Refill != 0 {
			args = append(args, "REFILL", formatRate(opts.Refill))
		}
		if opts.Drain != 0 {
			args = append(args, "DRAIN", formatRate(opts.Drain))
		}
		if opts.Shadow {
			args = append(args, "SHADOW")
		}
	}
	cmd := redis.NewStatusCmd(ctx, args...)
	cmd.SetFirstKeyPos(1)
	c.process(ctx, cmd)
	return cmd
}

// RateLimitUpdate are RATELIMIT.UPDATE's options: each nil or zero field is left as it is,
// and at least one must be set (the server replies "ERR syntax error" otherwise). The
// algorithm cannot change.
type RateLimitUpdate struct {
	// Limit, when not 0, is the new limit (sent as LIMIT).
	Limit int64
	// Window, when not 0, is the new window, sent as WINDOW in whole milliseconds.
	Window time.Duration
	// Refill (token_bucket) or Drain (leaky_bucket), when not 0, is the new rate.
	Refill, Drain float64
	// Shadow, when not nil, turns shadow mode on or off (SHADOW ON|OFF).
	Shadow *bool
}

// RateLimitUpdate runs RATELIMIT.UPDATE name [LIMIT n] [WINDOW ms] [REFILL r | DRAIN r]
// [SHADOW ON|OFF] and replies OK. The limiter keeps its keys' state and its totals: a sliding
// window keeps its log (a key above a lowered limit waits until enough units age out), a
// bucket keeps each key's units in use, clamped to the new limit. An unknown limiter is the
// error "ERR limiter not found".
func (c Commands) RateLimitUpdate(ctx context.Context, name string, u RateLimitUpdate) *redis.StatusCmd {
	args := []any{"ratelimit.update", name}
	if u.Limit != 0 {
		args = append(args, "LIMIT", u.Limit)
	}
	if u.Window != 0 {
		args = append(args, "WINDOW", durationMs(u.Window))
	}
	if u.Refill != 0 {
		args = append(args, "REFILL", formatRate(u.Refill))
	}
	if u.Drain != 0 {
		args = append(args, "DRAIN", formatRate(u.Drain))
	}
	if u.Shadow != nil {
		if *u.Shadow {
			args = append(args, "SHADOW", "ON")
		} else {
			args = append(args, "SHADOW", "OFF")
		}
	}
	cmd := redis.NewStatusCmd(ctx, args...)
	cmd.SetFirstKeyPos(1)
	c.process(ctx, cmd)
	return cmd
}

// RateLimitCheck runs RATELIMIT.CHECK name key COST cost: it checks a request of cost units
// for key against the named limiter and counts it if allowed. A limiter that does not exist is
// not an error: the reply is all zeros (see [RateLimitResult.UnknownLimiter]).
func (c Commands) RateLimitCheck(ctx context.Context, name, key string, cost int64) *RateLimitCmd {
	cmd := keyed(ctx, "ratelimit.check", name, key, "COST", cost)
	c.process(ctx, cmd)
	return &RateLimitCmd{replyCmd{cmd}}
}

// RateLimitRelease runs RATELIMIT.RELEASE name key lease_id: it gives back a lease a
// Concurrency limiter's check acquired (RateLimitResult.LeaseID), freeing its units at once.
// The reply is true if the key held that live lease and it is now released, false if it was
// already released, had expired or was never issued: releasing is idempotent, so it is safe
// to retry. Release in a defer right after an allowed check. A lease id of 0 or less is the
// error "ERR invalid lease: must be a positive integer", an unknown limiter "ERR limiter not
// found", another algorithm's limiter "ERR limiter is not a concurrency limiter".
func (c Commands) RateLimitRelease(ctx context.Context, name, key string, leaseID int64) *redis.BoolCmd {
	cmd := redis.NewBoolCmd(ctx, "ratelimit.release", name, key, leaseID)
	cmd.SetFirstKeyPos(1)
	c.process(ctx, cmd)
	return cmd
}

// RateLimitPeek runs RATELIMIT.PEEK name key: it answers for a hypothetical request of cost 1
// and counts nothing. Unlike GCRA.PEEK it subtracts nothing: Remaining is what is left now,
// and Allowed says whether a cost-1 check would pass.
func (c Commands) RateLimitPeek(ctx context.Context, name, key string) *RateLimitCmd {
	cmd := keyed(ctx, "ratelimit.peek", name, key)
	c.process(ctx, cmd)
	return &RateLimitCmd{replyCmd{cmd}}
}

// RateLimitReset runs RATELIMIT.RESET name key: it forgets one key's state and replies 1 if
// the key had live state, else 0. The limiter's totals are kept. An unknown limiter is the
// error "ERR limiter not found".
func (c Commands) RateLimitReset(ctx context.Context, name, key string) *redis.IntCmd {
	cmd := redis.NewIntCmd(ctx, "ratelimit.reset", name, key)
	cmd.SetFirstKeyPos(1)
	c.process(ctx, cmd)
	return cmd
}

// RateLimitStats runs RATELIMIT.STATS name: the limiter's settings, its number of keys with
// live state, and its allowed and denied totals (in units).
func (c Commands) RateLimitStats(ctx context.Context, name string) *RateLimitStatsCmd {
	cmd := keyed(ctx, "ratelimit.stats", name)
	c.process(ctx, cmd)
	return &RateLimitStatsCmd{replyCmd{cmd}}
}

// RateLimitDrop runs RATELIMIT.DROP name: it deletes the limiter with its state and totals
// and replies OK; checks against it then reply all zeros.
func (c Commands) RateLimitDrop(ctx context.Context, name string) *redis.StatusCmd {
	cmd := redis.NewStatusCmd(ctx, "ratelimit.drop", name)
	cmd.SetFirstKeyPos(1)
	c.process(ctx, cmd)
	return cmd
}

// RateLimitList runs RATELIMIT.LIST: the names of the limiters, sorted bytewise. Limiters are
// node-local: in a cluster it lists those of the node that serves the command, so run it on
// every primary (ClusterClient.ForEachMaster with [Wrap]) to see them all.
func (c Commands) RateLimitList(ctx context.Context) *redis.StringSliceCmd {
	cmd := redis.NewStringSliceCmd(ctx, "ratelimit.list")
	c.process(ctx, cmd)
	return cmd
}

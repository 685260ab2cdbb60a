// Package httplimit is net/http middleware that rate-limits requests with HotKV.
//
// Each request is checked against one or several limits (GCRA limits, which need no setup,
// and named RATELIMIT limiters created beforehand); it passes only if every limit allows it.
// Refused requests get 429 Too Many Requests with Retry-After, and every limited response
// carries the IETF RateLimit-Policy and RateLimit header fields
// (draft-ietf-httpapi-ratelimit-headers), mapped from the server's replies as section 12 of the
// HotKV rate-limiting specification says. Legacy X-RateLimit-* headers are optional.
//
// # Several limits
//
// With one limit the middleware sends one command, which checks and counts atomically.
//
// With several, it first asks every limit, in one pipeline, whether the request would pass
// without counting it (GCRA.PEEK with the request's cost, RATELIMIT.PEEK). If any would refuse,
// nothing is counted anywhere: a refused request does not use up the other limits. The named
// limiters that refused are then asked once more with RATELIMIT.CHECK, which (being refused)
// changes nothing but records the refusal in the limiter's total_denied, exactly as a single
// check would, and gives the exact wait for the request's cost (RATELIMIT.PEEK only answers for
// a cost of 1). If every limit would pass, the middleware counts the request on all of them in
// a second pipeline.
//
// The two steps are not one atomic operation, so concurrent requests can interleave between
// them. No limit ever admits more than it allows (each charging command is atomic and
// re-checks), but a request that loses such a race can be counted on the limits that allowed
// it while another refuses it. This is the only case in which a refused request is charged.
//
// # Concurrency limiters
//
// A [Limiter] created with ALGO concurrency (hotkv.Concurrency) bounds the requests in flight
// rather than a rate: its check acquires a lease, which the middleware releases
// (RATELIMIT.RELEASE) when the next handler returns, or at once when another limit refuses the
// request. A lease the middleware could not release (the server unreachable at that moment,
// the process killed) frees itself when the limiter's window has passed since it was
// acquired, so choose a window longer than the slowest request. Release errors go to
// Options.OnError.
package httplimit

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	hotkv "github.com/hotkv/hotkv/clients/go"
)

// Client is what the middleware needs from a go-redis client: pipelines. *redis.Client,
// *redis.ClusterClient, *redis.Ring, *hotkv.Client and *hotkv.ClusterClient all have it.
type Client interface {
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// ErrUnknownLimiter is reported (wrapped, with the name) when a named limiter does not exist on
// the server. The server answers such checks with all zeros, which would refuse every request;
// the middleware treats it as the configuration error it is, like an unreachable server.
var ErrUnknownLimiter = errors.New("httplimit: limiter does not exist")

type kind int

const (
	kindGCRA kind = iota
	kindLimiter
)

// Limit is one limit a request must pass. Build it with [GCRA] or [Limiter]; the With methods
// return modified copies.
type Limit struct {
	kind    kind
	policy  string
	limiter string
	prefix  string
	period  time.Duration
	burst   int64
	key     KeyFunc
}

// GCRA is a limit of burst units per period with smooth refill (GCRA.LIMIT): bursts of up to
// burst, then one unit every period/burst. It needs nothing created on the server: its state
// lives in the key "rl:<name>:<request key>" (change the prefix with WithPrefix). name is also
// the policy name in the RateLimit headers. period is sent in whole milliseconds.
func GCRA(name string, period time.Duration, burst int64) Limit {
	return Limit{kind: kindGCRA, policy: name, prefix: "rl:" + name + ":", period: period, burst: burst}
}

// Limiter is a named RATELIMIT limiter, which must have been created (RateLimitCreate), for
// example at start-up. The limiter name is also the policy name in the RateLimit headers. Its
// window for RateLimit-Policy's w is read with RATELIMIT.STATS and cached (Options.PolicyTTL).
func Limiter(name string) Limit {
	return Limit{kind: kindLimiter, policy: name, limiter: name}
}

// WithKey returns the limit keyed by fn instead of Options.Key: for example an API-key limit
// next to a per-IP one.
func (l Limit) WithKey(fn KeyFunc) Limit { l.key = fn; return l }

// WithPrefix returns a GCRA limit whose state keys start with prefix instead of
// "rl:<name>:". Use a prefix no application key shares: an integer-valued key of yours would
// be taken as limiter state. It does nothing for a named limiter.
func (l Limit) WithPrefix(prefix string) Limit { l.prefix = prefix; return l }

// WithPolicy returns the limit with another policy name in the headers.
func (l Limit) WithPolicy(name string) Limit { l.policy = name; return l }

// Policy is the limit's name in the RateLimit-Policy and RateLimit headers.
func (l Limit) Policy() string { return l.policy }

// Options configure the middleware. Only Limits is required.
type Options struct {
	// Limits are checked for every request; all must allow it. Policy names must be unique.
	Limits []Limit
	// Key picks the request's identity for limits without their own. Default: ByIP() (the peer
	// address, ignoring X-Forwarded-For).
	Key KeyFunc
	// Cost is the number of units a request uses (GCRA count, RATELIMIT COST). Default 1. A
	// cost of 0 or less exempts the request: it passes unchecked and gets no headers.
	Cost func(r *http.Request) int64
	// FailOpen lets requests through, without rate-limit headers, when the server cannot be
	// asked (unreachable, timeouts, errors, unknown limiter). The default, fail-closed, answers
	// them with ErrorHandler (503 Service Unavailable).
	FailOpen bool
	// LegacyHeaders adds X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset, carrying
	// q, r and t of the deciding limit: the refusing limit with the longest wait, or else the
	// limit with the fewest units left.
	LegacyHeaders bool
	// DeniedHandler writes the response to a refused request. The rate-limit headers and
	// Retry-After are already set; FromContext gives the Decision. Default: 429 with a short
	// text body.
	DeniedHandler http.Handler
	// ErrorHandler writes the response when the server cannot be asked and FailOpen is false.
	// Default: 503 with a short text body.
	ErrorHandler func(w http.ResponseWriter, r *http.Request, err error)
	// OnError observes every server error (for logging or metrics), in both failure modes.
	OnError func(r *http.Request, err error)
	// PolicyTTL is how long a named limiter's settings (for RateLimit-Policy's w) are cached.
	// They are also reread whenever a reply shows another limit. Default: one minute.
	PolicyTTL time.Duration
}

// Result is one limit's part in a decision, in header units (seconds).
type Result struct {
	// Policy is the limit's policy name.
	Policy string
	// Allowed is whether this limit allows the request.
	Allowed bool
	// TooLarge is set when the cost exceeds this limit's capacity, so no wait helps.
	TooLarge bool
	// Quota is the policy's q: the GCRA burst or the limiter's limit.
	Quota int64
	// Window is the policy's w in seconds, at least 1; 0 when unknown (a limiter's settings
	// could not be read).
	Window int64
	// Remaining is the RateLimit r: units left after this request when it was counted, units
	// left before it when it was not (a refusal, or another limit refused it).
	Remaining int64
	// Reset is the RateLimit t in seconds, or -1 when omitted (a named limiter that allows:
	// its reply has no reset time). When this limit refuses, it equals RetryAfter.
	Reset int64
	// RetryAfter is the wait in whole seconds, rounded up, when this limit refuses; 0 when it
	// allows or when TooLarge.
	RetryAfter int64
}

// Decision is the middleware's verdict on a request.
type Decision struct {
	// Allowed is true when every limit allows the request (and it was counted).
	Allowed bool
	// RetryAfter is the Retry-After value: the longest wait among the refusing limits, in whole
	// seconds rounded up; 0 when allowed or when only TooLarge refusals remain, in which case
	// no Retry-After is sent because waiting would not help.
	RetryAfter int64
	// TooLarge is set when some limit can never allow the request's cost.
	TooLarge bool
	// Results holds one entry per limit, in Options.Limits order.
	Results []Result

	// leases are the concurrency leases the checks acquired, released when the request is
	// done (or at once when it is refused).
	leases []lease
}

// lease is a concurrency lease a RATELIMIT.CHECK acquired for a request.
type lease struct {
	limiter, key string
	id           int64
}

type ctxKey struct{}

// FromContext returns the decision the middleware made for the request, for the next handler
// (allowed requests) and the DeniedHandler.
func FromContext(ctx context.Context) (*Decision, bool) {
	d, ok := ctx.Value(ctxKey{}).(*Decision)
	return d, ok
}

// New returns the middleware. It reports configuration errors (no limits, an empty or
// duplicate policy name, a GCRA limit with a period under 1 ms or a burst under 1) now rather
// than on every request.
func New(client Client, opts Options) (func(http.Handler) http.Handler, error) {
	if client == nil {
		return nil, errors.New("httplimit: nil client")
	}
	if len(opts.Limits) == 0 {
		return nil, errors.New("httplimit: no limits")
	}
	seen := map[string]bool{}
	for _, l := range opts.Limits {
		if l.policy == "" || !printableASCII(l.policy) {
			return nil, fmt.Errorf("httplimit: policy name %q must be non-empty printable ASCII", l.policy)
		}
		if seen[l.policy] {
			return nil, fmt.Errorf("httplimit: duplicate policy name %q", l.policy)
		}
		seen[l.policy] = true
		if l.kind == kindGCRA && (l.period < time.Millisecond || l.burst < 1) {
			return nil, fmt.Errorf("httplimit: GCRA limit %q needs a period of at least 1ms and a burst of at least 1", l.policy)
		}
	}
	m := &middleware{client: client, opts: opts, policies: map[string]policyEntry{}}
	if m.opts.Key == nil {
		m.opts.Key = ByIP()
	}
	if m.opts.PolicyTTL <= 0 {
		m.opts.PolicyTTL = time.Minute
	}
	return m.wrap, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

type middleware struct {
	client Client
	opts   Options

	mu       sync.Mutex
	policies map[string]policyEntry // named limiter -> settings, for w
}

type policyEntry struct {
	limit, window int64
	read          time.Time
}

func (m *middleware) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cost := int64(1)
		if m.opts.Cost != nil {
			cost = m.opts.Cost(r)
		}
		if cost <= 0 {
			next.ServeHTTP(w, r)
			return
		}
		d, err := m.decide(r, cost)
		if err != nil {
			if m.opts.OnError != nil {
				m.opts.OnError(r, err)
			}
			if m.opts.FailOpen {
				next.ServeHTTP(w, r)
				return
			}
			if m.opts.ErrorHandler != nil {
				m.opts.ErrorHandler(w, r, err)
			} else {
				http.Error(w, "rate limiter unavailable", http.StatusServiceUnavailable)
			}
			return
		}
		if len(d.leases) > 0 {
			defer m.release(r, d.leases)
		}
		m.setHeaders(w.Header(), d)
		r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, d))
		if d.Allowed {
			next.ServeHTTP(w, r)
			return
		}
		if d.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfter, 10))
		}
		if m.opts.DeniedHandler != nil {
			m.opts.DeniedHandler.ServeHTTP(w, r)
			return
		}
		if d.RetryAfter == 0 && d.TooLarge {
			http.Error(w, "request exceeds the rate limit", http.StatusTooManyRequests)
			return
		}
		http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
	})
}

// outcome is one limit's latest reply: a peek or a charging command.
type outcome struct {
	gcra    hotkv.GCRAResult
	rl      hotkv.RateLimitResult
	charged bool // the reply is from GCRA.LIMIT / RATELIMIT.CHECK, not a peek
}

func (m *middleware) decide(r *http.Request, cost int64) (*Decision, error) {
	ctx := r.Context()
	limits := m.opts.Limits
	keys := make([]string, len(limits))
	var defKey *string
	for i, l := range limits {
		if l.key != nil {
			keys[i] = l.key(r)
			continue
		}
		if defKey == nil {
			k := m.opts.Key(r)
			defKey = &k
		}
		keys[i] = *defKey
	}
	out := make([]outcome, len(limits))

	if len(limits) > 1 {
		// Step 1: would every limit allow it? Nothing is counted.
		if err := m.run(ctx, limits, keys, cost, out, func(int) bool { return true }, false); err != nil {
			return nil, err
		}
		refused := false
		for i := range limits {
			refused = refused || m.refuses(limits[i], out[i], cost)
		}
		if refused {
			// Ask the refusing named limiters once more with CHECK: the exact wait for this
			// cost, and the refusal in their total_denied. (If units were freed meanwhile the
			// CHECK counts the request there: the race the package documentation describes.)
			recheck := func(i int) bool { return limits[i].kind == kindLimiter && m.refuses(limits[i], out[i], cost) }
			if err := m.run(ctx, limits, keys, cost, out, recheck, true); err != nil {
				return nil, err
			}
			still := false
			for i := range limits {
				still = still || m.refuses(limits[i], out[i], cost)
			}
			if still {
				return m.decisionWithLeases(ctx, limits, keys, out, cost), nil
			}
		}
	}
	// Step 2 (or the only step with one limit): count the request on every limit not yet
	// counted. Each command re-checks atomically.
	if err := m.run(ctx, limits, keys, cost, out, func(i int) bool { return !out[i].charged }, true); err != nil {
		// Leases acquired by the commands that did succeed are given back.
		if ls := leasesOf(limits, keys, out); len(ls) > 0 {
			m.release(r, ls)
		}
		return nil, err
	}
	return m.decisionWithLeases(ctx, limits, keys, out, cost), nil
}

// decisionWithLeases is decision plus the concurrency leases the charging checks acquired.
func (m *middleware) decisionWithLeases(ctx context.Context, limits []Limit, keys []string, out []outcome, cost int64) *Decision {
	d := m.decision(ctx, limits, out, cost)
	d.leases = leasesOf(limits, keys, out)
	return d
}

// leasesOf lists the concurrency leases the charging checks in out acquired.
func leasesOf(limits []Limit, keys []string, out []outcome) []lease {
	var ls []lease
	for i, o := range out {
		if o.charged && o.rl.LeaseID != 0 {
			ls = append(ls, lease{limiter: limits[i].limiter, key: keys[i], id: o.rl.LeaseID})
		}
	}
	return ls
}

// release gives back a request's concurrency leases in one pipeline. It runs after the
// request may have been cancelled (the client went away), so it does not inherit the
// cancellation; it keeps the request context's values.
func (m *middleware) release(r *http.Request, leases []lease) {
	ctx := context.WithoutCancel(r.Context())
	cmds := make([]*redis.BoolCmd, len(leases))
	_, _ = m.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		c := hotkv.Wrap(p)
		for i, l := range leases {
			cmds[i] = c.RateLimitRelease(ctx, l.limiter, l.key, l.id)
		}
		return nil
	})
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && m.opts.OnError != nil {
			m.opts.OnError(r, fmt.Errorf("httplimit: releasing a lease of %s: %w", leases[i].limiter, err))
		}
	}
}

// run sends, in one pipeline, a peek (charge false) or a charging command (charge true) for
// each limit selected by which, and stores the replies in out.
func (m *middleware) run(ctx context.Context, limits []Limit, keys []string, cost int64, out []outcome, which func(int) bool, charge bool) error {
	gcmds := make([]*hotkv.GCRACmd, len(limits))
	rcmds := make([]*hotkv.RateLimitCmd, len(limits))
	sent := false
	_, _ = m.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		c := hotkv.Wrap(p)
		for i, l := range limits {
			if !which(i) {
				continue
			}
			sent = true
			switch {
			case l.kind == kindGCRA && charge:
				gcmds[i] = c.GCRALimit(ctx, l.prefix+keys[i], l.period, l.burst, cost)
			case l.kind == kindGCRA:
				gcmds[i] = c.GCRAPeek(ctx, l.prefix+keys[i], l.period, l.burst, cost)
			case charge:
				rcmds[i] = c.RateLimitCheck(ctx, l.limiter, keys[i], cost)
			default:
				rcmds[i] = c.RateLimitPeek(ctx, l.limiter, keys[i])
			}
		}
		return nil
	})
	if !sent {
		return nil
	}
	// Every reply is stored, even after an error, so that the caller can give back the
	// concurrency leases of the commands that succeeded.
	var first error
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	for i, l := range limits {
		switch {
		case gcmds[i] != nil:
			res, err := gcmds[i].Result()
			if err != nil {
				fail(fmt.Errorf("httplimit: %s: %w", l.policy, err))
				continue
			}
			out[i] = outcome{gcra: res, charged: charge}
		case rcmds[i] != nil:
			res, err := rcmds[i].Result()
			if err != nil {
				fail(fmt.Errorf("httplimit: %s: %w", l.policy, err))
				continue
			}
			if res.UnknownLimiter() {
				fail(fmt.Errorf("%w: %q", ErrUnknownLimiter, l.limiter))
				continue
			}
			out[i] = outcome{rl: res, charged: charge}
		}
	}
	return first
}

// refuses says whether a limit's latest reply refuses a request of this cost. A RATELIMIT.PEEK
// answers for cost 1; its remaining (limit - current) decides any cost exactly, because a
// check passes precisely when cost <= limit - current.
func (m *middleware) refuses(l Limit, o outcome, cost int64) bool {
	if l.kind == kindGCRA {
		return o.gcra.Denied
	}
	if o.charged {
		return !o.rl.Allowed
	}
	return cost > o.rl.Remaining
}

// ceilSec converts a wait or reset in milliseconds to whole seconds, rounded up (spec §12).
func ceilSec(ms int64) int64 {
	if ms <= 0 {
		return 0
	}
	return ms/1000 + boolInt(ms%1000 != 0)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func (m *middleware) decision(ctx context.Context, limits []Limit, out []outcome, cost int64) *Decision {
	d := &Decision{Allowed: true, Results: make([]Result, len(limits))}
	for i, l := range limits {
		o := out[i]
		res := Result{Policy: l.policy, Allowed: !m.refuses(l, o, cost), Reset: -1}
		if l.kind == kindGCRA {
			g := o.gcra
			res.Quota = l.burst
			res.Window = max(1, ceilSec(l.period.Milliseconds()))
			res.Remaining = g.Remaining
			if res.Allowed && !o.charged {
				// A GCRA.PEEK reports the state as if the request had been counted; it was not.
				res.Remaining += cost
			}
			res.Reset = ceilSec(g.ResetAfterMs)
			if g.Denied {
				if g.TooLarge() {
					res.TooLarge = true
				} else {
					res.RetryAfter = ceilSec(g.RetryAfterMs)
					res.Reset = res.RetryAfter
				}
			}
		} else {
			rl := o.rl
			res.Quota = rl.Limit
			res.Window = m.limiterWindow(ctx, l.limiter, rl.Limit)
			res.Remaining = rl.Remaining
			if !res.Allowed {
				if cost > rl.Limit {
					res.TooLarge = true
				} else {
					// Named limiters' refusals always come from a CHECK (a refusing peek is
					// rechecked), so this is the exact wait for the cost, not for one unit.
					res.RetryAfter = max(1, ceilSec(rl.RetryAfterMs))
					res.Reset = res.RetryAfter
				}
			}
		}
		if !res.Allowed {
			d.Allowed = false
			d.TooLarge = d.TooLarge || res.TooLarge
			d.RetryAfter = max(d.RetryAfter, res.RetryAfter)
		}
		d.Results[i] = res
	}
	return d
}

// limiterWindow is RateLimit-Policy's w for a named limiter (spec §12): the window in seconds
// for a sliding window, and the time to refill the whole limit, ceil(limit / rate), for the
// bucket algorithms. Settings are cached; 0 means they could not be read (w is then omitted).
func (m *middleware) limiterWindow(ctx context.Context, name string, limit int64) int64 {
	m.mu.Lock()
	e, ok := m.policies[name]
	m.mu.Unlock()
	if ok && e.limit == limit && time.Since(e.read) < m.opts.PolicyTTL {
		return e.window
	}
	var cmd *hotkv.RateLimitStatsCmd
	_, _ = m.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = hotkv.Wrap(p).RateLimitStats(ctx, name)
		return nil
	})
	// A failure is cached too (as w unknown), so that a server refusing STATS (an ACL, say)
	// costs one extra round trip per PolicyTTL rather than one per request.
	entry := policyEntry{limit: limit, read: time.Now()}
	if st, err := cmd.Result(); err == nil {
		if rate := st.Rate(); rate > 0 {
			entry.window = ceilDiv(st.Limit, rate)
		} else {
			entry.window = ceilSec(st.WindowMs)
		}
		entry.window = max(1, entry.window)
	}
	m.mu.Lock()
	m.policies[name] = entry
	m.mu.Unlock()
	return entry.window
}

// ceilDiv is ceil(limit / rate) in exact arithmetic. The rate is the server's decimal (the
// shortest one that reads back as the double it sent), so for example 20 / 5 is exactly 4
// and 10 / 2.5 exactly 4, where float division could land a hair above and round up.
func ceilDiv(limit int64, rate float64) int64 {
	r, ok := new(big.Rat).SetString(strconv.FormatFloat(rate, 'f', -1, 64))
	if !ok || r.Sign() <= 0 {
		return 0
	}
	q := new(big.Rat).Quo(new(big.Rat).SetInt64(limit), r)
	n, rem := new(big.Int).QuoRem(q.Num(), q.Denom(), new(big.Int))
	if rem.Sign() != 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() {
		return 0
	}
	return n.Int64()
}

// setHeaders writes RateLimit-Policy and RateLimit (one item per limit) and, if asked, the
// legacy X-RateLimit-* of the deciding limit. Retry-After is set by the caller on refusals.
func (m *middleware) setHeaders(h http.Header, d *Decision) {
	policy := make([]string, len(d.Results))
	state := make([]string, len(d.Results))
	for i, res := range d.Results {
		name := quote(res.Policy)
		policy[i] = name + ";q=" + strconv.FormatInt(res.Quota, 10)
		if res.Window > 0 {
			policy[i] += ";w=" + strconv.FormatInt(res.Window, 10)
		}
		state[i] = name + ";r=" + strconv.FormatInt(res.Remaining, 10)
		if res.Reset >= 0 {
			state[i] += ";t=" + strconv.FormatInt(res.Reset, 10)
		}
	}
	h.Set("RateLimit-Policy", strings.Join(policy, ", "))
	h.Set("RateLimit", strings.Join(state, ", "))
	if !m.opts.LegacyHeaders {
		return
	}
	pick := 0
	for i, res := range d.Results {
		best := d.Results[pick]
		switch {
		case d.Allowed:
			if res.Remaining < best.Remaining {
				pick = i
			}
		case !res.Allowed && (best.Allowed || res.RetryAfter > best.RetryAfter):
			pick = i
		}
	}
	res := d.Results[pick]
	h.Set("X-RateLimit-Limit", strconv.FormatInt(res.Quota, 10))
	h.Set("X-RateLimit-Remaining", strconv.FormatInt(res.Remaining, 10))
	if res.Reset >= 0 {
		h.Set("X-RateLimit-Reset", strconv.FormatInt(res.Reset, 10))
	}
}

// quote writes a structured-field string (RFC 8941): the policy names were checked to be
// printable ASCII, so only '"' and '\' need escaping.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

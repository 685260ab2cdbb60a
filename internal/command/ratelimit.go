package command

import (
	"bytes"

	"github.com/hotkv/hotkv/internal/ratelimit"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// Rate-limit errors, worded exactly as spec/RATELIMIT.md §13 lists them.
const (
	errPeriod        = "ERR invalid period: must be a positive integer (milliseconds)"
	errBurst         = "ERR invalid burst: must be a positive integer"
	errCount         = "ERR invalid count: must be a positive integer"
	errLimiterName   = "ERR invalid name: must be 1 to 512 bytes"
	errLimiterLimit  = "ERR invalid limit: must be a positive integer"
	errLimiterWindow = "ERR invalid window: must be a positive integer (milliseconds)"
	errCost          = "ERR invalid cost: must be a positive integer"
	errLimiterExists = "ERR limiter already exists or limit reached"
	errNoLimiter     = "ERR limiter not found"
	errNumLimits     = "ERR invalid numlimits: must be an integer from 1 to 256"
	errAlgoChange    = "ERR invalid option: ALGO cannot be changed (drop and create the limiter)"
	errUpdateAt      = "ERR invalid time: must be a non-negative integer (milliseconds)"
	errLeaseID       = "ERR invalid lease: must be a positive integer"
	errNotConc       = "ERR limiter is not a concurrency limiter"
	errConcLimit     = "ERR invalid limit: must be at most 100000 for ALGO concurrency"
	// maxAtMs is the largest AT whose time in ns fits an int64.
	maxAtMs = ratelimit.Max / ratelimit.NsPerMs

	maxPeriodMs     = 1_000_000_000_000
	maxLimiterName  = 512
	maxLimitAll     = 256 // GCRA.LIMITALL's numlimits bound: one reply stays small, one lock set bounded
	rateLimitSince  = "0.1.0"
	rateLimitGroup  = "ratelimit"
	nondeterministc = "nondeterministic_output"
)

func rateLimitCommands() []*Command {
	rl := func(name string, arity int, flags Flag, acl []string, first, last int, ks KeySpecFlag,
		complexity, syntax, summary string, h Handler) *Command {
		c := &Command{Name: name, Arity: arity, Flags: flags, ACL: append([]string{"ratelimit"}, acl...),
			FirstKey: first, LastKey: last, Group: rateLimitGroup, Since: rateLimitSince,
			Complexity: complexity, Syntax: syntax, Summary: summary, Handler: h}
		if first > 0 { // a command without keys reports first, last, step as 0, 0, 0 (§11)
			c.Step = 1
			c.KeySpecs = []KeySpec{{Flags: ks, Begin: first, LastKey: last - first, Step: 1}}
			if last < 0 {
				c.KeySpecs[0].LastKey = -1
			}
		}
		return c
	}
	named := func(c *Command) *Command {
		// Named limiters are not keyspace keys: the dispatcher takes no shard lock; the
		// limiter has its own. The name still counts as the key for routing and ACLs.
		c.Global = true
		return c
	}
	nd := []string{nondeterministc}
	cmds := []*Command{
		rl("gcra.limit", -4, FlagWrite|FlagDenyOOM|FlagFast, []string{"write", "fast"}, 1, 1, KSRW|KSAccess|KSUpdate,
			"O(1)", "key period burst [count]",
			"Allows or denies a request under a GCRA limit and records it if allowed", gcraLimitCommand),
		rl("gcra.peek", -4, FlagReadOnly|FlagFast, []string{"read", "fast"}, 1, 1, KSRO|KSAccess,
			"O(1)", "key period burst [count]",
			"Reports what GCRA.LIMIT would reply, without recording", gcraPeekCommand),
		gcraLimitAllRow(rl),
		rl("gcra.refund", -4, FlagWrite|FlagFast, []string{"write", "fast"}, 1, 1, KSRW|KSAccess|KSUpdate|KSDelete,
			"O(1)", "key period burst [count]",
			"Gives units back to a GCRA limit, for requests that should not have counted", gcraRefundCommand),
		rl("gcra.reset", -2, FlagWrite, []string{"write", "slow"}, 1, -1, KSRM|KSDelete,
			"O(N) where N is the number of keys", "key [key ...]",
			"Deletes GCRA limiter state", gcraResetCommand),
		rl("cl.throttle", -5, FlagWrite|FlagDenyOOM|FlagFast, []string{"write", "fast"}, 1, 1, KSRW|KSAccess|KSUpdate,
			"O(1)", "key max_burst count_per_period period [quantity]",
			"redis-cell compatible GCRA rate limiting", clThrottleCommand),
		named(rl("ratelimit.create", -4, FlagWrite|FlagDenyOOM, []string{"write", "slow"}, 1, 1, KSRW|KSInsert,
			"O(1)", "name limit window_ms [ALGO <SLIDING_WINDOW | TOKEN_BUCKET | LEAKY_BUCKET | CONCURRENCY>] [REFILL rate] [DRAIN rate] [SHADOW]",
			"Creates a named limiter", rateLimitCreateCommand)),
		named(rl("ratelimit.update", -2, FlagWrite, []string{"write", "slow"}, 1, 1, KSRW|KSUpdate,
			"O(N) where N is the number of keys with state", "name [LIMIT limit] [WINDOW window_ms] [REFILL rate | DRAIN rate] [SHADOW <ON | OFF>] [AT unix-time-milliseconds]",
			"Changes a limiter's limit, window, rate or shadow mode in place, keeping its state and totals", rateLimitUpdateCommand)),
		named(rl("ratelimit.check", -3, FlagWrite|FlagDenyOOM|FlagFast, []string{"write", "fast"}, 1, 1, KSRW|KSAccess|KSUpdate,
			"O(1) for token_bucket and leaky_bucket; O(E) for sliding_window, E <= min(limit, ratelimit.sliding-window-max-entries) entries of the key; O(E) for concurrency, E <= limit leases of the key",
			"name key [COST cost]",
			"Checks a request against a named limiter and counts it if allowed", rateLimitCheckCommand)),
		named(rl("ratelimit.release", 4, FlagWrite|FlagFast, []string{"write", "fast"}, 1, 1, KSRW|KSAccess|KSUpdate,
			"O(log N) to find the lease, O(N) to remove it, where N is the number of the key's leases",
			"name key lease_id",
			"Gives back a concurrency limiter's lease before it expires", rateLimitReleaseCommand)),
		named(rl("ratelimit.peek", 3, FlagReadOnly|FlagFast, []string{"read", "fast"}, 1, 1, KSRO|KSAccess,
			"O(1) for token_bucket and leaky_bucket; O(E) for sliding_window and concurrency", "name key",
			"Reports a named limiter's state for a key without counting", rateLimitPeekCommand)),
		named(rl("ratelimit.reset", 3, FlagWrite|FlagFast, []string{"write", "fast"}, 1, 1, KSRW|KSDelete,
			"O(1) (O(E) to free a sliding_window log)", "name key",
			"Forgets one key's state", rateLimitResetCommand)),
		named(rl("ratelimit.stats", 2, FlagReadOnly, []string{"read", "slow"}, 1, 1, KSRO|KSAccess,
			"O(1) amortized", "name",
			"A limiter's settings and totals", rateLimitStatsCommand)),
		named(rl("ratelimit.drop", 2, FlagWrite, []string{"write", "slow"}, 1, 1, KSRM|KSDelete,
			"O(N) where N is the number of keys with state", "name",
			"Deletes a limiter", rateLimitDropCommand)),
		named(rl("ratelimit.setstate", -5, FlagWrite, []string{"write", "slow", "dangerous"}, 1, 1, KSOW|KSUpdate,
			"O(E) where E is the number of log entries or leases", "name <key <TAT tat | LOG count [ts units ...] | LEASES count [id ts units ...]> TOTALS allowed denied [shadow_denied] | TOTALS allowed denied [shadow_denied]>",
			"Applies a limiter key's journaled state (used by the append-only log and replicas)", rateLimitSetStateCommand)),
		named(rl("ratelimit.list", 1, FlagReadOnly, []string{"read", "slow"}, 0, 0, 0,
			"O(N log N) where N is the number of limiters", "",
			"Names of all limiters on this node", rateLimitListCommand)),
	}
	for _, c := range cmds {
		switch c.Name {
		case "gcra.limit", "gcra.limitall", "cl.throttle", "ratelimit.check":
			c.Decision = true
		}
		switch c.Name {
		case "gcra.reset", "ratelimit.create", "ratelimit.update", "ratelimit.drop", "ratelimit.list", "ratelimit.setstate":
		default:
			c.Tips = nd
		}
	}
	return cmds
}

// intInRange parses argument i as a Redis integer within [lo, hi].
func (c *Ctx) intInRange(i int, lo, hi int64) (int64, bool) {
	v, ok := resp.ParseInt(c.Args[i])
	return v, ok && v >= lo && v <= hi
}

// gcraArgs validates GCRA.LIMIT/GCRA.PEEK's arguments in the spec's order (§3.1): arity, then
// period, burst and count. It replies on failure.
func gcraArgs(c *Ctx) (ratelimit.GCRAParams, int64, bool) {
	if len(c.Args) > 5 {
		c.ArityError()
		return ratelimit.GCRAParams{}, 0, false
	}
	period, ok := c.intInRange(2, 1, maxPeriodMs)
	if !ok {
		c.Error(errPeriod)
		return ratelimit.GCRAParams{}, 0, false
	}
	burst, ok := c.intInRange(3, 1, ratelimit.Max)
	if !ok {
		c.Error(errBurst)
		return ratelimit.GCRAParams{}, 0, false
	}
	count := int64(1)
	if len(c.Args) == 5 {
		if count, ok = c.intInRange(4, 1, ratelimit.Max); !ok {
			c.Error(errCount)
			return ratelimit.GCRAParams{}, 0, false
		}
	}
	return ratelimit.NewGCRAParams(period, burst), count, true
}

// gcraState reads a key's GCRA state (spec §2.7): absent, or a string holding an integer TAT
// in ns. Anything else is not ours to touch: ok is false and the caller replies WRONGTYPE.
func gcraState(e *store.Entry) (tat int64, present, ok bool) {
	if e == nil {
		return 0, false, true
	}
	if e.Val.Kind != store.KindString {
		return 0, false, false
	}
	if e.Val.IsInt {
		return e.Val.Int, true, true
	}
	if n, isInt := resp.ParseInt(e.Val.Bytes()); isInt {
		return n, true, true
	}
	return 0, false, false
}

// lookupGCRA finds key (for writing) and reads its GCRA state, replying WRONGTYPE when the key
// holds something else: the start of every command that updates a GCRA key.
func lookupGCRA(c *Ctx, key []byte) (e *store.Entry, tat int64, present, ok bool) {
	e = c.Lookup(key)
	if tat, present, ok = gcraState(e); !ok {
		c.WrongType()
	}
	return e, tat, present, ok
}

// storeTAT writes an allowed decision's state: the TAT as an integer string expiring at
// ceil_ms(TAT), like SET key <TAT> PXAT <ceil_ms(TAT)>. An existing entry is updated in place,
// which allocates nothing and leaves the expiry wheel alone (the expiry only moves later).
func storeTAT(c *Ctx, key []byte, e *store.Entry, tat int64) {
	expireAt := ratelimit.CeilMs(tat)
	if e != nil {
		e.Val = IntValue(tat)
		c.DB.SetExpire(e, expireAt)
	} else {
		c.DB.Set(key, IntValue(tat), expireAt, false, c.Now)
	}
	c.Dirty(1)
	if c.Store.Journal != nil {
		c.Emit(c.DB.ID, effSet, key, c.effInt(tat), effPXAT, c.effInt(expireAt))
	}
}

func replyInts(c *Ctx, r [5]int64) {
	c.W.Array(5)
	for _, v := range r {
		c.W.Int(v)
	}
}

func gcraLimitCommand(c *Ctx) {
	p, count, ok := gcraArgs(c)
	if !ok {
		return
	}
	key := c.Args[1]
	e, tat, present, ok := lookupGCRA(c, key)
	if !ok {
		return
	}
	d, r := p.Limit(c.Now*ratelimit.NsPerMs, tat, present, count)
	c.Store.Decisions.GCRALimit.Count(d.Allowed)
	if d.Allowed {
		storeTAT(c, key, e, d.TAT)
	}
	replyInts(c, r)
}

func gcraPeekCommand(c *Ctx) {
	p, count, ok := gcraArgs(c)
	if !ok {
		return
	}
	tat, present, ok := gcraState(c.LookupRead(c.Args[1]))
	if !ok {
		c.WrongType()
		return
	}
	_, r := p.Limit(c.Now*ratelimit.NsPerMs, tat, present, count)
	replyInts(c, r)
}

// gcraLimitAllRow is GCRA.LIMITALL's row. Its keys are every third argument from the first
// key, counted by numlimits: a keynum key spec with step 3, so COMMAND GETKEYS, the shard
// locks and cluster routing (CROSSSLOT) find them all. Legacy first/last/step are 0 0 0 and
// the command is movablekeys, as Redis reports for commands whose only spec is keynum.
// It is fast like GCRA.LIMIT: at most 256 limits, usually two or three.
func gcraLimitAllRow(rl func(string, int, Flag, []string, int, int, KeySpecFlag, string, string, string, Handler) *Command) *Command {
	c := rl("gcra.limitall", -5, FlagWrite|FlagDenyOOM|FlagFast, []string{"write", "fast"}, 0, 0, 0,
		"O(N) where N is the number of limits", "numlimits key period burst [key period burst ...] [COUNT count]",
		"Allows a request only if every one of several GCRA limits allows it, and then records it in all of them",
		gcraLimitAllCommand)
	c.KeySpecs = []KeySpec{{Flags: KSRW | KSAccess | KSUpdate, Begin: 1, FirstKey: 1, Step: 3}}
	c.Doc = "All or nothing: the request of `count` units (default 1) is admitted only if every limit " +
		"allows it, and then recorded in every key exactly as `GCRA.LIMIT` would; otherwise nothing is " +
		"recorded. The reply is `denied`, `retry_after_ms` (-1 when admitted; when denied the largest wait " +
		"among the denying limits, or -1 if one of them can never allow `count`), then one `GCRA.LIMIT` " +
		"reply per limit in argument order. The limits are evaluated in order as if each were a " +
		"`GCRA.LIMIT` of one transaction, so a key listed twice is charged twice. `numlimits` is 1 to 256 " +
		"(`ERR invalid numlimits: must be an integer from 1 to 256`); fewer than `numlimits` triples, " +
		"or anything after them but `COUNT count`, is `ERR syntax error`. All keys must hash to one " +
		"slot in a cluster. See docs/ratelimit.md."
	return c
}

// gcraKeyState is one distinct key of a GCRA.LIMITALL: its entry and the TAT the limits
// evaluated so far would leave in it.
type gcraKeyState struct {
	key     []byte
	e       *store.Entry
	tat     int64
	present bool
	changed bool
}

// gcraLimitAllCommand checks several GCRA limits as one request (docs/ratelimit.md,
// "GCRA.LIMITALL"). Validation order: arity (the table), numlimits, enough triples, each
// limit's period then burst in argument order, the trailing COUNT option, then the key types.
// The limits are then evaluated in argument order against a working copy of each key's TAT,
// so a key listed twice sees the first limit's charge; only if all allow are the keys written.
func gcraLimitAllCommand(c *Ctx) {
	n64, ok := c.intInRange(1, 1, maxLimitAll)
	if !ok {
		c.Error(errNumLimits)
		return
	}
	n := int(n64)
	end := 2 + 3*n
	if end > len(c.Args) {
		c.Syntax()
		return
	}
	var paramBuf [4]ratelimit.GCRAParams
	params := paramBuf[:0]
	for i := range n {
		at := 2 + 3*i
		period, ok := c.intInRange(at+1, 1, maxPeriodMs)
		if !ok {
			c.Error(errPeriod)
			return
		}
		burst, ok := c.intInRange(at+2, 1, ratelimit.Max)
		if !ok {
			c.Error(errBurst)
			return
		}
		params = append(params, ratelimit.NewGCRAParams(period, burst))
	}
	count := int64(1)
	switch {
	case len(c.Args) == end:
	case len(c.Args) == end+2 && c.ArgIs(end, "count"):
		if count, ok = c.intInRange(end+1, 1, ratelimit.Max); !ok {
			c.Error(errCount)
			return
		}
	default:
		c.Syntax()
		return
	}
	var keyBuf [4]gcraKeyState
	var whichBuf [4]int
	keys, which := keyBuf[:0], whichBuf[:0]
	for i := range n {
		key := c.Args[2+3*i]
		j := 0
		for j < len(keys) && !bytes.Equal(keys[j].key, key) {
			j++
		}
		if j == len(keys) {
			e, tat, present, ok := lookupGCRA(c, key)
			if !ok {
				return
			}
			keys = append(keys, gcraKeyState{key: key, e: e, tat: tat, present: present})
		}
		which = append(which, j)
	}
	now := c.Now * ratelimit.NsPerMs
	var replyBuf [4]ratelimit.GCRAReply
	replies := replyBuf[:0]
	denied, never := false, false
	var retry int64
	for i, p := range params {
		ks := &keys[which[i]]
		d, r := p.Limit(now, ks.tat, ks.present, count)
		replies = append(replies, r)
		switch {
		case d.Allowed:
			ks.tat, ks.present, ks.changed = d.TAT, true, true
		case d.Never:
			denied, never = true, true
		default:
			denied = true
			retry = max(retry, r[3])
		}
	}
	if !denied {
		// More than one key: the SET effects go out as one MULTI/EXEC block (or inside the
		// EXEC this command runs in), so a replay never applies half an admission.
		own := c.Store.Journal != nil && c.tx == nil && len(keys) > 1
		if own {
			c.tx = &txJournal{out: c.Store.Journal}
		}
		for i := range keys {
			storeTAT(c, keys[i].key, keys[i].e, keys[i].tat)
		}
		if own {
			c.tx.finish()
			c.tx = nil
		}
	}
	c.W.Array(2 + len(replies))
	switch {
	case !denied:
		c.W.Int(0)
		c.W.Int(-1)
	case never:
		c.W.Int(1)
		c.W.Int(-1)
	default:
		c.W.Int(1)
		c.W.Int(retry)
	}
	for _, r := range replies {
		replyInts(c, r)
	}
}

// gcraRefundCommand gives units back to a GCRA key (docs/ratelimit.md, "GCRA.REFUND"), with
// GCRA.LIMIT's validation. A key whose TAT moves back to now or earlier is full: it is deleted
// (journaled as DEL key) rather than kept as a TAT in the past, which GCRA.LIMIT would read
// the same way; otherwise it is rewritten like an admission (SET key TAT PXAT ceil_ms(TAT)).
// An absent or already-full key is left alone and nothing is journaled.
func gcraRefundCommand(c *Ctx) {
	p, count, ok := gcraArgs(c)
	if !ok {
		return
	}
	key := c.Args[1]
	e, tat, present, ok := lookupGCRA(c, key)
	if !ok {
		return
	}
	now := c.Now * ratelimit.NsPerMs
	ttlNew, changed, r := p.Refund(now, tat, present, count)
	switch {
	case !changed:
	case ttlNew == 0:
		c.DB.Remove(e)
		c.Dirty(1)
		if c.Store.Journal != nil {
			c.Emit(c.DB.ID, effDel, key)
		}
	default:
		storeTAT(c, key, e, now+ttlNew)
	}
	replyInts(c, r)
}

// gcraResetCommand deletes GCRA state, all or nothing: if any existing key is not GCRA state
// nothing is deleted (spec §5).
func gcraResetCommand(c *Ctx) {
	keys := c.Args[1:]
	for _, k := range keys {
		if _, _, ok := gcraState(c.Lookup(k)); !ok {
			c.WrongType()
			return
		}
	}
	var n int64
	deleted := [][]byte{[]byte("DEL")}
	for _, k := range keys {
		if c.DB.Delete(k, c.Now) {
			n++ // a key listed twice is found once: the second lookup misses
			deleted = append(deleted, k)
		}
	}
	c.Dirty(n)
	if n > 0 && c.Store.Journal != nil {
		c.Emit(c.DB.ID, deleted...)
	}
	c.W.Int(n)
}

func clThrottleCommand(c *Ctx) {
	if len(c.Args) > 6 {
		c.ArityError()
		return
	}
	var nums [4]int64
	for i := 2; i < len(c.Args); i++ {
		v, ok := resp.ParseInt(c.Args[i])
		if !ok || v < 0 {
			c.Error(ErrNotInt)
			return
		}
		nums[i-2] = v
	}
	quantity := int64(1)
	if len(c.Args) == 6 {
		quantity = nums[3]
	}
	now := c.Now * ratelimit.NsPerMs
	p, err := ratelimit.NewThrottleParams(nums[0], nums[1], nums[2], now)
	if err != nil {
		c.Error(err.Error())
		return
	}
	key := c.Args[1]
	e, tat, present, ok := lookupGCRA(c, key)
	if !ok {
		return
	}
	d, r := p.Throttle(now, tat, present, quantity, c.Srv.RateLimitSettings().Compat)
	c.Store.Decisions.CLThrottle.Count(d.Allowed)
	if d.Allowed && quantity > 0 {
		storeTAT(c, key, e, d.TAT)
	}
	replyInts(c, r)
}

func rateLimitCreateCommand(c *Ctx) {
	name := c.Args[1]
	if len(name) == 0 || len(name) > maxLimiterName {
		c.Error(errLimiterName)
		return
	}
	limit, ok := c.intInRange(2, 1, ratelimit.Max)
	if !ok {
		c.Error(errLimiterLimit)
		return
	}
	window, ok := c.intInRange(3, 1, maxPeriodMs)
	if !ok {
		c.Error(errLimiterWindow)
		return
	}
	algo := store.SlidingWindow
	var haveAlgo, haveRefill, haveDrain, shadow bool
	var rateText string
	for i := 4; i < len(c.Args); i += 2 {
		if c.ArgIs(i, "shadow") && !shadow {
			// The one flag without a value (docs/ratelimit.md, "Shadow mode").
			shadow = true
			i--
			continue
		}
		if i+1 >= len(c.Args) {
			c.Syntax()
			return
		}
		v := c.Args[i+1]
		switch {
		case c.ArgIs(i, "algo") && !haveAlgo:
			haveAlgo = true
			switch {
			case EqualFold(v, "sliding_window"):
				algo = store.SlidingWindow
			case EqualFold(v, "token_bucket"):
				algo = store.TokenBucket
			case EqualFold(v, "leaky_bucket"):
				algo = store.LeakyBucket
			case EqualFold(v, "concurrency"):
				algo = store.Concurrency
			default:
				c.Syntax()
				return
			}
		case (c.ArgIs(i, "refill") && !haveRefill) || (c.ArgIs(i, "drain") && !haveDrain):
			if c.ArgIs(i, "refill") {
				haveRefill = true
			} else {
				haveDrain = true
			}
			if !ratelimit.RateSyntaxOK(string(v)) {
				c.Error(ratelimit.ErrInvalidRate.Error())
				return
			}
			rateText = string(v)
		default:
			c.Syntax()
			return
		}
	}
	if (haveRefill && algo != store.TokenBucket) || (haveDrain && algo != store.LeakyBucket) {
		c.Syntax()
		return
	}
	if algo == store.Concurrency && limit > ratelimit.MaxConcurrencyLimit {
		// Each lease holds >= 1 unit, so the limit bounds a key's leases and its memory.
		c.Error(errConcLimit)
		return
	}
	rate := ratelimit.DefaultRate(limit, window)
	if rateText != "" {
		var err error
		if rate, err = ratelimit.ParseRate(rateText, limit); err != nil {
			c.Error(err.Error())
			return
		}
	}
	l := &store.Limiter{Name: string(name), Algo: algo, Limit: limit, WindowMs: window, Rate: rate, Shadow: shadow}
	// CREATE is deterministic: journaled as given (spec §10), inside the registry lock so that
	// no effect of the new limiter can precede it.
	created := c.Store.Limiters.CreateThen(l, c.Srv.RateLimitSettings().MaxLimiters, func() {
		if c.Store.Journal != nil {
			c.Emit(-1, c.Args...)
		}
	})
	if !created {
		c.Error(errLimiterExists)
		return
	}
	c.Dirty(1)
	c.W.OK()
}

func rateLimitCheckCommand(c *Ctx) {
	cost := int64(1)
	haveCost := false
	for i := 3; i < len(c.Args); i += 2 {
		if !c.ArgIs(i, "cost") || haveCost || i+1 >= len(c.Args) {
			c.Syntax()
			return
		}
		v, ok := c.intInRange(i+1, 1, ratelimit.Max)
		if !ok {
			c.Error(errCost)
			return
		}
		cost, haveCost = v, true
	}
	rateLimitEval(c, cost, true)
}

func rateLimitPeekCommand(c *Ctx) { rateLimitEval(c, 1, false) }

func rateLimitEval(c *Ctx, cost int64, record bool) {
	l := c.Store.Limiters.Get(c.Args[1])
	if l == nil {
		replyInts(c, [5]int64{})
		return
	}
	r, id, changed := l.CheckLease(c.Args[2], cost, c.Now, c.Srv.RateLimitSettings().SlidingWindowMaxEntries, record, c.journal())
	if changed {
		c.Dirty(1)
		c.journaled = true // Check journaled the key's new state itself, under the key's lock
	}
	if record && l.Algo == store.Concurrency && r[3] != 0 {
		// A concurrency CHECK adds the lease id (0: none acquired). A limiter dropped during
		// the check replies as an unknown one, five zeros.
		c.W.Array(6)
		for _, v := range r {
			c.W.Int(v)
		}
		c.W.Int(id)
		return
	}
	replyInts(c, r)
}

// rateLimitReleaseCommand gives a concurrency lease back (docs/ratelimit.md, "Concurrency
// limits"). Validation order: arity (the table), the lease id, the limiter (not found), its
// algorithm. The reply is 1 when a live lease of the key was released, else 0; a release is
// journaled as the key's remaining leases (RATELIMIT.SETSTATE ... LEASES) under its lock.
func rateLimitReleaseCommand(c *Ctx) {
	id, ok := c.intInRange(3, 1, ratelimit.Max)
	if !ok {
		c.Error(errLeaseID)
		return
	}
	l := c.Store.Limiters.Get(c.Args[1])
	if l == nil {
		c.Error(errNoLimiter)
		return
	}
	if l.Algo != store.Concurrency {
		c.Error(errNotConc)
		return
	}
	released, dropped := l.Release(c.Args[2], id, c.Now, c.journal())
	switch {
	case dropped:
		c.Error(errNoLimiter)
	case released:
		c.Dirty(1)
		c.journaled = true // Release journaled it, under the key's lock
		c.W.Int(1)
	default:
		c.W.Int(0)
	}
}

func rateLimitResetCommand(c *Ctx) {
	l := c.Store.Limiters.Get(c.Args[1])
	if l == nil {
		c.Error(errNoLimiter)
		return
	}
	if l.Reset(c.Args[2], c.Now, c.journal()) {
		c.Dirty(1)
		c.journaled = true // Reset journaled it, under the key's lock
		c.W.Int(1)
		return
	}
	c.W.Int(0)
}

func rateLimitStatsCommand(c *Ctx) {
	l := c.Store.Limiters.Get(c.Args[1])
	if l == nil {
		c.Error(errNoLimiter)
		return
	}
	def := l.Definition()
	allowed, denied := l.Totals()
	fields := 9
	if l.Algo == store.TokenBucket || l.Algo == store.LeakyBucket {
		fields = 10
	}
	c.W.Map(fields)
	c.W.BulkString("name")
	c.W.BulkString(l.Name)
	c.W.BulkString("algo")
	c.W.BulkString(l.Algo.String())
	c.W.BulkString("limit")
	c.W.Int(def.Limit)
	c.W.BulkString("window_ms")
	c.W.Int(def.WindowMs)
	c.W.BulkString("unique_keys")
	c.W.Int(l.UniqueKeys(c.Now))
	c.W.BulkString("total_allowed")
	c.W.Int(allowed)
	c.W.BulkString("total_denied")
	c.W.Int(denied)
	switch l.Algo {
	case store.TokenBucket:
		c.W.BulkString("refill_per_sec")
		c.W.DoubleText(ratelimit.FormatRate(def.Rate.PerSec))
	case store.LeakyBucket:
		c.W.BulkString("drain_per_sec")
		c.W.DoubleText(ratelimit.FormatRate(def.Rate.PerSec))
	}
	// Added after the spec's fields, so parsers that read them by position keep working.
	c.W.BulkString("shadow")
	if def.Shadow {
		c.W.Int(1)
	} else {
		c.W.Int(0)
	}
	c.W.BulkString("total_shadow_denied")
	c.W.Int(l.ShadowDenied())
}

// rateLimitUpdateCommand changes a limiter in place (docs/ratelimit.md, "RATELIMIT.UPDATE").
// Validation order: arity (the table); no option at all; the options left to right (a
// keyword without its value, an unknown or repeated keyword, a bad SHADOW value: syntax error;
// ALGO: errAlgoChange; LIMIT, WINDOW, REFILL/DRAIN and AT values with CREATE's errors); the
// limiter (not found); REFILL/DRAIN against the limiter's algorithm (syntax error); the rate
// too slow for the new limit (invalid rate). The conversion of bucket state depends on the
// time, so the journal carries the complete new definition with the instant it was converted
// at (AT), which replay uses instead of its clock.
func rateLimitUpdateCommand(c *Ctx) {
	if len(c.Args) < 3 {
		c.Syntax()
		return
	}
	var limit, window int64
	var haveLimit, haveWindow, haveRefill, haveDrain, haveShadow, haveAt, shadow bool
	var rateText string
	at := c.Now
	for i := 2; i < len(c.Args); i += 2 {
		if i+1 >= len(c.Args) {
			c.Syntax()
			return
		}
		v := c.Args[i+1]
		var ok bool
		switch {
		case c.ArgIs(i, "algo"):
			c.Error(errAlgoChange)
			return
		case c.ArgIs(i, "limit") && !haveLimit:
			haveLimit = true
			if limit, ok = c.intInRange(i+1, 1, ratelimit.Max); !ok {
				c.Error(errLimiterLimit)
				return
			}
		case c.ArgIs(i, "window") && !haveWindow:
			haveWindow = true
			if window, ok = c.intInRange(i+1, 1, maxPeriodMs); !ok {
				c.Error(errLimiterWindow)
				return
			}
		case c.ArgIs(i, "refill") && !haveRefill, c.ArgIs(i, "drain") && !haveDrain:
			if c.ArgIs(i, "refill") {
				haveRefill = true
			} else {
				haveDrain = true
			}
			if !ratelimit.RateSyntaxOK(string(v)) {
				c.Error(ratelimit.ErrInvalidRate.Error())
				return
			}
			rateText = string(v)
		case c.ArgIs(i, "shadow") && !haveShadow:
			haveShadow = true
			switch {
			case EqualFold(v, "on"):
				shadow = true
			case EqualFold(v, "off"):
				shadow = false
			default:
				c.Syntax()
				return
			}
		case c.ArgIs(i, "at") && !haveAt:
			haveAt = true
			if at, ok = c.intInRange(i+1, 0, maxAtMs); !ok {
				c.Error(errUpdateAt)
				return
			}
		default:
			c.Syntax()
			return
		}
	}
	l := c.Store.Limiters.Get(c.Args[1])
	if l == nil {
		c.Error(errNoLimiter)
		return
	}
	errMsg := ""
	build := func(old store.Definition) (store.Definition, bool) {
		if (haveRefill && l.Algo != store.TokenBucket) || (haveDrain && l.Algo != store.LeakyBucket) {
			errMsg = ErrSyntax
			return old, false
		}
		if haveLimit && l.Algo == store.Concurrency && limit > ratelimit.MaxConcurrencyLimit {
			errMsg = errConcLimit
			return old, false
		}
		nu := old
		if haveLimit {
			nu.Limit = limit
		}
		if haveWindow {
			nu.WindowMs = window
		}
		if haveShadow {
			nu.Shadow = shadow
		}
		if rateText == "" {
			rateText = old.Rate.Text
		}
		if rateText == "" {
			// The default rate follows the limit and the window.
			nu.Rate = ratelimit.DefaultRate(nu.Limit, nu.WindowMs)
		} else if rateText != old.Rate.Text || nu.Limit != old.Limit {
			r, err := ratelimit.ParseRate(rateText, nu.Limit)
			if err != nil {
				errMsg = err.Error()
				return old, false
			}
			if rateText == old.Rate.Text {
				r.IntervalNs = old.Rate.IntervalNs // the interval the state was computed with
			}
			nu.Rate = r
		}
		return nu, true
	}
	done := func(_, nu store.Definition) {
		if c.Store.Journal == nil {
			return
		}
		args := [][]byte{c.Args[0], c.Args[1], []byte("LIMIT"), c.effInt(nu.Limit), []byte("WINDOW"), c.effInt(nu.WindowMs)}
		if nu.Rate.Text != "" {
			if l.Algo == store.TokenBucket {
				args = append(args, []byte("REFILL"), []byte(nu.Rate.Text))
			} else {
				args = append(args, []byte("DRAIN"), []byte(nu.Rate.Text))
			}
		}
		sh := []byte("OFF")
		if nu.Shadow {
			sh = []byte("ON")
		}
		args = append(args, []byte("SHADOW"), sh, []byte("AT"), c.effInt(at))
		c.Emit(-1, args...)
	}
	dropped, ok := l.Update(at, build, done)
	switch {
	case dropped:
		c.Error(errNoLimiter)
	case !ok:
		c.Error(errMsg)
	default:
		c.Dirty(1)
		c.W.OK()
	}
}

func rateLimitDropCommand(c *Ctx) {
	dropped := c.Store.Limiters.DropThen(c.Args[1], func() {
		if c.Store.Journal != nil {
			c.Emit(-1, c.Args...)
		}
	})
	if !dropped {
		c.Error(errNoLimiter)
		return
	}
	c.Dirty(1)
	c.W.OK()
}

func rateLimitListCommand(c *Ctx) {
	names := c.Store.Limiters.Names()
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
}

// rateLimitSetStateCommand applies the effect an allowed RATELIMIT.CHECK journals: the key's
// complete state with absolute times and the limiter's totals (spec §10). It never reads the
// clock or local configuration, so replaying a journal anywhere gives the same state.
func rateLimitSetStateCommand(c *Ctx) {
	l := c.Store.Limiters.Get(c.Args[1])
	if l == nil {
		c.Error(errNoLimiter)
		return
	}
	if (len(c.Args) == 5 || len(c.Args) == 6) && c.ArgIs(2, "totals") {
		// The totals-only form: the server's periodic flush of denied counts (denials
		// journal nothing themselves), raised as a maximum like a key's effect.
		allowed, ok1 := c.intInRange(3, 0, ratelimit.Max)
		denied, ok2 := c.intInRange(4, 0, ratelimit.Max)
		shadowDenied, ok3 := int64(0), true
		if len(c.Args) == 6 {
			shadowDenied, ok3 = c.intInRange(5, 0, ratelimit.Max)
		}
		if !ok1 || !ok2 || !ok3 {
			c.Error(ErrNotInt)
			return
		}
		l.RaiseTotalsShadow(allowed, denied, shadowDenied)
		c.Dirty(1)
		if c.Store.Journal != nil {
			c.Emit(-1, c.Args...)
		}
		c.W.OK()
		return
	}
	if len(c.Args) < 8 {
		c.ArityError()
		return
	}
	key := c.Args[2]
	i := 3
	var tat int64
	var entries []ratelimit.WindowEntry
	var leases []ratelimit.Lease
	switch {
	case c.ArgIs(i, "tat") && (l.Algo == store.TokenBucket || l.Algo == store.LeakyBucket):
		v, ok := resp.ParseInt(c.Args[i+1])
		if !ok {
			c.Error(ErrNotInt)
			return
		}
		tat, i = v, i+2
	case c.ArgIs(i, "log") && l.Algo == store.SlidingWindow:
		n, ok := c.intInRange(i+1, 0, int64(len(c.Args)))
		if !ok || i+2+2*int(n) > len(c.Args) {
			c.Syntax()
			return
		}
		entries = make([]ratelimit.WindowEntry, 0, n)
		for j := range int(n) {
			ts, ok1 := resp.ParseInt(c.Args[i+2+2*j])
			units, ok2 := resp.ParseInt(c.Args[i+3+2*j])
			if !ok1 || !ok2 || units < 1 {
				c.Syntax()
				return
			}
			if k := len(entries); k > 0 && ts <= entries[k-1].TS {
				// Logs written before the window kept its entries strictly increasing
				// (ratelimit.Window.add) can hold a late stamp: it joins the entry before
				// it, as the window does now, instead of losing the key's state.
				entries[k-1].Units += units
				continue
			}
			entries = append(entries, ratelimit.WindowEntry{TS: ts, Units: units})
		}
		i += 2 + 2*int(n)
	case c.ArgIs(i, "leases") && l.Algo == store.Concurrency:
		n, ok := c.intInRange(i+1, 0, int64(len(c.Args)))
		if !ok || i+2+3*int(n) > len(c.Args) {
			c.Syntax()
			return
		}
		leases = make([]ratelimit.Lease, n)
		for j := range leases {
			id, ok1 := resp.ParseInt(c.Args[i+2+3*j])
			ts, ok2 := resp.ParseInt(c.Args[i+3+3*j])
			units, ok3 := resp.ParseInt(c.Args[i+4+3*j])
			if !ok1 || !ok2 || !ok3 {
				c.Syntax()
				return
			}
			leases[j] = ratelimit.Lease{ID: id, TS: ts, Units: units}
		}
		if _, err := ratelimit.NormalizeLeases(leases); err != nil {
			c.Syntax()
			return
		}
		i += 2 + 3*int(n)
	default:
		c.Syntax()
		return
	}
	if (i+3 != len(c.Args) && i+4 != len(c.Args)) || !c.ArgIs(i, "totals") {
		c.Syntax()
		return
	}
	allowed, ok1 := c.intInRange(i+1, 0, ratelimit.Max)
	denied, ok2 := c.intInRange(i+2, 0, ratelimit.Max)
	shadowDenied, ok3 := int64(0), true
	if i+4 == len(c.Args) { // total_shadow_denied, journaled once it is above 0
		shadowDenied, ok3 = c.intInRange(i+3, 0, ratelimit.Max)
	}
	if !ok1 || !ok2 || !ok3 {
		c.Error(ErrNotInt)
		return
	}
	if l.Algo == store.Concurrency {
		l.SetStateLeases(key, leases, allowed, denied, shadowDenied)
	} else {
		l.SetStateShadow(key, tat, entries, allowed, denied, shadowDenied)
	}
	c.Dirty(1)
	if c.Store.Journal != nil {
		c.Emit(-1, c.Args...)
	}
	c.W.OK()
}

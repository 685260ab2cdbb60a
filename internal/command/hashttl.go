package command

import (
	"fmt"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Hash field expiration, Redis 7.4's HEXPIRE family (types.Hash keeps the TTLs). The commands
// are HotKV-only as far as the compatibility tests go: Redis 7.0 has none of them, so their
// replies, errors and metadata follow Redis 7.4's documentation and source.
//
// Expired fields go lazily (hashRead and hashWrite expire a hash's due fields before any hash
// command sees it, store.DB.ExpireFieldsIfDue) and actively (the store's field wheel), each
// journaled as HDEL key field (JournalExpiries); a hash whose fields all expired is deleted.
// HEXPIRE and friends journal HPEXPIREAT key abs-ms FIELDS n field... of the fields whose TTL
// they set, or HDEL of the fields a time in the past deleted; HPERSIST its own arguments.

// hfeMaxMs is the latest field expiry Redis 7.4 accepts (HFE_MAX_ABS_TIME_MSEC: 2^48 - 1
// with two bits reserved, about the year 4199).
const hfeMaxMs = (1<<48 - 1) >> 2

// The per-field replies.
const (
	hfeNoField   = -2 // no such field (or key)
	hfeNoTTL     = -1 // HTTL, HPERSIST: the field has no TTL
	hfeCondition = 0  // HEXPIRE: NX | XX | GT | LT not met
	hfeSet       = 1  // HEXPIRE: set; HPERSIST: removed
	hfeDeleted   = 2  // HEXPIRE: the time is not in the future, so the field went
)

var (
	effHPExpireAt = []byte("HPEXPIREAT")
	effHDel       = []byte("HDEL")
	effFields     = []byte("FIELDS")
)

func hashTTLCommands() []*Command {
	const wf, rf = FlagWrite | FlagDenyOOM | FlagFast, FlagReadOnly | FlagFast
	const perField = "O(N) where N is the number of specified fields"
	const perArg = "O(N) where N is the number of arguments to the command"
	const hfeDoc = "Redis 7.4's hash field expiration (Redis 7.0, the compatibility baseline, has no such command). " +
		"A field's TTL is an absolute time in ms; per field the reply is -2 when the field (or the key) does not exist. " +
		"Expired fields go lazily, before any hash command sees the hash, and actively, in the expiry cycle; each is journaled as HDEL key field, " +
		"and a hash whose fields all expired is deleted; so HLEN, like every hash command, counts live fields only (Redis 7.4's may count expired fields not reclaimed yet). " +
		"HSET and HMSET overwriting a field, and HDEL, clear its TTL; HINCRBY and HINCRBYFLOAT keep it. RENAME, COPY, snapshots and the append-only log keep TTLs. " +
		"A small hash with TTLs reports OBJECT ENCODING listpackex and lists its fields in expiry order, those without a TTL last, as Redis 7.4 does."
	expire := func(name, unit, summary string, relative, seconds bool) *Command {
		return &Command{Name: name, Arity: -6, Flags: wf, ACL: []string{"write", "hash", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRW | KSUpdate), Group: "hash", Since: "7.4.0",
			Syntax: "key " + unit + " [NX | XX | GT | LT] FIELDS numfields field [field ...]", Complexity: perField,
			Summary: summary, Doc: hfeDoc + " Per field: 1 set, 0 when NX, XX, GT or LT is not met (no TTL counts as an infinite one), 2 when a time that is not in the future deleted the field. Journaled as HPEXPIREAT key ms FIELDS n field... of the fields it set, or HDEL of those it deleted.",
			Handler: func(c *Ctx) { hexpireGeneric(c, relative, seconds) }}
	}
	ttl := func(name, summary string, tips []string, ms, abs bool) *Command {
		return &Command{Name: name, Arity: -5, Flags: rf, ACL: []string{"read", "hash", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess), Group: "hash", Since: "7.4.0",
			Syntax: "key FIELDS numfields field [field ...]", Complexity: perArg, Summary: summary, Tips: tips,
			Doc: hfeDoc + " Per field: -1 when it has no TTL; seconds are rounded up.", Handler: func(c *Ctx) { httlGeneric(c, ms, abs) }}
	}
	nondet := []string{"nondeterministic_output"}
	return []*Command{
		expire("hexpire", "seconds", "Set expiry for hash field using relative time to expire (seconds)", true, true),
		expire("hpexpire", "milliseconds", "Set expiry for hash field using relative time to expire (milliseconds)", true, false),
		expire("hexpireat", "unix-time-seconds", "Set expiry for hash field using an absolute Unix timestamp (seconds)", false, true),
		expire("hpexpireat", "unix-time-milliseconds", "Set expiry for hash field using an absolute Unix timestamp (milliseconds)", false, false),
		ttl("httl", "Returns the TTL in seconds of a hash field.", nondet, false, false),
		ttl("hpttl", "Returns the TTL in milliseconds of a hash field.", nondet, true, false),
		ttl("hexpiretime", "Returns the expiration time of a hash field as a Unix timestamp, in seconds.", nil, false, true),
		ttl("hpexpiretime", "Returns the expiration time of a hash field as a Unix timestamp, in msec.", nil, true, true),
		{Name: "hpersist", Arity: -5, Flags: FlagWrite | FlagFast, ACL: []string{"write", "hash", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRW | KSUpdate), Group: "hash", Since: "7.4.0",
			Syntax: "key FIELDS numfields field [field ...]", Complexity: perField,
			Summary: "Removes the expiration time for each specified field", Doc: hfeDoc + " Per field: 1 removed, -1 when it had no TTL.", Handler: hpersistCommand},
	}
}

// hashFields parses "FIELDS numfields field ..." starting at argument at (the FIELDS word) and
// returns the index of the first field, replying Redis 7.4's errors.
func hashFields(c *Ctx, at int) (first, n int, ok bool) {
	if at >= len(c.Args) || !c.ArgIs(at, "fields") {
		c.Error("ERR Mandatory argument FIELDS is missing or not at the right position")
		return 0, 0, false
	}
	num, isInt := int64(0), false
	if at+1 < len(c.Args) {
		num, isInt = resp.ParseInt(c.Args[at+1])
	}
	if !isInt || num < 1 {
		c.Error("ERR Parameter `numFields` should be greater than 0")
		return 0, 0, false
	}
	if num != int64(len(c.Args)-at-2) {
		c.Error("ERR The `numfields` parameter must match the number of arguments")
		return 0, 0, false
	}
	return at + 2, int(num), true
}

// replyAllNoField replies -2 for each of n fields: a missing key holds no field.
func replyAllNoField(c *Ctx, n int) {
	c.W.Array(n)
	for range n {
		c.W.Int(hfeNoField)
	}
}

// hexpireGeneric is HEXPIRE, HPEXPIRE, HEXPIREAT and HPEXPIREAT, checked in Redis 7.4's order:
// the key's type, the time, the condition, then FIELDS.
func hexpireGeneric(c *Ctx, relative, seconds bool) {
	e, h, ok := hashWrite(c, c.Args[1], false)
	if !ok {
		return
	}
	when, ok := c.Int(2)
	if !ok {
		return
	}
	if when < 0 {
		c.Error("ERR invalid expire time, must be >= 0")
		return
	}
	invalid := func() { c.Error(fmt.Sprintf(ErrInvalidExp, c.Cmd.FullName())) }
	if seconds {
		if when > hfeMaxMs/1000 {
			invalid()
			return
		}
		when *= 1000
	}
	base := int64(0)
	if relative {
		base = c.Now
	}
	if when > hfeMaxMs-base {
		invalid()
		return
	}
	when += base
	var nx, xx, gt, lt bool
	fieldsAt := 3
	switch {
	case c.ArgIs(3, "nx"):
		nx = true
	case c.ArgIs(3, "xx"):
		xx = true
	case c.ArgIs(3, "gt"):
		gt = true
	case c.ArgIs(3, "lt"):
		lt = true
	default:
		fieldsAt--
	}
	fieldsAt++
	first, n, ok := hashFields(c, fieldsAt)
	if !ok {
		return
	}
	if h == nil {
		replyAllNoField(c, n)
		return
	}
	past := when <= c.Now
	c.W.Array(n)
	var changed [][]byte
	for _, f := range c.Args[first:] {
		field := argStr(f)
		prev, exists := h.FieldExpiry(field)
		switch {
		case !exists:
			c.W.Int(hfeNoField)
			continue
		case prev == 0 && (xx || gt):
			// No TTL counts as an infinite one: GT never beats it, LT always does.
			c.W.Int(hfeCondition)
			continue
		case prev != 0 && (nx || (gt && prev >= when) || (lt && prev <= when)):
			c.W.Int(hfeCondition)
			continue
		}
		if past {
			h.Delete(field)
			c.W.Int(hfeDeleted)
		} else {
			h.SetFieldExpiry(field, when)
			c.W.Int(hfeSet)
		}
		changed = append(changed, f)
	}
	if len(changed) == 0 {
		return
	}
	c.Dirty(int64(len(changed)))
	if past {
		if h.Len() == 0 {
			c.DB.Remove(e)
		}
		c.Emit(c.DB.ID, append([][]byte{effHDel, c.Args[1]}, changed...)...)
		return
	}
	c.DB.WatchFields(e, when)
	c.Emit(c.DB.ID, append([][]byte{effHPExpireAt, c.Args[1], c.effInt(when), effFields, c.effInt(int64(len(changed)))}, changed...)...)
}

// httlGeneric is HTTL (seconds left, rounded up), HPTTL, HEXPIRETIME and HPEXPIRETIME.
func httlGeneric(c *Ctx, ms, abs bool) {
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	first, n, ok := hashFields(c, 2)
	if !ok {
		return
	}
	if h == nil {
		replyAllNoField(c, n)
		return
	}
	base := c.Now
	if abs {
		base = 0
	}
	c.W.Array(n)
	for _, f := range c.Args[first:] {
		at, exists := h.FieldExpiry(argStr(f))
		switch {
		case !exists:
			c.W.Int(hfeNoField)
		case at == 0:
			c.W.Int(hfeNoTTL)
		case ms:
			c.W.Int(at - base)
		default:
			c.W.Int((at + 999 - base) / 1000)
		}
	}
}

func hpersistCommand(c *Ctx) {
	_, h, ok := hashWrite(c, c.Args[1], false)
	if !ok {
		return
	}
	first, n, ok := hashFields(c, 2)
	if !ok {
		return
	}
	if h == nil {
		replyAllNoField(c, n)
		return
	}
	c.W.Array(n)
	persisted := 0
	for _, f := range c.Args[first:] {
		field := argStr(f)
		at, exists := h.FieldExpiry(field)
		switch {
		case !exists:
			c.W.Int(hfeNoField)
		case at == 0:
			c.W.Int(hfeNoTTL)
		default:
			h.PersistField(field)
			persisted++
			c.W.Int(hfeSet)
		}
	}
	c.Dirty(int64(persisted))
}

// emitKeepFieldTTL journals the TTL a field kept through a rewrite journaled as HSET (which
// would clear it on replay): HPEXPIREAT key at FIELDS 1 field.
func emitKeepFieldTTL(c *Ctx, h *types.Hash, key, field []byte) {
	if at, _ := h.FieldExpiry(argStr(field)); at != 0 {
		c.Emit(c.DB.ID, effHPExpireAt, key, c.effInt(at), effFields, c.effInt(1), field)
	}
}

// expireHashFields makes e's due fields go before a hash command looks at it: it reports false
// when that deleted the key.
func expireHashFields(c *Ctx, e *store.Entry) bool {
	return !c.DB.ExpireFieldsIfDue(e, c.Now)
}

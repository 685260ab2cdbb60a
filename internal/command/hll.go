package command

import (
	"bytes"

	"github.com/hotkv/hotkv/internal/hll"
	"github.com/hotkv/hotkv/internal/store"
)

// HyperLogLog commands. An HLL is a plain string value (TYPE string) in Redis's own format
// (internal/hll), so GET, SET, APPEND and SETRANGE work on it as on any string, DUMP-free
// copies between HotKV and Redis work both ways, and PFCOUNT answers Redis's numbers.

// errNotHLL is Redis's reply for a string that is not an HLL (isHLLObjectOrReply).
const errNotHLL = "WRONGTYPE Key is not a valid HyperLogLog string value."

var (
	effSetRange = []byte("SETRANGE")
	effPFDebug  = []byte("PFDEBUG")
	effToDense  = []byte("TODENSE")
)

func hllCommands() []*Command {
	return []*Command{
		{Name: "pfadd", Arity: -2, Flags: FlagWrite | FlagDenyOOM | FlagFast, ACL: []string{"write", "hyperloglog", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRW | KSInsert),
			Group: "hyperloglog", Since: "2.8.9", Complexity: "O(1) to add every element.",
			Syntax: "key [element [element ...]]", Summary: "Adds the specified elements to the specified HyperLogLog.",
			Handler: pfaddCommand},
		{Name: "pfcount", Arity: -2, Flags: FlagReadOnly | FlagMayReplicate, ACL: []string{"read", "hyperloglog", "slow"},
			FirstKey: 1, LastKey: -1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess, Begin: 1, LastKey: -1, Step: 1,
				Notes: "RW because it may change the internal representation of the key, and propagate to replicas"}},
			Group: "hyperloglog", Since: "2.8.9",
			Complexity: "O(1) with a very small average constant time when called with a single key. O(N) with N being the number of keys, and much bigger constant times, when called with multiple keys.",
			Syntax:     "key [key ...]", Summary: "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
			Doc: "With one key it caches the estimate in the value's header, as Redis does, and journals " +
				"that change as `SETRANGE key 8 <cache bytes>`.",
			Handler: pfcountCommand},
		{Name: "pfmerge", Arity: -2, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "hyperloglog", "slow"},
			FirstKey: 1, LastKey: -1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSInsert, Begin: 1, Step: 1},
				{Flags: KSRO | KSAccess, Begin: 2, LastKey: -1, Step: 1}},
			Group: "hyperloglog", Since: "2.8.9", Complexity: "O(N) to merge N HyperLogLogs, but with high constant times.",
			Syntax: "destkey sourcekey [sourcekey ...]", Summary: "Merge N different HyperLogLogs into a single one.",
			Handler: pfmergeCommand},
		{Name: "pfselftest", Arity: 1, Flags: FlagAdmin, ACL: []string{"hyperloglog", "admin", "slow", "dangerous"},
			Group: "hyperloglog", Since: "2.8.9", Complexity: "N/A",
			Summary: "An internal command for testing HyperLogLog values", Handler: pfselftestCommand},
		{Name: "pfdebug", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagAdmin,
			ACL:      []string{"write", "hyperloglog", "admin", "slow", "dangerous"},
			FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: []KeySpec{{Flags: KSRW | KSAccess, Begin: 2, Step: 1}},
			Group: "hyperloglog", Since: "2.8.9", Complexity: "N/A",
			Syntax: "subcommand key", Summary: "Internal commands for debugging HyperLogLog values",
			Doc:     "Subcommands GETREG, DECODE, ENCODING and TODENSE, as in Redis.",
			Handler: pfdebugCommand},
	}
}

// hllOf returns the HLL bytes of a key's value, made changeable in place (Redis unshares the
// value before it even looks at it: an embstr HLL reports raw afterwards), or replies the
// error: WRONGTYPE for another type, Redis's HLL-specific WRONGTYPE for a string that is not
// an HLL.
func hllOf(c *Ctx, e *store.Entry) ([]byte, bool) {
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return nil, false
	}
	if e.Val.IsInt || !hll.Valid(e.Val.Bytes()) {
		c.Error(errNotHLL)
		return nil, false
	}
	return mutableString(&e.Val), true
}

// hllRead is hllOf for a value only read: it leaves the value as it is.
func hllRead(c *Ctx, e *store.Entry) ([]byte, bool) {
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return nil, false
	}
	b := e.Val.Bytes()
	if e.Val.IsInt || !hll.Valid(b) {
		c.Error(errNotHLL)
		return nil, false
	}
	return b, true
}

// storeHLL keeps b as key's value: in e when the key exists, as a new raw string otherwise
// (Redis creates HLLs with createObject, never embstr).
func storeHLL(c *Ctx, key []byte, e *store.Entry, b []byte) {
	if e != nil {
		e.Val.SetBytes(b)
		return
	}
	v := store.BytesValue(b)
	v.Raw = true
	c.DB.Set(key, v, 0, false, c.Now)
}

// pfaddCommand is PFADD key [element ...]. Its effect is its own arguments when the HLL was
// dense before: dense registers only ever rise to the elements' values, whatever the server's
// settings. A sparse HLL's bytes also depend on hll-sparse-max-bytes (when to turn dense), which
// a replaying server may not share, so a change to a sparse (or new) HLL journals the
// resulting value instead: SET key value KEEPTTL, at most hll-sparse-max-bytes long, or one
// dense value when the command turned it dense.
func pfaddCommand(c *Ctx) {
	key := c.Args[1]
	e := c.Lookup(key)
	var b []byte
	updated := int64(0)
	if e == nil {
		b = hll.New()
		updated++
	} else {
		var ok bool
		if b, ok = hllOf(c, e); !ok {
			return
		}
	}
	sparse := hll.IsSparse(b)
	limit := hll.SparseMaxBytes()
	var err error
	for _, ele := range c.Args[2:] {
		var changed bool
		b, changed, err = hll.Add(b, ele, limit)
		if changed {
			updated++
		}
		if err != nil {
			break
		}
	}
	if updated == 0 {
		storeHLL(c, key, e, b) // the buffer may have moved while making room
		if err != nil {
			c.Error(err.Error())
			return
		}
		c.W.Int(0)
		return
	}
	if err == nil {
		hll.InvalidateCache(b)
	}
	storeHLL(c, key, e, b)
	c.Dirty(updated)
	if updated > 0 {
		c.notify(evString, "pfadd", key)
	}
	if sparse {
		c.emitSet(key, b, 0, e != nil)
	}
	if err != nil {
		// A corrupt sparse HLL found past the first element: the earlier elements' changes
		// stay, as in Redis, and are journaled above.
		c.Error(err.Error())
		return
	}
	c.W.Int(1)
}

// pfcountCommand is PFCOUNT key [key ...]. With one key it returns the cached estimate, or
// computes it and caches it in the value's header, which changes the string: that change is
// journaled as SETRANGE key 8 <the 8 cache bytes>, which needs no HLL code to replay and is
// the whole change (Redis propagates PFCOUNT itself for it). With several keys it estimates
// their union in a scratch register array and changes nothing.
func pfcountCommand(c *Ctx) {
	if len(c.Args) > 2 {
		var regs [hll.Registers]uint8
		for _, key := range c.Args[1:] {
			e := c.LookupRead(key)
			if e == nil {
				continue // a missing key is an empty HLL
			}
			b, ok := hllRead(c, e)
			if !ok {
				return
			}
			if err := hll.Merge(&regs, b); err != nil {
				c.Error(err.Error())
				return
			}
		}
		c.W.Int(int64(hll.CountRegisters(&regs)))
		return
	}
	key := c.Args[1]
	e := c.LookupRead(key)
	if e == nil {
		c.W.Int(0)
		return
	}
	b, ok := hllOf(c, e)
	if !ok {
		return
	}
	if card, valid := hll.Cached(b); valid {
		c.W.Int(int64(card))
		return
	}
	card, err := hll.Count(b)
	if err != nil {
		c.Error(err.Error())
		return
	}
	hll.SetCached(b, card)
	c.Dirty(1)
	if c.Store.Journal != nil {
		c.Emit(c.DB.ID, effSetRange, key, c.effInt(8), b[8:16])
	}
	c.W.Int(int64(card))
}

// pfmergeCommand is PFMERGE destkey [sourcekey ...] with Redis 7.0's semantics: the
// destination is one of the inputs, a missing key is an empty HLL, the result is dense when
// any input is dense and is otherwise built by sparse updates (turning dense only as PFADD
// would), and the command always counts as a change, even when nothing rose. Its effect is
// its arguments when the result came out of dense updates only; otherwise, as for PFADD, the
// resulting value (SET destkey value KEEPTTL), since sparse updates depend on
// hll-sparse-max-bytes.
func pfmergeCommand(c *Ctx) {
	var regs [hll.Registers]uint8
	useDense := false
	for _, key := range c.Args[1:] {
		e := c.LookupRead(key)
		if e == nil {
			continue
		}
		b, ok := hllRead(c, e)
		if !ok {
			return
		}
		if !hll.IsSparse(b) {
			useDense = true
		}
		if err := hll.Merge(&regs, b); err != nil {
			c.Error(err.Error())
			return
		}
	}
	dst := c.Args[1]
	e := c.Lookup(dst)
	var b []byte
	if e == nil {
		b = hll.New()
	} else {
		b = mutableString(&e.Val) // checked as an input above
	}
	wasDense := !hll.IsSparse(b)
	if useDense {
		var err error
		if b, err = hll.ToDense(b); err != nil {
			c.Error(err.Error())
			return
		}
	}
	limit := hll.SparseMaxBytes()
	for i, v := range regs {
		if v != 0 {
			b, _, _ = hll.Set(b, i, v, limit) // the destination was validated as an input
		}
	}
	hll.InvalidateCache(b)
	storeHLL(c, dst, e, b)
	c.Dirty(1)
	c.notify(evString, "pfadd", dst) // Redis names PFMERGE's event so too
	if !useDense && !wasDense {
		c.emitSet(dst, b, 0, e != nil)
	}
	c.W.OK()
}

func pfselftestCommand(c *Ctx) {
	if err := hll.SelfTest(hll.SparseMaxBytes()); err != nil {
		c.Error(err.Error())
		return
	}
	c.W.OK()
}

// pfdebugCommand is PFDEBUG GETREG|DECODE|ENCODING|TODENSE key. GETREG and TODENSE turn a
// sparse HLL dense; both journal that as PFDEBUG TODENSE key.
func pfdebugCommand(c *Ctx) {
	sub, key := c.Args[1], c.Args[2]
	e := c.Lookup(key)
	if e == nil {
		c.Error("ERR The specified key does not exist")
		return
	}
	b, ok := hllOf(c, e)
	if !ok {
		return
	}
	toDense := func() bool {
		if !hll.IsSparse(b) {
			return false
		}
		d, err := hll.ToDense(b)
		if err != nil {
			c.Error(err.Error())
			return false
		}
		b = d
		e.Val.SetBytes(b)
		c.Dirty(1)
		if c.Store.Journal != nil {
			c.Emit(c.DB.ID, effPFDebug, effToDense, key)
		}
		return true
	}
	switch {
	case EqualFold(sub, "getreg"):
		if toDense(); c.failed {
			return
		}
		regs := hll.RegisterValues(b)
		c.W.Array(len(regs))
		for _, v := range regs {
			c.W.Int(int64(v))
		}
	case EqualFold(sub, "decode"):
		if !hll.IsSparse(b) {
			c.Error("ERR HLL encoding is not sparse")
			return
		}
		c.W.BulkString(hll.Decode(b))
	case EqualFold(sub, "encoding"):
		if hll.IsSparse(b) {
			c.W.Simple("sparse")
		} else {
			c.W.Simple("dense")
		}
	case EqualFold(sub, "todense"):
		converted := toDense()
		if c.failed {
			return
		}
		if converted {
			c.W.Int(1)
		} else {
			c.W.Int(0)
		}
	default:
		// Redis formats the name with %s: it ends at a NUL byte.
		if i := bytes.IndexByte(sub, 0); i >= 0 {
			sub = sub[:i]
		}
		c.Error("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'")
	}
}

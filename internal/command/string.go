package command

import (
	"math"
	"math/big"
	"slices"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// oneKey is the key spec of a command whose only key is its first argument. Each row gets its
// own slice, as the table promises fresh rows.
func oneKey(flags KeySpecFlag) []KeySpec { return []KeySpec{{Flags: flags, Begin: 1, Step: 1}} }

func stringCommands() []*Command {
	incrRow := func(name string, arity int, since, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagWrite | FlagDenyOOM | FlagFast,
			ACL: []string{"write", "string", "fast"}, FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRW | KSAccess | KSUpdate),
			Group: "string", Since: since, Complexity: "O(1)", Syntax: syntax, Summary: summary, Handler: h}
	}
	getrange := func(name, since string) *Command {
		return &Command{Name: name, Arity: 4, Flags: FlagReadOnly, ACL: []string{"read", "string", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess), Group: "string", Since: since,
			Complexity: "O(N) where N is the length of the returned string. The complexity is ultimately determined by the returned length, but because creating a substring from an existing string is very cheap, it can be considered O(1) for small strings.",
			Syntax:     "key start end", Summary: "Get a substring of the string stored at a key", Handler: getrangeCommand}
	}
	substr := getrange("substr", "1.0.0")
	substr.Doc = "Deprecated since 2.0.0: use GETRANGE."
	incrbyfloat := incrRow("incrbyfloat", 3, "2.6.0", "key increment", "Increment the float value of a key by the given amount", incrbyfloatCommand)
	incrbyfloat.Doc = "The sum is computed as Redis computes it on x86-64, in 80-bit extended precision, and " +
		"stored as text with 17 decimals and trailing zeros removed, so `0.1 + 0.2` is `0.3`."

	return []*Command{
		{Name: "get", Arity: 2, Flags: FlagReadOnly | FlagFast, ACL: []string{"read", "string", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess),
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Syntax: "key",
			Summary: "Get the value of a key", Handler: getCommand},
		{Name: "set", Arity: -3, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "string", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSUpdate | KSVariableFlags, Begin: 1, Step: 1,
				Notes: "RW and ACCESS due to the optional `GET` argument"}},
			KeyFlags: setKeyFlags,
			Group:    "string", Since: "1.0.0", Complexity: "O(1)",
			Syntax:  "key value [NX | XX] [GET] [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | KEEPTTL]",
			Summary: "Set the string value of a key", Handler: setCommand},
		{Name: "setnx", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, ACL: []string{"write", "string", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: []KeySpec{{Flags: KSOW | KSInsert, Begin: 1, Step: 1}},
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Syntax: "key value",
			Summary: "Set the value of a key, only if the key does not exist", Handler: setnxCommand},
		{Name: "setex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "string", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSOW | KSUpdate),
			Group: "string", Since: "2.0.0", Complexity: "O(1)", Syntax: "key seconds value",
			Summary: "Set the value and expiration of a key", Handler: setexCommand},
		{Name: "psetex", Arity: 4, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "string", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSOW | KSUpdate),
			Group: "string", Since: "2.6.0", Complexity: "O(1)", Syntax: "key milliseconds value",
			Summary: "Set the value and expiration in milliseconds of a key", Handler: psetexCommand},
		{Name: "getset", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, ACL: []string{"write", "string", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRW | KSAccess | KSUpdate),
			Group: "string", Since: "1.0.0", Complexity: "O(1)", Syntax: "key value",
			Summary: "Set the string value of a key and return its old value",
			Doc:     "Deprecated since 6.2.0: use SET with the GET argument.", Handler: getsetCommand},
		{Name: "getdel", Arity: 2, Flags: FlagWrite | FlagFast, ACL: []string{"write", "string", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, Step: 1}},
			Group: "string", Since: "6.2.0", Complexity: "O(1)", Syntax: "key",
			Summary: "Get the value of a key and delete the key", Handler: getdelCommand},
		{Name: "getex", Arity: -2, Flags: FlagWrite | FlagFast, ACL: []string{"write", "string", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSUpdate, Begin: 1, Step: 1,
				Notes: "RW and UPDATE because it changes the TTL"}},
			Group: "string", Since: "6.2.0", Complexity: "O(1)",
			Syntax:  "key [EX seconds | PX milliseconds | EXAT unix-time-seconds | PXAT unix-time-milliseconds | PERSIST]",
			Summary: "Get the value of a key and optionally set its expiration", Handler: getexCommand},
		{Name: "mget", Arity: -2, Flags: FlagReadOnly | FlagFast, ACL: []string{"read", "string", "fast"},
			FirstKey: 1, LastKey: -1, Step: 1, KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, LastKey: -1, Step: 1}},
			Group: "string", Since: "1.0.0", Complexity: "O(N) where N is the number of keys to retrieve.",
			Syntax: "key [key ...]", Summary: "Get the values of all the given keys",
			Tips: []string{"request_policy:multi_shard"}, Handler: mgetCommand},
		{Name: "mset", Arity: -3, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "string", "slow"},
			FirstKey: 1, LastKey: -1, Step: 2, KeySpecs: []KeySpec{{Flags: KSOW | KSUpdate, Begin: 1, LastKey: -1, Step: 2}},
			Group: "string", Since: "1.0.1", Complexity: "O(N) where N is the number of keys to set.",
			Syntax: "key value [key value ...]", Summary: "Set multiple keys to multiple values",
			Tips: []string{"request_policy:multi_shard", "response_policy:all_succeeded"}, Handler: msetCommand},
		{Name: "msetnx", Arity: -3, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "string", "slow"},
			FirstKey: 1, LastKey: -1, Step: 2, KeySpecs: []KeySpec{{Flags: KSOW | KSInsert, Begin: 1, LastKey: -1, Step: 2}},
			Group: "string", Since: "1.0.1", Complexity: "O(N) where N is the number of keys to set.",
			Syntax: "key value [key value ...]", Summary: "Set multiple keys to multiple values, only if none of the keys exist",
			Tips: []string{"request_policy:multi_shard", "response_policy:agg_min"}, Handler: msetnxCommand},
		{Name: "append", Arity: 3, Flags: FlagWrite | FlagDenyOOM | FlagFast, ACL: []string{"write", "string", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: []KeySpec{{Flags: KSRW | KSInsert, Begin: 1, Step: 1}},
			Group: "string", Since: "2.0.0",
			Complexity: "O(1). The amortized time complexity is O(1) assuming the appended value is small and the already present value is of any size, since the dynamic string library used by Redis will double the free space available on every reallocation.",
			Syntax:     "key value", Summary: "Append a value to a key", Handler: appendCommand},
		{Name: "strlen", Arity: 2, Flags: FlagReadOnly | FlagFast, ACL: []string{"read", "string", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO),
			Group: "string", Since: "2.2.0", Complexity: "O(1)", Syntax: "key",
			Summary: "Get the length of the value stored in a key", Handler: strlenCommand},
		getrange("getrange", "2.4.0"),
		substr,
		{Name: "setrange", Arity: 4, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "string", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: []KeySpec{{Flags: KSRW | KSUpdate, Begin: 1, Step: 1}},
			Group: "string", Since: "2.2.0",
			Complexity: "O(1), not counting the time taken to copy the new string in place. Usually, this string is very small so the amortized complexity is O(1). Otherwise, complexity is O(M) with M being the length of the value argument.",
			Syntax:     "key offset value", Summary: "Overwrite part of a string at key starting at the specified offset",
			Handler: setrangeCommand},
		incrRow("incr", 2, "1.0.0", "key", "Increment the integer value of a key by one", incrCommand),
		incrRow("decr", 2, "1.0.0", "key", "Decrement the integer value of a key by one", decrCommand),
		incrRow("incrby", 3, "1.0.0", "key increment", "Increment the integer value of a key by the given amount", incrbyCommand),
		incrRow("decrby", 3, "1.0.0", "key decrement", "Decrement the integer value of a key by the given number", decrbyCommand),
		incrbyfloat,
		{Name: "lcs", Arity: -3, Flags: FlagReadOnly, ACL: []string{"read", "string", "slow"},
			FirstKey: 1, LastKey: 2, Step: 1, KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, LastKey: 1, Step: 1}},
			Group: "string", Since: "7.0.0", Complexity: "O(N*M) where N and M are the lengths of s1 and s2, respectively",
			Syntax:  "key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]",
			Summary: "Find longest common substring", Handler: lcsCommand},
	}
}

// setKeyFlags is Redis's setGetKeys: SET reads its key only with GET.
func setKeyFlags(args [][]byte) KeySpecFlag {
	for _, a := range args[min(3, len(args)):] {
		if EqualFold(a, "get") {
			return KSRW | KSAccess | KSUpdate
		}
	}
	return KSOW | KSUpdate
}

func getCommand(c *Ctx) {
	e := c.LookupRead(c.Args[1])
	if e == nil {
		c.W.Null()
		return
	}
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return
	}
	ReplyString(c.W, &e.Val)
}

// SET option bits, as Redis's OBJ_SET_* flags.
const (
	setNX = 1 << iota
	setXX
	setGet
	setEX
	setPX
	setEXAT
	setPXAT
	setKeepTTL
	setPersist // GETEX PERSIST

	setUnits = setEX | setPX | setEXAT | setPXAT
)

// parseExpireOptions reads SET/GETEX-style options from args[from:], with the exact rules of
// Redis's parseExtendedStringArgumentsOrReply: a unit may repeat (the last one wins) but not
// mix with another unit, KEEPTTL or PERSIST. allowed limits which options the command takes.
// It returns the flags and the index of the expire time argument (0 for none), which
// expireAtArg converts; on failure it has replied.
func parseExpireOptions(c *Ctx, from int, allowed int) (flags, expireArg int, ok bool) {
	for i := from; i < len(c.Args); i++ {
		a := c.Args[i]
		next := i+1 < len(c.Args)
		var unit int
		switch {
		case EqualFold(a, "ex"):
			unit = setEX
		case EqualFold(a, "px"):
			unit = setPX
		case EqualFold(a, "exat"):
			unit = setEXAT
		case EqualFold(a, "pxat"):
			unit = setPXAT
		}
		switch {
		case allowed&setNX != 0 && EqualFold(a, "nx") && flags&setXX == 0:
			flags |= setNX
		case allowed&setXX != 0 && EqualFold(a, "xx") && flags&setNX == 0:
			flags |= setXX
		case allowed&setGet != 0 && EqualFold(a, "get"):
			flags |= setGet
		case allowed&setKeepTTL != 0 && EqualFold(a, "keepttl") && flags&(setUnits|setPersist) == 0:
			flags |= setKeepTTL
		case allowed&setPersist != 0 && EqualFold(a, "persist") && flags&(setUnits|setKeepTTL) == 0:
			flags |= setPersist
		case unit != 0 && next && flags&(setUnits&^unit|setKeepTTL|setPersist) == 0:
			flags |= unit
			i++
			expireArg = i
		default:
			c.Syntax()
			return 0, 0, false
		}
	}
	return flags, expireArg, true
}

// expireAtArg converts the expire argument at i, in the unit flags names, to an absolute Unix
// time in ms, as Redis's getExpireMillisecondsOrReply does (including its overflow checks).
// On failure it has replied.
func expireAtArg(c *Ctx, i int, flags int) (int64, bool) {
	n, ok := c.Int(i)
	if !ok {
		return 0, false
	}
	if n <= 0 || (flags&(setEX|setEXAT) != 0 && n > math.MaxInt64/1000) {
		c.Error("ERR invalid expire time in '" + c.Cmd.FullName() + "' command")
		return 0, false
	}
	if flags&(setEX|setEXAT) != 0 {
		n *= 1000
	}
	if flags&(setEX|setPX) != 0 {
		n += c.Now // wraps on overflow, caught below as in Redis
	}
	if n <= 0 {
		c.Error("ERR invalid expire time in '" + c.Cmd.FullName() + "' command")
		return 0, false
	}
	return n, true
}

func setCommand(c *Ctx) {
	flags, expArg, ok := parseExpireOptions(c, 3, setNX|setXX|setGet|setUnits|setKeepTTL)
	if !ok {
		return
	}
	var expireAt int64
	if expArg != 0 {
		if expireAt, ok = expireAtArg(c, expArg, flags); !ok {
			return
		}
	}
	key := c.Args[1]
	var e *store.Entry
	if flags&setGet != 0 {
		e = c.LookupRead(key)
		switch {
		case e == nil:
			c.W.Null()
		case e.Val.Kind != store.KindString:
			c.WrongType()
			return
		default:
			ReplyString(c.W, &e.Val)
		}
	} else {
		e = c.Lookup(key)
	}
	if (flags&setNX != 0 && e != nil) || (flags&setXX != 0 && e == nil) {
		if flags&setGet == 0 {
			c.W.Null()
		}
		return
	}
	c.DB.Set(key, overwriteString(e, c.Args[2]), expireAt, flags&setKeepTTL != 0, c.Now)
	c.Dirty(1)
	c.notify(evString, "set", key)
	if expArg != 0 {
		c.notify(evGeneric, "expire", key)
	}
	if c.Store.Journal != nil {
		if expireAt != 0 && expireAt < c.Now {
			// An absolute time already past stores an expired key: logically the key is gone,
			// and journaling it so keeps replay independent of the replaying clock (and of
			// when this server reclaims the key, which journals another, harmless, DEL).
			if e != nil {
				c.emitDel(key)
			} else {
				c.skipEffect()
			}
		} else {
			c.emitSet(key, c.Args[2], expireAt, flags&setKeepTTL != 0 && e != nil)
		}
	}
	if flags&setGet == 0 {
		c.W.OK()
	}
}

func setnxCommand(c *Ctx) {
	if c.Lookup(c.Args[1]) != nil {
		c.W.Int(0)
		return
	}
	c.DB.Set(c.Args[1], StringValue(c.Args[2]), 0, false, c.Now)
	c.Dirty(1)
	c.notify(evString, "set", c.Args[1])
	c.emitSet(c.Args[1], c.Args[2], 0, false)
	c.W.Int(1)
}

func setexCommand(c *Ctx)  { setWithExpire(c, setEX) }
func psetexCommand(c *Ctx) { setWithExpire(c, setPX) }

// setWithExpire is SETEX and PSETEX: "key ttl value".
func setWithExpire(c *Ctx, unit int) {
	at, ok := expireAtArg(c, 2, unit)
	if !ok {
		return
	}
	c.DB.Set(c.Args[1], StringValue(c.Args[3]), at, false, c.Now)
	c.Dirty(1)
	c.notify(evString, "set", c.Args[1])
	c.notify(evGeneric, "expire", c.Args[1])
	c.emitSet(c.Args[1], c.Args[3], at, false)
	c.W.OK()
}

// lookupStringRead finds a string key for a reading reply: it replies null and returns nil
// when the key is missing, and replies WRONGTYPE and returns nil for another type.
func lookupStringRead(c *Ctx, key []byte) *store.Entry {
	e := c.LookupRead(key)
	if e == nil {
		c.W.Null()
		return nil
	}
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return nil
	}
	return e
}

func getsetCommand(c *Ctx) {
	key := c.Args[1]
	e := c.LookupRead(key)
	switch {
	case e == nil:
		c.W.Null()
	case e.Val.Kind != store.KindString:
		c.WrongType()
		return
	default:
		ReplyString(c.W, &e.Val)
	}
	c.DB.Set(key, StringValue(c.Args[2]), 0, false, c.Now)
	c.Dirty(1)
	c.notify(evString, "set", key)
}

func getdelCommand(c *Ctx) {
	e := lookupStringRead(c, c.Args[1])
	if e == nil {
		return
	}
	ReplyString(c.W, &e.Val)
	c.DB.Remove(e)
	c.Dirty(1)
	c.notify(evGeneric, "del", c.Args[1])
	c.emitDel(c.Args[1])
}

// getexCommand follows Redis's order: options are parsed first, but the expire time is only
// validated once the key is known to exist and hold a string.
func getexCommand(c *Ctx) {
	flags, expArg, ok := parseExpireOptions(c, 2, setUnits|setPersist)
	if !ok {
		return
	}
	e := lookupStringRead(c, c.Args[1])
	if e == nil {
		return
	}
	var at int64
	if expArg != 0 {
		if at, ok = expireAtArg(c, expArg, flags); !ok {
			return
		}
	}
	ReplyString(c.W, &e.Val)
	// Never journaled as GETEX: as PEXPIREAT, DEL or PERSIST, as Redis propagates it.
	switch {
	case flags&(setEXAT|setPXAT) != 0 && at <= c.Now:
		c.DB.Remove(e)
		c.Dirty(1)
		c.notify(evGeneric, "del", c.Args[1])
		c.emitDel(c.Args[1])
	case expArg != 0:
		c.DB.SetExpire(e, at)
		c.Dirty(1)
		c.notify(evGeneric, "expire", c.Args[1])
		c.emitExpireAt(c.Args[1], at)
	case flags&setPersist != 0 && e.ExpireAt() != 0:
		c.DB.SetExpire(e, 0)
		c.Dirty(1)
		c.notify(evGeneric, "persist", c.Args[1])
		if c.Store.Journal != nil {
			c.Emit(c.DB.ID, effPersist, c.Args[1])
		}
	}
}

func mgetCommand(c *Ctx) {
	c.W.Array(len(c.Args) - 1)
	for _, k := range c.Args[1:] {
		e := c.LookupRead(k)
		if e == nil || e.Val.Kind != store.KindString {
			c.W.Null()
			continue
		}
		ReplyString(c.W, &e.Val)
	}
}

func msetCommand(c *Ctx)   { msetGeneric(c, false) }
func msetnxCommand(c *Ctx) { msetGeneric(c, true) }

func msetGeneric(c *Ctx, nx bool) {
	if len(c.Args)%2 == 0 {
		c.ArityError()
		return
	}
	if nx {
		for i := 1; i < len(c.Args); i += 2 {
			if c.Lookup(c.Args[i]) != nil {
				c.W.Int(0)
				return
			}
		}
	}
	for i := 1; i < len(c.Args); i += 2 {
		c.DB.Set(c.Args[i], StringValue(c.Args[i+1]), 0, false, c.Now)
		c.notify(evString, "set", c.Args[i])
	}
	c.Dirty(int64(len(c.Args)-1) / 2)
	if nx && c.Store.Journal != nil {
		// The keys were all absent: the effective write is a plain MSET.
		args := make([][]byte, 0, len(c.Args))
		c.Emit(c.DB.ID, append(append(args, effMSet), c.Args[1:]...)...)
	}
	if nx {
		c.W.Int(1)
	} else {
		c.W.OK()
	}
}

// maxBulkLen is proto-max-bulk-len, the largest string a command may build.
func maxBulkLen(c *Ctx) int64 {
	if c.Srv == nil {
		return 512 << 20
	}
	return c.Srv.ProtoMaxBulkLen()
}

// checkStringLength is Redis's checkStringLength: a string of size bytes may grow by add only
// within proto-max-bulk-len. It replies the error itself.
func checkStringLength(c *Ctx, size, add int64) bool {
	total := int64(uint64(size) + uint64(add))
	if total > maxBulkLen(c) || total < size || total < add {
		c.Error(ErrStringLimit)
		return false
	}
	return true
}

// mutableString turns v into a byte string that the shard's lock holder may change in place
// (Redis's dbUnshareStringValue): an integer-encoded value becomes its decimal digits.
func mutableString(v *store.Value) []byte {
	if v.IsInt {
		v.SetBytes(appendInt(make([]byte, 0, 24), v.Int))
	}
	v.Raw = true
	return v.Bytes()
}

// growZero extends b to n bytes, the new bytes zero, as Redis's sdsgrowzero.
func growZero(b []byte, n int) []byte {
	if n <= len(b) {
		return b
	}
	old := len(b)
	b = slices.Grow(b, n-old)[:n]
	clear(b[old:])
	return b
}

func appendCommand(c *Ctx) {
	key, add := c.Args[1], c.Args[2]
	e := c.Lookup(key)
	if e == nil {
		c.DB.Set(key, StringValue(add), 0, false, c.Now)
		c.Dirty(1)
		c.notify(evString, "append", key)
		c.W.Int(int64(len(add)))
		return
	}
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return
	}
	if !checkStringLength(c, int64(StringLen(&e.Val)), int64(len(add))) {
		return
	}
	// The TTL stays: the entry is changed in place, never re-set.
	e.Val.SetBytes(append(mutableString(&e.Val), add...))
	c.Dirty(1)
	c.notify(evString, "append", key)
	c.W.Int(int64(len(e.Val.Bytes())))
}

func strlenCommand(c *Ctx) {
	e := c.LookupRead(c.Args[1])
	if e == nil {
		c.W.Int(0)
		return
	}
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return
	}
	c.W.Int(int64(StringLen(&e.Val)))
}

func getrangeCommand(c *Ctx) {
	start, ok := c.Int(2)
	if !ok {
		return
	}
	end, ok := c.Int(3)
	if !ok {
		return
	}
	e := c.LookupRead(c.Args[1])
	if e == nil {
		c.W.BulkString("")
		return
	}
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return
	}
	var tmp [24]byte
	s := StringBytes(&e.Val, tmp[:])
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		c.W.BulkString("")
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		c.W.BulkString("")
		return
	}
	c.W.Bulk(s[start : end+1])
}

func setrangeCommand(c *Ctx) {
	offset, ok := c.Int(2)
	if !ok {
		return
	}
	if offset < 0 {
		c.Error("ERR offset is out of range")
		return
	}
	key, val := c.Args[1], c.Args[3]
	e := c.Lookup(key)
	if e == nil {
		if len(val) == 0 {
			c.W.Int(0)
			return
		}
		if !checkStringLength(c, offset, int64(len(val))) {
			return
		}
		b := make([]byte, int(offset)+len(val))
		copy(b[offset:], val)
		v := store.BytesValue(b)
		v.Raw = true // Redis builds it with createObject: raw, never embstr
		c.DB.Set(key, v, 0, false, c.Now)
		c.Dirty(1)
		c.notify(evString, "setrange", key)
		c.W.Int(int64(len(b)))
		return
	}
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return
	}
	if len(val) == 0 {
		c.W.Int(int64(StringLen(&e.Val)))
		return
	}
	if !checkStringLength(c, offset, int64(len(val))) {
		return
	}
	b := mutableString(&e.Val)
	b = growZero(b, max(len(b), int(offset)+len(val)))
	copy(b[offset:], val)
	e.Val.SetBytes(b)
	c.Dirty(1)
	c.notify(evString, "setrange", key)
	c.W.Int(int64(len(b)))
}

func incrCommand(c *Ctx) { incrDecr(c, 1) }
func decrCommand(c *Ctx) { incrDecr(c, -1) }

func incrbyCommand(c *Ctx) {
	if n, ok := c.Int(2); ok {
		incrDecr(c, n)
	}
}

func decrbyCommand(c *Ctx) {
	n, ok := c.Int(2)
	if !ok {
		return
	}
	if n == math.MinInt64 { // -n would overflow
		c.Error("ERR decrement would overflow")
		return
	}
	incrDecr(c, -n)
}

// incrDecr is the one body of INCR, DECR, INCRBY and DECRBY, as Redis's incrDecrCommand. An
// integer-encoded value is updated in place, so the common case allocates nothing; the TTL is
// kept because the entry is changed, not re-set.
func incrDecr(c *Ctx, incr int64) {
	key := c.Args[1]
	e := c.Lookup(key)
	var old int64
	if e != nil {
		if e.Val.Kind != store.KindString {
			c.WrongType()
			return
		}
		if e.Val.IsInt {
			old = e.Val.Int
		} else {
			v, ok := resp.ParseInt(e.Val.Bytes())
			if !ok {
				c.Error(ErrNotInt)
				return
			}
			old = v
		}
	}
	if (incr < 0 && old < 0 && incr < math.MinInt64-old) || (incr > 0 && old > 0 && incr > math.MaxInt64-old) {
		c.Error(ErrOverflow)
		return
	}
	v := old + incr
	switch {
	case e == nil:
		c.DB.Set(key, IntValue(v), 0, false, c.Now)
	case e.Val.IsInt:
		e.Val.Int = v
	default:
		e.Val = IntValue(v)
	}
	c.Dirty(1)
	c.notify(evString, "incrby", key)
	c.W.Int(v)
}

func incrbyfloatCommand(c *Ctx) {
	key := c.Args[1]
	e := c.Lookup(key)
	var value *big.Float
	if e == nil {
		value = newLD()
	} else {
		if e.Val.Kind != store.KindString {
			c.WrongType()
			return
		}
		if e.Val.IsInt {
			value = newLD().SetInt64(e.Val.Int)
		} else {
			var ok bool
			if value, ok = parseLongDouble(e.Val.Bytes()); !ok {
				c.Error(ErrNotFloat)
				return
			}
		}
	}
	incr, ok := parseLongDouble(c.Args[2])
	if !ok {
		c.Error(ErrNotFloat)
		return
	}
	if value.IsInf() || incr.IsInf() {
		c.Error("ERR increment would produce NaN or Infinity")
		return
	}
	value.Add(value, incr)
	if value.Sign() != 0 && value.MantExp(nil) > ldMaxExp {
		c.Error("ERR increment would produce NaN or Infinity")
		return
	}
	b := formatLongDoubleHuman(value)
	v := store.BytesValue(b)
	if e == nil {
		c.DB.Set(key, v, 0, false, c.Now)
	} else {
		e.Val = v // keeps the TTL, as Redis's dbOverwrite
	}
	c.Dirty(1)
	c.notify(evString, "incrbyfloat", key)
	// Journaled as the result, not the increment: replaying float arithmetic is not worth
	// trusting across builds, and Redis propagates it the same way.
	c.emitSet(key, b, 0, true)
	c.W.Bulk(b)
}

// Redis keeps INCRBYFLOAT's arithmetic in C's long double, which on x86-64 is the x87 80-bit
// extended format: a 64-bit significand and a 15-bit exponent. Go has no such type and
// float64 gives different digits (0.1+0.2 is "0.3" in Redis, 0.30000000000000004 in float64),
// so HotKV emulates it with big.Float at 64 bits of precision, rounding to nearest even, and
// checks the exponent range by hand. Subnormals keep 64 bits instead of losing precision; the
// difference cannot show, because results are printed with 17 decimals.
const (
	ldPrec     = 64
	ldMaxExp   = 16384    // |x| < 2^16384, or it is infinite
	ldMaxChars = 5 * 1024 // Redis's MAX_LONG_DOUBLE_CHARS: longer input is not a float
)

// ldHalfMinSubnormal is 2^-16446, half the smallest subnormal: strtold rounds anything not
// above it to zero and reports ERANGE, which Redis rejects.
var ldHalfMinSubnormal = new(big.Float).SetMantExp(big.NewFloat(0.5), -16445)

func newLD() *big.Float { return new(big.Float).SetPrec(ldPrec) }

// parseLongDouble is Redis's string2ld: strtold over the whole input, which must be non-empty,
// shorter than 5 KiB and not start with a space; "inf" and "infinity" are accepted, NaN and
// results that overflow or underflow to zero are not. Decimal and hexadecimal ("0x1.8p3")
// forms are rounded correctly to the 64-bit significand, as glibc does.
func parseLongDouble(s []byte) (*big.Float, bool) {
	if len(s) == 0 || len(s) >= ldMaxChars {
		return nil, false
	}
	neg := false
	if s[0] == '+' || s[0] == '-' {
		neg = s[0] == '-'
		s = s[1:]
	}
	f := newLD()
	switch {
	case EqualFold(s, "inf") || EqualFold(s, "infinity"):
		return f.SetInf(neg), true
	case len(s) >= 2 && s[0] == '0' && s[1]|0x20 == 'x':
		if !parseHexFloat(f, s[2:]) {
			return nil, false
		}
	default:
		if !parseDecFloat(f, s) {
			return nil, false
		}
	}
	if neg {
		f.Neg(f)
	}
	if f.Sign() != 0 {
		if f.MantExp(nil) > ldMaxExp || new(big.Float).Abs(f).Cmp(ldHalfMinSubnormal) <= 0 {
			return nil, false
		}
	}
	return f, true
}

// scanMantissa reads digits (hex when hex is set) with at most one '.', returning them without
// the point, how many came after it, and where it stopped.
func scanMantissa(s []byte, hex bool) (digits []byte, frac, end int) {
	dot := false
	for end = 0; end < len(s); end++ {
		ch := s[end]
		switch {
		case ch >= '0' && ch <= '9', hex && (ch|0x20 >= 'a' && ch|0x20 <= 'f'):
			digits = append(digits, ch)
			if dot {
				frac++
			}
		case ch == '.' && !dot:
			dot = true
		default:
			return digits, frac, end
		}
	}
	return digits, frac, end
}

// scanExponent reads "[+-]digits" at s, saturating far beyond any exponent that matters; ok is
// false when there are no digits (strtold then stops before the exponent letter).
func scanExponent(s []byte) (exp int64, ok bool) {
	i, neg := 0, false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	if i == len(s) {
		return 0, false
	}
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		if exp < 1e9 {
			exp = exp*10 + int64(s[i]-'0')
		}
	}
	if neg {
		exp = -exp
	}
	return exp, true
}

// scanFloatParts splits a decimal (or, with hex, hexadecimal) number into its mantissa digits,
// how many of them follow the point, and the exponent after its marker ('e', or 'p' for hex).
func scanFloatParts(s []byte, hex bool) (digits []byte, frac int, exp int64, ok bool) {
	digits, frac, end := scanMantissa(s, hex)
	if len(digits) == 0 {
		return nil, 0, 0, false
	}
	if end < len(s) {
		marker := byte('e')
		if hex {
			marker = 'p'
		}
		if s[end]|0x20 != marker {
			return nil, 0, 0, false
		}
		if exp, ok = scanExponent(s[end+1:]); !ok {
			return nil, 0, 0, false
		}
	}
	return digits, frac, exp, true
}

// parseDecFloat sets f to the decimal number s ("12.5e-3"), correctly rounded.
func parseDecFloat(f *big.Float, s []byte) bool {
	digits, frac, exp, ok := scanFloatParts(s, false)
	if !ok {
		return false
	}
	for len(digits) > 0 && digits[0] == '0' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		f.SetInt64(0)
		return true
	}
	exp -= int64(frac)
	// The value lies in [10^(mag-1), 10^mag); the long double range is about 3.6e-4951 to
	// 1.2e4932. Far outside it the exact arithmetic below would be needlessly huge.
	if mag := int64(len(digits)) + exp; mag > 4940 || mag < -4960 {
		return false
	}
	m, _ := new(big.Int).SetString(string(digits), 10)
	if exp >= 0 {
		m.Mul(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(exp), nil))
		f.SetInt(m)
		return true
	}
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(-exp), nil)
	f.Quo(new(big.Float).SetInt(m), new(big.Float).SetInt(den))
	return true
}

// parseHexFloat sets f to the hexadecimal number s (after "0x": "1.8p3"), correctly rounded.
func parseHexFloat(f *big.Float, s []byte) bool {
	digits, frac, exp, ok := scanFloatParts(s, true)
	if !ok {
		return false
	}
	m, _ := new(big.Int).SetString(string(digits), 16)
	if m.Sign() == 0 {
		f.SetInt64(0)
		return true
	}
	exp -= 4 * int64(frac)
	if mag := int64(m.BitLen()) + exp; mag > ldMaxExp+8 || mag < -16500 {
		return false
	}
	f.SetInt(m)
	f.SetMantExp(f, int(exp))
	return true
}

// formatLongDoubleHuman is Redis's ld2string in LD_STR_HUMAN mode: "%.17Lf", then trailing
// zeros and a bare point removed, and "-0" written as "0".
func formatLongDoubleHuman(f *big.Float) []byte {
	b := f.Append(make([]byte, 0, 32), 'f', 17)
	for b[len(b)-1] == '0' {
		b = b[:len(b)-1]
	}
	if b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if len(b) == 2 && b[0] == '-' && b[1] == '0' {
		b = b[:1]
		b[0] = '0'
	}
	return b
}

// lcsCommand follows Redis 7.0's lcsCommand: both keys are looked up before the options are
// parsed, the table is bounded by proto-max-bulk-len, and IDX ranges are emitted from the end
// of the strings backwards.
func lcsCommand(c *Ctx) {
	ea, eb := c.LookupRead(c.Args[1]), c.LookupRead(c.Args[2])
	if (ea != nil && ea.Val.Kind != store.KindString) || (eb != nil && eb.Val.Kind != store.KindString) {
		c.Error("ERR The specified keys must contain string values")
		return
	}
	var a, b []byte
	var ta, tb [24]byte
	if ea != nil {
		a = StringBytes(&ea.Val, ta[:])
	}
	if eb != nil {
		b = StringBytes(&eb.Val, tb[:])
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for j := 3; j < len(c.Args); j++ {
		switch {
		case c.ArgIs(j, "idx"):
			getIdx = true
		case c.ArgIs(j, "len"):
			getLen = true
		case c.ArgIs(j, "withmatchlen"):
			withMatchLen = true
		case c.ArgIs(j, "minmatchlen") && j+1 < len(c.Args):
			n, ok := c.Int(j + 1)
			if !ok {
				return
			}
			minMatchLen = max(n, 0)
			j++
		default:
			c.Syntax()
			return
		}
	}
	if getIdx && getLen {
		c.Error("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	if len(a) >= math.MaxUint32-1 || len(b) >= math.MaxUint32-1 {
		c.Error("ERR String too long for LCS")
		return
	}
	alen, blen := len(a), len(b)
	cells := uint64(alen+1) * uint64(blen+1)
	if cells*4 > uint64(maxBulkLen(c)) {
		c.Error("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	lcs := make([]uint32, cells)
	at := func(i, j int) *uint32 { return &lcs[j+i*(blen+1)] }
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				*at(i, j) = *at(i-1, j-1) + 1
			} else {
				*at(i, j) = max(*at(i-1, j), *at(i, j-1))
			}
		}
	}
	total := int(*at(alen, blen))
	if getLen {
		c.W.Int(int64(total))
		return
	}
	result := make([]byte, total)
	type match struct{ a0, a1, b0, b1 int }
	var matches []match
	idx := total
	aStart, aEnd, bStart, bEnd := alen, 0, 0, 0 // aStart == alen: no range open
	i, j := alen, blen
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if aStart == alen {
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			} else if aStart == i && bStart == j {
				aStart--
				bStart--
			} else {
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if *at(i-1, j) > *at(i, j-1) {
				i--
			} else {
				j--
			}
			if aStart != alen {
				emit = true
			}
		}
		if emit {
			if minMatchLen == 0 || int64(aEnd-aStart+1) >= minMatchLen {
				matches = append(matches, match{aStart, aEnd, bStart, bEnd})
			}
			aStart = alen
		}
	}
	if !getIdx {
		c.W.Bulk(result)
		return
	}
	c.W.Map(2)
	c.W.BulkString("matches")
	c.W.Array(len(matches))
	for _, m := range matches {
		if withMatchLen {
			c.W.Array(3)
		} else {
			c.W.Array(2)
		}
		c.W.Array(2)
		c.W.Int(int64(m.a0))
		c.W.Int(int64(m.a1))
		c.W.Array(2)
		c.W.Int(int64(m.b0))
		c.W.Int(int64(m.b1))
		if withMatchLen {
			c.W.Int(int64(m.a1 - m.a0 + 1))
		}
	}
	c.W.BulkString("len")
	c.W.Int(int64(total))
}

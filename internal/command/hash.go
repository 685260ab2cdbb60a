package command

import (
	"math/rand/v2"
	"strconv"
	"unsafe"

	"github.com/hotkv/hotkv/internal/glob"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Hashes (types.Hash): a packed encoding while small, a table beyond
// hash-max-listpack-entries fields or hash-max-listpack-value bytes. HSET, HMSET, HDEL and
// HINCRBY are deterministic and journaled as given; HSETNX as the HSET it did, and
// HINCRBYFLOAT as the HSET of its result, as Redis propagates it (effects.go).

func hashCommands() []*Command {
	row := func(name string, arity int, flags Flag, acl string, ks KeySpecFlag, since, syntax, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{acl, "hash", aclSpeed(flags)},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(ks), Group: "hash", Since: since,
			Syntax: syntax, Complexity: complexity, Summary: summary, Handler: h}
	}
	const wf, rf = FlagWrite | FlagDenyOOM | FlagFast, FlagReadOnly | FlagFast
	const sizeN = "O(N) where N is the size of the hash."
	order := []string{"nondeterministic_output_order"}
	hkeys := row("hkeys", 2, FlagReadOnly, "read", KSRO|KSAccess, "2.0.0", "key", sizeN, "Get all the fields in a hash", hkeysCommand)
	hvals := row("hvals", 2, FlagReadOnly, "read", KSRO|KSAccess, "2.0.0", "key", sizeN, "Get all the values in a hash", hvalsCommand)
	hgetall := row("hgetall", 2, FlagReadOnly, "read", KSRO|KSAccess, "2.0.0", "key", sizeN, "Get all the fields and values in a hash", hgetallCommand)
	hkeys.Tips, hvals.Tips, hgetall.Tips = order, order, order
	hrandfield := row("hrandfield", -2, FlagReadOnly, "read", KSRO|KSAccess, "6.2.0", "key [count [WITHVALUES]]",
		"O(N) where N is the number of fields returned", "Get one or multiple random fields from a hash", hrandfieldCommand)
	hrandfield.Tips = []string{"nondeterministic_output"}
	hscan := row("hscan", -3, FlagReadOnly, "read", KSRO|KSAccess, "2.8.0", "key cursor [MATCH pattern] [COUNT count]",
		"O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
		"Incrementally iterate hash fields and associated values", hscanCommand)
	hscan.Tips = []string{"nondeterministic_output"}
	hmset := row("hmset", -4, wf, "write", KSRW|KSUpdate, "2.0.0", "key field value [field value ...]",
		"O(N) where N is the number of fields being set.", "Set multiple hash fields to multiple values", hmsetCommand)
	hmset.Doc = "Deprecated since 4.0.0: use HSET with several field-value pairs."
	hincrbyfloat := row("hincrbyfloat", 4, wf, "write", KSRW|KSAccess|KSUpdate, "2.6.0", "key field increment", "O(1)",
		"Increment the float value of a hash field by the given amount", hincrbyfloatCommand)
	hincrbyfloat.Doc = "Computed as INCRBYFLOAT computes it (80-bit extended precision, 17 decimals) and journaled as the HSET of the result."
	return append([]*Command{
		row("hset", -4, wf, "write", KSRW|KSUpdate, "2.0.0", "key field value [field value ...]",
			"O(1) for each field/value pair added, so O(N) to add N field/value pairs when the command is called with multiple field/value pairs.",
			"Set the string value of a hash field", hsetCommand),
		row("hsetnx", 4, wf, "write", KSRW|KSInsert, "2.0.0", "key field value", "O(1)",
			"Set the value of a hash field, only if the field does not exist", hsetnxCommand),
		row("hget", 3, rf, "read", KSRO|KSAccess, "2.0.0", "key field", "O(1)", "Get the value of a hash field", hgetCommand),
		row("hmget", -3, rf, "read", KSRO|KSAccess, "2.0.0", "key field [field ...]",
			"O(N) where N is the number of fields being requested.", "Get the values of all the given hash fields", hmgetCommand),
		hmset,
		row("hdel", -3, FlagWrite|FlagFast, "write", KSRW|KSDelete, "2.0.0", "key field [field ...]",
			"O(N) where N is the number of fields to be removed.", "Delete one or more hash fields", hdelCommand),
		row("hlen", 2, rf, "read", KSRO, "2.0.0", "key", "O(1)", "Get the number of fields in a hash", hlenCommand),
		row("hstrlen", 3, rf, "read", KSRO, "3.2.0", "key field", "O(1)", "Get the length of the value of a hash field", hstrlenCommand),
		row("hexists", 3, rf, "read", KSRO, "2.0.0", "key field", "O(1)", "Determine if a hash field exists", hexistsCommand),
		hkeys, hvals, hgetall,
		row("hincrby", 4, wf, "write", KSRW|KSAccess|KSUpdate, "2.0.0", "key field increment", "O(1)",
			"Increment the integer value of a hash field by the given number", hincrbyCommand),
		hincrbyfloat, hrandfield, hscan,
	}, hashTTLCommands()...)
}

// aclSpeed is a row's ACL speed category: fast commands are @fast, the rest @slow.
func aclSpeed(f Flag) string {
	if f&FlagFast != 0 {
		return "fast"
	}
	return "slow"
}

// hashRead returns key's hash for a read, replying WRONGTYPE for another type; nil with ok
// for a missing key.
func hashRead(c *Ctx, key []byte) (e *store.Entry, h *types.Hash, ok bool) {
	if e = c.LookupRead(key); e == nil {
		return nil, nil, true
	}
	if e.Val.Kind != store.KindHash {
		c.WrongType()
		return nil, nil, false
	}
	if !expireHashFields(c, e) {
		return nil, nil, true
	}
	return e, e.Val.Obj().(*types.Hash), true
}

// hashWrite returns key's hash for a write, creating it when create is set; WRONGTYPE for
// another type.
func hashWrite(c *Ctx, key []byte, create bool) (e *store.Entry, h *types.Hash, ok bool) {
	e = c.Lookup(key)
	if e != nil && e.Val.Kind != store.KindHash {
		c.WrongType()
		return nil, nil, false
	}
	if e != nil && !expireHashFields(c, e) {
		e = nil
	}
	if e == nil {
		if !create {
			return nil, nil, true
		}
		e = c.DB.Set(key, types.NewHashValue(), 0, false, c.Now)
	}
	return e, e.Val.Obj().(*types.Hash), true
}

// argStr views a command argument as a string without copying, for the types' methods that
// copy whatever they keep (Hash.Set, ZSet.Set, Set.Add, List pushes). The string is valid only
// while the command runs (the reader reuses its buffer). Besides saving a copy, it keeps
// short-lived tiny strings out of the allocator's 16-byte blocks, where one would share a
// block with a key's name and keep it half empty for as long as the key lives.
func argStr(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// removeIfEmpty deletes a hash key whose last field went, as Redis never keeps empty
// aggregates.
func removeIfEmpty(c *Ctx, e *store.Entry, h *types.Hash) {
	if h.Len() == 0 {
		c.DB.Remove(e)
	}
}

func hsetCommand(c *Ctx) {
	if len(c.Args)%2 == 1 {
		c.ArityError()
		return
	}
	_, h, ok := hashWrite(c, c.Args[1], true)
	if !ok {
		return
	}
	if len(c.Args) > 4 {
		h.Reserve(c.Args[2:])
	}
	created := 0
	for i := 2; i < len(c.Args); i += 2 {
		if h.Set(argStr(c.Args[i]), argStr(c.Args[i+1])) {
			created++
		}
	}
	h.Compact()
	c.Dirty(int64(len(c.Args)-2) / 2)
	c.notify(evHash, "hset", c.Args[1])
	c.W.Int(int64(created))
}

func hmsetCommand(c *Ctx) {
	if len(c.Args)%2 == 1 {
		c.ArityError()
		return
	}
	_, h, ok := hashWrite(c, c.Args[1], true)
	if !ok {
		return
	}
	for i := 2; i < len(c.Args); i += 2 {
		h.Set(argStr(c.Args[i]), argStr(c.Args[i+1]))
	}
	c.Dirty(int64(len(c.Args)-2) / 2)
	c.notify(evHash, "hset", c.Args[1])
	c.W.OK()
}

func hsetnxCommand(c *Ctx) {
	e, h, ok := hashWrite(c, c.Args[1], false)
	if !ok {
		return
	}
	if h != nil {
		if _, exists := h.Get(string(c.Args[2])); exists {
			c.W.Int(0)
			return
		}
	}
	if e == nil {
		_, h, _ = hashWrite(c, c.Args[1], true)
	}
	h.Set(string(c.Args[2]), string(c.Args[3]))
	c.Dirty(1)
	c.notify(evHash, "hset", c.Args[1])
	if c.Store.Journal != nil {
		c.Emit(c.DB.ID, effHSet, c.Args[1], c.Args[2], c.Args[3])
	}
	c.W.Int(1)
}

func hgetCommand(c *Ctx) {
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	if h != nil {
		if v, found := h.Get(string(c.Args[2])); found {
			c.W.BulkString(v)
			return
		}
	}
	c.W.Null()
}

func hmgetCommand(c *Ctx) {
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, f := range c.Args[2:] {
		if h != nil {
			if v, found := h.Get(string(f)); found {
				c.W.BulkString(v)
				continue
			}
		}
		c.W.Null()
	}
}

func hdelCommand(c *Ctx) {
	e, h, ok := hashWrite(c, c.Args[1], false)
	if !ok {
		return
	}
	if h == nil {
		c.W.Int(0)
		return
	}
	deleted := 0
	for _, f := range c.Args[2:] {
		if h.Delete(string(f)) {
			deleted++
			if h.Len() == 0 {
				break
			}
		}
	}
	if deleted > 0 {
		c.notify(evHash, "hdel", c.Args[1])
		if h.Len() == 0 {
			c.DB.Remove(e)
			c.notify(evGeneric, "del", c.Args[1])
		}
		c.Dirty(int64(deleted))
	}
	c.W.Int(int64(deleted))
}

func hlenCommand(c *Ctx) {
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	if h == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(h.Len()))
}

func hstrlenCommand(c *Ctx) {
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	n := 0
	if h != nil {
		v, _ := h.Get(string(c.Args[2]))
		n = len(v)
	}
	c.W.Int(int64(n))
}

func hexistsCommand(c *Ctx) {
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	found := false
	if h != nil {
		_, found = h.Get(string(c.Args[2]))
	}
	if found {
		c.W.Int(1)
	} else {
		c.W.Int(0)
	}
}

// hashAll replies HKEYS, HVALS and HGETALL (a map in RESP3).
func hashAll(c *Ctx, keys, vals bool) {
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	n := 0
	if h != nil {
		n = h.Len()
	}
	if keys && vals {
		c.W.Map(n)
	} else {
		c.W.Array(n)
	}
	if h == nil {
		return
	}
	h.Each(func(f, v string) bool {
		if keys {
			c.W.BulkString(f)
		}
		if vals {
			c.W.BulkString(v)
		}
		return true
	})
}

func hkeysCommand(c *Ctx)        { hashAll(c, true, false) }
func hvalsCommand(c *Ctx)        { hashAll(c, false, true) }
func hgetallCommand(c *Ctx)      { hashAll(c, true, true) }
func hincrbyCommand(c *Ctx)      { hashIncr(c) }
func hincrbyfloatCommand(c *Ctx) { hashIncrFloat(c) }

func hashIncr(c *Ctx) {
	incr, ok := c.Int(3)
	if !ok {
		return
	}
	_, h, ok := hashWrite(c, c.Args[1], true)
	if !ok {
		return
	}
	field := string(c.Args[2])
	var cur int64
	if v, found := h.Get(field); found {
		n, ok := resp.ParseInt([]byte(v))
		if !ok {
			c.Error("ERR hash value is not an integer")
			return
		}
		cur = n
	}
	if (incr < 0 && cur < 0 && incr < -9223372036854775808-cur) || (incr > 0 && cur > 0 && incr > 9223372036854775807-cur) {
		c.Error(ErrOverflow)
		return
	}
	cur += incr
	h.SetKeepTTL(field, strconv.FormatInt(cur, 10)) // the field keeps its TTL, as in Redis 7.4
	c.Dirty(1)
	c.notify(evHash, "hincrby", c.Args[1])
	c.W.Int(cur)
}

func hashIncrFloat(c *Ctx) {
	incr, ok := parseLongDouble(c.Args[3])
	if !ok {
		c.Error(ErrNotFloat)
		return
	}
	if incr.IsInf() {
		c.Error("ERR value is NaN or Infinity")
		return
	}
	_, h, ok := hashWrite(c, c.Args[1], true)
	if !ok {
		return
	}
	field := string(c.Args[2])
	value := newLD()
	if v, found := h.Get(field); found {
		if value, ok = parseLongDouble([]byte(v)); !ok {
			c.Error("ERR hash value is not a float")
			return
		}
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
	h.SetKeepTTL(field, string(b)) // the field keeps its TTL, as in Redis 7.4
	c.Dirty(1)
	c.notify(evHash, "hincrbyfloat", c.Args[1])
	if c.Store.Journal != nil {
		c.Emit(c.DB.ID, effHSet, c.Args[1], c.Args[2], b)
		emitKeepFieldTTL(c, h, c.Args[1], c.Args[2])
	}
	c.W.Bulk(b)
}

var effHSet = []byte("HSET")

func hrandfieldCommand(c *Ctx) {
	if len(c.Args) == 2 {
		_, h, ok := hashRead(c, c.Args[1])
		if !ok {
			return
		}
		if h == nil {
			c.W.Null()
			return
		}
		f, _ := h.Random(rand.Uint64N)
		c.W.BulkString(f)
		return
	}
	// Redis's order: the count, then the syntax, then the WITHVALUES range.
	count, ok := c.Int(2)
	if !ok {
		return
	}
	if count < -9223372036854775807 {
		c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	if len(c.Args) > 4 || (len(c.Args) == 4 && !c.ArgIs(3, "withvalues")) {
		c.Syntax()
		return
	}
	withValues := len(c.Args) == 4
	if withValues && (count < -4611686018427387903 || count > 4611686018427387903) { // count*2 must not overflow
		c.Error("ERR value is out of range")
		return
	}
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	if h == nil || count == 0 {
		c.W.Array(0)
		return
	}
	pair := func(f, v string) {
		if withValues {
			if c.W.Proto >= 3 {
				c.W.Array(2)
			}
			c.W.BulkString(f)
			c.W.BulkString(v)
		} else {
			c.W.BulkString(f)
		}
	}
	width := 1
	if withValues && c.W.Proto < 3 {
		width = 2
	}
	size := int64(h.Len())
	switch {
	case count < 0: // repeats allowed
		n := -count
		c.W.Array(int(n) * width)
		for range n {
			pair(h.Random(rand.Uint64N))
		}
	case count >= size: // the whole hash
		c.W.Array(int(size) * width)
		h.Each(func(f, v string) bool {
			pair(f, v)
			return true
		})
	default: // count distinct fields, in random order
		fields := make([][2]string, 0, size)
		h.Each(func(f, v string) bool {
			fields = append(fields, [2]string{f, v})
			return true
		})
		rand.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
		c.W.Array(int(count) * width)
		for _, p := range fields[:count] {
			pair(p[0], p[1])
		}
	}
}

// keyScanOptions parses HSCAN, SSCAN and ZSCAN's options after the key and cursor: COUNT
// (at least 1, default 10) and MATCH, replying the error itself.
func keyScanOptions(c *Ctx) (count int64, pat string, usePat, ok bool) {
	count = 10
	for i := 3; i < len(c.Args); i += 2 {
		more := len(c.Args) - i
		switch {
		case c.ArgIs(i, "count") && more >= 2:
			n, ok := c.Int(i + 1)
			if !ok {
				return 0, "", false, false
			}
			if n < 1 {
				c.Syntax()
				return 0, "", false, false
			}
			count = n
		case c.ArgIs(i, "match") && more >= 2:
			pat = string(c.Args[i+1])
			usePat = pat != "*"
		default:
			c.Syntax()
			return 0, "", false, false
		}
	}
	return count, pat, usePat, true
}

// replyEmptyScan is a scan of a missing key: cursor 0, nothing found.
func replyEmptyScan(c *Ctx) {
	c.W.Array(2)
	c.W.BulkString("0")
	c.W.Array(0)
}

func hscanCommand(c *Ctx) {
	// Redis's order: the cursor, then the key (a missing key is an empty scan whatever the
	// options say), then the options.
	cursor, ok := parseScanCursor(c.Args[2])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	_, h, ok := hashRead(c, c.Args[1])
	if !ok {
		return
	}
	if h == nil {
		replyEmptyScan(c)
		return
	}
	count, pat, usePat, ok := keyScanOptions(c)
	if !ok {
		return
	}
	// As Redis: COUNT bounds the elements collected (a field and its value are two) before
	// MATCH filters them.
	var found [][2]string
	collected := int64(0)
	visit := func(f, v string) {
		collected += 2
		if !usePat || glob.Match(pat, f, false) {
			found = append(found, [2]string{f, v})
		}
	}
	next := uint64(0)
	if h.Packed() {
		h.Scan(0, visit)
	} else {
		budget := count * 10
		next = cursor
		for {
			next = h.Scan(next, visit)
			budget--
			if next == 0 || budget <= 0 || collected >= count {
				break
			}
		}
	}
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(2 * len(found))
	for _, p := range found {
		c.W.BulkString(p[0])
		c.W.BulkString(p[1])
	}
}

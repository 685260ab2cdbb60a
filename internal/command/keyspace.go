package command

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/hotkv/hotkv/internal/glob"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// keyspaceCommands are Redis's "generic" group (commands on keys of any type) plus the
// database-wide commands Redis files under "server" (DBSIZE, FLUSHDB, FLUSHALL, SWAPDB).
//
// Locking: single- and multi-key commands get their shards from the dispatcher. Commands
// marked Global walk the keyspace or span databases and lock through the Ctx helpers, which
// keep the global (database, shard) order and step aside inside a global transaction.
func keyspaceCommands() []*Command {
	ro := func(begin int) []KeySpec { return []KeySpec{{Flags: KSRO, Begin: begin, Step: 1}} }
	roAccess := []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, Step: 1}}
	rwUpdate := []KeySpec{{Flags: KSRW | KSUpdate, Begin: 1, Step: 1}}
	allKeys := func(flags KeySpecFlag) []KeySpec {
		return []KeySpec{{Flags: flags, Begin: 1, LastKey: -1, Step: 1}}
	}
	multiShard := []string{"request_policy:multi_shard", "response_policy:agg_sum"}
	expireSyntax := " [NX | XX | GT | LT]"
	expireRow := func(name, since, unitArg, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: -3, Flags: FlagWrite | FlagFast,
			ACL: []string{"keyspace", "write", "fast"}, FirstKey: 1, LastKey: 1, Step: 1,
			KeySpecs: rwUpdate, Group: "generic", Since: since, Complexity: "O(1)",
			Syntax: "key " + unitArg + expireSyntax, Summary: summary, Handler: h}
	}
	ttlRow := func(name, since, summary string, tips []string, h Handler) *Command {
		return &Command{Name: name, Arity: 2, Flags: FlagReadOnly | FlagFast,
			ACL: []string{"keyspace", "read", "fast"}, FirstKey: 1, LastKey: 1, Step: 1,
			KeySpecs: roAccess, Group: "generic", Since: since, Complexity: "O(1)",
			Syntax: "key", Summary: summary, Tips: tips, Handler: h}
	}
	allShards := func(resp string) []string {
		return []string{"request_policy:all_shards", "response_policy:" + resp}
	}
	flushRow := func(name, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: -1, Flags: FlagWrite,
			ACL: []string{"keyspace", "write", "slow", "dangerous"}, Group: "server", Since: "1.0.0",
			Complexity: complexity, Syntax: "[ASYNC | SYNC]", Summary: summary,
			Doc: "ASYNC and SYNC behave alike: the flush is atomic and O(1) per shard, and the garbage " +
				"collector frees the old keys in the background.",
			Tips: allShards("all_succeeded"), Global: true, Handler: h}
	}
	return []*Command{
		{Name: "del", Arity: -2, Flags: FlagWrite, ACL: []string{"keyspace", "write", "slow"},
			FirstKey: 1, LastKey: -1, Step: 1, KeySpecs: allKeys(KSRM | KSDelete),
			Group: "generic", Since: "1.0.0",
			Complexity: "O(N) where N is the number of keys that will be removed. When a key to remove holds a value other than a string, the individual complexity for this key is O(M) where M is the number of elements in the list, set, sorted set or hash. Removing a single key that holds a string value is O(1).",
			Syntax:     "key [key ...]", Summary: "Delete a key", Tips: multiShard, Handler: delCommand},
		{Name: "unlink", Arity: -2, Flags: FlagWrite | FlagFast, ACL: []string{"keyspace", "write", "fast"},
			FirstKey: 1, LastKey: -1, Step: 1, KeySpecs: allKeys(KSRM | KSDelete),
			Group: "generic", Since: "4.0.0",
			Complexity: "O(1) for each key removed regardless of its size. Then the command does O(N) work in a different thread in order to reclaim memory, where N is the number of allocations the deleted objects where composed of.",
			Syntax:     "key [key ...]",
			Summary:    "Delete a key asynchronously in another thread. Otherwise it is just as DEL, but non blocking.",
			Doc:        "Same as DEL: the Go garbage collector reclaims a deleted value in the background either way.",
			Tips:       multiShard, Handler: delCommand},
		{Name: "exists", Arity: -2, Flags: FlagReadOnly | FlagFast, ACL: []string{"keyspace", "read", "fast"},
			FirstKey: 1, LastKey: -1, Step: 1, KeySpecs: allKeys(KSRO),
			Group: "generic", Since: "1.0.0", Complexity: "O(N) where N is the number of keys to check.",
			Syntax: "key [key ...]", Summary: "Determine if a key exists", Tips: multiShard,
			Handler: existsCommand},
		{Name: "type", Arity: 2, Flags: FlagReadOnly | FlagFast, ACL: []string{"keyspace", "read", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: ro(1),
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Syntax: "key",
			Summary: "Determine the type stored at key", Handler: typeCommand},
		{Name: "touch", Arity: -2, Flags: FlagReadOnly | FlagFast, ACL: []string{"keyspace", "read", "fast"},
			FirstKey: 1, LastKey: -1, Step: 1, KeySpecs: allKeys(KSRO),
			Group: "generic", Since: "3.2.1", Complexity: "O(N) where N is the number of keys that will be touched.",
			Syntax:  "key [key ...]",
			Summary: "Alters the last access time of a key(s). Returns the number of existing keys specified.",
			Tips:    multiShard, Handler: touchCommand},
		expireRow("expire", "1.0.0", "seconds", "Set a key's time to live in seconds",
			func(c *Ctx) { expireGeneric(c, true, true) }),
		expireRow("pexpire", "2.6.0", "milliseconds", "Set a key's time to live in milliseconds",
			func(c *Ctx) { expireGeneric(c, true, false) }),
		expireRow("expireat", "1.2.0", "unix-time-seconds", "Set the expiration for a key as a UNIX timestamp",
			func(c *Ctx) { expireGeneric(c, false, true) }),
		expireRow("pexpireat", "2.6.0", "unix-time-milliseconds", "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
			func(c *Ctx) { expireGeneric(c, false, false) }),
		ttlRow("ttl", "1.0.0", "Get the time to live for a key in seconds", []string{"nondeterministic_output"},
			func(c *Ctx) { ttlGeneric(c, false, false) }),
		ttlRow("pttl", "2.6.0", "Get the time to live for a key in milliseconds", []string{"nondeterministic_output"},
			func(c *Ctx) { ttlGeneric(c, true, false) }),
		ttlRow("expiretime", "7.0.0", "Get the expiration Unix timestamp for a key", nil,
			func(c *Ctx) { ttlGeneric(c, false, true) }),
		ttlRow("pexpiretime", "7.0.0", "Get the expiration Unix timestamp for a key in milliseconds", nil,
			func(c *Ctx) { ttlGeneric(c, true, true) }),
		{Name: "persist", Arity: 2, Flags: FlagWrite | FlagFast, ACL: []string{"keyspace", "write", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: rwUpdate,
			Group: "generic", Since: "2.2.0", Complexity: "O(1)", Syntax: "key",
			Summary: "Remove the expiration from a key", Handler: persistCommand},
		{Name: "keys", Arity: 2, Flags: FlagReadOnly, ACL: []string{"keyspace", "read", "slow", "dangerous"},
			Group: "generic", Since: "1.0.0",
			Complexity: "O(N) with N being the number of keys in the database, under the assumption that the key names in the database and the given pattern have limited length.",
			Syntax:     "pattern", Summary: "Find all keys matching the given pattern",
			Tips: []string{"request_policy:all_shards", "nondeterministic_output_order"},
			Doc: "Walks the database one shard at a time so that it never stalls every client for the whole walk. " +
				"Unlike Redis, a key renamed or moved while KEYS runs may be missed or listed twice.",
			Global: true, Handler: keysCommand},
		{Name: "scan", Arity: -2, Flags: FlagReadOnly, ACL: []string{"keyspace", "read", "slow"},
			Group: "generic", Since: "2.8.0",
			Complexity: "O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection.",
			Syntax:     "cursor [MATCH pattern] [COUNT count] [TYPE type]",
			Summary:    "Incrementally iterate the keys space",
			Tips:       []string{"nondeterministic_output", "request_policy:special"},
			Doc: "The cursor packs the shard and the position in its table (bucket × shards + shard). As in Redis, " +
				"a full iteration returns every key present for its whole duration at least once, and a call may " +
				"return more than COUNT keys. Expired keys are skipped but, unlike Redis, not deleted by the scan.",
			Global: true, Handler: scanCommand},
		{Name: "randomkey", Arity: 1, Flags: FlagReadOnly, ACL: []string{"keyspace", "read", "slow"},
			Group: "generic", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Return a random key from the keyspace",
			Tips:    []string{"request_policy:all_shards", "nondeterministic_output"},
			Doc:     "Picks a shard weighted by its number of keys, then a random key in it.",
			Global:  true, Handler: randomkeyCommand},
		{Name: "rename", Arity: 3, Flags: FlagWrite, ACL: []string{"keyspace", "write", "slow"},
			FirstKey: 1, LastKey: 2, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, Step: 1},
				{Flags: KSOW | KSUpdate, Begin: 2, Step: 1}},
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Syntax: "key newkey",
			Summary: "Rename a key", Handler: func(c *Ctx) { renameGeneric(c, false) }},
		{Name: "renamenx", Arity: 3, Flags: FlagWrite | FlagFast, ACL: []string{"keyspace", "write", "fast"},
			FirstKey: 1, LastKey: 2, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, Step: 1},
				{Flags: KSOW | KSInsert, Begin: 2, Step: 1}},
			Group: "generic", Since: "1.0.0", Complexity: "O(1)", Syntax: "key newkey",
			Summary: "Rename a key, only if the new key does not exist",
			Handler: func(c *Ctx) { renameGeneric(c, true) }},
		// COPY and MOVE keep Redis's key positions for COMMAND and cluster routing, but lock
		// themselves: the destination may be in another database.
		{Name: "copy", Arity: -3, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"keyspace", "write", "slow"},
			FirstKey: 1, LastKey: 2, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, Step: 1},
				{Flags: KSOW | KSUpdate, Begin: 2, Step: 1}},
			Group: "generic", Since: "6.2.0",
			Complexity: "O(N) worst case for collections, where N is the number of nested items. O(1) for string values.",
			Syntax:     "source destination [DB destination-db] [REPLACE]", Summary: "Copy a key",
			Global: true, Handler: copyCommand},
		{Name: "move", Arity: 3, Flags: FlagWrite | FlagFast, ACL: []string{"keyspace", "write", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSUpdate, Begin: 1, Step: 1}},
			Group:    "generic", Since: "1.0.0", Complexity: "O(1)", Syntax: "key db",
			Summary: "Move a key to another database", Global: true, Handler: moveCommand},
		{Name: "swapdb", Arity: 3, Flags: FlagWrite | FlagFast,
			ACL: []string{"keyspace", "write", "fast", "dangerous"}, Group: "server", Since: "4.0.0",
			Complexity: "O(N) where N is the count of clients watching or blocking on keys from both databases.",
			Syntax:     "index1 index2", Summary: "Swaps two Redis databases",
			Global: true, Handler: swapdbCommand},
		{Name: "dbsize", Arity: 1, Flags: FlagReadOnly | FlagFast, ACL: []string{"keyspace", "read", "fast"},
			Group: "server", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Return the number of keys in the selected database", Tips: allShards("agg_sum"),
			Global: true, Handler: dbsizeCommand},
		flushRow("flushdb", "O(N) where N is the number of keys in the selected database",
			"Remove all keys from the current database", flushdbCommand),
		flushRow("flushall", "O(N) where N is the total number of keys in all databases",
			"Remove all keys from all databases", flushallCommand),
		{Name: "object", Arity: -2, ACL: []string{"slow"}, Group: "generic", Since: "2.2.3",
			Complexity: "Depends on subcommand.", Summary: "A container for object introspection commands",
			Subcommands: objectSubcommands()},
	}
}

func objectSubcommands() []*Command {
	sub := func(name, since, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: 3, Flags: FlagReadOnly, ACL: []string{"keyspace", "read", "slow"},
			FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: []KeySpec{{Flags: KSRO, Begin: 2, Step: 1}},
			Since: since, Complexity: "O(1)", Syntax: "key", Summary: summary,
			Tips: []string{"nondeterministic_output"}, Handler: h}
	}
	enc := sub("encoding", "2.2.3", "Inspect the internal encoding of a Redis object", objectEncodingCommand)
	enc.Doc = "Strings report int, embstr (up to 44 bytes) or raw by their current form; unlike Redis, a short " +
		"string built by APPEND or SETRANGE reports embstr rather than raw."
	freq := sub("freq", "4.0.0", "Get the logarithmic access frequency counter of a Redis object", objectFreqCommand)
	freq.Doc = "Only under an LFU maxmemory-policy (Redis's error otherwise): the counter after the decay lfu-decay-time calls for."
	return []*Command{
		enc,
		freq,
		sub("idletime", "2.2.3", "Get the time since a Redis object was last accessed", objectIdletimeCommand),
		sub("refcount", "2.2.3", "Get the number of references to the value of the key", objectRefcountCommand),
		{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"keyspace", "slow"},
			Since: "6.2.0", Complexity: "O(1)", Summary: "Show helpful text about the different subcommands",
			Handler: objectHelpCommand},
	}
}

// delCommand is DEL and UNLINK: values are reclaimed by the garbage collector either way, so
// UNLINK's background freeing is what DEL already does.
func delCommand(c *Ctx) {
	var n int64
	for _, key := range c.Args[1:] {
		if c.DB.Delete(key, c.Now) {
			n++
			c.notify(evGeneric, "del", key)
		}
	}
	c.Dirty(n)
	c.W.Int(n)
}

// existsCommand counts a key once per mention, as Redis does ("EXISTS k k" is 2).
func existsCommand(c *Ctx) {
	var n int64
	for _, key := range c.Args[1:] {
		if c.DB.LookupReadNoTouch(key, c.Now) != nil {
			n++
		}
	}
	c.W.Int(n)
}

func typeCommand(c *Ctx) {
	e := c.DB.LookupReadNoTouch(c.Args[1], c.Now)
	if e == nil {
		c.W.Simple("none")
		return
	}
	c.W.Simple(e.Val.Kind.TypeName())
}

// touchCommand refreshes access times even for a CLIENT NO-TOUCH client: touching is the
// command's whole purpose, and Redis makes the same exception.
func touchCommand(c *Ctx) {
	var n int64
	for _, key := range c.Args[1:] {
		if c.DB.LookupRead(key, c.Now) != nil {
			n++
		}
	}
	c.W.Int(n)
}

// expireGeneric is EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT (Redis's expireGenericCommand):
// relative adds the command time, seconds scales by 1000. The checks run in Redis's order
// (options, integer, overflow, then the key), so every error matches.
func expireGeneric(c *Ctx, relative, seconds bool) {
	var nx, xx, gt, lt bool
	for i := 3; i < len(c.Args); i++ {
		switch {
		case c.ArgIs(i, "nx"):
			nx = true
		case c.ArgIs(i, "xx"):
			xx = true
		case c.ArgIs(i, "gt"):
			gt = true
		case c.ArgIs(i, "lt"):
			lt = true
		default:
			c.Error("ERR Unsupported option " + string(c.Args[i]))
			return
		}
	}
	if nx && (xx || gt || lt) {
		c.Error("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		c.Error("ERR GT and LT options at the same time are not compatible")
		return
	}
	when, ok := c.Int(2)
	if !ok {
		return
	}
	invalid := func() { c.Error(fmt.Sprintf(ErrInvalidExp, c.Cmd.FullName())) }
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			invalid()
			return
		}
		when *= 1000
	}
	if relative {
		if when > math.MaxInt64-c.Now {
			invalid()
			return
		}
		when += c.Now
	}
	e := c.Lookup(c.Args[1])
	if e == nil {
		c.W.Int(0)
		return
	}
	// A key without a TTL counts as an infinite one: GT never beats it, LT always does.
	cur := e.ExpireAt()
	if (nx && cur != 0) || (xx && cur == 0) || (gt && (cur == 0 || when <= cur)) || (lt && cur != 0 && when >= cur) {
		c.W.Int(0)
		return
	}
	if when <= c.Now {
		// A time in the past deletes the key now rather than leaving it to lazy expiry, as
		// Redis does (and replicates as a DEL).
		c.DB.Remove(e)
		c.Dirty(1)
		c.notify(evGeneric, "del", c.Args[1])
		c.emitDel(c.Args[1])
	} else {
		c.DB.SetExpire(e, when)
		c.Dirty(1)
		c.notify(evGeneric, "expire", c.Args[1])
		c.emitExpireAt(c.Args[1], when) // absolute, whichever of the four commands set it
	}
	c.W.Int(1)
}

// ttlGeneric is TTL, PTTL, EXPIRETIME and PEXPIRETIME: -2 for a missing key, -1 for no TTL.
// Seconds are rounded to the nearest, as Redis does; the unsigned arithmetic reproduces Redis's
// reply for an expiry within 500 ms of the int64 limit.
func ttlGeneric(c *Ctx, ms, abs bool) {
	e := c.DB.LookupReadNoTouch(c.Args[1], c.Now)
	if e == nil {
		c.W.Int(-2)
		return
	}
	at := e.ExpireAt()
	if at == 0 {
		c.W.Int(-1)
		return
	}
	ttl := at
	if !abs {
		ttl = at - c.Now
	}
	ttl = max(ttl, 0)
	if ms {
		c.W.Int(ttl)
		return
	}
	c.W.Int(int64((uint64(ttl) + 500) / 1000))
}

func persistCommand(c *Ctx) {
	e := c.Lookup(c.Args[1])
	if e == nil || e.ExpireAt() == 0 {
		c.W.Int(0)
		return
	}
	c.DB.SetExpire(e, 0)
	c.Dirty(1)
	c.notify(evGeneric, "persist", c.Args[1])
	c.W.Int(1)
}

// keysCommand visits the shards one at a time so that a large KEYS never stalls the whole
// database; the price is that a key moved between shards meanwhile (RENAME) may be missed or
// listed twice, which Redis's single thread cannot do.
func keysCommand(c *Ctx) {
	pat := string(c.Args[1])
	all := pat == "*"
	var out resp.Writer // bulk strings are the same in RESP2 and RESP3
	n := 0
	for i := 0; i < c.DB.NumShards(); i++ {
		s := c.DB.Shard(i)
		c.WithShard(s, func() {
			s.Each(c.Now, func(e *store.Entry) bool {
				if all || glob.Match(pat, e.Key(), false) {
					out.BulkString(e.Key())
					n++
				}
				return true
			})
		})
	}
	c.W.Array(n)
	c.W.Raw(out.Buf)
}

// parseScanCursor reads a cursor the way Redis's strtoul-based parser does: an optional sign
// ("-1" wraps to the largest cursor), decimal digits, nothing else; the empty string is 0.
func parseScanCursor(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, true
	}
	i, neg := 0, false
	switch b[0] {
	case '+':
		i = 1
	case '-':
		i, neg = 1, true
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 || v > (math.MaxUint64-uint64(d))/10 {
			return 0, false
		}
		v = v*10 + uint64(d)
	}
	if neg {
		v = -v
	}
	return v, true
}

// scanCommand iterates the shards of the selected database in order, each with the dict's
// reverse-binary bucket cursor. The client's cursor packs both as bucket*shards + shard, so 0
// starts at shard 0 and a finished last shard returns 0; every key present for the whole
// iteration is returned at least once, as in Redis. A call stops after COUNT keys or COUNT*10
// bucket visits (Redis's limit), and may return more than COUNT when a bucket holds several.
func scanCommand(c *Ctx) {
	cursor, ok := parseScanCursor(c.Args[1])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	count := int64(10)
	var pat, typ string
	usePat, useType := false, false
	for i := 2; i < len(c.Args); i += 2 {
		more := len(c.Args) - i
		switch {
		case c.ArgIs(i, "count") && more >= 2:
			n, ok := c.Int(i + 1)
			if !ok {
				return
			}
			if n < 1 {
				c.Syntax()
				return
			}
			count = n
		case c.ArgIs(i, "match") && more >= 2:
			pat = string(c.Args[i+1])
			usePat = pat != "*"
		case c.ArgIs(i, "type") && more >= 2:
			typ, useType = string(c.Args[i+1]), true
		default:
			c.Syntax()
			return
		}
	}
	nShards := uint64(c.DB.NumShards())
	shard, bucket := cursor%nShards, cursor/nShards
	budget := count * 10
	if budget/10 != count { // overflow: no practical limit
		budget = math.MaxInt64
	}
	var out resp.Writer
	var found int64
	visit := func(e *store.Entry) {
		key := e.Key()
		if usePat && !glob.Match(pat, key, false) {
			return
		}
		if useType && !strings.EqualFold(typ, e.Val.Kind.TypeName()) {
			return
		}
		out.BulkString(key)
		found++
	}
	for {
		s := c.DB.Shard(int(shard))
		c.WithShard(s, func() {
			if s.Len() == 0 {
				bucket = 0 // an empty shard costs no budget
				return
			}
			for {
				bucket = s.Scan(bucket, c.Now, visit)
				budget--
				if bucket == 0 || found >= count || budget <= 0 {
					return
				}
			}
		})
		if bucket == 0 {
			if shard++; shard == nShards {
				cursor = 0
				break
			}
		}
		if found >= count || budget <= 0 {
			cursor = bucket*nShards + shard
			break
		}
	}
	c.W.Array(2)
	var tmp [20]byte
	c.W.Bulk(strconv.AppendUint(tmp[:0], cursor, 10))
	c.W.Array(int(found))
	c.W.Raw(out.Buf)
}

// randomkeyCommand picks a shard weighted by its size, so every key is about equally likely
// however the keys spread, then a random key in it. When that shard has emptied meanwhile (or
// held only expired keys) it tries the following shards.
func randomkeyCommand(c *Ctx) {
	n := c.DB.NumShards()
	sizes := make([]int, n)
	total := 0
	for i := range n {
		s := c.DB.Shard(i)
		c.WithShard(s, func() { sizes[i] = s.Len() })
		total += sizes[i]
	}
	if total == 0 {
		c.W.Null()
		return
	}
	start := 0
	for r := rand.IntN(total); r >= sizes[start]; start++ {
		r -= sizes[start]
	}
	for i := range n {
		s := c.DB.Shard((start + i) % n)
		done := false
		c.WithShard(s, func() {
			if s.Len() == 0 {
				return
			}
			if e := c.DB.Random(s, c.Now); e != nil {
				c.W.BulkString(e.Key())
				done = true
			}
		})
		if done {
			return
		}
	}
	c.W.Null()
}

// renameGeneric is RENAME and RENAMENX. The dispatcher holds both keys' shards. The value,
// its TTL and its access statistics move to the new name.
func renameGeneric(c *Ctx, nx bool) {
	src, dst := c.Args[1], c.Args[2]
	e := c.Lookup(src)
	if e == nil {
		c.Error(ErrNoSuchKey)
		return
	}
	reply := func(done bool) {
		switch {
		case !nx:
			c.W.OK()
		case done:
			c.W.Int(1)
		default:
			c.W.Int(0)
		}
	}
	if bytes.Equal(src, dst) {
		reply(false)
		return
	}
	if nx && c.Lookup(dst) != nil {
		reply(false)
		return
	}
	ne := c.DB.MoveEntry(e, c.DB, dst, c.Now)
	c.Dirty(1)
	c.notify(evGeneric, "rename_from", src)
	c.notify(evGeneric, "rename_to", dst)
	c.markReadyIn(c.DB.ID, dst, ne)
	reply(true)
}

// dbIndex parses a database number as Redis's getIntFromObjectOrReply plus selectDb do.
func dbIndex(c *Ctx, i int) (int, bool) {
	v, ok := resp.ParseInt(c.Args[i])
	if !ok || v < math.MinInt32 || v > math.MaxInt32 {
		c.Error(ErrNotInt)
		return 0, false
	}
	if v < 0 || v >= int64(c.Store.NumDBs()) {
		c.Error(ErrDBRange)
		return 0, false
	}
	return int(v), true
}

// copyCommand duplicates a value, with its TTL, into the same or another database. The copy
// is a new object, so it starts with a fresh access time.
func copyCommand(c *Ctx) {
	srcID := c.DB.ID
	dstID := srcID
	replace := false
	for j := 3; j < len(c.Args); j++ {
		switch {
		case c.ArgIs(j, "replace"):
			replace = true
		case c.ArgIs(j, "db") && j+1 < len(c.Args):
			id, ok := dbIndex(c, j+1)
			if !ok {
				return
			}
			dstID = id
			j++
		default:
			c.Syntax()
			return
		}
	}
	src, dst := c.Args[1], c.Args[2]
	if srcID == dstID && bytes.Equal(src, dst) {
		c.Error(ErrSameObject)
		return
	}
	c.LockKeysIn(srcID, [][]byte{src}, dstID, [][]byte{dst})
	e := c.LookupRead(src)
	if e == nil {
		c.W.Int(0)
		return
	}
	v, at := store.CloneValue(e.Val), e.ExpireAt()
	dstDB := c.Store.DB(dstID)
	if old := dstDB.Lookup(dst, c.Now); old != nil {
		if !replace {
			c.W.Int(0)
			return
		}
		dstDB.Remove(old)
	}
	ne := dstDB.Set(dst, v, at, false, c.Now)
	c.Dirty(1)
	c.notifyIn(dstID, evGeneric, "copy_to", dst)
	c.touchIn(dstDB, dst)
	c.touched = true // the destination may be in another database than the dispatcher assumes
	c.markReadyIn(dstID, dst, ne)
	c.W.Int(1)
}

// moveCommand moves a key, with its TTL, to another database unless the name is taken there.
func moveCommand(c *Ctx) {
	id, ok := dbIndex(c, 2)
	if !ok {
		return
	}
	if id == c.DB.ID {
		c.Error(ErrSameObject)
		return
	}
	key := c.Args[1]
	c.LockKeysIn(c.DB.ID, [][]byte{key}, id, [][]byte{key})
	e := c.Lookup(key)
	if e == nil {
		c.W.Int(0)
		return
	}
	dst := c.Store.DB(id)
	if dst.Lookup(key, c.Now) != nil {
		c.W.Int(0)
		return
	}
	ne := c.DB.MoveEntry(e, dst, key, c.Now)
	c.Dirty(1)
	c.notify(evGeneric, "move_from", key)
	c.notifyIn(id, evGeneric, "move_to", key)
	c.touchIn(dst, key) // the dispatcher touches the source
	c.markReadyIn(id, key, ne)
	c.W.Int(1)
}

// swapdbCommand exchanges two databases' contents shard by shard while holding every shard of
// both, so no command sees half a swap. Clients keep their selected index and so see the other
// database's data from their next command, as in Redis.
func swapdbCommand(c *Ctx) {
	parse := func(i int, msg string) (int64, bool) {
		v, ok := resp.ParseInt(c.Args[i])
		if !ok || v < math.MinInt32 || v > math.MaxInt32 {
			c.Error(msg)
			return 0, false
		}
		return v, true
	}
	id1, ok := parse(1, "ERR invalid first DB index")
	if !ok {
		return
	}
	id2, ok := parse(2, "ERR invalid second DB index")
	if !ok {
		return
	}
	n := int64(c.Store.NumDBs())
	if id1 < 0 || id1 >= n || id2 < 0 || id2 >= n {
		c.Error(ErrDBRange)
		return
	}
	if id1 != id2 {
		c.LockDBs(int(id1), int(id2))
		a, b := c.Store.DB(int(id1)), c.Store.DB(int(id2))
		c.Store.Watches.TouchAll(a, b, c.Now)
		c.Store.Watches.TouchAll(b, a, c.Now)
		for i := 0; i < a.NumShards(); i++ {
			a.Shard(i).SwapWith(b.Shard(i))
		}
		// Clients blocked in XREAD[GROUP] look again: their streams changed under them.
		c.Store.Waiters.DBReplaced(a.ID)
		c.Store.Waiters.DBReplaced(b.ID)
	} else {
		c.skipEffect() // Redis counts it as a change, but there is nothing to replay
	}
	c.Dirty(1)
	c.W.OK()
}

// dbsizeCommand sums the shards one at a time; like Redis it counts expired keys that have not
// been reclaimed yet.
func dbsizeCommand(c *Ctx) {
	n := 0
	for i := 0; i < c.DB.NumShards(); i++ {
		s := c.DB.Shard(i)
		c.WithShard(s, func() { n += s.Len() })
	}
	c.W.Int(int64(n))
}

// flushMode checks FLUSHDB/FLUSHALL's optional ASYNC|SYNC. Both modes flush the same way:
// clearing a shard is O(1) and the garbage collector frees the old table in the background,
// which is what ASYNC asks for.
func flushMode(c *Ctx) bool {
	if len(c.Args) == 1 || (len(c.Args) == 2 && (c.ArgIs(1, "async") || c.ArgIs(1, "sync"))) {
		return true
	}
	c.Syntax()
	return false
}

// flushDBs empties the given databases while holding every one of their shards, so that the
// flush is atomic: a multi-key command cannot land a write in an already-flushed shard while
// keys of another shard survive. Holding them is cheap because Shard.Clear is O(1).
func flushDBs(c *Ctx, ids ...int) int64 {
	c.LockDBs(ids...)
	var n int64
	for _, id := range ids {
		db := c.Store.DB(id)
		c.Store.Watches.TouchAll(db, nil, c.Now)
		for i := 0; i < db.NumShards(); i++ {
			n += int64(db.Shard(i).Clear())
		}
		c.Store.Waiters.DBReplaced(id) // blocked XREADGROUP clients fail, as in Redis 7.0
	}
	c.trackingFlushed() // tracked keys are not per database: every one is invalid now
	return n
}

func flushdbCommand(c *Ctx) {
	if !flushMode(c) {
		return
	}
	c.Dirty(flushDBs(c, c.DB.ID))
	c.W.OK()
}

func flushallCommand(c *Ctx) {
	if !flushMode(c) {
		return
	}
	ids := make([]int, c.Store.NumDBs())
	for i := range ids {
		ids[i] = i
	}
	n := flushDBs(c, ids...)
	// Named limiters live outside the keyspace but FLUSHALL drops them too (spec §8.1);
	// clearing them while every shard is held keeps the flush one atomic step.
	c.Store.Limiters.Clear()
	// HOOK(persistence): Redis saves a snapshot here when save points are configured.
	c.Dirty(n + 1) // Redis counts the flushed keys plus the FLUSHALL itself
	c.W.OK()
}

// sharedIntegers is Redis's OBJ_SHARED_INTEGERS: values 0..9999 are shared objects whose
// OBJECT REFCOUNT is INT_MAX under the default (non-LRU/LFU) maxmemory policy.
const sharedIntegers = 10000

// objectLookup is the key lookup of every OBJECT subcommand: no touch, null when missing.
func objectLookup(c *Ctx) *store.Entry {
	e := c.DB.LookupReadNoTouch(c.Args[2], c.Now)
	if e == nil {
		c.W.Null()
	}
	return e
}

// encodingName is OBJECT ENCODING. Aggregate values report theirs through an Encoding method
// on Value.Obj().
func encodingName(v *store.Value) string {
	if v.Kind == store.KindString {
		switch {
		case v.IsInt:
			return "int"
		case !v.Raw && len(v.Bytes()) <= 44: // OBJ_ENCODING_EMBSTR_SIZE_LIMIT
			return "embstr"
		}
		return "raw"
	}
	if enc, ok := v.Obj().(interface{ Encoding() string }); ok {
		return enc.Encoding()
	}
	return "raw"
}

func objectEncodingCommand(c *Ctx) {
	if e := objectLookup(c); e != nil {
		c.W.BulkString(encodingName(&e.Val))
	}
}

func objectRefcountCommand(c *Ctx) {
	e := objectLookup(c)
	if e == nil {
		return
	}
	// Redis stops sharing integers while a maxmemory limit is set with an LRU or LFU policy
	// (each key then needs its own access field): such a value reports 1.
	p := c.Store.Mem.Policy()
	perKey := c.Store.Mem.Limit() > 0 && p != store.PolicyNoEviction && p != store.PolicyAllKeysRandom && p != store.PolicyVolatileRandom && p != store.PolicyVolatileTTL
	if e.Val.IsInt && e.Val.Int >= 0 && e.Val.Int < sharedIntegers && !perKey {
		c.W.Int(math.MaxInt32)
		return
	}
	c.W.Int(1)
}

// lfuPolicy reports whether maxmemory-policy is an LFU one, which decides whether OBJECT FREQ
// or OBJECT IDLETIME is meaningful: the entry's lru field holds one or the other.
func lfuPolicy(c *Ctx) bool { return c.Store.Mem.Policy().LFU() }

func objectFreqCommand(c *Ctx) {
	e := objectLookup(c)
	if e == nil {
		return
	}
	if !lfuPolicy(c) {
		c.Error("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		return
	}
	c.W.Int(int64(c.Store.Freq(e, c.Now)))
}

func objectIdletimeCommand(c *Ctx) {
	e := objectLookup(c)
	if e == nil {
		return
	}
	if lfuPolicy(c) {
		c.Error("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
		return
	}
	c.W.Int(e.IdleSeconds(c.Now))
}

func objectHelpCommand(c *Ctx) {
	lines := []string{
		"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
		"HELP",
		"    Prints this help.",
	}
	c.W.Array(len(lines))
	for _, l := range lines {
		c.W.Simple(l)
	}
}

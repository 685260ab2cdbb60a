package command

import (
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/hotkv/hotkv/internal/glob"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Sets (types.Set): an intset while every member is an integer and there are at most
// set-max-intset-entries of them, a hashtable otherwise, as Redis 7.0 encodes them. The
// algorithms follow Redis 7.0's t_set.c where the choice shows: which set SINTER walks, the
// two SDIFF algorithms, how SPOP with a count picks its members. They decide the encoding of a
// stored result and the order replies list an intset's members in (ascending), which the compat
// corpus compares with Redis. SADD, SREM, SMOVE and the STORE commands are deterministic given
// the sets and journaled as given; SPOP as the SREM of the members it popped, or DEL when it
// popped them all, as Redis propagates it (effects.go).

func setCommands() []*Command {
	row := func(name string, arity int, flags Flag, acl string, ks KeySpecFlag, since, syntax, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{acl, "set", aclSpeed(flags)},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(ks), Group: "set", Since: since,
			Syntax: syntax, Complexity: complexity, Summary: summary, Handler: h}
	}
	// many is a command over key [key ...], storing into a destination first when store is set.
	many := func(name string, store bool, complexity, summary string, h Handler) *Command {
		c := &Command{Name: name, Arity: -2, Flags: FlagReadOnly, ACL: []string{"read", "set", "slow"},
			FirstKey: 1, LastKey: -1, Step: 1, KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, LastKey: -1, Step: 1}},
			Group: "set", Since: "1.0.0", Syntax: "key [key ...]", Complexity: complexity, Summary: summary,
			Tips: []string{"nondeterministic_output_order"}, Handler: h}
		if store {
			// Redis 7.0 declares SINTERSTORE's destination RW, SUNIONSTORE's and SDIFFSTORE's OW.
			dst := KSOW | KSUpdate
			if name == "sinterstore" {
				dst = KSRW | KSUpdate
			}
			c.Arity, c.Flags, c.ACL, c.Tips = -3, FlagWrite|FlagDenyOOM, []string{"write", "set", "slow"}, nil
			c.KeySpecs = []KeySpec{{Flags: dst, Begin: 1, Step: 1}, {Flags: KSRO | KSAccess, Begin: 2, LastKey: -1, Step: 1}}
			c.Syntax = "destination key [key ...]"
		}
		return c
	}
	const wf, rf = FlagWrite | FlagDenyOOM | FlagFast, FlagReadOnly | FlagFast
	const interN = "O(N*M) worst case where N is the cardinality of the smallest set and M is the number of sets."
	const totalN = "O(N) where N is the total number of elements in all given sets."

	sadd := row("sadd", -3, wf, "write", KSRW|KSInsert, "1.0.0", "key member [member ...]",
		"O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments.",
		"Add one or more members to a set", saddCommand)
	sadd.Doc = "2.4.0: Accepts multiple `member` arguments."
	srem := row("srem", -3, FlagWrite|FlagFast, "write", KSRW|KSDelete, "1.0.0", "key member [member ...]",
		"O(N) where N is the number of members to be removed.", "Remove one or more members from a set", sremCommand)
	srem.Doc = "2.4.0: Accepts multiple `member` arguments."
	smembers := row("smembers", 2, FlagReadOnly, "read", KSRO|KSAccess, "1.0.0", "key",
		"O(N) where N is the set cardinality.", "Get all the members in a set", smembersCommand)
	smembers.Tips = []string{"nondeterministic_output_order"}
	srandmember := row("srandmember", -2, FlagReadOnly, "read", KSRO|KSAccess, "1.0.0", "key [count]",
		"Without the count argument O(1), otherwise O(N) where N is the absolute value of the passed count.",
		"Get one or multiple random members from a set", srandmemberCommand)
	srandmember.Tips = []string{"nondeterministic_output"}
	srandmember.Doc = "2.6.0: Added the optional `count` argument."
	spop := row("spop", -2, FlagWrite|FlagFast, "write", KSRW|KSAccess|KSDelete, "1.0.0", "key [count]",
		"Without the count argument O(1), otherwise O(N) where N is the value of the passed count.",
		"Remove and return one or multiple random members from a set", spopCommand)
	spop.Tips = []string{"nondeterministic_output"}
	spop.Doc = "3.2.0: Added the `count` argument. When fewer than a fifth of the count would remain, the members that stay move " +
		"into a new set whose encoding is chosen afresh, as in Redis 7.0 (an all-integer hashtable can become an intset). " +
		"Journaled as SREM of the members popped, or DEL when it popped them all."
	smove := row("smove", 4, FlagWrite|FlagFast, "write", KSRW|KSAccess|KSDelete, "1.0.0", "source destination member", "O(1)",
		"Move a member from one set to another", smoveCommand)
	smove.LastKey = 2
	smove.KeySpecs = append(smove.KeySpecs, KeySpec{Flags: KSRW | KSInsert, Begin: 2, Step: 1})
	sscan := row("sscan", -3, FlagReadOnly, "read", KSRO|KSAccess, "2.8.0", "key cursor [MATCH pattern] [COUNT count]",
		"O(1) for every call. O(N) for a complete iteration, including enough command calls for the cursor to return back to 0. N is the number of elements inside the collection..",
		"Incrementally iterate Set elements", sscanCommand)
	sscan.Tips = []string{"nondeterministic_output"}
	sscan.Doc = "An intset returns all its members in one call, with cursor 0. COUNT counts the members visited before MATCH filters them, as in Redis."
	sintercard := &Command{Name: "sintercard", Arity: -3, Flags: FlagReadOnly, ACL: []string{"read", "set", "slow"},
		KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, Begin: 1, FirstKey: 1, Step: 1}}, GetKeys: sintercardKeys,
		Group: "set", Since: "7.0.0", Syntax: "numkeys key [key ...] [LIMIT limit]", Complexity: interN,
		Summary: "Intersect multiple sets and return the cardinality of the result", Handler: sintercardCommand}
	return []*Command{
		sadd, srem,
		row("scard", 2, rf, "read", KSRO, "1.0.0", "key", "O(1)", "Get the number of members in a set", scardCommand),
		row("sismember", 3, rf, "read", KSRO, "1.0.0", "key member", "O(1)", "Determine if a given value is a member of a set", sismemberCommand),
		row("smismember", -3, rf, "read", KSRO|KSAccess, "6.2.0", "key member [member ...]",
			"O(N) where N is the number of elements being checked for membership",
			"Returns the membership associated with the given elements for a set", smismemberCommand),
		smembers, srandmember, spop, smove,
		many("sinter", false, interN, "Intersect multiple sets", sinterCommand),
		sintercard,
		many("sinterstore", true, interN, "Intersect multiple sets and store the resulting set in a key", sinterstoreCommand),
		many("sunion", false, totalN, "Add multiple sets", sunionCommand),
		many("sunionstore", true, totalN, "Add multiple sets and store the resulting set in a key", sunionstoreCommand),
		many("sdiff", false, totalN, "Subtract multiple sets", sdiffCommand),
		many("sdiffstore", true, totalN, "Subtract multiple sets and store the resulting set in a key", sdiffstoreCommand),
		sscan,
	}
}

// sintercardKeys finds SINTERCARD's keys from numkeys, for the dispatcher's locks; a numkeys the
// handler rejects yields none, and the handler touches no key then.
func sintercardKeys(args [][]byte) []int {
	if len(args) < 2 {
		return nil
	}
	n, ok := resp.ParseInt(args[1])
	if !ok || n < 1 || n > int64(len(args)-2) {
		return nil
	}
	out := make([]int, n)
	for i := range out {
		out[i] = 2 + i
	}
	return out
}

// setRead returns key's set for a read, replying WRONGTYPE for another type; nil with ok for a
// missing key.
func setRead(c *Ctx, key []byte) (e *store.Entry, s *types.Set, ok bool) {
	if e = c.LookupRead(key); e == nil {
		return nil, nil, true
	}
	if e.Val.Kind != store.KindSet {
		c.WrongType()
		return nil, nil, false
	}
	return e, e.Val.Obj().(*types.Set), true
}

// setWrite returns key's set for a write; WRONGTYPE for another type, nil with ok for a missing
// key.
func setWrite(c *Ctx, key []byte) (e *store.Entry, s *types.Set, ok bool) {
	if e = c.Lookup(key); e == nil {
		return nil, nil, true
	}
	if e.Val.Kind != store.KindSet {
		c.WrongType()
		return nil, nil, false
	}
	return e, e.Val.Obj().(*types.Set), true
}

// newSetKey stores a new empty set at key, which must be missing.
func newSetKey(c *Ctx, key []byte) *types.Set {
	e := c.DB.Set(key, types.NewSetValue(), 0, false, c.Now)
	return e.Val.Obj().(*types.Set)
}

// replySetMembers writes s's members as the elements of an aggregate already started.
func replySetMembers(c *Ctx, s *types.Set) {
	if s.IsIntset() {
		s.EachInt(func(n int64) bool {
			c.W.BulkInt(n)
			return true
		})
		return
	}
	s.Each(func(m string) bool {
		c.W.BulkString(m)
		return true
	})
}

func saddCommand(c *Ctx) {
	_, s, ok := setWrite(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		s = newSetKey(c, c.Args[1])
	}
	added := 0
	for _, m := range c.Args[2:] {
		if s.Add(argStr(m)) {
			added++
		}
	}
	c.Dirty(int64(added))
	if added > 0 {
		c.notify(evSet, "sadd", c.Args[1])
	}
	c.W.Int(int64(added))
}

func sremCommand(c *Ctx) {
	e, s, ok := setWrite(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.W.Int(0)
		return
	}
	deleted := 0
	for _, m := range c.Args[2:] {
		if s.Remove(string(m)) {
			deleted++
			if s.Len() == 0 {
				break
			}
		}
	}
	if deleted > 0 {
		c.notify(evSet, "srem", c.Args[1])
		if s.Len() == 0 {
			c.DB.Remove(e)
			c.notify(evGeneric, "del", c.Args[1])
		}
	}
	c.Dirty(int64(deleted))
	c.W.Int(int64(deleted))
}

func scardCommand(c *Ctx) {
	_, s, ok := setRead(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(s.Len()))
}

// memberFlag is SISMEMBER's 1 or 0.
func memberFlag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func sismemberCommand(c *Ctx) {
	_, s, ok := setRead(c, c.Args[1])
	if !ok {
		return
	}
	c.W.Int(memberFlag(s != nil && s.Has(string(c.Args[2]))))
}

func smismemberCommand(c *Ctx) {
	_, s, ok := setRead(c, c.Args[1])
	if !ok {
		return
	}
	c.W.Array(len(c.Args) - 2)
	for _, m := range c.Args[2:] {
		c.W.Int(memberFlag(s != nil && s.Has(string(m))))
	}
}

// smembersCommand is SINTER of one key, as in Redis 7.0: the members in the set's order.
func smembersCommand(c *Ctx) {
	_, s, ok := setRead(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.W.Set(0)
		return
	}
	c.W.Set(s.Len())
	replySetMembers(c, s)
}

func srandmemberCommand(c *Ctx) {
	if len(c.Args) > 3 {
		c.Syntax()
		return
	}
	if len(c.Args) == 2 {
		_, s, ok := setRead(c, c.Args[1])
		if !ok {
			return
		}
		if s == nil {
			c.W.Null()
			return
		}
		c.W.BulkString(s.Random(rand.Uint64N))
		return
	}
	l, ok := c.Int(2)
	if !ok {
		return
	}
	if l < -9223372036854775807 {
		c.Error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	_, s, ok := setRead(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil || l == 0 {
		c.W.Array(0)
		return
	}
	count, uniq := l, true
	if l < 0 {
		count, uniq = -l, false
	}
	size := int64(s.Len())
	switch {
	case !uniq || count == 1: // count picks, repeats allowed
		c.W.Array(int(count))
		for range count {
			c.W.BulkString(s.Random(rand.Uint64N))
		}
	case count >= size: // the whole set, in its order
		c.W.Array(int(size))
		replySetMembers(c, s)
	default: // count distinct members in random order
		picked := sampleMembers(s, int(count))
		c.W.Array(len(picked))
		for _, m := range picked {
			c.W.BulkString(m)
		}
	}
}

// sampleMembers returns count distinct random members of s, count < s.Len(), in random order:
// a partial shuffle of all members when count is a large part of the set (Redis's case 3), or
// random picks until count distinct ones came up (case 4).
func sampleMembers(s *types.Set, count int) []string {
	size := s.Len()
	if count*3 > size {
		all := s.Members()
		for i := 0; i < count; i++ {
			j := i + rand.IntN(size-i)
			all[i], all[j] = all[j], all[i]
		}
		return all[:count]
	}
	seen := make(map[string]struct{}, count)
	out := make([]string, 0, count)
	for len(out) < count {
		m := s.Random(rand.Uint64N)
		if _, dup := seen[m]; !dup {
			seen[m] = struct{}{}
			out = append(out, m)
		}
	}
	return out
}

var effSRem = []byte("SREM")

func spopCommand(c *Ctx) {
	if len(c.Args) > 3 {
		c.Syntax()
		return
	}
	if len(c.Args) == 3 {
		spopWithCount(c)
		return
	}
	e, s, ok := setWrite(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.W.Null()
		return
	}
	m := s.Random(rand.Uint64N)
	s.Remove(m)
	c.notify(evSet, "spop", c.Args[1])
	if s.Len() == 0 {
		c.DB.Remove(e)
		c.notify(evGeneric, "del", c.Args[1])
	}
	c.Dirty(1)
	if c.Store.Journal != nil {
		c.Emit(c.DB.ID, effSRem, c.Args[1], []byte(m))
	}
	c.W.BulkString(m)
}

// spopMoveStrategyMul is Redis's SPOP_MOVE_STRATEGY_MUL: when fewer than count/5 members would
// remain, SPOP picks those that remain instead of those it pops.
const spopMoveStrategyMul = 5

func spopWithCount(c *Ctx) {
	l, ok := resp.ParseInt(c.Args[2])
	if !ok || l < 0 {
		c.Error("ERR value is out of range, must be positive")
		return
	}
	e, s, ok := setWrite(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil || l == 0 {
		c.W.Set(0)
		return
	}
	count, size := l, int64(s.Len())
	if count >= size {
		// The whole set, listed as the SUNION of the key would list it, and the key goes.
		all := types.NewSet()
		s.Each(func(m string) bool {
			all.Add(m)
			return true
		})
		c.DB.Remove(e)
		c.Dirty(size)
		c.notify(evSet, "spop", c.Args[1])
		c.notify(evGeneric, "del", c.Args[1])
		c.emitDel(c.Args[1])
		c.W.Set(all.Len())
		replySetMembers(c, all)
		return
	}
	popped := make([]string, 0, count)
	if remaining := size - count; remaining*spopMoveStrategyMul > count {
		// Pop count random members.
		for range count {
			m := s.Random(rand.Uint64N)
			s.Remove(m)
			popped = append(popped, m)
		}
	} else {
		// Move the few members that stay into a new set, which replaces the old one (its
		// encoding chosen afresh, as Redis does), and pop what is left of the old one.
		kept := types.NewSet()
		for range remaining {
			m := s.Random(rand.Uint64N)
			kept.Add(m)
			s.Remove(m)
		}
		popped = s.Members()
		c.DB.Set(c.Args[1], kept.Value(), 0, true, c.Now)
	}
	c.Dirty(count)
	c.notify(evSet, "spop", c.Args[1])
	if c.Store.Journal != nil {
		args := make([][]byte, 0, 2+len(popped))
		args = append(args, effSRem, c.Args[1])
		for _, m := range popped {
			args = append(args, []byte(m))
		}
		c.Emit(c.DB.ID, args...)
	}
	c.W.Set(len(popped))
	for _, m := range popped {
		c.W.BulkString(m)
	}
}

func smoveCommand(c *Ctx) {
	srcKey, dstKey, member := c.Args[1], c.Args[2], string(c.Args[3])
	src := c.Lookup(srcKey)
	dst := c.Lookup(dstKey)
	if src == nil {
		c.W.Int(0)
		return
	}
	if src.Val.Kind != store.KindSet || (dst != nil && dst.Val.Kind != store.KindSet) {
		c.WrongType()
		return
	}
	ss := src.Val.Obj().(*types.Set)
	if src == dst {
		c.W.Int(memberFlag(ss.Has(member)))
		return
	}
	if !ss.Remove(member) {
		c.W.Int(0)
		return
	}
	c.notify(evSet, "srem", srcKey)
	if ss.Len() == 0 {
		c.DB.Remove(src)
		c.notify(evGeneric, "del", srcKey)
	}
	var ds *types.Set
	if dst == nil {
		ds = newSetKey(c, dstKey)
	} else {
		ds = dst.Val.Obj().(*types.Set)
	}
	dirty := int64(1)
	// WATCH sees the destination change only when the member was new there, as Redis
	// signals it.
	c.touched = true
	c.touchIn(c.DB, srcKey)
	if ds.Add(member) {
		dirty++
		c.touchIn(c.DB, dstKey)
		c.notify(evSet, "sadd", dstKey)
	}
	c.Dirty(dirty)
	c.W.Int(1)
}

// setOperands looks up the sets of an algebra command in order, as Redis does: a missing key
// is a nil set, and the first key of another type ends it with WRONGTYPE.
func setOperands(c *Ctx, keys [][]byte) ([]*types.Set, bool) {
	sets := make([]*types.Set, len(keys))
	for i, k := range keys {
		_, s, ok := setRead(c, k)
		if !ok {
			return nil, false
		}
		sets[i] = s
	}
	return sets, true
}

// storeSetResult stores a STORE command's result at dst, replacing what was there (TTL
// included), or deletes dst when the result is empty; it replies the result's size.
func storeSetResult(c *Ctx, dst []byte, result *types.Set) {
	if result == nil || result.Len() == 0 {
		if c.DB.Delete(dst, c.Now) {
			c.Dirty(1)
			c.notify(evGeneric, "del", dst)
		}
		c.W.Int(0)
		return
	}
	c.DB.Set(dst, result.Value(), 0, false, c.Now)
	c.Dirty(1)
	c.notify(evSet, c.Cmd.Name, dst) // sinterstore, sunionstore, sdiffstore
	c.W.Int(int64(result.Len()))
}

// sinterGeneric is SINTER, SINTERSTORE (dst set), SINTERCARD (cardOnly, limit 0 for none) and
// SMEMBERS-like reads: Redis 7.0's sinterGenericCommand. It walks the smallest set (the first
// of equal ones) and keeps the members every other set has.
func sinterGeneric(c *Ctx, keys [][]byte, dst []byte, cardOnly bool, limit int64) {
	sets, ok := setOperands(c, keys)
	if !ok {
		return
	}
	if slices.Contains(sets, nil) { // an empty set empties the intersection
		switch {
		case dst != nil:
			storeSetResult(c, dst, nil)
		case cardOnly:
			c.W.Int(0)
		default:
			c.W.Set(0)
		}
		return
	}
	slices.SortStableFunc(sets, func(a, b *types.Set) int { return a.Len() - b.Len() })
	inAll := func(m string) bool {
		for _, o := range sets[1:] {
			if o != sets[0] && !o.Has(m) {
				return false
			}
		}
		return true
	}
	switch {
	case cardOnly:
		var n int64
		sets[0].Each(func(m string) bool {
			if inAll(m) {
				n++
				if limit > 0 && n >= limit {
					return false
				}
			}
			return true
		})
		c.W.Int(n)
	case dst != nil:
		result := types.NewSet()
		sets[0].Each(func(m string) bool {
			if inAll(m) {
				result.Add(m)
			}
			return true
		})
		storeSetResult(c, dst, result)
	default:
		var found []string
		sets[0].Each(func(m string) bool {
			if inAll(m) {
				found = append(found, m)
			}
			return true
		})
		c.W.Set(len(found))
		for _, m := range found {
			c.W.BulkString(m)
		}
	}
}

func sinterCommand(c *Ctx)      { sinterGeneric(c, c.Args[1:], nil, false, 0) }
func sinterstoreCommand(c *Ctx) { sinterGeneric(c, c.Args[2:], c.Args[1], false, 0) }

func sintercardCommand(c *Ctx) {
	numkeys, ok := resp.ParseInt(c.Args[1])
	if !ok || numkeys < 1 {
		c.Error("ERR numkeys should be greater than 0")
		return
	}
	if numkeys > int64(len(c.Args)-2) {
		c.Error("ERR Number of keys can't be greater than number of args")
		return
	}
	var limit int64
	for j := 2 + int(numkeys); j < len(c.Args); j++ {
		if c.ArgIs(j, "limit") && j+1 < len(c.Args) {
			j++
			n, ok := resp.ParseInt(c.Args[j])
			if !ok || n < 0 {
				c.Error("ERR LIMIT can't be negative")
				return
			}
			limit = n
			continue
		}
		c.Syntax()
		return
	}
	sinterGeneric(c, c.Args[2:2+numkeys], nil, true, limit)
}

const (
	setOpUnion = iota
	setOpDiff
)

// sunionDiff is SUNION, SDIFF and their STORE forms (dst set): Redis 7.0's
// sunionDiffGenericCommand. The result is built as a new set, which the read forms then list,
// so an all-integer result comes out in ascending order, as Redis's does.
func sunionDiff(c *Ctx, keys [][]byte, dst []byte, op int) {
	sets, ok := setOperands(c, keys)
	if !ok {
		return
	}
	result := types.NewSet()
	switch {
	case op == setOpUnion:
		for _, s := range sets {
			if s == nil {
				continue
			}
			s.Each(func(m string) bool {
				result.Add(m)
				return true
			})
		}
	case sets[0] == nil:
		// The difference of nothing is empty.
	default:
		// Algorithm 1 walks the first set and checks each member against the others:
		// O(N*M); algorithm 2 adds the first set and removes the others: O(total). Redis
		// halves the first's estimate, and the choice shows in the result's encoding.
		var work1, work2 int64
		for _, s := range sets {
			if s != nil {
				work1 += int64(sets[0].Len())
				work2 += int64(s.Len())
			}
		}
		if work1/2 <= work2 {
			others := slices.Clone(sets[1:])
			slices.SortStableFunc(others, func(a, b *types.Set) int { return setLen(b) - setLen(a) })
			sets[0].Each(func(m string) bool {
				for _, o := range others {
					if o != nil && (o == sets[0] || o.Has(m)) {
						return true
					}
				}
				result.Add(m)
				return true
			})
		} else {
			for i, s := range sets {
				if s == nil {
					continue
				}
				s.Each(func(m string) bool {
					if i == 0 {
						result.Add(m)
					} else {
						result.Remove(m)
					}
					return true
				})
				if result.Len() == 0 {
					break
				}
			}
		}
	}
	if dst != nil {
		storeSetResult(c, dst, result)
		return
	}
	c.W.Set(result.Len())
	replySetMembers(c, result)
}

func setLen(s *types.Set) int {
	if s == nil {
		return 0
	}
	return s.Len()
}

func sunionCommand(c *Ctx)      { sunionDiff(c, c.Args[1:], nil, setOpUnion) }
func sunionstoreCommand(c *Ctx) { sunionDiff(c, c.Args[2:], c.Args[1], setOpUnion) }
func sdiffCommand(c *Ctx)       { sunionDiff(c, c.Args[1:], nil, setOpDiff) }
func sdiffstoreCommand(c *Ctx)  { sunionDiff(c, c.Args[2:], c.Args[1], setOpDiff) }

// sscanCommand follows Redis's order: the cursor is checked first, then the key (a missing one
// answers an empty scan whatever the options), then the options.
func sscanCommand(c *Ctx) {
	cursor, ok := parseScanCursor(c.Args[2])
	if !ok {
		c.Error("ERR invalid cursor")
		return
	}
	_, s, ok := setRead(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		replyEmptyScan(c)
		return
	}
	count, pat, usePat, ok := keyScanOptions(c)
	if !ok {
		return
	}
	var found []string
	visit := func(m string) { found = append(found, m) }
	next := uint64(0)
	if s.IsIntset() {
		s.Scan(0, visit)
	} else {
		// Redis's loop: up to count*10 buckets, until count members were seen (before MATCH
		// filters them).
		budget := count * 10
		next = cursor
		for {
			next = s.Scan(next, visit)
			if next == 0 || budget == 0 {
				break
			}
			budget--
			if int64(len(found)) >= count {
				break
			}
		}
	}
	if usePat {
		kept := found[:0]
		for _, m := range found {
			if glob.Match(pat, m, false) {
				kept = append(kept, m)
			}
		}
		found = kept
	}
	c.W.Array(2)
	c.W.BulkString(strconv.FormatUint(next, 10))
	c.W.Array(len(found))
	for _, m := range found {
		c.W.BulkString(m)
	}
}

package command

import (
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Lists (types.List). Pushes, pops, LSET, LINSERT, LREM, LTRIM, LMOVE and RPOPLPUSH are
// deterministic given the list and journaled as given; LMPOP as the LPOP or RPOP of the key it
// popped from (effects.go). The blocking pops come with the blocking machinery.

func listCommands() []*Command {
	one := func(name string, arity int, flags Flag, acl string, ks KeySpecFlag, since, syntax, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{acl, "list", aclSpeed(flags)},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(ks), Group: "list", Since: since,
			Syntax: syntax, Complexity: complexity, Summary: summary, Handler: h}
	}
	const pushN = "O(1) for each element added, so O(N) to add N elements when the command is called with multiple arguments."
	const wf = FlagWrite | FlagDenyOOM | FlagFast
	two := func(name string, arity int, since, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "list", "slow"},
			FirstKey: 1, LastKey: 2, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, Step: 1}, {Flags: KSRW | KSInsert, Begin: 2, Step: 1}},
			Group:    "list", Since: since, Syntax: syntax, Complexity: "O(1)", Summary: summary, Handler: h}
	}
	rpoplpush := two("rpoplpush", 3, "1.2.0", "source destination", "Remove the last element in a list, prepend it to another list and return it", rpoplpushCommand)
	rpoplpush.Doc = "Deprecated since 6.2.0: use LMOVE with RIGHT LEFT."
	const blockDoc = "Blocked clients are served in the order they blocked, right after the command (or the EXEC) that gave their key elements; inside MULTI it does not block."
	bpop := func(name, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: -3, Flags: FlagWrite | FlagNoScript | FlagBlocking, ACL: []string{"write", "list", "slow", "blocking"},
			FirstKey: 1, LastKey: -2, Step: 1, KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, LastKey: -2, Step: 1}},
			Group: "list", Since: "2.0.0", Syntax: "key [key ...] timeout", Complexity: "O(N) where N is the number of provided keys.",
			Summary: summary, Doc: blockDoc, Handler: h}
	}
	bmove := func(name string, arity int, since, syntax string, h Handler) *Command {
		cmd := two(name, arity, since, syntax, "Pop an element from a list, push it to another list and return it; or block until one is available", h)
		cmd.Flags |= FlagNoScript | FlagBlocking
		cmd.ACL = append(cmd.ACL, "blocking")
		cmd.Doc = "A blocked client is woken when its source gets elements and runs again: if another client took them first, it blocks again."
		return cmd
	}
	brpoplpush := bmove("brpoplpush", 4, "2.2.0", "source destination timeout", brpoplpushCommand)
	brpoplpush.Doc = "Deprecated since 6.2.0: use BLMOVE with RIGHT LEFT. " + brpoplpush.Doc
	return []*Command{
		one("lpush", -3, wf, "write", KSRW|KSInsert, "1.0.0", "key element [element ...]", pushN, "Prepend one or multiple elements to a list", lpushCommand),
		one("rpush", -3, wf, "write", KSRW|KSInsert, "1.0.0", "key element [element ...]", pushN, "Append one or multiple elements to a list", rpushCommand),
		one("lpushx", -3, wf, "write", KSRW|KSInsert, "2.2.0", "key element [element ...]", pushN, "Prepend an element to a list, only if the list exists", lpushxCommand),
		one("rpushx", -3, wf, "write", KSRW|KSInsert, "2.2.0", "key element [element ...]", pushN, "Append an element to a list, only if the list exists", rpushxCommand),
		one("lpop", -2, FlagWrite|FlagFast, "write", KSRW|KSAccess|KSDelete, "1.0.0", "key [count]", "O(N) where N is the number of elements returned", "Remove and get the first elements in a list", lpopCommand),
		one("rpop", -2, FlagWrite|FlagFast, "write", KSRW|KSAccess|KSDelete, "1.0.0", "key [count]", "O(N) where N is the number of elements returned", "Remove and get the last elements in a list", rpopCommand),
		one("llen", 2, FlagReadOnly|FlagFast, "read", KSRO, "1.0.0", "key", "O(1)", "Get the length of a list", llenCommand),
		one("lrange", 4, FlagReadOnly, "read", KSRO|KSAccess, "1.0.0", "key start stop",
			"O(S+N) where S is the distance of start offset from HEAD for small lists, from nearest end (HEAD or TAIL) for large lists; and N is the number of elements in the specified range.",
			"Get a range of elements from a list", lrangeCommand),
		one("lindex", 3, FlagReadOnly, "read", KSRO|KSAccess, "1.0.0", "key index",
			"O(N) where N is the number of elements to traverse to get to the element at index. This makes asking for the first or the last element of the list O(1).",
			"Get an element from a list by its index", lindexCommand),
		one("lset", 4, FlagWrite|FlagDenyOOM, "write", KSRW|KSUpdate, "1.0.0", "key index element",
			"O(N) where N is the length of the list. Setting either the first or the last element of the list is O(1).",
			"Set the value of an element in a list by its index", lsetCommand),
		one("linsert", 5, FlagWrite|FlagDenyOOM, "write", KSRW|KSInsert, "2.2.0", "key <BEFORE | AFTER> pivot element",
			"O(N) where N is the number of elements to traverse before seeing the value pivot. This means that inserting somewhere on the left end on the list (head) can be considered O(1) and inserting somewhere on the right end (tail) is O(N).",
			"Insert an element before or after another element in a list", linsertCommand),
		one("lrem", 4, FlagWrite, "write", KSRW|KSDelete, "1.0.0", "key count element",
			"O(N+M) where N is the length of the list and M is the number of elements removed.", "Remove elements from a list", lremCommand),
		one("ltrim", 4, FlagWrite, "write", KSRW|KSDelete, "1.0.0", "key start stop",
			"O(N) where N is the number of elements to be removed by the operation.", "Trim a list to the specified range", ltrimCommand),
		one("lpos", -3, FlagReadOnly, "read", KSRO|KSAccess, "6.0.6", "key element [RANK rank] [COUNT num-matches] [MAXLEN len]",
			"O(N) where N is the number of elements in the list, for the average case. When searching for elements near the head or the tail of the list, or when the MAXLEN option is provided, the command may run in constant time.",
			"Return the index of matching elements on a list", lposCommand),
		{Name: "lmpop", Arity: -4, Flags: FlagWrite, ACL: []string{"write", "list", "slow"},
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, FirstKey: 1, Step: 1}},
			Group:    "list", Since: "7.0.0", Syntax: "numkeys key [key ...] <LEFT | RIGHT> [COUNT count]",
			Complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
			Summary:    "Pop elements from a list", Handler: lmpopCommand},
		two("lmove", 5, "6.2.0", "source destination <LEFT | RIGHT> <LEFT | RIGHT>", "Pop an element from a list, push it to another list and return it", lmoveCommand),
		rpoplpush,
		bpop("blpop", "Remove and get the first element in a list, or block until one is available", blpopCommand),
		bpop("brpop", "Remove and get the last element in a list, or block until one is available", brpopCommand),
		{Name: "blmpop", Arity: -5, Flags: FlagWrite | FlagBlocking, ACL: []string{"write", "list", "slow", "blocking"},
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 2, FirstKey: 1, Step: 1}},
			Group:    "list", Since: "7.0.0", Syntax: "timeout numkeys key [key ...] <LEFT | RIGHT> [COUNT count]",
			Complexity: "O(N+M) where N is the number of provided keys and M is the number of elements returned.",
			Summary:    "Pop elements from a list, or block until one is available", Doc: blockDoc, Handler: blmpopCommand},
		bmove("blmove", 6, "6.2.0", "source destination <LEFT | RIGHT> <LEFT | RIGHT> timeout", blmoveCommand),
		brpoplpush,
	}
}

// listRead returns key's list for a read; WRONGTYPE for another type; nil with ok for none.
func listRead(c *Ctx, key []byte) (*store.Entry, *types.List, bool) {
	e := c.LookupRead(key)
	if e == nil {
		return nil, nil, true
	}
	if e.Val.Kind != store.KindList {
		c.WrongType()
		return nil, nil, false
	}
	return e, e.Val.Obj().(*types.List), true
}

// listWrite is listRead for a write (expired keys are deleted, access not counted as a read).
func listWrite(c *Ctx, key []byte) (*store.Entry, *types.List, bool) {
	e := c.Lookup(key)
	if e == nil {
		return nil, nil, true
	}
	if e.Val.Kind != store.KindList {
		c.WrongType()
		return nil, nil, false
	}
	return e, e.Val.Obj().(*types.List), true
}

func newList(c *Ctx, key []byte) *types.List {
	e := c.DB.Set(key, types.NewListValue(), 0, false, c.Now)
	return e.Val.Obj().(*types.List)
}

func push(c *Ctx, left, mustExist bool) {
	_, l, ok := listWrite(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		if mustExist {
			c.W.Int(0)
			return
		}
		l = newList(c, c.Args[1])
	}
	for _, v := range c.Args[2:] {
		if left {
			l.PushLeft(argStr(v))
		} else {
			l.PushRight(argStr(v))
		}
	}
	c.Dirty(int64(len(c.Args) - 2))
	c.notify(evList, pushEvent(left), c.Args[1])
	c.markReady(c.Args[1])
	c.W.Int(int64(l.Len()))
}

// pushEvent and popEvent are the keyspace events of a push or pop at an end.
func pushEvent(left bool) string {
	if left {
		return "lpush"
	}
	return "rpush"
}

func popEvent(left bool) string {
	if left {
		return "lpop"
	}
	return "rpop"
}

// listPopped sends the events of elements popped from a list (Redis's
// listElementsRemoved), deleting the key when the list is now empty.
func (c *Ctx) listPopped(db *store.DB, e *store.Entry, key []byte, l *types.List, left bool) {
	c.notifyIn(db.ID, evList, popEvent(left), key)
	if l.Len() == 0 {
		db.Remove(e)
		c.notifyIn(db.ID, evGeneric, "del", key)
	}
}

func lpushCommand(c *Ctx)  { push(c, true, false) }
func rpushCommand(c *Ctx)  { push(c, false, false) }
func lpushxCommand(c *Ctx) { push(c, true, true) }
func rpushxCommand(c *Ctx) { push(c, false, true) }

func popOne(l *types.List, left bool) string {
	if left {
		return l.PopLeft()
	}
	return l.PopRight()
}

func pop(c *Ctx, left bool) {
	if len(c.Args) > 3 {
		c.ArityError()
		return
	}
	count, hasCount := int64(0), len(c.Args) == 3
	if hasCount {
		n, ok := resp.ParseInt(c.Args[2])
		if !ok || n < 0 {
			c.Error("ERR value is out of range, must be positive")
			return
		}
		count = n
	}
	e, l, ok := listWrite(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		if hasCount {
			c.W.NullArray()
		} else {
			c.W.Null()
		}
		return
	}
	if !hasCount {
		c.W.BulkString(popOne(l, left))
		c.Dirty(1)
	} else {
		if count == 0 {
			c.W.Array(0)
			return
		}
		n := min(int(count), l.Len())
		c.W.Array(n)
		for range n {
			c.W.BulkString(popOne(l, left))
		}
		c.Dirty(int64(n))
	}
	c.listPopped(c.DB, e, c.Args[1], l, left)
}

func lpopCommand(c *Ctx) { pop(c, true) }
func rpopCommand(c *Ctx) { pop(c, false) }

func llenCommand(c *Ctx) {
	_, l, ok := listRead(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(l.Len()))
}

// listRange converts Redis's inclusive start/stop (negative from the end) into [from, to).
func listRange(start, stop int64, n int) (int, int) {
	size := int64(n)
	if start < 0 {
		start += size
	}
	if stop < 0 {
		stop += size
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= size {
		return 0, 0
	}
	if stop >= size {
		stop = size - 1
	}
	return int(start), int(stop) + 1
}

// rangeArgs parses LRANGE and LTRIM's start and stop, replying the error itself.
func rangeArgs(c *Ctx) (start, stop int64, ok bool) {
	if start, ok = c.Int(2); !ok {
		return 0, 0, false
	}
	stop, ok = c.Int(3)
	return start, stop, ok
}

func lrangeCommand(c *Ctx) {
	start, stop, ok := rangeArgs(c)
	if !ok {
		return
	}
	_, l, ok := listRead(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		c.W.Array(0)
		return
	}
	from, to := listRange(start, stop, l.Len())
	c.W.Array(to - from)
	left := to - from
	if left > 0 {
		l.Range(from, func(v string) bool {
			c.W.BulkString(v)
			left--
			return left > 0
		})
	}
}

// listIndex resolves a possibly negative index, reporting false when out of range.
func listIndex(i int64, n int) (int, bool) {
	if i < 0 {
		i += int64(n)
	}
	return int(i), i >= 0 && i < int64(n)
}

func lindexCommand(c *Ctx) {
	idx, ok := c.Int(2)
	if !ok {
		return
	}
	_, l, ok := listRead(c, c.Args[1])
	if !ok {
		return
	}
	if l != nil {
		if i, in := listIndex(idx, l.Len()); in {
			c.W.BulkString(l.Index(i))
			return
		}
	}
	c.W.Null()
}

func lsetCommand(c *Ctx) {
	idx, ok := c.Int(2)
	if !ok {
		return
	}
	_, l, ok := listWrite(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		c.Error("ERR no such key")
		return
	}
	i, in := listIndex(idx, l.Len())
	if !in {
		c.Error("ERR index out of range")
		return
	}
	l.SetIndex(i, string(c.Args[3]))
	c.Dirty(1)
	c.notify(evList, "lset", c.Args[1])
	c.W.OK()
}

func linsertCommand(c *Ctx) {
	var after bool
	switch {
	case c.ArgIs(2, "after"):
		after = true
	case c.ArgIs(2, "before"):
	default:
		c.Syntax()
		return
	}
	_, l, ok := listWrite(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		c.W.Int(0)
		return
	}
	pivot := string(c.Args[3])
	found, i := -1, 0
	l.Range(0, func(v string) bool {
		if v == pivot {
			found = i
			return false
		}
		i++
		return true
	})
	if found >= 0 {
		at := found
		if after {
			at++
		}
		vs := l.Slice(0, l.Len())
		vs = append(vs[:at], append([]string{string(c.Args[4])}, vs[at:]...)...)
		l.Replace(vs)
		c.Dirty(1)
		c.notify(evList, "linsert", c.Args[1])
		c.markReady(c.Args[1])
		c.W.Int(int64(l.Len()))
		return
	}
	c.W.Int(-1)
}

func lremCommand(c *Ctx) {
	count, ok := c.Int(2)
	if !ok {
		return
	}
	e, l, ok := listWrite(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		c.W.Int(0)
		return
	}
	target := string(c.Args[3])
	vs := l.Slice(0, l.Len())
	removed := int64(0)
	keep := make([]bool, len(vs))
	for i := range keep {
		keep[i] = true
	}
	if count >= 0 {
		for i, v := range vs {
			if v == target && (count == 0 || removed < count) {
				keep[i] = false
				removed++
			}
		}
	} else {
		for i := len(vs) - 1; i >= 0; i-- {
			if vs[i] == target && removed < -count {
				keep[i] = false
				removed++
			}
		}
	}
	if removed > 0 {
		out := vs[:0]
		for i, v := range vs {
			if keep[i] {
				out = append(out, v)
			}
		}
		l.Replace(out)
		c.notify(evList, "lrem", c.Args[1])
		if l.Len() == 0 {
			c.DB.Remove(e)
			c.notify(evGeneric, "del", c.Args[1])
		}
		c.Dirty(removed)
	}
	c.W.Int(removed)
}

func ltrimCommand(c *Ctx) {
	start, stop, ok := rangeArgs(c)
	if !ok {
		return
	}
	e, l, ok := listWrite(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		c.W.OK()
		return
	}
	from, to := listRange(start, stop, l.Len())
	removed := l.Len() - (to - from)
	if removed > 0 {
		l.Replace(l.Slice(from, to))
	}
	c.notify(evList, "ltrim", c.Args[1]) // even when nothing went, as Redis
	if removed > 0 {
		if l.Len() == 0 {
			c.DB.Remove(e)
			c.notify(evGeneric, "del", c.Args[1])
		}
		c.Dirty(int64(removed))
	}
	c.W.OK()
}

func lposCommand(c *Ctx) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(c.Args); i += 2 {
		if i+1 >= len(c.Args) {
			c.Syntax()
			return
		}
		switch {
		case c.ArgIs(i, "rank"):
			n, ok := c.Int(i + 1)
			if !ok {
				return
			}
			if n == 0 {
				c.Error("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case c.ArgIs(i, "count"):
			n, ok := c.Int(i + 1)
			if !ok {
				return
			}
			if n < 0 {
				c.Error("ERR COUNT can't be negative")
				return
			}
			count = n
		case c.ArgIs(i, "maxlen"):
			n, ok := c.Int(i + 1)
			if !ok {
				return
			}
			if n < 0 {
				c.Error("ERR MAXLEN can't be negative")
				return
			}
			maxlen = n
		default:
			c.Syntax()
			return
		}
	}
	_, l, ok := listRead(c, c.Args[1])
	if !ok {
		return
	}
	if l == nil {
		if count >= 0 {
			c.W.Array(0)
		} else {
			c.W.Null()
		}
		return
	}
	target := string(c.Args[2])
	var matches []int64
	want := count
	if count == 0 {
		want = int64(l.Len())
	} else if count < 0 {
		want = 1
	}
	skip := rank - 1
	if rank < 0 {
		skip = -rank - 1
		if rank == -9223372036854775808 {
			skip = 0 // Redis 7.0 negates it into itself and takes the first match from the tail
		}
	}
	n := l.Len()
	step := 0
	visit := func(v string) bool {
		if int64(len(matches)) >= want || (maxlen > 0 && int64(step) >= maxlen) {
			return false
		}
		i := step
		if rank < 0 {
			i = n - 1 - step
		}
		step++
		if v == target {
			if skip > 0 {
				skip--
				return true
			}
			matches = append(matches, int64(i))
		}
		return true
	}
	if n > 0 {
		if rank < 0 {
			l.RangeRev(n-1, visit)
		} else {
			l.Range(0, visit)
		}
	}
	if count < 0 {
		if len(matches) == 0 {
			c.W.Null()
		} else {
			c.W.Int(matches[0])
		}
		return
	}
	c.W.Array(len(matches))
	for _, m := range matches {
		c.W.Int(m)
	}
}

func lmpopCommand(c *Ctx) {
	keys, left, count, ok := lmpopParse(c, c.Args)
	if ok && !lmpopServe(c, keys, left, count) {
		c.W.NullArray()
	}
}

// lmpopParse reads "numkeys key... LEFT|RIGHT [COUNT n]" from args[1:] (LMPOP's arguments;
// BLMPOP passes its own after the timeout), replying the error itself when there is one.
func lmpopParse(c *Ctx, args [][]byte) (keys [][]byte, left bool, count int64, ok bool) {
	numkeys, isInt := resp.ParseInt(args[1])
	if !isInt || numkeys <= 0 {
		c.Error("ERR numkeys should be greater than 0")
		return nil, false, 0, false
	}
	if numkeys > int64(len(args)-2) {
		c.Syntax()
		return nil, false, 0, false
	}
	where := 2 + int(numkeys)
	if where >= len(args) {
		c.Syntax()
		return nil, false, 0, false
	}
	switch {
	case EqualFold(args[where], "left"):
		left = true
	case EqualFold(args[where], "right"):
	default:
		c.Syntax()
		return nil, false, 0, false
	}
	count = 1
	rest := args[where+1:]
	switch {
	case len(rest) == 0:
	case len(rest) == 2 && EqualFold(rest[0], "count"):
		n, isInt := resp.ParseInt(rest[1])
		if !isInt || n <= 0 {
			c.Error("ERR count should be greater than 0")
			return nil, false, 0, false
		}
		count = n
	default:
		c.Syntax()
		return nil, false, 0, false
	}
	return args[2:where], left, count, true
}

// lmpopServe pops up to count elements from the first non-empty list of keys and replies
// [key, [elements]], journaled as LPOP/RPOP key n; it reports false, replying nothing, when
// every list is empty, and true after a WRONGTYPE error.
func lmpopServe(c *Ctx, keys [][]byte, left bool, count int64) bool {
	for _, key := range keys {
		e, l, ok := listWrite(c, key)
		if !ok {
			return true
		}
		if l == nil {
			continue
		}
		n := min(int(count), l.Len())
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.Array(n)
		for range n {
			c.W.BulkString(popOne(l, left))
		}
		c.listPopped(c.DB, e, key, l, left)
		c.Dirty(int64(n))
		if c.Store.Journal != nil {
			name := effRPop
			if left {
				name = effLPop
			}
			c.Emit(c.DB.ID, name, key, c.effInt(int64(n)))
		}
		return true
	}
	return false
}

var (
	effLPop = []byte("LPOP")
	effRPop = []byte("RPOP")
)

// move pops from the source's end and pushes at the destination's, checking both types
// first, and reports whether it moved an element.
func move(c *Ctx, fromLeft, toLeft bool) bool {
	se, src, ok := listWrite(c, c.Args[1])
	if !ok {
		return false
	}
	if src == nil {
		c.W.Null()
		return false
	}
	_, dst, ok := listWrite(c, c.Args[2])
	if !ok {
		return false
	}
	v := popOne(src, fromLeft)
	if dst == nil {
		dst = newList(c, c.Args[2]) // (the same key as the source is never nil here: it rotates)
	}
	if toLeft {
		dst.PushLeft(v)
	} else {
		dst.PushRight(v)
	}
	c.notify(evList, pushEvent(toLeft), c.Args[2])
	c.listPopped(c.DB, se, c.Args[1], src, fromLeft)
	c.Dirty(2)
	c.markReady(c.Args[2])
	c.W.BulkString(v)
	return true
}

func lmoveCommand(c *Ctx) {
	var ends [2]bool
	for i, arg := range []int{3, 4} {
		switch {
		case c.ArgIs(arg, "left"):
			ends[i] = true
		case c.ArgIs(arg, "right"):
		default:
			c.Syntax()
			return
		}
	}
	move(c, ends[0], ends[1])
}

func rpoplpushCommand(c *Ctx) { move(c, false, true) }

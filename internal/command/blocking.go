package command

import (
	"math"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Blocking pops (BLPOP, BRPOP, BLMPOP, BLMOVE, BRPOPLPUSH).
//
// A blocking command that finds every key empty registers a store.Waiter on its keys, under
// their shard locks, and replies nothing: the connection (internal/server) then waits for the
// waiter's Ready signal, the timeout or the client going away. A command that adds elements to
// a list marks the key ready (markReady); when the command (or the whole EXEC) is done, and
// before its locks are released, serveReady hands the new elements to the blocked clients in
// the order they blocked, writing each reply into the blocked client's buffer and journaling
// the pop as LPOP/RPOP after the push that fed it, as Redis serves blocked clients right after
// the command that made their key ready. BLMOVE and BRPOPLPUSH also need their destination's
// lock, which the pusher does not hold: they are woken to run again instead, and may block
// again if another client took the element first.

const (
	blockPop   = iota // BLPOP, BRPOP: [key, element]
	blockMPop         // BLMPOP: [key, [elements]]
	blockMove         // BLMOVE, BRPOPLPUSH: woken to run again
	blockZPop         // BZPOPMIN, BZPOPMAX: [key, member, score] (left: the minimum)
	blockZMPop        // BZMPOP: [key, [[member, score] ...]]
)

// BlockedPop is a waiter's Data: what the blocked client waits for and where its reply goes.
type BlockedPop struct {
	kind  int
	left  bool
	count int
	// dst and toLeft are a blocked BLMOVE's destination and end.
	dst    []byte
	toLeft bool
	// w is the reply the serving client writes: a buffer of the waiter's own, since the
	// blocked connection may still be sending what preceded the command from its buffer.
	w *resp.Writer
	// Retry is set when the client must run its command again (BLMOVE, BRPOPLPUSH), or look
	// at its streams again (XREAD, XREADGROUP: the connection sets Ctx.Resume).
	Retry bool
	// stream is what a blocked XREAD or XREADGROUP waits for.
	stream *streamWait
}

// Recheck implements store.Rechecker: a blocked XREADGROUP runs again when a stream it waits on
// is deleted or replaced, to fail or be served as Redis 7.0 does; a blocked XREAD only when the
// whole database was swapped or flushed (a swapped-in stream may serve it).
func (b *BlockedPop) Recheck(whole bool) bool {
	if b.kind != blockStream || (b.stream.group == nil && !whole) {
		return false
	}
	b.Retry = true
	return true
}

// Reply is the reply written when the waiter was served (empty for a retry).
func (b *BlockedPop) Reply() []byte { return b.w.Buf }

// TimeoutReply writes the reply of a blocking command that timed out: a null array for every
// kind, BLMOVE's included (Redis 7.0's replyToBlockedClientTimedOut).
func (b *BlockedPop) TimeoutReply(w *resp.Writer) { w.NullArray() }

type readyKey struct {
	db  int
	key []byte
}

// markReady records that key (in the current database) received elements, if anyone waits.
func (c *Ctx) markReady(key []byte) {
	if c.Store.Waiters.Any() {
		c.ready = append(c.ready, readyKey{c.DB.ID, key})
	}
}

// markReadyIn is markReady for a key a command created in database db with entry e (RENAME,
// COPY, MOVE): a list arriving under a name clients wait on serves them, as in Redis.
func (c *Ctx) markReadyIn(db int, key []byte, e *store.Entry) {
	if e != nil && (e.Val.Kind == store.KindList || e.Val.Kind == store.KindStream) && c.Store.Waiters.Any() {
		c.ready = append(c.ready, readyKey{db, key})
	}
}

// serveReady serves the clients blocked on the keys this command made ready. The command's
// locks are still held.
func (c *Ctx) serveReady() {
	// An indexed loop: serving a BLMOVE in place makes its destination ready, appended here.
	for i := 0; i < len(c.ready); i++ {
		rk := c.ready[i]
		db := c.Store.DB(rk.db)
		if e := db.Lookup(rk.key, c.Now); e != nil && e.Val.Kind == store.KindStream {
			c.serveStreamKey(db, rk.key, e)
			continue
		}
		movePending := false
		serve := func(w *store.Waiter) bool {
			if movePending {
				// A BLMOVE woken before these decides first, in its own run: it passes the key
				// on (markReady) when it leaves elements there or fails on its destination.
				return false
			}
			e := db.Lookup(rk.key, c.Now)
			b := w.Data.(*BlockedPop)
			if b.kind == blockZPop || b.kind == blockZMPop {
				if e == nil || e.Val.Kind != store.KindZSet {
					return false
				}
				c.serveZPop(db, rk.key, e, b)
				return true
			}
			if e == nil || e.Val.Kind != store.KindList {
				return false
			}
			l := e.Val.Obj().(*types.List)
			n := 1
			switch b.kind {
			case blockMove:
				if c.Store.ShardIndex(b.dst) == c.Store.ShardIndex(rk.key) {
					// The destination is in the shard this command holds (always so with a
					// shared hash tag): move now, in order, as Redis does.
					c.serveMove(db, rk.key, e, l, b)
					return true
				}
				b.Retry = true
				movePending = true
				return true
			case blockPop:
				b.w.Array(2)
				b.w.Bulk(rk.key)
				b.w.BulkString(popOne(l, b.left))
			case blockMPop:
				n = min(b.count, l.Len())
				b.w.Array(2)
				b.w.Bulk(rk.key)
				b.w.Array(n)
				for range n {
					b.w.BulkString(popOne(l, b.left))
				}
			}
			c.listPopped(db, e, rk.key, l, b.left)
			if c.Srv != nil {
				c.Srv.AddDirty(int64(n))
			}
			if c.Store.Journal != nil {
				name := effRPop
				if b.left {
					name = effLPop
				}
				c.Emit(rk.db, name, rk.key, c.effInt(int64(n)))
			}
			return true
		}
		c.Store.Waiters.WakeEach(rk.db, rk.key, func(w *store.Waiter) store.WakeResult {
			if w.Data.(*BlockedPop).kind == blockStream {
				return store.WakeSkip // an XREAD on a key that is not a stream (yet)
			}
			if serve(w) {
				return store.WakeServed
			}
			return store.WakeStop
		})
	}
	c.ready = c.ready[:0]
}

// serveMove serves a blocked BLMOVE from list l (entry e, key src) into b.dst, both in shards
// the serving command holds: WRONGTYPE, leaving the element, when the destination holds
// another type.
func (c *Ctx) serveMove(db *store.DB, src []byte, e *store.Entry, l *types.List, b *BlockedPop) {
	de := db.Lookup(b.dst, c.Now)
	if de != nil && de.Val.Kind != store.KindList {
		b.w.Error(ErrWrongType)
		return
	}
	v := popOne(l, b.left)
	var dl *types.List
	if de != nil {
		dl = de.Val.Obj().(*types.List) // the source itself when they are one key: a rotation
	} else {
		dl = db.Set(b.dst, types.NewListValue(), 0, false, c.Now).Val.Obj().(*types.List)
	}
	if b.toLeft {
		dl.PushLeft(v)
	} else {
		dl.PushRight(v)
	}
	c.notifyIn(db.ID, evList, pushEvent(b.toLeft), b.dst)
	c.listPopped(db, e, src, l, b.left)
	b.w.BulkString(v)
	if c.Srv != nil {
		c.Srv.AddDirty(2)
	}
	if c.Store.Journal != nil {
		c.Emit(db.ID, effLMove, src, b.dst, side(b.left), side(b.toLeft))
	}
	c.touchIn(db, src)
	c.touchIn(db, b.dst)
	c.ready = append(c.ready, readyKey{db.ID, b.dst})
}

// serveZPop serves a blocked BZPOPMIN, BZPOPMAX or BZMPOP from the sorted set at key.
func (c *Ctx) serveZPop(db *store.DB, key []byte, e *store.Entry, b *BlockedPop) {
	z := e.Val.Obj().(*types.ZSet)
	n := 1
	if b.kind == blockZMPop {
		n = min(b.count, z.Len())
		b.w.Array(2)
		b.w.Bulk(key)
		b.w.Array(n)
	} else {
		b.w.Array(3)
		b.w.Bulk(key)
	}
	eff := [][]byte{effZRem, key}
	for range n {
		member, score := zpopOne(z, !b.left)
		if b.kind == blockZMPop {
			b.w.Array(2)
		}
		b.w.BulkString(member)
		b.w.Double(score)
		eff = append(eff, []byte(member))
	}
	c.zsetPopped(db, e, key, z, !b.left)
	if c.Srv != nil {
		c.Srv.AddDirty(int64(n))
	}
	if c.Store.Journal != nil {
		c.Emit(db.ID, eff...)
	}
}

func bzpopminCommand(c *Ctx) { bzpop(c, false) }
func bzpopmaxCommand(c *Ctx) { bzpop(c, true) }

func bzpop(c *Ctx, max bool) {
	timeout, ok := parseTimeout(c, len(c.Args)-1)
	if !ok {
		return
	}
	keys := c.Args[1 : len(c.Args)-1]
	for _, key := range keys {
		e, z, ok := zsetWrite(c, key)
		if !ok {
			return
		}
		if z == nil {
			continue
		}
		member, score := zpopOne(z, max)
		c.W.Array(3)
		c.W.Bulk(key)
		c.W.BulkString(member)
		c.W.Double(score)
		c.zsetPopped(c.DB, e, key, z, max)
		c.Dirty(1)
		if c.Store.Journal != nil {
			c.Emit(c.DB.ID, effZRem, key, []byte(member))
		}
		return
	}
	if c.allLocked {
		c.W.NullArray()
		return
	}
	c.block(keys, timeout, &BlockedPop{kind: blockZPop, left: !max})
}

func bzmpopCommand(c *Ctx) {
	timeout, ok := parseTimeout(c, 1)
	if !ok {
		return
	}
	args := c.Args
	c.Args = args[1:] // ZMPOP's arguments follow the timeout
	keys, max, count, ok := zmpopParse(c)
	c.Args = args
	if !ok {
		return
	}
	for _, key := range keys {
		_, z, ok := zsetWrite(c, key)
		if !ok {
			return
		}
		if z != nil {
			zpopGeneric(c, keys, max, true, count, true, true)
			return
		}
	}
	if c.allLocked {
		c.W.NullArray()
		return
	}
	c.block(keys, timeout, &BlockedPop{kind: blockZMPop, left: !max, count: int(count)})
}

// parseTimeout reads a blocking command's timeout in seconds (a float, 0 for none) as
// milliseconds, with Redis 7.0's errors.
func parseTimeout(c *Ctx, i int) (int64, bool) {
	f, ok := parseLongDouble(c.Args[i])
	if !ok {
		c.Error("ERR timeout is not a float or out of range")
		return 0, false
	}
	v, _ := f.Float64()
	ms := math.Ceil(v * 1000)
	if ms > math.MaxInt64/2 || math.IsInf(v, 1) {
		c.Error("ERR timeout is out of range")
		return 0, false
	}
	if ms < 0 {
		c.Error("ERR timeout is negative")
		return 0, false
	}
	return int64(ms), true
}

// block registers the client as waiting on keys for up to timeoutMs (0: forever).
func (c *Ctx) block(keys [][]byte, timeoutMs int64, b *BlockedPop) {
	w := &store.Waiter{DB: c.DB.ID, Keys: make([]string, len(keys)), Data: b}
	for i, k := range keys {
		w.Keys[i] = string(k)
	}
	b.w = resp.NewWriter()
	b.w.Proto = c.W.Proto
	c.Store.Waiters.Add(w)
	c.Blocked, c.BlockTimeoutMs = w, timeoutMs
}

func blpopCommand(c *Ctx) { blockingPop(c, true) }
func brpopCommand(c *Ctx) { blockingPop(c, false) }

func blockingPop(c *Ctx, left bool) {
	timeout, ok := parseTimeout(c, len(c.Args)-1)
	if !ok {
		return
	}
	keys := c.Args[1 : len(c.Args)-1]
	for _, key := range keys {
		e, l, ok := listWrite(c, key)
		if !ok {
			return
		}
		if l == nil {
			continue
		}
		c.W.Array(2)
		c.W.Bulk(key)
		c.W.BulkString(popOne(l, left))
		c.listPopped(c.DB, e, key, l, left)
		c.Dirty(1)
		if c.Store.Journal != nil {
			name := effRPop
			if left {
				name = effLPop
			}
			c.Emit(c.DB.ID, name, key)
		}
		return
	}
	if c.allLocked { // inside EXEC a blocking command does not block
		c.W.NullArray()
		return
	}
	c.block(keys, timeout, &BlockedPop{kind: blockPop, left: left})
}

func blmpopCommand(c *Ctx) {
	timeout, ok := parseTimeout(c, 1)
	if !ok {
		return
	}
	keys, left, count, ok := lmpopParse(c, c.Args[1:]) // LMPOP's arguments follow the timeout
	if !ok || lmpopServe(c, keys, left, count) {
		return
	}
	if c.allLocked {
		c.W.NullArray()
		return
	}
	c.block(keys, timeout, &BlockedPop{kind: blockMPop, left: left, count: int(count)})
}

func blmoveCommand(c *Ctx) {
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
	blockingMove(c, 5, ends[0], ends[1])
}

func brpoplpushCommand(c *Ctx) { blockingMove(c, 3, false, true) }

func blockingMove(c *Ctx, timeoutArg int, fromLeft, toLeft bool) {
	timeout, ok := parseTimeout(c, timeoutArg)
	if !ok {
		return
	}
	_, src, ok := listWrite(c, c.Args[1])
	if !ok {
		return
	}
	if src != nil {
		if move(c, fromLeft, toLeft) && c.Store.Journal != nil {
			c.Emit(c.DB.ID, effLMove, c.Args[1], c.Args[2], side(fromLeft), side(toLeft))
		}
		// Elements left in the source, or a destination of the wrong type, leave something
		// for the next client blocked on the source: pass it on, in order.
		c.markReady(c.Args[1])
		return
	}
	if c.allLocked {
		c.W.Null()
		return
	}
	c.block(c.Args[1:2], timeout, &BlockedPop{kind: blockMove, left: fromLeft,
		dst: append([]byte(nil), c.Args[2]...), toLeft: toLeft})
}

var (
	effLMove = []byte("LMOVE")
	effLeft  = []byte("LEFT")
	effRight = []byte("RIGHT")
)

func side(left bool) []byte {
	if left {
		return effLeft
	}
	return effRight
}

// blockingZSetCommands are the sorted sets' blocking pops, on the same waiters as the lists'.
func blockingZSetCommands() []*Command {
	const doc = "Blocked clients are served in the order they blocked, right after the command (or the EXEC) that gave their key members; inside MULTI it does not block."
	bz := func(name, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: -3, Flags: FlagWrite | FlagNoScript | FlagBlocking | FlagFast,
			ACL: []string{"write", "sortedset", "fast", "blocking"}, FirstKey: 1, LastKey: -2, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 1, LastKey: -2, Step: 1}},
			Group:    "sorted-set", Since: "5.0.0", Syntax: "key [key ...] timeout",
			Complexity: "O(log(N)) with N being the number of elements in the sorted set.",
			Summary:    summary, Doc: doc, Handler: h}
	}
	return []*Command{
		bz("bzpopmin", "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", bzpopminCommand),
		bz("bzpopmax", "Remove and return the member with the highest score from one or more sorted sets, or block until one is available", bzpopmaxCommand),
		{Name: "bzmpop", Arity: -5, Flags: FlagWrite | FlagBlocking, ACL: []string{"write", "sortedset", "slow", "blocking"},
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSDelete, Begin: 2, FirstKey: 1, Step: 1}},
			Group:    "sorted-set", Since: "7.0.0", Syntax: "timeout numkeys key [key ...] <MIN | MAX> [COUNT count]",
			Complexity: "O(K) + O(M*log(N)) where K is the number of provided keys, N being the number of elements in the sorted set, and M being the number of elements popped.",
			Summary:    "Remove and return members with scores in a sorted set or block until one is available", Doc: doc, Handler: bzmpopCommand},
	}
}

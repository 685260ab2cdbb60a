package command

import (
	"time"
	"unsafe"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// XREAD and XREADGROUP, served at once or, with BLOCK, on the blocking machinery of
// blocking.go: an XADD marks its key ready and, before its locks go, every client blocked on
// the key is offered the new entries in the order they blocked (an XREAD takes them when they
// are past its ID; an XREADGROUP takes what its group has not delivered yet, so the first of a
// group's clients gets them). A blocked XREADGROUP whose stream is deleted or replaced, or whose
// database is flushed or swapped, is woken by the store (store.Rechecker) and runs again with
// what it blocked for (Ctx.Resume): it fails with -UNBLOCKED when no stream is left, -NOGROUP
// when the new stream lacks the group, and is served or blocks again otherwise, as Redis 7.0
// does; XGROUP DESTROY wakes it with -NOGROUP at once.

// blockStream is the BlockedPop kind of a blocked XREAD or XREADGROUP (blocking.go).
const blockStream = blockZMPop + 1

// xreadBlockedCount is the COUNT a blocked read without one uses (Redis's
// XREAD_BLOCKED_DEFAULT_COUNT), so a low ID does not make an XADD reply a huge history.
const xreadBlockedCount = 1000

// streamWait is what a client blocked in XREAD or XREADGROUP waits for.
type streamWait struct {
	// keys are distinct, in command order; ids[i] is the ID entries of keys[i] must exceed
	// (the largest ID for XREADGROUP's ">", which means the group's last delivered ID).
	keys  [][]byte
	ids   []types.StreamID
	count int64
	// group and consumer are set for XREADGROUP.
	group, consumer []byte
	noack           bool
	// deadline is when the block times out; zero for BLOCK 0.
	deadline time.Time
	// cmd is the blocked command, whose failed calls a served error counts.
	cmd *Command
}

func (w *streamWait) index(key []byte) int {
	for i, k := range w.keys {
		if string(k) == string(key) {
			return i
		}
	}
	return -1
}

var (
	effXClaim         = []byte("XCLAIM")
	effXGroup         = []byte("XGROUP")
	effSetID          = []byte("SETID")
	effCreateConsumer = []byte("CREATECONSUMER")
	effEntriesRead    = []byte("ENTRIESREAD")
	effZero           = []byte("0")
	effTime           = []byte("TIME")
	effRetryCount     = []byte("RETRYCOUNT")
	effForce          = []byte("FORCE")
	effJustID         = []byte("JUSTID")
	effLastID         = []byte("LASTID")
)

// sbytes views a string as bytes for an effect argument, which the journal copies.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// emitXClaim journals a pending entry's state as Redis's streamPropagateXCLAIM does: an XCLAIM
// that recreates it as it is (or drops it, when the entry no longer exists) on replay.
func (c *Ctx) emitXClaim(db int, key, group []byte, n *types.NACK, last types.StreamID) {
	if c.Store.Journal == nil {
		return
	}
	c.Emit(db, effXClaim, key, group, sbytes(n.Consumer.Name), effZero, c.effID(n.ID),
		effTime, c.effInt(n.DeliveryTime), effRetryCount, c.effInt(int64(n.DeliveryCount)),
		effForce, effJustID, effLastID, c.effID(last))
}

// emitSetID journals a group's last ID and read counter.
func (c *Ctx) emitSetID(db int, key, group []byte, g *types.StreamGroup) {
	if c.Store.Journal == nil {
		return
	}
	c.Emit(db, effXGroup, effSetID, key, group, c.effID(g.LastID), effEntriesRead, c.effInt(g.EntriesRead))
}

// streamConsumer finds the consumer called name (refreshing its seen time) or creates it,
// journaling the creation.
func (c *Ctx) streamConsumer(db int, key, group []byte, g *types.StreamGroup, name []byte) *types.StreamConsumer {
	if con := g.Consumer(string(name)); con != nil {
		con.SeenTime = c.Now
		return con
	}
	con := g.CreateConsumer(string(name), c.Now)
	if c.Srv != nil {
		c.Srv.AddDirty(1)
	}
	c.notifyIn(db, evStream, "xgroup-createconsumer", key)
	if c.Store.Journal != nil {
		c.Emit(db, effXGroup, effCreateConsumer, key, group, name)
	}
	return con
}

// groupRead writes a group read's entries to w as an array and records the delivery: with
// history, the consumer's own pending entries from start (an entry deleted since shows as
// [id, nil]); otherwise the entries from start on, which move the group's last ID and, unless
// noack, become pending for the consumer. count 0 is no limit.
func (c *Ctx) groupRead(w *resp.Writer, db int, key, group []byte, s *types.Stream, g *types.StreamGroup,
	con *types.StreamConsumer, start types.StreamID, count int64, noack, history bool) {
	body := getScratch(w.Proto)
	defer putScratch(body)
	var n int64
	if history {
		cur := start
		for count == 0 || n < count {
			p := con.PendingFrom(cur)
			if p == nil {
				break
			}
			if fv, ok := s.Get(p.ID); ok {
				writeStreamEntry(body, p.ID, fv)
				p.DeliveryTime = c.Now
				p.DeliveryCount++
				c.emitXClaim(db, key, group, p, g.LastID)
			} else {
				body.Array(2)
				writeStreamID(body, p.ID)
				body.NullArray()
			}
			n++
			next, ok := p.ID.Next()
			if !ok {
				break
			}
			cur = next
		}
		w.Array(int(n))
		w.Raw(body.Buf)
		return
	}
	moved := false
	s.Range(start, types.MaxStreamID, false, func(id types.StreamID, fv []string) bool {
		if s.Deliver(g, id) {
			moved = true
		}
		writeStreamEntry(body, id, fv)
		if !noack {
			p := g.Assign(id, con, c.Now)
			p.DeliveryTime, p.DeliveryCount = c.Now, 1
			c.emitXClaim(db, key, group, p, g.LastID)
		}
		n++
		return count == 0 || n < count
	})
	if moved {
		c.emitSetID(db, key, group, g)
	}
	w.Array(int(n))
	w.Raw(body.Buf)
}

func xreadCommand(c *Ctx)      { xreadGeneric(c, false) }
func xreadgroupCommand(c *Ctx) { xreadGeneric(c, true) }

func xreadGeneric(c *Ctx, xgroup bool) {
	if xgroup {
		c.skipEffect() // what it changes is journaled by its own effects
	}
	if r := c.Resume; r != nil && r.stream != nil {
		resumeStreamRead(c, r.stream)
		return
	}
	timeout, count := int64(-1), int64(0)
	streamsArg, nstreams := 0, 0
	noack := false
	var group, consumer []byte
parse:
	for i := 1; i < len(c.Args); i++ {
		more := len(c.Args) - i - 1
		switch {
		case c.ArgIs(i, "block") && more > 0:
			if c.inScript {
				// Redis refuses BLOCK from scripts up front, naming the command as called.
				c.Error("ERR " + string(c.Args[0]) + " command is not allowed with BLOCK option from scripts")
				return
			}
			i++
			t, ok := resp.ParseInt(c.Args[i])
			if !ok {
				c.Error("ERR timeout is not an integer or out of range")
				return
			}
			if t < 0 {
				c.Error("ERR timeout is negative")
				return
			}
			timeout = t
		case c.ArgIs(i, "count") && more > 0:
			i++
			n, ok := c.Int(i)
			if !ok {
				return
			}
			count = max(n, 0)
		case c.ArgIs(i, "streams") && more > 0:
			streamsArg = i + 1
			nstreams = len(c.Args) - streamsArg
			if nstreams%2 != 0 {
				c.Error("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
				return
			}
			nstreams /= 2
			break parse
		case c.ArgIs(i, "group") && more >= 2:
			if !xgroup {
				c.Error("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			group, consumer = c.Args[i+1], c.Args[i+2]
			i += 2
		case c.ArgIs(i, "noack"):
			if !xgroup {
				c.Error("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return
			}
			noack = true
		default:
			c.Syntax()
			return
		}
	}
	if streamsArg == 0 {
		c.Syntax()
		return
	}
	if xgroup && group == nil {
		c.Error("ERR Missing GROUP option for XREADGROUP")
		return
	}
	keys := c.Args[streamsArg : streamsArg+nstreams]
	ids := make([]types.StreamID, nstreams)
	var groups []*types.StreamGroup
	if xgroup {
		groups = make([]*types.StreamGroup, nstreams)
	}
	for i, key := range keys {
		arg := c.Args[streamsArg+nstreams+i]
		s, ok := streamRead(c, key)
		if !ok {
			return
		}
		if xgroup {
			if s != nil {
				groups[i] = s.Group(string(group))
			}
			if groups[i] == nil {
				c.Error("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) +
					"' in XREADGROUP with GROUP option")
				return
			}
		}
		switch {
		case len(arg) == 1 && arg[0] == '$':
			if xgroup {
				c.Error("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
				return
			}
			if s != nil {
				ids[i] = s.LastID()
			}
		case len(arg) == 1 && arg[0] == '>':
			if !xgroup {
				c.Error("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return
			}
			ids[i] = types.MaxStreamID
		default:
			if ids[i], ok = c.streamID(streamsArg + nstreams + i); !ok {
				return
			}
		}
	}

	// Serve at once what can be served.
	body := getScratch(c.W.Proto)
	defer putScratch(body)
	served := 0
	for i, key := range keys {
		s, _ := streamRead(c, key)
		if s == nil {
			continue
		}
		gt := ids[i]
		serve, history := false, false
		if xgroup {
			if gt != types.MaxStreamID {
				// An explicit ID reads the consumer's own history, always at once.
				serve, history = true, true
			} else if last, ok := s.LastEntryID(); ok && groups[i].LastID.Less(last) {
				serve, gt = true, groups[i].LastID
			}
		} else if last, ok := s.LastEntryID(); ok && gt.Less(last) {
			serve = true
		}
		if !serve {
			continue
		}
		served++
		start, _ := gt.Next()
		if c.W.Proto < 3 {
			body.Array(2)
		}
		body.Bulk(key)
		if xgroup {
			con := c.streamConsumer(c.DB.ID, key, group, groups[i], consumer)
			c.groupRead(body, c.DB.ID, key, group, s, groups[i], con, start, count, noack, history)
			c.Dirty(1)
		} else {
			writeStreamRange(body, s, start, types.MaxStreamID, count, false)
		}
	}
	if served > 0 {
		if c.W.Proto < 3 {
			c.W.Array(served)
		} else {
			c.W.Map(served)
		}
		c.W.Raw(body.Buf)
		return
	}
	if timeout < 0 {
		c.W.NullArray()
		return
	}
	if c.allLocked { // inside MULTI (or a script) a read does not block: it times out at once
		c.W.NullArray()
		return
	}
	w := &streamWait{count: count, noack: noack, cmd: c.Cmd}
	if w.count == 0 {
		w.count = xreadBlockedCount
	}
	if xgroup {
		w.group, w.consumer = append([]byte(nil), group...), append([]byte(nil), consumer...)
	}
	for i, key := range keys {
		if w.index(key) >= 0 {
			continue // a key named twice waits for the first ID given, as Redis's key dict keeps it
		}
		w.keys = append(w.keys, append([]byte(nil), key...))
		w.ids = append(w.ids, ids[i])
	}
	if timeout > 0 {
		w.deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	c.block(w.keys, timeout, &BlockedPop{kind: blockStream, stream: w})
}

// resumeStreamRead runs a woken XREAD or XREADGROUP again on what it blocked for: its streams
// were deleted, replaced, flushed or swapped.
func resumeStreamRead(c *Ctx, w *streamWait) {
	body := getScratch(c.W.Proto)
	defer putScratch(body)
	for i, key := range w.keys {
		e := c.Lookup(key)
		var s *types.Stream
		if e != nil && e.Val.Kind == store.KindStream {
			s = e.Val.Obj().(*types.Stream)
		}
		gt := w.ids[i]
		var g *types.StreamGroup
		if w.group != nil {
			if s == nil {
				c.Error("UNBLOCKED the stream key no longer exists")
				return
			}
			if g = s.Group(string(w.group)); g == nil {
				c.Error("NOGROUP the consumer group this client was blocked on no longer exists")
				return
			}
			gt = g.LastID
		}
		if s == nil || !gt.Less(s.LastID()) {
			continue
		}
		// Served as a blocked client is served: this key only, from past its ID.
		start, _ := gt.Next()
		if c.W.Proto < 3 {
			c.W.Array(1)
			c.W.Array(2)
		} else {
			c.W.Map(1)
		}
		c.W.Bulk(key)
		if g != nil {
			con := c.streamConsumer(c.DB.ID, key, w.group, g, w.consumer)
			c.groupRead(c.W, c.DB.ID, key, w.group, s, g, con, start, w.count, w.noack, false)
			c.Dirty(1)
		} else {
			writeStreamRange(c.W, s, start, types.MaxStreamID, w.count, false)
		}
		return
	}
	var timeout int64
	if !w.deadline.IsZero() {
		left := time.Until(w.deadline)
		if left <= 0 {
			c.W.NullArray()
			return
		}
		timeout = max(left.Milliseconds(), 1)
	}
	c.block(w.keys, timeout, &BlockedPop{kind: blockStream, stream: w})
}

// serveStreamKey offers a stream that received entries (or lost a group) to the clients
// blocked on it, in the order they blocked. It runs in the command that made the key ready,
// with its locks held, and journals what a served XREADGROUP changed.
func (c *Ctx) serveStreamKey(db *store.DB, key []byte, e *store.Entry) {
	s := e.Val.Obj().(*types.Stream)
	c.Store.Waiters.WakeEach(db.ID, key, func(wt *store.Waiter) store.WakeResult {
		b := wt.Data.(*BlockedPop)
		if b.kind != blockStream {
			return store.WakeSkip // a BLPOP on a key that is a stream now
		}
		w := b.stream
		i := w.index(key)
		if i < 0 {
			return store.WakeSkip
		}
		gt := w.ids[i]
		var g *types.StreamGroup
		if w.group != nil {
			if g = s.Group(string(w.group)); g == nil {
				b.w.Error("NOGROUP the consumer group this client was blocked on no longer exists")
				c.blockedFailed(w, "NOGROUP")
				return store.WakeServed
			}
			gt = g.LastID
		}
		if !gt.Less(s.LastID()) {
			return store.WakeSkip
		}
		start, _ := gt.Next()
		if b.w.Proto < 3 {
			b.w.Array(1)
			b.w.Array(2)
		} else {
			b.w.Map(1)
		}
		b.w.Bulk(key)
		if g != nil {
			con := c.streamConsumer(db.ID, key, w.group, g, w.consumer)
			c.groupRead(b.w, db.ID, key, w.group, s, g, con, start, w.count, w.noack, false)
			if c.Srv != nil {
				c.Srv.AddDirty(1)
			}
		} else {
			writeStreamRange(b.w, s, start, types.MaxStreamID, w.count, false)
		}
		return store.WakeServed
	})
}

// blockedFailed counts an error reply given to a blocked client in INFO errorstats and its
// command's failed calls, as Redis does when it unblocks a client with an error.
func (c *Ctx) blockedFailed(w *streamWait, code string) {
	if c.Srv != nil {
		c.Srv.ErrorStat(code)
	}
	if w.cmd != nil {
		w.cmd.FailedCalls.Add(1)
	}
}

package command

import (
	"math"
	"strings"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/types"
)

// Consumer groups: XGROUP, XACK, XPENDING, XCLAIM, XAUTOCLAIM, and XINFO.

// subcommandSyntax is Redis's addReplySubcommandSyntaxError.
func (c *Ctx) subcommandSyntax() {
	c.Error("ERR unknown subcommand or wrong number of arguments for '" + truncate(string(c.Args[1]), 128) +
		"'. Try " + strings.ToUpper(string(c.Args[0])) + " HELP.")
}

func noGroupFor(key, group []byte) string {
	return "NOGROUP No such consumer group '" + string(group) + "' for key name '" + string(key) + "'"
}

func noKeyOrGroup(key, group []byte) string {
	return "NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'"
}

// xgroupCommand is every XGROUP subcommand but HELP, checked in the order Redis's xgroupCommand
// checks them.
func xgroupCommand(c *Ctx) {
	sub := strings.ToLower(string(c.Args[1]))
	mkstream := false
	entriesRead := int64(-1)
	for i := 5; i < len(c.Args); {
		switch {
		case sub == "create" && c.ArgIs(i, "mkstream"):
			mkstream = true
			i++
		case (sub == "create" || sub == "setid") && c.ArgIs(i, "entriesread") && i+1 < len(c.Args):
			n, ok := c.Int(i + 1)
			if !ok {
				return
			}
			if n < 0 && n != -1 {
				c.Error("ERR value for ENTRIESREAD must be positive or -1")
				return
			}
			entriesRead = n
			i += 2
		default:
			c.subcommandSyntax()
			return
		}
	}
	key, group := c.Args[2], c.Args[3]
	s, ok := streamWrite(c, key)
	if !ok {
		return
	}
	var g *types.StreamGroup
	if !mkstream {
		if s == nil {
			c.Error(errXGroupNoKey)
			return
		}
		if g = s.Group(string(group)); g == nil && sub != "create" && sub != "destroy" {
			c.Error(noGroupFor(key, group))
			return
		}
	}
	switch {
	case sub == "create" && len(c.Args) >= 5 && len(c.Args) <= 8:
		var id types.StreamID
		if len(c.Args[4]) == 1 && c.Args[4][0] == '$' {
			if s != nil {
				id = s.LastID()
			}
		} else if id, ok = c.streamID(4); !ok {
			return
		}
		if s == nil {
			s = types.NewStream()
			c.DB.Set(key, streamValue(s), 0, false, c.Now)
		}
		if s.CreateGroup(string(group), id, entriesRead) == nil {
			c.Error(errBusyGroup)
			return
		}
		c.Dirty(1)
		c.notify(evStream, "xgroup-create", key)
		c.emitDollar(id)
		c.W.OK()
	case sub == "setid" && (len(c.Args) == 5 || len(c.Args) == 7):
		var id types.StreamID
		if len(c.Args[4]) == 1 && c.Args[4][0] == '$' {
			id = s.LastID()
		} else if id, _, ok = parseStreamID(c.Args[4], 0, false, false); !ok {
			c.Error(errInvalidStreamID)
			return
		}
		g.LastID, g.EntriesRead = id, entriesRead
		c.Dirty(1)
		c.notify(evStream, "xgroup-setid", key)
		c.emitDollar(id)
		c.W.OK()
	case sub == "destroy" && len(c.Args) == 4:
		if g == nil {
			c.W.Int(0)
			return
		}
		s.DestroyGroup(g.Name)
		c.Dirty(1)
		c.notify(evStream, "xgroup-destroy", key)
		c.W.Int(1)
		// Clients blocked in XREADGROUP on this group fail with -NOGROUP right away.
		c.markReady(key)
	case sub == "createconsumer" && len(c.Args) == 5:
		if g.CreateConsumer(string(c.Args[4]), c.Now) == nil {
			c.W.Int(0)
			return
		}
		c.Dirty(1)
		c.notify(evStream, "xgroup-createconsumer", key)
		c.W.Int(1)
	case sub == "delconsumer" && len(c.Args) == 5:
		var n int
		if con := g.Consumer(string(c.Args[4])); con != nil {
			n = g.DeleteConsumer(con)
			c.Dirty(1)
			c.notify(evStream, "xgroup-delconsumer", key)
		}
		c.W.Int(int64(n))
	default:
		c.subcommandSyntax()
	}
}

// emitDollar journals XGROUP CREATE or SETID as given, with a "$" ID replaced by the ID it
// stood for (the stream's last ID then).
func (c *Ctx) emitDollar(id types.StreamID) {
	if c.Store.Journal == nil || len(c.Args[4]) != 1 || c.Args[4][0] != '$' {
		return // the dispatcher journals the arguments as they are
	}
	var buf [10][]byte
	args := append(buf[:0], c.Args[:4]...)
	args = append(args, c.effID(id))
	args = append(args, c.Args[5:]...)
	c.Emit(c.DB.ID, args...)
}

// ---- XACK ----

func xackCommand(c *Ctx) {
	s, ok := streamRead(c, c.Args[1])
	if !ok {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(string(c.Args[2]))
	}
	if g == nil {
		c.W.Int(0)
		return
	}
	// All IDs are checked first: the reply cannot be an error once some were acknowledged.
	var buf [8]types.StreamID
	ids, ok := c.streamIDs(3, buf[:0])
	if !ok {
		return
	}
	n := countIDs(ids, g.Ack)
	c.Dirty(n)
	c.W.Int(n)
}

// ---- XPENDING ----

func xpendingCommand(c *Ctx) {
	argc := len(c.Args)
	if argc != 3 && (argc < 6 || argc > 9) {
		c.Syntax()
		return
	}
	var start, end types.StreamID
	var count, minIdle int64
	var consumer []byte
	if argc >= 6 {
		at := 3
		if c.ArgIs(3, "idle") {
			var ok bool
			if minIdle, ok = c.Int(4); !ok {
				return
			}
			if argc < 8 {
				c.Syntax()
				return
			}
			at += 2
		}
		var ok bool
		if count, ok = c.Int(at + 2); !ok {
			return
		}
		count = max(count, 0)
		if start, ok = c.streamInterval(c.Args[at], 0, true); !ok {
			return
		}
		if end, ok = c.streamInterval(c.Args[at+1], math.MaxUint64, false); !ok {
			return
		}
		if at+3 < argc {
			consumer = c.Args[at+3]
		}
	}
	s, ok := streamRead(c, c.Args[1])
	if !ok {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(string(c.Args[2]))
	}
	if g == nil {
		c.Error(noKeyOrGroup(c.Args[1], c.Args[2]))
		return
	}
	if argc == 3 {
		c.W.Array(4)
		c.W.Int(int64(g.PendingLen()))
		if g.PendingLen() == 0 {
			c.W.Null()
			c.W.Null()
			c.W.NullArray()
			return
		}
		writeStreamID(c.W, g.FirstPending().ID)
		writeStreamID(c.W, g.LastPending().ID)
		n := 0
		for _, con := range g.Consumers() {
			if con.PendingLen() > 0 {
				n++
			}
		}
		c.W.Array(n)
		for _, con := range g.Consumers() {
			if con.PendingLen() > 0 {
				c.W.Array(2)
				c.W.BulkString(con.Name)
				c.W.BulkInt(int64(con.PendingLen()))
			}
		}
		return
	}
	var con *types.StreamConsumer
	if consumer != nil {
		if con = g.Consumer(string(consumer)); con == nil {
			c.W.Array(0)
			return
		}
	}
	from := g.PendingFrom
	if con != nil {
		from = con.PendingFrom
	}
	body := getScratch(c.W.Proto)
	defer putScratch(body)
	n := 0
	for cur := start; count > 0; {
		p := from(cur)
		if p == nil || end.Less(p.ID) {
			break
		}
		idle := c.Now - p.DeliveryTime
		if minIdle == 0 || idle >= minIdle {
			n++
			count--
			body.Array(4)
			writeStreamID(body, p.ID)
			body.BulkString(p.Consumer.Name)
			body.Int(max(idle, 0))
			body.Int(int64(p.DeliveryCount))
		}
		next, ok := p.ID.Next()
		if !ok {
			break
		}
		cur = next
	}
	c.W.Array(n)
	c.W.Raw(body.Buf)
}

// ---- XCLAIM, XAUTOCLAIM ----

func xclaimCommand(c *Ctx) {
	c.skipEffect() // journaled by its XCLAIM effects
	key, group := c.Args[1], c.Args[2]
	s, ok := streamRead(c, key)
	if !ok {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(string(group))
	}
	if g == nil {
		c.Error(noKeyOrGroup(key, group))
		return
	}
	minIdle, ok := resp.ParseInt(c.Args[4])
	if !ok {
		c.Error("ERR Invalid min-idle-time argument for XCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	// IDs first, up to the first argument that is not one: the options follow.
	var buf [8]types.StreamID
	ids := buf[:0]
	j := 5
	for ; j < len(c.Args); j++ {
		id, _, ok := parseStreamID(c.Args[j], 0, true, false)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := c.Now
	deliveryTime, retryCount := int64(-1), int64(-1)
	force, justID := false, false
	var lastID types.StreamID
	for ; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		switch {
		case c.ArgIs(j, "force"):
			force = true
		case c.ArgIs(j, "justid"):
			justID = true
		case c.ArgIs(j, "idle") && more > 0:
			j++
			v, ok := resp.ParseInt(c.Args[j])
			if !ok {
				c.Error("ERR Invalid IDLE option argument for XCLAIM")
				return
			}
			deliveryTime = now - v
		case c.ArgIs(j, "time") && more > 0:
			j++
			v, ok := resp.ParseInt(c.Args[j])
			if !ok {
				c.Error("ERR Invalid TIME option argument for XCLAIM")
				return
			}
			deliveryTime = v
		case c.ArgIs(j, "retrycount") && more > 0:
			j++
			v, ok := resp.ParseInt(c.Args[j])
			if !ok {
				c.Error("ERR Invalid RETRYCOUNT option argument for XCLAIM")
				return
			}
			retryCount = v
		case c.ArgIs(j, "lastid") && more > 0:
			j++
			if lastID, ok = c.streamID(j); !ok {
				return
			}
		default:
			c.Error("ERR Unrecognized XCLAIM option '" + string(c.Args[j]) + "'")
			return
		}
	}
	setLast := false
	if g.LastID.Less(lastID) {
		g.LastID = lastID
		setLast = true
	}
	if deliveryTime != -1 {
		// A bogus time (negative, or ahead of the clock) becomes now, as in Redis: clients
		// compute it from their own clocks.
		if deliveryTime < 0 || deliveryTime > now {
			deliveryTime = now
		}
	} else {
		deliveryTime = now
	}
	body := getScratch(c.W.Proto)
	defer putScratch(body)
	var con *types.StreamConsumer
	n := 0
	for _, id := range ids {
		p := g.Pending(id)
		if !s.Exists(id) {
			// The entry is gone: its pending entry goes too.
			if p != nil {
				c.emitXClaim(c.DB.ID, key, group, p, g.LastID)
				setLast = false
				c.Dirty(1)
				g.Ack(id)
			}
			continue
		}
		forced := false
		if p == nil {
			if !force {
				continue
			}
			forced = true
		}
		if !forced && minIdle > 0 && now-p.DeliveryTime < minIdle {
			continue
		}
		if con == nil {
			con = c.streamConsumer(c.DB.ID, key, group, g, c.Args[3])
		}
		p = g.Assign(id, con, now)
		p.DeliveryTime = deliveryTime
		switch {
		case retryCount >= 0:
			p.DeliveryCount = uint64(retryCount)
		case !justID:
			p.DeliveryCount++ // a forced entry starts at 1, as Redis's new NACK does
		}
		if justID {
			writeStreamID(body, id)
		} else {
			fv, _ := s.Get(id)
			writeStreamEntry(body, id, fv)
		}
		n++
		c.emitXClaim(c.DB.ID, key, c.Args[2], p, g.LastID)
		setLast = false
		c.Dirty(1)
	}
	if setLast {
		c.emitSetID(c.DB.ID, key, group, g)
		c.Dirty(1)
	}
	c.W.Array(n)
	c.W.Raw(body.Buf)
}

func xautoclaimCommand(c *Ctx) {
	c.skipEffect() // journaled by its XCLAIM effects
	key, group := c.Args[1], c.Args[2]
	minIdle, ok := resp.ParseInt(c.Args[4])
	if !ok {
		c.Error("ERR Invalid min-idle-time argument for XAUTOCLAIM")
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := c.streamInterval(c.Args[5], 0, true)
	if !ok {
		return
	}
	count := int64(100)
	justID := false
	for j := 6; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		switch {
		case c.ArgIs(j, "count") && more > 0:
			const maxCount = math.MaxInt64 / 16 // Redis's LONG_MAX / sizeof(streamID)
			v, ok := resp.ParseInt(c.Args[j+1])
			if !ok || v < 1 || v > maxCount {
				c.Error("ERR COUNT must be > 0")
				return
			}
			count = v
			j++
		case c.ArgIs(j, "justid"):
			justID = true
		default:
			c.Syntax()
			return
		}
	}
	s, ok := streamRead(c, key)
	if !ok {
		return
	}
	var g *types.StreamGroup
	if s != nil {
		g = s.Group(string(group))
	}
	if g == nil {
		c.Error(noKeyOrGroup(key, group))
		return
	}
	if count > 1<<36 {
		// Redis allocates room for count deleted IDs up front and fails when it cannot: say
		// so where its allocation would surely fail (16 bytes per ID, 1 TiB).
		c.Error("ERR Insufficient memory, failed allocating transient memory, COUNT too high.")
		return
	}
	body := getScratch(c.W.Proto)
	defer putScratch(body)
	var deleted []types.StreamID
	var con *types.StreamConsumer
	attempts := count * 10
	now := c.Now
	n := 0
	cur, eof := start, false
	for {
		if attempts == 0 {
			break
		}
		attempts--
		if count == 0 {
			break
		}
		p := g.PendingFrom(cur)
		if p == nil {
			eof = true
			break
		}
		id := p.ID
		next, more := id.Next()
		if !s.Exists(id) {
			c.emitXClaim(c.DB.ID, key, group, p, g.LastID)
			c.Dirty(1)
			g.Ack(id)
			deleted = append(deleted, id)
			count--
		} else if minIdle == 0 || now-p.DeliveryTime >= minIdle {
			if con == nil {
				con = c.streamConsumer(c.DB.ID, key, group, g, c.Args[3])
			}
			p = g.Assign(id, con, now)
			p.DeliveryTime = now
			if !justID {
				p.DeliveryCount++
			}
			if justID {
				writeStreamID(body, id)
			} else {
				fv, _ := s.Get(id)
				writeStreamEntry(body, id, fv)
			}
			n++
			count--
			c.emitXClaim(c.DB.ID, key, group, p, g.LastID)
			c.Dirty(1)
		}
		if !more {
			eof = true
			break
		}
		cur = next
	}
	var cursor types.StreamID
	if !eof {
		if p := g.PendingFrom(cur); p != nil {
			cursor = p.ID
		}
	}
	c.W.Array(3)
	writeStreamID(c.W, cursor)
	c.W.Array(n)
	c.W.Raw(body.Buf)
	c.W.Array(len(deleted))
	for _, id := range deleted {
		writeStreamID(c.W, id)
	}
}

// ---- XINFO ----

// xinfoStream looks up XINFO's key: "no such key" when missing, WRONGTYPE for another type.
func xinfoStream(c *Ctx) *types.Stream {
	s, ok := streamRead(c, c.Args[2])
	if !ok {
		return nil
	}
	if s == nil {
		c.Error(ErrNoSuchKey)
	}
	return s
}

func xinfoStreamCommand(c *Ctx) {
	s := xinfoStream(c)
	if s == nil {
		return
	}
	full, count := false, int64(10)
	if opts := c.Args[3:]; len(opts) > 0 {
		if (len(opts) != 1 && len(opts) != 3) || !EqualFold(opts[0], "full") {
			c.subcommandSyntax()
			return
		}
		if len(opts) == 3 {
			if !EqualFold(opts[1], "count") {
				c.subcommandSyntax()
				return
			}
			n, ok := c.Int(5)
			if !ok {
				return
			}
			if count = n; count < 0 {
				count = 10
			}
		}
		full = true
	}
	w := c.W
	if full {
		w.Map(9)
	} else {
		w.Map(10)
	}
	w.BulkString("length")
	w.Int(int64(s.Len()))
	w.BulkString("radix-tree-keys")
	w.Int(int64(s.Nodes()))
	w.BulkString("radix-tree-nodes")
	w.Int(int64(s.RaxNodes()))
	w.BulkString("last-generated-id")
	writeStreamID(w, s.LastID())
	w.BulkString("max-deleted-entry-id")
	writeStreamID(w, s.MaxDeletedID())
	w.BulkString("entries-added")
	w.Int(int64(s.EntriesAdded()))
	w.BulkString("recorded-first-entry-id")
	writeStreamID(w, s.FirstID())
	if !full {
		w.BulkString("groups")
		w.Int(int64(len(s.Groups())))
		for _, edge := range []struct {
			name string
			rev  bool
		}{{"first-entry", false}, {"last-entry", true}} {
			w.BulkString(edge.name)
			found := false
			s.Range(types.StreamID{}, types.MaxStreamID, edge.rev, func(id types.StreamID, fv []string) bool {
				writeStreamEntry(w, id, fv)
				found = true
				return false
			})
			if !found {
				w.Null()
			}
		}
		return
	}
	w.BulkString("entries")
	writeStreamRange(w, s, types.StreamID{}, types.MaxStreamID, count, false)
	w.BulkString("groups")
	w.Array(len(s.Groups()))
	for _, g := range s.Groups() {
		w.Map(7)
		w.BulkString("name")
		w.BulkString(g.Name)
		w.BulkString("last-delivered-id")
		writeStreamID(w, g.LastID)
		w.BulkString("entries-read")
		if g.EntriesRead >= 0 {
			w.Int(g.EntriesRead)
		} else {
			w.Null()
		}
		w.BulkString("lag")
		writeLag(w, s, g)
		w.BulkString("pel-count")
		w.Int(int64(g.PendingLen()))
		w.BulkString("pending")
		writeFullPending(w, g.PendingLen(), count, g.EachPending, true)
		w.BulkString("consumers")
		w.Array(len(g.Consumers()))
		for _, con := range g.Consumers() {
			w.Map(4)
			w.BulkString("name")
			w.BulkString(con.Name)
			w.BulkString("seen-time")
			w.Int(con.SeenTime)
			w.BulkString("pel-count")
			w.Int(int64(con.PendingLen()))
			w.BulkString("pending")
			writeFullPending(w, con.PendingLen(), count, con.EachPending, false)
		}
	}
}

func writeLag(w *resp.Writer, s *types.Stream, g *types.StreamGroup) {
	if lag, ok := s.Lag(g); ok {
		w.Int(lag)
	} else {
		w.Null()
	}
}

func xinfoGroupsCommand(c *Ctx) {
	s := xinfoStream(c)
	if s == nil {
		return
	}
	c.W.Array(len(s.Groups()))
	for _, g := range s.Groups() {
		c.W.Map(6)
		c.W.BulkString("name")
		c.W.BulkString(g.Name)
		c.W.BulkString("consumers")
		c.W.Int(int64(len(g.Consumers())))
		c.W.BulkString("pending")
		c.W.Int(int64(g.PendingLen()))
		c.W.BulkString("last-delivered-id")
		writeStreamID(c.W, g.LastID)
		c.W.BulkString("entries-read")
		if g.EntriesRead >= 0 {
			c.W.Int(g.EntriesRead)
		} else {
			c.W.Null()
		}
		c.W.BulkString("lag")
		writeLag(c.W, s, g)
	}
}

func xinfoConsumersCommand(c *Ctx) {
	s := xinfoStream(c)
	if s == nil {
		return
	}
	g := s.Group(string(c.Args[3]))
	if g == nil {
		c.Error(noGroupFor(c.Args[2], c.Args[3]))
		return
	}
	c.W.Array(len(g.Consumers()))
	for _, con := range g.Consumers() {
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(con.Name)
		c.W.BulkString("pending")
		c.W.Int(int64(con.PendingLen()))
		c.W.BulkString("idle")
		c.W.Int(max(c.Now-con.SeenTime, 0))
	}
}

// writeFullPending is an XINFO STREAM FULL pending list: at most count (0: all) of the n
// entries each walks, as [id, consumer, delivery time, count] for a group (withConsumer) or
// [id, delivery time, count] for a consumer.
func writeFullPending(w *resp.Writer, n int, count int64, each func(func(*types.NACK) bool), withConsumer bool) {
	if count > 0 {
		n = min(n, int(count))
	}
	w.Array(n)
	k := 0
	each(func(p *types.NACK) bool {
		if k == n {
			return false
		}
		k++
		if withConsumer {
			w.Array(4)
			writeStreamID(w, p.ID)
			w.BulkString(p.Consumer.Name)
		} else {
			w.Array(3)
			writeStreamID(w, p.ID)
		}
		w.Int(p.DeliveryTime)
		w.Int(int64(p.DeliveryCount))
		return true
	})
}

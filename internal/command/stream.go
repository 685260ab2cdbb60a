package command

import (
	"math"
	"sync"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Streams (types.Stream), as Redis 7.0's t_stream.c behaves: entries, trimming, reads, consumer
// groups with their pending entries lists, blocking reads (stream_block.go) and the 7.0
// metadata.
//
// Effects (effects.go): XADD journals itself with the ID it generated and, when it trimmed,
// MAXLEN = <resulting length> in place of its trimming clause, so replay trims exactly what was
// trimmed; an approximate XTRIM journals XTRIM key MAXLEN = <length>. What consumer groups do is
// journaled as Redis propagates it: every pending entry a read or claim creates, moves or
// drops as XCLAIM key group consumer 0 id TIME <ms> RETRYCOUNT <n> FORCE JUSTID LASTID <id>,
// a consumer a read creates as XGROUP CREATECONSUMER, and the group's last ID and read counter
// as XGROUP SETID key group id ENTRIESREAD n. Unlike Redis, HotKV journals the read counter
// after every read that moves the last ID (Redis only after NOACK reads) and the delivery
// updates of history reads, so that replay rebuilds the group exactly.

const (
	errInvalidStreamID = "ERR Invalid stream ID specified as stream command argument"
	errXAddTooSmall    = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	errXAddZero        = "ERR The ID specified in XADD must be greater than 0-0"
	errXAddExhausted   = "ERR The stream has exhausted the last possible ID, unable to add more items"
	errXAddTooLarge    = "ERR Elements are too large to be stored"
	errXGroupNoKey     = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	errBusyGroup       = "BUSYGROUP Consumer Group name already exists"
	errStartInterval   = "ERR invalid start ID for the interval"
	errEndInterval     = "ERR invalid end ID for the interval"
	// streamElementsMax is the largest total size of an entry's fields and values (Redis's
	// STREAM_LISTPACK_MAX_SIZE).
	streamElementsMax = 1 << 30
)

func streamCommands() []*Command {
	type spec struct {
		name   string
		arity  int
		flags  Flag
		acl    []string
		ks     KeySpecFlag
		syntax string
		since  string
		cx     string
		sum    string
		h      Handler
	}
	mk := func(s spec) *Command {
		return &Command{Name: s.name, Arity: s.arity, Flags: s.flags, ACL: s.acl, FirstKey: 1, LastKey: 1, Step: 1,
			KeySpecs: oneKey(s.ks), Group: "stream", Since: s.since, Syntax: s.syntax, Complexity: s.cx,
			Summary: s.sum, Handler: s.h}
	}
	nondet := []string{"nondeterministic_output"}
	xadd := mk(spec{"xadd", -5, FlagWrite | FlagDenyOOM | FlagFast, []string{"write", "stream", "fast"}, KSRW | KSUpdate,
		"key [NOMKSTREAM] [<MAXLEN | MINID> [= | ~] threshold [LIMIT count]] <* | id> field value [field value ...]", "5.0.0",
		"O(1) when adding a new entry, O(N) when trimming where N being the number of entries evicted.",
		"Appends a new entry to a stream", xaddCommand})
	xadd.KeySpecs[0].Notes = "UPDATE instead of INSERT because of the optional trimming feature"
	xadd.Tips = nondet
	xadd.Doc = "History: 6.2.0 added NOMKSTREAM, the MINID strategy and LIMIT; 7.0.0 the <ms>-* ID form. Journaled with the ID it generated, and with MAXLEN = <resulting length> when it trimmed."
	xtrim := mk(spec{"xtrim", -4, FlagWrite, []string{"write", "stream", "slow"}, KSRW | KSDelete,
		"key <MAXLEN | MINID> [= | ~] threshold [LIMIT count]", "5.0.0",
		"O(N), with N being the number of evicted entries. Constant times are very small however, since entries are organized in macro nodes containing multiple entries that can be released with a single deallocation.",
		"Trims the stream to (approximately if '~' is passed) a certain size", xtrimCommand})
	xtrim.Tips = nondet
	xtrim.Doc = "History: 6.2.0 added MINID and LIMIT. An approximate trim is journaled as XTRIM key MAXLEN = <resulting length>."
	xpending := mk(spec{"xpending", -3, FlagReadOnly, []string{"read", "stream", "slow"}, KSRO | KSAccess,
		"key group [[IDLE min-idle-time] start end count [consumer]]", "5.0.0",
		"O(N) with N being the number of elements returned, so asking for a small fixed number of entries per call is O(1). O(M), where M is the total number of entries scanned when used with the IDLE filter. When the command returns just the summary and the list of consumers is small, it runs in O(1) time; otherwise, an additional O(N) time for iterating every consumer.",
		"Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.", xpendingCommand})
	xpending.Tips = nondet
	xclaim := mk(spec{"xclaim", -6, FlagWrite | FlagFast, []string{"write", "stream", "fast"}, KSRW | KSUpdate,
		"key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]", "5.0.0",
		"O(log N) with N being the number of messages in the PEL of the consumer group.",
		"Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.", xclaimCommand})
	xclaim.Tips = nondet
	xclaim.Doc = "Journaled as one XCLAIM ... TIME RETRYCOUNT FORCE JUSTID LASTID per entry it claimed or dropped, as Redis propagates it."
	xautoclaim := mk(spec{"xautoclaim", -6, FlagWrite | FlagFast, []string{"write", "stream", "fast"}, KSRW | KSDelete,
		"key group consumer min-idle-time start [COUNT count] [JUSTID]", "6.2.0", "O(1) if COUNT is small.",
		"Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.", xautoclaimCommand})
	xautoclaim.Tips = nondet
	xautoclaim.Doc = "History: 7.0.0 added the third element of the reply, the IDs of deleted entries it cleared from the PEL. Journaled as XCLAIM per entry, as Redis propagates it."
	xread := &Command{Name: "xread", Arity: -4, Flags: FlagReadOnly | FlagBlocking, ACL: []string{"read", "stream", "slow", "blocking"},
		KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, BeginKeyword: "STREAMS", Begin: 1, LastKey: -1, Step: 1, Limit: 2}},
		GetKeys:  xreadGetKeys, Group: "stream", Since: "5.0.0",
		Syntax:     "[COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]",
		Complexity: "For each stream mentioned: O(N) with N being the number of elements being returned, it means that XREAD-ing with a fixed COUNT is O(1). Note that when the BLOCK option is used, XADD will pay O(M) time in order to serve the M clients blocked on the stream getting new data.",
		Summary:    "Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.",
		Doc:        "Blocked clients are served in the order they blocked, right after the command (or the EXEC) that added entries; inside MULTI it does not block.",
		Handler:    xreadCommand}
	xreadgroup := &Command{Name: "xreadgroup", Arity: -7, Flags: FlagWrite | FlagBlocking, ACL: []string{"write", "stream", "slow", "blocking"},
		KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, BeginKeyword: "STREAMS", Begin: 4, LastKey: -1, Step: 1, Limit: 2}},
		GetKeys:  xreadGetKeys, Group: "stream", Since: "5.0.0",
		Syntax:     "GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]",
		Complexity: "For each stream mentioned: O(M) with M being the number of elements returned. If M is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1). On the other side when XREADGROUP blocks, XADD will pay the O(N) time in order to serve the N clients blocked on the stream getting new data.",
		Summary:    "Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.",
		Doc:        "Blocked clients are served in the order they blocked, right after the command that added entries; a blocked client fails once its stream or group is gone, as in Redis 7.0. Journaled as XCLAIM per delivered entry, XGROUP CREATECONSUMER for a consumer it created and XGROUP SETID ... ENTRIESREAD for the group's new last ID.",
		Handler:    xreadgroupCommand}
	return []*Command{
		xadd,
		mk(spec{"xrange", -4, FlagReadOnly, []string{"read", "stream", "slow"}, KSRO | KSAccess, "key start end [COUNT count]", "5.0.0",
			"O(N) with N being the number of elements being returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
			"Return a range of elements in a stream, with IDs matching the specified IDs interval", xrangeCommand}),
		mk(spec{"xrevrange", -4, FlagReadOnly, []string{"read", "stream", "slow"}, KSRO | KSAccess, "key end start [COUNT count]", "5.0.0",
			"O(N) with N being the number of elements returned. If N is constant (e.g. always asking for the first 10 elements with COUNT), you can consider it O(1).",
			"Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE", xrevrangeCommand}),
		mk(spec{"xlen", 2, FlagReadOnly | FlagFast, []string{"read", "stream", "fast"}, KSRO, "key", "5.0.0", "O(1)",
			"Return the number of entries in a stream", xlenCommand}),
		mk(spec{"xdel", -3, FlagWrite | FlagFast, []string{"write", "stream", "fast"}, KSRW | KSDelete, "key id [id ...]", "5.0.0",
			"O(1) for each single item to delete in the stream, regardless of the stream size.",
			"Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", xdelCommand}),
		xtrim,
		xread,
		xreadgroup,
		mk(spec{"xack", -4, FlagWrite | FlagFast, []string{"write", "stream", "fast"}, KSRW | KSUpdate, "key group id [id ...]", "5.0.0",
			"O(1) for each message ID processed.",
			"Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.", xackCommand}),
		xpending,
		xclaim,
		xautoclaim,
		mk(spec{"xsetid", -3, FlagWrite | FlagDenyOOM | FlagFast, []string{"write", "stream", "fast"}, KSRW | KSUpdate,
			"key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]", "5.0.0", "O(1)",
			"An internal command for replicating stream values", xsetidCommand}),
		{Name: "xgroup", Arity: -2, ACL: []string{"slow"}, Group: "stream", Since: "5.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for consumer groups commands",
			Subcommands: xgroupSubcommands()},
		{Name: "xinfo", Arity: -2, ACL: []string{"slow"}, Group: "stream", Since: "5.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for stream introspection commands",
			Subcommands: xinfoSubcommands()},
	}
}

func xgroupSubcommands() []*Command {
	sub := func(name string, arity int, flags Flag, ks KeySpecFlag, syntax, since, cx, summary string) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: []string{"write", "stream", "slow"},
			FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: []KeySpec{{Flags: ks, Begin: 2, Step: 1}},
			Since: since, Syntax: syntax, Complexity: cx, Summary: summary, Handler: xgroupCommand}
	}
	create := sub("create", -5, FlagWrite|FlagDenyOOM, KSRW|KSInsert, "key group <id | $> [MKSTREAM] [ENTRIESREAD entries-read]",
		"5.0.0", "O(1)", "Create a consumer group.")
	create.Doc = "History: 7.0.0 added ENTRIESREAD. Journaled with $ replaced by the ID it stood for."
	setid := sub("setid", -5, FlagWrite, KSRW|KSUpdate, "key group <id | $> [ENTRIESREAD entries-read]",
		"5.0.0", "O(1)", "Set a consumer group to an arbitrary last delivered ID value.")
	setid.Doc = "History: 7.0.0 added ENTRIESREAD. Journaled with $ replaced by the ID it stood for."
	return []*Command{
		create,
		setid,
		sub("destroy", 4, FlagWrite, KSRW|KSDelete, "key group", "5.0.0",
			"O(N) where N is the number of entries in the group's pending entries list (PEL).", "Destroy a consumer group."),
		sub("createconsumer", 5, FlagWrite|FlagDenyOOM, KSRW|KSInsert, "key group consumer", "6.2.0", "O(1)",
			"Create a consumer in a consumer group."),
		sub("delconsumer", 5, FlagWrite, KSRW|KSDelete, "key group consumer", "5.0.0", "O(1)",
			"Delete a consumer from a consumer group."),
		{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"stream", "slow"}, Since: "5.0.0",
			Complexity: "O(1)", Summary: "Show helpful text about the different subcommands",
			Handler: helpHandler(
				"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
				"CREATE <key> <groupname> <id|$> [option]",
				"    Create a new consumer group. Options are:",
				"    * MKSTREAM",
				"      Create the empty stream if it does not exist.",
				"    * ENTRIESREAD entries_read",
				"      Set the group's entries_read counter (internal use).",
				"CREATECONSUMER <key> <groupname> <consumer>",
				"    Create a new consumer in the specified group.",
				"DELCONSUMER <key> <groupname> <consumer>",
				"    Remove the specified consumer.",
				"DESTROY <key> <groupname>",
				"    Remove the specified group.",
				"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
				"    Set the current group ID and entries_read counter.",
				"HELP",
				"    Prints this help.",
			)},
	}
}

func xinfoSubcommands() []*Command {
	sub := func(name string, arity int, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagReadOnly, ACL: []string{"read", "stream", "slow"},
			FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: []KeySpec{{Flags: KSRO | KSAccess, Begin: 2, Step: 1}},
			Since: "5.0.0", Syntax: syntax, Complexity: "O(1)", Summary: summary, Handler: h}
	}
	stream := sub("stream", -3, "key [FULL [COUNT count]]", "Get information about a stream", xinfoStreamCommand)
	stream.Doc = "History: 6.0.0 added FULL; 7.0.0 the max-deleted-entry-id, entries-added, recorded-first-entry-id, entries-read and lag fields. radix-tree-keys counts HotKV's nodes of entries, which split as Redis's listpacks do; radix-tree-nodes is the size of the radix tree Redis would build over those nodes."
	groups := sub("groups", 3, "key", "List the consumer groups of a stream", xinfoGroupsCommand)
	groups.Doc = "History: 7.0.0 added the entries-read and lag fields."
	consumers := sub("consumers", 4, "key group", "List the consumers in a consumer group", xinfoConsumersCommand)
	consumers.Tips = []string{"nondeterministic_output"}
	return []*Command{
		stream, groups, consumers,
		{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"stream", "slow"}, Since: "5.0.0",
			Complexity: "O(1)", Summary: "Show helpful text about the different subcommands",
			Handler: helpHandler(
				"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
				"CONSUMERS <key> <groupname>",
				"    Show consumers of <groupname>.",
				"GROUPS <key>",
				"    Show the stream consumer groups.",
				"STREAM <key> [FULL [COUNT <count>]",
				"    Show information about the stream.",
				"HELP",
				"    Prints this help.",
			)},
	}
}

// xreadGetKeys finds XREAD's and XREADGROUP's keys as Redis's xreadGetKeys does: the first half
// of the arguments after the STREAMS option (which may also name a group or a key, so the
// options before it are skipped by their arity).
func xreadGetKeys(args [][]byte) []int {
	pos := -1
scan:
	for i := 1; i < len(args); i++ {
		switch {
		case EqualFold(args[i], "block"), EqualFold(args[i], "count"):
			i++
		case EqualFold(args[i], "group"):
			i += 2
		case EqualFold(args[i], "noack"):
		case EqualFold(args[i], "streams"):
			pos = i
			break scan
		default:
			break scan
		}
	}
	if pos < 0 {
		return nil
	}
	num := len(args) - pos - 1
	if num == 0 || num%2 != 0 {
		return nil
	}
	out := make([]int, num/2)
	for i := range out {
		out[i] = pos + 1 + i
	}
	return out
}

// ---- IDs ----

// string2ull is Redis's string2ull: a canonical integer that is not negative, or else what
// strtoull accepts (leading spaces, a sign, digits to the end, no overflow).
func string2ull(b []byte) (uint64, bool) {
	if v, ok := resp.ParseInt(b); ok {
		if v < 0 {
			return 0, false
		}
		return uint64(v), true
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r')) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		d := b[i] - '0'
		if d > 9 {
			return 0, false
		}
		if v > (math.MaxUint64-uint64(d))/10 {
			return 0, false
		}
		v = v*10 + uint64(d)
	}
	if neg {
		v = -v
	}
	return v, true
}

// parseStreamID is Redis's streamGenericParseIDOrReply without the reply: "ms-seq", "ms" (seq
// missingSeq), "-" and "+" unless strict, and "ms-*" when seqStar (seqGiven false then).
func parseStreamID(b []byte, missingSeq uint64, strict, seqStar bool) (id types.StreamID, seqGiven, ok bool) {
	if len(b) > 127 {
		return id, false, false
	}
	for i, ch := range b { // the C string ends at a NUL byte
		if ch == 0 {
			b = b[:i]
			break
		}
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return id, false, false
		}
		if b[0] == '-' {
			return types.StreamID{}, true, true
		}
		return types.MaxStreamID, true, true
	}
	seqGiven = true
	msPart, seqPart, dash := b, []byte(nil), false
	for i, ch := range b {
		if ch == '-' {
			msPart, seqPart, dash = b[:i], b[i+1:], true
			break
		}
	}
	ms, ok := string2ull(msPart)
	if !ok {
		return id, false, false
	}
	seq := missingSeq
	if dash {
		if seqStar && len(seqPart) == 1 && seqPart[0] == '*' {
			seq, seqGiven = 0, false
		} else if seq, ok = string2ull(seqPart); !ok {
			return id, false, false
		}
	}
	return types.StreamID{Ms: ms, Seq: seq}, seqGiven, true
}

// streamID parses argument i as a strict ID (no "-" or "+"), replying the invalid-ID error.
func (c *Ctx) streamID(i int) (types.StreamID, bool) {
	id, _, ok := parseStreamID(c.Args[i], 0, true, false)
	if !ok {
		c.Error(errInvalidStreamID)
	}
	return id, ok
}

// streamInterval parses a range bound: "(" makes it exclusive (and strict), stepping to the next
// ID (start) or the previous one (end) with Redis's errors when there is none.
func (c *Ctx) streamInterval(arg []byte, missingSeq uint64, start bool) (types.StreamID, bool) {
	exclude := len(arg) > 1 && arg[0] == '('
	var id types.StreamID
	var ok bool
	if exclude {
		id, _, ok = parseStreamID(arg[1:], missingSeq, true, false)
	} else {
		id, _, ok = parseStreamID(arg, missingSeq, false, false)
	}
	if !ok {
		c.Error(errInvalidStreamID)
		return id, false
	}
	if exclude {
		if start {
			if id, ok = id.Next(); !ok {
				c.Error(errStartInterval)
			}
		} else if id, ok = id.Prev(); !ok {
			c.Error(errEndInterval)
		}
	}
	return id, ok
}

// effID formats an ID for an effect in the context's scratch space (see effInt).
func (c *Ctx) effID(id types.StreamID) []byte {
	if len(c.effNum) > 4096 {
		c.effNum = c.effNum[:0]
	}
	start := len(c.effNum)
	c.effNum = id.AppendTo(c.effNum)
	return c.effNum[start:len(c.effNum):len(c.effNum)]
}

// ---- replies ----

// scratchWriters hold replies whose length is known only at the end (a range with COUNT over
// deleted entries, a group read): the elements go to a scratch writer, then the header and the
// elements to the client.
var scratchWriters = sync.Pool{New: func() any { return resp.NewWriter() }}

func getScratch(proto int) *resp.Writer {
	w := scratchWriters.Get().(*resp.Writer)
	w.Reset()
	w.Proto = proto
	return w
}

func putScratch(w *resp.Writer) {
	if cap(w.Buf) <= 1<<16 {
		scratchWriters.Put(w)
	}
}

// writeStreamID writes an ID as a bulk string.
func writeStreamID(w *resp.Writer, id types.StreamID) {
	var buf [41]byte
	w.Bulk(id.AppendTo(buf[:0]))
}

// writeStreamEntry writes [id, [field, value, ...]].
func writeStreamEntry(w *resp.Writer, id types.StreamID, fv []string) {
	w.Array(2)
	writeStreamID(w, id)
	w.Array(len(fv))
	for _, s := range fv {
		w.BulkString(s)
	}
}

// writeStreamRange writes the entries in [start, end] (at most count, 0 for all) as an array.
func writeStreamRange(w *resp.Writer, s *types.Stream, start, end types.StreamID, count int64, rev bool) int64 {
	body := getScratch(w.Proto)
	var n int64
	s.Range(start, end, rev, func(id types.StreamID, fv []string) bool {
		writeStreamEntry(body, id, fv)
		n++
		return count == 0 || n < count
	})
	w.Array(int(n))
	w.Raw(body.Buf)
	putScratch(body)
	return n
}

// ---- lookups ----

// streamValue wraps a stream as a key's value.
func streamValue(s *types.Stream) store.Value { return store.ObjValue(store.KindStream, s) }

// streamRead returns key's stream for a read, replying WRONGTYPE for another type; nil with ok
// for a missing key.
func streamRead(c *Ctx, key []byte) (*types.Stream, bool) {
	e := c.LookupRead(key)
	if e == nil {
		return nil, true
	}
	if e.Val.Kind != store.KindStream {
		c.WrongType()
		return nil, false
	}
	return e.Val.Obj().(*types.Stream), true
}

// streamWrite is streamRead for writes (no hit statistics).
func streamWrite(c *Ctx, key []byte) (*types.Stream, bool) {
	e := c.Lookup(key)
	if e == nil {
		return nil, true
	}
	if e.Val.Kind != store.KindStream {
		c.WrongType()
		return nil, false
	}
	return e.Val.Obj().(*types.Stream), true
}

// ---- XADD, XTRIM ----

// trimParse is what streamParseAddOrTrimArgsOrReply finds.
type trimParse struct {
	types.TrimArgs
	id                 types.StreamID
	idGiven, seqGiven  bool
	noMkStream         bool
	idPos              int
	limitGiven, approx bool
}

// parseAddTrim parses XADD's (xadd) or XTRIM's options with Redis's errors and their order.
func parseAddTrim(c *Ctx, xadd bool) (p trimParse, ok bool) {
	i := 2
	for ; i < len(c.Args); i++ {
		more := len(c.Args) - 1 - i
		a := c.Args[i]
		switch {
		case xadd && len(a) == 1 && a[0] == '*':
			p.idPos = i
			return p, p.finishTrim(c, xadd)
		case EqualFold(a, "maxlen") && more > 0, EqualFold(a, "minid") && more > 0:
			if p.Strategy != types.TrimNone {
				c.Error("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return p, false
			}
			p.Approx = false
			if next := c.Args[i+1]; more >= 2 && len(next) == 1 && (next[0] == '~' || next[0] == '=') {
				p.Approx = next[0] == '~'
				i++
			}
			if EqualFold(a, "maxlen") {
				n, ok := c.Int(i + 1)
				if !ok {
					return p, false
				}
				if n < 0 {
					c.Error("ERR The MAXLEN argument must be >= 0.")
					return p, false
				}
				p.Strategy, p.MaxLen = types.TrimMaxLen, uint64(n)
			} else {
				id, ok := c.streamID(i + 1)
				if !ok {
					return p, false
				}
				p.Strategy, p.MinID = types.TrimMinID, id
			}
			i++
		case EqualFold(a, "limit") && more > 0:
			n, ok := c.Int(i + 1)
			if !ok {
				return p, false
			}
			if n < 0 {
				c.Error("ERR The LIMIT argument must be >= 0.")
				return p, false
			}
			p.Limit, p.limitGiven = n, true
			i++
		case xadd && EqualFold(a, "nomkstream"):
			p.noMkStream = true
		case xadd:
			id, seqGiven, ok := parseStreamID(a, 0, true, true)
			if !ok {
				c.Error(errInvalidStreamID)
				return p, false
			}
			p.id, p.idGiven, p.seqGiven, p.idPos = id, true, seqGiven, i
			return p, p.finishTrim(c, xadd)
		default:
			c.Syntax()
			return p, false
		}
	}
	p.idPos = i
	return p, p.finishTrim(c, xadd)
}

func (p *trimParse) finishTrim(c *Ctx, xadd bool) bool {
	if p.Limit != 0 && p.Strategy == types.TrimNone {
		c.Error("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return false
	}
	if !xadd && p.Strategy == types.TrimNone {
		c.Error("ERR syntax error, XTRIM must be called with a trimming strategy")
		return false
	}
	switch {
	case p.limitGiven && !p.Approx:
		c.Error("ERR syntax error, LIMIT cannot be used without the special ~ option")
		return false
	case !p.limitGiven && p.Approx:
		p.Limit = types.StreamTrimLimitDefault()
	case !p.limitGiven:
		p.Limit = 0
	}
	return true
}

var (
	effXAdd   = []byte("XADD")
	effXTrim  = []byte("XTRIM")
	effMaxLen = []byte("MAXLEN")
	effEquals = []byte("=")
)

func xaddCommand(c *Ctx) {
	p, ok := parseAddTrim(c, true)
	if !ok {
		return
	}
	fieldPos := p.idPos + 1
	if n := len(c.Args) - fieldPos; n < 2 || n%2 == 1 {
		c.ArityError()
		return
	}
	if p.idGiven && p.seqGiven && p.id.IsZero() {
		c.Error(errXAddZero)
		return
	}
	key := c.Args[1]
	s, ok := streamWrite(c, key)
	if !ok {
		return
	}
	if s == nil {
		if p.noMkStream {
			c.W.Null()
			return
		}
		s = types.NewStream()
		c.DB.Set(key, streamValue(s), 0, false, c.Now)
	}
	last := s.LastID()
	if last == types.MaxStreamID {
		c.Error(errXAddExhausted)
		return
	}
	var id types.StreamID
	switch {
	case !p.idGiven:
		id, ok = s.NextID(uint64(max(c.Now, 0)))
	case p.seqGiven:
		id = p.id
	case last.Ms == p.id.Ms:
		id, ok = last.Next()
		ok = ok && last.Seq != math.MaxUint64
	default:
		id = p.id
	}
	if !ok || !last.Less(id) {
		c.Error(errXAddTooSmall)
		return
	}
	total := 0
	for _, a := range c.Args[fieldPos:] {
		total += len(a)
	}
	if total > streamElementsMax {
		c.Error(errXAddTooLarge)
		return
	}
	s.Append(id, c.Args[fieldPos:])
	var idBuf [41]byte
	idb := id.AppendTo(idBuf[:0])
	c.W.Bulk(idb)
	trimmed := s.Trim(p.TrimArgs)
	c.Dirty(1)
	c.notify(evStream, "xadd", key)
	if trimmed > 0 {
		c.notify(evStream, "xtrim", key)
	}
	if c.Store.Journal != nil {
		// The ID it generated, and the length trimming left instead of the trimming request:
		// replay then removes exactly the entries removed here.
		var argBuf [12][]byte
		args := append(argBuf[:0], effXAdd, key)
		if trimmed > 0 {
			args = append(args, effMaxLen, effEquals, c.effInt(int64(s.Len())))
		}
		args = append(args, idb)
		args = append(args, c.Args[fieldPos:]...)
		c.Emit(c.DB.ID, args...)
	}
	c.markReady(key)
}

func xtrimCommand(c *Ctx) {
	p, ok := parseAddTrim(c, false)
	if !ok {
		return
	}
	s, ok := streamWrite(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.W.Int(0)
		return
	}
	n := s.Trim(p.TrimArgs)
	if n > 0 {
		c.Dirty(n)
		c.notify(evStream, "xtrim", c.Args[1])
		if p.Approx && c.Store.Journal != nil {
			c.Emit(c.DB.ID, effXTrim, c.Args[1], effMaxLen, effEquals, c.effInt(int64(s.Len())))
		}
	}
	c.W.Int(n)
}

// ---- XRANGE, XREVRANGE, XLEN, XDEL ----

func xrangeCommand(c *Ctx)    { xrangeGeneric(c, false) }
func xrevrangeCommand(c *Ctx) { xrangeGeneric(c, true) }

func xrangeGeneric(c *Ctx, rev bool) {
	startArg, endArg := c.Args[2], c.Args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ok := c.streamInterval(startArg, 0, true)
	if !ok {
		return
	}
	end, ok := c.streamInterval(endArg, math.MaxUint64, false)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(c.Args); j++ {
		if c.ArgIs(j, "count") && j+1 < len(c.Args) {
			n, ok := c.Int(j + 1)
			if !ok {
				return
			}
			count = max(n, 0)
			j++
			continue
		}
		c.Syntax()
		return
	}
	s, ok := streamRead(c, c.Args[1])
	if !ok {
		return
	}
	switch {
	case s == nil:
		c.W.Array(0)
	case count == 0:
		c.W.NullArray()
	default:
		writeStreamRange(c.W, s, start, end, max(count, 0), rev)
	}
}

func xlenCommand(c *Ctx) {
	s, ok := streamRead(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.W.Int(0)
		return
	}
	c.W.Int(int64(s.Len()))
}

// streamIDs parses every argument from first on as a stream ID into buf, replying the error
// itself at the first bad one.
func (c *Ctx) streamIDs(first int, buf []types.StreamID) ([]types.StreamID, bool) {
	for i := first; i < len(c.Args); i++ {
		id, ok := c.streamID(i)
		if !ok {
			return nil, false
		}
		buf = append(buf, id)
	}
	return buf, true
}

// countIDs applies fn to each ID and counts those it reports done (XDEL's deletions, XACK's
// acknowledgements).
func countIDs(ids []types.StreamID, fn func(types.StreamID) bool) int64 {
	var n int64
	for _, id := range ids {
		if fn(id) {
			n++
		}
	}
	return n
}

func xdelCommand(c *Ctx) {
	s, ok := streamWrite(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.W.Int(0)
		return
	}
	// Every ID is checked first: the command is all or nothing.
	var buf [8]types.StreamID
	ids, ok := c.streamIDs(2, buf[:0])
	if !ok {
		return
	}
	n := countIDs(ids, s.Delete)
	c.Dirty(n)
	if n > 0 {
		c.notify(evStream, "xdel", c.Args[1])
	}
	c.W.Int(n)
}

// ---- XSETID ----

func xsetidCommand(c *Ctx) {
	id, ok := c.streamID(2)
	if !ok {
		return
	}
	added := int64(-1)
	var maxDel types.StreamID
	for i := 3; i < len(c.Args); i += 2 {
		more := len(c.Args) - 1 - i
		switch {
		case c.ArgIs(i, "entriesadded") && more > 0:
			n, ok := c.Int(i + 1)
			if !ok {
				return
			}
			if n < 0 {
				c.Error("ERR entries_added must be positive")
				return
			}
			added = n
		case c.ArgIs(i, "maxdeletedid") && more > 0:
			if maxDel, ok = c.streamID(i + 1); !ok {
				return
			}
			if id.Less(maxDel) {
				c.Error("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
		default:
			c.Syntax()
			return
		}
	}
	s, ok := streamWrite(c, c.Args[1])
	if !ok {
		return
	}
	if s == nil {
		c.Error(ErrNoSuchKey)
		return
	}
	if s.Len() > 0 {
		if last, _ := s.LastEntryID(); id.Less(last) {
			c.Error("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if added != -1 && s.Len() > uint64(added) {
			c.Error("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	s.SetMeta(id, uint64(max(added, 0)), added != -1, maxDel)
	c.Dirty(1)
	c.notify(evStream, "xsetid", c.Args[1])
	c.W.OK()
}

package command

import (
	mathbits "math/bits"
	"sort"
	"strings"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/hotkv/hotkv/internal/store"
)

// nanotime is the runtime's monotonic clock: half the cost of time.Now, and commandstats reads
// it twice per command.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// Exec runs one command: lookup, arity, locking and the handler, then statistics. c.Args,
// c.W, c.Client, c.Srv, c.Store, c.DB and c.Now must be set. The reply, including any error,
// is appended to c.W.
func (t *Table) Exec(c *Ctx) {
	if c.Client.replyOff || c.Client.replySkip || c.Client.replySkipNext {
		t.execMuted(c)
		return
	}
	t.exec(c)
}

// execMuted runs a command while CLIENT REPLY drops replies: what the command wrote is cut
// off again, except its pushes (pushWriter), and SKIP moves on to the next command, as in
// Redis's resetClient.
func (t *Table) execMuted(c *Ctx) {
	cl := c.Client
	if cl.replySkipNext {
		// Set by the previous command (CLIENT REPLY SKIP): this is the one skipped.
		cl.replySkip, cl.replySkipNext = true, false
	}
	c.muted = cl.replyOff || cl.replySkip
	c.replyMark = len(c.W.Buf)
	c.side.Proto = c.W.Proto
	c.side.Reset()
	t.exec(c)
	if c.muted && (cl.replyOff || cl.replySkip) {
		c.W.Buf = append(c.W.Buf[:c.replyMark], c.side.Buf...)
	} else if c.muted {
		// CLIENT REPLY ON: its OK goes out, after the pushes held aside.
		reply := append([]byte(nil), c.W.Buf[c.replyMark:]...)
		c.W.Buf = append(append(c.W.Buf[:c.replyMark], c.side.Buf...), reply...)
	}
	c.muted = false
	c.side.Reset()
	cl.replySkip = false
	if cl.replySkipNext {
		cl.replySkip, cl.replySkipNext = true, false
	}
}

func (t *Table) exec(c *Ctx) {
	c.hashedKey = nil
	cmd := t.resolve(c)
	if cmd == nil {
		if c.Client.multi.active {
			c.Client.multi.dirty = true // Redis aborts EXEC after a queue-time error
		}
		return
	}
	// One nil check and one flag for the common case, a connection of the unrestricted
	// default user: the checks themselves run only for restricted or unauthenticated clients.
	if u := c.Client.ACLUser; u != nil && (!c.Client.Authenticated || !u.Unrestricted()) && !c.admit(cmd, u) {
		return
	}
	if w := t.World; w != nil && !c.inScript && !c.Client.LogApplier &&
		(cmd.Flags&(FlagWrite|FlagReadOnly|FlagMayReplicate) != 0 || cmd.RunsScript || cmd.Name == "exec") {
		// Only commands that touch the keyspace (EXEC runs queued ones): an admin command
		// that waits, such as RAFT SNAPSHOT, must not hold the world.
		w.RLock()
		defer w.RUnlock()
	}
	if t.Gate != nil && (cmd.Flags&(FlagWrite|FlagReadOnly|FlagMayReplicate) != 0 || cmd.RunsScript) && !c.inScript {
		if msg := t.Gate(c, cmd); msg != "" {
			c.Cmd = cmd
			cmd.RejectedCalls.Add(1)
			if c.Client.multi.active {
				c.Client.multi.dirty = true // as Redis Cluster: a redirected command aborts EXEC
			}
			c.Error(msg)
			return
		}
	}
	if t.Gate != nil && cmd.Name == "exec" && cmd.parent == nil && c.Client.multi.active && !c.Client.multi.dirty &&
		!c.inScript && !t.gateExec(c, cmd) {
		return
	}
	// One atomic load when no maxmemory is set (the default): the hot path's whole cost. A
	// log applier neither evicts nor is refused, as Redis never evicts while loading or on a
	// replica: each write it applies was admitted once, and the leader's (or the past's)
	// evictions arrive as DELs in the log (a replay that refused writes would lose them).
	if c.Store.Mem.Limit() > 0 && !c.Client.LogApplier && !c.admitMemory(cmd) {
		return
	}
	// And one more while the disk is healthy.
	if de := t.DiskError.Load(); de != nil && !c.Client.LogApplier && !c.admitDiskError(cmd, *de) {
		return
	}
	if c.Client.pubsubMode && c.W.Proto == 2 && !allowedSubscribed(cmd) {
		// Redis's processCommand: a RESP2 connection in pub/sub mode can only (un)subscribe,
		// PING, QUIT and RESET; a rejected command inside MULTI aborts the EXEC.
		c.Cmd = cmd
		cmd.RejectedCalls.Add(1)
		msg := "Can't execute '" + cmd.FullName() + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
		if cmd.Name == "exec" && cmd.parent == nil {
			// As Redis's rejectCommand: a rejected EXEC discards the transaction and says so.
			c.Client.setMulti(multiState{})
			c.Store.Watches.Unwatch(&c.Client.watch)
			c.Error("EXECABORT Transaction discarded because of: " + msg)
			return
		}
		if c.Client.multi.active {
			c.Client.multi.dirty = true
		}
		c.Error("ERR " + msg)
		return
	}
	if t.Loading.Load() && !c.Client.LogApplier && !c.admitLoading(cmd) {
		return
	}
	// A log applier is not refused while a script is busy: it waits for the script's locks, as
	// Redis leaves a replica's master stream unread until a busy script ends; refusing an
	// effect would make the replica differ from its leader.
	if t.scripting != nil && !c.Client.LogApplier && !t.busyCheck(c, cmd) {
		return
	}
	if t.pause.mode.Load() != pauseOff {
		// CLIENT PAUSE: a held command waits in its connection (Ctx.Paused) and runs again
		// when the pause lifts. One that runs meanwhile (a read under WRITE) sees expired keys
		// as gone but leaves them, as Redis expires nothing while clients are paused.
		held, on := t.pauses(c, cmd)
		if held {
			c.Cmd = cmd
			c.Paused = true
			return
		}
		if on {
			c.DB = c.DB.ReadOnlyView()
		}
	}
	if c.Client.monitor.Load() && cmd.Flags&(FlagWrite|FlagReadOnly|FlagMayReplicate) != 0 {
		// A monitor is a replica to Redis (CLIENT_SLAVE): it may not touch the keyspace.
		c.Cmd = cmd
		cmd.RejectedCalls.Add(1)
		c.Error("ERR Replica can't interact with the keyspace")
		return
	}
	if c.Client.multi.active && !runsInMulti(cmd) {
		if cmd.Flags&FlagNoMulti != 0 || (cmd.parent != nil && cmd.parent.Flags&FlagNoMulti != 0) {
			// Redis refuses these at queue time and the transaction then aborts.
			c.Client.multi.dirty = true
			c.Error(errNotInMulti)
			return
		}
		c.enqueue(cmd)
		return
	}
	c.lockFor(cmd)
	t.run(c, cmd)
	if len(c.ready) > 0 {
		c.serveReady() // before the locks go: blocked clients are served right after the push
	}
	c.UnlockAll()
	if c.post {
		c.afterCommand() // invalidations, after the reply (tracking.go)
	}
	if c.Client.caching && !c.Client.multi.active && (cmd.parent == nil || cmd.parent.Name != "client") {
		c.Client.caching = false // CLIENT CACHING covers the next command or transaction only
	}
}

// run executes a resolved command whose locks are held, journals its effect, and records its
// statistics. A write that changed something (Dirty) and did not journal a rewritten effect
// itself (Emit) is journaled as its own arguments, in the database it ran in: see effects.go
// for which commands may rely on that.
func (t *Table) run(c *Ctx, cmd *Command) {
	c.Cmd = cmd
	c.failed = false
	c.changed, c.journaled, c.touched = false, false, false
	c.effNum = c.effNum[:0]
	if c.Client.LastCmd.Load() != cmd {
		c.Client.LastCmd.Store(cmd) // a pointer store with a write barrier: only on change
	}
	// Commands of one batch run back to back, so one clock reading ends a command and starts
	// the next (the next one's parsing is counted with it): half the readings, which cost
	// tens of ns each on virtual machines.
	start := c.nanoMark
	if start == 0 {
		start = nanotime()
	}
	if cmd.Flags&FlagSkipMonitor != 0 && t.intro.monitors.Load() != 0 && !c.inScript {
		// EVAL and FCALL show before the commands their script runs, as Redis feeds them
		// from their own handlers.
		t.feedMonitors(c, cmd)
	}
	cmd.Handler(c)
	if c.changed {
		if !c.journaled && cmd.Flags&FlagWrite != 0 {
			if j := c.journal(); j != nil {
				args := c.Args
				top := cmd
				if cmd.parent != nil {
					top = cmd.parent
				}
				if top.calledAs != top.Name {
					// Called by a rename-command name: the log holds the command's own name, so
					// that a replay, or a replica, does not depend on the renames.
					args = append([][]byte{[]byte(top.Name)}, c.Args[1:]...)
				}
				j.Append(store.Effect{DB: c.DB.ID, Args: args})
			}
		}
		// A read that changed its key (PFCOUNT caching its estimate) counts for WATCH too.
		if !c.touched && (c.Store.Watches.Any() || c.trackingActive()) {
			c.touchWritten(cmd)
		}
	}
	if c.Client.tracking && cmd.Flags&FlagReadOnly != 0 && !roScript(cmd) {
		c.trackRead(cmd)
	}
	end := nanotime()
	c.nanoMark = end
	ns := end - start
	us := ns / 1000
	cmd.Usec.Add(us)
	cmd.Calls.Add(1)
	if c.failed {
		cmd.FailedCalls.Add(1)
	}
	// Introspection (introspection.go): a blocked command is timed and logged when it is
	// served (AfterBlocked), as Redis does.
	if c.Blocked != nil {
		c.blockedNs = ns
	} else if !t.intro.untracked.Load() {
		cmd.latency.record(ns)
	}
	if us >= t.intro.gate.Load() {
		t.slow(c, cmd, us)
	}
	if t.intro.monitors.Load() != 0 && cmd.Flags&(FlagSkipMonitor|FlagAdmin) == 0 {
		t.feedMonitors(c, cmd)
	}
}

// resolve finds the command or subcommand and checks arity, replying the error itself when
// there is one.
func (t *Table) resolve(c *Ctx) *Command {
	// A connection tends to send the same command again (pipelines, benchmarks, rate-limit
	// checks): comparing the name with the previous one is cheaper than the table lookup.
	var cmd *Command
	if last := c.lastLookup; last != nil && last.calledAs != "" && EqualFold(c.Args[0], last.calledAs) {
		cmd = last
	} else {
		cmd = t.Lookup(c.Args[0])
		if cmd == nil && c.Client.OriginalNames {
			cmd = t.lookupOriginal(c.Args[0]) // not cached: lastLookup matches client names
		} else {
			c.lastLookup = cmd
		}
	}
	if cmd == nil {
		c.Error(unknownCommand(c.Args))
		return nil
	}
	if len(cmd.Subcommands) > 0 {
		if len(c.Args) == 1 && cmd.Handler != nil && CheckArity(cmd.Arity, 1) {
			// A container with its own handler runs alone, as COMMAND does in Redis.
			return cmd
		}
		if len(c.Args) < 2 {
			c.Cmd = cmd
			c.ArityError()
			cmd.RejectedCalls.Add(1)
			return nil
		}
		sub := cmd.subByName[strings.ToLower(string(c.Args[1]))]
		if sub == nil {
			c.Error("ERR unknown subcommand '" + truncate(string(c.Args[1]), 128) + "'. Try " + strings.ToUpper(cmd.Name) + " HELP.")
			cmd.RejectedCalls.Add(1)
			return nil
		}
		cmd = sub
	}
	if !CheckArity(cmd.Arity, len(c.Args)) {
		c.Cmd = cmd
		cmd.RejectedCalls.Add(1)
		if cmd.Name == "exec" && cmd.parent == nil {
			// Redis's rejectCommand: a rejected EXEC discards the transaction and says so.
			c.Client.setMulti(multiState{})
			c.Error("EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command")
			return nil
		}
		c.ArityError()
		return nil
	}
	return cmd
}

// unknownCommand words the error as Redis 7 does: the name cut at 128 bytes, then quoted
// arguments while their text is under 128 bytes, each cut to what is left of that budget.
func unknownCommand(args [][]byte) string {
	var a strings.Builder
	for _, arg := range args[1:] {
		if a.Len() >= 128 {
			break
		}
		n := 128 - a.Len()
		a.WriteByte('\'')
		a.WriteString(truncate(string(arg), n))
		a.WriteString("' ")
	}
	return "ERR unknown command '" + truncate(string(args[0]), 128) + "', with args beginning with: " + a.String()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// lockFor takes the shard locks a command's keys need, in ascending order.
func (c *Ctx) lockFor(cmd *Command) {
	if cmd.Global || c.allLocked {
		return
	}
	if cmd.GetKeys == nil && !cmd.keyNum && cmd.FirstKey > 0 && cmd.LastKey == cmd.FirstKey {
		// The common case: one key, one shard, no allocation. The hash is kept for the
		// handler's lookup of the same key.
		if cmd.FirstKey < len(c.Args) {
			key := c.Args[cmd.FirstKey]
			c.keyHash, c.hashedKey = c.Store.Hash(key), key
			c.LockShard(c.DB.Shard(c.Store.ShardOfHash(c.keyHash)))
		}
		return
	}
	if cmd.GetKeys == nil && !cmd.keyNum && c.DB.NumShards() <= 256 {
		c.lockRangeBitmap(cmd)
		return
	}
	idx := cmd.KeyIndexes(c.Args)
	if len(idx) == 0 {
		return
	}
	shards := make([]int, 0, len(idx))
	for _, i := range idx {
		shards = append(shards, c.Store.ShardIndex(c.Args[i]))
	}
	sort.Ints(shards)
	for {
		prev := -1
		for _, s := range shards {
			if s != prev {
				c.lockAt(c.DB.ID, s)
				prev = s
			}
		}
		if c.settle() {
			return
		}
	}
}

// lockAt locks shard of database db for a multi-shard command and records its place in the
// global lock order, for settle.
func (c *Ctx) lockAt(db, shard int) {
	c.LockShard(c.Store.DB(db).Shard(shard))
	g := db*c.DB.NumShards() + shard
	if c.lockN == 0 || g < c.lockLo {
		c.lockLo = g
	}
	if c.lockN == 0 || g > c.lockHi {
		c.lockHi = g
	}
	c.lockN++
}

// settle keeps a multi-shard write out of a background snapshot's cut (store.SnapshotWalk):
// if the walk has captured some but not all of the shards just locked, the write would be saved
// half-applied, so settle releases the locks, waits until the walk has passed the highest of
// them, and returns false for the caller to lock again. Single-shard writes never straddle.
func (c *Ctx) settle() bool {
	if c.lockN < 2 {
		return true
	}
	walking, done := c.Store.SnapshotProgress()
	if !walking || done <= c.lockLo || done > c.lockHi {
		return true
	}
	hi := c.lockHi
	c.UnlockAll()
	for {
		if walking, done = c.Store.SnapshotProgress(); !walking || done > hi {
			return false
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// lockRangeBitmap locks the shards of a first/last/step key range without allocating: the
// shard set is a 256-bit bitmap on the stack, and walking its bits in order gives the
// ascending lock order for free. MGET, MSET and DEL with many keys take this path.
func (c *Ctx) lockRangeBitmap(cmd *Command) {
	if cmd.FirstKey <= 0 {
		return
	}
	last := cmd.LastKey
	if last < 0 {
		last = len(c.Args) + last
	}
	var set [4]uint64
	for i := cmd.FirstKey; i <= last && i < len(c.Args); i += max(1, cmd.Step) {
		sh := c.Store.ShardIndex(c.Args[i])
		set[sh>>6] |= 1 << (sh & 63)
	}
	for {
		for w, bits := range set {
			for bits != 0 {
				b := mathbits.TrailingZeros64(bits)
				bits &= bits - 1
				c.lockAt(c.DB.ID, w<<6+b)
			}
		}
		if c.settle() {
			return
		}
	}
}

// LockAll locks every shard of every database, in order, for a global transaction; the
// handlers that run meanwhile take no locks of their own.
func (c *Ctx) LockAll() {
	for {
		for i := 0; i < c.Store.NumDBs(); i++ {
			for j := 0; j < c.Store.DB(i).NumShards(); j++ {
				c.lockAt(i, j)
			}
		}
		if c.settle() {
			break
		}
	}
	c.allLocked = true
}

// UnlockAllGlobal releases a global transaction's locks.
func (c *Ctx) UnlockAllGlobal() {
	c.allLocked = false
	c.UnlockAll()
}

// LockDBs locks every shard of the given databases in global order, for commands like SWAPDB,
// MOVE and COPY that span databases. The shards are released after the handler.
func (c *Ctx) LockDBs(dbs ...int) {
	if c.allLocked {
		return
	}
	sort.Ints(dbs)
	for {
		prev := -1
		for _, d := range dbs {
			if d == prev {
				continue
			}
			prev = d
			for j := 0; j < c.Store.DB(d).NumShards(); j++ {
				c.lockAt(d, j)
			}
		}
		if c.settle() {
			return
		}
	}
}

// LockKeysIn locks the shards of keys in database db, plus the shards of keys2 in db2, in
// global order (database, then shard); MOVE and COPY use it.
func (c *Ctx) LockKeysIn(db int, keys [][]byte, db2 int, keys2 [][]byte) {
	if c.allLocked {
		return
	}
	type ref struct{ db, shard int }
	var refs []ref
	for _, k := range keys {
		refs = append(refs, ref{db, c.Store.ShardIndex(k)})
	}
	for _, k := range keys2 {
		refs = append(refs, ref{db2, c.Store.ShardIndex(k)})
	}
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].db != refs[j].db {
			return refs[i].db < refs[j].db
		}
		return refs[i].shard < refs[j].shard
	})
	for {
		for i, r := range refs {
			if i > 0 && r == refs[i-1] {
				continue
			}
			c.lockAt(r.db, r.shard)
		}
		if c.settle() {
			return
		}
	}
}

// Lookup is the handler's read of a key in the selected database (lazy expiry included).
func (c *Ctx) Lookup(key []byte) *store.Entry {
	if c.isHashed(key) {
		return c.DB.LookupHashed(key, c.keyHash, c.Now)
	}
	return c.DB.Lookup(key, c.Now)
}

// isHashed reports whether key is the very argument the dispatcher hashed for locking.
func (c *Ctx) isHashed(key []byte) bool {
	return len(key) > 0 && len(key) == len(c.hashedKey) && &key[0] == &c.hashedKey[0]
}

// LookupRead is Lookup for read commands: it counts keyspace hits and misses.
func (c *Ctx) LookupRead(key []byte) *store.Entry {
	if c.Client.NoTouch {
		return c.DB.Lookup(key, c.Now)
	}
	return c.DB.LookupRead(key, c.Now)
}

// Dirty records n changes for save points and INFO. n > 0 also tells the dispatcher that the
// command changed the dataset, so that its effect is journaled (effects.go).
func (c *Ctx) Dirty(n int64) {
	if n <= 0 {
		return
	}
	c.changed = true
	if c.Srv != nil {
		c.Srv.AddDirty(n)
	}
}

// Emit journals an effect (store.Effect) for database db (-1: server-wide), in place of the
// command's own arguments: a handler that emits takes over its command's journaling (every
// effect of it must then be emitted). Callers check c.Store.Journal first so that nothing is
// built when no one consumes effects.
//
// The arguments are passed on as they are, valid for the call only (store.Journal), and
// gathered in the context's reusable slice, so that args itself never escapes: a journaled
// write allocates nothing.
func (c *Ctx) Emit(db int, args ...[]byte) {
	c.journaled = true
	j := c.journal()
	if j == nil {
		return
	}
	c.effArgs = append(c.effArgs[:0], args...)
	j.Append(store.Effect{DB: db, Args: c.effArgs})
	clear(c.effArgs)
}

// effInt formats n for an effect in the context's scratch space, valid until the next
// command: effects carry numbers as decimal text, and formatting them must not allocate.
func (c *Ctx) effInt(n int64) []byte {
	if len(c.effNum) > 4096 {
		c.effNum = c.effNum[:0] // a command that emits many numbers; earlier slices stay valid
	}
	start := len(c.effNum)
	c.effNum = appendInt(c.effNum, n)
	return c.effNum[start:len(c.effNum):len(c.effNum)]
}

// errOOM is Redis's shared.oomerr.
const errOOM = "OOM command not allowed when used memory > 'maxmemory'."

// admitMemory is Redis's maxmemory step of processCommand, run before every command while a
// limit is set: evict by the policy until used memory is under the limit, then refuse the
// command if that failed and the command would use memory: a denyoom command, an EXEC whose
// queue holds one (the transaction is discarded), or anything but EXEC, DISCARD, QUIT and
// RESET inside MULTI (queueing takes memory too; the transaction is flagged to abort). Reads
// still work over the limit. A context already holding shard locks (a nested call) cannot
// evict without breaking the lock order: it only checks.
func (c *Ctx) admitMemory(cmd *Command) bool {
	m := &c.Store.Mem
	var res store.EvictResult
	if c.Srv != nil && c.Srv.Table().PauseActive() {
		// Nothing is evicted while clients are paused (Redis's isSafeToPerformEvictions),
		// and so nothing is refused for memory either: the writes wait for the pause.
		return true
	} else if c.nlocked == 0 && !c.allLocked {
		res = c.Store.PerformEvictions(c.Now)
	} else if m.Used() > m.Limit() {
		res = store.EvictFail
	}
	isExec := cmd.Name == "exec" && cmd.parent == nil
	denyoom := cmd.Flags&FlagDenyOOM != 0
	if isExec && c.queuedAny(FlagDenyOOM) {
		denyoom = true
	}
	reject := denyoom
	if c.Client.multi.active && cmd.parent == nil {
		switch cmd.Name {
		case "exec", "discard", "quit", "reset":
		default:
			reject = true
		}
	} else if c.Client.multi.active {
		reject = true
	}
	if res == store.EvictFail && reject {
		c.reject(cmd, errOOM)
		return false
	}
	if denyoom && !isExec {
		n := 0
		for _, a := range c.Args {
			n += len(a)
		}
		m.Admitted(n)
	}
	return true
}

// queuedAny reports whether a command queued in the client's transaction has flag f: an EXEC
// is refused as what it would run.
func (c *Ctx) queuedAny(f Flag) bool {
	for _, q := range c.Client.multi.queue {
		if q.cmd.Flags&f != 0 {
			return true
		}
	}
	return false
}

// errLoading is Redis's reply to a command that may not run while the dataset loads.
const errLoading = "LOADING Redis is loading the dataset in memory"

// admitLoading refuses, while the table's Loading is set, what Redis refuses then
// (processCommand): every command not flagged loading, and an EXEC whose transaction queued
// one (commands sent during the load are refused at queue time already).
func (c *Ctx) admitLoading(cmd *Command) bool {
	ok := cmd.Flags&FlagLoading != 0
	if ok && cmd.Name == "exec" && cmd.parent == nil {
		for _, q := range c.Client.multi.queue {
			if q.cmd.Flags&FlagLoading == 0 {
				ok = false
				break
			}
		}
	}
	if !ok {
		c.reject(cmd, errLoading)
	}
	return ok
}

// admitDiskError refuses, while the table's DiskError is set (a failed background save with
// stop-writes-on-bgsave-error, or a failing append-only log), what Redis refuses then: write
// commands, an EXEC whose transaction writes, and PING from a client (processCommand); a
// script's write calls (scriptVerifyWriteCommandAllow).
func (c *Ctx) admitDiskError(cmd *Command, msg string) bool {
	isExec := cmd.Name == "exec" && cmd.parent == nil
	write := cmd.Flags&FlagWrite != 0 || (cmd.Name == "ping" && cmd.parent == nil && !c.inScript)
	if isExec && c.queuedAny(FlagWrite) {
		write = true
	}
	if !write {
		return true
	}
	c.reject(cmd, msg)
	return false
}

// gateExec asks the Gate again, at EXEC, about each queued keyspace command: the node may
// have lost leadership since they were queued, and a transaction that ran on a follower would
// change its store outside the log (its effects are dropped there), so that it would no longer
// match the other replicas. As Redis Cluster's getNodeByQuery for EXEC, the refusal is EXEC's
// reply (-MOVED, -CLUSTERDOWN) and the transaction is discarded. It reports whether EXEC may run.
func (t *Table) gateExec(c *Ctx, exec *Command) bool {
	args := c.Args
	defer func() { c.Args = args }()
	txSlot := -1
	for _, q := range c.Client.multi.queue {
		if q.cmd.Flags&(FlagWrite|FlagReadOnly|FlagMayReplicate) == 0 && !q.cmd.RunsScript {
			continue
		}
		c.Args = q.args // the redirect names the queued command's slot
		msg := t.Gate(c, q.cmd)
		if msg == "" && t.OneSlotTx {
			// Redis Cluster's getNodeByQuery for EXEC: every key of the transaction in one slot.
			if slot, _ := KeysSlot(q.cmd, q.args); slot >= 0 {
				if txSlot >= 0 && slot != txSlot {
					msg = "CROSSSLOT Keys in request don't hash to the same slot"
				}
				txSlot = slot
			}
		}
		if msg != "" {
			c.Args = args
			c.Client.setMulti(multiState{})
			c.Store.Watches.Unwatch(&c.Client.watch)
			c.Cmd = exec
			exec.RejectedCalls.Add(1)
			c.Error(msg)
			return false
		}
	}
	return true
}

package command

import (
	"sort"

	"github.com/hotkv/hotkv/internal/store"
)

// queued is a command held between MULTI and EXEC, its arguments copied out of the read
// buffer they arrived in.
type queued struct {
	cmd  *Command
	args [][]byte
}

// multiState is a client's open transaction.
type multiState struct {
	active bool
	// dirty is set by a queue-time error (unknown command, wrong arity): EXEC then aborts.
	dirty bool
	queue []queued
}

func transactionCommands() []*Command {
	return []*Command{
		{Name: "multi", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy,
			ACL: []string{"fast", "transaction"}, Group: "transactions", Since: "1.2.0", Complexity: "O(1)",
			Summary: "Mark the start of a transaction block", Handler: multiCommand},
		{Name: "exec", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagSkipSlowlog,
			ACL: []string{"slow", "transaction"}, Group: "transactions", Since: "1.2.0",
			Complexity: "Depends on commands in the transaction",
			Summary:    "Execute all commands issued after MULTI", Handler: execCommand,
			Doc: "All queued commands run under one time sample (spec: a MULTI/EXEC shares one `now`), " +
				"holding the locks of every key they name for the whole transaction, so no other client sees a partial result. " +
				"A transaction containing a command that walks the keyspace or changes database holds every lock instead. " +
				"The shards of WATCHed keys are held too, so the check that none changed and the commands are one atomic step."},
		{Name: "discard", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy,
			ACL: []string{"fast", "transaction"}, Group: "transactions", Since: "2.0.0",
			Complexity: "O(N), when N is the number of queued commands",
			Summary:    "Discard all commands issued after MULTI", Handler: discardCommand},
		{Name: "watch", Arity: -2, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy,
			ACL: []string{"fast", "transaction"}, FirstKey: 1, LastKey: -1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRO, Begin: 1, LastKey: -1, Step: 1}},
			Group:    "transactions", Since: "2.2.0", Complexity: "O(1) for every key.", Syntax: "key [key ...]",
			Summary: "Watch the given keys to determine execution of the MULTI/EXEC block", Handler: watchCommand,
			Doc: "A write to a watched key by any client (this one included), its expiry, or a FLUSHDB, FLUSHALL or SWAPDB " +
				"that changes it makes the next EXEC fail with a null reply, as in Redis 7.0, including its rules for keys " +
				"that were already expired when watched."},
		{Name: "unwatch", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagAllowBusy,
			ACL: []string{"fast", "transaction"}, Group: "transactions", Since: "2.2.0", Complexity: "O(1)",
			Summary: "Forget about all watched keys", Handler: unwatchCommand},
	}
}

func watchCommand(c *Ctx) {
	if c.Client.multi.active {
		c.Error("ERR WATCH inside MULTI is not allowed")
		return
	}
	// The dispatcher holds the keys' shards, so each key's expired state is read consistently.
	for _, k := range c.Args[1:] {
		c.Store.Watches.Watch(&c.Client.watch, c.DB, k, c.Now)
	}
	c.W.OK()
}

func unwatchCommand(c *Ctx) {
	c.Store.Watches.Unwatch(&c.Client.watch)
	c.W.OK()
}

// touchWritten tells WATCH and client-side caching (keyChanged) about the keys a write command changed: the key arguments its key
// specs declare as written (RW, OW or RM), in the selected database, as Redis's
// signalModifiedKey calls cover them. Handlers that change keys elsewhere say so themselves
// (touchIn) and set c.touched.
func (c *Ctx) touchWritten(cmd *Command) {
	for _, r := range cmd.KeyRefs(c.Args) {
		if r.Flags&(KSRW|KSOW|KSRM) != 0 && r.Pos < len(c.Args) {
			c.keyChanged(c.DB, c.Args[r.Pos])
		}
	}
}

// touchIn tells WATCH and client-side caching that key in db changed; the caller holds its shard. It leaves the
// dispatcher's own touching on, for the command's key arguments in the selected database.
func (c *Ctx) touchIn(db *store.DB, key []byte) {
	c.keyChanged(db, key)
}

// runsInMulti reports whether cmd executes immediately inside MULTI instead of being queued.
func runsInMulti(cmd *Command) bool {
	if cmd.parent != nil {
		return false
	}
	switch cmd.Name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

// enqueue holds the current command for EXEC.
func (c *Ctx) enqueue(cmd *Command) {
	args := make([][]byte, len(c.Args))
	size := 0
	for _, a := range c.Args {
		size += len(a)
	}
	buf := make([]byte, 0, size)
	for i, a := range c.Args {
		buf = append(buf, a...)
		args[i] = buf[len(buf)-len(a) : len(buf) : len(buf)]
	}
	c.Client.multi.queue = append(c.Client.multi.queue, queued{cmd: cmd, args: args})
	c.Client.multiN.Add(1)
	c.Client.multiMem.Add(int64(size + len(args)*8)) // Redis: argument bytes and a pointer each
	c.W.Simple("QUEUED")
}

func multiCommand(c *Ctx) {
	if c.Client.multi.active {
		c.Error("ERR MULTI calls can not be nested")
		return
	}
	c.Client.setMulti(multiState{active: true})
	c.W.OK()
}

func discardCommand(c *Ctx) {
	if !c.Client.multi.active {
		c.Error("ERR DISCARD without MULTI")
		return
	}
	c.Client.setMulti(multiState{})
	c.Store.Watches.Unwatch(&c.Client.watch)
	c.W.OK()
}

// needsAllLocks reports whether a queued command can only run with every shard held: it walks
// the keyspace itself, changes or spans databases, or finds its keys by a function.
func needsAllLocks(q queued) bool {
	if q.cmd.Global || q.cmd.GetKeys != nil {
		return true
	}
	switch q.cmd.Name {
	case "select", "swapdb", "move", "copy", "flushdb", "flushall":
		return true
	}
	return false
}

func execCommand(c *Ctx) {
	m := c.Client.multi
	if !m.active {
		c.Error("ERR EXEC without MULTI")
		return
	}
	c.Client.setMulti(multiState{})
	if m.dirty {
		c.Store.Watches.Unwatch(&c.Client.watch)
		c.Error("EXECABORT Transaction discarded because of previous errors.")
		return
	}
	all := false
	for _, q := range m.queue {
		if needsAllLocks(q) {
			all = true
			break
		}
	}
	if all {
		c.LockAll()
	} else {
		// The union of every queued key's shard and every watched key's shard (in its own
		// database), locked once, in global order.
		n := c.DB.NumShards()
		var shards []int
		for _, q := range m.queue {
			for _, i := range q.cmd.KeyIndexes(q.args) {
				shards = append(shards, c.DB.ID*n+c.Store.ShardIndex(q.args[i]))
			}
		}
		if c.Client.watch.Watching() {
			c.Store.Watches.Keys(&c.Client.watch, func(db int, key string) {
				shards = append(shards, db*n+c.Store.ShardIndex([]byte(key)))
			})
		}
		sort.Ints(shards)
		for {
			for i, s := range shards {
				if i == 0 || s != shards[i-1] {
					c.lockAt(s/n, s%n)
				}
			}
			if c.settle() {
				break
			}
		}
		c.allLocked = true // the handlers below must not lock again
	}
	if c.Client.watch.Watching() {
		// A watched key written since WATCH, or one that was live then and has expired by this
		// transaction's time, fails the EXEC (Redis's CLIENT_DIRTY_CAS and isWatchedKeyExpired).
		w := &c.Client.watch
		abort := w.Dirty() || c.Store.Watches.ExpiredSince(w, c.Store, c.Now)
		c.Store.Watches.Unwatch(w)
		if abort {
			c.UnlockAllGlobal()
			c.W.NullArray()
			return
		}
	}
	// More than one write may journal more than one effect: they go to the journal as one
	// MULTI ... EXEC block (effects.go), written before the locks are released.
	writes := 0
	for _, q := range m.queue {
		// may_replicate: reads that can journal a change (PFCOUNT caching its estimate).
		if q.cmd.Flags&(FlagWrite|FlagMayReplicate) != 0 {
			writes++
		}
		if q.cmd.Group == "scripting" && q.cmd.Global {
			writes += 2 // a script may write any number of times (EVAL, FCALL)
		}
	}
	if writes > 1 && c.Store.Journal != nil {
		c.tx = &txJournal{out: c.Store.Journal}
	}
	// Every command sees the EXEC's time sample, c.Now (spec §2.3).
	t := c.Srv.Table()
	c.W.Array(len(m.queue))
	execArgs := c.Args
	// The dispatcher's bookkeeping after this handler (MONITOR, the slow log) is EXEC's own.
	// The queued commands' errors are theirs: EXEC itself did not fail (INFO commandstats).
	defer func() { c.Args, c.Cmd, c.failed = execArgs, t.orig["exec"], false }()
	for _, q := range m.queue {
		c.Args = q.args
		c.hashedKey = nil
		if !c.aclExecCheck(q.cmd) {
			continue
		}
		t.run(c, q.cmd)
	}
	if c.tx != nil {
		c.tx.finish()
		c.tx = nil
	}
	if len(c.ready) > 0 {
		c.serveReady() // after the whole transaction, as Redis serves blocked clients
	}
	c.UnlockAllGlobal()
}

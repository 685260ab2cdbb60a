package command

import "errors"

// ErrSaveInProgress is what Server.Save and Server.BgSave return while a background save is
// being written; the handlers reply Redis's wording for it.
var ErrSaveInProgress = errors.New("Background save already in progress")

// errNotInMulti is Redis's reply to a no_multi command inside a transaction.
const errNotInMulti = "ERR Command not allowed inside a transaction"

// persistenceCommands are SAVE, BGSAVE and LASTSAVE, in Redis's "server" group. The snapshot
// work itself is internal/persist's, reached through Server (docs/persistence.md).
func persistenceCommands() []*Command {
	return []*Command{
		{Name: "save", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagNoAsyncLoading | FlagNoMulti, ACL: adminACL,
			Group: "server", Since: "1.0.0", Complexity: "O(N) where N is the total number of keys in all databases",
			Summary: "Synchronously save the dataset to disk",
			Doc: "Writes the snapshot (`dir`/`dbfilename`) with every shard locked, so the snapshot is exact and every client waits until it is on disk, as with Redis's SAVE. " +
				"The file is written as `<dbfilename>.tmp`, fsynced, renamed and the directory fsynced. Prefer BGSAVE on a busy server. " +
				"Replies `ERR Background save already in progress` while a BGSAVE runs and a bare `ERR` if writing fails (the log says why). " +
				"See [persistence](../persistence.md).",
			Global: true, Handler: saveCommand},
		{Name: "bgsave", Arity: -1, Flags: FlagAdmin | FlagNoScript | FlagNoAsyncLoading, ACL: adminACL,
			Group: "server", Since: "1.0.0", Complexity: "O(1)", Syntax: "[SCHEDULE]",
			Summary: "Asynchronously save the dataset to disk",
			Doc: "Starts writing the snapshot in the background and replies `Background saving started`; clients keep being served. " +
				"Go cannot fork, so the snapshot is taken shard by shard: each shard is copied under its own lock, one at a time. " +
				"A write confined to one shard is wholly in the snapshot or wholly out of it; a write spanning shards that runs while the walk is between them may be captured half-applied (see [persistence](../persistence.md)). " +
				"`SCHEDULE` is accepted; HotKV has no other background job a save could wait for, so it starts at once. " +
				"Inside MULTI/EXEC the reply is `Background saving scheduled` and the save starts once the transaction releases its locks. " +
				"Check completion with LASTSAVE or `INFO persistence` (`rdb_bgsave_in_progress`, `rdb_last_bgsave_status`).",
			Handler: bgsaveCommand},
		{Name: "bgrewriteaof", Arity: 1, Flags: FlagAdmin | FlagNoScript | FlagNoAsyncLoading, ACL: adminACL,
			Group: "server", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Asynchronously rewrite the append-only file",
			Doc: "Compacts the append-only log in the background while clients keep being served, as Redis 7's multi-part AOF: a new incr segment is opened and recorded in the manifest, a new base snapshot is written shard by shard, then the manifest is replaced atomically with the new base and segment and the old files are deleted. " +
				"Replies `Background append only file rewriting started`; `Background append only file rewriting scheduled` when a BGSAVE is running (the rewrite starts when it ends); `ERR Background append only file rewriting already in progress` while one runs. " +
				"A FLUSHALL, FLUSHDB or SWAPDB during the rewrite aborts it (`aof_last_bgrewrite_status:err`; the log stays valid). " +
				"Check progress with `INFO persistence` (`aof_rewrite_in_progress`, `aof_last_bgrewrite_status`, `aof_rewrites`). See [persistence](../persistence.md).",
			Handler: bgrewriteaofCommand},
		{Name: "lastsave", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"admin", "fast", "dangerous"},
			Tips: []string{"nondeterministic_output"}, Group: "server", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Get the UNIX time stamp of the last successful save to disk",
			Doc:     "The wall-clock Unix time in seconds of the last successful SAVE, BGSAVE or shutdown save; the server's start time before the first. `DEBUG CLOCK` does not move it.",
			Handler: func(c *Ctx) { c.W.Int(c.Srv.LastSave()) }},
	}
}

// saveCommand is SAVE: it takes every shard lock through the context, in the store's lock
// order, and writes the snapshot while holding them.
func saveCommand(c *Ctx) {
	if c.allLocked {
		// The dispatcher refuses SAVE when it is queued (no_multi); this guards any other
		// path that runs handlers with every lock held, where LockAll would deadlock.
		c.Error(errNotInMulti)
		return
	}
	c.LockAll()
	err := c.Srv.Save()
	c.UnlockAllGlobal()
	switch {
	case errors.Is(err, ErrSaveInProgress):
		c.Error("ERR " + err.Error())
	case err != nil:
		c.Error("-ERR") // Redis's shared.err, a bare "-ERR": the reason is in the log
	default:
		c.W.OK()
	}
}

func bgsaveCommand(c *Ctx) {
	schedule := false
	if len(c.Args) > 1 {
		if len(c.Args) != 2 || !c.ArgIs(1, "schedule") {
			c.Syntax()
			return
		}
		schedule = true
	}
	// Inside EXEC (c.allLocked) the save goroutine waits for the transaction's locks, so
	// Redis's "scheduled" is the truthful reply there.
	inExec := c.allLocked
	err := c.Srv.BgSave(schedule)
	switch {
	case errors.Is(err, ErrSaveInProgress):
		c.Error("ERR " + err.Error())
	case err != nil:
		c.Error("-ERR")
	case inExec:
		c.W.Simple("Background saving scheduled")
	default:
		c.W.Simple("Background saving started")
	}
}

func bgrewriteaofCommand(c *Ctx) {
	scheduled, err := c.Srv.BgRewriteAOF()
	switch {
	case err != nil:
		c.Error("ERR " + err.Error())
	case scheduled || c.allLocked:
		c.W.Simple("Background append only file rewriting scheduled")
	default:
		c.W.Simple("Background append only file rewriting started")
	}
}

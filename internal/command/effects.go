package command

import (
	"github.com/hotkv/hotkv/internal/store"
)

// Effects: what every write journals (ARCHITECTURE.md §3, spec/RATELIMIT.md §10).
//
// An effect is an ordinary HotKV command line, deterministic and time-free: replaying the
// effects in order, on any server at any time, rebuilds the same dataset. Times inside are
// absolute. A write that changed nothing (no Dirty) journals nothing, and so do reads, SELECT,
// failed writes, DISCARD and an aborted EXEC.
//
// By default the dispatcher (Table.run) journals a write command's own arguments, in the
// database it ran in, after its handler called Dirty with n > 0. That is right for every command
// whose result depends only on its arguments and the prior state, which log replay
// reproduces. Handlers whose arguments are relative to the clock or otherwise
// nondeterministic emit a rewritten effect themselves (Ctx.Emit), which replaces the default.
//
// Decisions, per write command (COMMAND's write flag):
//
//	APPEND, SETRANGE, SETBIT, BITOP, BITFIELD  argv (BITFIELD: any OVERFLOW, partial FAIL included)
//	INCR, DECR, INCRBY, DECRBY                 argv (deterministic given the prior value)
//	MSET, GETSET                               argv
//	DEL, UNLINK                                argv (keys already gone are no-ops on replay)
//	RENAME, RENAMENX                           argv (RENAMENX only when it renamed)
//	COPY, MOVE                                 argv (DB and REPLACE options kept)
//	PERSIST                                    argv
//	FLUSHDB, FLUSHALL                          argv (FLUSHDB of an empty DB journals nothing;
//	                                           FLUSHALL always, and it drops limiters on replay)
//	SWAPDB a b                                 argv; SWAPDB a a journals nothing
//	HSET, HMSET, HDEL, HINCRBY                 argv (deterministic; an HDEL that empties the
//	                                           hash deletes it on replay too)
//	HSETNX                                     HSET key field value (when it set)
//	SADD, SREM, SMOVE, SINTERSTORE,            argv (deterministic given the sets; a result that
//	SUNIONSTORE, SDIFFSTORE                    is empty deletes the destination on replay too)
//	SPOP                                       SREM key member... of the members it popped, or
//	                                           DEL key when it popped the whole set
//	LPUSH, RPUSH, LPUSHX, RPUSHX, LPOP, RPOP,  argv (deterministic given the list; a pop that
//	LSET, LINSERT, LREM, LTRIM, LMOVE,         empties it deletes it on replay too)
//	RPOPLPUSH
//	FUNCTION LOAD                              FUNCTION LOAD REPLACE code, server-wide (DB -1):
//	                                           replaying it over a snapshot (an append-only log's
//	                                           base) that holds the library loads it again
//	FUNCTION DELETE, FUNCTION FLUSH            argv, server-wide (DB -1)
//	FUNCTION RESTORE                           FUNCTION FLUSH (FLUSH policy), then FUNCTION LOAD
//	                                           REPLACE code of each restored library, server-wide
//	EVAL, EVALSHA, FCALL (and _RO)             never themselves: each write inside journals its
//	                                           own effect, and a script's effects go out as one
//	                                           MULTI ... EXEC block (scripting.go); after
//	                                           redis.set_repl(redis.REPL_NONE) nothing is
//	                                           journaled until it is turned back on
//	LMPOP                                      LPOP or RPOP key count, of the key it popped
//	BLPOP, BRPOP, BLMPOP                       LPOP or RPOP key [count] of what it popped, at
//	                                           once or, for a blocked client, right after the
//	                                           push that served it (blocking.go)
//	BLMOVE, BRPOPLPUSH                         LMOVE src dst where where, when it moved
//	BZPOPMIN, BZPOPMAX, BZMPOP                 ZREM key member... of what it popped, at once or
//	                                           right after the write that served it
//	ZADD (without INCR), ZREM, ZREMRANGEBYRANK,  argv (deterministic given the sorted sets; a
//	ZREMRANGEBYSCORE, ZREMRANGEBYLEX,          removal that empties the set, or an empty
//	ZRANGESTORE, ZUNIONSTORE, ZINTERSTORE,     result, deletes the key on replay too)
//	ZDIFFSTORE
//	ZINCRBY, ZADD INCR                         ZADD key score member, with the resulting score
//	                                           in the shortest form that parses back to it
//	ZPOPMIN, ZPOPMAX, ZMPOP                    ZREM key member... of the members it popped
//	GEOADD                                     ZADD key [NX|XX] [CH] score member ... with the
//	                                           computed geohash scores, as Redis propagates it
//	                                           (geo.go): replay needs no geo math
//	GEORADIUS, GEORADIUSBYMEMBER (STORE or     DEL dst, ZADD dst score member ... as one
//	STOREDIST), GEOSEARCHSTORE                 MULTI/EXEC block: the result, whose distances
//	                                           come from floating-point trigonometry a replaying
//	                                           server need not repeat bit for bit; DEL dst alone
//	                                           for an empty result when dst existed. Without
//	                                           STORE they are reads and journal nothing
//	RESTORE                                    RESTORE key abs-ms payload REPLACE [ABSTTL]
//	                                           (IDLETIME/FREQ dropped), or DEL key when the TTL
//	                                           had passed and REPLACE deleted the old key
//	MIGRATE                                    DEL key for each key the target accepted
//	                                           (nothing with COPY); the target's side is its own
//	SORT ... STORE                             DEL dst, RPUSH dst elements... as one MULTI/EXEC
//	                                           block (ALPHA ties follow iteration order, which a
//	                                           replay need not share); DEL dst when the result
//	                                           is empty and dst existed
//	PFADD, PFMERGE                             argv when the HLL was dense (and, for PFMERGE, when
//	                                           an input is dense): dense registers only rise, on
//	                                           any server. A sparse HLL's bytes also depend on
//	                                           hll-sparse-max-bytes, which a replaying server may
//	                                           not share: SET key value [KEEPTTL] of the result
//	PFCOUNT (one key, a read)                  SETRANGE key 8 <cache bytes> when it (re)cached its
//	                                           estimate in the value's header; Redis propagates
//	                                           PFCOUNT itself for that change
//	PFDEBUG GETREG, TODENSE                    PFDEBUG TODENSE key when it turned the HLL dense
//	SET                                        SET key value [PXAT abs-ms | KEEPTTL]: NX/XX/GET
//	                                           dropped (the effective write), EX/PX/EXAT made PXAT.
//	                                           A time already past creates an expired key: it
//	                                           journals DEL key if the key existed, else nothing
//	SETNX                                      SET key value (when it set)
//	MSETNX                                     MSET key value ... (when it set)
//	SETEX, PSETEX                              SET key value PXAT abs-ms
//	GETEX                                      EX/PX/EXAT/PXAT: PEXPIREAT key abs-ms, or DEL key
//	                                           when EXAT/PXAT is past; PERSIST: PERSIST key
//	GETDEL                                     DEL key
//	EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT       PEXPIREAT key abs-ms (NX/XX/GT/LT dropped), or
//	                                           DEL key when the time is not in the future
//	INCRBYFLOAT                                SET key new-value KEEPTTL
//	HINCRBYFLOAT                               HSET key field new-value, then HPEXPIREAT key ms
//	                                           FIELDS 1 field when the field has a TTL (HSET
//	                                           would clear it; HINCRBYFLOAT keeps it)
//	HEXPIRE, HPEXPIRE, HEXPIREAT, HPEXPIREAT   HPEXPIREAT key abs-ms FIELDS n field... of the
//	                                           fields whose TTL it set (conditions dropped), or
//	                                           HDEL key field... of those a time not in the
//	                                           future deleted
//	HPERSIST                                   argv
//	GCRA.LIMIT, CL.THROTTLE                    SET key TAT PXAT ceil_ms(TAT) when allowed
//	                                           (ratelimit.go: storeTAT); denials nothing
//	GCRA.LIMITALL                              when admitted, SET key TAT PXAT ceil_ms(TAT) per
//	                                           distinct key (its final TAT), as one MULTI/EXEC
//	                                           block when there are several; denials nothing
//	GCRA.REFUND                                SET key TAT PXAT ceil_ms(TAT) when the TAT moved
//	                                           back but stays in the future, DEL key when the
//	                                           key became full; nothing for an absent or full key
//	GCRA.RESET                                 DEL of the keys it deleted
//	RATELIMIT.CREATE, DROP, SETSTATE           argv, server-wide (DB -1)
//	RATELIMIT.UPDATE                           RATELIMIT.UPDATE name LIMIT n WINDOW ms [REFILL|DRAIN
//	                                           rate] SHADOW ON|OFF AT <ms>: the complete new
//	                                           definition and the instant the state was converted
//	                                           at (the bucket conversion depends on the time, so
//	                                           replay uses AT, never its clock); journaled with
//	                                           every shard lock of the limiter held
//	RATELIMIT.RESET                            RATELIMIT.RESET name key when it removed live state,
//	                                           journaled under the key's lock (store.Limiter.Reset)
//	RATELIMIT.CHECK                            RATELIMIT.SETSTATE with the key's complete state
//	                                           and the totals (store.Limiter.Check); denials nothing
//	                                           themselves: the server journals RATELIMIT.SETSTATE
//	                                           name TOTALS allowed denied [shadow_denied] for
//	                                           limiters with new denials every 100 ms
//	                                           (server.flushDeniedTotals); shadow_denied, in
//	                                           these and in key effects, only once above 0
//	                                           (on a concurrency limiter the state is LEASES n
//	                                           id ts units ...: the key's remaining leases)
//	RATELIMIT.RELEASE                          RATELIMIT.SETSTATE name key LEASES n ... TOTALS
//	                                           when it released a lease (store.Limiter.Release,
//	                                           under the key's lock; LEASES 0 deletes the
//	                                           state); nothing when it released nothing
//	XDEL, XACK, XSETID, XGROUP DESTROY,        argv (deterministic given the stream)
//	XGROUP CREATECONSUMER, XGROUP DELCONSUMER
//	XADD                                       XADD key [MAXLEN = <length left>] <id> field value...:
//	                                           the ID it generated; the trimming clause only when
//	                                           it trimmed, as the exact length left (stream.go)
//	XTRIM                                      argv when exact; with ~, XTRIM key MAXLEN = <length>
//	XGROUP CREATE, XGROUP SETID                argv, with $ replaced by the ID it stood for
//	XREADGROUP, XCLAIM, XAUTOCLAIM             what they changed, as Redis propagates it: XGROUP
//	                                           CREATECONSUMER for a consumer they created, XCLAIM
//	                                           key group consumer 0 id TIME ms RETRYCOUNT n FORCE
//	                                           JUSTID LASTID id per pending entry created, moved,
//	                                           redelivered or dropped, and XGROUP SETID key group
//	                                           id ENTRIESREAD n when the group's last ID moved;
//	                                           a blocked XREADGROUP's right after the XADD that
//	                                           served it (stream_read.go)
//
// Expiry: a key deleted because it expired, lazily on access or by the active cycle, is
// journaled as DEL key in its database (JournalExpiries): the primary decides. A hash field
// that expired is journaled as HDEL key field the same way. The effects
// rely on it: whoever replays them should not expire keys by its own clock meanwhile (Redis
// does not while loading its AOF, and its replicas wait for the primary's DEL), or should run
// at the primary's time (the Raft batches carry it), since a key the primary still saw live
// could otherwise vanish before a later effect on it is applied.
//
// Eviction: a key deleted to get under maxmemory is journaled as DEL key too (JournalExpiries
// hooks Store.OnEvict), before the command that made room, as Redis propagates evictions: which
// keys go depends on sampling and on the heap, so replay must not decide it again.
//
// MULTI/EXEC: the effects of an EXEC's commands are journaled as MULTI, the effects, EXEC
// (database of the first effect) when there are more than one, so replay applies them
// atomically; see txJournal.
//
// effects_test.go lists every write command under one of these two ways and fails when a new
// write command is not listed: decide, and add it here too.

// Effect command names, as journaled.
var (
	effSet       = []byte("SET")
	effMSet      = []byte("MSET")
	effDel       = []byte("DEL")
	effRPush     = []byte("RPUSH")
	effPXAT      = []byte("PXAT")
	effKeepTTL   = []byte("KEEPTTL")
	effPExpireAt = []byte("PEXPIREAT")
	effPersist   = []byte("PERSIST")
)

// journal is where the current command's effects go: the EXEC's block while one runs,
// otherwise the store's journal; nil when nothing consumes effects. Every effect appended
// through it is stamped with the command time, c.Now (store.Effect.Time), including those the
// store journals itself (store.Limiter.Check and Reset).
func (c *Ctx) journal() store.Journal {
	if c.tx == nil && c.Store.Journal == nil {
		return nil
	}
	return (*stamper)(c) // a pointer conversion: no allocation
}

// stamper is the Ctx seen as the journal of its command: it stamps effects with c.Now.
type stamper Ctx

// Append implements store.Journal.
func (s *stamper) Append(e store.Effect) {
	c := (*Ctx)(s)
	if e.Time == 0 {
		e.Time = c.Now
	}
	// In replicated mode the client's replies now wait for this effect's commit (a decision
	// command's gate left it unset, for a denial).
	c.Client.Gated = true
	if c.tx != nil {
		c.tx.Append(e)
		return
	}
	c.Store.Journal.Append(e)
}

// skipEffect tells the dispatcher that the command's change has no effect to journal: it
// changed nothing that replay must repeat, although Redis counts it as dirty (SWAPDB a a).
func (c *Ctx) skipEffect() { c.journaled = true }

// The emit helpers journal a rewritten effect in the selected database; without a journal they
// build nothing (and the dispatcher journals nothing either).

// emitDel journals DEL key.
func (c *Ctx) emitDel(key []byte) {
	if c.Store.Journal != nil {
		c.Emit(c.DB.ID, effDel, key)
	}
}

// emitExpireAt journals PEXPIREAT key at.
func (c *Ctx) emitExpireAt(key []byte, at int64) {
	if c.Store.Journal != nil {
		c.Emit(c.DB.ID, effPExpireAt, key, c.effInt(at))
	}
}

// emitSet journals the effective write of a SET-like command: SET key value, with PXAT at
// when at != 0, or KEEPTTL.
func (c *Ctx) emitSet(key, value []byte, at int64, keepTTL bool) {
	switch {
	case c.Store.Journal == nil:
	case at != 0:
		c.Emit(c.DB.ID, effSet, key, value, effPXAT, c.effInt(at))
	case keepTTL:
		c.Emit(c.DB.ID, effSet, key, value, effKeepTTL)
	default:
		c.Emit(c.DB.ID, effSet, key, value)
	}
}

// txJournal gathers the effects of one EXEC so that replay applies them atomically: more than
// one effect is journaled as MULTI, the effects, EXEC; a single one as it is; none, nothing.
//
// Holding effects back until the EXEC ends is safe for the keyspace: the EXEC holds the locks
// of every key it touches until then, so no other write on those keys can be journaled in
// between (the Journal contract). Named limiters are not guarded by those locks (their
// commands take only the limiter's own), and FLUSHALL drops them: holding back such an effect
// could journal it after a later write of another client to the same limiter. The first such
// effect therefore opens the block at once (MULTI and everything held so far), and from then
// on effects go straight through. Commands of an EXEC that touch limiters or run FLUSHALL make
// it hold every shard lock, so the only effects of other clients that can land inside the
// block are limiter effects, which are applied in the order they happened either way.
//
// An EXEC that queued at most one write gets no txJournal: its effect needs no wrapper.
type txJournal struct {
	out     store.Journal
	pending []store.Effect
	open    bool
	db      int
	// time is the EXEC's command time once the block is open, for its MULTI and EXEC.
	time int64
	// mute drops effects while a script has turned replication off (redis.set_repl).
	mute bool
}

// unguarded reports whether e changes state that the EXEC's shard locks do not protect.
func unguarded(e store.Effect) bool {
	return e.DB < 0 || (len(e.Args) > 0 && EqualFold(e.Args[0], "flushall"))
}

// Append implements store.Journal.
func (t *txJournal) Append(e store.Effect) {
	if t.mute {
		return
	}
	switch {
	case t.open:
		t.out.Append(e)
	case !unguarded(e):
		t.pending = append(t.pending, store.CloneEffect(e)) // held past the call
	default:
		t.db, t.time = e.DB, e.Time
		if len(t.pending) > 0 {
			t.db = t.pending[0].DB
		}
		t.open = true
		t.out.Append(store.Effect{DB: t.db, Args: [][]byte{[]byte("MULTI")}, Time: t.time})
		for _, p := range t.pending {
			t.out.Append(p)
		}
		t.pending = nil
		t.out.Append(e)
	}
}

// finish journals what the EXEC held back, closing the block. The EXEC still holds its locks.
func (t *txJournal) finish() {
	switch {
	case t.open:
		t.out.Append(store.Effect{DB: t.db, Args: [][]byte{[]byte("EXEC")}, Time: t.time})
	case len(t.pending) == 1:
		t.out.Append(t.pending[0])
	case len(t.pending) > 1:
		db, at := t.pending[0].DB, t.pending[0].Time
		t.out.Append(store.Effect{DB: db, Args: [][]byte{[]byte("MULTI")}, Time: at})
		for _, p := range t.pending {
			t.out.Append(p)
		}
		t.out.Append(store.Effect{DB: db, Args: [][]byte{[]byte("EXEC")}, Time: at})
	}
	t.pending = nil
}

// JournalExpiries makes the store journal DEL key, in the key's database, for every key it
// deletes because the key expired (lazily on access or in the active cycle) or was evicted
// (maxmemory), whenever a journal is installed. The DEL is stamped with the store clock's
// current time: the hook is not told the command time, and a replayed DEL touches only its
// key, so any time serves, and the clock's is never behind the time floor. The server calls it once, right after creating the
// store; a hook already in Store.OnExpire keeps being called first.
func JournalExpiries(st *store.Store) {
	prev := st.OnExpire
	st.OnExpire = func(db int, key string) {
		if prev != nil {
			prev(db, key)
		}
		if j := st.Journal; j != nil {
			buf := make([]byte, 0, len(effDel)+len(key))
			buf = append(append(buf, effDel...), key...)
			var now int64
			if st.Clock != nil {
				now = st.Clock.NowMs()
			}
			j.Append(store.Effect{DB: db, Args: [][]byte{buf[:len(effDel):len(effDel)], buf[len(effDel):]}, Time: now})
		}
	}
	// Keys evicted to free memory (maxmemory) are journaled the same way, as DEL key, as
	// Redis propagates evictions: a replica or a replayed log must lose them too.
	prevEvict := st.OnEvict
	st.OnEvict = func(db int, key string) {
		if prevEvict != nil {
			prevEvict(db, key)
		}
		if j := st.Journal; j != nil {
			var now int64
			if st.Clock != nil {
				now = st.Clock.NowMs()
			}
			j.Append(store.Effect{DB: db, Args: [][]byte{effDel, []byte(key)}, Time: now})
		}
	}
	// Hash fields that expired (lazily or actively) go the same way, as HDEL key field; the
	// HDEL of a hash's last field deletes it on replay too.
	prevField := st.OnFieldExpire
	st.OnFieldExpire = func(db int, key, field string) {
		if prevField != nil {
			prevField(db, key, field)
		}
		if j := st.Journal; j != nil {
			var now int64
			if st.Clock != nil {
				now = st.Clock.NowMs()
			}
			j.Append(store.Effect{DB: db, Args: [][]byte{effHDel, []byte(key), []byte(field)}, Time: now})
		}
	}
}

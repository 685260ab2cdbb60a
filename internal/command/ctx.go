package command

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/acl"
	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/pubsub"
	"github.com/hotkv/hotkv/internal/ratelimit"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// Shared error replies, worded exactly as Redis 7 words them (src/server.c createSharedObjects).
const (
	ErrWrongType   = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrNotInt      = "ERR value is not an integer or out of range"
	ErrNotFloat    = "ERR value is not a valid float"
	ErrSyntax      = "ERR syntax error"
	ErrNoSuchKey   = "ERR no such key"
	ErrOverflow    = "ERR increment or decrement would overflow"
	ErrDBRange     = "ERR DB index is out of range"
	ErrSameObject  = "ERR source and destination objects are the same"
	ErrInvalidExp  = "ERR invalid expire time in '%s' command"
	ErrBitOffset   = "ERR bit offset is not an integer or out of range"
	ErrBitValue    = "ERR bit is not an integer or out of range"
	ErrStringLimit = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
)

// Client is the per-connection state that commands read and change (SELECT, HELLO, CLIENT
// SETNAME ...). The server owns the connection and embeds this.
type Client struct {
	// Importing is set on the connection a sharded cluster's slot move streams on (CLUSTERX
	// IMPORTING): its commands may write slots of that migration before this shard owns them,
	// as long as Session is the migration's latest import here.
	Importing struct {
		Mig        uint64
		Start, End int
		Session    uint64
	}
	// Gated is set when the table's Gate let a keyspace command of this client run
	// (replicated mode): its replies then depend on the commit of what it wrote.
	Gated     bool
	ID        int64
	DB        int
	Name      string
	LibName   string
	LibVer    string
	Addr      string
	LAddr     string
	FD        int
	CreatedAt time.Time
	// LastInteraction is the time of the last command, for CLIENT LIST idle.
	LastInteraction atomic.Int64
	LastCmd         atomic.Pointer[Command]
	// Authenticated is false only while a password is required and not given yet.
	Authenticated bool
	// User is the name of the user the client is authenticated as (CLIENT LIST user=).
	User string
	// ACLUser is that user; nil for the server's own clients (AOF loading), which may run
	// anything, as Redis's clients without a user.
	ACLUser *acl.User
	// LogApplier marks the server's own client that applies a log (the append-only log at
	// load, Raft entries on a replica): it never waits for Table.World.
	LogApplier bool
	// OriginalNames makes commands resolve by the names the table had before rename-command
	// too (Redis's lookupCommandOrOriginal): logs hold effects by those names, and the
	// server's internal clients (the log applier, the rate limit service) send them.
	OriginalNames bool
	// PubSubState, when set by the Pub/Sub code, lists the client's subscriptions (channels,
	// shard channels and patterns), so that ACL SETUSER can disconnect subscribers whose
	// channels a user lost (Redis's ACLKillPubsubClientsIfNeeded).
	PubSubState func() (channels, shardChannels, patterns []string)
	NoEvict     bool
	NoTouch     bool
	// ReadOnly is READONLY's mode: in Raft mode a follower runs this client's read commands
	// against its own state instead of redirecting them to the leader.
	ReadOnly bool
	// Flags for CLIENT LIST ("N" normal, "U" a Unix-socket client).
	Flags string

	// Kill closes the connection from another goroutine (CLIENT KILL).
	Kill func()

	// CloseAfterReply is set by QUIT: the connection flushes and closes.
	CloseAfterReply bool
	// Writer is the connection's reply writer; HELLO switches its protocol.
	Writer *resp.Writer

	multi multiState
	// watch is the client's WATCHed keys (store.Watches holds the registry).
	watch store.Watcher

	// Sub is the connection's side of pub/sub and client-side caching (internal/pubsub): its
	// subscriptions, tracking state and push queue. Nil for internal clients (the AOF loader).
	Sub *pubsub.Sub
	// pubsubMode mirrors Sub.Subscribed() for the dispatcher's RESP2 rule.
	pubsubMode bool
	// CLIENT REPLY: replyOff drops every reply, replySkip this command's, replySkipNext the
	// next command's.
	replyOff, replySkip, replySkipNext bool
	// Tracking settings mirrored for the read path (the table holds the truth), and caching,
	// set by CLIENT CACHING for the next command (or transaction).
	tracking, trackBCast, trackOptIn, trackOptOut, caching bool
	// blockMu guards blocked and the hand-over of CLIENT UNBLOCK through unblocked.
	blockMu   sync.Mutex
	blocked   bool
	unblocked chan bool // buffered 1: true for ERROR, false for TIMEOUT

	// monitor is set by MONITOR (CLIENT LIST flag O); monitorTable is the table whose
	// monitor list holds the client, for Release.
	monitor      atomic.Bool
	monitorTable *Table
	// Conn is what the connection publishes about its buffers for CLIENT LIST; the
	// connection's goroutine writes it, others read it.
	Conn ConnStats
	// multiN is the number of queued commands plus one while in MULTI (0 outside), and
	// multiMem their argument bytes, for CLIENT LIST from other connections.
	multiN, multiMem atomic.Int64
}

// Local reports whether the client came over a Unix socket or from a loopback address: Redis's
// islocalClient, which the "local" value of enable-debug-command and enable-protected-configs
// trusts.
func (c *Client) Local() bool {
	if c.Flags == "U" {
		return true
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ConnStats are a connection's buffer sizes for CLIENT LIST (qbuf, qbuf-free, rbs),
// published with atomic stores by the connection's goroutine at the points it changes them.
type ConnStats struct {
	// QueryBuf is the bytes held in the query buffer, QueryBufCap its capacity (0 once an
	// idle client's buffer was released).
	QueryBuf, QueryBufCap atomic.Int64
	// ReplyBufCap is the capacity of the reply buffer.
	ReplyBufCap atomic.Int64
}

// BeginBlocked marks the client as waiting in a blocking command and returns the channel on
// which CLIENT UNBLOCK reaches it (true: reply with the UNBLOCKED error). EndBlocked ends the
// wait and drops an unblock that arrived too late to matter.
func (cl *Client) BeginBlocked() <-chan bool {
	cl.blockMu.Lock()
	defer cl.blockMu.Unlock()
	if cl.unblocked == nil {
		cl.unblocked = make(chan bool, 1)
	}
	cl.blocked = true
	return cl.unblocked
}

// EndBlocked: see BeginBlocked.
func (cl *Client) EndBlocked() {
	cl.blockMu.Lock()
	defer cl.blockMu.Unlock()
	cl.blocked = false
	select {
	case <-cl.unblocked:
	default:
	}
}

// unblock hands CLIENT UNBLOCK to the client if it is waiting in a blocking command.
func (cl *Client) unblock(withError bool) bool {
	cl.blockMu.Lock()
	defer cl.blockMu.Unlock()
	if !cl.blocked {
		return false
	}
	select {
	case cl.unblocked <- withError:
		return true
	default:
		return false // already unblocked, not yet returned
	}
}

// Release drops what the client holds in shared state when its connection closes: its
// WATCHed keys, subscriptions and tracking.
func (cl *Client) Release(st *store.Store) {
	if cl.monitorTable != nil {
		cl.monitorTable.removeMonitor(cl)
	}
	st.Watches.Unwatch(&cl.watch)
	if cl.Sub != nil {
		cl.Sub.Close()
	}
}

// setMulti replaces the client's transaction state and publishes its size for CLIENT LIST.
func (cl *Client) setMulti(m multiState) {
	cl.multi = m
	if m.active {
		cl.multiN.Store(1)
	} else {
		cl.multiN.Store(0)
	}
	cl.multiMem.Store(0)
}

// PubSubMode reports whether the client is subscribed to anything (CLIENT LIST flag P, the
// pubsub client type).
func (cl *Client) PubSubMode() bool { return cl.Sub != nil && cl.Sub.Subscribed() }

// InMulti reports whether the client has an open MULTI, for CLIENT LIST and the server.
func (cl *Client) InMulti() (bool, int) {
	return cl.multi.active, len(cl.multi.queue)
}

// Server is what handlers may ask of the server around them. It is an interface so that
// internal/command does not import internal/server (ARCHITECTURE.md §8).
type Server interface {
	// Clock is the server clock that DEBUG CLOCK steers.
	Clock() *clock.Debuggable
	// Info renders INFO for the requested sections (none: the default set). held says the
	// caller holds every shard lock already (inside EXEC).
	Info(sections []string, held bool) string
	// ConfigGet returns name/value pairs of directives matching any pattern.
	ConfigGet(patterns []string) [][2]string
	// ConfigSet applies name/value pairs atomically; the error is the reply text.
	ConfigSet(pairs [][2]string) error
	// ConfigRewrite is CONFIG REWRITE: it writes the running configuration over the config
	// file the server was started with; the error is the reply text. forceAll writes every
	// directive, defaults included (DEBUG CONFIG-REWRITE-FORCE-ALL).
	ConfigRewrite(forceAll bool) error
	// ResetStats is CONFIG RESETSTAT; held is as for Info.
	ResetStats(held bool)
	// Clients lists connected clients.
	Clients() []*Client
	// KillClients closes every client for which match returns true and reports how many.
	KillClients(match func(*Client) bool) int
	// Shutdown stops the server after saving as mode says (ShutdownNoSave, ShutdownDefault:
	// save if save points are configured, ShutdownSave). A failed save is returned and the
	// server keeps running, unless force.
	Shutdown(mode int, force bool) error
	// Save writes a snapshot synchronously (SAVE); the caller holds every shard lock. It
	// returns ErrSaveInProgress while a background save runs.
	Save() error
	// BgSave starts a background snapshot (BGSAVE [SCHEDULE]) and returns at once; it returns
	// ErrSaveInProgress while one runs.
	BgSave(schedule bool) error
	// BgRewriteAOF starts compacting the append-only log in the background (BGREWRITEAOF); it
	// reports scheduled when a background save must end first.
	BgRewriteAOF() (scheduled bool, err error)
	// DebugAllowed reports whether DEBUG may run for this client.
	DebugAllowed(c *Client) bool
	// ErrorStat counts an error reply by its code, for INFO errorstats.
	ErrorStat(code string)
	// LastSave is the Unix time of the last successful save (LASTSAVE).
	LastSave() int64
	// ProtoMaxBulkLen is the current proto-max-bulk-len, bounding string growth.
	ProtoMaxBulkLen() int64
	// Table is the command table, for COMMAND.
	Table() *Table
	// Version is the server version string.
	Version() string
	// RunID identifies this process, for INFO and HELLO.
	RunID() string
	// Dirty counts writes since the last save.
	AddDirty(n int64)
	// ACL is the user registry (AUTH, HELLO AUTH, ACL, the dispatcher's checks).
	ACL() *acl.Registry
	// ACLFile is the aclfile setting, "" when ACL SAVE and LOAD have no file.
	ACLFile() string
	// RateLimitSettings are the rate-limit directives (spec §9).
	RateLimitSettings() RateLimitSettings
}

// RateLimitSettings are the config directives the rate-limit commands read on every call.
type RateLimitSettings struct {
	Compat                  ratelimit.Compat
	MaxLimiters             int64
	SlidingWindowMaxEntries int64
}

// Ctx carries one command through its handler: the arguments, the reply writer, the client,
// the selected database and the command time, frozen for the whole command (and for a whole
// MULTI/EXEC or script).
type Ctx struct {
	Args   [][]byte
	W      *resp.Writer
	Client *Client
	Srv    Server
	Store  *store.Store
	DB     *store.DB
	// Now is the command time in Unix ms (spec §2.3).
	Now int64
	Cmd *Command
	// ClockChanged is set by DEBUG CLOCK so the connection re-reads the time before the
	// next command of the same batch.
	ClockChanged bool

	failed bool
	// changed is set by Dirty and journaled by Emit (or skipEffect), each reset per command:
	// the dispatcher journals a write's own arguments when it changed something and its
	// handler journaled nothing itself (effects.go).
	changed, journaled bool
	// touched is set by a handler that told WATCH about the keys it changed itself (keys in
	// another database, FLUSH, SWAPDB), so the dispatcher does not touch its key arguments.
	touched bool
	// nanoMark is the clock reading that ended the previous command of the batch (0 at the
	// start of a batch: BeginBatch).
	nanoMark int64
	// lastLookup is the command the previous name resolved to, tried first.
	lastLookup *Command
	// Blocked is set by a blocking command that found nothing to pop: the connection waits
	// for it (BlockTimeoutMs, 0 for ever) and clears it. See blocking.go.
	Blocked        *store.Waiter
	BlockTimeoutMs int64
	// Paused is set when CLIENT PAUSE holds the command, which did not run and wrote no
	// reply: the connection waits for the pause to lift (Table.PauseWait), clears it and runs
	// the command again.
	Paused bool
	// Resume is set by the connection while it runs a woken blocked XREAD or XREADGROUP again
	// (BlockedPop.Retry): the command then looks at what it blocked for, not its arguments.
	Resume *BlockedPop
	// ready lists the keys this command gave elements that blocked clients may be waiting for.
	ready []readyKey
	// effArgs and effNum are Emit's scratch space, reused by every command of the connection.
	effArgs [][]byte
	effNum  []byte
	// tx collects the effects of an EXEC's commands so that they are journaled as one
	// MULTI ... EXEC block; nil outside EXEC or when no journal is installed.
	tx *txJournal
	// keyHash is the hash of hashedKey (the single key the dispatcher locked for), reused by
	// the handler's lookup of that key.
	keyHash   uint64
	hashedKey []byte
	// locked records the shards the dispatcher locked, released after the handler.
	locked    [8]*store.Shard
	nlocked   int
	moreLocks []*store.Shard
	// lockLo, lockHi and lockN describe the shards locked through lockAt since the last
	// UnlockAll, in global lock order, for the snapshot straddle check (settle).
	lockLo, lockHi, lockN int
	// allLocked is set when every shard is already held (MULTI/EXEC with a global command);
	// self-locking helpers then skip their locks.
	allLocked bool

	// Hub is the server's pub/sub registry and tracking table; nil where there is none.
	Hub *pubsub.Hub
	// post is set when something waits for afterCommand; invalOpen when inval collects the
	// command's invalidations (tracking.go).
	post, invalOpen bool
	inval           pubsub.Batch
	// muted is set while CLIENT REPLY drops this command's reply: replies after replyMark are
	// dropped, and pushes go to side, kept (pubsub.go, pushWriter).
	muted     bool
	replyMark int
	side      resp.Writer
	// inScript is set on the context a script's commands run in (scripting.go).
	inScript bool
	// blockedNs is the execution time of the blocking command that is waiting, for
	// Table.AfterBlocked.
	blockedNs int64
}

// BlockedNs is the execution time, in nanoseconds, of the command the connection waits in.
func (c *Ctx) BlockedNs() int64 { return c.blockedNs }

// Error writes an error reply and counts it in INFO errorstats and the command's failed calls.
func (c *Ctx) Error(msg string) {
	c.W.Error(msg)
	c.failed = true
	code := msg
	if i := strings.IndexByte(msg, ' '); i > 0 {
		code = msg[:i]
	}
	if !resp.IsErrorCode(code) {
		code = "ERR"
	}
	if c.Srv != nil {
		c.Srv.ErrorStat(code)
	}
}

// BlockedError ends a waiting blocking command with an error (CLIENT UNBLOCK ERROR), counted
// as Redis counts it: in INFO errorstats and as a failed call of the command.
func (c *Ctx) BlockedError(msg string) {
	c.Error(msg)
	if c.Cmd != nil {
		c.Cmd.FailedCalls.Add(1)
	}
}

// WrongType replies WRONGTYPE.
func (c *Ctx) WrongType() { c.Error(ErrWrongType) }

// Syntax replies "ERR syntax error".
func (c *Ctx) Syntax() { c.Error(ErrSyntax) }

// ArityError replies Redis's wrong-number-of-arguments error for the current command.
func (c *Ctx) ArityError() {
	c.Error("ERR wrong number of arguments for '" + c.Cmd.FullName() + "' command")
}

// Int parses argument i as a Redis integer, replying ErrNotInt on failure.
func (c *Ctx) Int(i int) (int64, bool) {
	v, ok := resp.ParseInt(c.Args[i])
	if !ok {
		c.Error(ErrNotInt)
	}
	return v, ok
}

// ArgIs reports whether argument i equals word, ignoring ASCII case.
func (c *Ctx) ArgIs(i int, word string) bool { return EqualFold(c.Args[i], word) }

// EqualFold compares b with an ASCII word, ignoring case, without allocating.
func EqualFold(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], word[i]
		if x >= 'A' && x <= 'Z' {
			x += 'a' - 'A'
		}
		if y >= 'A' && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// SelectDB switches the client's database.
func (c *Ctx) SelectDB(i int) {
	c.Client.DB = i
	if c.DB != nil && c.DB.IsReadOnlyView() {
		c.DB = c.Store.DB(i).ReadOnlyView() // a follower's read stays side-effect free
	} else {
		c.DB = c.Store.DB(i)
	}
}

// LockShard locks s for a Global command, unless the whole store is already held. It is
// released after the handler returns. Callers lock in ascending (database, shard) order.
func (c *Ctx) LockShard(s *store.Shard) {
	if c.allLocked {
		return
	}
	s.Lock()
	c.pushLock(s)
}

// UnlockAll releases every shard taken through the context, early; Global commands that
// visit shards one at a time call it between shards.
func (c *Ctx) UnlockAll() {
	for i := c.nlocked - 1; i >= 0; i-- {
		c.locked[i].Unlock()
		c.locked[i] = nil
	}
	c.nlocked = 0
	for i := len(c.moreLocks) - 1; i >= 0; i-- {
		c.moreLocks[i].Unlock()
	}
	c.moreLocks = c.moreLocks[:0]
	c.lockN = 0
}

func (c *Ctx) pushLock(s *store.Shard) {
	if c.nlocked < len(c.locked) {
		c.locked[c.nlocked] = s
		c.nlocked++
		return
	}
	c.moreLocks = append(c.moreLocks, s)
}

// WithShard runs fn with one shard locked (or already held), for Global commands that walk
// the keyspace shard by shard.
func (c *Ctx) WithShard(s *store.Shard, fn func()) {
	if c.allLocked {
		fn()
		return
	}
	s.Lock()
	defer s.Unlock()
	fn()
}

// itoa is strconv.Itoa for int64, for building replies off the hot path.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// BeginBatch tells the context that a new batch of commands starts: the time since the last
// command ran (waiting for the client, writing replies) is no command's time.
func (c *Ctx) BeginBatch() { c.nanoMark = 0 }

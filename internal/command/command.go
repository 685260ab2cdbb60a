// Package command holds HotKV's command table and every command handler, one file per
// command group, as Redis's source does.
//
// The table is the single declaration of each command: its arity, flags, ACL categories, key
// positions, documentation and handler. COMMAND, COMMAND INFO/DOCS/COUNT/LIST/GETKEYS, ACL
// categories, cluster routing and the command reference in docs/ are all derived from it, so
// nothing about a command is written twice (ARCHITECTURE.md §7).
package command

import (
	"errors"
	"maps"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hotkv/hotkv/internal/acl"
)

// Flag is a Redis command flag (COMMAND INFO's second element).
type Flag uint32

// Command flags, with Redis's names.
const (
	FlagWrite Flag = 1 << iota
	FlagReadOnly
	FlagDenyOOM
	FlagAdmin
	FlagPubSub
	FlagNoScript
	FlagBlocking
	FlagLoading
	FlagStale
	FlagSkipMonitor
	FlagSkipSlowlog
	FlagFast
	FlagNoAuth
	FlagMayReplicate
	FlagNoMandatoryKeys
	FlagNoAsyncLoading
	FlagNoMulti
	FlagMovableKeys
	FlagAllowBusy
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{FlagWrite, "write"}, {FlagReadOnly, "readonly"}, {FlagDenyOOM, "denyoom"},
	{FlagAdmin, "admin"}, {FlagPubSub, "pubsub"}, {FlagNoScript, "noscript"},
	{FlagBlocking, "blocking"}, {FlagLoading, "loading"}, {FlagStale, "stale"},
	{FlagSkipMonitor, "skip_monitor"}, {FlagSkipSlowlog, "skip_slowlog"}, {FlagFast, "fast"},
	{FlagNoAuth, "no_auth"}, {FlagMayReplicate, "may_replicate"},
	{FlagNoMandatoryKeys, "no_mandatory_keys"}, {FlagNoAsyncLoading, "no_async_loading"},
	{FlagNoMulti, "no_multi"}, {FlagMovableKeys, "movablekeys"}, {FlagAllowBusy, "allow_busy"},
}

// Names lists the flag names in Redis's order.
func (f Flag) Names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// KeySpecFlag is a Redis 7 key-spec flag.
type KeySpecFlag uint16

// Key-spec flags, with Redis's names.
const (
	KSRO KeySpecFlag = 1 << iota
	KSRW
	KSOW
	KSRM
	KSAccess
	KSUpdate
	KSInsert
	KSDelete
	KSNotKey
	KSIncomplete
	KSVariableFlags
)

var keySpecFlagNames = []struct {
	f    KeySpecFlag
	name string
}{
	{KSRO, "RO"}, {KSRW, "RW"}, {KSOW, "OW"}, {KSRM, "RM"}, {KSAccess, "access"},
	{KSUpdate, "update"}, {KSInsert, "insert"}, {KSDelete, "delete"}, {KSNotKey, "not_key"},
	{KSIncomplete, "incomplete"}, {KSVariableFlags, "variable_flags"},
}

// Names lists the key-spec flag names.
func (f KeySpecFlag) Names() []string {
	var out []string
	for _, fn := range keySpecFlagNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// KeySpec says where a command's keys are, in Redis 7's "index begin_search + range
// find_keys" form, which covers every key-taking command HotKV has; commands whose keys move
// (a numkeys argument) use KeyNum instead of LastKey.
type KeySpec struct {
	Flags KeySpecFlag
	// Begin is the index of the first key (begin_search index).
	Begin int
	// BeginKeyword, when set, starts the search after this keyword instead (begin_search
	// keyword), scanning from Begin.
	BeginKeyword string
	// LastKey is relative to the first key: 0 one key, -1 the last argument, -2 the one
	// before it (find_keys range lastkey).
	LastKey int
	// Step is the distance between keys (find_keys range keystep).
	Step int
	// Limit divides the remaining arguments (find_keys range limit); 0 for none.
	Limit int
	// KeyNumIdx, when > 0, makes this a keynum spec: the argument at Begin+KeyNumIdx-1... see
	// Redis's find_keys keynum; HotKV uses it for EVAL-like commands.
	KeyNumIdx, FirstKey int
	// Notes explains the flags where they are not obvious; COMMAND INFO reports it as the
	// key spec's "notes" field, as Redis does, when it is set.
	Notes string
}

// Handler runs a command. It writes exactly one reply through the context.
type Handler func(c *Ctx)

// Command is one row of the command table.
type Command struct {
	// Name is lower case ("gcra.limit"); subcommands are named without their container
	// ("setname") and reported as "client|setname".
	Name string
	// calledAs is the name clients call a top-level command by: Name, or what rename-command
	// made it ("" once removed). Only the table's lookup and its one-entry cache read it.
	calledAs string
	// Arity counts the command name: N means exactly N arguments, -N at least N.
	Arity int
	Flags Flag
	// ACL lists the ACL categories without '@'.
	ACL []string
	// FirstKey, LastKey and Step are the legacy key positions of COMMAND INFO.
	FirstKey, LastKey, Step int
	KeySpecs                []KeySpec
	// Group, Since, Complexity, Summary and Args feed COMMAND DOCS and docs/.
	Group      string
	Since      string
	Complexity string
	Summary    string
	// Syntax is the argument list as in Redis's documentation ("key seconds [NX | XX]"); it
	// is parsed into COMMAND DOCS arguments and printed in docs/.
	Syntax string
	Tips   []string
	// Doc is extra reference text for docs/ (behaviour notes, differences from Redis).
	Doc string

	Handler Handler
	// GetKeys returns key argument indexes when the key specs cannot express them.
	GetKeys func(args [][]byte) []int
	// GetKeysSpecs names the key spec whose flags each key GetKeys returns has, in order, the
	// last repeating (SORT: the key, then STORE's destination); nil means the first spec.
	GetKeysSpecs []int
	// KeyFlags gives the flags of the keys that a key spec marked variable_flags finds, from
	// the full command line, as Redis's getkeys procedures for SET and BITFIELD do; COMMAND
	// GETKEYSANDFLAGS reports them.
	KeyFlags func(args [][]byte) KeySpecFlag
	// Global marks commands that lock shards themselves (KEYS, SCAN, FLUSHDB, MOVE, ...):
	// the dispatcher takes no lock for them.
	Global bool
	// Decision marks the rate-limit decisions (GCRA.LIMIT, CL.THROTTLE, RATELIMIT.CHECK). In
	// replicated mode a denial, which journals nothing, is answered without waiting for the
	// commit of other clients' writes: it may rest on admissions not committed yet, and if
	// those are lost the client was denied too strictly, never admitted too loosely
	// (design/ha-and-cluster.md §3.1).
	Decision bool
	// RunsScript marks EVAL, EVALSHA, FCALL and their read-only forms: Redis gives the
	// writing ones none of the write/readonly/may_replicate flags, yet they touch the
	// keyspace, so the replication gate must see them (a follower that ran one would change
	// its store outside the log) and the cluster must route them by their declared keys.
	RunsScript bool
	// keyNum is set by NewTable when a key spec counts its keys from a numkeys argument
	// (ZUNION, ZMPOP, LMPOP ...): KeyIndexes then finds the keys through the specs.
	keyNum bool

	Subcommands []*Command
	subByName   map[string]*Command
	parent      *Command
	// aclID is the command's ID in the table's ACL catalog (acl_check.go).
	aclID int

	// Runtime statistics for INFO commandstats (Redis's "runtime populated data").
	Calls, Usec, RejectedCalls, FailedCalls atomic.Int64
	// latency is the command's latency histogram (latency.go; read it with Latency).
	latency latencyHist
}

// FullName is the name COMMAND and error messages use: "get", "client|setname".
func (c *Command) FullName() string {
	if c.parent != nil {
		return c.parent.Name + "|" + c.Name
	}
	return c.Name
}

// Parent returns the container command of a subcommand, or nil.
func (c *Command) Parent() *Command { return c.parent }

// Sub finds a subcommand by lower-case name.
func (c *Command) Sub(name string) *Command { return c.subByName[name] }

// Table is the set of all commands, looked up by lower-case name.
type Table struct {
	byName map[string]*Command
	// orig is byName as built, before rename-command (lookupOriginal).
	orig map[string]*Command
	all  []*Command
	// acl is the ACL view of the table: every command and subcommand with an ID, by name.
	acl *acl.Catalog

	// scripting is the script cache, function libraries and running scripts (scripting.go),
	// made on first use.
	scriptOnce sync.Once
	scripting  *Scripting

	// intro is the slow log, the latency monitor and the MONITOR clients (introspection.go).
	intro introspection

	// DiskError, while set, is the MISCONF error that write commands (and PING) get because
	// the server cannot persist: a background save failed with stop-writes-on-bgsave-error
	// on, or the append-only log cannot be written. The server sets and clears it as the
	// disk's state changes, so the check costs the command path one atomic load.
	DiskError atomic.Pointer[string]
	// pause is CLIENT PAUSE's state (pause.go).
	pause clientPause
	// Loading is set while the server loads its dataset at startup with clients connected:
	// commands not flagged loading get -LOADING, as from Redis then (admitLoading).
	Loading atomic.Bool
	// Gate, set once before serving in replicated (Raft) mode and nil otherwise, decides
	// whether a keyspace command (flagged write, readonly or may_replicate) may run on this
	// node: "" runs it, anything else is the error reply (-MOVED to the leader, -CLUSTERDOWN
	// during an election). Standalone servers pay one nil check.
	Gate func(c *Ctx, cmd *Command) string
	// ScriptGate, set once before serving in a sharded cluster and nil otherwise, checks a
	// keyed command a script runs: the command table's Gate saw only the script's declared
	// keys, and a key of another shard's slot must not be created here (Redis Cluster refuses
	// it the same way). A non-empty reply is the error the script's call raises.
	ScriptGate func(c *Ctx, cmd *Command) string
	// OneSlotTx, set in a sharded cluster, makes EXEC refuse a transaction whose keys are in
	// several slots (-CROSSSLOT), as Redis Cluster does: a slot may move to another shard
	// between two transactions, never in the middle of one, only if each stays in one slot.
	OneSlotTx bool

	// World, set once before serving in replicated mode and nil otherwise, is held shared by
	// every keyspace command (and EXEC) while it runs, so that the Raft leader can stop the
	// world between commands and encode a snapshot of its store that matches its log exactly
	// (the leader's store is ahead of what is committed while commands run). The log
	// applier's client does not take it: applying must go on while the world is stopped.
	World *sync.RWMutex
}

// InScript reports whether the command runs inside a script (its script was gated already).
func (c *Ctx) InScript() bool { return c.inScript }

// NewTable builds a table from command rows, linking subcommands to their parents.
func NewTable(cmds ...[]*Command) *Table {
	t := &Table{byName: map[string]*Command{}}
	t.intro.init()
	for _, group := range cmds {
		for _, c := range group {
			if _, dup := t.byName[c.Name]; dup {
				panic("command: duplicate command " + c.Name)
			}
			t.byName[c.Name] = c
			c.calledAs = c.Name
			t.all = append(t.all, c)
			c.keyNum = hasKeyNumSpec(c)
			if len(c.Subcommands) > 0 {
				c.subByName = map[string]*Command{}
				for _, s := range c.Subcommands {
					s.parent = c
					if s.Group == "" {
						s.Group = c.Group
					}
					c.subByName[s.Name] = s
					s.keyNum = hasKeyNumSpec(s)
				}
			}
		}
	}
	t.orig = maps.Clone(t.byName)
	sort.Slice(t.all, func(i, j int) bool { return t.all[i].Name < t.all[j].Name })
	t.acl = buildACLCatalog(t.all)
	return t
}

// Lookup finds a command by name, case-insensitively, without allocating for names up to 32
// bytes.
func (t *Table) Lookup(name []byte) *Command {
	var buf [32]byte
	if len(name) <= len(buf) {
		for i, ch := range name {
			if ch >= 'A' && ch <= 'Z' {
				ch += 'a' - 'A'
			}
			buf[i] = ch
		}
		return t.byName[string(buf[:len(name)])]
	}
	return t.byName[strings.ToLower(string(name))]
}

// lookupOriginal finds a command by name in the table as it was built, before any
// rename-command: what internal clients and logs call commands by.
func (t *Table) lookupOriginal(name []byte) *Command {
	return t.orig[strings.ToLower(string(name))]
}

// Rename is redis.conf's rename-command: the command called old (a top-level command) is
// called new from now on, and "" removes it, so that `rename-command FLUSHALL ""` disables it.
// Only what clients call it changes: COMMAND, SLOWLOG, INFO commandstats and ACL rules keep
// its own name, as in Redis. It runs before the server serves.
func (t *Table) Rename(old, new string) error {
	lo := strings.ToLower(old)
	cmd := t.byName[lo]
	if cmd == nil {
		return errors.New("No such command in rename-command")
	}
	ln := strings.ToLower(new)
	if other, dup := t.byName[ln]; dup && other != cmd && ln != "" {
		return errors.New("Target command name already exists")
	}
	delete(t.byName, lo)
	cmd.calledAs = ln // "" matches no client's name: a removed command stays unreachable
	if ln != "" {
		t.byName[ln] = cmd
	}
	return nil
}

// All returns every top-level command sorted by name.
func (t *Table) All() []*Command { return t.all }

// Len is COMMAND COUNT: top-level commands.
func (t *Table) Len() int { return len(t.all) }

// CheckArity reports whether n arguments (counting the name) satisfy arity.
func CheckArity(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

// KeyIndexes returns the argument indexes holding keys, from the legacy triple or GetKeys, or
// from the key specs when one of them counts keys from a numkeys argument (a malformed count
// yields no keys: the handler rejects it before touching any). It allocates; the dispatcher
// uses the allocation-free single-key path instead.
func (c *Command) KeyIndexes(args [][]byte) []int {
	if c.GetKeys != nil {
		return c.GetKeys(args)
	}
	if c.keyNum {
		refs := c.KeyRefs(args)
		out := make([]int, len(refs))
		for i, r := range refs {
			out[i] = r.Pos
		}
		return out
	}
	if c.FirstKey <= 0 {
		return nil
	}
	last := c.LastKey
	if last < 0 {
		last = len(args) + last
	}
	var out []int
	for i := c.FirstKey; i <= last && i < len(args); i += max(1, c.Step) {
		out = append(out, i)
	}
	return out
}

// hasKeyNumSpec reports whether one of c's key specs finds its keys from a numkeys argument.
func hasKeyNumSpec(c *Command) bool {
	for _, ks := range c.KeySpecs {
		if ks.isKeyNum() {
			return true
		}
	}
	return false
}

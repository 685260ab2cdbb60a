package command

import (
	"github.com/hotkv/hotkv/internal/acl"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/script"
	"github.com/hotkv/hotkv/internal/store"
)

// Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FUNCTION, FCALL and FCALL_RO, on the
// Lua engine in internal/script.
//
// Atomicity. A script runs like a transaction: its handler locks every shard of the
// selected database before the script starts and keeps them until it ends (Redis lets a
// script touch keys it did not declare, outside cluster mode, so the declared keys are not
// enough). A script whose source names a command that reaches other databases (SELECT, MOVE,
// COPY, SWAPDB, FLUSHALL, INFO) as a word locks every database instead; the choice is made
// when the script is compiled. Such a command reached through a computed name in a script
// that locked one database is refused rather than run unprotected. Inside MULTI/EXEC the
// EXEC already holds every lock (EVAL and FCALL are Global, so EXEC takes them all).
//
// Effects. EVAL and FCALL are never journaled themselves: every write a script makes
// journals its own effect, and the script's effects go out as one MULTI ... EXEC block
// (txJournal), as Redis 7 replicates scripts by their effects. redis.set_repl(REPL_NONE)
// stops journaling the commands that follow it; HotKV has one effect stream for its log and
// its replicas, so REPL_AOF and REPL_REPLICA both journal.
//
// Busy scripts. A script that runs longer than busy-reply-threshold (lua-time-limit) makes
// every other client's command that is not allow_busy fail with -BUSY; SCRIPT KILL and
// FUNCTION KILL stop a script that has not written yet (gopher-lua checks a context at every
// instruction); one that wrote is -UNKILLABLE, as in Redis.

// Errors shared by the scripting commands, worded as Redis's.
const (
	errNoScript       = "NOSCRIPT No matching script. Please use EVAL."
	errBusyEval       = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunction   = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	errNotBusy        = "NOTBUSY No scripts in execution right now."
	errUnkillable     = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	errKeysGreater    = "ERR Number of keys can't be greater than number of args"
	errKeysNegative   = "ERR Number of keys can't be negative"
	errROWriteScript  = "ERR Can not execute a script with write flag using *_ro command."
	functionLoadLimit = 500 * time.Millisecond
)

// Scripting is the server's script cache, function libraries and running scripts. The table
// holds it (Table.Scripting), as every handler reaches the table.
type Scripting struct {
	cfg  script.Config
	pool *script.Pool

	mu      sync.RWMutex
	scripts map[string]*evalScript
	// scriptBytes is the size of the cached scripts' bodies, for INFO.
	scriptBytes int64

	// fvm runs every function library; fvmMu serialises it (load and calls).
	fvmMu sync.Mutex
	fvm   *script.VM
	// libMu guards the library registry.
	libMu sync.RWMutex
	libs  map[string]*library  // by lower-case name
	funcs map[string]*function // by lower-case name
	order []*library           // in load order, for FUNCTION LIST and DUMP

	runMu    sync.Mutex
	running  []*running
	nrunning atomic.Int32

	// BusyMs is busy-reply-threshold in ms (0: never busy); the server sets it.
	BusyMs atomic.Int64
	// Log receives redis.log lines; the server sets it.
	Log func(level int, msg string)
}

// evalScript is a cached EVAL script.
type evalScript struct {
	sha   string
	body  []byte
	flags script.Flags
	proto *lua.FunctionProto
	// allDBs is set when the source names a command that reaches other databases.
	allDBs bool
}

// library is a loaded function library.
type library struct {
	name   string
	code   string
	fns    []*function
	allDBs bool
}

type function struct {
	lib *library
	f   *script.Function
}

// running is a script in execution, for BUSY, SCRIPT KILL and FUNCTION STATS.
type running struct {
	vm      *script.VM
	client  *Client
	eval    bool
	startNs int64
	name    string
	args    [][]byte
	// mu makes "has it written?" and "kill it" one step each, so that a script is never
	// killed after its first write (SCRIPT KILL would leave it half applied).
	mu     sync.Mutex
	wrote  bool
	killed bool
	// flags are the script's or function's flags (allow-oom, no-writes, eval compatibility);
	// oom records that the server was over maxmemory when it started (Redis's
	// pre_command_oom_state), which refuses its first write of a denyoom command.
	flags script.Flags
	oom   bool
}

// startWrite records that the script is about to write; false when it was killed first.
func (r *running) startWrite() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.killed {
		return false
	}
	r.wrote = true
	return true
}

// kill stops the script unless it has written, reporting whether it did.
func (r *running) kill(msg string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wrote {
		return false
	}
	r.killed = true
	r.vm.Kill(msg)
	return true
}

// Scripting returns the table's scripting state, made on first use.
func (t *Table) Scripting() *Scripting {
	t.scriptOnce.Do(func() {
		s := &Scripting{
			cfg:     script.Config{Version: "7.0.0"},
			scripts: map[string]*evalScript{},
			libs:    map[string]*library{},
			funcs:   map[string]*function{},
		}
		s.BusyMs.Store(5000)
		s.pool = script.NewPool(s.cfg, 8)
		t.scripting = s
	})
	return t.scripting
}

// SetVersion sets the Redis version scripts see; the server calls it before serving.
func (s *Scripting) SetVersion(v string, deprecatedAPI bool) {
	s.cfg = script.Config{Version: v, DeprecatedAPI: deprecatedAPI}
	s.pool = script.NewPool(s.cfg, 8)
	s.fvmMu.Lock()
	s.fvm = nil
	s.fvmMu.Unlock()
}

// Stats reports the number of cached scripts, their size, and the number of idle Lua states,
// for INFO memory.
func (s *Scripting) Stats() (scripts int, bytes int64, states int) {
	s.mu.RLock()
	scripts, bytes = len(s.scripts), s.scriptBytes
	s.mu.RUnlock()
	return scripts, bytes, s.pool.Idle()
}

// KillAll stops every running script, killable or not: SHUTDOWN NOSAVE ends them this way.
func (s *Scripting) KillAll() {
	s.runMu.Lock()
	for _, r := range s.running {
		r.mu.Lock()
		r.killed = true
		r.vm.Kill("Script killed by user with SHUTDOWN NOSAVE...")
		r.mu.Unlock()
	}
	s.runMu.Unlock()
}

// busyError returns the -BUSY error for a command of client cl when another client's script
// has run past busy-reply-threshold, or "".
func (s *Scripting) busyError(cl *Client) string {
	limit := s.BusyMs.Load()
	if limit <= 0 {
		return ""
	}
	now := nanotime()
	s.runMu.Lock()
	defer s.runMu.Unlock()
	for _, r := range s.running {
		if r.client != cl && (now-r.startNs)/1e6 >= limit {
			if r.eval {
				return errBusyEval
			}
			return errBusyFunction
		}
	}
	return ""
}

func (s *Scripting) start(r *running) {
	s.runMu.Lock()
	s.running = append(s.running, r)
	s.nrunning.Store(int32(len(s.running)))
	s.runMu.Unlock()
}

func (s *Scripting) end(r *running) {
	s.runMu.Lock()
	for i, x := range s.running {
		if x == r {
			s.running = append(s.running[:i], s.running[i+1:]...)
			break
		}
	}
	s.nrunning.Store(int32(len(s.running)))
	s.runMu.Unlock()
}

// crossDBWords are the commands that reach databases other than the selected one.
var crossDBWords = []string{"select", "move", "copy", "swapdb", "flushall", "info"}

// namesCrossDB reports whether src names one of crossDBWords as a whole word, in any case.
func namesCrossDB(src []byte) bool {
	low := strings.ToLower(string(src))
	for _, w := range crossDBWords {
		for i := 0; ; {
			j := strings.Index(low[i:], w)
			if j < 0 {
				break
			}
			j += i
			before := j == 0 || !isIdentByte(low[j-1])
			end := j + len(w)
			after := end >= len(low) || !isIdentByte(low[end])
			if before && after {
				return true
			}
			i = j + 1
		}
	}
	return false
}

func isIdentByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b >= 'A' && b <= 'Z'
}

// crossDBCommand reports whether cmd reaches other databases.
func crossDBCommand(cmd *Command) bool {
	switch cmd.Name {
	case "select", "move", "copy", "swapdb", "flushall", "info":
		return cmd.parent == nil
	}
	return false
}

// scriptKeys parses EVAL's and FCALL's numkeys and returns the keys and the arguments.
func scriptKeys(c *Ctx, badNum string) (keys, args [][]byte, ok bool) {
	n, isInt := resp.ParseInt(c.Args[2])
	if !isInt {
		c.Error(badNum)
		return nil, nil, false
	}
	if n > int64(len(c.Args)-3) {
		c.Error(errKeysGreater)
		return nil, nil, false
	}
	if n < 0 {
		c.Error(errKeysNegative)
		return nil, nil, false
	}
	return c.Args[3 : 3+n], c.Args[3+n:], true
}

// lookupScript finds a cached script by SHA (any case).
func (s *Scripting) lookupScript(sha []byte) *evalScript {
	var buf [40]byte
	if len(sha) != 40 {
		return nil
	}
	for i, b := range sha {
		if b >= 'A' && b <= 'Z' {
			b += 'a' - 'A'
		}
		buf[i] = b
	}
	s.mu.RLock()
	e := s.scripts[string(buf[:])]
	s.mu.RUnlock()
	return e
}

// loadScript compiles body into the cache (or finds it there); err is the error reply.
func (s *Scripting) loadScript(body []byte) (*evalScript, string) {
	sha := script.SHA1Hex(body)
	s.mu.RLock()
	e := s.scripts[sha]
	s.mu.RUnlock()
	if e != nil {
		return e, ""
	}
	flags, n, serr := script.ParseShebang(body)
	if serr != "" {
		return nil, "ERR " + serr
	}
	// The shebang line is left out but its newline kept, so line numbers stay the body's.
	proto, err := script.Compile(body[n:], "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): " + script.CompileError("user_script", body[n:], err)
	}
	e = &evalScript{sha: sha, body: append([]byte(nil), body...), flags: flags, proto: proto, allDBs: namesCrossDB(body)}
	s.mu.Lock()
	if old := s.scripts[sha]; old != nil {
		e = old
	} else {
		s.scripts[sha] = e
		s.scriptBytes += int64(len(body))
	}
	s.mu.Unlock()
	return e, ""
}

func evalCommand(c *Ctx)      { evalGeneric(c, false, false) }
func evalROCommand(c *Ctx)    { evalGeneric(c, false, true) }
func evalShaCommand(c *Ctx)   { evalGeneric(c, true, false) }
func evalShaROCommand(c *Ctx) { evalGeneric(c, true, true) }

func evalGeneric(c *Ctx, bySHA, ro bool) {
	s := c.Srv.Table().Scripting()
	if bySHA && len(c.Args[1]) != 40 {
		c.Error(errNoScript)
		return
	}
	keys, args, ok := scriptKeys(c, ErrNotInt)
	if !ok {
		return
	}
	var e *evalScript
	if bySHA {
		if e = s.lookupScript(c.Args[1]); e == nil {
			c.Error(errNoScript)
			return
		}
	} else {
		var err string
		if e, err = s.loadScript(c.Args[1]); e == nil {
			c.Error(err)
			return
		}
	}
	compat := e.flags&script.FlagEvalCompat != 0
	if !compat && e.flags&script.FlagNoWrites == 0 && ro {
		c.Error(errROWriteScript)
		return
	}
	readOnly := ro || (!compat && e.flags&script.FlagNoWrites != 0)
	r := &running{client: c.Client, eval: true, name: e.sha, flags: e.flags}
	runScript(c, s, r, e.allDBs, readOnly, func(run *script.Run, w *resp.Writer) script.Reply {
		return r.vm.Eval(run, e.proto, keys, args, e.sha, w)
	})
}

// scriptRun is the per-run state a script's commands execute in: a context of its own (the
// script's SELECT does not change the caller's database), a fake client, and a writer whose
// replies are handed to Lua.
type scriptRun struct {
	sc     Ctx
	client Client
	w      resp.Writer
	run    script.Run
	t      *Table
	r      *running
	ro     bool
	allDBs bool
	// caller is the context of the EVAL or FCALL, for client-side caching: a read inside the
	// script tracks the script's declared keys for its caller.
	caller *Ctx
}

var scriptRunPool = sync.Pool{New: func() any { return new(scriptRun) }}

// runScript locks what the script needs, runs it through call, journals its effects as one
// block and writes its reply to the caller.
func runScript(c *Ctx, s *Scripting, r *running, allDBs, readOnly bool, call func(*script.Run, *resp.Writer) script.Reply) {
	if lim := c.Store.Mem.Limit(); lim > 0 && c.Store.Mem.Used() > lim {
		r.oom = true
		// Redis's scriptPrepareForRun: a script with flags that may write and lacks allow-oom
		// is refused whole while the server is over maxmemory.
		if r.flags&script.FlagEvalCompat == 0 && r.flags&(script.FlagAllowOOM|script.FlagNoWrites) == 0 {
			c.Error("OOM allow-oom flag is not set on the script, can not run it when used memory > 'maxmemory'")
			return
		}
	}
	if !c.allLocked {
		if allDBs {
			dbs := make([]int, c.Store.NumDBs())
			for i := range dbs {
				dbs[i] = i
			}
			c.LockDBs(dbs...)
		} else {
			c.LockDBs(c.DB.ID)
		}
	}
	if r.vm == nil {
		// An EVAL state is taken once the locks are held: scripts of one database run one at
		// a time, so the pool need not hold a state for every client waiting for the locks.
		r.vm = s.pool.Get()
		defer s.pool.Put(r.vm)
	}
	sr := scriptRunPool.Get().(*scriptRun)
	sr.t = c.Srv.Table()
	sr.r = r
	sr.ro = readOnly
	sr.allDBs = allDBs || c.allLocked
	sr.caller = c
	sr.client = Client{ID: c.Client.ID, DB: c.Client.DB, User: c.Client.User, ACLUser: c.Client.ACLUser,
		Authenticated: true, Flags: "N", Addr: c.Client.Addr, LAddr: c.Client.LAddr}
	sr.w = resp.Writer{Buf: sr.w.Buf[:0], Proto: 2}
	sr.sc = Ctx{Args: nil, W: &sr.w, Client: &sr.client, Srv: c.Srv, Store: c.Store, DB: c.DB, Now: c.Now,
		allLocked: true, inScript: true, effArgs: sr.sc.effArgs[:0], effNum: sr.sc.effNum[:0]}
	sr.run = script.Run{Host: sr, Proto: 2, Repl: script.ReplAll}
	own := false
	switch {
	case c.tx != nil:
		sr.sc.tx = c.tx // inside EXEC: the EXEC's block holds the script's effects too
	case c.Store.Journal != nil:
		sr.sc.tx = &txJournal{out: c.Store.Journal}
		own = true
	}
	r.startNs = nanotime()
	r.args = c.Args
	s.start(r)
	reply := call(&sr.run, c.W)
	s.end(r)
	if sr.sc.tx != nil {
		sr.sc.tx.mute = false
		if own {
			sr.sc.tx.finish()
		}
	}
	if len(sr.sc.ready) > 0 {
		c.ready = append(c.ready, sr.sc.ready...)
	}
	if reply.Err != "" {
		scriptError(c, reply.Err, reply.ErrNoStats)
	}
	sr.sc = Ctx{effArgs: sr.sc.effArgs[:0], effNum: sr.sc.effNum[:0]}
	sr.run.Host = nil
	sr.r, sr.t, sr.caller = nil, nil, nil
	if cap(sr.w.Buf) > 64<<10 {
		sr.w.Buf = nil
	}
	scriptRunPool.Put(sr)
}

// scriptError writes a script's error reply as it is ("-" + msg: the script chose the code),
// counted in errorstats unless the command that raised it was counted already.
func scriptError(c *Ctx, msg string, noStats bool) {
	c.W.Error("-" + msg)
	c.failed = true
	if noStats || c.Srv == nil {
		return
	}
	code := msg
	if i := strings.IndexByte(msg, ' '); i >= 0 {
		code = msg[:i]
	}
	if code == "" {
		code = "ERR"
	}
	c.Srv.ErrorStat(code)
}

// Call implements script.Host: redis.call and redis.pcall, with Redis's checks (scriptCall).
func (sr *scriptRun) Call(args [][]byte, proto int) ([]byte, string) {
	t := sr.t
	cmd := t.Lookup(args[0])
	if cmd == nil {
		return nil, sr.refuse(nil, "Unknown Redis command called from script")
	}
	if len(cmd.Subcommands) > 0 {
		if len(args) >= 2 {
			sub := cmd.subByName[strings.ToLower(string(args[1]))]
			if sub == nil {
				return nil, sr.refuse(nil, "Unknown Redis command called from script")
			}
			cmd = sub
		} else if cmd.Handler == nil {
			return nil, sr.refuse(cmd, "Wrong number of args calling Redis command from script")
		}
	}
	if !CheckArity(cmd.Arity, len(args)) {
		return nil, sr.refuse(cmd, "Wrong number of args calling Redis command from script")
	}
	flags := cmd.Flags
	if cmd.parent != nil {
		flags |= cmd.parent.Flags & FlagNoScript
	}
	if flags&FlagNoScript != 0 {
		return nil, sr.refuse(cmd, "This Redis command is not allowed from script")
	}
	if u := sr.client.ACLUser; u != nil && !u.Unrestricted() {
		// Redis's scriptVerifyACL: the script runs with its caller's permissions.
		sr.sc.Args, sr.sc.Cmd = args, cmd
		if reason, pos := sr.sc.ACLCheck(cmd, args); reason != acl.Allowed {
			sr.sc.LogACLDenial(cmd, reason, pos, acl.ContextLua, "")
			return nil, sr.refuse(cmd, "The user executing the script "+ACLErrorMessage(reason))
		}
	}
	if sr.ro && cmd.mayReplicate() {
		return nil, sr.refuse(cmd, "Write commands are not allowed from read-only scripts.")
	}
	if flags&FlagWrite != 0 {
		if de := t.DiskError.Load(); de != nil {
			// Redis's scriptVerifyWriteCommandAllow: no writes while the disk fails (MISCONF).
			return nil, sr.refuse(cmd, "-"+*de)
		}
	}
	if !sr.allDBs && crossDBCommand(cmd) {
		return nil, sr.refuse(cmd, "This Redis command reaches other databases and must be named literally in the script's source, so that the script locks every database (HotKV chooses a script's locks when it compiles it)")
	}
	if t.ScriptGate != nil && flags&(FlagWrite|FlagReadOnly|FlagMayReplicate) != 0 {
		// A sharded cluster: the key must be of a slot this shard serves.
		sr.sc.Args = args
		if msg := t.ScriptGate(&sr.sc, cmd); msg != "" {
			return nil, sr.refuse(cmd, msg)
		}
	}
	if flags&FlagDenyOOM != 0 && sr.r.oom && !sr.r.wrote && sr.r.flags&script.FlagAllowOOM == 0 {
		// Redis's scriptVerifyOOM: over maxmemory at the start, a script may not begin to
		// write with a command that can grow memory (once it has written, it must finish).
		return nil, sr.refuse(cmd, "-"+errOOM) // "-": the error keeps its OOM code
	}
	if flags&FlagWrite != 0 && !sr.r.wrote && !sr.r.startWrite() {
		// Killed just now: the kill error surfaces at the script's next instruction.
		return nil, "Script killed by user with SCRIPT KILL..."
	}
	sc := &sr.sc
	sr.w.Reset()
	sr.w.Proto = proto
	sc.Args = args
	sc.hashedKey = nil
	if sc.tx != nil {
		sc.tx.mute = sr.run.Repl == script.ReplNone
	}
	sc.nanoMark = 0 // time the command alone, not the Lua code run since the previous call
	t.run(sc, cmd)
	if flags&FlagReadOnly != 0 && sr.caller != nil {
		// Redis 7.0's call(): a read-only command run by a script remembers, for a tracking
		// caller, the keys the script declared (EVAL_RO and FCALL_RO alike).
		sr.caller.TrackScriptRead(sr.caller.Cmd, sr.caller.Args)
	}
	if sc.Blocked != nil {
		// A script cannot wait. Redis refuses blocking forms inside scripts up front (XREAD
		// BLOCK checks for it; BLPOP and the like are noscript); a command that blocked
		// anyway is taken off the waiters and refused the same way, never left waiting.
		sc.Store.Waiters.Remove(sc.Blocked)
		sc.Blocked = nil
		sr.w.Reset()
		sr.w.Error("ERR " + cmd.Name + " command is not allowed with BLOCK option from scripts")
	}
	if sc.Client.DB != sc.DB.ID {
		if sc.DB.IsReadOnlyView() {
			sc.DB = sc.Store.DB(sc.Client.DB).ReadOnlyView()
		} else {
			sc.DB = sc.Store.DB(sc.Client.DB)
		}
	}
	return sr.w.Buf, ""
}

// refuse counts a command refused before it ran, as Redis counts it (rejected_calls and an
// ERR in errorstats), and returns its text.
func (sr *scriptRun) refuse(cmd *Command, msg string) string {
	if cmd != nil {
		cmd.RejectedCalls.Add(1)
	}
	if sr.sc.Srv != nil {
		// Redis's scriptCall counts the refusal by its code: a reply error kept whole
		// ("-OOM ...", "-MISCONF ...") by its first word, a message of the script engine's own
		// by ERR.
		code := "ERR"
		if raw, ok := strings.CutPrefix(msg, "-"); ok {
			if i := strings.IndexByte(raw[:min(len(raw), 32)], ' '); i > 0 {
				code = raw[:i]
			}
		}
		sr.sc.Srv.ErrorStat(code)
	}
	return msg
}

// ACLCheckCmd implements script.Host for redis.acl_check_cmd: whether the command exists, and
// whether the script's user may run it with these arguments.
func (sr *scriptRun) ACLCheckCmd(args [][]byte) (exists, allowed bool) {
	cmd := sr.t.Lookup(args[0])
	if cmd == nil {
		return false, false
	}
	if len(cmd.Subcommands) > 0 && len(args) >= 2 {
		if cmd = cmd.subByName[strings.ToLower(string(args[1]))]; cmd == nil {
			return false, false
		}
	}
	reason, _ := sr.sc.ACLCheck(cmd, args)
	return true, reason == acl.Allowed
}

// Log implements script.Host for redis.log.
func (sr *scriptRun) Log(level int, msg string) {
	if s := sr.t.scripting; s != nil && s.Log != nil {
		s.Log(level, msg)
	}
}

func scriptExistsCommand(c *Ctx) {
	s := c.Srv.Table().Scripting()
	c.W.Array(len(c.Args) - 2)
	for _, sha := range c.Args[2:] {
		// Redis looks the SHA up as given, case-insensitively.
		if s.lookupScript(sha) != nil {
			c.W.Int(1)
		} else {
			c.W.Int(0)
		}
	}
}

func scriptLoadCommand(c *Ctx) {
	e, err := c.Srv.Table().Scripting().loadScript(c.Args[2])
	if e == nil {
		c.Error(err)
		return
	}
	c.W.BulkString(e.sha)
}

func scriptFlushCommand(c *Ctx) {
	switch {
	case len(c.Args) == 3 && (c.ArgIs(2, "sync") || c.ArgIs(2, "async")):
	case len(c.Args) == 2:
	default:
		c.Error("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	s := c.Srv.Table().Scripting()
	s.mu.Lock()
	s.scripts = map[string]*evalScript{}
	s.scriptBytes = 0
	s.mu.Unlock()
	s.pool.Reset()
	c.W.OK()
}

func scriptKillCommand(c *Ctx)   { killScript(c, true) }
func functionKillCommand(c *Ctx) { killScript(c, false) }

// killScript is Redis's scriptKill: the oldest running script of another client.
func killScript(c *Ctx, eval bool) {
	s := c.Srv.Table().Scripting()
	// The registry stays locked while killing, so the script is still the one running (its
	// state is not handed to another script meanwhile).
	s.runMu.Lock()
	defer s.runMu.Unlock()
	var r *running
	for _, x := range s.running {
		if x.client != c.Client {
			r = x
			break
		}
	}
	switch {
	case r == nil:
		c.Error(errNotBusy)
	case eval && !r.eval && !r.hasWritten():
		c.Error(errBusyFunction)
	case !eval && r.eval && !r.hasWritten():
		c.Error(errBusyEval)
	default:
		msg := "Script killed by user with SCRIPT KILL..."
		if !eval {
			msg = "Script killed by user with FUNCTION KILL..."
		}
		if !r.kill(msg) {
			c.Error(errUnkillable)
			return
		}
		c.W.OK()
	}
}

func (r *running) hasWritten() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wrote
}

func scriptDebugCommand(c *Ctx) {
	switch {
	case c.ArgIs(2, "no"):
		c.W.OK()
	case c.ArgIs(2, "yes"), c.ArgIs(2, "sync"):
		// The Lua debugger (LDB) is not implemented: scripts would run without stopping.
		c.Error("ERR SCRIPT DEBUG is not supported by HotKV")
	default:
		c.Error("ERR Use SCRIPT DEBUG YES/SYNC/NO")
	}
}

// BusyCheck is the dispatcher's -BUSY check: a command that is not allow_busy, from a client
// other than the one whose script has run past busy-reply-threshold, is refused.
func (t *Table) busyCheck(c *Ctx, cmd *Command) bool {
	s := t.scripting
	if s == nil || s.nrunning.Load() == 0 {
		return true
	}
	if cmd.Flags&FlagAllowBusy != 0 || (cmd.parent != nil && cmd.parent.Flags&FlagAllowBusy != 0) {
		return true
	}
	if msg := s.busyError(c.Client); msg != "" {
		cmd.RejectedCalls.Add(1)
		if cmd.Name == "exec" && cmd.parent == nil && c.Client.multi.active {
			// Redis's rejectCommand: a rejected EXEC discards the transaction and says why.
			c.Client.setMulti(multiState{})
			c.Store.Watches.Unwatch(&c.Client.watch)
			c.Error("EXECABORT Transaction discarded because of: " + msg)
			return false
		}
		if c.Client.multi.active {
			c.Client.multi.dirty = true
		}
		c.Error(msg)
		return false
	}
	return true
}

// scriptJournalCheck keeps store imported for the effect types used above.
var _ store.Journal = (*txJournal)(nil)

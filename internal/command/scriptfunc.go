package command

import (
	"strings"

	"github.com/hotkv/hotkv/internal/glob"
	"github.com/hotkv/hotkv/internal/rdb"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/script"
)

// Functions (FUNCTION LOAD ... and FCALL), as Redis 7.0's functions.c: libraries of Lua
// functions, loaded by their code (whose first line is "#!lua name=<library>"), kept in
// snapshots and the append-only log (FUNCTION LOAD, DELETE, FLUSH and RESTORE are journaled
// as their arguments), listed, dumped and restored in Redis's payload format.

// Effect words of the function commands.
var (
	effFunction = []byte("FUNCTION")
	effLoad     = []byte("LOAD")
)

// functionVM returns the state that runs libraries, built on first use; fvmMu must be held.
func (s *Scripting) functionVM() *script.VM {
	if s.fvm == nil {
		s.fvm = script.NewFunctionVM(s.cfg)
	}
	return s.fvm
}

// parseLibraryMeta reads a library's "#!<engine> name=<name>" first line (functions.c
// functionExtractLibMetaData) and returns the engine, the name and the code after the line
// (its newline kept, so that line numbers stay those of the payload).
func parseLibraryMeta(code []byte) (engine, name string, body []byte, err string) {
	if len(code) < 2 || code[0] != '#' || code[1] != '!' {
		return "", "", nil, "ERR Missing library metadata"
	}
	end := strings.IndexByte(string(code), '\n')
	if end < 0 {
		return "", "", nil, "ERR Invalid library metadata"
	}
	parts, ok := shellSplit(string(code[:end]))
	if !ok || len(parts) == 0 {
		return "", "", nil, "ERR Invalid library metadata"
	}
	engine = parts[0][2:]
	found := false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(p[:5], "name=") {
			if found {
				return "", "", nil, "ERR Invalid metadata value, name argument was given multiple times"
			}
			name, found = p[5:], true
			continue
		}
		return "", "", nil, "ERR Invalid metadata value given: " + p
	}
	if !found {
		return "", "", nil, "ERR Library name was not given"
	}
	return engine, name, code[end:], ""
}

// shellSplit is a minimal sdssplitargs: blank-separated words with "..." and '...' quoting.
func shellSplit(line string) ([]string, bool) {
	var out []string
	var cur strings.Builder
	inWord, q := false, byte(0)
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case q != 0:
			if ch == '\\' && q == '"' && i+1 < len(line) {
				i++
				cur.WriteByte(line[i])
			} else if ch == q {
				q = 0
				if i+1 < len(line) && line[i+1] != ' ' && line[i+1] != '\t' {
					return nil, false
				}
			} else {
				cur.WriteByte(ch)
			}
		case ch == ' ' || ch == '\t' || ch == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '"' || ch == '\'':
			q, inWord = ch, true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if q != 0 {
		return nil, false
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, true
}

// compileLibrary runs a library's code in the function state; fvmMu must be held.
func (s *Scripting) compileLibrary(code []byte, timeout bool) (*library, string) {
	engine, name, body, err := parseLibraryMeta(code)
	if err != "" {
		return nil, err
	}
	if !script.ValidName(name) {
		return nil, "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	}
	if !strings.EqualFold(engine, "lua") {
		return nil, "ERR Engine '" + engine + "' not found"
	}
	limit := functionLoadLimit
	if !timeout {
		limit = 0
	}
	lib, lerr := s.functionVM().LoadLibrary(body, limit, s.Log)
	if lerr != "" {
		return nil, "ERR " + lerr
	}
	if len(lib.Functions) == 0 {
		return nil, "ERR No functions registered"
	}
	l := &library{name: name, code: string(code), allDBs: namesCrossDB(code)}
	for _, f := range lib.Functions {
		l.fns = append(l.fns, &function{lib: l, f: f})
	}
	return l, ""
}

// loadLibrary is FUNCTION LOAD's work, also used when loading a snapshot: it compiles code
// and links the library, replacing one of the same name when replace is set. It returns the
// library's name, or the error reply.
func (s *Scripting) loadLibrary(code []byte, replace, timeout bool) (string, string) {
	s.fvmMu.Lock()
	defer s.fvmMu.Unlock()
	// The name is checked against the registry before the code runs, as Redis does.
	engine, name, _, merr := parseLibraryMeta(code)
	if merr == "" && script.ValidName(name) && strings.EqualFold(engine, "lua") {
		s.libMu.RLock()
		old := s.libs[name]
		s.libMu.RUnlock()
		if old != nil && !replace {
			return "", "ERR Library '" + name + "' already exists"
		}
	}
	l, err := s.compileLibrary(code, timeout)
	if err != "" {
		return "", err
	}
	s.libMu.Lock()
	defer s.libMu.Unlock()
	old := s.libs[l.name]
	if old != nil && !replace {
		return "", "ERR Library '" + l.name + "' already exists"
	}
	for _, f := range l.fns {
		if other := s.funcs[strings.ToLower(f.f.Name)]; other != nil && other.lib != old {
			return "", "ERR Function " + f.f.Name + " already exists"
		}
	}
	if old != nil {
		s.unlinkLocked(old)
	}
	s.linkLocked(l)
	return l.name, ""
}

func (s *Scripting) linkLocked(l *library) {
	s.libs[l.name] = l
	for _, f := range l.fns {
		s.funcs[strings.ToLower(f.f.Name)] = f
	}
	s.order = append(s.order, l)
}

func (s *Scripting) unlinkLocked(l *library) {
	delete(s.libs, l.name)
	for _, f := range l.fns {
		delete(s.funcs, strings.ToLower(f.f.Name))
	}
	for i, x := range s.order {
		if x == l {
			s.order = append(s.order[:i], s.order[i+1:]...)
			break
		}
	}
}

// Libraries returns every library's name and code in load order, for snapshots.
func (s *Scripting) Libraries() [][2]string {
	s.libMu.RLock()
	defer s.libMu.RUnlock()
	out := make([][2]string, len(s.order))
	for i, l := range s.order {
		out[i] = [2]string{l.name, l.code}
	}
	return out
}

// FunctionStats reports the number of functions and the size of the libraries' code, for
// INFO memory.
func (s *Scripting) FunctionStats() (functions int, codeBytes int64) {
	s.libMu.RLock()
	defer s.libMu.RUnlock()
	for _, l := range s.order {
		codeBytes += int64(len(l.code))
	}
	return len(s.funcs), codeBytes
}

// LibraryCodes returns every library's code in load order, for FUNCTION DUMP.
func (s *Scripting) LibraryCodes() []string {
	s.libMu.RLock()
	defer s.libMu.RUnlock()
	out := make([]string, len(s.order))
	for i, l := range s.order {
		out[i] = l.code
	}
	return out
}

// RestoreLibrary loads a library from a snapshot (no time limit, replacing one of the same
// name); the error is the text FUNCTION LOAD would have replied.
func (s *Scripting) RestoreLibrary(code string) error {
	if _, err := s.loadLibrary([]byte(code), true, false); err != "" {
		return libraryError(err)
	}
	return nil
}

type libraryError string

func (e libraryError) Error() string { return string(e) }

// FlushLibraries deletes every library.
func (s *Scripting) FlushLibraries() {
	s.libMu.Lock()
	s.libs = map[string]*library{}
	s.funcs = map[string]*function{}
	s.order = nil
	s.libMu.Unlock()
}

func functionLoadCommand(c *Ctx) {
	replace := false
	i := 2
	for ; i < len(c.Args)-1; i++ {
		if !c.ArgIs(i, "replace") {
			c.Error("ERR Unknown option given: " + string(c.Args[i]))
			return
		}
		replace = true
	}
	if i >= len(c.Args) {
		c.Error("ERR Function code is missing")
		return
	}
	name, err := c.Srv.Table().Scripting().loadLibrary(c.Args[i], replace, true)
	if err != "" {
		c.Error(err)
		return
	}
	c.Dirty(1)
	// Journaled server-wide and with REPLACE, so that replaying it over a snapshot that
	// already holds the library (an append-only log's base) loads the same code again.
	if c.Store.Journal != nil {
		c.Emit(-1, effFunction, effLoad, effReplace, c.Args[i])
	}
	c.W.BulkString(name)
}

func functionDeleteCommand(c *Ctx) {
	s := c.Srv.Table().Scripting()
	s.libMu.Lock()
	l := s.libs[string(c.Args[2])]
	if l != nil {
		s.unlinkLocked(l)
	}
	s.libMu.Unlock()
	if l == nil {
		c.Error("ERR Library not found")
		return
	}
	c.Dirty(1)
	if c.Store.Journal != nil {
		c.Emit(-1, c.Args...)
	}
	c.W.OK()
}

func functionFlushCommand(c *Ctx) {
	switch {
	case len(c.Args) > 3:
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + truncate(string(c.Args[1]), 128) + "'. Try FUNCTION HELP.")
		return
	case len(c.Args) == 3 && !c.ArgIs(2, "async") && !c.ArgIs(2, "sync"):
		c.Error("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	c.Srv.Table().Scripting().FlushLibraries()
	c.Dirty(1)
	if c.Store.Journal != nil {
		c.Emit(-1, c.Args...)
	}
	c.W.OK()
}

func functionListCommand(c *Ctx) {
	withCode := false
	var pattern []byte
	hasPattern := false
	for i := 2; i < len(c.Args); i++ {
		switch {
		case !withCode && c.ArgIs(i, "withcode"):
			withCode = true
		case !hasPattern && c.ArgIs(i, "libraryname"):
			if i+1 >= len(c.Args) {
				c.Error("ERR library name argument was not given")
				return
			}
			i++
			pattern, hasPattern = c.Args[i], true
		default:
			c.Error("ERR Unknown argument " + strings.NewReplacer("\r", " ", "\n", " ").Replace(string(c.Args[i])))
			return
		}
	}
	s := c.Srv.Table().Scripting()
	s.libMu.RLock()
	defer s.libMu.RUnlock()
	libs := make([]*library, 0, len(s.order))
	for _, l := range s.order {
		if hasPattern && !glob.Match(string(pattern), l.name, false) {
			continue
		}
		libs = append(libs, l)
	}
	c.W.Array(len(libs))
	for _, l := range libs {
		if withCode {
			c.W.Map(4)
		} else {
			c.W.Map(3)
		}
		c.W.BulkString("library_name")
		c.W.BulkString(l.name)
		c.W.BulkString("engine")
		c.W.BulkString("LUA")
		c.W.BulkString("functions")
		c.W.Array(len(l.fns))
		for _, f := range l.fns {
			c.W.Map(3)
			c.W.BulkString("name")
			c.W.BulkString(f.f.Name)
			c.W.BulkString("description")
			if f.f.HasDesc {
				c.W.BulkString(f.f.Description)
			} else {
				c.W.Null()
			}
			c.W.BulkString("flags")
			names := f.f.Flags.Names()
			c.W.Set(len(names))
			for _, n := range names {
				c.W.Simple(n)
			}
		}
		if withCode {
			c.W.BulkString("library_code")
			c.W.BulkString(l.code)
		}
	}
}

func functionDumpCommand(c *Ctx) {
	codes := c.Srv.Table().Scripting().LibraryCodes()
	bs := make([][]byte, len(codes))
	for i, code := range codes {
		bs[i] = []byte(code)
	}
	c.W.Bulk(rdb.DumpFunctions(bs))
}

func functionRestoreCommand(c *Ctx) {
	if len(c.Args) > 4 {
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + truncate(string(c.Args[1]), 128) + "'. Try FUNCTION HELP.")
		return
	}
	policy := "append"
	if len(c.Args) == 4 {
		switch {
		case c.ArgIs(3, "append"):
		case c.ArgIs(3, "replace"):
			policy = "replace"
		case c.ArgIs(3, "flush"):
			policy = "flush"
		default:
			c.Error("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, err := rdb.RestoreFunctions(c.Args[2])
	if err != nil {
		c.Error("ERR " + err.Error())
		return
	}
	s := c.Srv.Table().Scripting()
	s.fvmMu.Lock()
	var libs []*library
	for _, code := range codes {
		l, lerr := s.compileLibrary(code, false)
		if lerr != "" {
			s.fvmMu.Unlock()
			c.Error(lerr)
			return
		}
		libs = append(libs, l)
	}
	s.fvmMu.Unlock()
	// Check the payload itself for collisions, then against what stays.
	seenLib, seenFn := map[string]bool{}, map[string]bool{}
	for _, l := range libs {
		if seenLib[l.name] {
			c.Error("ERR Library " + l.name + " already exists")
			return
		}
		seenLib[l.name] = true
		for _, f := range l.fns {
			if seenFn[strings.ToLower(f.f.Name)] {
				c.Error("ERR Function " + f.f.Name + " already exists")
				return
			}
			seenFn[strings.ToLower(f.f.Name)] = true
		}
	}
	s.libMu.Lock()
	defer s.libMu.Unlock()
	if policy == "flush" {
		s.libs, s.funcs, s.order = map[string]*library{}, map[string]*function{}, nil
	}
	replaced := map[*library]bool{}
	for _, l := range libs {
		if old := s.libs[l.name]; old != nil {
			if policy != "replace" {
				c.Error("ERR Library " + l.name + " already exists")
				return
			}
			replaced[old] = true
		}
	}
	for _, l := range libs {
		for _, f := range l.fns {
			if other := s.funcs[strings.ToLower(f.f.Name)]; other != nil && !replaced[other.lib] {
				c.Error("ERR Function " + f.f.Name + " already exists")
				return
			}
		}
	}
	for old := range replaced {
		s.unlinkLocked(old)
	}
	for _, l := range libs {
		s.linkLocked(l)
	}
	c.Dirty(1)
	// Journaled as what it did: FUNCTION FLUSH for the FLUSH policy, then a FUNCTION LOAD
	// REPLACE of every restored library.
	if c.Store.Journal != nil {
		if policy == "flush" {
			c.Emit(-1, effFunction, []byte("FLUSH"))
		}
		for _, l := range libs {
			c.Emit(-1, effFunction, effLoad, effReplace, []byte(l.code))
		}
	}
	c.W.OK()
}

func functionStatsCommand(c *Ctx) {
	s := c.Srv.Table().Scripting()
	s.runMu.Lock()
	var r *running
	for _, x := range s.running {
		if x.client != c.Client {
			r = x
			break
		}
	}
	var name string
	var args [][]byte
	var dur int64
	if r != nil {
		name, args, dur = r.name, r.args, (nanotime()-r.startNs)/1e6
	}
	s.runMu.Unlock()
	if r != nil && r.eval {
		c.Error(errBusyEval)
		return
	}
	s.libMu.RLock()
	nlib, nfn := len(s.libs), len(s.funcs)
	s.libMu.RUnlock()
	c.W.Map(2)
	c.W.BulkString("running_script")
	if r == nil {
		c.W.Null()
	} else {
		c.W.Map(3)
		c.W.BulkString("name")
		c.W.BulkString(name)
		c.W.BulkString("command")
		c.W.Array(len(args))
		for _, a := range args {
			c.W.Bulk(a)
		}
		c.W.BulkString("duration_ms")
		c.W.Int(dur)
	}
	c.W.BulkString("engines")
	c.W.Map(1)
	c.W.BulkString("LUA")
	c.W.Map(2)
	c.W.BulkString("libraries_count")
	c.W.Int(int64(nlib))
	c.W.BulkString("functions_count")
	c.W.Int(int64(nfn))
}

func fcallCommand(c *Ctx)   { fcallGeneric(c, false) }
func fcallROCommand(c *Ctx) { fcallGeneric(c, true) }

func fcallGeneric(c *Ctx, ro bool) {
	s := c.Srv.Table().Scripting()
	s.libMu.RLock()
	f := s.funcs[strings.ToLower(string(c.Args[1]))]
	s.libMu.RUnlock()
	if f == nil {
		c.Error("ERR Function not found")
		return
	}
	keys, args, ok := scriptKeys(c, "ERR Bad number of keys provided")
	if !ok {
		return
	}
	if f.f.Flags&script.FlagNoWrites == 0 && ro {
		c.Error(errROWriteScript)
		return
	}
	readOnly := ro || f.f.Flags&script.FlagNoWrites != 0
	// The state is made once; taking it here, before the shard locks, is only a read of it.
	s.fvmMu.Lock()
	vm := s.functionVM()
	s.fvmMu.Unlock()
	r := &running{vm: vm, client: c.Client, name: f.f.Name, flags: f.f.Flags}
	runScript(c, s, r, f.lib.allDBs, readOnly, func(run *script.Run, w *resp.Writer) script.Reply {
		// Functions share one state: the lock is taken after the shards (the lock order).
		s.fvmMu.Lock()
		defer s.fvmMu.Unlock()
		return vm.CallFunction(run, f.f, keys, args, w)
	})
}

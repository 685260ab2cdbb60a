package command

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hotkv/hotkv/internal/glob"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/rdb"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// Metadata below is Redis 7.0's (src/commands/*.json as COMMAND INFO and COMMAND DOCS report
// them), so that clients and tools that read it, such as cluster clients routing by key
// position or go-redis choosing read-only replicas, treat HotKV as they treat Redis.

// adminFlags are the flags Redis gives its administrative commands.
const adminFlags = FlagAdmin | FlagNoScript | FlagLoading | FlagStale

var adminACL = []string{"admin", "slow", "dangerous"}

func serverCommands() []*Command {
	return []*Command{
		{Name: "info", Arity: -1, Flags: FlagLoading | FlagStale, ACL: []string{"slow", "dangerous"},
			Tips:  []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"},
			Group: "server", Since: "1.0.0", Complexity: "O(1)", Syntax: "[section [section ...]]",
			Summary: "Get information and statistics about the server",
			Doc: "Sections and fields use Redis's names so that tools parsing Redis's INFO read HotKV unchanged. " +
				"`default` (no argument), `all` and `everything` select sections as in Redis; HotKV adds `hotkv_version` and `go_version` to the server section.",
			Handler: infoCommand},
		{Name: "config", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "2.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for server configuration commands",
			Subcommands: configSubcommands()},
		{Name: "command", Arity: -1, Flags: FlagLoading | FlagStale, ACL: []string{"slow", "connection"},
			Tips: []string{"nondeterministic_output_order"}, Group: "server", Since: "2.8.13",
			Complexity: "O(N) where N is the total number of Redis commands",
			Summary:    "Get array of Redis command details",
			Doc: "Every entry has Redis 7's ten elements (name, arity, flags, first key, last key, step, ACL categories, tips, key specs, subcommands), " +
				"which go-redis and other clients require. The command table behind it also generates this reference.",
			Handler: commandCommand, Subcommands: commandSubcommands()},
		{Name: "time", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"fast"},
			Tips: []string{"nondeterministic_output"}, Group: "server", Since: "2.6.0", Complexity: "O(1)",
			Summary: "Return the current server time",
			Doc: "Reports the server clock that expiry and rate limiting read, so `DEBUG CLOCK` moves it too. " +
				"The clock has millisecond resolution: the microseconds are always a multiple of 1000.",
			Handler: timeCommand},
		{Name: "role", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast, ACL: []string{"admin", "fast", "dangerous"},
			Group: "server", Since: "2.8.12", Complexity: "O(1)",
			Summary: "Return the role of the instance in the context of replication",
			Doc: "A standalone server is a master without replicas (offset 0). In a Raft group (docs/replication.md) the serving leader " +
				"answers `master` with its applied log index as the offset and each follower heard from lately as a replica (client " +
				"address, applied index); a follower answers `slave` with its leader's client address, `connected` (or `connect` while " +
				"it knows no leader) and its applied index. A leader not yet serving answers as a follower of no one.",
			Handler: roleCommand},
		{Name: "debug", Arity: -2, Flags: adminFlags, ACL: adminACL, Group: "server", Since: "1.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for debugging commands",
			Doc: "Allowed only when `enable-debug-command` is `yes` (or `local`, for loopback clients). HotKV implements these subcommands:\n\n" +
				"- `DEBUG CLOCK GET`: the server clock in Unix milliseconds.\n" +
				"- `DEBUG CLOCK SET unix-ms`: freeze the server clock at `unix-ms` (HotKV only).\n" +
				"- `DEBUG CLOCK ADVANCE ms`: freeze the clock if it is running and move it forward by `ms` (HotKV only).\n" +
				"- `DEBUG CLOCK RESET`: return to the wall clock (HotKV only).\n" +
				"- `DEBUG EXPIRE-NOW`: delete every key whose expire time has passed at the server clock's time and reply how many (HotKV only).\n" +
				"- `DEBUG DIGEST`: 40 hex digits that are equal on two servers exactly when they hold the same keys (values and expire times) and the same named limiters (settings, `total_allowed`, every key's state; not `total_denied`), all zeros when empty. Order-independent, like Redis's, but not Redis's values; replicated groups compare it across nodes.\n" +
				"- `DEBUG ERROR message`: reply `message` as an error, for client tests.\n" +
				"- `DEBUG CONFIG-REWRITE-FORCE-ALL`: CONFIG REWRITE writing every directive, defaults included.\n" +
				"- `DEBUG OBJECT key`: Redis's one-line summary of the value (address, refcount, encoding, serialized length, LRU clock, idle seconds); Redis's quicklist statistics are left out.\n" +
				"- `DEBUG POPULATE count [prefix] [size]`: create `count` string keys `prefix:0` ... (`key:` by default) in the selected database with values `value:0` ..., padded with zero bytes or cut to `size` bytes when given; keys that exist are kept. As in Redis, for filling a server to test with. The keys reach the append-only log (as MSET); a replicated server (Raft) refuses it.\n" +
				"- `DEBUG SLEEP seconds`: wait before replying, holding every key meanwhile: commands on keys wait, as on Redis, while commands without keys (PING, INFO) still answer.\n" +
				"- `DEBUG HELP`.\n\n" +
				"Expiry, TTLs and the rate limiters all read the server clock, so tests in any language can control time with `DEBUG CLOCK`.",
			Global: true, Handler: debugCommand},
		{Name: "shutdown", Arity: -1, Flags: adminFlags | FlagNoMulti | FlagAllowBusy, ACL: adminACL,
			Group: "server", Since: "1.0.0",
			Complexity: "O(N) when saving, where N is the total number of keys in all databases when saving data, otherwise O(1)",
			Syntax:     "[NOSAVE | SAVE] [NOW] [FORCE] [ABORT]",
			Summary:    "Synchronously save the dataset to disk and then shut down the server",
			Doc: "On success the connection closes without a reply, as in Redis. " +
				"Without `NOSAVE` or `SAVE` the server writes a snapshot first if save points are configured (the `save` directive); `SAVE` always writes one, `NOSAVE` never does. " +
				"The final snapshot is taken with every shard locked, so it is exact. " +
				"If the save fails the server keeps running and replies `ERR Errors trying to SHUTDOWN. Check logs.`, unless `FORCE` is given. " +
				"`NOW` is accepted; HotKV has no replicas to wait for. See [persistence](../persistence.md).",
			Handler: shutdownCommand},
		{Name: "memory", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "4.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for memory diagnostics commands",
			Subcommands: memorySubcommands()},
		slowlogCommands(),
		latencyCommands(),
		{Name: "monitor", Arity: 1, Flags: adminFlags, ACL: adminACL, Group: "server", Since: "1.0.0",
			Summary: "Listen for all requests received by the server in real time",
			Doc: "Replies `+OK`, then streams every command other clients run, after it ran, as Redis formats it: `+<unix seconds>.<microseconds> [<db> <client address>] \"arg\" ...`, " +
				"arguments quoted as Redis's sdscatrepr quotes them, commands run by scripts as `[<db> lua]`, EVAL and FCALL before the commands of their script, MULTI, the queued commands and EXEC in order. " +
				"Administrative commands (CONFIG, CLIENT LIST, SLOWLOG ...) are not shown, and AUTH and HELLO passwords, ACL SETUSER rules and sensitive CONFIG SET values show as `\"(redacted)\"`. " +
				"The lines wait in the monitor's output queue under `client-output-buffer-limit` (class normal, as in Redis): a monitor that does not read is disconnected past the limit. " +
				"A monitor may still run PING, QUIT, RESET and other commands that touch no keys; the others get `ERR Replica can't interact with the keyspace`. " +
				"RESET ends monitor mode. Inside MULTI it is refused at EXEC (`ERR MONITOR isn't allowed for DENY BLOCKING client`). With no monitor connected, the cost to other commands is one atomic load.",
			Handler: monitorCommand},
	}
}

// ---- INFO ----

func infoCommand(c *Ctx) {
	sections := make([]string, 0, len(c.Args)-1)
	for _, a := range c.Args[1:] {
		sections = append(sections, string(a))
	}
	c.W.Verbatim("txt", c.Srv.Info(sections, c.allLocked))
}

// ---- TIME ----

// timeCommand reads the server clock rather than the command snapshot: TIME reports "now",
// and the clock is what DEBUG CLOCK steers.
func timeCommand(c *Ctx) {
	ms := c.Srv.Clock().NowMs()
	c.W.Array(2)
	c.W.BulkString(strconv.FormatInt(ms/1000, 10))
	c.W.BulkString(strconv.FormatInt(ms%1000*1000, 10))
}

// ---- CONFIG ----

func configSubcommands() []*Command {
	sub := func(name string, arity int, syntax, since, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: adminFlags, ACL: adminACL, Since: since,
			Complexity: complexity, Syntax: syntax, Summary: summary, Handler: h}
	}
	const perParam = "O(N) when N is the number of configuration parameters provided"
	set := sub("set", -4, "parameter value [parameter value ...]", "2.0.0", perParam,
		"Set configuration parameters to the given values", configSetCommand)
	set.Tips = []string{"request_policy:all_nodes", "response_policy:all_succeeded"}
	set.Doc = "All pairs are applied or none is: the first invalid pair fails the whole call. See [the configuration reference](../config.md) for the directives that may change at run time."
	get := sub("get", -3, "parameter [parameter ...]", "2.0.0", perParam,
		"Get the values of configuration parameters", configGetCommand)
	get.Doc = "Each parameter is a glob-style pattern matched against directive names and aliases. See [the configuration reference](../config.md)."
	rewrite := sub("rewrite", 2, "", "2.8.0", "O(1)",
		"Rewrite the configuration file with the in memory configuration", func(c *Ctx) {
			if err := c.Srv.ConfigRewrite(false); err != nil {
				c.Error("ERR " + err.Error())
				return
			}
			c.W.OK()
		})
	rewrite.Doc = "Rewrites the config file the server was started with, as Redis 7.0 does: comments, blank lines and the order of lines are kept, " +
		"each directive's first line gets its current value (later duplicates are removed), and directives that differ from their defaults " +
		"but were not in the file are appended after a `# Generated by CONFIG REWRITE` line. The file is replaced atomically and keeps its permissions. " +
		"See [operations](../operations.md#configuration-file-and-config-rewrite)."
	return []*Command{
		get,
		set,
		sub("resetstat", 2, "", "2.0.0", "O(1)", "Reset the stats returned by INFO", func(c *Ctx) {
			c.Srv.ResetStats(c.allLocked)
			c.W.OK()
		}),
		rewrite,
		{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"slow"}, Since: "5.0.0",
			Complexity: "O(1)", Summary: "Show helpful text about the different subcommands",
			Handler: helpHandler(
				"CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
				"GET <pattern>",
				"    Return parameters matching the glob-like <pattern> and their values.",
				"SET <directive> <value>",
				"    Set the configuration <directive> to <value>.",
				"RESETSTAT",
				"    Reset statistics reported by the INFO command.",
				"REWRITE",
				"    Rewrite the configuration file.",
				"HELP",
				"    Prints this help.",
			)},
	}
}

// helpHandler replies a fixed HELP text, one status line per element, as Redis's
// addReplyHelp does.
func helpHandler(lines ...string) Handler {
	return func(c *Ctx) {
		c.W.Array(len(lines))
		for _, l := range lines {
			c.W.Simple(l)
		}
	}
}

func configGetCommand(c *Ctx) {
	patterns := make([]string, 0, len(c.Args)-2)
	for _, a := range c.Args[2:] {
		patterns = append(patterns, string(a))
	}
	pairs := c.Srv.ConfigGet(patterns)
	c.W.Map(len(pairs))
	for _, p := range pairs {
		c.W.BulkString(p[0])
		c.W.BulkString(p[1])
	}
}

func configSetCommand(c *Ctx) {
	if len(c.Args)%2 != 0 {
		// Redis 7.0 answers an odd number of arguments past the arity check with a plain
		// syntax error, not an arity error.
		c.Syntax()
		return
	}
	pairs := make([][2]string, 0, (len(c.Args)-2)/2)
	for i := 2; i+1 < len(c.Args); i += 2 {
		pairs = append(pairs, [2]string{string(c.Args[i]), string(c.Args[i+1])})
		if c.Srv.Table().Loading.Load() && (denyLoadingConfig(string(c.Args[i])) ||
			// HotKV sets dir at startup only; enable-protected-configs decides just which
			// refusal comes first during a load, as Redis checks protection before loading.
			strings.EqualFold(string(c.Args[i]), "dir") && protectedAllowed(c, "enable-protected-configs")) {
			// Redis gives the loading error precedence over any other in the call, since
			// clients handle it differently (they retry).
			c.Error(errLoading)
			return
		}
	}
	if err := c.Srv.ConfigSet(pairs); err != nil {
		c.Error("ERR " + err.Error())
		return
	}
	c.W.OK()
}

// denyLoadingConfig reports whether a directive may not be set while the dataset loads
// (Redis's DENY_LOADING_CONFIG): turning the log on or off under the loader would change the
// files it reads. dir is protected in HotKV, so CONFIG SET refuses it at any time.
func denyLoadingConfig(name string) bool {
	return strings.EqualFold(name, "appendonly") || strings.EqualFold(name, "repl-diskless-load")
}

// protectedAllowed is Redis's allowProtectedAction for directive (enable-protected-configs,
// enable-module-command): yes, or local for a client on a loopback address or a Unix socket.
func protectedAllowed(c *Ctx, directive string) bool {
	v := ""
	if kv := c.Srv.ConfigGet([]string{directive}); len(kv) == 1 {
		v = kv[0][1]
	}
	switch v {
	case "yes":
		return true
	case "local":
		return c.Client.Local()
	}
	return false
}

// ---- COMMAND ----

func commandSubcommands() []*Command {
	sub := func(name string, arity int, syntax, since, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagLoading | FlagStale, ACL: []string{"slow", "connection"},
			Since: since, Complexity: complexity, Syntax: syntax, Summary: summary, Handler: h}
	}
	const perLookup = "O(N) where N is the number of commands to look up"
	const perArg = "O(N) where N is the number of arguments to the command"
	order := []string{"nondeterministic_output_order"}
	info := sub("info", -2, "[command-name [command-name ...]]", "2.8.13", perLookup,
		"Get array of specific Redis command details, or all when no argument is given.", commandInfoCommand)
	info.Tips = order
	info.Doc = "A name may be a subcommand's full name (`config|get`). Unknown names give a null entry."
	docs := sub("docs", -2, "[command-name [command-name ...]]", "7.0.0", perLookup,
		"Get array of specific Redis command documentation", commandDocsCommand)
	docs.Tips = order
	docs.Doc = "The `arguments` of each entry are derived from the command's syntax line; their shape is Redis's, though HotKV names groups of arguments after their members (`nx_xx`) where Redis's own JSON has hand-picked names (`condition`). Unknown names are left out."
	list := sub("list", -2, "[FILTERBY <MODULE module-name | ACLCAT category | PATTERN pattern>]", "7.0.0",
		"O(N) where N is the total number of Redis commands", "Get an array of Redis command names", commandListCommand)
	list.Tips = order
	list.Doc = "Subcommands are listed by their full names (`config|get`). HotKV has no modules, so `FILTERBY MODULE` always gives an empty list."
	return []*Command{
		sub("count", 2, "", "2.8.13", "O(1)", "Get total number of Redis commands", func(c *Ctx) {
			c.W.Int(int64(c.Srv.Table().Len()))
		}),
		docs,
		sub("getkeys", -4, "command [arg [arg ...]]", "2.8.13", perArg,
			"Extract keys given a full Redis command", func(c *Ctx) { getKeysCommand(c, false) }),
		sub("getkeysandflags", -4, "command [arg [arg ...]]", "7.0.0", perArg,
			"Extract keys and access flags given a full Redis command", func(c *Ctx) { getKeysCommand(c, true) }),
		sub("help", 2, "", "5.0.0", "O(1)", "Show helpful text about the different subcommands", helpHandler(
			"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"(no subcommand)",
			"    Return details about all Redis commands.",
			"COUNT",
			"    Return the total number of commands in this Redis server.",
			"LIST",
			"    Return a list of all commands in this Redis server.",
			"INFO [<command-name> ...]",
			"    Return details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"DOCS [<command-name> ...]",
			"    Return documentation details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"GETKEYS <full-command>",
			"    Return the keys from a full Redis command.",
			"GETKEYSANDFLAGS <full-command>",
			"    Return the keys and the access flags from a full Redis command.",
			"HELP",
			"    Prints this help.",
		)),
		info,
		list,
	}
}

func commandCommand(c *Ctx) {
	all := c.Srv.Table().All()
	c.W.Array(len(all))
	for _, cmd := range all {
		writeCommandInfo(c.W, cmd)
	}
}

func commandInfoCommand(c *Ctx) {
	if len(c.Args) == 2 {
		commandCommand(c)
		return
	}
	t := c.Srv.Table()
	c.W.Array(len(c.Args) - 2)
	for _, name := range c.Args[2:] {
		if cmd := t.LookupFull(string(name)); cmd != nil {
			writeCommandInfo(c.W, cmd)
		} else {
			c.W.Null()
		}
	}
}

func commandDocsCommand(c *Ctx) {
	t := c.Srv.Table()
	var cmds []*Command
	if len(c.Args) == 2 {
		cmds = t.All()
	} else {
		for _, name := range c.Args[2:] {
			if cmd := t.LookupFull(string(name)); cmd != nil {
				cmds = append(cmds, cmd)
			}
		}
	}
	c.W.Map(len(cmds))
	for _, cmd := range cmds {
		c.W.BulkString(cmd.FullName())
		writeDocs(c.W, cmd)
	}
}

func commandListCommand(c *Ctx) {
	var match func(cmd *Command) bool
	switch {
	case len(c.Args) == 2:
		match = func(*Command) bool { return true }
	case len(c.Args) == 5 && c.ArgIs(2, "filterby"):
		arg := string(c.Args[4])
		switch {
		case c.ArgIs(3, "module"):
			match = func(*Command) bool { return false } // HotKV has no modules
		case c.ArgIs(3, "aclcat"):
			cat := strings.ToLower(arg)
			match = func(cmd *Command) bool {
				for _, a := range cmd.ACLCategories() {
					if a == cat {
						return true
					}
				}
				return false
			}
		case c.ArgIs(3, "pattern"):
			match = func(cmd *Command) bool { return glob.Match(arg, cmd.FullName(), true) }
		default:
			c.Syntax()
			return
		}
	default:
		c.Syntax()
		return
	}
	var names []string
	for _, cmd := range c.Srv.Table().All() {
		if match(cmd) {
			names = append(names, cmd.FullName())
		}
		for _, sc := range cmd.Subcommands {
			if match(sc) {
				names = append(names, sc.FullName())
			}
		}
	}
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
}

// getKeysCommand is COMMAND GETKEYS and GETKEYSANDFLAGS, with Redis's checks in Redis's order.
func getKeysCommand(c *Ctx, withFlags bool) {
	args := c.Args[2:]
	cmd := c.Srv.Table().lookupArgs(args)
	switch {
	case cmd == nil:
		c.Error("ERR Invalid command specified")
		return
	case cmd.GetKeys == nil && len(cmd.keySpecs()) == 0:
		c.Error("ERR The command has no key arguments")
		return
	case !CheckArity(cmd.Arity, len(args)):
		c.Error("ERR Invalid number of arguments specified for command")
		return
	}
	keys := cmd.KeyRefs(args)
	if len(keys) == 0 && cmd.Flags&FlagNoMandatoryKeys == 0 {
		c.Error("ERR Invalid arguments specified for command")
		return
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		if !withFlags {
			c.W.Bulk(args[k.Pos])
			continue
		}
		c.W.Array(2)
		c.W.Bulk(args[k.Pos])
		names := k.Flags.Names()
		c.W.Set(len(names))
		for _, n := range names {
			c.W.Simple(n)
		}
	}
}

// LookupFull finds a command by the name COMMAND INFO and COMMAND DOCS accept: "get", or a
// subcommand's full name "config|get". It is case-insensitive.
func (t *Table) LookupFull(name string) *Command {
	name = strings.ToLower(name)
	parent, sub, isSub := strings.Cut(name, "|")
	cmd := t.byName[parent]
	if cmd == nil || !isSub {
		return cmd
	}
	if strings.Contains(sub, "|") {
		return nil
	}
	return cmd.Sub(sub)
}

// lookupArgs finds the command a full argument vector would run, as Redis's lookupCommand
// does: the container itself when it is called alone, else its subcommand.
func (t *Table) lookupArgs(args [][]byte) *Command {
	cmd := t.Lookup(args[0])
	if cmd == nil || len(cmd.Subcommands) == 0 || len(args) == 1 {
		return cmd
	}
	return cmd.Sub(strings.ToLower(string(args[1])))
}

// aclCategoryOrder is Redis's ACL category table order, which COMMAND INFO follows.
var aclCategoryOrder = []string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous",
	"connection", "transaction", "scripting",
}

// ACLCategories returns the command's ACL categories (without '@') as Redis computes them:
// the declared ones plus those implied by flags (write, read, admin and dangerous, pubsub,
// fast, blocking, and slow for anything not fast), in Redis's category order, with HotKV's
// own categories last. ACL rules, COMMAND INFO and COMMAND LIST FILTERBY ACLCAT all use it,
// so a row that forgets an implied category still behaves like Redis.
func (c *Command) ACLCategories() []string {
	has := map[string]bool{}
	for _, a := range c.ACL {
		has[strings.ToLower(strings.TrimPrefix(a, "@"))] = true
	}
	if c.Flags&FlagWrite != 0 {
		has["write"] = true
	}
	if c.Flags&FlagReadOnly != 0 && !has["scripting"] {
		has["read"] = true
	}
	if c.Flags&FlagAdmin != 0 {
		has["admin"], has["dangerous"] = true, true
	}
	if c.Flags&FlagPubSub != 0 {
		has["pubsub"] = true
	}
	if c.Flags&FlagFast != 0 {
		has["fast"] = true
	}
	if c.Flags&FlagBlocking != 0 {
		has["blocking"] = true
	}
	if !has["fast"] {
		has["slow"] = true
	}
	out := make([]string, 0, len(has))
	for _, name := range aclCategoryOrder {
		if has[name] {
			out = append(out, name)
			delete(has, name)
		}
	}
	for _, a := range c.ACL {
		if name := strings.ToLower(strings.TrimPrefix(a, "@")); has[name] {
			out = append(out, name)
			delete(has, name)
		}
	}
	return out
}

// movableKeys reports whether the command's key positions depend on its arguments, which
// Redis derives rather than declares (populateCommandMovableKeys).
func (c *Command) movableKeys() bool {
	if c.Flags&FlagMovableKeys != 0 || c.GetKeys != nil {
		return true
	}
	for _, ks := range c.KeySpecs {
		if ks.BeginKeyword != "" || ks.Begin <= 0 || ks.isKeyNum() {
			return true
		}
	}
	return false
}

// mayReplicate is Redis's CMD_WRITE|CMD_MAY_REPLICATE test: what a read-only script may not
// call and CLIENT PAUSE WRITE holds. Redis flags PUBLISH and SPUBLISH may_replicate (it sends
// messages on to its replicas); HotKV leaves the flag off them, since its Raft gate and world
// lock key on it and a message is delivered by the node that receives it, and names them here.
func (c *Command) mayReplicate() bool {
	return c.Flags&(FlagWrite|FlagMayReplicate) != 0 ||
		(c.Flags&FlagPubSub != 0 && (c.Name == "publish" || c.Name == "spublish"))
}

// InfoFlags lists the flags COMMAND INFO shows: the declared ones less may_replicate, which
// Redis hides on purpose, plus movablekeys when the key positions depend on the arguments.
func (c *Command) InfoFlags() []string {
	f := c.Flags &^ FlagMayReplicate
	if c.movableKeys() {
		f |= FlagMovableKeys
	}
	return f.Names()
}

func (ks KeySpec) isKeyNum() bool { return ks.KeyNumIdx > 0 || ks.FirstKey > 0 }

// keySpecs returns the command's key specs, or one derived from the legacy first/last/step
// positions when a row declares only those, so that COMMAND INFO, COMMAND GETKEYS and cluster
// routing never see a key-taking command without a spec.
func (c *Command) keySpecs() []KeySpec {
	if len(c.KeySpecs) > 0 || c.FirstKey <= 0 {
		return c.KeySpecs
	}
	flags := KSRO | KSAccess
	if c.Flags&FlagWrite != 0 {
		flags = KSRW | KSAccess | KSUpdate
	}
	last := c.LastKey
	if last >= 0 {
		last -= c.FirstKey
	}
	return []KeySpec{{Flags: flags, Begin: c.FirstKey, LastKey: last, Step: max(1, c.Step)}}
}

// KeyRef is one key argument found in a command line and the access flags of the key spec that
// found it (COMMAND GETKEYSANDFLAGS).
type KeyRef struct {
	Pos   int
	Flags KeySpecFlag
}

// KeyRefs finds the key arguments of a full command line (args[0] is the command name) the
// way Redis's getKeysFromCommandWithSpecs does: GetKeys when the row has it, otherwise every
// key spec in turn. Malformed lines (a missing keyword's count, a count past the end) yield
// no keys, which COMMAND GETKEYS reports as invalid arguments.
func (c *Command) KeyRefs(args [][]byte) []KeyRef {
	specs := c.keySpecs()
	if c.GetKeys != nil {
		// Each key takes the flags of the spec GetKeysSpecs names for it: SORT's key is read
		// and its STORE destination written, as Redis's sortGetKeys reports them.
		var out []KeyRef
		for i, p := range c.GetKeys(args) {
			var flags KeySpecFlag
			if len(specs) > 0 {
				si := 0
				if n := len(c.GetKeysSpecs); n > 0 {
					si = c.GetKeysSpecs[min(i, n-1)]
				}
				flags = specs[min(si, len(specs)-1)].Flags
			}
			out = append(out, KeyRef{Pos: p, Flags: flags})
		}
		return out
	}
	var out []KeyRef
	for _, ks := range specs {
		refs, ok := ks.find(args, c.Arity)
		if !ok {
			return nil
		}
		if ks.Flags&KSVariableFlags != 0 && c.KeyFlags != nil {
			flags := c.KeyFlags(args)
			for i := range refs {
				refs[i].Flags = flags
			}
		}
		out = append(out, refs...)
	}
	return out
}

// find applies one key spec to args. It reports false for a line the spec cannot make sense
// of (Redis's invalid_spec).
func (ks KeySpec) find(args [][]byte, arity int) ([]KeyRef, bool) {
	argc := len(args)
	first := 0
	switch {
	case ks.BeginKeyword != "":
		start, end := ks.Begin, argc-1
		if ks.Begin <= 0 {
			start, end = argc+ks.Begin, 0
		}
		for i := start; i != end; {
			if i >= argc || i < 1 {
				break
			}
			if EqualFold(args[i], ks.BeginKeyword) {
				first = i + 1
				break
			}
			if start <= end {
				i++
			} else {
				i--
			}
		}
		if first == 0 {
			return nil, true // the keyword is optional: no keys from this spec
		}
	case ks.Begin > 0:
		first = ks.Begin
	default:
		return nil, true // unknown begin_search: this spec finds nothing by itself
	}
	step := max(1, ks.Step)
	var last int
	if ks.isKeyNum() {
		if ks.KeyNumIdx >= argc-first {
			return nil, false
		}
		n, ok := resp.ParseInt(args[first+ks.KeyNumIdx])
		if !ok || n < 0 || n > int64(argc) {
			return nil, false
		}
		first += ks.FirstKey
		// Redis 7.0 computes first + n - 1 whatever the step, which only its step-1 keynum
		// specs survive; GCRA.LIMITALL's step 3 needs the n-th key's own position.
		last = first + (int(n)-1)*step
		if n == 0 {
			// Redis's getKeysUsingKeySpecs finds last < first, an invalid spec, and falls
			// back to the command's getkeys procedure, which finds no key at all (not even
			// ZUNIONSTORE's destination); NO_MANDATORY_KEYS commands (EVAL) reply [].
			return nil, false
		}
	} else {
		switch {
		case ks.LastKey >= 0:
			last = first + ks.LastKey
		case ks.Limit == 0:
			last = argc + ks.LastKey
		default:
			last = first + ((argc-first)/ks.Limit + ks.LastKey)
		}
	}
	if last >= argc || last < first || first >= argc {
		return nil, false
	}
	var out []KeyRef
	for i := first; i <= last; i += step {
		if i >= argc {
			if arity < 0 {
				continue
			}
			return nil, false
		}
		out = append(out, KeyRef{Pos: i, Flags: ks.Flags})
	}
	return out, true
}

// Describe renders a key spec in words for docs/: "RW access update: index 1, range lastkey
// 0 step 1 limit 0".
func (ks KeySpec) Describe() string {
	var b strings.Builder
	b.WriteString(strings.Join(ks.Flags.Names(), " "))
	b.WriteString(": ")
	switch {
	case ks.BeginKeyword != "":
		b.WriteString("after keyword " + ks.BeginKeyword + " searching from " + strconv.Itoa(ks.Begin))
	case ks.Begin > 0:
		b.WriteString("index " + strconv.Itoa(ks.Begin))
	default:
		b.WriteString("unknown begin")
		return b.String()
	}
	if ks.isKeyNum() {
		b.WriteString(", keynum keynumidx " + strconv.Itoa(ks.KeyNumIdx) + " firstkey " + strconv.Itoa(ks.FirstKey) +
			" step " + strconv.Itoa(max(1, ks.Step)))
	} else {
		b.WriteString(", range lastkey " + strconv.Itoa(ks.LastKey) + " step " + strconv.Itoa(max(1, ks.Step)) +
			" limit " + strconv.Itoa(ks.Limit))
	}
	if ks.Notes != "" {
		b.WriteString(" (" + ks.Notes + ")")
	}
	return b.String()
}

// writeCommandInfo writes one COMMAND INFO entry with exactly Redis 7.0's ten elements and
// RESP3 types: flags, ACL categories, tips and key specs are sets; subcommands are an array,
// or an empty set when there are none (Redis 7.0 answers both ways).
func writeCommandInfo(w *resp.Writer, cmd *Command) {
	w.Array(10)
	w.BulkString(cmd.FullName())
	w.Int(int64(cmd.Arity))
	flags := cmd.InfoFlags()
	w.Set(len(flags))
	for _, f := range flags {
		w.Simple(f)
	}
	w.Int(int64(cmd.FirstKey))
	w.Int(int64(cmd.LastKey))
	w.Int(int64(cmd.Step))
	acl := cmd.ACLCategories()
	w.Set(len(acl))
	for _, a := range acl {
		w.Simple("@" + a)
	}
	w.Set(len(cmd.Tips))
	for _, t := range cmd.Tips {
		w.BulkString(t)
	}
	specs := cmd.keySpecs()
	w.Set(len(specs))
	for _, ks := range specs {
		writeKeySpec(w, ks)
	}
	if len(cmd.Subcommands) == 0 {
		w.Set(0)
		return
	}
	w.Array(len(cmd.Subcommands))
	for _, sc := range cmd.Subcommands {
		writeCommandInfo(w, sc)
	}
}

func writeKeySpec(w *resp.Writer, ks KeySpec) {
	if ks.Notes != "" {
		// Redis puts the notes first (addReplyCommandKeySpecs).
		w.Map(4)
		w.BulkString("notes")
		w.BulkString(ks.Notes)
	} else {
		w.Map(3)
	}
	w.BulkString("flags")
	names := ks.Flags.Names()
	w.Set(len(names))
	for _, n := range names {
		w.Simple(n)
	}
	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	known := true
	switch {
	case ks.BeginKeyword != "":
		w.BulkString("keyword")
		w.BulkString("spec")
		w.Map(2)
		w.BulkString("keyword")
		w.BulkString(ks.BeginKeyword)
		w.BulkString("startfrom")
		w.Int(int64(ks.Begin))
	case ks.Begin > 0:
		w.BulkString("index")
		w.BulkString("spec")
		w.Map(1)
		w.BulkString("index")
		w.Int(int64(ks.Begin))
	default:
		known = false
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}
	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	switch {
	case !known:
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	case ks.isKeyNum():
		w.BulkString("keynum")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("keynumidx")
		w.Int(int64(ks.KeyNumIdx))
		w.BulkString("firstkey")
		w.Int(int64(ks.FirstKey))
		w.BulkString("keystep")
		w.Int(int64(max(1, ks.Step)))
	default:
		w.BulkString("range")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("lastkey")
		w.Int(int64(ks.LastKey))
		w.BulkString("keystep")
		w.Int(int64(max(1, ks.Step)))
		w.BulkString("limit")
		w.Int(int64(ks.Limit))
	}
}

// ---- DEBUG ----

const errDebugNotAllowed = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."

var debugHelp = helpHandler(
	"DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CLOCK GET",
	"    Return the server clock in Unix milliseconds.",
	"CLOCK SET <unix-ms>",
	"    Freeze the server clock at <unix-ms>.",
	"CLOCK ADVANCE <ms>",
	"    Freeze the server clock if it is running and move it forward by <ms>.",
	"CLOCK RESET",
	"    Return the server clock to the wall clock.",
	"DIGEST",
	"    Output a hex signature representing the current DB content.",
	"ERROR <string>",
	"    Return a Redis protocol error with <string> as message. Useful for clients",
	"    unit tests to simulate Redis errors.",
	"EXPIRE-NOW",
	"    Delete every key whose expire time has passed and return how many.",
	"CONFIG-REWRITE-FORCE-ALL",
	"    Like CONFIG REWRITE but writes all configuration options, including",
	"    keywords not listed in original configuration file or default values.",
	"OBJECT <key>",
	"    Show low-level info about the `key` and associated value.",
	"POPULATE <count> [<prefix>] [<size>]",
	"    Create <count> string keys named <prefix>:<num> (default key:<num>), with",
	"    values value:<num>, padded with zero bytes or cut to <size> when given.",
	"    Keys that exist are left as they are.",
	"SLEEP <seconds>",
	"    Stop this connection for <seconds>. Decimals allowed.",
	"HELP",
	"    Prints this help.",
)

// debugCommand handles DEBUG's subcommands in one handler, as Redis does: DEBUG is one
// command of arity -2 whose subcommands are not table rows.
func debugCommand(c *Ctx) {
	if !c.Srv.DebugAllowed(c.Client) {
		c.Error(errDebugNotAllowed)
		return
	}
	n := len(c.Args)
	if c.Srv.Table().Loading.Load() && !c.ArgIs(1, "help") && !c.ArgIs(1, "sleep") && !c.ArgIs(1, "error") &&
		!c.ArgIs(1, "object") && !c.ArgIs(1, "digest") {
		// DEBUG is flagged loading, as in Redis, but what changes the data or the clock
		// (POPULATE, EXPIRE-NOW, CLOCK) would race the loader and write outside the log.
		c.Error(errLoading)
		return
	}
	switch {
	case c.ArgIs(1, "help") && n == 2:
		debugHelp(c)
	case c.ArgIs(1, "sleep") && n == 3:
		secs, err := strconv.ParseFloat(string(c.Args[2]), 64)
		if err != nil || math.IsNaN(secs) || secs < 0 {
			secs = 0 // Redis reads the number with strtod: junk sleeps for 0 s
		}
		// Redis stops the whole server for the sleep; HotKV holds every key (all shards of
		// all databases) instead, so commands on keys wait as they would on Redis while
		// commands without keys (PING, INFO) still answer. Tests use it to make a server
		// unresponsive (a MIGRATE timing out, a slow command in SLOWLOG).
		if !c.allLocked {
			c.LockAll()
			defer c.UnlockAllGlobal()
		}
		time.Sleep(time.Duration(min(secs, float64(math.MaxInt64/int64(time.Second))) * float64(time.Second)))
		c.W.OK()
	case c.ArgIs(1, "error") && n == 3:
		// Redis sends "-" and the message as they are, without adding an error code.
		c.Error("-" + string(c.Args[2]))
	case c.ArgIs(1, "expire-now") && n == 2:
		if c.allLocked {
			// The shards are already held by the surrounding transaction; ExpireNow locks
			// them itself and would deadlock.
			c.Error("ERR DEBUG EXPIRE-NOW is not allowed in a transaction")
			return
		}
		c.W.Int(int64(c.Store.ExpireNow()))
	case c.ArgIs(1, "digest") && n == 2:
		if c.allLocked {
			c.Error("ERR DEBUG DIGEST is not allowed in a transaction")
			return
		}
		d, err := persist.Digest(c.Store, c.Now)
		if err != nil {
			c.Error("ERR " + err.Error())
			return
		}
		c.W.Simple(d)
	case c.ArgIs(1, "clock") && n >= 3:
		debugClock(c)
	case c.ArgIs(1, "object") && n == 3:
		debugObject(c)
	case c.ArgIs(1, "populate") && n >= 3 && n <= 5:
		debugPopulate(c)
	case c.ArgIs(1, "config-rewrite-force-all") && n == 2:
		// Redis's check that a file holding every directive reads back (its CONFIG REWRITE
		// sanity test): CONFIG REWRITE writing defaults too.
		if err := c.Srv.ConfigRewrite(true); err != nil {
			c.Error("ERR CONFIG-REWRITE-FORCE-ALL failed: " + strings.TrimPrefix(err.Error(), "Rewriting config file: "))
			return
		}
		c.W.OK()
	default:
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + truncate(string(c.Args[1]), 128) + "'. Try DEBUG HELP.")
	}
}

// populateBatch is how many keys DEBUG POPULATE writes per shard-lock hold and per MSET effect:
// other clients get the shards between batches, and a log entry stays small.
const populateBatch = 1000

// debugPopulate is Redis's DEBUG POPULATE count [prefix] [size].
func debugPopulate(c *Ctx) {
	count, err := strconv.ParseInt(string(c.Args[2]), 10, 64)
	if err != nil || count < 0 {
		c.Error("ERR value is out of range, must be positive")
		return
	}
	prefix := "key"
	if len(c.Args) >= 4 {
		prefix = string(c.Args[3])
	}
	size := int64(-1)
	if len(c.Args) == 5 {
		if size, err = strconv.ParseInt(string(c.Args[4]), 10, 64); err != nil || size < 0 {
			c.Error("ERR value is out of range, must be positive")
			return
		}
		if size > maxBulkLen(c) {
			c.Error(ErrStringLimit)
			return
		}
	}
	if c.Srv != nil && c.Srv.Table().Gate != nil {
		// The keys would be written outside the Raft log, on whichever node ran it.
		c.Error("ERR DEBUG POPULATE is not available on a replicated server: write the keys with MSET")
		return
	}
	if c.allLocked || c.nlocked > 0 {
		c.Error("ERR DEBUG POPULATE is not allowed in a transaction")
		return
	}
	db := c.DB
	var eff [][]byte
	written := int64(0)
	for start := int64(0); start < count; start += populateBatch {
		end := min(count, start+populateBatch)
		keys := make([][]byte, 0, end-start)
		for j := start; j < end; j++ {
			// Redis formats the key into 128 bytes: a longer prefix is cut.
			k := prefix + ":" + strconv.FormatInt(j, 10)
			if len(k) > 127 {
				k = k[:127]
			}
			keys = append(keys, []byte(k))
		}
		c.LockKeysIn(db.ID, keys, db.ID, nil)
		eff = append(eff[:0], effMSet)
		for i, key := range keys {
			if db.Lookup(key, c.Now) != nil {
				continue
			}
			v := []byte("value:" + strconv.FormatInt(start+int64(i), 10))
			if size >= 0 {
				padded := make([]byte, size)
				copy(padded, v)
				v = padded
			}
			db.Set(key, StringValue(v), 0, false, c.Now)
			c.notify(evString, "set", key)
			eff = append(eff, key, v)
			written++
		}
		if len(eff) > 1 {
			c.Emit(db.ID, eff...)
		}
		c.UnlockAll()
	}
	c.Dirty(written)
	c.W.OK()
}

// debugObject is DEBUG OBJECT key: Redis's one-line summary of a value. The address is the
// entry's, which identifies the value as Redis's robj pointer does; refcount follows OBJECT
// REFCOUNT's rule; serializedlength is the size of the value in a DUMP payload (type byte,
// RDB version and checksum left out), which is what Redis's rdbSavedObjectLen measures.
// Redis's quicklist statistics (ql_nodes ...) are not shown: HotKV's lists are not quicklists.
func debugObject(c *Ctx) {
	e := c.DB.LookupReadNoTouch(c.Args[2], c.Now)
	if e == nil {
		c.Error("ERR no such key")
		return
	}
	serialized := 0
	if o, ok := dumpObject(e); ok {
		serialized = max(0, len(rdb.Dump(o))-1-rdb.DumpFooterLen)
	}
	refcount := 1
	if e.Val.IsInt && e.Val.Int >= 0 && e.Val.Int < sharedIntegers && c.Store.Mem.Limit() == 0 {
		refcount = math.MaxInt32
	}
	c.W.Simple(fmt.Sprintf("Value at:%p refcount:%d encoding:%s serializedlength:%d lru:%d lru_seconds_idle:%d",
		e, refcount, encodingName(&e.Val), serialized, e.LRUClock(), e.IdleSeconds(c.Now)))
}

// debugClock is DEBUG CLOCK GET | SET <unix-ms> | ADVANCE <ms> | RESET (ARCHITECTURE.md §2).
// After a change the command time and the connection's cached time follow the new clock, so
// the next command of the same pipeline already sees it.
func debugClock(c *Ctx) {
	clk := c.Srv.Clock()
	n := len(c.Args)
	switch {
	case c.ArgIs(2, "get") && n == 3:
		c.W.Int(clk.NowMs())
		return
	case c.ArgIs(2, "set") && n == 4:
		ms, ok := c.Int(3)
		if !ok {
			return
		}
		if ms < 0 {
			c.Error("ERR DEBUG CLOCK SET needs a Unix time in milliseconds that is not negative")
			return
		}
		clk.Set(ms)
	case c.ArgIs(2, "advance") && n == 4:
		ms, ok := c.Int(3)
		if !ok {
			return
		}
		if ms < 0 {
			c.Error("ERR DEBUG CLOCK ADVANCE cannot move the clock backwards")
			return
		}
		clk.Advance(ms)
	case c.ArgIs(2, "reset") && n == 3:
		clk.Reset()
	default:
		c.Error("ERR unknown subcommand or wrong number of arguments for 'CLOCK " + truncate(string(c.Args[2]), 128) + "'. Try DEBUG HELP.")
		return
	}
	c.ClockChanged = true
	c.Now = clk.NowMs()
	c.W.OK()
}

// ---- SHUTDOWN ----

// Shutdown modes passed to Server.Shutdown.
const (
	ShutdownNoSave  = -1
	ShutdownDefault = 0
	ShutdownSave    = 1
)

func shutdownCommand(c *Ctx) {
	var nosave, save, abort, other, force bool
	for i := 1; i < len(c.Args); i++ {
		switch {
		case c.ArgIs(i, "nosave"):
			nosave = true
		case c.ArgIs(i, "save"):
			save = true
		case c.ArgIs(i, "now"):
			other = true
		case c.ArgIs(i, "force"):
			other, force = true, true
		case c.ArgIs(i, "abort"):
			abort = true
		default:
			c.Syntax()
			return
		}
	}
	if (abort && (nosave || save || other)) || (nosave && save) {
		c.Syntax()
		return
	}
	if abort {
		// Shutdown is immediate in HotKV, so there is never one in progress to abort.
		c.Error("ERR No shutdown in progress.")
		return
	}
	if c.allLocked {
		// SHUTDOWN is no_multi in Redis. Inside EXEC this connection holds shard locks that
		// the final save needs.
		c.Error(errNotInMulti)
		return
	}
	mode := ShutdownDefault
	if nosave {
		if sc := c.Srv.Table().scripting; sc != nil {
			sc.KillAll() // SHUTDOWN NOSAVE stops a busy script, even one that wrote
		}
		mode = ShutdownNoSave
	} else if save {
		mode = ShutdownSave
	}
	if err := c.Srv.Shutdown(mode, force); err != nil {
		c.Error("ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	// Redis replies nothing: the client sees the connection close.
	c.Client.CloseAfterReply = true
}

// ---- MEMORY ----

func memorySubcommands() []*Command {
	sub := func(name string, flags Flag, syntax, complexity, summary string, tips []string, h Handler) *Command {
		return &Command{Name: name, Arity: 2, Flags: flags, ACL: []string{"slow"}, Since: "4.0.0",
			Complexity: complexity, Syntax: syntax, Summary: summary, Tips: tips, Handler: h}
	}
	special := []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}
	const slowAlloc = "Depends on how much memory is allocated, could be slow"
	usage := &Command{Name: "usage", Arity: -3, Flags: FlagReadOnly, ACL: []string{"read", "slow"},
		FirstKey: 2, LastKey: 2, Step: 1, KeySpecs: []KeySpec{{Flags: KSRO, Begin: 2, Step: 1}},
		Since: "4.0.0", Complexity: "O(N) where N is the number of samples.", Syntax: "key [SAMPLES count]",
		Summary: "Estimate the memory usage of a key", Handler: memoryUsageCommand,
		Doc: "The estimate is the key's record, its name and its value's bytes; aggregate values report their own size. `SAMPLES` is accepted for compatibility."}
	stats := sub("stats", 0, "", "O(1)", "Show memory usage details", special, memoryStatsCommand)
	stats.Global = true
	stats.Doc = "A subset of Redis's fields, from the Go runtime's memory statistics: Go has no jemalloc, so allocator fields describe the Go heap."
	return []*Command{
		sub("doctor", 0, "", "O(1)", "Outputs memory problems report", special, func(c *Ctx) {
			c.W.Verbatim("txt", "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n")
		}),
		sub("help", FlagLoading|FlagStale, "", "O(1)", "Show helpful text about the different subcommands", nil, helpHandler(
			"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"DOCTOR",
			"    Return memory problems reports.",
			"MALLOC-STATS",
			"    Return internal statistics report from the memory allocator.",
			"PURGE",
			"    Attempt to purge dirty pages for reclamation by the allocator.",
			"STATS",
			"    Return information about the memory usage of the server.",
			"USAGE <key> [SAMPLES <count>]",
			"    Return memory in bytes used by <key> and its value. Nested values are",
			"    sampled up to <count> times (default: 5, 0 means sample all).",
			"HELP",
			"    Prints this help.",
		)),
		sub("malloc-stats", 0, "", slowAlloc, "Show allocator internal stats", special, memoryMallocStatsCommand),
		sub("purge", 0, "", slowAlloc, "Ask the allocator to release memory",
			[]string{"request_policy:all_shards", "response_policy:all_succeeded"}, func(c *Ctx) {
				debug.FreeOSMemory()
				c.W.OK()
			}),
		stats,
		usage,
	}
}

// MemorySizer is implemented by aggregate values kept in store.Value.Obj() so that MEMORY USAGE
// can account for them; samples bounds how many elements are visited (0 visits all), as
// Redis samples large aggregates.
type MemorySizer interface {
	MemoryUsage(samples int) int64
}

// entryOverhead is what one key costs besides its name and value bytes: the record in the
// shard's slab.
const entryOverhead = int64(unsafe.Sizeof(store.Entry{}))

func memoryUsageCommand(c *Ctx) {
	samples := int64(5)
	for i := 3; i < len(c.Args); i++ {
		if c.ArgIs(i, "samples") && i+1 < len(c.Args) {
			n, ok := c.Int(i + 1)
			if !ok {
				return
			}
			if n < 0 {
				c.Syntax()
				return
			}
			samples = n
			i++
			continue
		}
		c.Syntax()
		return
	}
	// Like Redis's OBJECT/MEMORY lookups, this inspects the key without touching its access
	// time.
	e := c.Lookup(c.Args[2])
	if e == nil {
		c.W.Null()
		return
	}
	size := entryOverhead + int64(len(e.Key())) + int64(cap(e.Val.Bytes()))
	if s, ok := e.Val.Obj().(MemorySizer); ok {
		size += s.MemoryUsage(int(min(samples, math.MaxInt32)))
	}
	c.W.Int(size)
}

// peakAllocated is the highest heap size MEMORY STATS has seen. It is process-wide because
// the Go heap is.
var peakAllocated atomic.Uint64

func memoryStatsCommand(c *Ctx) {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	allocated := samples[0].Value.Uint64()
	active := allocated + samples[1].Value.Uint64()
	resident := samples[2].Value.Uint64() - samples[3].Value.Uint64()
	for {
		p := peakAllocated.Load()
		if allocated <= p || peakAllocated.CompareAndSwap(p, allocated) {
			break
		}
	}
	peak := peakAllocated.Load()

	type dbStat struct{ id, keys, expires int }
	var dbs []dbStat
	totalKeys := 0
	for i := 0; i < c.Store.NumDBs(); i++ {
		db := c.Store.DB(i)
		st := dbStat{id: i}
		for j := 0; j < db.NumShards(); j++ {
			s := db.Shard(j)
			c.WithShard(s, func() { st.keys += s.Len() })
		}
		if st.keys > 0 {
			dbs = append(dbs, st)
			totalKeys += st.keys
		}
	}
	overhead := uint64(totalKeys) * uint64(entryOverhead)
	dataset := uint64(0)
	if allocated > overhead {
		dataset = allocated - overhead
	}
	perKey := uint64(0)
	if totalKeys > 0 {
		perKey = allocated / uint64(totalKeys)
	}
	pct := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) * 100 / float64(b)
	}
	ratio := func(a, b uint64) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}

	w := c.W
	w.Map(16 + len(dbs))
	kv := func(k string, v uint64) {
		w.BulkString(k)
		w.Int(int64(v))
	}
	kv("peak.allocated", peak)
	kv("total.allocated", allocated)
	kv("replication.backlog", 0)
	kv("clients.slaves", 0)
	kv("aof.buffer", 0)
	kv("lua.caches", 0)
	for _, d := range dbs {
		w.BulkString("db." + strconv.Itoa(d.id))
		w.Map(2)
		kv("overhead.hashtable.main", uint64(d.keys)*uint64(entryOverhead))
		kv("overhead.hashtable.expires", 0)
	}
	kv("overhead.total", overhead)
	kv("keys.count", uint64(totalKeys))
	kv("keys.bytes-per-key", perKey)
	kv("dataset.bytes", dataset)
	w.BulkString("dataset.percentage")
	w.Double(pct(dataset, allocated))
	w.BulkString("peak.percentage")
	w.Double(pct(allocated, peak))
	kv("allocator.allocated", allocated)
	kv("allocator.active", active)
	kv("allocator.resident", resident)
	w.BulkString("fragmentation")
	w.Double(ratio(resident, allocated))
}

// memoryMallocStatsCommand reports the Go runtime's view of memory, HotKV's equivalent of
// jemalloc's statistics.
func memoryMallocStatsCommand(c *Ctx) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var b strings.Builder
	b.WriteString("___ Begin Go runtime memory statistics ___\n")
	line := func(k string, v uint64) {
		b.WriteString(k)
		b.WriteString(": ")
		b.WriteString(strconv.FormatUint(v, 10))
		b.WriteByte('\n')
	}
	line("heap_alloc", ms.HeapAlloc)
	line("heap_inuse", ms.HeapInuse)
	line("heap_idle", ms.HeapIdle)
	line("heap_released", ms.HeapReleased)
	line("heap_objects", ms.HeapObjects)
	line("stack_inuse", ms.StackInuse)
	line("sys", ms.Sys)
	line("num_gc", uint64(ms.NumGC))
	line("next_gc", ms.NextGC)
	b.WriteString("--- End Go runtime memory statistics ---\n")
	c.W.Verbatim("txt", b.String()) // as Redis replies jemalloc's report
}

package command

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

func connectionCommands() []*Command {
	return []*Command{
		{Name: "ping", Arity: -1, Flags: FlagFast, ACL: []string{"fast", "connection"},
			Group: "connection", Since: "1.0.0", Complexity: "O(1)", Syntax: "[message]",
			Summary: "Ping the server", Handler: pingCommand,
			Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}},
		{Name: "echo", Arity: 2, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"fast", "connection"},
			Group: "connection", Since: "1.0.0", Complexity: "O(1)", Syntax: "message",
			Summary: "Echo the given string", Handler: echoCommand},
		// READONLY and READWRITE belong to cluster mode (reads from a replica): in Raft mode
		// READONLY lets a follower run the connection's reads (cluster.go); a standalone
		// server answers them with Redis's error, as a standalone Redis does.
		{Name: "readonly", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"fast", "connection"},
			Group: "cluster", Since: "3.0.0", Complexity: "O(1)",
			Summary: "Enables read queries for a connection to a cluster replica node",
			Doc:     "In Raft mode (docs/replication.md) it answers OK; standalone, Redis's `ERR This instance has cluster support disabled`.",
			Handler: readonlyCommand},
		{Name: "readwrite", Arity: 1, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"fast", "connection"},
			Group: "cluster", Since: "3.0.0", Complexity: "O(1)",
			Summary: "Disables read queries for a connection to a cluster replica node",
			Doc:     "In Raft mode (docs/replication.md) it answers OK; standalone, Redis's `ERR This instance has cluster support disabled`.",
			Handler: readwriteCommand},
		{Name: "quit", Arity: -1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy,
			ACL: []string{"fast", "connection"}, Group: "connection", Since: "1.0.0", Complexity: "O(1)",
			Summary: "Close the connection", Handler: quitCommand},
		{Name: "reset", Arity: 1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy,
			ACL: []string{"fast", "connection"}, Group: "connection", Since: "6.2.0", Complexity: "O(1)",
			Summary: "Reset the connection", Handler: resetCommand},
		{Name: "hello", Arity: -1, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy,
			ACL: []string{"fast", "connection"}, Group: "connection", Since: "6.0.0", Complexity: "O(1)",
			Syntax:  "[protover [AUTH username password] [SETNAME clientname]]",
			Summary: "Handshake with Redis", Handler: helloCommand},
		{Name: "select", Arity: 2, Flags: FlagLoading | FlagStale | FlagFast, ACL: []string{"fast", "connection"},
			Group: "connection", Since: "1.0.0", Complexity: "O(1)", Syntax: "index",
			Summary: "Change the selected database for the current connection", Handler: selectCommand},
		{Name: "auth", Arity: -2, Flags: FlagNoScript | FlagLoading | FlagStale | FlagFast | FlagNoAuth | FlagAllowBusy,
			ACL: []string{"fast", "connection"}, Group: "connection", Since: "1.0.0",
			Complexity: "O(N) where N is the number of passwords defined for the user", Syntax: "[username] password",
			Summary: "Authenticate to the server", Handler: authCommand},
		{Name: "client", Arity: -2, ACL: []string{"slow"}, Group: "connection", Since: "2.4.0",
			Complexity: "Depends on subcommand.", Summary: "A container for client connection commands",
			Subcommands: clientSubcommands()},
	}
}

func pingCommand(c *Ctx) {
	if c.Client.pubsubMode && c.W.Proto == 2 && len(c.Args) <= 2 {
		// In RESP2 pub/sub mode a reply must look like a message: ["pong", message].
		c.W.Array(2)
		c.W.BulkString("pong")
		if len(c.Args) == 2 {
			c.W.Bulk(c.Args[1])
		} else {
			c.W.BulkString("")
		}
		return
	}
	switch len(c.Args) {
	case 1:
		c.W.Simple("PONG")
	case 2:
		c.W.Bulk(c.Args[1])
	default:
		c.ArityError()
	}
}

func echoCommand(c *Ctx) { c.W.Bulk(c.Args[1]) }

func quitCommand(c *Ctx) {
	c.W.OK()
	c.Client.CloseAfterReply = true
}

// resetCommand returns the connection to its just-connected state, as Redis 6.2's RESET:
// no transaction or WATCHed keys, database 0, RESP2, no name, tracking and subscriptions off.
func resetCommand(c *Ctx) {
	if c.Client.monitor.Load() {
		// Redis's clearClientConnectionState: RESET leaves MONITOR mode too.
		c.Client.monitorTable.removeMonitor(c.Client)
		c.Client.monitor.Store(false)
	}
	c.Client.setMulti(multiState{})
	c.Store.Watches.Unwatch(&c.Client.watch)
	c.disableTracking()
	if c.Client.Sub != nil && c.Hub != nil {
		c.Hub.UnsubscribeAll(c.Client.Sub)
		c.Client.Sub.SetProto(2)
	}
	c.Client.pubsubMode = false
	c.Client.replyOff, c.Client.replySkipNext = false, false
	c.SelectDB(0)
	c.Client.Name = ""
	c.Client.NoEvict = false
	c.Client.NoTouch = false
	c.Client.ReadOnly = false
	c.W.Proto = 2
	if c.Client.ACLUser != nil {
		c.Client.SetDefaultAuth(c.Srv.ACL())
	}
	c.side.Proto = 2
	c.W.Simple("RESET")
}

func helloCommand(c *Ctx) {
	proto := c.W.Proto
	i := 1
	if len(c.Args) >= 2 {
		v, ok := strconvInt(c.Args[1])
		if !ok {
			c.Error("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.Error("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
		i = 2
	}
	var setName []byte
	hasName := false
	for ; i < len(c.Args); i++ {
		more := len(c.Args) - 1 - i
		switch {
		case c.ArgIs(i, "auth") && more >= 2:
			if !c.authenticate(string(c.Args[i+1]), string(c.Args[i+2])) {
				c.Error(errWrongPass)
				return
			}
			i += 2
		case c.ArgIs(i, "setname") && more >= 1:
			setName = c.Args[i+1]
			hasName = true
			i++
		default:
			c.Error("ERR Syntax error in HELLO option '" + string(c.Args[i]) + "'")
			return
		}
	}
	if !c.Client.Authenticated {
		c.Error("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if hasName {
		if msg := validClientName(setName); msg != "" {
			c.Error(msg)
			return
		}
		c.Client.Name = string(setName)
	}
	c.W.Proto = proto
	c.side.Proto = proto
	if c.Client.Sub != nil {
		c.Client.Sub.SetProto(proto)
	}
	c.W.Map(7)
	c.W.BulkString("server")
	c.W.BulkString("redis")
	c.W.BulkString("version")
	c.W.BulkString(c.Srv.Version())
	c.W.BulkString("proto")
	c.W.Int(int64(proto))
	c.W.BulkString("id")
	c.W.Int(c.Client.ID)
	c.W.BulkString("mode")
	c.W.BulkString("standalone")
	c.W.BulkString("role")
	c.W.BulkString("master")
	c.W.BulkString("modules")
	c.W.Array(0)
}

func strconvInt(b []byte) (int64, bool) {
	v, err := strconv.ParseInt(string(b), 10, 64)
	return v, err == nil
}

func selectCommand(c *Ctx) {
	v, ok := c.Int(1)
	if !ok {
		return
	}
	if v < 0 || v >= int64(c.Store.NumDBs()) {
		c.Error(ErrDBRange)
		return
	}
	c.SelectDB(int(v))
	c.W.OK()
}

func authCommand(c *Ctx) {
	if len(c.Args) > 3 {
		c.Syntax()
		return
	}
	user, pass := "default", string(c.Args[1])
	if len(c.Args) == 3 {
		user, pass = string(c.Args[1]), string(c.Args[2])
	} else if c.Srv.ACL().Default().NoPass() {
		// The old one-argument form keeps its old error when the default user has no password.
		c.Error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
		return
	}
	if !c.authenticate(user, pass) {
		c.Error(errWrongPass)
		return
	}
	c.W.OK()
}

const errWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// validClientName applies Redis's rule: no spaces, newlines or other special characters.
func validClientName(name []byte) string {
	for _, ch := range name {
		if ch < '!' || ch > '~' {
			return "ERR Client names cannot contain spaces, newlines or special characters."
		}
	}
	return ""
}

func clientSubcommands() []*Command {
	// Metadata is Redis 7.0.15's (src/commands/client-*.json), except SETINFO and NO-TOUCH,
	// which Redis 7.2 added and which carry 7.2's.
	sub := func(name string, arity int, flags Flag, since, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags | FlagNoScript | FlagLoading | FlagStale,
			ACL: []string{"slow", "connection"}, Since: since, Complexity: "O(1)",
			Syntax: syntax, Summary: summary, Handler: h}
	}
	list := sub("list", -2, FlagAdmin, "2.4.0", "[TYPE <NORMAL | MASTER | REPLICA | PUBSUB>] [ID client-id [client-id ...]]",
		"Get the list of client connections", clientListCommand)
	list.Complexity = "O(N) where N is the number of client connections"
	list.ACL = []string{"admin", "slow", "dangerous", "connection"}
	list.Tips = []string{"nondeterministic_output"}
	kill := sub("kill", -3, FlagAdmin, "2.4.0", "<ip:port | <[ID client-id] | [TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB>] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME <YES | NO>]> [[ID client-id] | [TYPE <NORMAL | MASTER | SLAVE | REPLICA | PUBSUB>] | [USER username] | [ADDR ip:port] | [LADDR ip:port] | [SKIPME <YES | NO>] ...]>",
		"Kill the connection of a client", clientKillCommand)
	kill.Complexity = "O(N) where N is the number of client connections"
	kill.ACL = []string{"admin", "slow", "dangerous", "connection"}
	info := sub("info", 2, 0, "6.2.0", "", "Returns information about the current client connection.", func(c *Ctx) {
		c.W.Verbatim("txt", clientInfoLine(c, c.Client)+"\n")
	})
	info.Tips = []string{"nondeterministic_output"}
	unblock := sub("unblock", -3, FlagAdmin, "5.0.0", "client-id [TIMEOUT | ERROR]",
		"Unblock a client blocked in a blocking command from a different connection", clientUnblockCommand)
	unblock.Complexity = "O(log N) where N is the number of client connections"
	unblock.ACL = []string{"admin", "slow", "dangerous", "connection"}
	pause := sub("pause", -3, FlagAdmin, "2.9.50", "timeout [WRITE | ALL]",
		"Stop processing commands from clients for some time", clientPauseCommand)
	pause.ACL = []string{"admin", "slow", "dangerous", "connection"}
	pause.Doc = "As in Redis 7.0: `ALL` (the default) holds every command of every client, `CLIENT UNPAUSE` included, until the timeout (milliseconds); " +
		"`WRITE` holds what may write or replicate: writes, `PUBLISH`, `PFCOUNT`, `EXEC` of a transaction that holds one, `EVAL`/`EVALSHA`/`FCALL` of a script " +
		"not declared `no-writes`. A held command waits in its connection (counted in `blocked_clients`, flag `b` in CLIENT LIST) and runs when the pause ends; " +
		"one from a client that disconnects meanwhile never runs. While clients are paused no key expires or is evicted (a read sees an expired key as gone and leaves it). " +
		"A second pause keeps the stricter mode and the later end. Not held: a Raft follower's applying of its group's log, and scripts' own calls. " +
		"The Envoy rate limit service answers `UNAVAILABLE` for a decision the pause holds, rather than keep the gRPC call waiting."
	unpause := sub("unpause", 2, FlagAdmin, "6.2.0", "", "Resume processing of clients that were paused",
		func(c *Ctx) {
			c.Srv.Table().pause.unpause()
			c.W.OK()
		})
	unpause.Complexity = "O(N) Where N is the number of paused clients"
	unpause.ACL = []string{"admin", "slow", "dangerous", "connection"}
	help := sub("help", 2, 0, "5.0.0", "", "Show helpful text about the different subcommands", clientHelpCommand)
	help.Flags &^= FlagNoScript
	return append([]*Command{
		sub("id", 2, 0, "5.0.0", "", "Returns the client ID for the current connection", func(c *Ctx) { c.W.Int(c.Client.ID) }),
		sub("setname", 3, 0, "2.6.9", "connection-name", "Set the current connection name", clientSetNameCommand),
		sub("getname", 2, 0, "2.6.9", "", "Get the current connection name", func(c *Ctx) {
			if c.Client.Name == "" {
				c.W.Null()
				return
			}
			c.W.BulkString(c.Client.Name)
		}),
		list,
		info,
		kill,
		pause,
		unpause,
		unblock,
		sub("setinfo", 4, 0, "7.2.0", "<LIB-NAME libname | LIB-VER libver>", "Sets information specific to the client or connection.", clientSetInfoCommand),
		sub("no-evict", 3, FlagAdmin, "7.0.0", "<ON | OFF>", "Set client eviction mode for the current connection", func(c *Ctx) {
			if on, ok := onOff(c); ok {
				c.Client.NoEvict = on
				c.W.OK()
			}
		}),
		sub("no-touch", 3, 0, "7.2.0", "<ON | OFF>", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.", func(c *Ctx) {
			if on, ok := onOff(c); ok {
				c.Client.NoTouch = on
				c.W.OK()
			}
		}),
		help,
	}, trackingSubcommands()...)
}

// clientPauseCommand is CLIENT PAUSE timeout [WRITE|ALL]: for timeout milliseconds, every
// command (ALL, the default) or every command that may write (WRITE) waits in its connection,
// as in Redis 7.0 (pause.go). A pause already on keeps the stricter mode and the later end.
func clientPauseCommand(c *Ctx) {
	if len(c.Args) > 4 {
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + string(c.Args[1]) + "'. Try CLIENT HELP.")
		return
	}
	mode := pauseAll
	if len(c.Args) == 4 {
		switch {
		case c.ArgIs(3, "write"):
			mode = pauseWrite
		case c.ArgIs(3, "all"):
		default:
			c.Error("ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	ms, err := strconv.ParseInt(string(c.Args[2]), 10, 64)
	if err != nil {
		c.Error("ERR timeout is not an integer or out of range")
		return
	}
	if ms < 0 {
		c.Error("ERR timeout is negative")
		return
	}
	end := int64(0) // 0: over at once, as in Redis
	if ms > 0 {
		now := time.Now().UnixMilli()
		end = now + min(ms, math.MaxInt64-now)
	}
	c.Srv.Table().pause.pause(end, mode)
	c.W.OK()
}

// clientUnblockCommand is CLIENT UNBLOCK: a client waiting in a blocking command returns at
// once, with its timeout reply (TIMEOUT, the default) or Redis's UNBLOCKED error (ERROR).
func clientUnblockCommand(c *Ctx) {
	if len(c.Args) > 4 {
		c.Error("ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.")
		return
	}
	id, ok := c.Int(2)
	if !ok {
		return
	}
	withError := false
	if len(c.Args) == 4 {
		switch {
		case c.ArgIs(3, "timeout"):
		case c.ArgIs(3, "error"):
			withError = true
		default:
			c.Error("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	for _, cl := range c.Srv.Clients() {
		if cl.ID == id {
			c.W.Int(memberFlag(cl.unblock(withError)))
			return
		}
	}
	c.W.Int(0)
}

func onOff(c *Ctx) (bool, bool) {
	switch {
	case c.ArgIs(2, "on"):
		return true, true
	case c.ArgIs(2, "off"):
		return false, true
	}
	c.Syntax()
	return false, false
}

func clientSetNameCommand(c *Ctx) {
	if msg := validClientName(c.Args[2]); msg != "" {
		c.Error(msg)
		return
	}
	c.Client.Name = string(c.Args[2])
	c.W.OK()
}

func clientSetInfoCommand(c *Ctx) {
	val := c.Args[3]
	for _, ch := range val {
		if ch < '!' || ch > '~' {
			c.Error("ERR " + string(c.Args[2]) + " cannot contain spaces, newlines or special characters.")
			return
		}
	}
	switch {
	case c.ArgIs(2, "lib-name"):
		c.Client.LibName = string(val)
	case c.ArgIs(2, "lib-ver"):
		c.Client.LibVer = string(val)
	default:
		c.Error("ERR Unrecognized option '" + string(c.Args[2]) + "'")
		return
	}
	c.W.OK()
}

// clientInfoLine renders one CLIENT LIST line with Redis 7.0's fields (and 7.2's lib-name and
// lib-ver, which CLIENT SETINFO sets). c is the connection asking: the fields only a
// connection's own goroutine knows exactly (argv-mem, obl: the command being run and the
// replies not yet written) are its own when it lists itself, and 0 for others, whose
// arguments and reply buffer are empty between their commands.
func clientInfoLine(c *Ctx, cl *Client) string {
	age := int64(time.Since(cl.CreatedAt).Seconds())
	idle := (time.Now().UnixMilli() - cl.LastInteraction.Load()) / 1000
	if idle < 0 {
		idle = 0
	}
	last := "NULL"
	if cmd := cl.LastCmd.Load(); cmd != nil {
		last = cmd.FullName()
	}
	proto := 2
	if cl.Writer != nil {
		proto = cl.Writer.Proto
	}
	var nsub, npsub, nssub, oll int
	var omem int64
	redir := int64(-1)
	var flags strings.Builder
	if cl.monitor.Load() {
		flags.WriteByte('O')
	}
	if cl.Sub != nil {
		nsub, npsub, nssub = cl.Sub.Counts()
		if nsub+npsub+nssub > 0 {
			flags.WriteByte('P')
		}
	}
	multi := cl.multiN.Load() - 1
	if multi >= 0 {
		flags.WriteByte('x')
	}
	cl.blockMu.Lock()
	if cl.blocked {
		flags.WriteByte('b')
	}
	cl.blockMu.Unlock()
	if cl.Sub != nil {
		var tf string
		tf, redir = trackingFlagsForList(cl)
		flags.WriteString(tf)
		omem = cl.Sub.Pending()
		oll = cl.Sub.QueuedChunks()
	}
	if cl == c.Client && cl.watch.Dirty() {
		flags.WriteByte('d')
	}
	if cl.CloseAfterReply {
		flags.WriteByte('c')
	}
	if cl.Flags == "U" { // a Unix-socket client, in Redis's place among the flags
		flags.WriteByte('U')
	}
	if cl.NoEvict {
		flags.WriteByte('e')
	}
	if flags.Len() == 0 {
		flags.WriteString(cl.Flags)
	}
	var argvMem, obl int64
	if cl == c.Client {
		for _, a := range c.Args {
			argvMem += int64(len(a))
		}
		obl = int64(c.W.Len())
	}
	qbuf, qcap := cl.Conn.QueryBuf.Load(), cl.Conn.QueryBufCap.Load()
	rbs := cl.Conn.ReplyBufCap.Load()
	multiMem := cl.multiMem.Load()
	events := "r"
	if omem > 0 {
		events = "rw"
	}
	totMem := qcap + argvMem + multiMem + rbs + omem
	return fmt.Sprintf("id=%d addr=%s laddr=%s fd=%d name=%s age=%d idle=%d flags=%s db=%d sub=%d psub=%d ssub=%d multi=%d qbuf=%d qbuf-free=%d argv-mem=%d multi-mem=%d rbs=%d rbp=%d obl=%d oll=%d omem=%d tot-mem=%d events=%s cmd=%s user=%s redir=%d resp=%d lib-name=%s lib-ver=%s",
		cl.ID, cl.Addr, cl.LAddr, cl.FD, cl.Name, age, idle, flags.String(), cl.DB, nsub, npsub, nssub, multi,
		qbuf, max(0, qcap-qbuf), argvMem, multiMem, rbs, rbs, obl, oll, omem, totMem, events, last, cl.User, redir, proto, cl.LibName, cl.LibVer)
}

// clientListCommand takes Redis 7.0's forms: no option, TYPE type, or ID id [id ...], which
// lists the clients in the order of the IDs given (a repeated ID repeats its line, an unknown
// one is left out).
func clientListCommand(c *Ctx) {
	clients := c.Srv.Clients()
	sortClients(clients)
	var b strings.Builder
	switch {
	case len(c.Args) == 2:
		for _, cl := range clients {
			b.WriteString(clientInfoLine(c, cl))
			b.WriteByte('\n')
		}
	case len(c.Args) == 4 && c.ArgIs(2, "type"):
		switch typ := strings.ToLower(string(c.Args[3])); typ {
		case "normal", "pubsub":
			// A client in pub/sub mode is of type pubsub, every other one normal.
			for _, cl := range clients {
				if cl.PubSubMode() == (typ == "pubsub") {
					b.WriteString(clientInfoLine(c, cl))
					b.WriteByte('\n')
				}
			}
		case "master", "replica", "slave":
			// Only normal and pub/sub clients exist until replication arrives.
		default:
			c.Error("ERR Unknown client type '" + string(c.Args[3]) + "'")
			return
		}
	case len(c.Args) > 3 && c.ArgIs(2, "id"):
		byID := make(map[int64]*Client, len(clients))
		for _, cl := range clients {
			byID[cl.ID] = cl
		}
		for _, arg := range c.Args[3:] {
			id, ok := strconvInt(arg)
			if !ok {
				c.Error("ERR Invalid client ID")
				return
			}
			if cl := byID[id]; cl != nil {
				b.WriteString(clientInfoLine(c, cl))
				b.WriteByte('\n')
			}
		}
	default:
		c.Syntax()
		return
	}
	c.W.Verbatim("txt", b.String())
}

func sortClients(cs []*Client) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j-1].ID > cs[j].ID; j-- {
			cs[j-1], cs[j] = cs[j], cs[j-1]
		}
	}
}

// clientKillCommand supports the old `CLIENT KILL addr` form and the filter form.
func clientKillCommand(c *Ctx) {
	if len(c.Args) == 3 {
		addr := string(c.Args[2])
		n := c.Srv.KillClients(func(cl *Client) bool { return cl.Addr == addr })
		if n == 0 {
			c.Error("ERR No such client")
			return
		}
		c.W.OK()
		return
	}
	var (
		id           int64
		addr, laddr  string
		user, typ    string
		skipMe       = true
		filterByType bool
	)
	// Options are read in order, as Redis 7.0 reads them: an option without its value is a
	// syntax error only when the parser reaches it.
	for i := 2; i < len(c.Args); i += 2 {
		if i+1 >= len(c.Args) {
			c.Syntax()
			return
		}
		v := string(c.Args[i+1])
		switch {
		case c.ArgIs(i, "id"):
			n, ok := strconvInt(c.Args[i+1])
			if !ok || n <= 0 {
				c.Error("ERR client-id should be greater than 0")
				return
			}
			id = n
		case c.ArgIs(i, "type"):
			typ = strings.ToLower(v)
			switch typ {
			case "normal", "master", "replica", "slave", "pubsub":
			default:
				c.Error("ERR Unknown client type '" + v + "'")
				return
			}
			filterByType = true
		case c.ArgIs(i, "addr"):
			addr = v
		case c.ArgIs(i, "laddr"):
			laddr = v
		case c.ArgIs(i, "user"):
			if c.Srv.ACL().Get(v) == nil {
				c.Error("ERR No such user '" + v + "'")
				return
			}
			user = v
		case c.ArgIs(i, "skipme"):
			switch strings.ToLower(v) {
			case "yes":
				skipMe = true
			case "no":
				skipMe = false
			default:
				c.Syntax()
				return
			}
		default:
			c.Syntax()
			return
		}
	}
	self := c.Client.ID
	killSelf := false
	n := c.Srv.KillClients(func(cl *Client) bool {
		if cl.ID == self {
			// Not now: Redis closes the calling client after its reply
			// (CLIENT_CLOSE_AFTER_COMMAND), so it learns how many were killed.
			killSelf = !skipMe && clientKillMatches(cl, id, addr, laddr, user, typ, filterByType)
			return false
		}
		return clientKillMatches(cl, id, addr, laddr, user, typ, filterByType)
	})
	if killSelf {
		n++
		c.Client.CloseAfterReply = true
	}
	c.W.Int(int64(n))
}

// clientKillMatches applies CLIENT KILL's filters to one client.
func clientKillMatches(cl *Client, id int64, addr, laddr, user, typ string, filterByType bool) bool {
	if id != 0 && cl.ID != id {
		return false
	}
	if addr != "" && cl.Addr != addr {
		return false
	}
	if laddr != "" && cl.LAddr != laddr {
		return false
	}
	if user != "" && cl.User != user {
		return false
	}
	if filterByType && !((typ == "normal" && !cl.PubSubMode()) || (typ == "pubsub" && cl.PubSubMode())) {
		return false
	}
	return true
}

// clientHelpCommand is Redis 7.0's CLIENT HELP text less the subcommands HotKV does not have
// yet (PAUSE, UNPAUSE), plus Redis 7.2's lines for SETINFO and NO-TOUCH.
func clientHelpCommand(c *Ctx) {
	lines := []string{
		"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CACHING (YES|NO)",
		"    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
		"GETREDIR",
		"    Return the client ID we are redirecting to when tracking is enabled.",
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"UNPAUSE",
		"    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]",
		"    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)",
		"    Control the replies sent to the current connection.",
		"SETINFO <option> <value>",
		"    Set client meta attr. Options are:",
		"    * LIB-NAME: the client lib name.",
		"    * LIB-VER: the client lib version.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"UNBLOCK <clientid> [TIMEOUT|ERROR]",
		"    Unblock the specified blocked client.",
		"TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
		"         [OPTIN] [OPTOUT] [NOLOOP]",
		"    Control server assisted client side caching.",
		"TRACKINGINFO",
		"    Report tracking status for the current connection.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		"NO-TOUCH (ON|OFF)",
		"    Will not touch LRU/LFU stats when this mode is on.",
		"HELP",
		"    Prints this help.",
	}
	c.W.Array(len(lines))
	for _, l := range lines {
		c.W.Simple(l)
	}
}

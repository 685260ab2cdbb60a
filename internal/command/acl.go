package command

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"github.com/hotkv/hotkv/internal/acl"
)

// This file is the ACL side of the command table: the catalog the acl package resolves rules
// against, the permission checks the dispatcher runs, and the ACL command.

// buildACLCatalog gives every command and subcommand an ACL ID, top-level commands by name
// and each container's subcommands by name right after it, which is also the order rule
// descriptions and ACL CAT list them in.
func buildACLCatalog(all []*Command) *acl.Catalog {
	var defs []acl.CommandDef
	for _, cmd := range all {
		parent := len(defs)
		cmd.aclID = parent
		defs = append(defs, acl.CommandDef{Name: cmd.Name, Categories: cmd.ACL, Parent: -1, NoAuth: cmd.Flags&FlagNoAuth != 0})
		subs := append([]*Command(nil), cmd.Subcommands...)
		sort.Slice(subs, func(i, j int) bool { return subs[i].Name < subs[j].Name })
		for _, s := range subs {
			s.aclID = len(defs)
			defs = append(defs, acl.CommandDef{Name: cmd.Name + "|" + s.Name, Categories: s.ACL, Parent: parent, NoAuth: s.Flags&FlagNoAuth != 0})
		}
	}
	return acl.NewCatalog(defs)
}

// ACLCatalog is the table's ACL catalog, for the server's user registry.
func (t *Table) ACLCatalog() *acl.Catalog { return t.acl }

// SetDefaultAuth puts the client in its just-connected state: the default user, authenticated
// unless the default user needs a password or is off (Redis's clientSetDefaultAuth).
func (cl *Client) SetDefaultAuth(r *acl.Registry) {
	cl.ACLUser = r.Default()
	cl.User = "default"
	cl.Authenticated = !r.AuthRequired()
}

// aclRequest describes a command line for a permission check: its ID, the argument first-arg
// rules read, its keys (computed only if a selector restricts keys) and its channels.
func aclRequest(cmd *Command, args [][]byte) *acl.Request {
	req := &acl.Request{ID: cmd.aclID, Args: args, FirstArg: 1}
	if cmd.parent != nil {
		req.FirstArg = 2
	}
	if hasKeyArgs(cmd) {
		req.Keys = func() []acl.KeyAccess { return aclKeys(cmd, args) }
	}
	req.Channels = aclChannels(cmd, args)
	return req
}

// hasKeyArgs is Redis's doesCommandHaveKeys: a key-finding function, or a key spec that finds
// real keys (not_key specs name other things, like MIGRATE's empty key placeholder).
func hasKeyArgs(cmd *Command) bool {
	if cmd.GetKeys != nil {
		return true
	}
	for _, ks := range cmd.keySpecs() {
		if ks.Flags&KSNotKey == 0 {
			return true
		}
	}
	return false
}

// aclKeys lists a command line's keys with the permission each needs: read for a key spec
// with the access flag, write for insert, update or delete (Redis's ACLSelectorCheckKey).
func aclKeys(cmd *Command, args [][]byte) []acl.KeyAccess {
	refs := cmd.KeyRefs(args)
	out := make([]acl.KeyAccess, 0, len(refs))
	for _, r := range refs {
		if r.Flags&KSNotKey != 0 || r.Pos >= len(args) {
			continue
		}
		out = append(out, acl.KeyAccess{Pos: r.Pos, Perm: keyPerm(r.Flags)})
	}
	return out
}

func keyPerm(f KeySpecFlag) uint8 {
	var p uint8
	if f&KSAccess != 0 {
		p |= acl.PermRead
	}
	if f&(KSInsert|KSDelete|KSUpdate) != 0 {
		p |= acl.PermWrite
	}
	return p
}

// aclChannels lists the channels a command publishes or subscribes to, from Redis's table of
// commands with channels (db.c commands_with_channels); unsubscribing needs no permission.
func aclChannels(cmd *Command, args [][]byte) []acl.ChannelRef {
	if cmd.parent != nil {
		return nil
	}
	var all, pattern bool
	switch cmd.Name {
	case "publish", "spublish":
		if len(args) > 1 {
			return []acl.ChannelRef{{Pos: 1}}
		}
		return nil
	case "subscribe", "ssubscribe":
		all = true
	case "psubscribe":
		all, pattern = true, true
	}
	if !all {
		return nil
	}
	out := make([]acl.ChannelRef, 0, len(args)-1)
	for i := 1; i < len(args); i++ {
		out = append(out, acl.ChannelRef{Pos: i, Pattern: pattern})
	}
	return out
}

// admit runs the authentication and permission checks of a command about to run or be queued,
// for a client that is not authenticated or whose user is restricted, and replies the
// rejection itself (Redis's processCommand: NOAUTH, then NOPERM).
func (c *Ctx) admit(cmd *Command, u *acl.User) bool {
	if !c.Client.Authenticated && cmd.Flags&FlagNoAuth == 0 && c.Srv.ACL().AuthRequired() {
		c.reject(cmd, "NOAUTH Authentication required.")
		return false
	}
	if u.Unrestricted() {
		return true
	}
	if c.Client.multi.active && !runsInMulti(cmd) &&
		(cmd.Flags&FlagNoMulti != 0 || (cmd.parent != nil && cmd.parent.Flags&FlagNoMulti != 0)) {
		return true // refused as not allowed in a transaction first, as Redis orders it
	}
	reason, pos := u.Check(c.Srv.Table().acl, aclRequest(cmd, c.Args))
	if reason == acl.Allowed {
		return true
	}
	ctx := acl.ContextToplevel
	if c.Client.multi.active {
		ctx = acl.ContextMulti
	}
	c.LogACLDenial(cmd, reason, pos, ctx, "")
	switch reason {
	case acl.DeniedCommand:
		c.reject(cmd, "NOPERM this user has no permissions to run the '"+cmd.FullName()+"' command")
	case acl.DeniedKey:
		c.reject(cmd, "NOPERM this user has no permissions to access one of the keys used as arguments")
	case acl.DeniedChannel:
		c.reject(cmd, "NOPERM this user has no permissions to access one of the channels used as arguments")
	}
	return false
}

// reject refuses a command before it runs (Redis's rejectCommand): the error counts as the
// command's rejected call, inside MULTI it aborts the transaction, and a refused EXEC
// discards its transaction and says why.
func (c *Ctx) reject(cmd *Command, msg string) {
	c.Cmd = cmd
	cmd.RejectedCalls.Add(1)
	if cmd.Name == "exec" && cmd.parent == nil {
		c.Client.setMulti(multiState{})
		c.Store.Watches.Unwatch(&c.Client.watch)
		c.Error("EXECABORT Transaction discarded because of: " + msg)
		return
	}
	if c.Client.multi.active {
		c.Client.multi.dirty = true
	}
	c.Error(msg)
}

// ACLCheck reports whether the client's user may run cmd with args: acl.Allowed, or the
// denial and the argument it concerns. Scripts check each redis.call with it.
func (c *Ctx) ACLCheck(cmd *Command, args [][]byte) (reason, pos int) {
	u := c.Client.ACLUser
	if u == nil || u.Unrestricted() {
		return acl.Allowed, 0
	}
	return u.Check(c.Srv.Table().acl, aclRequest(cmd, args))
}

// fullKeyAccess reports whether the client's user may run the current command and reach every
// key with perm, for options that touch keys the key specs do not name (SORT BY and GET).
func (c *Ctx) fullKeyAccess(perm uint8) bool {
	u := c.Client.ACLUser
	if u == nil || u.Unrestricted() {
		return true
	}
	return u.CheckCommandWithAllKeys(c.Srv.Table().acl, aclRequest(c.Cmd, c.Args), perm)
}

// CheckChannel reports whether the client's user may publish or subscribe to channel (or, with
// isPattern, subscribe to that pattern), for Pub/Sub code that checks channels itself.
func (c *Ctx) CheckChannel(channel []byte, isPattern bool) bool {
	u := c.Client.ACLUser
	return u == nil || u.CheckChannel(string(channel), isPattern)
}

// ACLErrorMessage is Redis's getAclErrorMessage: the end of a script's error for a denied
// call ("The user executing the script " + message).
func ACLErrorMessage(reason int) string {
	switch reason {
	case acl.DeniedCommand:
		return "can't run this command or subcommand"
	case acl.DeniedKey:
		return "can't access at least one of the keys mentioned in the command arguments"
	case acl.DeniedChannel:
		return "can't publish to the channel mentioned in the command"
	}
	return "lacking the permissions for the command"
}

// LogACLDenial adds an ACL LOG entry for a denial of cmd (its object: the command name, or the
// key or channel at pos); user overrides the client's user name (AUTH failures log the name
// tried).
func (c *Ctx) LogACLDenial(cmd *Command, reason, pos int, context, user string) {
	var object string
	switch reason {
	case acl.DeniedCommand:
		object = cmd.FullName()
	case acl.DeniedKey, acl.DeniedChannel:
		if pos < len(c.Args) {
			object = string(c.Args[pos])
		}
	case acl.DeniedAuth:
		object = string(c.Args[0])
	}
	if user == "" {
		user = c.Client.User
	}
	c.Srv.ACL().Log.Add(acl.LogEntry{
		Reason: acl.ReasonName(reason), Context: context, Object: object, Username: user,
		ClientInfo: clientInfoLine(c, c.Client),
	})
}

// authenticate is AUTH's and HELLO AUTH's check: on success the client becomes the user; a
// failure is logged (reason auth, object the command name, the user name tried).
func (c *Ctx) authenticate(user, pass string) bool {
	u := c.Srv.ACL().Authenticate(user, pass)
	if u == nil {
		ctx := acl.ContextToplevel
		if c.Client.multi.active {
			ctx = acl.ContextMulti
		}
		c.LogACLDenial(c.Cmd, acl.DeniedAuth, 0, ctx, user)
		return false
	}
	c.Client.ACLUser = u
	c.Client.User = u.Name()
	c.Client.Authenticated = true
	return true
}

// aclExecCheck re-checks a queued command at EXEC time, since the rules may have changed
// since it was queued, and replies Redis's error when it is no longer allowed.
func (c *Ctx) aclExecCheck(cmd *Command) bool {
	u := c.Client.ACLUser
	if u == nil || u.Unrestricted() {
		return true
	}
	reason, pos := u.Check(c.Srv.Table().acl, aclRequest(cmd, c.Args))
	if reason == acl.Allowed {
		return true
	}
	var why string
	switch reason {
	case acl.DeniedCommand:
		why = "no permission to execute the command or subcommand"
	case acl.DeniedKey:
		why = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	c.LogACLDenial(cmd, reason, pos, acl.ContextMulti, "")
	c.Error("NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why)
	return false
}

// ---- the ACL command ----

func aclCommands() []*Command {
	// Metadata is Redis 7.0.15's (src/commands/acl-*.json).
	sub := func(name string, arity int, flags Flag, cats []string, complexity, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags | FlagLoading | FlagStale, ACL: cats,
			Since: "6.0.0", Complexity: complexity, Syntax: syntax, Summary: summary, Handler: h}
	}
	admin := []string{"admin", "slow", "dangerous"}
	slow := []string{"slow"}
	const nUsers = "O(N). Where N is the number of configured users."
	dryrun := sub("dryrun", -4, FlagAdmin|FlagNoScript, admin, "O(1).", "username command [arg [arg ...]]",
		"Returns whether the user can execute the given command without executing the command.", aclDryRunCommand)
	dryrun.Since = "7.0.0"
	getuser := sub("getuser", 3, FlagAdmin|FlagNoScript, admin,
		"O(N). Where N is the number of password, command and pattern rules that the user has.", "username",
		"Get the rules for a specific ACL user", aclGetUserCommand)
	getuser.Doc = "History: 6.2.0 added Pub/Sub channel patterns; 7.0.0 added selectors and changed the format of key and channel patterns from a list to their rule representation."
	setuser := sub("setuser", -3, FlagAdmin|FlagNoScript, admin, "O(N). Where N is the number of rules provided.",
		"username [rule [rule ...]]", "Modify or create the rules for a specific ACL user", aclSetUserCommand)
	setuser.Doc = "History: 6.2.0 added Pub/Sub channel patterns; 7.0.0 added selectors and key based permissions."
	return []*Command{
		{Name: "acl", Arity: -2, ACL: []string{"slow"}, Group: "server", Since: "6.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for Access List Control commands ",
			Subcommands: []*Command{
				sub("cat", -2, FlagNoScript, slow, "O(1) since the categories and commands are a fixed set.", "[categoryname]",
					"List the ACL categories or the commands inside a category", aclCatCommand),
				sub("deluser", -3, FlagAdmin|FlagNoScript, admin, "O(1) amortized time considering the typical user.",
					"username [username ...]", "Remove the specified ACL users and the associated rules", aclDelUserCommand),
				dryrun,
				sub("genpass", -2, FlagNoScript, slow, "O(1)", "[bits]",
					"Generate a pseudorandom secure password to use for ACL users", aclGenPassCommand),
				getuser,
				sub("help", 2, 0, slow, "O(1)", "", "Show helpful text about the different subcommands", aclHelpCommand),
				sub("list", 2, FlagAdmin|FlagNoScript, admin, nUsers, "",
					"List the current ACL rules in ACL config file format", aclListCommand),
				sub("load", 2, FlagAdmin|FlagNoScript, admin, nUsers, "",
					"Reload the ACLs from the configured ACL file", aclLoadCommand),
				sub("log", -2, FlagAdmin|FlagNoScript, admin, "O(N) with N being the number of entries shown.",
					"[count | RESET]", "List latest events denied because of ACLs in place", aclLogCommand),
				sub("save", 2, FlagAdmin|FlagNoScript, admin, nUsers, "",
					"Save the current ACL rules in the configured ACL file", aclSaveCommand),
				setuser,
				sub("users", 2, FlagAdmin|FlagNoScript, admin, nUsers, "",
					"List the username of all the configured ACL rules", aclUsersCommand),
				sub("whoami", 2, FlagNoScript, slow, "O(1)", "",
					"Return the name of the user associated to the current connection", aclWhoAmICommand),
			}},
	}
}

// aclSubcommandSyntax is Redis's addReplySubcommandSyntaxError, for argument counts the
// subcommand's arity lets through but the subcommand does not take.
func aclSubcommandSyntax(c *Ctx) {
	c.Error("ERR unknown subcommand or wrong number of arguments for '" + truncate(string(c.Args[1]), 128) +
		"'. Try " + strings.ToUpper(string(c.Args[0])) + " HELP.")
}

func aclCatCommand(c *Ctx) {
	cat := c.Srv.Table().acl
	switch len(c.Args) {
	case 2:
		names := cat.Categories()
		c.W.Array(len(names))
		for _, n := range names {
			c.W.BulkString(n)
		}
	case 3:
		names, ok := cat.CategoryCommands(string(c.Args[2]))
		if !ok {
			c.Error("ERR Unknown category '" + truncate(string(c.Args[2]), 128) + "'")
			return
		}
		c.W.Array(len(names))
		for _, n := range names {
			c.W.BulkString(n)
		}
	default:
		aclSubcommandSyntax(c)
	}
}

func aclSetUserCommand(c *Ctx) {
	rules := make([]string, 0, len(c.Args)-3)
	for _, a := range c.Args[3:] {
		rules = append(rules, string(a))
	}
	u, revoked, err := c.Srv.ACL().SetUser(string(c.Args[2]), rules)
	if err != nil {
		// Redis's addReplyErrorSdsSafe: newlines in the echoed rule become spaces.
		msg := strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error())
		c.Error("ERR " + msg)
		return
	}
	if revoked {
		c.killRevokedSubscribers(u)
	}
	c.W.OK()
}

// killRevokedSubscribers disconnects the user's subscribers that hold a subscription the
// user's channel rules no longer allow.
func (c *Ctx) killRevokedSubscribers(u *acl.User) {
	self := c.Client
	c.Srv.KillClients(func(cl *Client) bool {
		if cl.ACLUser != u || cl.PubSubState == nil {
			return false
		}
		chans, shard, pats := cl.PubSubState()
		if len(chans)+len(shard)+len(pats) == 0 {
			return false
		}
		if u.ChannelsAllowedAfterRevoke(append(chans, shard...), pats) {
			return false
		}
		if cl == self {
			self.CloseAfterReply = true
			return false
		}
		return true
	})
}

// disconnectUsers closes the connections authenticated as any of users; the calling client, if
// it is one, gets this reply first (Redis's CLIENT_CLOSE_AFTER_COMMAND).
func (c *Ctx) disconnectUsers(users []*acl.User) {
	if len(users) == 0 {
		return
	}
	gone := make(map[*acl.User]bool, len(users))
	for _, u := range users {
		gone[u] = true
	}
	self := c.Client
	c.Srv.KillClients(func(cl *Client) bool {
		if cl.ACLUser == nil || !gone[cl.ACLUser] {
			return false
		}
		if cl == self {
			self.CloseAfterReply = true
			return false
		}
		return true
	})
	if gone[self.ACLUser] {
		// Defensive, as Redis: nothing more runs as the deleted user.
		self.ACLUser = c.Srv.ACL().Default()
		self.User = "default"
		self.Authenticated = false
	}
}

func aclDelUserCommand(c *Ctx) {
	names := make([]string, 0, len(c.Args)-2)
	for _, a := range c.Args[2:] {
		names = append(names, string(a))
	}
	deleted, err := c.Srv.ACL().DelUsers(names)
	if err != nil {
		c.Error("ERR " + err.Error())
		return
	}
	c.disconnectUsers(deleted)
	c.W.Int(int64(len(deleted)))
}

func aclGetUserCommand(c *Ctx) {
	reg := c.Srv.ACL()
	u := reg.Get(string(c.Args[2]))
	if u == nil {
		c.W.Null()
		return
	}
	info := reg.Info(u)
	c.W.Map(6)
	c.W.BulkString("flags")
	c.W.Set(len(info.Flags))
	for _, f := range info.Flags {
		c.W.BulkString(f)
	}
	c.W.BulkString("passwords")
	c.W.Array(len(info.Passwords))
	for _, p := range info.Passwords {
		c.W.BulkString(p)
	}
	writeSelectorInfo(c, info.Root)
	c.W.BulkString("selectors")
	c.W.Array(len(info.Selectors))
	for _, s := range info.Selectors {
		c.W.Map(3)
		writeSelectorInfo(c, s)
	}
}

func writeSelectorInfo(c *Ctx, s acl.SelectorInfo) {
	c.W.BulkString("commands")
	c.W.BulkString(s.Commands)
	c.W.BulkString("keys")
	c.W.BulkString(s.Keys)
	c.W.BulkString("channels")
	c.W.BulkString(s.Channels)
}

func aclListCommand(c *Ctx) {
	lines := c.Srv.ACL().List()
	c.W.Array(len(lines))
	for _, l := range lines {
		c.W.BulkString(l)
	}
}

func aclUsersCommand(c *Ctx) {
	names := c.Srv.ACL().Names()
	c.W.Array(len(names))
	for _, n := range names {
		c.W.BulkString(n)
	}
}

func aclWhoAmICommand(c *Ctx) {
	if c.Client.ACLUser == nil {
		c.W.Null()
		return
	}
	c.W.BulkString(c.Client.User)
}

const errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."

func aclLoadCommand(c *Ctx) {
	file := c.Srv.ACLFile()
	if file == "" {
		c.Error(errNoACLFile)
		return
	}
	replaced, err := c.Srv.ACL().LoadFile(file, file)
	if err != nil {
		c.Error("ERR " + err.Error())
		return
	}
	c.disconnectUsers(replaced)
	c.W.OK()
}

func aclSaveCommand(c *Ctx) {
	file := c.Srv.ACLFile()
	if file == "" {
		c.Error(errNoACLFile)
		return
	}
	if err := c.Srv.ACL().SaveFile(file); err != nil {
		c.Error("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
		return
	}
	c.W.OK()
}

func aclGenPassCommand(c *Ctx) {
	if len(c.Args) > 3 {
		aclSubcommandSyntax(c)
		return
	}
	bits := int64(256)
	if len(c.Args) == 3 {
		v, ok := c.Int(2)
		if !ok {
			return
		}
		bits = v
	}
	if bits <= 0 || bits > 4096 {
		c.Error("ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to 4096")
		return
	}
	chars := (bits + 3) / 4
	buf := make([]byte, (chars+1)/2)
	_, _ = rand.Read(buf)
	c.W.BulkString(hex.EncodeToString(buf)[:chars])
}

func aclLogCommand(c *Ctx) {
	if len(c.Args) > 3 {
		aclSubcommandSyntax(c)
		return
	}
	count := int64(10)
	log := &c.Srv.ACL().Log
	if len(c.Args) == 3 {
		if c.ArgIs(2, "reset") {
			log.Reset()
			c.W.OK()
			return
		}
		v, ok := c.Int(2)
		if !ok {
			return
		}
		count = max(v, 0)
	}
	entries := log.Entries(int(min(count, 1<<30)))
	now := time.Now().UnixMilli()
	c.W.Array(len(entries))
	for _, e := range entries {
		c.W.Map(7)
		c.W.BulkString("count")
		c.W.Int(e.Count)
		c.W.BulkString("reason")
		c.W.BulkString(e.Reason)
		c.W.BulkString("context")
		c.W.BulkString(e.Context)
		c.W.BulkString("object")
		c.W.BulkString(e.Object)
		c.W.BulkString("username")
		c.W.BulkString(e.Username)
		c.W.BulkString("age-seconds")
		c.W.Double(float64(now-e.Time) / 1000)
		c.W.BulkString("client-info")
		c.W.BulkString(e.ClientInfo)
	}
}

// lookupForDryRun finds the command a command line names, a subcommand when the command has
// them (Redis's lookupCommand on argv).
func lookupForDryRun(t *Table, args [][]byte) *Command {
	cmd := t.Lookup(args[0])
	if cmd == nil || len(cmd.Subcommands) == 0 || len(args) == 1 {
		return cmd
	}
	return cmd.subByName[strings.ToLower(string(args[1]))]
}

func aclDryRunCommand(c *Ctx) {
	u := c.Srv.ACL().Get(string(c.Args[2]))
	if u == nil {
		c.Error("ERR User '" + string(c.Args[2]) + "' not found")
		return
	}
	args := c.Args[3:]
	t := c.Srv.Table()
	cmd := lookupForDryRun(t, args)
	if cmd == nil {
		c.Error("ERR Command '" + string(args[0]) + "' not found")
		return
	}
	if !CheckArity(cmd.Arity, len(args)) {
		c.Error("ERR wrong number of arguments for '" + cmd.FullName() + "' command")
		return
	}
	reason, pos := u.Check(t.acl, aclRequest(cmd, args))
	switch reason {
	case acl.Allowed:
		c.W.OK()
	case acl.DeniedCommand:
		c.W.BulkString("This user has no permissions to run the '" + cmd.FullName() + "' command")
	case acl.DeniedKey:
		c.W.BulkString("This user has no permissions to access the '" + string(args[pos]) + "' key")
	case acl.DeniedChannel:
		c.W.BulkString("This user has no permissions to access the '" + string(args[pos]) + "' channel")
	}
}

func aclHelpCommand(c *Ctx) {
	lines := []string{
		strings.ToUpper(string(c.Args[0])) + " <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"CAT [<category>]",
		"    List all commands that belong to <category>, or all command categories",
		"    when no category is specified.",
		"DELUSER <username> [<username> ...]",
		"    Delete a list of users.",
		"DRYRUN <username> <command> [<arg> ...]",
		"    Returns whether the user can execute the given command without executing the command.",
		"GETUSER <username>",
		"    Get the user's details.",
		"GENPASS [<bits>]",
		"    Generate a secure 256-bit user password. The optional `bits` argument can",
		"    be used to specify a different size.",
		"LIST",
		"    Show users details in config file format.",
		"LOAD",
		"    Reload users from the ACL file.",
		"LOG [<count> | RESET]",
		"    Show the ACL log entries.",
		"SAVE",
		"    Save the current config to the ACL file.",
		"SETUSER <username> <attribute> [<attribute> ...]",
		"    Create or modify a user with the specified attributes.",
		"USERS",
		"    List all the registered usernames.",
		"WHOAMI",
		"    Return the current connection username.",
		"HELP",
		"    Prints this help.",
	}
	c.W.Array(len(lines))
	for _, l := range lines {
		c.W.Simple(l)
	}
}

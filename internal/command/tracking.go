package command

import (
	"strings"

	"github.com/hotkv/hotkv/internal/pubsub"
	"github.com/hotkv/hotkv/internal/store"
)

// Client-side caching (CLIENT TRACKING, CACHING, TRACKINGINFO, GETREDIR), CLIENT REPLY, and the
// "key changed" signal that WATCH and tracking share (Redis's signalModifiedKey). The tracking
// table is internal/pubsub's Tracking.
//
// A command's invalidations are collected in its Ctx's pubsub.Batch and sent after the command
// is done (afterCommand, called by Exec once the locks are released): the executing
// connection's own invalidations then follow its reply, as in Redis, and other clients get them
// no later than they could observe the change. Broadcast (BCAST) clients get one message per
// prefix with every key the command changed.

func trackingSubcommands() []*Command {
	sub := func(name string, arity int, since, syntax, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagNoScript | FlagLoading | FlagStale,
			ACL: []string{"slow", "connection"}, Since: since, Complexity: complexity,
			Syntax: syntax, Summary: summary, Handler: h}
	}
	return []*Command{
		sub("tracking", -3, "6.0.0", "<ON | OFF> [REDIRECT client-id] [PREFIX prefix [PREFIX prefix ...]] [BCAST] [OPTIN] [OPTOUT] [NOLOOP]",
			"O(1). Some options may introduce additional complexity.", "Enable or disable server assisted client side caching support",
			clientTrackingCommand),
		sub("caching", 3, "6.0.0", "<YES | NO>", "O(1)", "Instruct the server about tracking or not keys in the next request",
			clientCachingCommand),
		sub("trackinginfo", 2, "6.2.0", "", "O(1)", "Return information about server assisted client side caching for the current connection",
			clientTrackingInfoCommand),
		sub("getredir", 2, "6.0.0", "", "O(1)", "Get tracking notifications redirection client ID if any",
			clientGetRedirCommand),
		sub("reply", 3, "3.2.0", "<ON | OFF | SKIP>", "O(1)", "Instruct the server whether to reply to commands",
			clientReplyCommand),
	}
}

// trackingActive reports whether any client tracks keys; one atomic load.
func (c *Ctx) trackingActive() bool { return c.Hub != nil && c.Hub.Tracking.Active() }

// batch is the current command's invalidation batch, opened on first use.
func (c *Ctx) batch() *pubsub.Batch {
	if !c.invalOpen {
		c.inval.Reset(c.Client.Sub)
		c.invalOpen = true
		c.post = true
	}
	return &c.inval
}

// keyChanged is Redis's signalModifiedKey: key of db was written, deleted or expired by this
// command. WATCH marks its watchers dirty; client-side caching invalidates it. The caller
// holds the key's shard.
func (c *Ctx) keyChanged(db *store.DB, key []byte) {
	c.Store.Watches.Touch(db, key)
	if c.trackingActive() {
		c.Hub.Tracking.Invalidate(key, c.batch())
	}
}

// trackingFlushed tells tracking clients that every key is invalid (FLUSHALL, FLUSHDB).
func (c *Ctx) trackingFlushed() {
	if c.trackingActive() {
		c.Hub.Tracking.FlushAll(c.batch())
	}
}

// roScript reports EVAL_RO, EVALSHA_RO and FCALL_RO: read-only commands whose keys Redis's
// call() does not track itself; the reads their scripts run track the declared keys instead.
func roScript(cmd *Command) bool {
	switch cmd.Name {
	case "eval_ro", "evalsha_ro", "fcall_ro":
		return cmd.parent == nil
	}
	return false
}

// trackRead remembers the keys a read-only command read, for a connection tracking in the
// default mode (Redis's trackingRememberKeys): not in BCAST mode, and in OPTIN (OPTOUT) mode
// only right after CLIENT CACHING YES (unless after CLIENT CACHING NO).
func (c *Ctx) trackRead(cmd *Command) { c.trackKeys(cmd, c.Args) }

// TrackScriptRead is the scripting engine's hook: when a script this connection runs executes
// a read-only command, Redis 7.0 remembers the keys the script declared (the key arguments of
// EVAL, EVALSHA or FCALL), not those the inner command read, for client-side caching. Call it
// with the script command and its arguments (EVAL_RO, EVALSHA_RO and FCALL_RO included: the
// dispatcher does not track those itself, roScript); the inner command itself should not be
// tracked on its own (run it with a Ctx whose Client does not track).
func (c *Ctx) TrackScriptRead(script *Command, args [][]byte) {
	if c.Client.tracking {
		c.trackKeys(script, args)
	}
}

func (c *Ctx) trackKeys(cmd *Command, args [][]byte) {
	cl := c.Client
	if cl.trackBCast || cl.Sub == nil || c.Hub == nil || cmd.Flags&FlagPubSub != 0 {
		return
	}
	if (cl.trackOptIn && !cl.caching) || (cl.trackOptOut && cl.caching) {
		return
	}
	idx := cmd.KeyIndexes(args)
	if len(idx) == 0 {
		return
	}
	keys := make([][]byte, 0, len(idx))
	for _, i := range idx {
		if i < len(args) {
			keys = append(keys, args[i])
		}
	}
	c.Hub.Tracking.Remember(cl.Sub, keys)
}

// afterCommand sends what the command left for after its reply: its invalidations.
func (c *Ctx) afterCommand() {
	c.post = false
	if c.invalOpen {
		c.invalOpen = false
		c.Hub.Tracking.Flush(&c.inval, c.local())
	}
}

func clientTrackingCommand(c *Ctx) {
	var (
		o        pubsub.Options
		prefixes []string
	)
	for j := 3; j < len(c.Args); j++ {
		more := len(c.Args) - 1 - j
		switch {
		case c.ArgIs(j, "redirect") && more > 0:
			j++
			if o.Redirect != 0 {
				c.Error("ERR A client can only redirect to a single other client")
				return
			}
			id, ok := c.Int(j)
			if !ok {
				return
			}
			if c.Hub == nil || c.Hub.Lookup(id) == nil {
				c.Error("ERR The client ID you want redirect to does not exist")
				return
			}
			o.Redirect = id
		case c.ArgIs(j, "bcast"):
			o.BCast = true
		case c.ArgIs(j, "optin"):
			o.OptIn = true
		case c.ArgIs(j, "optout"):
			o.OptOut = true
		case c.ArgIs(j, "noloop"):
			o.NoLoop = true
		case c.ArgIs(j, "prefix") && more > 0:
			j++
			prefixes = append(prefixes, string(c.Args[j]))
		default:
			c.Syntax()
			return
		}
	}
	sub := c.Client.Sub
	switch {
	case c.ArgIs(2, "on"):
		if sub == nil {
			c.Error("ERR CLIENT TRACKING is not available for this client")
			return
		}
		cur := c.Hub.Tracking.Info(sub)
		if !o.BCast && len(prefixes) > 0 {
			c.Error("ERR PREFIX option requires BCAST mode to be enabled")
			return
		}
		if cur.On && cur.BCast != o.BCast {
			c.Error("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if o.BCast && (o.OptIn || o.OptOut) {
			c.Error("ERR OPTIN and OPTOUT are not compatible with BCAST")
			return
		}
		if o.OptIn && o.OptOut {
			c.Error("ERR You can't specify both OPTIN mode and OPTOUT mode")
			return
		}
		if (o.OptIn && cur.OptOut) || (o.OptOut && cur.OptIn) {
			c.Error("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
			return
		}
		if o.BCast {
			if msg := prefixCollision(cur.Prefixes, prefixes); msg != "" {
				c.Error(msg)
				return
			}
		}
		o.Prefixes = prefixes
		c.Hub.Tracking.Enable(sub, o)
		cl := c.Client
		cl.tracking, cl.trackBCast, cl.trackOptIn, cl.trackOptOut = true, o.BCast, o.OptIn, o.OptOut
	case c.ArgIs(2, "off"):
		c.disableTracking()
	default:
		c.Syntax()
		return
	}
	c.W.OK()
}

// disableTracking turns tracking off for the connection (CLIENT TRACKING OFF, RESET).
func (c *Ctx) disableTracking() {
	cl := c.Client
	if cl.Sub != nil && c.Hub != nil {
		c.Hub.Tracking.Disable(cl.Sub)
	}
	cl.tracking, cl.trackBCast, cl.trackOptIn, cl.trackOptOut, cl.caching = false, false, false, false, false
}

// prefixCollision applies Redis's checkPrefixCollisionsOrReply: no two prefixes of a client
// may both match one key, whether both are new or one it has already.
func prefixCollision(have, add []string) string {
	overlap := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range add {
		for _, h := range have {
			if overlap(h, p) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + h + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range add[i+1:] {
			if overlap(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

func clientCachingCommand(c *Ctx) {
	cl := c.Client
	if !cl.tracking {
		c.Error("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
		return
	}
	switch {
	case c.ArgIs(2, "yes"):
		if !cl.trackOptIn {
			c.Error("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
			return
		}
	case c.ArgIs(2, "no"):
		if !cl.trackOptOut {
			c.Error("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
			return
		}
	default:
		c.Syntax()
		return
	}
	cl.caching = true
	c.W.OK()
}

func clientTrackingInfoCommand(c *Ctx) {
	var info pubsub.Info
	if c.Client.Sub != nil && c.Hub != nil {
		info = c.Hub.Tracking.Info(c.Client.Sub)
	}
	flags := []string{"off"}
	if info.On {
		flags[0] = "on"
	}
	if info.BCast {
		flags = append(flags, "bcast")
	}
	if info.OptIn {
		flags = append(flags, "optin")
		if c.Client.caching {
			flags = append(flags, "caching-yes")
		}
	}
	if info.OptOut {
		flags = append(flags, "optout")
		if c.Client.caching {
			flags = append(flags, "caching-no")
		}
	}
	if info.NoLoop {
		flags = append(flags, "noloop")
	}
	if info.BrokenRedirect {
		flags = append(flags, "broken_redirect")
	}
	c.W.Map(3)
	c.W.BulkString("flags")
	c.W.Set(len(flags))
	for _, f := range flags {
		c.W.BulkString(f)
	}
	c.W.BulkString("redirect")
	if info.On {
		c.W.Int(info.Redirect)
	} else {
		c.W.Int(-1)
	}
	c.W.BulkString("prefixes")
	c.W.Array(len(info.Prefixes))
	for _, p := range info.Prefixes {
		c.W.BulkString(p)
	}
}

func clientGetRedirCommand(c *Ctx) {
	if c.Client.Sub == nil || c.Hub == nil || !c.Client.tracking {
		c.W.Int(-1)
		return
	}
	c.W.Int(c.Hub.Tracking.Info(c.Client.Sub).Redirect)
}

// clientReplyCommand is CLIENT REPLY: OFF drops every reply until ON, SKIP drops the next
// command's; OFF and SKIP themselves reply nothing, as in Redis. Pushes are never dropped.
func clientReplyCommand(c *Ctx) {
	cl := c.Client
	switch {
	case c.ArgIs(2, "on"):
		cl.replyOff, cl.replySkip = false, false
		c.W.OK()
	case c.ArgIs(2, "off"):
		cl.replyOff = true
	case c.ArgIs(2, "skip"):
		if !cl.replyOff {
			cl.replySkipNext = true
		}
	default:
		c.Syntax()
	}
}

// trackingFlagsForList returns CLIENT LIST's tracking flags (t, R, B) and redir field.
func trackingFlagsForList(cl *Client) (string, int64) {
	if cl.Sub == nil {
		return "", -1
	}
	info := cl.Sub.TrackingInfo()
	if !info.On {
		return "", -1
	}
	var b strings.Builder
	b.WriteByte('t')
	if info.BrokenRedirect {
		b.WriteByte('R')
	}
	if info.BCast {
		b.WriteByte('B')
	}
	return b.String(), info.Redirect
}

package command

import (
	"github.com/hotkv/hotkv/internal/pubsub"
	"github.com/hotkv/hotkv/internal/resp"
)

// Pub/sub (SUBSCRIBE, PUBLISH, ...) and keyspace notifications. The registry and the delivery
// queues live in internal/pubsub; this file holds the commands, the RESP2 subscribed-mode rule
// and the notify hook that write commands call.
//
// Replies and pushes: a connection's pushes from other connections wait in its outbox, and once
// it has one, its own replies go through that queue too (pubsub.Sub.Flush), so everything
// arrives in the order it was produced. Pushes produced by the connection's own command (a
// message it publishes to itself, an event of its own write, a subscription confirmation) are
// written into its reply buffer through pushWriter, which keeps them when CLIENT REPLY OFF or
// SKIP drops the command's reply, as Redis always sends pushes.
//
// PUBLISH and SPUBLISH change no data and journal no effect: Redis propagates them to
// replicas but never to its AOF, so replaying a log must not publish again. Replication, when
// it comes, should carry them outside the effect journal.

func pubsubCommands() []*Command {
	sub := func(name string, arity int, syntax, since, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagPubSub | FlagNoScript | FlagLoading | FlagStale,
			ACL: []string{"pubsub", "slow"}, Group: "pubsub", Since: since, Complexity: complexity,
			Syntax: syntax, Summary: summary, Handler: h}
	}
	shardKeys := func(c *Command, last int) *Command {
		// Shard channels are declared as not_key "keys" so that cluster clients route them;
		// they name no key, so the dispatcher takes no lock for them (Global).
		c.FirstKey, c.LastKey, c.Step = 1, last, 1
		if last == 0 {
			c.LastKey = 1 // the legacy triple counts from the start, the key spec from the first key
		}
		c.KeySpecs = []KeySpec{{Flags: KSNotKey, Begin: 1, LastKey: last, Step: 1}}
		c.Global = true
		return c
	}
	publish := &Command{Name: "publish", Arity: 3, Flags: FlagPubSub | FlagLoading | FlagStale | FlagFast,
		ACL: []string{"pubsub", "fast"}, Group: "pubsub", Since: "2.0.0",
		Complexity: "O(N+M) where N is the number of clients subscribed to the receiving channel and M is the total number of subscribed patterns (by any client).",
		Syntax:     "channel message", Summary: "Post a message to a channel", Handler: publishCommand,
		Doc: "Delivery never waits for a subscriber: the message is queued on each subscriber's connection, whose writer sends it. " +
			"Every subscriber receives messages in the order the PUBLISH calls returned. A subscriber whose unsent output goes over " +
			"`client-output-buffer-limit pubsub` is disconnected."}
	spublish := shardKeys(&Command{Name: "spublish", Arity: 3, Flags: FlagPubSub | FlagLoading | FlagStale | FlagFast,
		ACL: []string{"pubsub", "fast"}, Group: "pubsub", Since: "7.0.0",
		Complexity: "O(N) where N is the number of clients subscribed to the receiving shard channel.",
		Syntax:     "shardchannel message", Summary: "Post a message to a shard channel", Handler: spublishCommand}, 0)
	psub := func(name string, arity int, syntax, complexity, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagPubSub | FlagLoading | FlagStale,
			ACL: []string{"pubsub", "slow"}, Group: "pubsub", Complexity: complexity, Syntax: syntax,
			Summary: summary, Handler: h}
	}
	channels := psub("channels", -2, "[pattern]",
		"O(N) where N is the number of active channels, and assuming constant time pattern matching (relatively short channels and patterns)",
		"List active channels", func(c *Ctx) { pubsubChannelsCommand(c, pubsub.KindChannel) })
	channels.Since = "2.8.0"
	numsub := psub("numsub", -2, "[channel [channel ...]]", "O(N) for the NUMSUB subcommand, where N is the number of requested channels",
		"Get the count of subscribers for channels", func(c *Ctx) { pubsubNumSubCommand(c, pubsub.KindChannel) })
	numsub.Since = "2.8.0"
	numpat := psub("numpat", 2, "", "O(1)", "Get the count of unique patterns pattern subscriptions", func(c *Ctx) {
		_, p, _ := c.Hub.Stats()
		c.W.Int(int64(p))
	})
	numpat.Since = "2.8.0"
	shardchannels := psub("shardchannels", -2, "[pattern]",
		"O(N) where N is the number of active shard channels, and assuming constant time pattern matching (relatively short shard channels).",
		"List active shard channels", func(c *Ctx) { pubsubChannelsCommand(c, pubsub.KindShard) })
	shardchannels.Since = "7.0.0"
	shardnumsub := psub("shardnumsub", -2, "[shardchannel [shardchannel ...]]",
		"O(N) for the SHARDNUMSUB subcommand, where N is the number of requested shard channels",
		"Get the count of subscribers for shard channels", func(c *Ctx) { pubsubNumSubCommand(c, pubsub.KindShard) })
	shardnumsub.Since = "7.0.0"
	help := &Command{Name: "help", Arity: 2, Flags: FlagLoading | FlagStale, ACL: []string{"slow"}, Group: "pubsub",
		Since: "6.2.0", Complexity: "O(1)", Summary: "Show helpful text about the different subcommands",
		Handler: helpHandler(
			"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"CHANNELS [<pattern>]",
			"    Return the currently active channels matching a <pattern> (default: '*').",
			"NUMPAT",
			"    Return number of subscriptions to patterns.",
			"NUMSUB [<channel> ...]",
			"    Return the number of subscribers for the specified channels, excluding",
			"    pattern subscriptions(default: no channels).",
			"SHARDCHANNELS [<pattern>]",
			"    Return the currently active shard level channels matching a <pattern> (default: '*').",
			"SHARDNUMSUB [<shardchannel> ...]",
			"    Return the number of subscribers for the specified shard level channel(s)",
			"HELP",
			"    Prints this help.",
		)}
	return []*Command{
		sub("subscribe", -2, "channel [channel ...]", "2.0.0", "O(N) where N is the number of channels to subscribe to.",
			"Listen for messages published to the given channels", func(c *Ctx) { subscribeCommand(c, pubsub.KindChannel) }),
		sub("unsubscribe", -1, "[channel [channel ...]]", "2.0.0", "O(N) where N is the number of clients already subscribed to a channel.",
			"Stop listening for messages posted to the given channels", func(c *Ctx) { unsubscribeCommand(c, pubsub.KindChannel) }),
		sub("psubscribe", -2, "pattern [pattern ...]", "2.0.0", "O(N) where N is the number of patterns the client is already subscribed to.",
			"Listen for messages published to channels matching the given patterns", func(c *Ctx) { subscribeCommand(c, pubsub.KindPattern) }),
		sub("punsubscribe", -1, "[pattern [pattern ...]]", "2.0.0",
			"O(N+M) where N is the number of patterns the client is already subscribed and M is the number of total patterns subscribed in the system (by any client).",
			"Stop listening for messages posted to channels matching the given patterns", func(c *Ctx) { unsubscribeCommand(c, pubsub.KindPattern) }),
		shardKeys(sub("ssubscribe", -2, "shardchannel [shardchannel ...]", "7.0.0", "O(N) where N is the number of shard channels to subscribe to.",
			"Listen for messages published to the given shard channels", func(c *Ctx) { subscribeCommand(c, pubsub.KindShard) }), -1),
		shardKeys(sub("sunsubscribe", -1, "[shardchannel [shardchannel ...]]", "7.0.0", "O(N) where N is the number of clients already subscribed to a shard channel.",
			"Stop listening for messages posted to the given shard channels", func(c *Ctx) { unsubscribeCommand(c, pubsub.KindShard) }), -1),
		publish,
		spublish,
		{Name: "pubsub", Arity: -2, ACL: []string{"slow"}, Group: "pubsub", Since: "2.8.0",
			Complexity: "Depends on subcommand.", Summary: "A container for Pub/Sub commands",
			Subcommands: []*Command{channels, help, numsub, numpat, shardnumsub, shardchannels}},
	}
}

// allowedSubscribed reports whether a RESP2 connection in pub/sub mode may run cmd (Redis's
// processCommand: only the (P|S)(UN)SUBSCRIBE family, PING, QUIT and RESET).
func allowedSubscribed(cmd *Command) bool {
	if cmd.parent != nil {
		return false
	}
	switch cmd.Name {
	case "subscribe", "ssubscribe", "psubscribe", "unsubscribe", "sunsubscribe", "punsubscribe",
		"ping", "quit", "reset":
		return true
	}
	return false
}

// pushWriter is where a push for this connection produced by its own command goes: its reply
// buffer, or, while CLIENT REPLY drops the command's reply, a side buffer appended after the
// drop.
func (c *Ctx) pushWriter() *resp.Writer {
	if c.muted {
		return &c.side
	}
	return c.W
}

// local describes the executing connection to internal/pubsub, which writes pushes for it
// into pushWriter instead of queueing them.
func (c *Ctx) local() pubsub.Local {
	if c.Client.Sub == nil {
		return pubsub.Local{}
	}
	return pubsub.Local{Sub: c.Client.Sub, W: c.pushWriter()}
}

// moveOut hands the replies written so far to the connection's outbox (see Hub.Subscribe).
func (c *Ctx) moveOut() {
	if c.muted {
		c.W.Buf = append(c.W.Buf[:c.replyMark], c.side.Buf...)
		c.side.Reset()
	}
	c.Client.Sub.Take(c.W.Buf)
	c.W.Reset()
	c.replyMark = 0
}

func subscribeCommand(c *Ctx, kind int) {
	if c.Client.Sub == nil || c.Hub == nil {
		c.Error("ERR " + c.Cmd.Name + " is not available for this client")
		return
	}
	c.Hub.Subscribe(c.Client.Sub, kind, c.Args[1:], c.pushWriter(), c.moveOut)
	c.Client.pubsubMode = c.Client.Sub.Subscribed()
}

func unsubscribeCommand(c *Ctx, kind int) {
	if c.Client.Sub == nil || c.Hub == nil {
		c.Error("ERR " + c.Cmd.Name + " is not available for this client")
		return
	}
	c.Hub.Unsubscribe(c.Client.Sub, kind, c.Args[1:], c.pushWriter())
	c.Client.pubsubMode = c.Client.Sub.Subscribed()
}

func publishCommand(c *Ctx) {
	n := 0
	if c.Hub != nil {
		n = c.Hub.Publish(c.Args[1], c.Args[2], c.local())
	}
	c.W.Int(int64(n))
}

func spublishCommand(c *Ctx) {
	n := 0
	if c.Hub != nil {
		n = c.Hub.PublishShard(c.Args[1], c.Args[2], c.local())
	}
	c.W.Int(int64(n))
}

func pubsubChannelsCommand(c *Ctx, kind int) {
	if len(c.Args) > 3 {
		c.Error("ERR unknown subcommand or wrong number of arguments for '" + string(c.Args[1]) + "'. Try PUBSUB HELP.")
		return
	}
	var pat []byte
	if len(c.Args) == 3 {
		pat = c.Args[2]
	}
	chans := c.Hub.Channels(kind, pat)
	c.W.Array(len(chans))
	for _, ch := range chans {
		c.W.BulkString(ch)
	}
}

func pubsubNumSubCommand(c *Ctx, kind int) {
	c.W.Array(2 * (len(c.Args) - 2))
	for _, ch := range c.Args[2:] {
		c.W.Bulk(ch)
		c.W.Int(int64(c.Hub.NumSub(kind, ch)))
	}
}

// notify publishes a keyspace event for key in the selected database (Redis's
// notifyKeyspaceEvent). With notifications off it costs one atomic load; handlers call it
// after the change, before their reply, as Redis does.
func (c *Ctx) notify(class uint32, event string, key []byte) {
	if c.Hub == nil || !c.Hub.EventsOn(class) {
		return
	}
	c.Hub.KeyspaceEvent(class, event, c.DB.ID, key, c.local())
}

// notifyIn is notify for a key of another database (MOVE, COPY ... DB).
func (c *Ctx) notifyIn(db int, class uint32, event string, key []byte) {
	if c.Hub == nil || !c.Hub.EventsOn(class) {
		return
	}
	c.Hub.KeyspaceEvent(class, event, db, key, c.local())
}

// NotifyEvent is the hook for commands added later (streams, HyperLogLog, SORT ... STORE):
// call it after the change with Redis's class and event name for the command, as in
// `c.NotifyEvent(pubsub.EventStream, "xadd", key)`.
func (c *Ctx) NotifyEvent(class uint32, event string, key []byte) { c.notify(class, event, key) }

// Event classes, shorter for the handlers.
const (
	evGeneric = pubsub.EventGeneric
	evString  = pubsub.EventString
	evList    = pubsub.EventList
	evSet     = pubsub.EventSet
	evHash    = pubsub.EventHash
	evZSet    = pubsub.EventZSet
	evNew     = pubsub.EventNew
	evStream  = pubsub.EventStream
)

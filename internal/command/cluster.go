package command

import (
	"slices"
	"strconv"
	"strings"

	"github.com/hotkv/hotkv/internal/replication"
	"github.com/hotkv/hotkv/internal/store"
)

// ClusterNode is one member of a replicated (Raft) group as the CLUSTER commands show it.
type ClusterNode struct {
	// ID is the 40-hex-digit cluster node id (derived from RaftID, so stable for a node).
	ID string
	// RaftID is the node's id in the Raft group (raft-node-id).
	RaftID string
	// Host and Port are the node's client address; Port is 0 while it is not known yet
	// (the node has not announced it, docs/replication.md).
	Host string
	Port int
	// BusPort is the node's Raft port, shown where Redis shows the cluster bus port.
	BusPort int
	// Myself marks the node answering; Master the serving leader.
	Myself, Master bool
	// Offset is the node's replication offset: the applied Raft index where known.
	Offset int64
	// Failed is set when this node's probes of the member's client port go unanswered.
	Failed bool
}

// ClusterShard is one shard as the CLUSTER commands show it: a Raft group whose leader is
// the master of its slots and whose other members are its replicas.
type ClusterShard struct {
	// Slots are the shard's slot ranges (inclusive); none while it owns no slot or no leader
	// was ever known.
	Slots [][2]int
	// Nodes lists the members, the leader first when there is one.
	Nodes []ClusterNode
	// Leader is the index of the leader in Nodes, -1 when none is known.
	Leader int
	// LeaderDown is set during an election: Leader is then the last leader known, shown as a
	// failed master (its slots are not served), and the cluster state is "fail".
	LeaderDown bool
}

// ClusterState is what the CLUSTER commands describe. A replicated group (raft-port) is a
// Redis Cluster of one shard owning every slot; a sharded cluster (cluster-enabled) has the
// shards of the meta group's slot map (docs/cluster.md).
type ClusterState struct {
	Shards []ClusterShard
	// Epoch is shown as the cluster's current and config epochs: the Raft term of a single
	// group, the slot map's epoch in a sharded cluster.
	Epoch int64
	// NowMs is the time the pong-received fields of CLUSTER NODES show for live links.
	NowMs int64
}

// each calls fn for every node with its shard.
func (st *ClusterState) each(fn func(sh *ClusterShard, n ClusterNode)) {
	for i := range st.Shards {
		for _, n := range st.Shards[i].Nodes {
			fn(&st.Shards[i], n)
		}
	}
}

// served reports whether sh's slots are served: it has a live leader.
func (sh *ClusterShard) served() bool { return sh.Leader >= 0 && !sh.LeaderDown }

// slotCount counts sh's slots.
func (sh *ClusterShard) slotCount() int {
	n := 0
	for _, r := range sh.Slots {
		n += r[1] - r[0] + 1
	}
	return n
}

// ClusterView is the server's side of the CLUSTER command. ClusterState returns nil on a
// standalone server, which then answers every CLUSTER subcommand (and READONLY, READWRITE,
// ASKING) as a standalone Redis 7.0 does.
type ClusterView interface {
	ClusterState() *ClusterState
}

// errClusterDisabled is a standalone Redis's reply to cluster-mode commands.
const errClusterDisabled = "ERR This instance has cluster support disabled"

func clusterState(c *Ctx) *ClusterState {
	if v, ok := c.Srv.(ClusterView); ok {
		if st := v.ClusterState(); st != nil {
			return st
		}
	}
	c.Error(errClusterDisabled)
	return nil
}

// clusterCommands is CLUSTER and ASKING with Redis 7.0's metadata. In Raft mode (raft-port > 0)
// the group answers as a Redis Cluster of one shard, so that cluster clients (go-redis
// ClusterClient, redis-py RedisCluster, redis-cli -c) find the leader and follow it through
// failovers; the slot and membership administration subcommands answer an error, because
// slots never move and membership is the Raft group's (RAFT ADD/REMOVE). Standalone, every
// subcommand answers Redis's "cluster support disabled" error.
func clusterCommands() []*Command {
	admin := []string{"admin", "slow", "dangerous"}
	nondet := []string{"nondeterministic_output"}
	sub := func(name string, arity int, flags Flag, acl []string, since, complexity, syntax, summary string, tips []string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: flags, ACL: acl, Since: since, Complexity: complexity,
			Syntax: syntax, Summary: summary, Tips: tips, Handler: h}
	}
	adm := func(name string, arity int, since, complexity, syntax, summary string, tips []string) *Command {
		return sub(name, arity, FlagAdmin|FlagStale|FlagNoAsyncLoading, admin, since, complexity, syntax, summary, tips, clusterUnsupported)
	}
	slow := []string{"slow"}
	slotRange := "O(N) where N is the total number of the slots between the start slot and end slot arguments."
	reset := sub("reset", -2, FlagAdmin|FlagNoScript|FlagStale, admin, "3.0.0",
		"O(N) where N is the number of known nodes. The command may execute a FLUSHALL as a side effect.",
		"[HARD | SOFT]", "Reset a Redis Cluster node", nil, clusterUnsupported)
	return []*Command{
		{Name: "cluster", Arity: -2, ACL: slow, Group: "cluster", Since: "3.0.0",
			Complexity: "Depends on subcommand.", Summary: "A container for cluster commands",
			Doc: "In Raft mode (`raft-port` > 0) a group answers as a Redis Cluster of one shard: every slot belongs to the leader (the master), the other members are its replicas (docs/replication.md). " +
				"In a sharded cluster (`cluster-enabled yes`) every node describes all the shards of the slot map, each shard's leader as the master of its slots (docs/cluster.md). " +
				"SLOTS, SHARDS, NODES, INFO, MYID, KEYSLOT, COUNTKEYSINSLOT, GETKEYSINSLOT, REPLICAS, SLAVES, LINKS and COUNT-FAILURE-REPORTS answer; " +
				"the slot and membership administration subcommands (ADDSLOTS, MEET, FAILOVER, ...) answer an error: membership is managed with RAFT, slots with CLUSTERX. " +
				"COUNTKEYSINSLOT and GETKEYSINSLOT walk the keyspace (O(N) in the number of keys: HotKV keeps no per-slot index). " +
				"A standalone server answers every subcommand with Redis's `ERR This instance has cluster support disabled`.",
			Subcommands: []*Command{
				adm("addslots", -3, "3.0.0", "O(N) where N is the total number of hash slot arguments", "slot [slot ...]", "Assign new hash slots to receiving node", nil),
				adm("addslotsrange", -4, "7.0.0", slotRange, "start-slot end-slot [start-slot end-slot ...]", "Assign new hash slots to receiving node", nil),
				adm("bumpepoch", 2, "3.0.0", "O(1)", "", "Advance the cluster config epoch", nondet),
				sub("count-failure-reports", 3, FlagAdmin|FlagStale, admin, "3.0.0", "O(N) where N is the number of failure reports", "node-id",
					"Return the number of failure reports active for a given node", nondet, clusterCountFailureReports),
				sub("countkeysinslot", 3, FlagStale, slow, "3.0.0", "O(1)", "slot", "Return the number of local keys in the specified hash slot", nil, clusterCountKeysInSlot),
				adm("delslots", -3, "3.0.0", "O(N) where N is the total number of hash slot arguments", "slot [slot ...]", "Set hash slots as unbound in receiving node", nil),
				adm("delslotsrange", -4, "7.0.0", slotRange, "start-slot end-slot [start-slot end-slot ...]", "Set hash slots as unbound in receiving node", nil),
				adm("failover", -2, "3.0.0", "O(1)", "[FORCE | TAKEOVER]", "Forces a replica to perform a manual failover of its master.", nil),
				adm("flushslots", 2, "3.0.0", "O(1)", "", "Delete a node's own slots information", nil),
				adm("forget", 3, "3.0.0", "O(1)", "node-id", "Remove a node from the nodes table", nil),
				sub("getkeysinslot", 4, FlagStale, slow, "3.0.0", "O(log(N)) where N is the number of requested keys", "slot count",
					"Return local key names in the specified hash slot", nondet, clusterGetKeysInSlot),
				sub("help", 2, FlagLoading|FlagStale, slow, "5.0.0", "O(1)", "", "Show helpful text about the different subcommands", nil, clusterHelp),
				sub("info", 2, FlagStale, slow, "3.0.0", "O(1)", "", "Provides info about Redis Cluster node state", nondet, clusterInfo),
				sub("keyslot", 3, FlagStale, slow, "3.0.0", "O(N) where N is the number of bytes in the key", "key", "Returns the hash slot of the specified key", nil, clusterKeySlot),
				sub("links", 2, FlagStale, slow, "7.0.0", "O(N) where N is the total number of Cluster nodes", "",
					"Returns a list of all TCP links to and from peer nodes in cluster", nondet, clusterLinks),
				adm("meet", -4, "3.0.0", "O(1)", "ip port [cluster_bus_port]", "Force a node cluster to handshake with another node", nil),
				sub("myid", 2, FlagStale, slow, "3.0.0", "O(1)", "", "Return the node id", nil, clusterMyID),
				sub("nodes", 2, FlagStale, slow, "3.0.0", "O(N) where N is the total number of Cluster nodes", "", "Get Cluster config for the node", nondet, clusterNodes),
				adm("replicate", 3, "3.0.0", "O(1)", "node-id", "Reconfigure a node as a replica of the specified master node", nil),
				sub("replicas", 3, FlagAdmin|FlagStale, admin, "5.0.0", "O(1)", "node-id", "List replica nodes of the specified master node", nondet, clusterReplicas),
				reset,
				adm("saveconfig", 2, "3.0.0", "O(1)", "", "Forces the node to save cluster state on disk", nil),
				adm("set-config-epoch", 3, "3.0.0", "O(1)", "config-epoch", "Set the configuration epoch in a new node", nil),
				adm("setslot", -4, "3.0.0", "O(1)", "slot <IMPORTING node-id | MIGRATING node-id | NODE node-id | STABLE>", "Bind a hash slot to a specific node", nil),
				sub("shards", 2, FlagStale, slow, "7.0.0", "O(N) where N is the total number of cluster nodes", "", "Get array of cluster slots to node mappings", nondet, clusterShards),
				sub("slaves", 3, FlagAdmin|FlagStale, admin, "3.0.0", "O(1)", "node-id", "List replica nodes of the specified master node", nondet, clusterReplicas),
				sub("slots", 2, FlagStale, slow, "3.0.0", "O(N) where N is the total number of Cluster nodes", "", "Get array of Cluster slot to node mappings", nondet, clusterSlots),
			}},
		{Name: "asking", Arity: 1, Flags: FlagFast, ACL: []string{"fast", "connection"},
			Group: "cluster", Since: "3.0.0", Complexity: "O(1)",
			Summary: "Sent by cluster clients after an -ASK redirect",
			Doc:     "In Raft mode it answers OK (a slot moves between shards all at once, so no -ASK is ever sent); standalone, Redis's `ERR This instance has cluster support disabled`.",
			Handler: askingCommand},
	}
}

func clusterUnsupported(c *Ctx) {
	if clusterState(c) == nil {
		return
	}
	c.Error("ERR CLUSTER " + strings.ToUpper(c.Cmd.Name) + " is not supported: a HotKV Raft group is one shard holding every slot, and its membership is managed with RAFT ADD/REMOVE")
}

func clusterHelp(c *Ctx) {
	if clusterState(c) == nil {
		return
	}
	helpHandler(
		"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"COUNT-FAILURE-REPORTS <node-id>",
		"    Return the number of failure reports for <node-id> (always 0: Raft detects failures).",
		"COUNTKEYSINSLOT <slot>",
		"    Return the number of keys in <slot>.",
		"GETKEYSINSLOT <slot> <count>",
		"    Return key names stored by this node in a slot.",
		"INFO",
		"    Return information about the cluster.",
		"KEYSLOT <key>",
		"    Return the hash slot for <key>.",
		"LINKS",
		"    Return information about the links to peers (none: Raft has its own transport).",
		"MYID",
		"    Return the node id.",
		"NODES",
		"    Return the cluster configuration seen by this node. Output format:",
		"    <id> <ip:port@raft-port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
		"REPLICAS <node-id>",
		"    Return the replicas of <node-id> (the Raft followers of the leader).",
		"SLOTS",
		"    Return the slot range mapping: every slot, the leader, then its followers.",
		"SHARDS",
		"    Return the one shard: every slot and the group's members.",
		"The slot and membership subcommands (ADDSLOTS, MEET, FAILOVER, ...) are not supported:",
		"membership is managed with RAFT ADD/REMOVE/TRANSFER.",
		"HELP",
		"    Prints this help.")(c)
}

func askingCommand(c *Ctx) {
	if clusterState(c) != nil {
		c.W.OK()
	}
}

// readonlyCommand is READONLY: in Raft mode the connection may then run read commands on a
// follower, against its local (possibly stale) state, instead of being redirected.
func readonlyCommand(c *Ctx) {
	if clusterState(c) != nil {
		c.Client.ReadOnly = true
		c.W.OK()
	}
}

func readwriteCommand(c *Ctx) {
	if clusterState(c) != nil {
		c.Client.ReadOnly = false
		c.W.OK()
	}
}

func clusterMyID(c *Ctx) {
	if st := clusterState(c); st != nil {
		id := ""
		st.each(func(_ *ClusterShard, n ClusterNode) {
			if n.Myself {
				id = n.ID
			}
		})
		if id == "" {
			c.Error("ERR this node is not a member of its Raft group")
			return
		}
		c.W.BulkString(id)
	}
}

func clusterKeySlot(c *Ctx) {
	if clusterState(c) != nil {
		c.W.Int(int64(replication.KeySlot(c.Args[2])))
	}
}

// clusterSlotArg parses a slot argument as Redis's getSlotOrReply does.
func clusterSlotArg(c *Ctx, i int) (int, bool) {
	v, ok := c.Int(i)
	if !ok {
		return 0, false
	}
	if v < 0 || v >= 16384 {
		c.Error("ERR Invalid slot")
		return 0, false
	}
	return int(v), true
}

// eachKeyInSlot calls fn for every live key of the connection's database in slot, shard by
// shard under its lock, until fn returns false.
func eachKeyInSlot(c *Ctx, slot int, fn func(key string) bool) {
	more := true
	for i := 0; more && i < c.DB.NumShards(); i++ {
		s := c.DB.Shard(i)
		c.WithShard(s, func() {
			s.Each(c.Now, func(e *store.Entry) bool {
				k := e.Key()
				if replication.KeySlot([]byte(k)) == slot {
					more = fn(k)
				}
				return more
			})
		})
	}
}

func clusterCountKeysInSlot(c *Ctx) {
	if clusterState(c) == nil {
		return
	}
	slot, ok := clusterSlotArg(c, 2)
	if !ok {
		return
	}
	n := 0
	eachKeyInSlot(c, slot, func(string) bool { n++; return true })
	c.W.Int(int64(n))
}

func clusterGetKeysInSlot(c *Ctx) {
	if clusterState(c) == nil {
		return
	}
	slot, ok := c.Int(2)
	if !ok {
		return
	}
	count, ok := c.Int(3)
	if !ok {
		return
	}
	if slot < 0 || slot >= 16384 || count < 0 {
		c.Error("ERR Invalid slot or number of keys")
		return
	}
	var keys []string
	if count > 0 {
		eachKeyInSlot(c, int(slot), func(k string) bool {
			keys = append(keys, k)
			return int64(len(keys)) < count
		})
	}
	c.W.Array(len(keys))
	for _, k := range keys {
		c.W.BulkString(k)
	}
}

func clusterInfo(c *Ctx) {
	st := clusterState(c)
	if st == nil {
		return
	}
	assigned, ok, size, known := 0, 0, 0, 0
	for i := range st.Shards {
		sh := &st.Shards[i]
		known += len(sh.Nodes)
		n := sh.slotCount()
		assigned += n
		if n > 0 {
			size++
		}
		if sh.served() {
			ok += n
		}
	}
	// Redis's cluster-require-full-coverage: the cluster is down while a slot is unserved.
	state := "fail"
	if ok == 16384 {
		state = "ok"
	}
	var b strings.Builder
	line := func(k string, v any) {
		b.WriteString(k)
		b.WriteByte(':')
		switch x := v.(type) {
		case string:
			b.WriteString(x)
		case int:
			b.WriteString(strconv.Itoa(x))
		case int64:
			b.WriteString(strconv.FormatInt(x, 10))
		}
		b.WriteString("\r\n")
	}
	line("cluster_state", state)
	line("cluster_slots_assigned", assigned)
	line("cluster_slots_ok", ok)
	line("cluster_slots_pfail", 0)
	line("cluster_slots_fail", assigned-ok)
	line("cluster_known_nodes", known)
	line("cluster_size", size)
	line("cluster_current_epoch", st.Epoch)
	line("cluster_my_epoch", st.Epoch)
	line("cluster_stats_messages_sent", 0)
	line("cluster_stats_messages_received", 0)
	line("total_cluster_links_buffer_limit_exceeded", 0)
	c.W.Verbatim("txt", b.String())
}

// nodeLine is one line of CLUSTER NODES, without its newline.
func (st *ClusterState) nodeLine(sh *ClusterShard, n ClusterNode) string {
	var b strings.Builder
	b.WriteString(n.ID)
	b.WriteByte(' ')
	if n.Port > 0 {
		b.WriteString(n.Host + ":" + strconv.Itoa(n.Port) + "@" + strconv.Itoa(n.BusPort))
	} else {
		b.WriteString(":0@0")
	}
	var flags []string
	if n.Myself {
		flags = append(flags, "myself")
	}
	if n.Master {
		flags = append(flags, "master")
	} else {
		flags = append(flags, "slave")
	}
	down := (n.Master && sh.LeaderDown) || n.Failed
	if down {
		flags = append(flags, "fail")
	}
	if n.Port == 0 {
		flags = append(flags, "noaddr")
	}
	b.WriteByte(' ')
	b.WriteString(strings.Join(flags, ","))
	master := "-"
	if !n.Master && sh.Leader >= 0 {
		master = sh.Nodes[sh.Leader].ID
	}
	pong := st.NowMs
	link := "connected"
	if down || (sh.Leader < 0 && !n.Myself) {
		link = "disconnected"
	}
	b.WriteString(" " + master + " 0 " + strconv.FormatInt(pong, 10) + " " + strconv.FormatInt(st.Epoch, 10) + " " + link)
	if n.Master {
		for _, r := range sh.Slots {
			if r[0] == r[1] {
				b.WriteString(" " + strconv.Itoa(r[0]))
			} else {
				b.WriteString(" " + strconv.Itoa(r[0]) + "-" + strconv.Itoa(r[1]))
			}
		}
	}
	return b.String()
}

func clusterNodes(c *Ctx) {
	st := clusterState(c)
	if st == nil {
		return
	}
	var b strings.Builder
	st.each(func(sh *ClusterShard, n ClusterNode) {
		b.WriteString(st.nodeLine(sh, n))
		b.WriteByte('\n')
	})
	c.W.Verbatim("txt", b.String())
}

// findNode finds a node by its 40-hex id, replying Redis's error when there is none.
func (st *ClusterState) findNode(c *Ctx, id []byte) (*ClusterShard, ClusterNode, bool) {
	for i := range st.Shards {
		for _, n := range st.Shards[i].Nodes {
			if n.ID == string(id) {
				return &st.Shards[i], n, true
			}
		}
	}
	c.Error("ERR Unknown node " + string(id))
	return nil, ClusterNode{}, false
}

func clusterReplicas(c *Ctx) {
	st := clusterState(c)
	if st == nil {
		return
	}
	sh, n, ok := st.findNode(c, c.Args[2])
	if !ok {
		return
	}
	if !n.Master {
		c.Error("ERR The specified node is not a master")
		return
	}
	var lines []string
	for _, r := range sh.Nodes {
		if !r.Master {
			lines = append(lines, st.nodeLine(sh, r))
		}
	}
	c.W.Array(len(lines))
	for _, l := range lines {
		c.W.BulkString(l)
	}
}

func clusterCountFailureReports(c *Ctx) {
	if st := clusterState(c); st != nil {
		if _, _, ok := st.findNode(c, c.Args[2]); ok {
			c.W.Int(0) // Raft's own heartbeats decide failures; no gossip reports exist
		}
	}
}

func clusterLinks(c *Ctx) {
	if clusterState(c) != nil {
		c.W.Array(0) // the members talk over Raft's transport, not over a cluster bus
	}
}

// slotsNode writes one node of a CLUSTER SLOTS range: ip, port, id, networking metadata.
func slotsNode(c *Ctx, n ClusterNode) {
	c.W.Array(4)
	c.W.BulkString(n.Host)
	c.W.Int(int64(n.Port))
	c.W.BulkString(n.ID)
	c.W.Map(0)
}

func clusterSlots(c *Ctx) {
	st := clusterState(c)
	if st == nil {
		return
	}
	// One entry per slot range whose shard has a known leader (a shard that never had one is
	// left out, as Redis leaves out unassigned slots), in slot order as Redis lists them.
	type entry struct {
		r  [2]int
		sh *ClusterShard
	}
	var entries []entry
	for i := range st.Shards {
		sh := &st.Shards[i]
		if sh.Leader < 0 {
			continue
		}
		for _, r := range sh.Slots {
			entries = append(entries, entry{r, sh})
		}
	}
	slices.SortFunc(entries, func(a, b entry) int { return a.r[0] - b.r[0] })
	c.W.Array(len(entries))
	for _, e := range entries {
		var replicas []ClusterNode
		for _, n := range e.sh.Nodes {
			if !n.Master && n.Port > 0 && !n.Failed { // Redis leaves failed replicas out
				replicas = append(replicas, n)
			}
		}
		c.W.Array(3 + len(replicas))
		c.W.Int(int64(e.r[0]))
		c.W.Int(int64(e.r[1]))
		slotsNode(c, e.sh.Nodes[e.sh.Leader])
		for _, r := range replicas {
			slotsNode(c, r)
		}
	}
}

func clusterShards(c *Ctx) {
	st := clusterState(c)
	if st == nil {
		return
	}
	c.W.Array(len(st.Shards))
	for i := range st.Shards {
		sh := &st.Shards[i]
		var nodes []ClusterNode
		for _, n := range sh.Nodes {
			if n.Port > 0 {
				nodes = append(nodes, n)
			}
		}
		c.W.Map(2)
		c.W.BulkString("slots")
		if sh.Leader >= 0 {
			c.W.Array(2 * len(sh.Slots))
			for _, r := range sh.Slots {
				c.W.Int(int64(r[0]))
				c.W.Int(int64(r[1]))
			}
		} else {
			c.W.Array(0)
		}
		c.W.BulkString("nodes")
		c.W.Array(len(nodes))
		for _, n := range nodes {
			c.W.Map(7)
			c.W.BulkString("id")
			c.W.BulkString(n.ID)
			c.W.BulkString("port")
			c.W.Int(int64(n.Port))
			c.W.BulkString("ip")
			c.W.BulkString(n.Host)
			c.W.BulkString("endpoint")
			c.W.BulkString(n.Host)
			c.W.BulkString("role")
			if n.Master {
				c.W.BulkString("master")
			} else {
				c.W.BulkString("replica")
			}
			c.W.BulkString("replication-offset")
			c.W.Int(n.Offset)
			c.W.BulkString("health")
			if (sh.Leader < 0 && !n.Myself) || (n.Master && sh.LeaderDown) || n.Failed {
				c.W.BulkString("fail")
			} else {
				c.W.BulkString("online")
			}
		}
	}
}

// KeysSlot returns the slot shared by the keys of cmd with args, -1 when it has no keys, and
// cross set when they are in different slots (Redis Cluster's -CROSSSLOT). The single-key
// case, nearly every command, allocates nothing.
func KeysSlot(cmd *Command, args [][]byte) (slot int, cross bool) {
	if cmd.GetKeys == nil && !cmd.keyNum && cmd.FirstKey > 0 && cmd.LastKey == cmd.FirstKey {
		if cmd.FirstKey < len(args) {
			return replication.KeySlot(args[cmd.FirstKey]), false
		}
		return -1, false
	}
	slot = -1
	for _, i := range cmd.KeyIndexes(args) {
		if i >= len(args) {
			continue
		}
		s := replication.KeySlot(args[i])
		if slot >= 0 && s != slot {
			return slot, true
		}
		slot = s
	}
	return slot, false
}

// EffectKeys returns the keys a journaled effect (a command line, store.Effect) writes, for a
// slot move that tracks what changes while it copies (internal/server/migrate.go). wide is
// set for an effect that may change keys it does not name (FLUSHALL, FLUSHDB, SWAPDB) or that
// is not in the table: the caller must then assume anything changed.
func (t *Table) EffectKeys(args [][]byte) (keys [][]byte, wide bool) {
	if len(args) == 0 {
		return nil, false
	}
	cmd := t.Lookup(args[0])
	if cmd == nil {
		return nil, true
	}
	if len(cmd.Subcommands) > 0 && len(args) > 1 {
		if sub := cmd.subByName[strings.ToLower(string(args[1]))]; sub != nil {
			cmd = sub
		}
	}
	switch cmd.Name {
	case "flushall", "flushdb", "swapdb":
		return nil, true
	}
	for _, i := range cmd.KeyIndexes(args) {
		if i < len(args) {
			keys = append(keys, args[i])
		}
	}
	return keys, false
}

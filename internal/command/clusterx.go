package command

import (
	"github.com/hotkv/hotkv/internal/cluster"
)

// ClusterAdmin is the server's sharding state as CLUSTERX sees it (docs/cluster.md). A server
// without cluster-enabled answers every call with an error.
type ClusterAdmin interface {
	ClusterXBootstrap() error
	ClusterXJoin(addr string) error
	ClusterXAddNode(n cluster.Node) error
	ClusterXForget(id string) error
	ClusterXAssign(shard string, slots []cluster.Range) error
	ClusterXApply(payload string) error
	ClusterXMap() ([]byte, error)
	ClusterXStatus() ([][2]string, error)
	ClusterXMigrate(r cluster.Range, to string) error
	ClusterXImporting(mig uint64, keep bool, keepSession uint64) (start, end int, session uint64, err error)
	ClusterXRebalance() (int, error)
}

// clusterxCommands is CLUSTERX, a HotKV-only container (the name Apache Kvrocks uses for its
// cluster extensions): the administration of a sharded cluster's slot map, which lives in
// the meta Raft group rather than in a gossip protocol, so Redis's CLUSTER ADDSLOTS/MEET/...
// (which assume gossip) do not apply. Changes may be sent to any node: a node that is not the
// meta group's leader forwards them there.
func clusterxCommands() []*Command {
	admin := []string{"admin", "slow", "dangerous"}
	sub := func(name string, arity int, complexity, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: admin,
			Since: "0.2.0", Complexity: complexity, Syntax: syntax, Summary: summary, Handler: h}
	}
	help := sub("help", 2, "O(1)", "", "Shows helpful text about the different subcommands", helpHandler(
		"CLUSTERX <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"BOOTSTRAP",
		"    Start a new cluster: a meta group whose only voter is this node.",
		"JOIN <host> <port>",
		"    Join this node to the cluster of the node at host:port (its client port).",
		"ADDNODE <id> <shard> <client-addr> <raft-addr> <meta-addr>",
		"    Add a node to the cluster (JOIN sends it for the joining node).",
		"FORGET <id>",
		"    Remove a node from the cluster and the meta group.",
		"ASSIGN <shard> <start-slot> <end-slot> [<start-slot> <end-slot> ...]",
		"    Give unassigned slots to a shard.",
		"MIGRATE <start-slot> <end-slot> <shard>",
		"    Move slots (all of one shard) to another shard; the move runs in the background.",
		"REBALANCE",
		"    Assign the unassigned slots and move slots so that every shard has an even share.",
		"MAP",
		"    Return the slot map as JSON.",
		"STATUS",
		"    Return this node's shard and meta group state.",
		"HELP",
		"    Prints this help."))
	help.Flags, help.ACL = FlagLoading|FlagStale, []string{"slow"}
	mp := sub("map", 2, "O(N) where N is the number of nodes and slot ranges", "", "Returns the cluster's slot map as JSON", clusterxMap)
	mp.Flags, mp.ACL = FlagLoading|FlagStale, []string{"slow"}
	st := sub("status", 2, "O(N) where N is the number of meta group members", "", "Reports the node's shard and meta group state", clusterxStatus)
	st.Flags, st.ACL = FlagLoading|FlagStale, []string{"slow"}
	return []*Command{{Name: "clusterx", Arity: -2, ACL: []string{"slow"}, Group: "cluster", Since: "0.2.0",
		Complexity: "Depends on subcommand.", Summary: "A container for the commands that administer a sharded cluster",
		Doc: "HotKV only. Administers the slot map of a sharded cluster (`cluster-enabled yes`, docs/cluster.md), which the meta Raft group replicates. " +
			"Changes can be sent to any node: one that is not the meta group's leader forwards them there. APPLY and IMPORTING are internal (the forwarding of a change, the stream of a slot move).",
		Subcommands: []*Command{
			sub("bootstrap", 2, "O(1)", "", "Starts a new cluster whose meta group's only voter is this node", clusterxBootstrap),
			sub("join", 4, "O(1)", "host port", "Joins this node to the cluster of the node at host:port", clusterxJoin),
			sub("addnode", 7, "O(1)", "id shard client-addr raft-addr meta-addr", "Adds a node to the cluster", clusterxAddNode),
			sub("forget", 3, "O(1)", "id", "Removes a node from the cluster", clusterxForget),
			sub("assign", -5, "O(N) where N is the number of slots", "shard start-slot end-slot [start-slot end-slot ...]",
				"Gives unassigned slots to a shard", clusterxAssign),
			sub("apply", 3, "O(1)", "change", "Applies a slot map change forwarded by another node (internal)", clusterxApply),
			sub("rebalance", 2, "O(N) where N is the number of slot ranges", "",
				"Spreads the slots evenly over the shards (assignments and moves)", clusterxRebalance),
			sub("migrate", 5, "O(1)", "start-slot end-slot shard", "Starts moving slots to another shard", clusterxMigrate),
			sub("importing", -3, "O(N) where N is the number of keys in the slots", "migration-id [KEEP session]",
				"Prepares this connection to stream a slot move into this shard (internal)", clusterxImporting),
			help, mp, st,
		}}}
}

func clusterAdmin(c *Ctx) ClusterAdmin {
	ca, ok := c.Srv.(ClusterAdmin)
	if !ok {
		c.Error("ERR this server has no cluster support")
		return nil
	}
	return ca
}

func clusterxBootstrap(c *Ctx) {
	if ca := clusterAdmin(c); ca != nil {
		raftReply(c, ca.ClusterXBootstrap())
	}
}

func clusterxJoin(c *Ctx) {
	if ca := clusterAdmin(c); ca != nil {
		raftReply(c, ca.ClusterXJoin(string(c.Args[2])+":"+string(c.Args[3])))
	}
}

func clusterxAddNode(c *Ctx) {
	if ca := clusterAdmin(c); ca != nil {
		a := c.Args
		raftReply(c, ca.ClusterXAddNode(cluster.Node{ID: string(a[2]), Shard: string(a[3]), Addr: string(a[4]),
			RaftAddr: string(a[5]), MetaAddr: string(a[6])}))
	}
}

func clusterxForget(c *Ctx) {
	if ca := clusterAdmin(c); ca != nil {
		raftReply(c, ca.ClusterXForget(string(c.Args[2])))
	}
}

func clusterxAssign(c *Ctx) {
	ca := clusterAdmin(c)
	if ca == nil {
		return
	}
	args := make([]string, 0, len(c.Args)-3)
	for _, a := range c.Args[3:] {
		args = append(args, string(a))
	}
	rs, err := cluster.ParseRanges(args)
	if err != nil {
		raftReply(c, err)
		return
	}
	raftReply(c, ca.ClusterXAssign(string(c.Args[2]), rs))
}

func clusterxApply(c *Ctx) {
	if ca := clusterAdmin(c); ca != nil {
		raftReply(c, ca.ClusterXApply(string(c.Args[2])))
	}
}

func clusterxMap(c *Ctx) {
	if ca := clusterAdmin(c); ca != nil {
		b, err := ca.ClusterXMap()
		if err != nil {
			raftReply(c, err)
			return
		}
		c.W.Bulk(b)
	}
}

func clusterxStatus(c *Ctx) {
	ca := clusterAdmin(c)
	if ca == nil {
		return
	}
	st, err := ca.ClusterXStatus()
	pairsReply(c, st, err)
}

func clusterxMigrate(c *Ctx) {
	ca := clusterAdmin(c)
	if ca == nil {
		return
	}
	rs, err := cluster.ParseRanges([]string{string(c.Args[2]), string(c.Args[3])})
	if err != nil {
		raftReply(c, err)
		return
	}
	raftReply(c, ca.ClusterXMigrate(rs[0], string(c.Args[4])))
}

func clusterxImporting(c *Ctx) {
	ca := clusterAdmin(c)
	if ca == nil {
		return
	}
	mig, ok := c.intInRange(2, 1, 1<<62)
	if !ok {
		c.Error(ErrNotInt)
		return
	}
	keep, keepSession := false, int64(0)
	switch {
	case len(c.Args) == 5 && EqualFold(c.Args[3], "keep"):
		// KEEP continues the stream of an earlier IMPORTING, named by its session.
		if keepSession, ok = c.intInRange(4, 1, 1<<63-1); !ok {
			c.Error(ErrNotInt)
			return
		}
		keep = true
	case len(c.Args) > 3:
		c.Error(ErrSyntax)
		return
	}
	start, end, session, err := ca.ClusterXImporting(uint64(mig), keep, uint64(keepSession))
	if err != nil {
		raftReply(c, err)
		return
	}
	c.Client.Importing.Mig, c.Client.Importing.Start, c.Client.Importing.End = uint64(mig), start, end
	c.Client.Importing.Session = session
	if keep {
		session = 0 // a KEEP stream reports nothing new: the source reports with the first one's
	}
	c.W.Int(int64(session)) // the import's session, which the source reports the move done with
}

func clusterxRebalance(c *Ctx) {
	ca := clusterAdmin(c)
	if ca == nil {
		return
	}
	n, err := ca.ClusterXRebalance()
	if err != nil {
		raftReply(c, err)
		return
	}
	c.W.Int(int64(n))
}

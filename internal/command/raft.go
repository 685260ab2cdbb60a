package command

import (
	"strconv"
	"strings"
)

// RaftAdmin is the server's Raft node as the RAFT command sees it (docs/replication.md). A
// standalone server answers every call with an error saying raft-port is 0.
type RaftAdmin interface {
	RaftStatus() ([][2]string, error)
	RaftBootstrap() error
	RaftAdd(id, addr string) error
	RaftRemove(id string) error
	RaftTransfer(id string) error
	RaftSnapshot() error
	// RaftAnnounce records a member's client address in the group's log (on the leader), so
	// that every node shows it in CLUSTER SLOTS/NODES.
	RaftAnnounce(id, addr string, applied int64) error
}

// raftCommands is RAFT, a HotKV-only container (Redis has none): membership and leadership
// of the node's Raft group. Every subcommand is admin and runs while loading or stale, as
// CLUSTER's do in Redis, since it is how an operator repairs a group that cannot serve.
func raftCommands() []*Command {
	admin := []string{"admin", "slow", "dangerous"}
	sub := func(name string, arity int, complexity, syntax, summary string, h Handler) *Command {
		return &Command{Name: name, Arity: arity, Flags: FlagAdmin | FlagNoScript | FlagLoading | FlagStale, ACL: admin,
			Since: "0.1.0", Complexity: complexity, Syntax: syntax, Summary: summary, Handler: h}
	}
	help := sub("help", 2, "O(1)", "", "Shows helpful text about the different subcommands", helpHandler(
		"RAFT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"BOOTSTRAP",
		"    Start a new group whose only voter is this node (it must have no Raft state).",
		"ADD <id> <host:port>",
		"    Add a voting member, given its Raft address (send it to the leader).",
		"REMOVE <id>",
		"    Remove a member (send it to the leader).",
		"TRANSFER [<id>]",
		"    Hand leadership to <id>, or to the most up-to-date follower.",
		"SNAPSHOT",
		"    Take a Raft snapshot now and compact the log (the leader pauses keyspace commands meanwhile).",
		"ANNOUNCE <id> <host:port> [<applied-index>]",
		"    Record a member's client address and progress (sent by followers to the leader).",
		"STATUS",
		"    Return this node's role, leader, term, indexes and members.",
		"HELP",
		"    Prints this help."))
	help.Flags, help.ACL = FlagLoading|FlagStale, []string{"slow"} // not admin: anyone may ask
	return []*Command{{Name: "raft", Arity: -2, ACL: []string{"slow"}, Group: "cluster", Since: "0.1.0",
		Complexity: "Depends on subcommand.", Summary: "A container for Raft replication commands",
		Doc: "HotKV only. Manages the Raft group of a node started with `raft-port` (docs/replication.md). Membership changes and TRANSFER must be sent to the leader.",
		Subcommands: []*Command{
			sub("bootstrap", 2, "O(1)", "", "Starts a new Raft group whose only voter is this node", raftBootstrapCommand),
			sub("add", 4, "O(1)", "id host:port", "Adds a voting member to the Raft group (on the leader)", raftAddCommand),
			sub("remove", 3, "O(1)", "id", "Removes a member from the Raft group (on the leader)", raftRemoveCommand),
			sub("announce", -4, "O(1)", "id host:port [applied-index]",
				"Records a member's client address in the Raft group, and its progress (on the leader)", raftAnnounceCommand),
			sub("transfer", -2, "O(1)", "[id]", "Hands Raft leadership to another member (on the leader)", raftTransferCommand),
			help,
			sub("snapshot", 2, "O(N) where N is the number of keys", "",
				"Takes a Raft snapshot of this node's dataset and compacts its log", raftSnapshotCommand),
			sub("status", 2, "O(N) where N is the number of members", "",
				"Reports the node's Raft role, leader, term, indexes and members", raftStatusCommand),
		}}}
}

func raftAdmin(c *Ctx) RaftAdmin {
	ra, ok := c.Srv.(RaftAdmin)
	if !ok {
		c.Error("ERR this server has no Raft support")
		return nil
	}
	return ra
}

func raftReply(c *Ctx, err error) {
	if err != nil {
		msg := err.Error()
		if i := strings.IndexByte(msg, ' '); i <= 0 || strings.ToUpper(msg[:i]) != msg[:i] {
			msg = "ERR " + msg
		}
		c.Error(strings.ReplaceAll(msg, "\n", " "))
		return
	}
	c.W.OK()
}

func raftBootstrapCommand(c *Ctx) {
	if ra := raftAdmin(c); ra != nil {
		raftReply(c, ra.RaftBootstrap())
	}
}

func raftAddCommand(c *Ctx) {
	if ra := raftAdmin(c); ra != nil {
		raftReply(c, ra.RaftAdd(string(c.Args[2]), string(c.Args[3])))
	}
}

func raftRemoveCommand(c *Ctx) {
	if ra := raftAdmin(c); ra != nil {
		raftReply(c, ra.RaftRemove(string(c.Args[2])))
	}
}

func raftAnnounceCommand(c *Ctx) {
	if ra := raftAdmin(c); ra != nil {
		applied := int64(-1)
		if len(c.Args) > 5 {
			c.Error("ERR unknown subcommand or wrong number of arguments for 'announce'. Try RAFT HELP.")
			return
		}
		if len(c.Args) == 5 {
			v, ok := c.intInRange(4, 0, 1<<62)
			if !ok {
				c.Error(ErrNotInt)
				return
			}
			applied = v
		}
		raftReply(c, ra.RaftAnnounce(string(c.Args[2]), string(c.Args[3]), applied))
	}
}

func raftTransferCommand(c *Ctx) {
	if len(c.Args) > 3 {
		c.Error("ERR unknown subcommand or wrong number of arguments for 'transfer'. Try RAFT HELP.")
		return
	}
	if ra := raftAdmin(c); ra != nil {
		id := ""
		if len(c.Args) == 3 {
			id = string(c.Args[2])
		}
		raftReply(c, ra.RaftTransfer(id))
	}
}

func raftSnapshotCommand(c *Ctx) {
	if ra := raftAdmin(c); ra != nil {
		raftReply(c, ra.RaftSnapshot())
	}
}

func raftStatusCommand(c *Ctx) {
	ra := raftAdmin(c)
	if ra == nil {
		return
	}
	st, err := ra.RaftStatus()
	pairsReply(c, st, err)
}

// pairsReply answers a status as a map of field names to values (RAFT STATUS, CLUSTERX
// STATUS), or the error.
func pairsReply(c *Ctx, st [][2]string, err error) {
	if err != nil {
		raftReply(c, err)
		return
	}
	c.W.Map(len(st))
	for _, kv := range st {
		c.W.Bulk([]byte(kv[0]))
		c.W.Bulk([]byte(kv[1]))
	}
}

// Role is ROLE's answer (Redis's roleCommand): a master with the replicas that are online, or
// a replica with its master. In a Raft group the serving leader is the master and its
// followers the replicas, with their applied log index as the replication offset.
type Role struct {
	Master bool
	// Offset is the master's replication offset, or the replica's (-1 when it has none).
	Offset int64
	// Replicas are a master's online replicas: client address and offset.
	Replicas []RoleReplica
	// MasterHost and MasterPort are a replica's master ("" and 0 while it knows none), and
	// State its link, in Redis's words ("connected", "connect").
	MasterHost string
	MasterPort int64
	State      string
}

// RoleReplica is one replica of a master's ROLE reply.
type RoleReplica struct {
	IP     string
	Port   int64
	Offset int64
}

// RoleReporter is the server as ROLE sees it; a server without it is a master without
// replicas.
type RoleReporter interface {
	Role() Role
}

// roleCommand is ROLE, with Redis's reply shapes: *3 "master", offset, [[ip, port, offset]...]
// (the port and offset as bulk strings, as Redis writes them), or *5 "slave", host, port,
// state, offset.
func roleCommand(c *Ctx) {
	r := Role{Master: true}
	if rr, ok := c.Srv.(RoleReporter); ok {
		r = rr.Role()
	}
	if r.Master {
		c.W.Array(3)
		c.W.BulkString("master")
		c.W.Int(r.Offset)
		c.W.Array(len(r.Replicas))
		for _, rep := range r.Replicas {
			c.W.Array(3)
			c.W.BulkString(rep.IP)
			c.W.BulkString(strconv.FormatInt(rep.Port, 10))
			c.W.BulkString(strconv.FormatInt(rep.Offset, 10))
		}
		return
	}
	c.W.Array(5)
	c.W.BulkString("slave")
	c.W.BulkString(r.MasterHost)
	c.W.Int(r.MasterPort)
	c.W.BulkString(r.State)
	c.W.Int(r.Offset)
}

package server

// Sharded mode (cluster-enabled yes; docs/cluster.md, design ha-and-cluster.md §4): the node's
// Raft group is one shard of a cluster, and the node also runs a member of the meta group, a
// second, small Raft group whose state machine is the slot map (internal/cluster): which
// shard owns each slot, the nodes of each shard, and which node last led each shard. There
// is no gossip bus: every node reads the topology from its own replica of the map, so all of
// them describe the same one to clients (CLUSTER SLOTS/SHARDS/NODES) and redirect the same way.
//
// The first nodes to join vote in the meta group (cluster-meta-voters); the others receive
// its log as non-voters. Changes to the map go to the meta leader: a node that is not the
// leader forwards an admin command to the leader's client port (peerCall), once.
//
// Each node keeps its own entry in the map current (its client, Raft and meta addresses), and
// a data group's leader records itself as its shard's leader hint, fenced by its Raft term so
// that a deposed leader's late announcement never overwrites its successor's (syncer).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hotkv/hotkv/internal/cluster"
	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/replication"
)

// shardState is a node's sharding state; Server.shards is nil unless cluster-enabled.
type shardState struct {
	s     *Server
	shard string
	fsm   *cluster.FSM
	// bind is the meta group's Raft address of this node; voters is cluster-meta-voters.
	bind   string
	voters int
	node   *replication.Node
	wg     sync.WaitGroup
	stop   chan struct{}
	// fence is the slots this shard moved (or is moving) away (migrate.go).
	fence    fenceState
	track    moveTrack
	dropMu   sync.Mutex // serializes a leader's drops and clears (migrate.go, proposeSlots)
	movedMu  sync.Mutex
	lastMove moveStats
}

// metaTimeout bounds a change of the slot map (a commit in the meta group).
const metaTimeout = 10 * time.Second

// newShards prepares the sharding state before the data group starts (its goroutines read
// Server.shards); startSharding then starts the meta group's member.
func (s *Server) newShards() error {
	shard := s.cfg.Get("cluster-shard-id")
	if shard == "" {
		return errors.New("cluster-enabled needs cluster-shard-id: the shard (Raft group) this node belongs to")
	}
	port := s.cfg.GetInt("cluster-meta-port")
	if port == 0 {
		port = s.cfg.GetInt("raft-port") + 10000
	}
	if port > 65535 {
		return fmt.Errorf("cluster-meta-port defaults to raft-port + 10000 = %d, which is not a port: set it", port)
	}
	bind := net.JoinHostPort(s.cfg.Get("raft-announce-ip"), strconv.FormatInt(port, 10))
	s.shards = &shardState{s: s, shard: shard, fsm: cluster.NewFSM(), bind: bind,
		voters: int(s.cfg.GetInt("cluster-meta-voters")), stop: make(chan struct{})}
	s.shards.fsm.OnChange = s.topo.changed // blocked clients follow their slots (topology.go)
	s.table.ScriptGate = s.shards.scriptGate
	s.table.OneSlotTx = true
	return nil
}

// startSharding starts the node's meta group member; the data group runs already.
func (s *Server) startSharding() error {
	r, sh := s.repl, s.shards
	cfg := replication.Config{
		NodeID: r.cfg.NodeID, Bind: sh.bind, Dir: filepath.Join(r.cfg.Dir, "meta"),
		Bootstrap:        s.cfg.GetBool("cluster-meta-bootstrap"),
		HeartbeatTimeout: r.cfg.HeartbeatTimeout, ElectionTimeout: r.cfg.ElectionTimeout,
		CommitTimeout: r.cfg.CommitTimeout,
		// The map is small and changes rarely: snapshot it often, keep a short log.
		SnapshotThreshold: 256, SnapshotInterval: 10 * time.Second, TrailingLogs: 128,
		LogOutput: r.cfg.LogOutput,
	}
	node, err := replication.Start(cfg, sh.fsm, func(bool) {})
	if err != nil {
		return fmt.Errorf("Can't start the meta group's Raft node: %w", err)
	}
	sh.node = node
	sh.wg.Add(2)
	go func() { defer sh.wg.Done(); sh.syncer() }()
	go func() { defer sh.wg.Done(); sh.migrator() }() // migrate.go
	s.log.Info("Cluster node started", "shard", sh.shard, "meta_addr", sh.bind)
	return nil
}

func (sh *shardState) close() {
	if sh.node == nil {
		return
	}
	close(sh.stop)
	sh.wg.Wait()
	if err := sh.node.Close(); err != nil {
		sh.s.log.Warn("Error stopping the meta group's Raft node", "err", err)
	}
}

// self is this node's entry in the map as it should be.
func (sh *shardState) self() *cluster.Node {
	r := sh.s.repl
	n := &cluster.Node{ID: r.cfg.NodeID, Shard: sh.shard, Addr: r.self, MetaAddr: sh.bind}
	if node := r.getNode(); node != nil {
		n.RaftAddr = node.Addr()
	}
	return n
}

// syncer keeps this node's entry and, while it leads its data group, its shard's leader hint
// current in the map.
func (sh *shardState) syncer() {
	wait := 200 * time.Millisecond
	var lastErr string
	for {
		select {
		case <-sh.stop:
			return
		case <-sh.s.ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = time.Second
		if !sh.isMember() {
			wait = 200 * time.Millisecond // not joined yet (CLUSTERX JOIN)
			continue
		}
		err := sh.apply(&cluster.Op{Kind: "node", Node: sh.self()})
		r := sh.s.repl
		if err == nil && r.servingA.Load() {
			if node := r.getNode(); node != nil {
				term, _ := strconv.ParseUint(node.Raft.Stats()["term"], 10, 64)
				err = sh.apply(&cluster.Op{Kind: "hint", Shard: sh.shard, ID: node.ID(), Term: term})
			}
		}
		if err != nil {
			wait = 200 * time.Millisecond
			if err.Error() != lastErr {
				sh.s.log.Warn("Could not update this node's entry in the cluster's slot map", "err", err)
				lastErr = err.Error()
			}
			continue
		}
		lastErr = ""
	}
}

// isMember reports whether this node is in the meta group's configuration.
func (sh *shardState) isMember() bool {
	return slices.ContainsFunc(sh.node.Members(), func(m replication.Member) bool { return m.ID == sh.node.ID() })
}

// leaderAddr returns the meta leader's client address, "" when unknown, and whether this
// node is the leader.
func (sh *shardState) leaderAddr() (string, bool) {
	_, lid := sh.node.Leader()
	if lid == "" {
		return "", false
	}
	if lid == sh.node.ID() {
		return sh.s.repl.self, true
	}
	n, _ := sh.fsm.View().Node(lid)
	return n.Addr, false
}

var errNoMetaLeader = errors.New("TRYAGAIN the cluster's meta group has no leader")

// apply makes a change to the map: on the meta leader it is proposed, elsewhere forwarded to
// the leader with CLUSTERX APPLY. A change that changes nothing is not logged.
func (sh *shardState) apply(op *cluster.Op) error {
	if err := sh.fsm.Check(op); errors.Is(err, cluster.ErrNoChange) {
		return nil
	}
	b, err := json.Marshal(op)
	if err != nil {
		return err
	}
	return sh.onLeader([]string{"CLUSTERX", "APPLY", string(b)}, func() error {
		return sh.node.Propose(b, metaTimeout)
	})
}

// onLeader runs local on the meta leader, or forwards cmd to it.
func (sh *shardState) onLeader(cmd []string, local func() error) error {
	addr, me := sh.leaderAddr()
	if me {
		err := local()
		if errors.Is(err, replication.ErrNotLeader) {
			return errNoMetaLeader
		}
		return err
	}
	if addr == "" {
		return errNoMetaLeader
	}
	_, err := sh.s.peerCall(addr, metaTimeout+2*time.Second, cmd)
	return err
}

// applyForwarded is CLUSTERX APPLY: a change forwarded by another node, run only here.
func (sh *shardState) applyForwarded(payload string) error {
	var op cluster.Op
	if err := json.Unmarshal([]byte(payload), &op); err != nil {
		return fmt.Errorf("malformed slot map change: %v", err)
	}
	if _, me := sh.leaderAddr(); !me {
		return errors.New("TRYAGAIN this node is no longer the meta group's leader")
	}
	if err := sh.fsm.Check(&op); errors.Is(err, cluster.ErrNoChange) {
		return nil
	} else if err != nil {
		return err
	}
	return sh.node.Propose([]byte(payload), metaTimeout)
}

// addNode adds a node to the meta group (a voter while there are fewer than
// cluster-meta-voters) and to the map; it runs on the meta leader or is forwarded there.
func (sh *shardState) addNode(n *cluster.Node) error {
	if n.ID == "" || n.Shard == "" {
		return errors.New("a node needs an id and a shard")
	}
	for _, a := range []string{n.Addr, n.RaftAddr, n.MetaAddr} {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("invalid address %q", a)
		}
	}
	if old, ok := sh.fsm.View().Node(n.ID); ok && old.Shard != n.Shard {
		return fmt.Errorf("node %s belongs to shard %s, not %s (CLUSTERX FORGET it first)", n.ID, old.Shard, n.Shard)
	}
	cmd := []string{"CLUSTERX", "ADDNODE", n.ID, n.Shard, n.Addr, n.RaftAddr, n.MetaAddr}
	return sh.onLeader(cmd, func() error {
		members := sh.node.Members()
		i := slices.IndexFunc(members, func(m replication.Member) bool { return m.ID == n.ID })
		if i < 0 || members[i].Addr != n.MetaAddr {
			voters := 0
			for _, m := range members {
				if m.Voter && m.ID != n.ID {
					voters++
				}
			}
			var err error
			if voters < sh.voters || (i >= 0 && members[i].Voter) {
				err = sh.node.AddVoter(n.ID, n.MetaAddr)
			} else {
				err = sh.node.AddNonvoter(n.ID, n.MetaAddr)
			}
			if err != nil {
				return err
			}
		}
		b, _ := json.Marshal(&cluster.Op{Kind: "node", Node: n})
		if err := sh.fsm.Check(&cluster.Op{Kind: "node", Node: n}); errors.Is(err, cluster.ErrNoChange) {
			return nil
		}
		return sh.node.Propose(b, metaTimeout)
	})
}

// forget removes a node from the meta group and the map.
func (sh *shardState) forget(id string) error {
	return sh.onLeader([]string{"CLUSTERX", "FORGET", id}, func() error {
		if id == sh.node.ID() {
			return errors.New("the meta leader cannot forget itself: send CLUSTERX FORGET to another node after it steps down")
		}
		if slices.ContainsFunc(sh.node.Members(), func(m replication.Member) bool { return m.ID == id }) {
			if err := sh.node.Remove(id); err != nil {
				return err
			}
		}
		b, _ := json.Marshal(&cluster.Op{Kind: "forget", ID: id})
		return sh.node.Propose(b, metaTimeout)
	})
}

// route is the sharded part of the command gate: a keyed command runs here only if its keys
// share one slot (else -CROSSSLOT, as Redis Cluster) and this node's shard owns the slot;
// otherwise -MOVED to the owner (its leader hint), or -CLUSTERDOWN when no shard owns it.
func (sh *shardState) route(c *command.Ctx, cmd *command.Command) string {
	slot, cross := command.KeysSlot(cmd, c.Args)
	if cross {
		return "CROSSSLOT Keys in request don't hash to the same slot"
	}
	if slot < 0 {
		return ""
	}
	v := sh.fsm.View()
	if im := &c.Client.Importing; im.Mig != 0 && slot >= im.Start && slot <= im.End {
		// The stream of a slot move into this shard (migrate.go), only while it is the
		// migration's latest import: the stream of a copy that a newer one replaced (its
		// source leader was deposed mid-copy and kept streaming) would otherwise overwrite the
		// newer copy's keys, or, once the move is done, keys that clients changed since.
		if _, ok := v.Migration(im.Mig); ok && im.Session != 0 && sh.importSession(im.Mig) == im.Session {
			return ""
		}
		return "TRYAGAIN this import stream is no longer the slot move's latest (migration " + strconv.FormatUint(im.Mig, 10) + ")"
	}
	o := v.Owner(slot)
	if o == nil {
		return "CLUSTERDOWN Hash slot not served"
	}
	if o.ID == sh.shard {
		if sh.isFenced(slot) {
			// Being moved away, or moved and this node's map lags: the client retries.
			return "TRYAGAIN Slot " + strconv.Itoa(slot) + " is being moved to another shard"
		}
		return ""
	}
	if addr := shardAddr(o); addr != "" {
		return "MOVED " + strconv.Itoa(slot) + " " + addr
	}
	return "CLUSTERDOWN Hash slot not served"
}

// scriptGate is the command table's ScriptGate: a command a script runs may touch only keys
// of slots this shard serves (Redis Cluster's scriptVerifyClusterState, same errors).
func (sh *shardState) scriptGate(c *command.Ctx, cmd *command.Command) string {
	slot, cross := command.KeysSlot(cmd, c.Args)
	if slot < 0 && !cross {
		return ""
	}
	if cross {
		return "Script attempted to access keys that do not hash to the same slot"
	}
	if o := sh.fsm.View().Owner(slot); o == nil {
		return "Script attempted to execute a command while the cluster is down"
	} else if o.ID != sh.shard || sh.isFenced(slot) {
		return "Script attempted to access a non local key in a cluster node"
	}
	return ""
}

// shardAddr is where clients are sent for a shard's slots: its hinted leader, else the first
// node with an address (a follower redirects to its leader: one more hop).
func shardAddr(o *cluster.ShardView) string {
	first := ""
	for _, n := range o.Nodes {
		if n.ID == o.Leader && n.Addr != "" {
			return n.Addr
		}
		if first == "" {
			first = n.Addr
		}
	}
	return first
}

// clusterState completes st from the map: this node's shard from its own Raft state (own),
// the others from the map, their master being the leader hint.
func (sh *shardState) clusterState(st *command.ClusterState, own command.ClusterShard, now time.Time) *command.ClusterState {
	v := sh.fsm.View()
	st.Epoch = int64(v.Epoch)
	ranges := func(rs []cluster.Range) [][2]int {
		out := make([][2]int, len(rs))
		for i, r := range rs {
			out[i] = [2]int{r.Start, r.End}
		}
		return out
	}
	h := &sh.s.repl.health
	for _, vs := range v.Shards {
		if vs.ID == sh.shard {
			if own.Leader >= 0 {
				own.Slots = ranges(vs.Slots)
			}
			st.Shards = append(st.Shards, own)
			continue
		}
		cs := command.ClusterShard{Leader: -1}
		master := vs.Leader
		if master == "" && len(vs.Nodes) > 0 {
			master = vs.Nodes[0].ID // no leader recorded yet: the node to ask first
		}
		for _, n := range vs.Nodes {
			cn := command.ClusterNode{ID: clusterNodeID(n.ID), RaftID: n.ID, Master: n.ID == master}
			if host, p, err := net.SplitHostPort(n.Addr); err == nil {
				cn.Host = host
				cn.Port, _ = strconv.Atoi(p)
			}
			if _, p, err := net.SplitHostPort(n.RaftAddr); err == nil {
				cn.BusPort, _ = strconv.Atoi(p)
			}
			cn.Failed = n.Addr != "" && h.failed(n.Addr, now)
			cs.Nodes = append(cs.Nodes, cn)
		}
		sortShardNodes(&cs)
		if len(cs.Nodes) > 0 && cs.Nodes[0].Master {
			cs.Leader, cs.LeaderDown = 0, cs.Nodes[0].Failed
			cs.Slots = ranges(vs.Slots)
		}
		st.Shards = append(st.Shards, cs)
	}
	return st
}

// probeTargets are the client addresses of the other nodes of the cluster.
func (sh *shardState) probeTargets() []string {
	var out []string
	self := sh.s.repl.self
	for _, vs := range sh.fsm.View().Shards {
		for _, n := range vs.Nodes {
			if n.Addr != "" && n.Addr != self {
				out = append(out, n.Addr)
			}
		}
	}
	return out
}

// status is CLUSTERX STATUS.
func (sh *shardState) status() [][2]string {
	v := sh.fsm.View()
	stats := sh.node.Raft.Stats()
	_, lid := sh.node.Leader()
	var members []string
	for _, m := range sh.node.Members() {
		kind := "voter"
		if !m.Voter {
			kind = "nonvoter"
		}
		members = append(members, m.ID+"@"+m.Addr+"("+kind+")")
	}
	sh.movedMu.Lock()
	lm := sh.lastMove
	sh.movedMu.Unlock()
	last := ""
	if lm.Took > 0 {
		last = fmt.Sprintf("slots=%s,keys=%d,limiters=%d,tail=%d,ms=%d", lm.Slots, lm.Keys, lm.Limiters, lm.Tail, lm.Took.Milliseconds())
	}
	return [][2]string{
		{"shard", sh.shard},
		{"migrations", strconv.Itoa(len(v.Migrations))},
		{"last_move", last},
		{"meta_state", strings.ToLower(stats["state"])},
		{"meta_leader", lid},
		{"meta_term", stats["term"]},
		{"meta_applied_index", stats["applied_index"]},
		{"meta_members", strings.Join(members, ",")},
		{"epoch", strconv.FormatUint(v.Epoch, 10)},
		{"shards", strconv.Itoa(len(v.Shards))},
		{"slots_assigned", strconv.Itoa(v.Assigned())},
	}
}

// The CLUSTERX command (command.ClusterAdmin).

var errNotSharded = errors.New("ERR This instance has cluster support disabled (cluster-enabled no)")

func (s *Server) shardsOrErr() (*shardState, error) {
	if s.shards == nil {
		return nil, errNotSharded
	}
	return s.shards, nil
}

// ClusterXBootstrap implements command.ClusterAdmin.
func (s *Server) ClusterXBootstrap() error {
	sh, err := s.shardsOrErr()
	if err != nil {
		return err
	}
	return sh.node.Bootstrap()
}

// ClusterXJoin implements command.ClusterAdmin: this node asks a member at addr to add it.
func (s *Server) ClusterXJoin(addr string) error {
	sh, err := s.shardsOrErr()
	if err != nil {
		return err
	}
	n := sh.self()
	_, err = s.peerCall(addr, metaTimeout+4*time.Second,
		[]string{"CLUSTERX", "ADDNODE", n.ID, n.Shard, n.Addr, n.RaftAddr, n.MetaAddr})
	return err
}

// ClusterXAddNode implements command.ClusterAdmin.
func (s *Server) ClusterXAddNode(n cluster.Node) error {
	sh, err := s.shardsOrErr()
	if err != nil {
		return err
	}
	return sh.addNode(&n)
}

// ClusterXForget implements command.ClusterAdmin.
func (s *Server) ClusterXForget(id string) error {
	sh, err := s.shardsOrErr()
	if err != nil {
		return err
	}
	return sh.forget(id)
}

// ClusterXAssign implements command.ClusterAdmin.
func (s *Server) ClusterXAssign(shard string, slots []cluster.Range) error {
	sh, err := s.shardsOrErr()
	if err != nil {
		return err
	}
	return sh.apply(&cluster.Op{Kind: "assign", Shard: shard, Slots: slots})
}

// ClusterXApply implements command.ClusterAdmin.
func (s *Server) ClusterXApply(payload string) error {
	sh, err := s.shardsOrErr()
	if err != nil {
		return err
	}
	return sh.applyForwarded(payload)
}

// ClusterXMap implements command.ClusterAdmin.
func (s *Server) ClusterXMap() ([]byte, error) {
	sh, err := s.shardsOrErr()
	if err != nil {
		return nil, err
	}
	return sh.fsm.Map().Encode(), nil
}

// ClusterXStatus implements command.ClusterAdmin.
func (s *Server) ClusterXStatus() ([][2]string, error) {
	sh, err := s.shardsOrErr()
	if err != nil {
		return nil, err
	}
	return sh.status(), nil
}

package server

// The Redis Cluster facade of replicated mode (docs/replication.md, "What clients see"): a Raft
// group answers CLUSTER SLOTS/SHARDS/NODES/INFO/MYID as a Redis Cluster of one shard whose
// master is the leader and whose replicas are the followers, so that cluster clients find the
// leader and follow it through failovers.
//
// Every member's client address must be known to every node, identically, so that all of them
// describe the same topology: the addresses travel through the replicated log. A leader
// records its own with its leader entry; a follower that finds its address missing (or
// different) in the replicated map asks the leader to record it, with RAFT ANNOUNCE id addr
// sent to the leader's client port, and the leader proposes a member entry:
//
//	member := u8 3 | client host:port | 0 | node id   (an empty address forgets the node)
//
// The map is part of the Raft snapshots' metadata. A member removed with RAFT REMOVE leaves
// the topology at once (only the Raft configuration's members are listed) and its address is
// forgotten through a member entry.
//
// A follower authenticates to the leader as a Redis replica does to its master: masteruser
// and masterauth, masterauth defaulting to the node's own requirepass, because the members of
// a group normally share their passwords.

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/replication"
)

const entryMember = 3

// clusterNodeID is the 40-hex-digit cluster node id of a Raft member: SHA-1 of its Raft id, so
// that it is the same on every node and across restarts.
func clusterNodeID(raftID string) string {
	sum := sha1.Sum([]byte(raftID))
	return hex.EncodeToString(sum[:])
}

// memberPayload encodes a member (or leader) entry.
func memberPayload(kind byte, addr, id string) []byte {
	p := append([]byte{kind}, addr...)
	return append(append(p, 0), id...)
}

// applyMember applies a leader or member entry to the address map.
func (r *replState) applyMember(kind byte, rest []byte) {
	i := strings.IndexByte(string(rest), 0)
	if i < 0 {
		return
	}
	addr, id := string(rest[:i]), string(rest[i+1:])
	r.metaMu.Lock()
	if kind == entryMember && addr == "" {
		delete(r.leaders, id)
		delete(r.progress, id)
	} else {
		r.leaders[id] = addr
	}
	r.metaMu.Unlock()
}

func (r *replState) memberAddr(id string) string {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	return r.leaders[id]
}

// followerProgress is what a follower last reported to the leader (RAFT ANNOUNCE's applied
// index): hashicorp/raft keeps each follower's match index to itself, and INFO replication and
// CLUSTER NODES show Redis's per-replica offset and lag from this.
type followerProgress struct {
	applied int64
	at      time.Time
}

// progressEvery is how often a follower reports its applied index to the leader.
const progressEvery = time.Second

// announce records a member's client address in the log, and its applied index (applied >= 0)
// in the leader's memory; it runs on the leader.
func (r *replState) announce(id, addr string, applied int64) error {
	node := r.getNode()
	if node == nil {
		return errors.New("TRYAGAIN the Raft node is rebuilding")
	}
	if _, lid := node.Leader(); lid != node.ID() {
		return replication.ErrNotLeader
	}
	if addr != "" {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("invalid client address %q", addr)
		}
		if !slices.ContainsFunc(node.Members(), func(m replication.Member) bool { return m.ID == id }) {
			return fmt.Errorf("%q is not a member of the group", id)
		}
	}
	if applied >= 0 {
		r.metaMu.Lock()
		if r.progress == nil {
			r.progress = map[string]followerProgress{}
		}
		r.progress[id] = followerProgress{applied: applied, at: time.Now()}
		r.metaMu.Unlock()
	}
	if r.memberAddr(id) == addr {
		return nil
	}
	return node.Await(node.Raft.Apply(memberPayload(entryMember, addr, id), 10*time.Second))
}

// Liveness. Raft knows whether the leader is alive, but no node knows whether the other
// followers are; a Redis Cluster node learns it from its gossip pings. From the first CLUSTER
// command it answers on, a node probes the other members' client ports (PING every
// probeEvery; any reply counts, -NOAUTH included) and shows a member that answered none for
// memberTimeout as failed: CLUSTER NODES flags it "fail", CLUSTER SLOTS leaves it out of the
// replicas and CLUSTER SHARDS reports its health as "fail", as Redis does for a failed
// replica, so that clients reading from replicas do not pick a dead node.
const (
	probeEvery    = 500 * time.Millisecond
	memberTimeout = 1500 * time.Millisecond
)

// memberHealth is the last time each member's client address answered a probe.
type memberHealth struct {
	// wanted is set by the first CLUSTER command that shows the topology: a group nobody asks
	// about (no cluster client) probes nothing.
	wanted atomic.Bool
	mu     sync.Mutex
	seen   map[string]time.Time // client address -> last answer
}

func (h *memberHealth) ok(addr string, at time.Time) {
	h.mu.Lock()
	if h.seen == nil {
		h.seen = map[string]time.Time{}
	}
	h.seen[addr] = at
	h.mu.Unlock()
}

// failed reports whether addr has not answered for memberTimeout; an address never probed yet
// is not failed (it was just announced).
func (h *memberHealth) failed(addr string, now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, probed := h.seen[addr]
	return probed && now.Sub(at) > memberTimeout
}

// probe sends PING to addr and reports whether anything came back in time.
func probe(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, probeEvery)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeEvery))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return false
	}
	var b [1]byte
	_, err = conn.Read(b[:])
	return err == nil
}

// pause waits d, or less when the server closes; it reports false once it closes. Closing
// must not wait for these loops: a node being stopped stops at once.
func (r *replState) pause(d time.Duration, done <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.s.ctx.Done():
		return false
	case <-done:
		return false
	case <-t.C:
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.closed
}

// prober probes the other members until done is closed.
func (r *replState) prober(done <-chan struct{}) {
	for r.pause(probeEvery, done) {
		node := r.getNode()
		if node == nil || !r.health.wanted.Load() {
			continue
		}
		var targets []string
		if sh := r.s.shards; sh != nil {
			targets = sh.probeTargets() // every node of the cluster
		} else {
			for _, m := range node.Members() {
				if addr := r.memberAddr(m.ID); m.ID != node.ID() && addr != "" {
					targets = append(targets, addr)
				}
			}
		}
		var wg sync.WaitGroup
		for _, addr := range targets {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				if probe(addr) {
					r.health.ok(addr, start)
				} else {
					r.health.markProbed(addr, start)
				}
			}()
		}
		wg.Wait()
	}
}

// markProbed records that addr was probed without an answer: from then on it counts as
// failed once memberTimeout passes without one.
func (h *memberHealth) markProbed(addr string, at time.Time) {
	h.mu.Lock()
	if h.seen == nil {
		h.seen = map[string]time.Time{}
	}
	if _, ok := h.seen[addr]; !ok {
		h.seen[addr] = at
	}
	h.mu.Unlock()
}

// announcer runs on every node: while a leader is known, a follower tells it its client
// address (which the leader records in the log when it is new) and, every progressEvery, its
// applied index (INFO replication's offset and lag). It also runs the prober.
func (r *replState) announcer() {
	done := make(chan struct{})
	var probing sync.WaitGroup
	probing.Add(1)
	go func() { defer probing.Done(); r.prober(done) }()
	defer probing.Wait()
	defer close(done)
	wait := 200 * time.Millisecond
	var lastErr string
	for r.pause(wait, nil) {
		node := r.getNode()
		if node == nil {
			continue
		}
		_, lid := node.Leader()
		if lid == "" || lid == node.ID() {
			wait = 200 * time.Millisecond
			continue
		}
		if r.memberAddr(node.ID()) == r.self {
			wait = progressEvery // recorded: from now on the announcements report progress
		}
		laddr := r.memberAddr(lid)
		if laddr == "" || !slices.ContainsFunc(node.Members(), func(m replication.Member) bool { return m.ID == node.ID() }) {
			continue
		}
		if err := r.sendAnnounce(laddr, node.ID()); err != nil {
			if err.Error() != lastErr {
				r.s.log.Warn("Could not announce this node's client address to the Raft leader", "leader", laddr, "err", err)
				lastErr = err.Error()
			}
			wait = min(wait*2, 5*time.Second)
			continue
		}
		lastErr = ""
		if r.memberAddr(node.ID()) != r.self {
			wait = 200 * time.Millisecond // until the entry recording it is applied here
		}
	}
}

// sendAnnounce sends RAFT ANNOUNCE to the leader's client port (peerCall authenticates).
func (r *replState) sendAnnounce(leaderAddr, id string) error {
	applied := int64(0)
	if node := r.getNode(); node != nil {
		applied = int64(node.Raft.AppliedIndex())
	}
	_, err := r.s.peerCall(leaderAddr, 12*time.Second, []string{"RAFT", "ANNOUNCE", id, r.self, strconv.FormatInt(applied, 10)})
	return err
}

// followerReadOK reports whether a follower may run a READONLY client's read: while it is in
// contact with a leader (heard from it within raft-heartbeat-timeout), which bounds how stale
// the state it reads can be.
func (r *replState) followerReadOK() bool {
	node := r.getNode()
	if node == nil {
		return false
	}
	if _, lid := node.Leader(); lid == "" || lid == node.ID() {
		return false
	}
	return time.Since(node.Raft.LastContact()) <= r.cfg.HeartbeatTimeout
}

// ClusterState implements command.ClusterView: nil standalone.
func (s *Server) ClusterState() *command.ClusterState {
	r := s.repl
	if r == nil {
		return nil
	}
	r.health.wanted.Store(true)
	now := time.Now()
	st := &command.ClusterState{NowMs: now.UnixMilli()}
	own, term := r.groupShard(now)
	if s.shards != nil {
		return s.shards.clusterState(st, own, now)
	}
	st.Epoch = term
	if own.Leader >= 0 {
		own.Slots = [][2]int{{0, 16383}}
	}
	st.Shards = []command.ClusterShard{own}
	return st
}

// groupShard describes this node's Raft group as a shard without slots, from the node's own
// Raft state (fresher than anything the slot map says), and returns the group's term.
func (r *replState) groupShard(now time.Time) (command.ClusterShard, int64) {
	sh := command.ClusterShard{Leader: -1}
	node := r.getNode()
	if node == nil {
		return sh, 0
	}
	stats := node.Raft.Stats()
	term, _ := strconv.ParseInt(stats["term"], 10, 64)
	applied := int64(node.Raft.AppliedIndex())
	commit, _ := strconv.ParseInt(stats["commit_index"], 10, 64)
	leaderID, down := "", false
	if r.servingA.Load() {
		leaderID = node.ID()
	} else if _, lid := node.Leader(); lid != "" && lid != node.ID() && r.memberAddr(lid) != "" {
		leaderID = lid
	}
	// During an election the slots stay with the last leader, flagged failed, as a Redis
	// Cluster keeps them with a failed master until a replica takes over: clients then keep a
	// covered slot map and retry until the new leader shows up.
	r.metaMu.Lock()
	if leaderID != "" {
		r.lastLeader = leaderID
	} else if r.lastLeader != "" && r.leaders[r.lastLeader] != "" {
		leaderID, down = r.lastLeader, true
	}
	r.metaMu.Unlock()
	for _, m := range node.Members() {
		n := command.ClusterNode{ID: clusterNodeID(m.ID), RaftID: m.ID, Myself: m.ID == node.ID(),
			Master: m.ID == leaderID, Offset: commit}
		if _, p, err := net.SplitHostPort(m.Addr); err == nil {
			n.BusPort, _ = strconv.Atoi(p)
		}
		addr := r.memberAddr(m.ID)
		if n.Myself {
			addr, n.Offset = r.self, applied
		} else if p, ok := r.followerProgress(m.ID); ok && r.servingA.Load() {
			n.Offset = p.applied
		}
		if h, p, err := net.SplitHostPort(addr); err == nil {
			n.Host = h
			n.Port, _ = strconv.Atoi(p)
		}
		n.Failed = !n.Myself && addr != "" && r.health.failed(addr, now)
		sh.Nodes = append(sh.Nodes, n)
	}
	sortShardNodes(&sh)
	if len(sh.Nodes) > 0 && sh.Nodes[0].Master {
		sh.Leader, sh.LeaderDown = 0, down
	}
	return sh, term
}

// sortShardNodes puts the leader first, then the others by Raft id: every node lists them in
// the same order.
func sortShardNodes(sh *command.ClusterShard) {
	slices.SortFunc(sh.Nodes, func(a, b command.ClusterNode) int {
		if a.Master != b.Master {
			if a.Master {
				return -1
			}
			return 1
		}
		return strings.Compare(a.RaftID, b.RaftID)
	})
}

// followerProgress returns what member id last reported to this node as leader.
func (r *replState) followerProgress(id string) (followerProgress, bool) {
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	p, ok := r.progress[id]
	return p, ok
}

// RaftAnnounce implements command.RaftAdmin.
func (s *Server) RaftAnnounce(id, addr string, applied int64) error {
	if s.repl == nil {
		return errStandalone
	}
	if err := s.repl.announce(id, addr, applied); err != nil {
		if strings.HasPrefix(err.Error(), "TRYAGAIN") {
			return err
		}
		return fmt.Errorf("ERR %s", err.Error())
	}
	return nil
}

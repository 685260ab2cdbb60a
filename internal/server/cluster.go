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
	"bufio"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
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

// announce records a member's client address in the log; it runs on the leader.
func (r *replState) announce(id, addr string) error {
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
	if r.memberAddr(id) == addr {
		return nil
	}
	return node.Raft.Apply(memberPayload(entryMember, addr, id), 10*time.Second).Error()
}

// announcer runs on every node: while a leader is known and this node's client address is not
// the one the replicated map holds, it asks the leader to record it.
func (r *replState) announcer() {
	wait := 200 * time.Millisecond
	var lastErr string
	for {
		r.mu.Lock()
		closed := r.closed
		r.mu.Unlock()
		if closed {
			return
		}
		time.Sleep(wait)
		node := r.getNode()
		if node == nil {
			continue
		}
		_, lid := node.Leader()
		if lid == "" || lid == node.ID() || r.memberAddr(node.ID()) == r.self {
			wait = 200 * time.Millisecond
			continue
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
		wait = 200 * time.Millisecond
	}
}

// sendAnnounce sends AUTH (if configured) and RAFT ANNOUNCE to the leader's client port.
func (r *replState) sendAnnounce(leaderAddr, id string) error {
	conn, err := net.DialTimeout("tcp", leaderAddr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(12 * time.Second))
	rd := bufio.NewReader(conn)
	call := func(args ...string) error {
		var b strings.Builder
		fmt.Fprintf(&b, "*%d\r\n", len(args))
		for _, a := range args {
			fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
		}
		if _, err := conn.Write([]byte(b.String())); err != nil {
			return err
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.HasPrefix(line, "-") {
			return errors.New(strings.TrimSpace(line[1:]))
		}
		return nil
	}
	user, pass := r.s.cfg.Get("masteruser"), r.s.cfg.Get("masterauth")
	if pass == "" {
		pass = r.s.cfg.Get("requirepass")
	}
	switch {
	case user != "":
		err = call("AUTH", user, pass)
	case pass != "":
		err = call("AUTH", pass)
	}
	if err != nil {
		return fmt.Errorf("AUTH: %w", err)
	}
	return call("RAFT", "ANNOUNCE", id, r.self)
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
	st := &command.ClusterState{Leader: -1, NowMs: time.Now().UnixMilli()}
	node := r.getNode()
	if node == nil {
		return st
	}
	stats := node.Raft.Stats()
	st.Epoch, _ = strconv.ParseInt(stats["term"], 10, 64)
	applied := int64(node.Raft.AppliedIndex())
	commit, _ := strconv.ParseInt(stats["commit_index"], 10, 64)
	leaderID := ""
	if r.servingA.Load() {
		leaderID = node.ID()
	} else if _, lid := node.Leader(); lid != "" && lid != node.ID() && r.memberAddr(lid) != "" {
		leaderID = lid
	}
	for _, m := range node.Members() {
		n := command.ClusterNode{ID: clusterNodeID(m.ID), RaftID: m.ID, Myself: m.ID == node.ID(),
			Master: m.ID == leaderID, Offset: commit}
		if _, p, err := net.SplitHostPort(m.Addr); err == nil {
			n.BusPort, _ = strconv.Atoi(p)
		}
		addr := r.memberAddr(m.ID)
		if n.Myself {
			addr, n.Offset = r.self, applied
		}
		if h, p, err := net.SplitHostPort(addr); err == nil {
			n.Host = h
			n.Port, _ = strconv.Atoi(p)
		}
		st.Nodes = append(st.Nodes, n)
	}
	// The leader first, then the others by Raft id: every node lists them in the same order.
	slices.SortFunc(st.Nodes, func(a, b command.ClusterNode) int {
		if a.Master != b.Master {
			if a.Master {
				return -1
			}
			return 1
		}
		return strings.Compare(a.RaftID, b.RaftID)
	})
	if len(st.Nodes) > 0 && st.Nodes[0].Master {
		st.Leader = 0
	}
	return st
}

// RaftAnnounce implements command.RaftAdmin.
func (s *Server) RaftAnnounce(id, addr string) error {
	if s.repl == nil {
		return errStandalone
	}
	if err := s.repl.announce(id, addr); err != nil {
		if strings.HasPrefix(err.Error(), "TRYAGAIN") {
			return err
		}
		return fmt.Errorf("ERR %s", err.Error())
	}
	return nil
}

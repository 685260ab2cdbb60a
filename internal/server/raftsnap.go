package server

// Snapshots. A Raft snapshot must be the state after exactly the entries up to some index. A
// follower's store always is (it only applies the log), so hashicorp/raft's own schedule
// snapshots followers; their encoding runs on the apply loop, though, which it stalls, so a
// follower also waits until the log applied since its last snapshot is at least as large as
// that snapshot (followerSnapshot), and an election cancels the encoding (a new leader serves
// only once it has applied the log). The leader's store is ahead of its log while commands run: it
// holds effects proposed and not committed, and effects not proposed yet. Go cannot fork, so
// the leader stops the world instead, as SAVE does: it takes command.Table.World exclusively
// (no keyspace command runs or starts), every shard lock (active expiry stops), waits until
// everything appended is committed and applied, and only then lets the FSM encode the store.
// The pause lasts one commit round plus the encoding, so the leader snapshots only when the log
// written since its last snapshot is at least as large as that snapshot was (and at least
// raft-snapshot-threshold entries long): the pauses then cost a bounded share of the time,
// amortised as Redis's auto-aof-rewrite-percentage 100 amortises AOF rewrites.
//
// Entries vary in size by thousands of times (one effect for a lone write, thousands under
// pipelined load), so an entry count alone does not bound the log: 8192 entries of a pipelined
// load were hundreds of MB, all replayed by a node that restarts, and a node elected while it
// replays serves only after it. So a snapshot is also due, on every node, once the log since
// the last one holds raft-snapshot-log-bytes (and is as large as that snapshot): the leader's
// snapshotter checks it, and on a follower it asks hashicorp/raft for a snapshot, which its own
// entry-count schedule would not take yet.

import (
	"errors"
	"strconv"
	"time"

	"github.com/hotkv/hotkv/internal/replication"
)

// leaderSnapState is the leader's snapshot bookkeeping (guarded by replState.snapMu).
type leaderSnapState struct {
	lastSize int64 // bytes of the last snapshot this node took as leader
	loggedAt int64 // replState.loggedBytes then
}

// snapshotCheckEvery is how often the leader looks whether a snapshot is due.
const snapshotCheckEvery = time.Second

// snapshotter takes the leader's snapshots when they are due (see the file comment).
func (r *replState) snapshotter() {
	t := time.NewTicker(snapshotCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		node := r.getNode()
		if node == nil {
			continue
		}
		logBytes := r.s.cfg.GetInt("raft-snapshot-log-bytes")
		if !r.servingA.Load() {
			// A follower: hashicorp/raft snapshots it by entry count; by bytes, HotKV asks.
			if since, last := r.followerLogSinceSnapshot(); since >= logBytes && since >= last {
				if err := node.Await(node.Raft.Snapshot()); err != nil {
					r.s.log.Debug("Follower snapshot by log size not taken", "err", err)
				}
			}
			continue
		}
		st := node.Raft.Stats()
		last, _ := strconv.ParseUint(st["last_log_index"], 10, 64)
		snap, _ := strconv.ParseUint(st["last_snapshot_index"], 10, 64)
		r.snapMu.Lock()
		logged := r.loggedBytes.Load() - r.leaderSnap.loggedAt
		due := logged >= r.leaderSnap.lastSize
		r.snapMu.Unlock()
		if !due || (last-snap < r.cfg.SnapshotThreshold && logged < logBytes) {
			continue
		}
		if err := r.leaderSnapshot(node, false); err != nil {
			r.s.log.Warn("Leader snapshot failed", "err", err)
		}
	}
}

// errNotFrozen is returned when the leader could not reach a quiet point to snapshot at.
var errNotFrozen = errors.New("TRYAGAIN the leader could not commit its pending writes for a snapshot; try again")

// leaderSnapshot stops the world, waits until every effect appended is committed and
// applied, and takes a Raft snapshot of the store. With wait it returns once the snapshot is
// persisted (RAFT SNAPSHOT); otherwise once it is encoded, which is when the world resumes.
func (r *replState) leaderSnapshot(node *replication.Node, wait bool) error {
	r.snapMu.Lock()
	defer r.snapMu.Unlock()
	done := make(chan error, 1)
	err := func() error {
		r.world.Lock()
		defer r.world.Unlock()
		r.s.store.LockAll()
		defer r.s.store.UnlockAll()
		gen := r.lossGen.Load()
		target := r.appendedA.Load()
		if !r.waitDurable(target, 2*time.Second) || r.lossGen.Load() != gen {
			return errNotFrozen
		}
		// frozenAt is the cut plus one, so that a leader that appended nothing yet has one.
		r.frozenAt.Store(target + 1)
		defer func() {
			// The world restarts only once no encoding of it can be running. This returns
			// early when the node closes (Await gives up on a closing node) while the apply
			// goroutine may still be encoding the store without its locks; the race detector
			// caught writes under such an encoding in the sharded failover tests, whose nodes
			// close while serving. Once frozenAt is 0, a Snapshot that has not raised snapHeld
			// yet will see it and not encode.
			r.frozenAt.Store(0)
			for r.snapHeld.Load() {
				time.Sleep(time.Millisecond)
			}
		}()
		for len(r.encoded) > 0 {
			<-r.encoded
		}
		f := node.Raft.Snapshot()
		go func() { done <- node.Await(f) }()
		select {
		case n := <-r.encoded:
			if n < 0 {
				return errors.New("ERR the leader snapshot could not be encoded (see the log)")
			}
			r.leaderSnap.lastSize = int64(n)
			r.leaderSnap.loggedAt = r.loggedBytes.Load()
			return nil
		case err := <-done:
			if err == nil {
				err = errors.New("ERR the snapshot completed without the leader's store")
			}
			return err
		}
	}()
	if err != nil || !wait {
		return err
	}
	return <-done
}

// RaftSnapshot implements command.RaftAdmin: RAFT SNAPSHOT.
func (s *Server) RaftSnapshot() error {
	if s.repl == nil {
		return errStandalone
	}
	r := s.repl
	node := r.getNode()
	if node == nil {
		return errors.New("TRYAGAIN the Raft node is rebuilding")
	}
	if r.servingA.Load() {
		return r.leaderSnapshot(node, true)
	}
	r.forceSnap.Store(true)
	if err := node.Await(node.Raft.Snapshot()); err != nil {
		return errors.New("ERR " + err.Error())
	}
	return nil
}

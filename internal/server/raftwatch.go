package server

// Fast failure detection. Raft learns that a leader died only from silence: a follower waits 1
// to 2 heartbeat timeouts, and until every survivor has waited that long, the others refuse its
// pre-vote (they still have a leader) and it retries an election timeout later: up to about
// four heartbeat timeouts (2 s at the defaults) before a new leader serves. When the leader's
// process dies or shuts down, though, the kernel resets its connections at once. Each follower
// therefore holds one idle connection to the leader's client port; when it breaks (EOF or a
// reset, never a timeout: a paused or partitioned leader keeps it open and is left to Raft's
// timers), the follower hurries (replication.Node.Hurry: heartbeat and election timeouts cut to
// the leader lease) until a new leader is known or hurryFor passes. Every survivor sees the
// reset, so all of them hurry together. A false alarm (the connection closed by CLIENT KILL,
// say) is harmless: a live leader's heartbeats (every tenth of its heartbeat timeout) keep a
// hurried follower's shorter timer from firing.

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// hurryFor bounds how long a follower keeps the shortened timeouts after its leader's
// connection broke.
const hurryFor = 3 * time.Second

// leaderWatch runs on every node, following whoever leads.
func (r *replState) leaderWatch() {
	for r.pause(200*time.Millisecond, nil) {
		node := r.getNode()
		if node == nil {
			continue
		}
		_, lid := node.Leader()
		addr := r.memberAddr(lid)
		if lid == "" || lid == node.ID() || addr == "" {
			continue
		}
		if !r.watchUntilBroken(addr) {
			continue // could not connect, or the leader changed: look again
		}
		// The leader's process went away: hurry until someone else leads, and free the apply
		// goroutine of a snapshot's encoding (raft.go, followerSnapshot).
		r.cancelFollowerSnapshot()
		if node = r.getNode(); node == nil || node.Hurry(true) != nil {
			continue
		}
		r.s.log.Warn("The Raft leader's connection was reset; shortening the election timeouts", "leader", lid)
		deadline := time.Now().Add(hurryFor)
		for time.Now().Before(deadline) && r.pause(20*time.Millisecond, nil) {
			if _, now := node.Leader(); now != "" && now != lid {
				break
			}
		}
		if n := r.getNode(); n == node {
			_ = node.Hurry(false)
		}
	}
}

// watchUntilBroken connects to the leader's client port and waits; it reports true when the
// connection ends by EOF or a reset (the leader's process is gone), false when it cannot
// connect, this node closes, or the leader changes.
func (r *replState) watchUntilBroken(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-r.s.ctx.Done():
		case <-r.stop:
		case <-done:
			return
		}
		_ = conn.Close()
	}()
	// A PING per second keeps the connection from idling out (the timeout directive); between
	// them the watcher waits in a read, which a reset or EOF ends at once and the deadline
	// ends after a second.
	rd := bufio.NewReader(conn)
	start := r.getNode()
	for {
		if start == nil || r.getNode() != start {
			return false
		}
		if _, lid := start.Leader(); r.memberAddr(lid) != addr {
			return false
		}
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return broken(err) && !r.closing()
		}
		for {
			if _, err := rd.ReadString('\n'); err != nil {
				if broken(err) {
					return !r.closing()
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					break // alive and quiet: PING again
				}
				return false
			}
		}
	}
}

// broken reports whether err says the peer closed or reset the connection.
func broken(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// closing reports whether this node is shutting down.
func (r *replState) closing() bool {
	select {
	case <-r.stop:
		return true
	case <-r.s.ctx.Done():
		return true
	default:
		return false
	}
}

package server

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/rls"
)

const (
	// rlsForwardTimeout bounds one relay to another node: the dial, the authentication, the
	// commands and their replies. Envoy's own timeout for a rate limit call is usually shorter
	// (20 ms in its examples) and cancels the call first; this one only stops a relay to a
	// node that stopped answering from holding its connection for ever.
	rlsForwardTimeout = 2 * time.Second
	// rlsForwardHops is how many MOVED replies in a row a decision follows: one is normal (the
	// owner, or a follower's leader), a second happens when the slot moved or the leader changed
	// since this node last heard; more means the cluster is in flux, and the call is answered
	// UNAVAILABLE rather than chased further.
	rlsForwardHops = 3
	// rlsIdlePerPeer is how many relay connections to one node are kept open between calls:
	// enough for the concurrency Envoy usually drives (one call per connection at a time).
	rlsIdlePerPeer = 32
)

// rlsForwarder relays the rate limit service's commands that this node cannot run (their
// local reply is a MOVED: a Raft follower, or a shard that does not own the key) to the node
// the MOVED names, over its client port as a member of the cluster (peerConn: masteruser and
// masterauth), and hands the owner's replies back in place of the MOVED. Envoy can then be
// pointed at any node of a group or cluster: every decision is still made, once, by the
// leader of the shard that owns its key, and answered after it committed there.
type rlsForwarder struct {
	s  *Server
	mu sync.Mutex
	// idle are open relay connections by client address, most recently used last.
	idle   map[string][]*peerConn
	closed bool
	// calls counts relays answered (one per node per decision); errors those that failed, so
	// that the decision was answered UNAVAILABLE (RLS STATUS).
	calls, errors atomic.Int64
}

// forward relays every command group of cmds whose local replies hold a MOVED and writes the
// replies it gets back into replies. A group is one command, or MULTI through EXEC (a
// transaction must reach one node whole: its queued commands answer MOVED one by one and its
// EXEC answers EXECABORT). A group still answered MOVED after rlsForwardHops relays keeps that
// reply, which the service turns into UNAVAILABLE.
func (f *rlsForwarder) forward(cmds [][][]byte, replies [][]byte) error {
	for range rlsForwardHops {
		var addrs []string
		groups := map[string][][2]int{}
		for i := 0; i < len(cmds); {
			j := groupEnd(cmds, i)
			if addr := movedAddr(replies[i:j]); addr != "" {
				if _, seen := groups[addr]; !seen {
					addrs = append(addrs, addr)
				}
				groups[addr] = append(groups[addr], [2]int{i, j})
			}
			i = j
		}
		if len(addrs) == 0 {
			return nil
		}
		for _, addr := range addrs {
			if err := f.relay(addr, cmds, groups[addr], replies); err != nil {
				f.errors.Add(1)
				return fmt.Errorf("%w: relaying to %s: %v", rls.ErrUnavailable, addr, err)
			}
			f.calls.Add(1)
		}
	}
	return nil
}

// relay sends the groups' commands to addr in one round trip and reads their replies. A
// connection taken from the pool may have been closed by the other side since (a restart):
// the relay is then tried once more on a new one, which is safe because nothing was answered.
func (f *rlsForwarder) relay(addr string, cmds [][][]byte, groups [][2]int, replies [][]byte) error {
	for attempt := 0; ; attempt++ {
		p, reused, err := f.get(addr)
		if err != nil {
			return err
		}
		answered, err := relayOn(p, cmds, groups, replies)
		if err == nil {
			f.put(addr, p)
			return nil
		}
		p.close()
		if !reused || answered || attempt > 0 {
			return err
		}
	}
}

// relayOn runs the groups on p; answered reports whether any reply had arrived when it failed.
func relayOn(p *peerConn, cmds [][][]byte, groups [][2]int, replies [][]byte) (answered bool, err error) {
	_ = p.conn.SetDeadline(time.Now().Add(rlsForwardTimeout))
	for _, g := range groups {
		for _, args := range cmds[g[0]:g[1]] {
			p.sendArgs(args)
		}
	}
	if err := p.w.Flush(); err != nil {
		return false, err
	}
	for _, g := range groups {
		for k := g[0]; k < g[1]; k++ {
			rep, err := resp.ReadRawReply(p.rd, nil)
			if err != nil {
				return k > groups[0][0], err
			}
			replies[k] = rep
		}
	}
	return true, nil
}

func (f *rlsForwarder) get(addr string) (p *peerConn, reused bool, err error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, false, fmt.Errorf("the server is shutting down")
	}
	if l := f.idle[addr]; len(l) > 0 {
		p = l[len(l)-1]
		f.idle[addr] = l[:len(l)-1]
		f.mu.Unlock()
		return p, true, nil
	}
	f.mu.Unlock()
	p, err = f.s.dialPeer(addr, rlsForwardTimeout)
	return p, false, err
}

func (f *rlsForwarder) put(addr string, p *peerConn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || len(f.idle[addr]) >= rlsIdlePerPeer {
		p.close()
		return
	}
	if f.idle == nil {
		f.idle = map[string][]*peerConn{}
	}
	f.idle[addr] = append(f.idle[addr], p)
}

// close closes the idle connections and makes later relays fail.
func (f *rlsForwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	for _, l := range f.idle {
		for _, p := range l {
			p.close()
		}
	}
	f.idle = nil
}

// groupEnd returns the end of the command group starting at i: past the EXEC or DISCARD of a
// MULTI, else i+1.
func groupEnd(cmds [][][]byte, i int) int {
	if !bytes.EqualFold(cmds[i][0], []byte("multi")) {
		return i + 1
	}
	for j := i + 1; j < len(cmds); j++ {
		if bytes.EqualFold(cmds[j][0], []byte("exec")) || bytes.EqualFold(cmds[j][0], []byte("discard")) {
			return j + 1
		}
	}
	return len(cmds)
}

// movedAddr is the address in the first -MOVED reply among replies, "" when there is none.
func movedAddr(replies [][]byte) string {
	for _, r := range replies {
		if !bytes.HasPrefix(r, []byte("-MOVED ")) {
			continue
		}
		f := bytes.Fields(r[1:])
		if len(f) == 3 {
			return string(f[2])
		}
	}
	return ""
}

package server

import (
	"strings"
	"sync"
	"time"
)

// topology tells blocked clients that what this node serves may have changed: it lost Raft
// leadership, or the cluster's slot map moved. A client blocked in BLPOP and friends then
// asks the command gate again, and one whose keys are now served elsewhere gets the redirect
// (-MOVED, -CLUSTERDOWN) instead of waiting for pushes that go to another node, as Redis
// Cluster's clusterRedirectBlockedClientIfNeeded does. A channel closed on each change lets
// any number of blocked connections wait on it in their select without a registry.
type topology struct {
	mu sync.Mutex
	ch chan struct{}
}

// watch returns a channel closed at the next change.
func (t *topology) watch() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ch == nil {
		t.ch = make(chan struct{})
	}
	return t.ch
}

// changed wakes every watcher.
func (t *topology) changed() {
	t.mu.Lock()
	if t.ch != nil {
		close(t.ch)
		t.ch = nil
	}
	t.mu.Unlock()
}

// blockedGate asks the command gate again about a blocked command (args), after a topology
// change. It returns the gate's refusal ("" while this node still serves the command's keys)
// and whether that answer is transient: no leader known yet, or the slot is being moved. A
// transient answer changes without another notification (a follower learns the new leader
// from Raft), so the caller asks again shortly.
func (c *conn) blockedGate(args [][]byte) (msg string, transient bool) {
	t := c.srv.table
	if t.Gate == nil {
		return "", false
	}
	cmd := t.Lookup(args[0])
	if cmd == nil {
		return "", false
	}
	saved := c.ctx.Args
	c.ctx.Args = args
	msg = t.Gate(&c.ctx, cmd)
	c.ctx.Args = saved
	transient = strings.HasPrefix(msg, "TRYAGAIN ") || msg == errNoLeader
	return msg, transient
}

// recheckEvery is how often a blocked client asks the gate again while its answer is
// transient: short next to an election (hundreds of ms), long next to the gate's cost.
const recheckEvery = 100 * time.Millisecond

// errNoLeader is the gate's answer while this node knows no leader for its shard (an
// election).
const errNoLeader = "CLUSTERDOWN No leader for this shard"

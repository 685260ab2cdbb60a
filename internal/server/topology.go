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
// and whether that answer is transient: the slot is being moved (-TRYAGAIN) and stays this
// node's until the move's end, which notifies again, or the move fails and lifts the fence,
// which does not: the caller asks again shortly.
//
// No leader known (-CLUSTERDOWN, an election) is not transient: a node that lost leadership
// will apply the next leader's log, whose pushes must not serve its stale waiters (they
// would pop elements the log pops for the new leader's clients), so they are answered at
// once, as Redis Cluster answers -CLUSTERDOWN; cluster clients retry it.
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
	return msg, strings.HasPrefix(msg, "TRYAGAIN ")
}

// recheckEvery is how often a blocked client asks the gate again while its slot is fenced.
const recheckEvery = 100 * time.Millisecond

// errNoLeader is the gate's answer while this node knows no leader for its shard (an
// election).
const errNoLeader = "CLUSTERDOWN No leader for this shard"

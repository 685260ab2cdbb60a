package replication

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// peerAddrs is the transport's ServerAddressProvider when Config.PeerAddrs is set: it makes
// this node dial member id at PeerAddrs[id] instead of the address in the replicated Raft
// configuration. The configuration must keep every node's real address (it is the same on
// every node), while a test routes each node's outgoing links through its own fault proxies
// (internal/faultproxy Network: node i reaches node j at Link(i, j)); an operator can use it
// the same way for a NAT or a tunnel in front of a member.
//
// Members without an override are dialled at their configured address. hashicorp/raft also
// asks the provider for this node's own id when it encodes its address into RPC headers (the
// address followers record for their leader), so the node's own id answers its own Bind.
type peerAddrs struct {
	self      raft.ServerID
	selfAddr  raft.ServerAddress
	overrides map[raft.ServerID]raft.ServerAddress
	// raft is set once the Raft instance exists; before that only overrides and self resolve.
	raft atomic.Pointer[raft.Raft]
}

func newPeerAddrs(self, selfAddr string, overrides map[string]string) *peerAddrs {
	p := &peerAddrs{self: raft.ServerID(self), selfAddr: raft.ServerAddress(selfAddr),
		overrides: make(map[raft.ServerID]raft.ServerAddress, len(overrides))}
	for id, a := range overrides {
		p.overrides[raft.ServerID(id)] = raft.ServerAddress(a)
	}
	return p
}

// ServerAddr implements raft.ServerAddressProvider. An error makes the transport fall back to
// the address it was given (with a warning in its log).
func (p *peerAddrs) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if a, ok := p.overrides[id]; ok {
		return a, nil
	}
	if id == p.self {
		return p.selfAddr, nil
	}
	if r := p.raft.Load(); r != nil {
		// The latest configuration is an atomic load inside hashicorp/raft: cheap enough for
		// a dial, which the connection pool makes rare.
		cf := r.GetConfiguration()
		if cf.Error() == nil {
			for _, s := range cf.Configuration().Servers {
				if s.ID == id {
					return s.Address, nil
				}
			}
		}
	}
	return "", fmt.Errorf("no address known for member %q", id)
}

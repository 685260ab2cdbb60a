// Package cluster holds the slot map of a sharded HotKV cluster (docs/cluster.md, design
// ha-and-cluster.md §4): which shard (Raft group) owns each of the 16384 Redis Cluster slots,
// which nodes make up each shard, which node last led each shard, and the slot moves in
// progress. The map is the state machine of the meta Raft group: every change is an Op
// committed to that group's log, applied in the same order on every node, so that every node
// describes the same topology to clients and redirects them the same way.
package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Slots is the number of Redis Cluster hash slots.
const Slots = 16384

// Range is an inclusive range of slots.
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

func (r Range) String() string {
	if r.Start == r.End {
		return strconv.Itoa(r.Start)
	}
	return strconv.Itoa(r.Start) + "-" + strconv.Itoa(r.End)
}

// Node is a member of the cluster: a HotKV process in one shard's Raft group.
type Node struct {
	// ID is the node's Raft id (raft-node-id), unique in the cluster.
	ID string `json:"id"`
	// Shard is the id of the shard (data Raft group) the node belongs to.
	Shard string `json:"shard"`
	// Addr is the node's client address (host:port), RaftAddr its data group's Raft address
	// (shown as the cluster bus port), MetaAddr its meta group's Raft address.
	Addr     string `json:"addr"`
	RaftAddr string `json:"raft_addr"`
	MetaAddr string `json:"meta_addr"`
}

// Shard is one Raft group and the slots it owns.
type Shard struct {
	ID    string  `json:"id"`
	Slots []Range `json:"slots"`
	// Leader is the node that last announced itself as the group's leader, in LeaderTerm of
	// the group's Raft: a hint, fenced by the term so that a deposed leader's late
	// announcement never overwrites its successor's. A stale hint costs a client one more
	// -MOVED (the follower it reaches redirects to the real leader).
	Leader     string `json:"leader,omitempty"`
	LeaderTerm uint64 `json:"leader_term,omitempty"`
}

// Migration is a move of a slot range from one shard to another, in progress: created by
// CLUSTERX MIGRATE, driven by the source shard's leader (docs/cluster.md, "Moving slots"),
// and ended by the "migrated" change that gives the slots to the target.
type Migration struct {
	ID    uint64 `json:"id"`
	Slots Range  `json:"slots"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Session names the target's latest import of the range (each CLUSTERX IMPORTING that
	// clears the target records a new one): only the copy that streamed into the latest
	// import may report the move done. Two copies can overlap: a source leader deposed
	// mid-copy finishing its copy while the new leader's copy, which cleared the target again,
	// is still streaming; the old copy's report would hand the target a range half re-copied.
	Session uint64 `json:"session,omitempty"`
}

// Map is the meta group's state.
type Map struct {
	// Epoch counts the changes of slot ownership: CLUSTER NODES shows it as the config epoch.
	Epoch  uint64            `json:"epoch"`
	Shards map[string]*Shard `json:"shards"`
	Nodes  map[string]*Node  `json:"nodes"`
	// Migrations are the moves in progress; NextMigration numbers the next one.
	Migrations    []*Migration `json:"migrations,omitempty"`
	NextMigration uint64       `json:"next_migration,omitempty"`
}

// NewMap returns an empty map: no shard, no node, no slot assigned.
func NewMap() *Map {
	return &Map{Shards: map[string]*Shard{}, Nodes: map[string]*Node{}}
}

// Op is one change to the map, the payload of a meta log entry (JSON).
type Op struct {
	// Kind is "node" (add or update Node), "forget" (remove node ID), "assign" (give the
	// unowned Slots to Shard), "hint" (ID leads Shard in Term), "migrate" (start moving
	// Slots[0] to Shard), "importing" (the target begins import Session of migration Mig) or
	// "migrated" (migration Mig is done: its slots go to its target; Session, when set, must
	// be the migration's latest import).
	Kind  string  `json:"op"`
	Node  *Node   `json:"node,omitempty"`
	ID    string  `json:"id,omitempty"`
	Shard string  `json:"shard,omitempty"`
	Slots []Range `json:"slots,omitempty"`
	Term  uint64  `json:"term,omitempty"`
	Mig   uint64  `json:"mig,omitempty"`
	// Session is an import session ("importing", "migrated").
	Session uint64 `json:"session,omitempty"`
}

// ErrNoChange is returned for an op that changes nothing (a repeated announcement): the
// proposer need not log it.
var ErrNoChange = errors.New("no change")

// ParseRanges parses slot arguments: pairs of start and end slots.
func ParseRanges(args []string) ([]Range, error) {
	if len(args) == 0 || len(args)%2 != 0 {
		return nil, errors.New("slot ranges come in pairs: start-slot end-slot")
	}
	var out []Range
	for i := 0; i < len(args); i += 2 {
		a, err1 := strconv.Atoi(args[i])
		b, err2 := strconv.Atoi(args[i+1])
		if err1 != nil || err2 != nil || a < 0 || b >= Slots || a > b {
			return nil, fmt.Errorf("invalid slot range %s %s", args[i], args[i+1])
		}
		out = append(out, Range{a, b})
	}
	return out, nil
}

// Check reports whether op would apply to m, and why not. The meta leader checks before
// proposing; Apply checks again, identically on every node, because two proposals may race.
func (m *Map) Check(op *Op) error {
	switch op.Kind {
	case "node":
		n := op.Node
		if n == nil || n.ID == "" || n.Shard == "" {
			return errors.New("a node needs an id and a shard")
		}
		if old, ok := m.Nodes[n.ID]; ok && *old == *n {
			return ErrNoChange
		}
		if old, ok := m.Nodes[n.ID]; ok && old.Shard != n.Shard {
			return fmt.Errorf("node %s belongs to shard %s, not %s (forget it first)", n.ID, old.Shard, n.Shard)
		}
	case "forget":
		if _, ok := m.Nodes[op.ID]; !ok {
			return fmt.Errorf("unknown node %s", op.ID)
		}
	case "assign":
		if _, ok := m.Shards[op.Shard]; !ok {
			return fmt.Errorf("unknown shard %s (it has no node yet)", op.Shard)
		}
		owner := m.owners()
		for _, r := range op.Slots {
			if r.Start < 0 || r.End >= Slots || r.Start > r.End {
				return fmt.Errorf("invalid slot range %d-%d", r.Start, r.End)
			}
			for s := r.Start; s <= r.End; s++ {
				if owner[s] != "" {
					return fmt.Errorf("slot %d is already owned by shard %s ", s, owner[s])
				}
			}
		}
	case "hint":
		sh, ok := m.Shards[op.Shard]
		if !ok {
			return fmt.Errorf("unknown shard %s", op.Shard)
		}
		if n, ok := m.Nodes[op.ID]; !ok || n.Shard != op.Shard {
			return fmt.Errorf("node %s is not in shard %s", op.ID, op.Shard)
		}
		if op.Term < sh.LeaderTerm || (op.Term == sh.LeaderTerm && op.ID == sh.Leader) {
			return ErrNoChange
		}
	case "migrate":
		if len(op.Slots) != 1 {
			return errors.New("a migration moves one slot range")
		}
		r := op.Slots[0]
		if _, ok := m.Shards[op.Shard]; !ok {
			return fmt.Errorf("unknown shard %s", op.Shard)
		}
		if r.Start < 0 || r.End >= Slots || r.Start > r.End {
			return fmt.Errorf("invalid slot range %d-%d", r.Start, r.End)
		}
		owner := m.owners()
		from := owner[r.Start]
		for s := r.Start; s <= r.End; s++ {
			if owner[s] == "" {
				return fmt.Errorf("slot %d is not assigned (CLUSTERX ASSIGN it instead)", s)
			}
			if owner[s] != from {
				return fmt.Errorf("slots %s belong to more than one shard (%s and %s): move each shard's part on its own", r, from, owner[s])
			}
		}
		if from == op.Shard {
			return fmt.Errorf("slots %s already belong to shard %s", r, from)
		}
		for _, mg := range m.Migrations {
			if mg.Slots.Start <= r.End && r.Start <= mg.Slots.End {
				return fmt.Errorf("slots %s are being moved already (migration %d)", mg.Slots, mg.ID)
			}
		}
	case "importing":
		mg := m.migration(op.Mig)
		if mg == nil {
			return fmt.Errorf("no migration %d in progress", op.Mig)
		}
		if op.Session == 0 {
			return errors.New("an import needs a session")
		}
	case "migrated":
		mg := m.migration(op.Mig)
		if mg == nil {
			return ErrNoChange // done already (a retried report)
		}
		if op.Session != 0 && mg.Session != op.Session {
			return fmt.Errorf("the copy of migration %d was started again (import %d, not %d): this copy is stale", op.Mig, mg.Session, op.Session)
		}
	default:
		return fmt.Errorf("unknown slot map change %q", op.Kind)
	}
	return nil
}

func (m *Map) migration(id uint64) *Migration {
	for _, mg := range m.Migrations {
		if mg.ID == id {
			return mg
		}
	}
	return nil
}

// Apply applies op; an op that Check refuses changes nothing and returns Check's error.
func (m *Map) Apply(op *Op) error {
	if err := m.Check(op); err != nil {
		return err
	}
	switch op.Kind {
	case "node":
		n := *op.Node
		m.Nodes[n.ID] = &n
		if _, ok := m.Shards[n.Shard]; !ok {
			m.Shards[n.Shard] = &Shard{ID: n.Shard}
		}
	case "forget":
		shard := m.Nodes[op.ID].Shard
		delete(m.Nodes, op.ID)
		if sh := m.Shards[shard]; sh != nil && sh.Leader == op.ID {
			sh.Leader = ""
		}
		if sh := m.Shards[shard]; sh != nil && len(sh.Slots) == 0 && len(m.shardNodes(shard)) == 0 {
			delete(m.Shards, shard)
		}
	case "assign":
		sh := m.Shards[op.Shard]
		sh.Slots = Normalize(append(sh.Slots, op.Slots...))
		m.Epoch++
	case "hint":
		sh := m.Shards[op.Shard]
		sh.Leader, sh.LeaderTerm = op.ID, op.Term
	case "migrate":
		m.NextMigration++
		r := op.Slots[0]
		m.Migrations = append(m.Migrations, &Migration{ID: m.NextMigration, Slots: r, From: m.owners()[r.Start], To: op.Shard})
	case "importing":
		m.migration(op.Mig).Session = op.Session
	case "migrated":
		mg := m.migration(op.Mig)
		from, to := m.Shards[mg.From], m.Shards[mg.To]
		if from != nil {
			from.Slots = Subtract(from.Slots, mg.Slots)
		}
		if to != nil {
			to.Slots = Normalize(append(to.Slots, mg.Slots))
		}
		m.Migrations = slices.DeleteFunc(m.Migrations, func(x *Migration) bool { return x.ID == op.Mig })
		m.Epoch++
	}
	return nil
}

// Subtract removes cut from rs.
func Subtract(rs []Range, cut Range) []Range {
	var out []Range
	for _, r := range rs {
		if r.End < cut.Start || r.Start > cut.End {
			out = append(out, r)
			continue
		}
		if r.Start < cut.Start {
			out = append(out, Range{r.Start, cut.Start - 1})
		}
		if r.End > cut.End {
			out = append(out, Range{cut.End + 1, r.End})
		}
	}
	return out
}

func (m *Map) shardNodes(shard string) []*Node {
	var out []*Node
	for _, n := range m.Nodes {
		if n.Shard == shard {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// owners returns each slot's owning shard id ("" when unassigned).
func (m *Map) owners() []string {
	out := make([]string, Slots)
	for id, sh := range m.Shards {
		for _, r := range sh.Slots {
			for s := r.Start; s <= r.End; s++ {
				out[s] = id
			}
		}
	}
	return out
}

// Normalize sorts ranges and merges the ones that touch or overlap.
func Normalize(rs []Range) []Range {
	rs = slices.Clone(rs)
	sort.Slice(rs, func(i, j int) bool { return rs[i].Start < rs[j].Start })
	var out []Range
	for _, r := range rs {
		if n := len(out); n > 0 && r.Start <= out[n-1].End+1 {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out = append(out, r)
	}
	return out
}

// Contains reports whether slot is in r.
func (r Range) Contains(slot int) bool { return r.Start <= slot && slot <= r.End }

// Encode returns the map as JSON (the meta group's snapshots, CLUSTERX MAP).
func (m *Map) Encode() []byte {
	b, _ := json.Marshal(m)
	return b
}

// Decode parses a map Encode wrote.
func Decode(b []byte) (*Map, error) {
	m := NewMap()
	if err := json.Unmarshal(b, m); err != nil {
		return nil, err
	}
	if m.Shards == nil {
		m.Shards = map[string]*Shard{}
	}
	if m.Nodes == nil {
		m.Nodes = map[string]*Node{}
	}
	return m, nil
}

// Clone returns a deep copy.
func (m *Map) Clone() *Map {
	c, _ := Decode(m.Encode())
	return c
}

// String describes the map for logs and errors.
func (m *Map) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "epoch %d:", m.Epoch)
	ids := make([]string, 0, len(m.Shards))
	for id := range m.Shards {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Fprintf(&b, " %s=%v", id, m.Shards[id].Slots)
	}
	return b.String()
}

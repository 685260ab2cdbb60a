package cluster

import (
	"encoding/json"
	"errors"
	"io"
	"sort"
	"sync"
	"sync/atomic"
)

// View is an immutable, indexed copy of a Map for the command path: the owner of a slot is
// one array load, with no lock and no allocation, on every keyed command.
type View struct {
	Epoch  uint64
	Shards []ShardView // sorted by id
	// Migrations are the slot moves in progress.
	Migrations []Migration
	// owner holds, per slot, the index in Shards of its owner plus one (0: unassigned).
	owner [Slots]uint16
	nodes map[string]*Node
}

// ShardView is a shard with its nodes, sorted by id.
type ShardView struct {
	Shard
	Nodes []Node
}

// Owner returns the shard owning slot, or nil when the slot is unassigned.
func (v *View) Owner(slot int) *ShardView {
	if v == nil {
		return nil
	}
	if i := v.owner[slot]; i > 0 {
		return &v.Shards[i-1]
	}
	return nil
}

// Node returns the node with Raft id id.
func (v *View) Node(id string) (Node, bool) {
	if v == nil {
		return Node{}, false
	}
	n, ok := v.nodes[id]
	if !ok {
		return Node{}, false
	}
	return *n, true
}

// Migration returns migration id, if it is in progress.
func (v *View) Migration(id uint64) (Migration, bool) {
	if v != nil {
		for _, mg := range v.Migrations {
			if mg.ID == id {
				return mg, true
			}
		}
	}
	return Migration{}, false
}

// Assigned counts the slots some shard owns.
func (v *View) Assigned() int {
	n := 0
	for _, o := range v.owner {
		if o > 0 {
			n++
		}
	}
	return n
}

// NewView indexes m (which it copies).
func NewView(m *Map) *View {
	m = m.Clone()
	v := &View{Epoch: m.Epoch, nodes: m.Nodes}
	for _, mg := range m.Migrations {
		v.Migrations = append(v.Migrations, *mg)
	}
	ids := make([]string, 0, len(m.Shards))
	for id := range m.Shards {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for i, id := range ids {
		sh := ShardView{Shard: *m.Shards[id]}
		for _, n := range m.shardNodes(id) {
			sh.Nodes = append(sh.Nodes, *n)
		}
		v.Shards = append(v.Shards, sh)
		for _, r := range sh.Slots {
			for s := r.Start; s <= r.End; s++ {
				v.owner[s] = uint16(i + 1)
			}
		}
	}
	return v
}

// FSM is the meta group's state machine (replication.FSM): it applies Ops to the Map and
// publishes a new View after each change.
type FSM struct {
	mu   sync.Mutex
	m    *Map
	view atomic.Pointer[View]
	// OnChange, when set before the FSM is used, runs after each new View is published
	// (outside the FSM's lock): the server wakes its blocked clients with it, whose slots
	// may have moved away.
	OnChange func()
}

// NewFSM returns the state machine of an empty map.
func NewFSM() *FSM {
	f := &FSM{m: NewMap()}
	f.view.Store(NewView(f.m))
	return f
}

// View returns the current view.
func (f *FSM) View() *View { return f.view.Load() }

// Map returns a copy of the current map.
func (f *FSM) Map() *Map {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Clone()
}

// Check reports whether op would apply to the current map (ErrNoChange when it changes
// nothing).
func (f *FSM) Check(op *Op) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Check(op)
}

// Apply implements replication.FSM; ApplyErr reports the outcome.
func (f *FSM) Apply(index, term uint64, data []byte) { _ = f.ApplyErr(index, term, data) }

// ApplyErr applies a logged Op and returns why it did not apply, if it did not: the
// proposer learns it through the Raft future (replication's ResultFSM).
func (f *FSM) ApplyErr(_, _ uint64, data []byte) error {
	var op Op
	if err := json.Unmarshal(data, &op); err != nil {
		return err
	}
	f.mu.Lock()
	err := f.m.Apply(&op)
	if err == nil {
		f.view.Store(NewView(f.m))
	}
	f.mu.Unlock()
	if err == nil && f.OnChange != nil {
		f.OnChange()
	}
	if errors.Is(err, ErrNoChange) {
		return nil
	}
	return err
}

// Snapshot implements replication.FSM.
func (f *FSM) Snapshot() ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m.Encode(), nil
}

// Restore implements replication.FSM.
func (f *FSM) Restore(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m, err := Decode(b)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.m = m
	f.view.Store(NewView(m))
	f.mu.Unlock()
	if f.OnChange != nil {
		f.OnChange()
	}
	return nil
}

// Package replication runs one HotKV node of a Raft group (design/ha-and-cluster.md §3): the
// hashicorp/raft instance with its raft-wal log, file snapshots and TCP transport, membership
// and leadership. What the log carries (batches of effects) and how it is applied belong to the
// server, which implements FSM; this package only moves bytes and reports who leads.
package replication

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
)

// Config describes a node. Zero durations take the LAN values of design §2.3.3.
type Config struct {
	// NodeID names the node in the group; it never changes for a data directory.
	NodeID string
	// Bind is the host:port the Raft transport listens on and that other members dial.
	Bind string
	// Dir holds the log (wal/) and the snapshots (snapshots/).
	Dir string
	// Bootstrap starts a new group of one voter (this node) if Dir holds no state yet.
	Bootstrap bool

	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// SnapshotThreshold is how many entries since the last snapshot trigger a new one.
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	// TrailingLogs is how many entries a snapshot leaves in the log (0: none).
	TrailingLogs uint64
	// LogOutput, when set, receives hashicorp/raft's own log lines.
	LogOutput io.Writer
	// PeerAddrs maps member ids to the address this node dials for them instead of the one
	// in the group's configuration (raft-peer-addr; see peers.go). Empty: no override.
	PeerAddrs map[string]string
}

// FSM is what the server implements: entries are applied in log order on every node.
type FSM interface {
	// Apply applies one committed entry's data.
	Apply(index, term uint64, data []byte)
	// Snapshot returns a point-in-time image of the state at the last applied entry. It runs
	// on the apply goroutine, so no Apply runs meanwhile; an error skips this snapshot.
	Snapshot() ([]byte, error)
	// Restore replaces the whole state with a snapshot's.
	Restore(r io.Reader) error
}

// Node is one member of a Raft group.
type Node struct {
	cfg   Config
	Raft  *raft.Raft
	trans *raft.NetworkTransport
	wal   *raftwal.WAL
	meta  *metadb.BoltMetaDB
	// stable is the WAL as raft's StableStore, closed before the stores (stable.go).
	stable *guardedStable
	zfs    *zeroFS
	snaps  *raft.FileSnapshotStore

	obsCh  chan raft.Observation
	obs    *raft.Observer
	closed chan struct{}
	wg     sync.WaitGroup
}

// logCacheEntries is how many of the newest log entries a node keeps in memory: more than the
// leader's entries in flight (8) times its followers, so a follower that keeps up never costs
// a read of the log. An entry holds at most 4 MiB of effects, usually a few KiB.
const logCacheEntries = 64

// ErrNotLeader is returned by membership changes sent to a follower.
var ErrNotLeader = errors.New("this node is not the leader")

// Start opens (or creates) the node's state in cfg.Dir and joins the group; onLeader is
// called from a goroutine of the node whenever leadership changes (true: this node leads).
func Start(cfg Config, fsm FSM, onLeader func(bool)) (*Node, error) {
	if cfg.NodeID == "" {
		return nil, errors.New("raft-node-id is empty")
	}
	if cfg.HeartbeatTimeout == 0 {
		cfg.HeartbeatTimeout = 500 * time.Millisecond
	}
	if cfg.ElectionTimeout == 0 {
		cfg.ElectionTimeout = 500 * time.Millisecond
	}
	if cfg.LeaderLeaseTimeout == 0 {
		cfg.LeaderLeaseTimeout = cfg.HeartbeatTimeout / 2
	}
	if cfg.CommitTimeout == 0 {
		cfg.CommitTimeout = 5 * time.Millisecond
	}
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = 8192
	}
	if cfg.SnapshotInterval == 0 {
		cfg.SnapshotInterval = 30 * time.Second
	}
	out := cfg.LogOutput
	if out == nil {
		out = io.Discard
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: out, Level: hclog.Info})

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	// Each entry carries a batch of up to thousands of effects: fewer entries are kept than
	// hashicorp/raft's default 10240 (raft-trailing-logs, 1024 by default).
	rc.TrailingLogs = cfg.TrailingLogs
	rc.MaxAppendEntries = 128
	rc.BatchApplyCh = true
	rc.Logger = logger
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, err
	}

	if err := os.MkdirAll(filepath.Join(cfg.Dir, "wal"), 0o755); err != nil {
		return nil, err
	}
	wal, meta, zfs, err := openWAL(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("opening the Raft log in %s: %w", cfg.Dir, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.Dir, 2, logger)
	if err != nil {
		_ = wal.Close()
		zfs.close()
		_ = meta.Close()
		return nil, fmt.Errorf("opening the Raft snapshots in %s: %w", cfg.Dir, err)
	}
	addr, err := net.ResolveTCPAddr("tcp", cfg.Bind)
	if err != nil {
		_ = wal.Close()
		zfs.close()
		_ = meta.Close()
		return nil, fmt.Errorf("raft address %q: %w", cfg.Bind, err)
	}
	var peers *peerAddrs
	// MaxRPCsInFlight 1 turns off hashicorp/raft's pipelined replication. With it on, a
	// leader that got a reply with a newer term (a partitioned leader after the heal) could
	// leave its replication goroutine blocked for good: the pipeline's decoder had stopped
	// reading, so the next send waited forever, and Raft.Shutdown, which waits for that
	// goroutine, never returned. The sharded chaos test caught it (a source leader cut off
	// mid-move never rebuilt itself after losing leadership, since the rebuild shuts the old
	// node down first); grafana/pyroscope#5518 describes the same deadlock. Batching already
	// puts many entries in each AppendEntries, which is where the throughput comes from
	// (the library's own documentation of this setting says as much).
	tcfg := &raft.NetworkTransportConfig{MaxPool: 4, Timeout: 5 * time.Second, Logger: logger, MaxRPCsInFlight: 1}
	if len(cfg.PeerAddrs) > 0 {
		peers = newPeerAddrs(cfg.NodeID, cfg.Bind, cfg.PeerAddrs)
		tcfg.ServerAddressProvider = peers
	}
	trans, err := raft.NewTCPTransportWithConfig(cfg.Bind, addr, tcfg)
	if err != nil {
		_ = wal.Close()
		zfs.close()
		_ = meta.Close()
		return nil, fmt.Errorf("listening for Raft on %s: %w", cfg.Bind, err)
	}
	n := &Node{cfg: cfg, trans: trans, wal: wal, meta: meta, zfs: zfs, snaps: snaps, closed: make(chan struct{})}
	if cfg.Bootstrap {
		has, err := raft.HasExistingState(wal, wal, snaps)
		if err != nil {
			n.closeStores()
			return nil, err
		}
		if !has {
			if err := raft.BootstrapCluster(rc, wal, wal, snaps, trans, raft.Configuration{Servers: []raft.Server{
				{Suffrage: raft.Voter, ID: rc.LocalID, Address: trans.LocalAddr()}}}); err != nil {
				n.closeStores()
				return nil, err
			}
		}
	}
	// The newest entries stay in memory as well as in the log: a leader reads every entry
	// back to send it to each follower, and a follower reads back every entry it stored to
	// apply it; without the cache each read is a pread of raft-wal's segment file (about 7%
	// of every node's CPU under allowed-decision load, docs/benchmarks.md).
	logs, err := raft.NewLogCache(logCacheEntries, wal)
	if err != nil {
		n.closeStores()
		return nil, err
	}
	n.stable = &guardedStable{s: wal}
	r, err := raft.NewRaft(rc, &fsmAdapter{fsm}, logs, n.stable, snaps, trans)
	if err != nil {
		n.closeStores()
		return nil, err
	}
	n.Raft = r
	if peers != nil {
		peers.raft.Store(r)
	}
	n.obsCh = make(chan raft.Observation, 16)
	n.obs = raft.NewObserver(n.obsCh, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	r.RegisterObserver(n.obs)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		leading := false
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-n.closed:
				return
			case <-n.obsCh:
			case <-tick.C:
			}
			now := r.State() == raft.Leader
			if now != leading {
				leading = now
				onLeader(now)
			}
		}
	}()
	return n, nil
}

func (n *Node) closeStores() {
	_ = n.trans.Close()
	_ = n.wal.Close()
	n.zfs.close()
	_ = n.meta.Close()
}

// Bootstrap starts a new group of one voter, this node, when it has no state yet.
func (n *Node) Bootstrap() error {
	return n.Await(n.Raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{
		{Suffrage: raft.Voter, ID: raft.ServerID(n.cfg.NodeID), Address: n.trans.LocalAddr()}}}))
}

// AddVoter adds (or updates) a voting member; only the leader can.
func (n *Node) AddVoter(id, addr string) error {
	return n.Await(n.Raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 10*time.Second))
}

// AddNonvoter adds (or updates) a member that receives the log but does not vote: the meta
// group's members beyond its voters, which need the slot map but not a say in it.
func (n *Node) AddNonvoter(id, addr string) error {
	return n.Await(n.Raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 10*time.Second))
}

// Remove removes a member; only the leader can.
func (n *Node) Remove(id string) error {
	return n.Await(n.Raft.RemoveServer(raft.ServerID(id), 0, 10*time.Second))
}

// Transfer hands leadership to id, or to the most up-to-date follower when id is empty.
func (n *Node) Transfer(id string) error {
	if id == "" {
		return n.Await(n.Raft.LeadershipTransfer())
	}
	cf := n.Raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == id {
			return n.Await(n.Raft.LeadershipTransferToServer(s.ID, s.Address))
		}
	}
	return fmt.Errorf("no member %q", id)
}

// Member is one server of the group's configuration.
type Member struct {
	ID, Addr string
	Voter    bool
}

// Members returns the group's latest configuration.
func (n *Node) Members() []Member {
	cf := n.Raft.GetConfiguration()
	if cf.Error() != nil {
		return nil
	}
	var out []Member
	for _, s := range cf.Configuration().Servers {
		out = append(out, Member{ID: string(s.ID), Addr: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	return out
}

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Addr is the Raft address other members dial.
func (n *Node) Addr() string { return string(n.trans.LocalAddr()) }

// Leader returns the leader's Raft address and id, empty when none is known.
func (n *Node) Leader() (addr, id string) {
	a, i := n.Raft.LeaderWithID()
	return string(a), string(i)
}

// Close stops the node without taking a snapshot.
func (n *Node) Close() error {
	select {
	case <-n.closed:
		return nil
	default:
	}
	close(n.closed)
	err := n.Raft.Shutdown().Error()
	n.Raft.DeregisterObserver(n.obs)
	n.wg.Wait()
	_ = n.trans.Close()
	n.stable.close() // a heartbeat the transport still answers must not reach closed stores
	if cerr := n.wal.Close(); err == nil {
		err = cerr
	}
	n.zfs.close()
	if cerr := n.meta.Close(); err == nil {
		err = cerr
	}
	return err
}

// fsmAdapter turns FSM into raft.FSM.
type fsmAdapter struct{ f FSM }

func (a *fsmAdapter) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	if rf, ok := a.f.(ResultFSM); ok {
		return rf.ApplyErr(l.Index, l.Term, l.Data)
	}
	a.f.Apply(l.Index, l.Term, l.Data)
	return nil
}

// ResultFSM is an FSM whose entries can be refused: the meta group's slot map checks each
// change against the state it applies to, and the proposer needs to know the outcome.
type ResultFSM interface {
	FSM
	// ApplyErr applies an entry as Apply does and returns why it changed nothing, if so.
	ApplyErr(index, term uint64, data []byte) error
}

// Await waits for f, a future of this node's Raft, and returns its error, or
// raft.ErrRaftShutdown once the node is closed. Every wait on one of the node's futures goes
// through it, because hashicorp/raft (v1.8.0) may never answer a future still queued when it
// shuts down, and its Apply and Barrier futures do not watch the shutdown (hashicorp/raft#498,
// open): an Apply racing the shutdown can land in the apply channel's buffer (BatchApplyCh)
// after the main loop has gone, and committed batches still buffered for the FSM are dropped.
// A leader that lost its leadership rebuilds itself on a new node (server/raft.go), so a wait
// on the old node's future lasted for good: the sharded chaos test caught the batch completer
// stuck on one, with every later write of the new leadership waiting behind it. The goroutine
// that waits for f outlives a close only while f stays unanswered.
func (n *Node) Await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-n.closed:
		select {
		case err := <-done: // answered as the node closed: the answer stands
			return err
		default:
			return raft.ErrRaftShutdown
		}
	}
}

// Propose appends data to the log, waits until it is applied here, and returns the
// ResultFSM's outcome; only the leader can.
func (n *Node) Propose(data []byte, timeout time.Duration) error {
	f := n.Raft.Apply(data, timeout)
	if err := n.Await(f); err != nil {
		if errors.Is(err, raft.ErrNotLeader) {
			return ErrNotLeader
		}
		return err
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

func (a *fsmAdapter) Snapshot() (raft.FSMSnapshot, error) {
	b, err := a.f.Snapshot()
	if err != nil {
		return nil, err
	}
	return snapshotBytes(b), nil
}

func (a *fsmAdapter) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	return a.f.Restore(rc)
}

// snapshotBytes is an image encoded in memory by Snapshot: Persist only writes it out, so it
// may run concurrently with Apply.
type snapshotBytes []byte

func (s snapshotBytes) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s snapshotBytes) Release() {}

// Hurry shortens this node's heartbeat and election timeouts to the leader lease (the least
// hashicorp/raft allows), or restores the configured ones. A follower that sees the leader's
// process go away (its connections reset) hurries, so that it, and the other survivors that
// saw the same, stop waiting for a leader that cannot answer: the election then starts after
// a lease instead of one to two heartbeat timeouts, and a refused pre-vote is retried as soon.
func (n *Node) Hurry(on bool) error {
	rc := n.Raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.HeartbeatTimeout, n.cfg.ElectionTimeout
	if on {
		rc.HeartbeatTimeout, rc.ElectionTimeout = n.cfg.LeaderLeaseTimeout, n.cfg.LeaderLeaseTimeout
	}
	return n.Raft.ReloadConfig(rc)
}

package server

// Replicated mode (raft-port > 0, docs/replication.md, design/ha-and-cluster.md §3): the node
// is a member of a Raft group (internal/replication). The leader runs commands as a
// standalone server does, against its own store; the effects they journal go, batched, into
// Raft entries instead of the append-only log, and a connection's replies wait until the
// entry holding its effects is committed on a majority and applied (the appendfsync always
// reply holding of conn.flush). Followers apply committed entries through the replayer the
// append-only log uses at load, at each batch's recorded time, and refuse keyspace commands
// with -MOVED to the leader.
//
// The leader's store is its speculative view: applied state plus effects not committed yet.
// When leadership ends with effects whose fate is unknown, the store may hold writes the
// group never committed; the node then rebuilds itself from its Raft snapshot and log (reset).
//
// Entry payloads:
//
//	batch  := u8 1 | u64 nonce | u64 seq | i64 leader_ts_ms | HKVL frame*
//	leader := u8 2 | client host:port | 0 | node id
//	member := u8 3 | client host:port | 0 | node id (cluster.go)
//
// nonce identifies the leadership (and the process) that proposed a batch: that leader's own
// store has the batch's effects already, so its FSM skips it; everyone else applies it.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/replication"
	"github.com/hotkv/hotkv/internal/store"
)

const (
	entryBatch  = 1
	entryLeader = 2
	// batchHeader is the size of a batch entry's header before its frames.
	batchHeader = 1 + 8 + 8 + 8
	// maxEntryBytes closes a batch early under heavy load; the rest goes in the next one.
	maxEntryBytes = 4 << 20
	// snapMagic starts a Raft snapshot: the group's metadata, then the HKVS snapshot.
	snapMagic = "HKVRAFT1"
)

var errNotServing = errors.New("not the serving leader")

// replState is a node's replication state; Server.repl is nil in standalone mode.
type replState struct {
	s    *Server
	cfg  replication.Config
	self string // this node's client address, host:port

	nodeMu sync.RWMutex
	node   *replication.Node // nil while the node is being rebuilt

	// mu guards the proposal side. Lock order: shard and limiter locks (held by Append's
	// callers), then mu.
	mu         sync.Mutex
	propose    *sync.Cond // signalled when pending grows, a block closes, or on close
	pending    frameBuf
	spare      []byte
	appended   uint64 // effects appended so far (sequence numbers)
	committed  uint64 // effects of committed batches (guarded by mu)
	lastTime   int64
	openBlocks int
	serving    bool
	nonce      uint64
	epoch      uint64 // leadership changes seen, to discard a stale promotion
	closed     bool

	servingA  atomic.Bool
	nonceA    atomic.Uint64
	appendedA atomic.Uint64
	// durable is the sequence number up to which every effect is settled: committed, or lost
	// with a lossGen bump. lossGen counts lost leaderships; a connection whose writes ran
	// across a bump may have lost them and answers TRYAGAIN.
	durable   atomic.Uint64
	lossGen   atomic.Uint64
	waitMu    sync.Mutex
	waiters   commitWaiters // guarded by waitMu
	resetting atomic.Bool

	// ackLeader is replication-ack leader: replies do not wait for the commit.
	ackLeader bool

	// world is command.Table.World: a leader snapshot holds it exclusively (raftsnap.go).
	world sync.RWMutex
	// frozenAt is, while a leader snapshot has stopped the world and everything appended is
	// committed and applied, the effect sequence number of that cut plus one; 0 otherwise.
	frozenAt   atomic.Uint64
	snapMu     sync.Mutex
	leaderSnap leaderSnapState
	stop       chan struct{} // closed by close
	// encoded receives the size of a snapshot the FSM encoded from the frozen world.
	encoded chan int
	// loggedBytes counts the batch bytes proposed by this node, for the leader's snapshot
	// trigger.
	loggedBytes atomic.Int64
	// appliedBytes counts the batch bytes applied from the log, and followerSnap what it was
	// and how large the snapshot was at a follower's last snapshot (FSM goroutine only): a
	// follower snapshots only when the log since then is at least as large (raftsnap.go).
	appliedBytes atomic.Int64
	// (atomic: the snapshotter goroutine reads them to decide when to ask for one).
	followerSnap struct{ lastSize, appliedAt atomic.Int64 }
	// snapBytes is the size of the last snapshot this node encoded, as leader or follower: the
	// next encoding starts with a buffer that large and a quarter more, instead of doubling
	// its way there. Doubling allocated about twice the snapshot's size in buffers that became
	// garbage at once (hundreds of MB for millions of keys), and on a node whose heap is mostly
	// the store, every such spike brings forward a collection that marks all of it.
	snapBytes atomic.Int64
	// snapHeld is true while Snapshot may encode the leader's stopped world (raftsnap.go).
	snapHeld atomic.Bool
	// forceSnap makes the next follower snapshot regardless (RAFT SNAPSHOT).
	forceSnap atomic.Bool
	// snapCancel stops a follower's snapshot encoding when the node is elected: the encoding
	// runs on the apply loop, and a new leader serves only once it has applied the log.
	snapCancelMu sync.Mutex
	snapCancel   context.CancelFunc

	futures chan inflight
	sem     chan struct{}
	wg      sync.WaitGroup

	// The FSM side, used by the apply goroutine (and by reset while no node runs).
	rp      replayer
	floor   atomic.Int64 // the largest leader timestamp applied: the log's time floor
	metaMu  sync.Mutex
	leaders map[string]string // node id -> client address, from leader entries
	// progress is, on the leader, each follower's last reported applied index (cluster.go).
	progress map[string]followerProgress

	// The Redis Cluster facade (cluster.go): leaders also holds the followers' addresses, from
	// member entries; lastLeader is the last leader known, shown as a failed master during an
	// election; health is what this node's probes of the other members found.
	lastLeader string
	health     memberHealth
}

type inflight struct {
	f    interface{ Error() error }
	node *replication.Node // whose Raft f belongs to: a wait ends when it closes
	hi   uint64
}

// startRaft starts the node: the store is empty, and Raft restores the latest snapshot and
// applies the committed log on top.
func (s *Server) startRaft() error {
	port := s.cfg.GetInt("raft-port")
	ip := s.cfg.Get("raft-announce-ip")
	dir := s.cfg.Get("raft-dir")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.cfg.Get("dir"), dir)
	}
	id := s.cfg.Get("raft-node-id")
	bind := net.JoinHostPort(ip, strconv.FormatInt(port, 10))
	if id == "" {
		id = bind
	}
	clientPort := s.cfg.GetInt("port")
	if a, ok := s.Addr().(*net.TCPAddr); ok && a != nil && clientPort == 0 {
		clientPort = int64(a.Port)
	}
	inflightBatches := s.cfg.GetInt("raft-inflight-batches")
	r := &replState{s: s, self: net.JoinHostPort(ip, strconv.FormatInt(clientPort, 10)), leaders: map[string]string{},
		futures: make(chan inflight, inflightBatches), sem: make(chan struct{}, inflightBatches)}
	r.cfg = replication.Config{
		NodeID: id, Bind: bind, Dir: dir, Bootstrap: s.cfg.GetBool("raft-bootstrap"),
		HeartbeatTimeout:  time.Duration(s.cfg.GetInt("raft-heartbeat-timeout")) * time.Millisecond,
		ElectionTimeout:   time.Duration(s.cfg.GetInt("raft-election-timeout")) * time.Millisecond,
		CommitTimeout:     time.Duration(s.cfg.GetInt("raft-commit-timeout")) * time.Millisecond,
		SnapshotThreshold: uint64(s.cfg.GetInt("raft-snapshot-threshold")),
		SnapshotInterval:  time.Duration(s.cfg.GetInt("raft-snapshot-interval")) * time.Millisecond,
		TrailingLogs:      uint64(s.cfg.GetInt("raft-trailing-logs")),
		PeerAddrs:         config.PeerAddrs(s.cfg.Get("raft-peer-addr")),
	}
	if os.Getenv("HOTKV_RAFT_DEBUG") != "" {
		r.cfg.LogOutput = os.Stderr
	}
	r.ackLeader = s.cfg.Get("replication-ack") == "leader"
	r.propose = sync.NewCond(&r.mu)
	r.rp = replayer{s: s}
	r.rp.init()
	s.repl = r
	s.setJournal(r)
	s.table.Gate = r.gate
	s.table.World = &r.world
	r.encoded = make(chan int, 1)
	r.stop = make(chan struct{})
	node, err := replication.Start(r.cfg, r, r.onLeader)
	if err != nil {
		return fmt.Errorf("Can't start the Raft node: %w", err)
	}
	r.node = node
	r.wg.Add(5)
	go func() { defer r.wg.Done(); r.proposer() }()
	go func() { defer r.wg.Done(); r.completer() }()
	go func() { defer r.wg.Done(); r.snapshotter() }()
	go func() { defer r.wg.Done(); r.announcer() }()   // cluster.go
	go func() { defer r.wg.Done(); r.leaderWatch() }() // raftwatch.go
	s.log.Info("Raft node started", "id", id, "raft_addr", bind, "client_addr", r.self, "dir", dir)
	return nil
}

func (r *replState) getNode() *replication.Node {
	r.nodeMu.RLock()
	defer r.nodeMu.RUnlock()
	return r.node
}

// ---- the write path ----

// Append implements store.Journal on every node. Only the serving leader proposes: a
// follower's effects come from its own replay of the log (or from expiry, which does not run
// on followers) and are dropped.
func (r *replState) Append(e store.Effect) {
	r.mu.Lock()
	if !r.serving {
		r.mu.Unlock()
		return
	}
	r.appended++
	r.appendedA.Store(r.appended)
	if e.Time == 0 {
		e.Time = r.lastTime
	} else {
		r.lastTime = e.Time
	}
	r.pending.add(e)
	if sh := r.s.shards; sh != nil && sh.track.on.Load() {
		sh.note(e) // a slot move is pre-copying (migrate.go)
	}
	if len(e.Args) == 1 {
		switch {
		case command.EqualFold(e.Args[0], "multi"):
			r.openBlocks++
		case command.EqualFold(e.Args[0], "exec") && r.openBlocks > 0:
			r.openBlocks--
		}
	}
	if r.openBlocks == 0 {
		r.propose.Signal()
	}
	r.mu.Unlock()
}

// proposer turns pending effects into Raft entries, with no linger: a lone write goes out at
// once. At most raft-inflight-batches entries are proposed and not yet committed; while they
// are, the next batch stays open and takes every effect appended meanwhile, so under load
// batches grow by themselves (natural batching, design §3.2).
//
// The slot is taken before the batch is cut, not after: a batch cut first and then held
// waiting for a slot would leave the effects appended during that wait for the batch after
// it, one more commit round away.
//
// The default is one batch in flight, not the design's 4 to 8. On one 2-core machine running
// the whole group (docs/benchmarks.md), one in flight made batches about six times larger
// (about 90 effects instead of 16) and allowed decisions about a quarter faster: every Raft
// entry costs each node the same goroutine handoffs, log encoding and waking of waiting
// connections whatever its size, and there the CPU, not the commit latency, is what runs
// out. Several in flight overlap the leader's own fsync of one entry with the followers'
// round trip for the previous one, which pays where the round trip is long.
//
// A transaction block is never split across entries, so a follower's replay never stops
// inside one at an entry boundary (its snapshot would lose the queued commands).
func (r *replState) proposer() {
	defer close(r.futures)
	ready := func() bool { return r.serving && len(r.pending.buf) > 0 && r.openBlocks == 0 }
	for {
		r.mu.Lock()
		for !r.closed && !ready() {
			r.propose.Wait()
		}
		if r.closed {
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		r.sem <- struct{}{}
		r.mu.Lock()
		if r.closed {
			r.mu.Unlock()
			<-r.sem
			return
		}
		if !ready() {
			// A step-down settled the pending effects, or a transaction block opened, while
			// this waited for a slot.
			r.mu.Unlock()
			<-r.sem
			continue
		}
		r.pending.close()
		fb := r.pending.take(r.spare)
		hi, nonce, ts := r.appended, r.nonce, r.s.clock.HighWater()
		r.mu.Unlock()
		payload := make([]byte, batchHeader, batchHeader+len(fb.buf))
		payload[0] = entryBatch
		binary.LittleEndian.PutUint64(payload[1:], nonce)
		binary.LittleEndian.PutUint64(payload[9:], hi)
		binary.LittleEndian.PutUint64(payload[17:], uint64(ts))
		payload = append(payload, fb.buf...)
		r.loggedBytes.Add(int64(len(payload)))
		r.mu.Lock()
		r.spare = fb.buf[:0]
		r.mu.Unlock()
		node := r.getNode()
		if node == nil {
			<-r.sem
			r.lose()
			continue
		}
		r.futures <- inflight{f: node.Raft.Apply(payload, 0), node: node, hi: hi}
	}
}

// completer waits for the proposed batches in order and acknowledges their effects.
func (r *replState) completer() {
	for b := range r.futures {
		err := b.node.Await(b.f)
		<-r.sem
		if err != nil && b.node != r.getNode() {
			// The batch's node was closed to be rebuilt (reset) or for good: the step-down
			// that led there settled every effect appended by then as lost. Stepping down
			// again would void the leadership of the node that replaces it.
			continue
		}
		if err != nil {
			r.stepDown("a replicated batch failed: "+err.Error(), true)
			r.lose()
			continue
		}
		r.mu.Lock()
		r.committed = max(r.committed, b.hi)
		r.mu.Unlock()
		r.waitMu.Lock()
		if b.hi > r.durable.Load() {
			r.durable.Store(b.hi)
		}
		r.waiters.wake(r.durable.Load())
		r.waitMu.Unlock()
	}
}

// waitDurable waits until every effect appended up to target is committed, and reports
// false if this node stops serving or d passes first.
func (r *replState) waitDurable(target uint64, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for r.durable.Load() < target {
		if !r.servingA.Load() || time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Microsecond)
	}
	return true
}

// lose settles every effect appended so far as lost and wakes the connections waiting.
func (r *replState) lose() {
	r.waitMu.Lock()
	r.lossGen.Add(1)
	r.durable.Store(max(r.durable.Load(), r.appendedA.Load()))
	r.waiters.wakeAll()
	r.waitMu.Unlock()
}

// waitAck holds a connection's replies until every effect appended so far is committed. It
// returns false when leadership was lost meanwhile: the writes of the connection's commands
// since gen may or may not be in the log.
func (r *replState) waitAck(gen uint64) bool {
	if !r.servingA.Load() {
		return r.lossGen.Load() == gen
	}
	target := r.appendedA.Load()
	if r.durable.Load() >= target {
		return r.lossGen.Load() == gen
	}
	r.waitMu.Lock()
	defer r.waitMu.Unlock()
	for {
		d := r.durable.Load()
		if r.lossGen.Load() != gen {
			return false
		}
		if d >= target {
			return true
		}
		r.waiters.wait(&r.waitMu, target)
	}
}

// ---- leadership ----

// onLeader follows leadership changes (from the node's watcher goroutine).
func (r *replState) onLeader(leading bool) {
	if !leading {
		r.stepDown("lost Raft leadership", false)
		return
	}
	r.cancelFollowerSnapshot()
	r.mu.Lock()
	r.epoch++
	epoch := r.epoch
	r.mu.Unlock()
	go r.promote(epoch)
}

// stepDown stops serving. The writes not known to be committed fail (TRYAGAIN), and if any
// effect may be missing from the log (or, with force, a batch failed while the node still
// leads) the store no longer matches the log: the node is rebuilt.
func (r *replState) stepDown(why string, force bool) {
	r.mu.Lock()
	r.epoch++
	wasServing := r.serving
	dirty := wasServing && (force || r.appended > r.committed)
	r.serving = false
	r.servingA.Store(false)
	r.nonce = 0
	r.nonceA.Store(0)
	r.pending = frameBuf{}
	r.openBlocks = 0
	r.mu.Unlock()
	if wasServing {
		r.s.log.Warn("Stopped serving as Raft leader", "reason", why)
		r.lose()
		r.s.topo.changed() // blocked clients follow the leader (topology.go)
	}
	if dirty {
		go r.reset()
	}
}

// promote makes a new leader serve: first its own leader entry is committed, which means
// every entry of earlier terms is applied (the time floor included), then commands run.
func (r *replState) promote(epoch uint64) {
	node := r.getNode()
	for i := 0; node == nil && i < 500; i++ {
		// Leadership can be won before Start (or reset) has stored the node.
		time.Sleep(10 * time.Millisecond)
		node = r.getNode()
	}
	if node == nil {
		return
	}
	r.mu.Lock()
	self := r.self
	r.mu.Unlock()
	payload := append([]byte{entryLeader}, self...)
	payload = append(append(payload, 0), node.ID()...)
	if err := node.Await(node.Raft.Apply(payload, 10*time.Second)); err != nil {
		r.s.log.Warn("New leader could not commit its leader entry", "err", err)
		return
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	nonce := binary.LittleEndian.Uint64(b[:]) | 1
	r.s.clock.SetFloor(r.floor.Load() + 1)
	r.mu.Lock()
	if r.epoch == epoch && !r.closed {
		r.nonce = nonce
		r.nonceA.Store(nonce)
		r.serving = true
		r.servingA.Store(true)
		r.committed = r.appended
		r.s.log.Info("Raft leader serving", "id", node.ID(), "time_floor_ms", r.floor.Load())
	}
	r.mu.Unlock()
}

// reset rebuilds the node after it lost leadership with effects of unknown fate in its store:
// the node stops, the store is emptied, and a new Raft instance restores the latest snapshot
// and applies the committed log, with the group's truncation of the uncommitted tail.
func (r *replState) reset() {
	if !r.resetting.CompareAndSwap(false, true) {
		return
	}
	defer r.resetting.Store(false)
	r.nodeMu.Lock()
	old := r.node
	r.node = nil
	r.nodeMu.Unlock()
	if old == nil {
		return
	}
	_ = old.Close()
	r.mu.Lock()
	closed := r.closed
	r.mu.Unlock()
	if closed {
		return
	}
	// Under the world lock: a command that passed the gate while this node still served, or
	// an expiry cycle begun then, finishes before the store is emptied; after it, the gate
	// and expireGate see a node that does not serve, so nothing but the log's replay writes.
	r.world.Lock()
	r.flushStore()
	r.world.Unlock()
	cfg := r.cfg
	cfg.Bootstrap = false
	var node *replication.Node
	var err error
	for range 50 {
		if node, err = replication.Start(cfg, r, r.onLeader); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // the old transport's port may linger a moment
	}
	if err != nil {
		r.s.log.Error("Can't restart the Raft node after losing leadership", "err", err)
		return
	}
	r.nodeMu.Lock()
	r.node = node
	r.nodeMu.Unlock()
	r.s.log.Warn("Rebuilt the dataset from the Raft log after losing leadership")
}

// flushStore empties the keyspace, the named limiters and the function libraries.
func (r *replState) flushStore() {
	if r.s.shards != nil {
		r.s.shards.setFences(nil, nil) // state derived from the log, rebuilt with the store
	}
	r.rp.exec("raft", &persist.Batch{}, [][]byte{[]byte("FLUSHALL"), []byte("SYNC")})
	r.rp.exec("raft", &persist.Batch{}, [][]byte{[]byte("FUNCTION"), []byte("FLUSH"), []byte("SYNC")})
	if in, _ := r.rp.client.InMulti(); in {
		r.rp.exec("raft", &persist.Batch{}, [][]byte{[]byte("DISCARD")})
	}
}

// gate is the command table's Gate: only the serving leader runs keyspace commands.
func (r *replState) gate(c *command.Ctx, cmd *command.Command) string {
	if c.Client == &r.rp.client {
		return ""
	}
	if sh := r.s.shards; sh != nil {
		if msg := sh.route(c, cmd); msg != "" {
			return msg
		}
	}
	if r.servingA.Load() {
		if !cmd.Decision {
			c.Client.Gated = true // a decision's effects set it (stamper): a denial has none
		}
		c.DB = c.DB.Live() // conn chose the read-only view while this node did not serve
		return ""
	}
	// EVAL and FCALL may write (only their _RO forms are flagged read-only): the leader runs them.
	mayWrite := cmd.Flags&(command.FlagWrite|command.FlagMayReplicate) != 0 || (cmd.RunsScript && cmd.Flags&command.FlagReadOnly == 0)
	if c.Client.ReadOnly && !mayWrite && r.followerReadOK() {
		return "" // READONLY: a read on this follower's state, through the read-only view (cluster.go)
	}
	addr := r.leaderClientAddr()
	if addr == "" {
		return errNoLeader
	}
	return "MOVED " + strconv.Itoa(commandSlot(c, cmd)) + " " + addr
}

// commandSlot is the slot of the command's first key (0 for a command without keys).
func commandSlot(c *command.Ctx, cmd *command.Command) int {
	if cmd.FirstKey > 0 && cmd.FirstKey < len(c.Args) {
		return replication.KeySlot(c.Args[cmd.FirstKey])
	}
	// EVAL-like: script numkeys key ... (other commands with movable keys go to slot 0: one
	// shard serves every slot in stage 1, so only the leader's address matters).
	switch cmd.Name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
	default:
		return 0
	}
	if len(c.Args) > 3 {
		if n, err := strconv.Atoi(string(c.Args[2])); err == nil && n > 0 {
			return replication.KeySlot(c.Args[3])
		}
	}
	return 0
}

// leaderClientAddr is the client address of the current leader, "" when there is none, it
// is not known yet, or it is this node still catching up.
func (r *replState) leaderClientAddr() string {
	node := r.getNode()
	if node == nil {
		return ""
	}
	_, id := node.Leader()
	if id == "" || id == node.ID() {
		return ""
	}
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	return r.leaders[id]
}

// ---- the FSM ----

// Apply implements replication.FSM.
func (r *replState) Apply(index, term uint64, data []byte) {
	if len(data) == 0 {
		return
	}
	switch data[0] {
	case entryLeader, entryMember:
		r.applyMember(data[0], data[1:])
	case entrySlots:
		if sh := r.s.shards; sh != nil {
			sh.applySlots(index, data[1:])
		} else {
			r.s.log.Error("A slots entry in the Raft log of a node without cluster-enabled", "index", index)
		}
	case entryBatch:
		r.appliedBytes.Add(int64(len(data)))
		if len(data) < batchHeader {
			r.s.log.Error("Malformed Raft entry", "index", index)
			return
		}
		nonce := binary.LittleEndian.Uint64(data[1:])
		ts := int64(binary.LittleEndian.Uint64(data[17:]))
		if ts > r.floor.Load() {
			r.floor.Store(ts)
		}
		r.s.clock.SetFloor(ts)
		if n := r.nonceA.Load(); n != 0 && n == nonce {
			return // this leader's store has these effects already
		}
		batches, err := persist.DecodeFrames(data[batchHeader:])
		if err != nil {
			r.s.log.Error("Corrupt Raft entry", "index", index, "err", err)
			return
		}
		for _, b := range batches {
			if err := r.rp.batch("raft", b); err != nil {
				r.s.log.Error("Failed applying a Raft entry", "index", index, "err", err)
			}
		}
	}
}

type snapMeta struct {
	TimeFloorMs int64             `json:"time_floor_ms"`
	Leaders     map[string]string `json:"leaders"` // every member's client address (cluster.go)
	// Fences are the slots a shard moved away (migrate.go); Epochs each slot's latest
	// migration, run-length encoded (fenceState.epoch).
	Fences []slotFence `json:"fences,omitempty"`
	Epochs []slotFence `json:"epochs,omitempty"`
}

// Snapshot implements replication.FSM. A follower's store is exactly the applied state (it
// runs no keyspace command of its own), so it is encoded as it is. The leader's store also
// holds effects not committed yet, except while leaderSnapshot has stopped the world with
// everything committed and applied: only then is it encoded, with every shard lock held.
func (r *replState) Snapshot() ([]byte, error) {
	// snapHeld is raised before frozenAt is read and lowered once the encoding of the stopped
	// world is over, so leaderSnapshot, which lowers frozenAt and then waits for snapHeld to
	// fall before it restarts the world, never lets a write run under that encoding (see
	// leaderSnapshot).
	r.snapHeld.Store(true)
	defer r.snapHeld.Store(false)
	leader := r.servingA.Load()
	cut := r.frozenAt.Load()
	if leader && (cut == 0 || r.appendedA.Load()+1 != cut) {
		return nil, errors.New("the serving leader snapshots only from a stopped world (RAFT SNAPSHOT)")
	}
	if !leader {
		r.snapHeld.Store(false) // a follower's encoding takes the shard locks itself
	}
	if !leader {
		if cut != 0 {
			// Leadership was lost while leaderSnapshot holds every shard lock and waits for this
			// very call: encoding as a follower would wait for those locks forever.
			return nil, errors.New("leadership was lost during a leader snapshot")
		}
		return r.followerSnapshot()
	}
	b, err := r.encodeSnapshot(context.Background(), true)
	{
		if err == nil && r.appendedA.Load()+1 != cut {
			err = errors.New("a write slipped into the leader's stopped world; snapshot dropped")
		}
		n := -1
		if err == nil {
			n = len(b)
		}
		select {
		case r.encoded <- n:
		default:
		}
	}
	return b, err
}

// followerLogSinceSnapshot returns the bytes of log a follower applied since its last
// snapshot and that snapshot's size: a snapshot is due when the first reaches the second.
func (r *replState) followerLogSinceSnapshot() (since, last int64) {
	fs := &r.followerSnap
	return r.appliedBytes.Load() - fs.appliedAt.Load(), fs.lastSize.Load()
}

// followerSnapshot encodes a follower's store, when due (see raftsnap.go), unless the node is
// elected meanwhile.
func (r *replState) followerSnapshot() ([]byte, error) {
	fs := &r.followerSnap
	if since, last := r.followerLogSinceSnapshot(); !r.forceSnap.Swap(false) && since < last {
		return nil, errors.New("not due: the log since the last snapshot is smaller than that snapshot")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.snapCancelMu.Lock()
	r.snapCancel = cancel
	r.snapCancelMu.Unlock()
	defer func() {
		r.snapCancelMu.Lock()
		r.snapCancel = nil
		r.snapCancelMu.Unlock()
	}()
	node := r.getNode()
	if node != nil {
		if _, id := node.Leader(); id == node.ID() {
			return nil, errors.New("elected: the log is applied first")
		}
		// The encoding runs on the apply goroutine: once hashicorp/raft's queue of committed
		// entries for it fills, the node's main loop waits too, and a follower whose leader
		// dies meanwhile can neither start nor answer an election (a 170 MB snapshot held one
		// for 3.4 s). So the encoding stops as soon as the leader falls silent; heartbeats
		// reach LastContact apart from the main loop, so a live leader does not stop it.
		go func() {
			t := time.NewTicker(20 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if time.Since(node.Raft.LastContact()) > r.cfg.HeartbeatTimeout {
					cancel()
					return
				}
			}
		}()
	}
	b, err := r.encodeSnapshot(ctx, false)
	if err != nil {
		return nil, err
	}
	fs.lastSize.Store(int64(len(b)))
	fs.appliedAt.Store(r.appliedBytes.Load())
	return b, nil
}

// cancelFollowerSnapshot stops a follower snapshot's encoding, if one runs: this node was
// elected, or its leader is gone (raftwatch.go), and the apply goroutine it occupies must be free.
func (r *replState) cancelFollowerSnapshot() {
	r.snapCancelMu.Lock()
	if r.snapCancel != nil {
		r.snapCancel()
	}
	r.snapCancelMu.Unlock()
}

// encodeSnapshot encodes the store as a Raft snapshot; held says every shard lock is held.
func (r *replState) encodeSnapshot(ctx context.Context, held bool) ([]byte, error) {
	var buf bytes.Buffer
	if n := r.snapBytes.Load(); n > 0 {
		buf.Grow(int(n + n/4))
	}
	buf.WriteString(snapMagic)
	r.metaMu.Lock()
	sm := snapMeta{TimeFloorMs: r.floor.Load(), Leaders: r.leaders}
	if r.s.shards != nil {
		sm.Fences = r.s.shards.fenceList()
		sm.Epochs = r.s.shards.epochList()
	}
	meta, _ := json.Marshal(sm)
	r.metaMu.Unlock()
	buf.Write(binary.LittleEndian.AppendUint32(nil, uint32(len(meta))))
	buf.Write(meta)
	floor := r.floor.Load()
	_, err := persist.Write(&buf, r.s.store, persist.SaveOptions{Now: floor, Held: held, Ctx: ctx, TimeFloor: func() int64 { return floor },
		Version: Version, Functions: r.s.table.Scripting().Libraries()})
	if err != nil {
		return nil, err
	}
	r.snapBytes.Store(int64(buf.Len()))
	return buf.Bytes(), nil
}

// Restore implements replication.FSM.
func (r *replState) Restore(rd io.Reader) error {
	head := make([]byte, len(snapMagic)+4)
	if _, err := io.ReadFull(rd, head); err != nil {
		return err
	}
	if string(head[:len(snapMagic)]) != snapMagic {
		return fmt.Errorf("not a HotKV Raft snapshot (magic %q)", head[:len(snapMagic)])
	}
	meta := make([]byte, binary.LittleEndian.Uint32(head[len(snapMagic):]))
	if _, err := io.ReadFull(rd, meta); err != nil {
		return err
	}
	var m snapMeta
	if err := json.Unmarshal(meta, &m); err != nil {
		return fmt.Errorf("Raft snapshot metadata: %w", err)
	}
	r.flushStore()
	if _, err := persist.Load(rd, "raft snapshot", r.s.store, persist.LoadOptions{SetFloor: r.s.clock.SetFloor,
		Now: func() int64 { return 0 }, Function: r.s.loadFunction}); err != nil {
		return err
	}
	if m.TimeFloorMs > r.floor.Load() {
		r.floor.Store(m.TimeFloorMs)
	}
	if r.s.shards != nil {
		r.s.shards.setFences(m.Fences, m.Epochs)
	}
	r.metaMu.Lock()
	r.leaders = map[string]string{} // the snapshot's map replaces this node's (member entries delete)
	for id, a := range m.Leaders {
		r.leaders[id] = a
	}
	r.metaMu.Unlock()
	return nil
}

// close stops the node without a snapshot and fails the connections still waiting.
func (r *replState) close() {
	// Proposals in flight get a moment to commit: with replication-ack leader their writes
	// were acknowledged already.
	for deadline := time.Now().Add(2 * time.Second); r.servingA.Load() && r.durable.Load() < r.appendedA.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	r.mu.Lock()
	r.closed = true
	r.serving = false
	r.servingA.Store(false)
	r.propose.Broadcast()
	r.mu.Unlock()
	close(r.stop)
	for r.resetting.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	if node := r.getNode(); node != nil {
		_ = node.Close()
	}
	r.wg.Wait()
	r.lose()
}

// ---- status ----

// RaftStatus implements command.RaftAdmin: the fields of RAFT STATUS and INFO replication.
func (r *replState) status() [][2]string {
	node := r.getNode()
	out := [][2]string{{"node_id", r.cfg.NodeID}, {"raft_addr", r.cfg.Bind}}
	if node == nil {
		return append(out, [2]string{"state", "rebuilding"})
	}
	st := node.Raft.Stats()
	role := "follower"
	if r.servingA.Load() {
		role = "leader"
	} else if st["state"] == "Leader" {
		role = "promoting" // elected, applying the log of earlier terms before it serves
	} else if st["state"] == "Candidate" {
		role = "candidate"
	}
	laddr, lid := node.Leader()
	out = append(out,
		[2]string{"role", role},
		[2]string{"leader_id", lid},
		[2]string{"leader_raft_addr", laddr},
		[2]string{"leader_client_addr", r.leaderAddrAny(lid)},
		[2]string{"term", st["term"]},
		[2]string{"last_log_index", st["last_log_index"]},
		[2]string{"commit_index", st["commit_index"]},
		[2]string{"applied_index", strconv.FormatUint(node.Raft.AppliedIndex(), 10)},
		// Batches of committed entries handed to the apply loop and not yet applied:
		// hashicorp/raft counts an entry in applied_index when it queues it, so a node that
		// restarted and replays a long log (or a follower behind in applying) can report
		// applied_index caught up while its store is seconds behind. Caught up is 0 here.
		[2]string{"apply_pending", st["fsm_pending"]},
		[2]string{"last_snapshot_index", st["last_snapshot_index"]},
		// Effects this node failed to apply from the log: each is a divergence (a bug); 0 is
		// the only healthy value.
		[2]string{"apply_errors", strconv.FormatInt(r.rp.errors.Load(), 10)},
		[2]string{"time_floor_ms", strconv.FormatInt(r.floor.Load(), 10)},
		// How long ago a follower last heard from the leader ("never", "0" on the leader).
		[2]string{"last_contact", st["last_contact"]},
		[2]string{"replication_ack", map[bool]string{false: "quorum", true: "leader"}[r.ackLeader]},
	)
	var members []string
	for _, m := range node.Members() {
		kind := "voter"
		if !m.Voter {
			kind = "nonvoter"
		}
		members = append(members, m.ID+"="+m.Addr+"/"+kind)
	}
	return append(out, [2]string{"members", strings.Join(members, ",")})
}

func (r *replState) leaderAddrAny(id string) string {
	if r.servingA.Load() {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.self
	}
	r.metaMu.Lock()
	defer r.metaMu.Unlock()
	return r.leaders[id]
}

// holdForCommit is conn.flush's wait in replicated mode: the replies go out once the writes
// before them are committed; if leadership was lost first, every reply of the batch becomes
// TRYAGAIN (the client retries; a write may then count twice, never zero times once
// acknowledged).
func (c *conn) holdForCommit(r *replState) {
	if c.Gated && !r.ackLeader && !r.waitAck(c.replGen) {
		c.w.Reset()
		for range max(c.replCmds, 1) {
			c.w.Error("TRYAGAIN decision outcome unknown")
		}
	}
	c.replGen = r.lossGen.Load()
	c.replCmds = 0
	c.Gated = false
}

// statusMap is status as a map, for INFO replication and ROLE.
func (r *replState) statusMap() map[string]string {
	st := map[string]string{}
	for _, kv := range r.status() {
		st[kv[0]] = kv[1]
	}
	return st
}

// followerView is what the leader knows of a follower: its client address and the progress it
// last reported (RAFT ANNOUNCE), for INFO replication and ROLE.
type followerView struct {
	m          replication.Member
	host, port string
	// online: a report within 3 progress intervals; applied and lag (seconds since the
	// report, -1 without one) as reported.
	online       bool
	applied, lag int64
}

// followers lists the group's members other than this node, with what they reported.
func (r *replState) followers() []followerView {
	node := r.getNode()
	if node == nil {
		return nil
	}
	var out []followerView
	for _, m := range node.Members() {
		if m.ID == node.ID() {
			continue
		}
		f := followerView{m: m, lag: -1}
		f.host, f.port, _ = net.SplitHostPort(r.memberAddr(m.ID))
		if p, ok := r.followerProgress(m.ID); ok {
			f.applied, f.lag = p.applied, int64(time.Since(p.at)/time.Second)
			f.online = time.Since(p.at) <= 3*progressEvery
		}
		out = append(out, f)
	}
	return out
}

// info writes INFO replication in replicated mode, with Redis's role names.
func (r *replState) info(b *strings.Builder) {
	st := r.statusMap()
	if st["role"] == "leader" {
		b.WriteString("role:master\r\n")
		fs := r.followers()
		for n, f := range fs {
			// Redis's fields first (Sentinel and clients parse ip, port, state, offset and lag).
			state := "wait_bgsave"
			if f.online {
				state = "online"
			}
			fmt.Fprintf(b, "slave%d:ip=%s,port=%s,state=%s,offset=%d,lag=%d,id=%s,raft_addr=%s,voter=%v\r\n",
				n, f.host, f.port, state, f.applied, f.lag, f.m.ID, f.m.Addr, f.m.Voter)
		}
		fmt.Fprintf(b, "connected_slaves:%d\r\n", len(fs))
	} else {
		b.WriteString("role:slave\r\n")
		host, port, _ := net.SplitHostPort(st["leader_client_addr"])
		fmt.Fprintf(b, "master_host:%s\r\nmaster_port:%s\r\n", host, port)
		link := "down"
		if st["leader_id"] != "" {
			link = "up"
		}
		fmt.Fprintf(b, "master_link_status:%s\r\n", link)
	}
	fmt.Fprintf(b, "master_replid:%s\r\nmaster_repl_offset:%s\r\n", r.s.runID, st["applied_index"])
	for _, k := range []string{"node_id", "raft_addr", "role", "leader_id", "leader_client_addr", "term",
		"last_log_index", "commit_index", "applied_index", "last_snapshot_index", "apply_errors", "time_floor_ms", "last_contact", "replication_ack", "members"} {
		fmt.Fprintf(b, "raft_%s:%s\r\n", strings.TrimPrefix(k, "raft_"), st[k])
	}
}

// Role implements command.RoleReporter: ROLE from the same state as INFO replication.
func (s *Server) Role() command.Role {
	r := s.repl
	if r == nil {
		return command.Role{Master: true}
	}
	st := r.statusMap()
	applied, _ := strconv.ParseInt(st["applied_index"], 10, 64)
	if st["role"] == "leader" && r.servingA.Load() {
		role := command.Role{Master: true, Offset: applied}
		for _, f := range r.followers() {
			if f.online { // Redis lists only replicas that are online
				port, _ := strconv.ParseInt(f.port, 10, 64)
				role.Replicas = append(role.Replicas, command.RoleReplica{IP: f.host, Port: port, Offset: f.applied})
			}
		}
		return role
	}
	role := command.Role{Offset: applied, State: "connect"}
	if host, port, err := net.SplitHostPort(st["leader_client_addr"]); err == nil && st["leader_id"] != "" && st["role"] != "leader" {
		role.MasterHost = host
		role.MasterPort, _ = strconv.ParseInt(port, 10, 64)
		role.State = "connected"
	}
	return role
}

// errStandalone answers RAFT subcommands when raft-port is 0.
var errStandalone = errors.New("ERR this node is not in replicated mode (raft-port is 0)")

// RaftStatus implements command.RaftAdmin.
func (s *Server) RaftStatus() ([][2]string, error) {
	if s.repl == nil {
		return nil, errStandalone
	}
	return s.repl.status(), nil
}

// RaftBootstrap implements command.RaftAdmin.
func (s *Server) RaftBootstrap() error {
	return s.raftDo(func(n *replication.Node) error { return n.Bootstrap() })
}

// RaftAdd implements command.RaftAdmin.
func (s *Server) RaftAdd(id, addr string) error {
	return s.raftDo(func(n *replication.Node) error { return n.AddVoter(id, addr) })
}

// RaftRemove implements command.RaftAdmin.
func (s *Server) RaftRemove(id string) error {
	return s.raftDo(func(n *replication.Node) error {
		if err := n.Remove(id); err != nil {
			return err
		}
		// Forget its client address (cluster.go); best effort: the topology lists only the
		// configuration's members anyway, and a node that removed itself no longer leads.
		_ = s.repl.announce(id, "", -1)
		return nil
	})
}

// RaftTransfer implements command.RaftAdmin.
func (s *Server) RaftTransfer(id string) error {
	return s.raftDo(func(n *replication.Node) error { return n.Transfer(id) })
}

func (s *Server) raftDo(f func(*replication.Node) error) error {
	if s.repl == nil {
		return errStandalone
	}
	n := s.repl.getNode()
	if n == nil {
		return errors.New("TRYAGAIN the Raft node is rebuilding")
	}
	if err := f(n); err != nil {
		return fmt.Errorf("ERR %s", err.Error())
	}
	return nil
}

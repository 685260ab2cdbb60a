// Package server runs HotKV: listeners, the per-connection loop, client state, the dispatch
// into the command table, and the server-wide facts that INFO reports.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/acl"
	"github.com/hotkv/hotkv/internal/clock"
	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/hll"
	"github.com/hotkv/hotkv/internal/pubsub"
	"github.com/hotkv/hotkv/internal/ratelimit"
	"github.com/hotkv/hotkv/internal/store"
	"github.com/hotkv/hotkv/internal/types"
)

// Version is HotKV's release. RedisVersion is the Redis version whose behaviour HotKV
// reproduces; it is what HELLO and INFO's redis_version report, because clients gate
// features on it.
const (
	Version      = "0.1.0"
	RedisVersion = "7.0.0"
)

// Server is one HotKV instance.
type Server struct {
	cfg   *config.Config
	clock *clock.Debuggable
	store *store.Store
	table *command.Table
	acl   *acl.Registry
	log   *slog.Logger
	runID string
	start time.Time

	listeners []net.Listener
	// ported are the listeners of port (in listeners too); CONFIG SET of port or bind
	// replaces them (listen.go). listenMu guards both against such a change.
	ported   []net.Listener
	listenMu sync.Mutex
	addrs    []net.Addr
	// topo wakes blocked clients when this node may have stopped serving their keys.
	topo topology
	// tls is the tls-port side: its listeners and the live configuration (tls.go).
	tls tlsState

	mu      sync.Mutex
	clients map[int64]*conn
	nextID  atomic.Int64
	wg      sync.WaitGroup

	ctx        context.Context
	cancel     context.CancelFunc
	closed     atomic.Bool
	finishOnce sync.Once
	done       chan struct{}
	// shutdownFn is called by SHUTDOWN; main sets it to stop the process.
	shutdownFn func()

	// Values mirrored from the config for the hot path.
	maxBulk     atomic.Int64
	timeoutSec  atomic.Int64
	maxClients  atomic.Int64
	maxQueryBuf atomic.Int64
	keepAlive   atomic.Int64
	protected   atomic.Bool
	debugMode   atomic.Value // "no" | "yes" | "local"
	hz          atomic.Int64
	// journalMu guards store.Journal against the denied-totals flush (flushDeniedTotals);
	// journalHooked: a test replaced the journal (StoreForTest), and the flush stays off.
	journalMu     sync.Mutex
	journalHooked bool
	expireEffort  atomic.Int64
	rlCompat      atomic.Int64
	rlMax         atomic.Int64
	rlEntries     atomic.Int64

	stats   stats
	persist persistState
	// rewriteMu serializes CONFIG REWRITE.
	rewriteMu sync.Mutex
	// supervised is the service manager told about startup and shutdown (supervise.go):
	// "systemd", "upstart" or "" for none; set by Start before anything is served.
	supervised string
	// hub is pub/sub, keyspace events and client-side caching (internal/pubsub).
	hub *pubsub.Hub
	// aofp is the append-only log (aof), set by Start when appendonly is yes and never
	// changed after; atomic because clients are served while Start loads the data and sets
	// it. aofPolicy is appendfsync.
	aofp      atomic.Pointer[aofLog]
	aofPolicy atomic.Int32
	// repl is the Raft node in replicated mode (raft-port > 0, raft.go); nil standalone.
	repl *replState
	// shards is the sharding state (cluster-enabled, sharding.go); nil otherwise.
	shards *shardState

	// metrics is the Prometheus listener (metrics.go); ready is set once the dataset is loaded
	// and the listeners accept clients (/readyz), and loadingHook is SetLoadingHook's.
	metrics metricsState
	ready   atomic.Bool
	// rls is the Envoy rate limit service (rls.go), off unless rls-port is set.
	rls rlsState
	// oom is what oom-score-adj changed (oom.go).
	oom         oomState
	loadingHook func()
	// loadMu orders the end of the start-up load against a shutdown asked during it:
	// loadStop, set by StopLoading while the table's Loading is set, stops the load.
	loadMu   sync.Mutex
	loadStop bool
}

// stats are the server-wide counters INFO stats reports.
type stats struct {
	connectionsReceived atomic.Int64
	rejectedConns       atomic.Int64
	commandsProcessed   atomic.Int64
	netInput            atomic.Int64
	netOutput           atomic.Int64
	dirty               atomic.Int64
	lastSave            atomic.Int64
	errMu               sync.Mutex
	errorStats          map[string]int64
	totalErrorReplies   atomic.Int64
	expire              atomic.Pointer[store.ExpireStats]
}

// New builds a server from a loaded config; Start begins serving.
func New(cfg *config.Config, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	clk := clock.NewDebuggable()
	shards := int(cfg.GetInt("shards"))
	if shards == 0 {
		shards = max(64, 16*runtime.GOMAXPROCS(0))
	}
	var id [20]byte
	_, _ = rand.Read(id[:])
	s := &Server{
		cfg:     cfg,
		clock:   clk,
		store:   store.New(int(cfg.GetInt("databases")), shards, clk),
		table:   command.Default(),
		log:     logger,
		runID:   hex.EncodeToString(id[:]),
		start:   time.Now(),
		clients: map[int64]*conn{},
		done:    make(chan struct{}),
	}
	s.acl = acl.NewRegistry(s.table.ACLCatalog())
	command.JournalExpiries(s.store) // expired keys are journaled as DEL (command/effects.go)
	s.store.ExpireGate = s.expireGate
	s.hub = pubsub.NewHub()
	s.hub.OnDisconnect = func(id int64, class int) {
		s.log.Warn("Client scheduled to be closed ASAP for overcoming of output buffer limits.", "id", id, "class", class)
	}
	s.watchKeyspace()
	sc := s.table.Scripting()
	sc.SetVersion(RedisVersion, false)
	sc.Log = func(level int, msg string) {
		switch level {
		case 0, 1:
			s.log.Debug(msg)
		case 2:
			s.log.Info(msg)
		default:
			s.log.Warn(msg)
		}
	}
	s.stats.errorStats = map[string]int64{}
	s.stats.lastSave.Store(time.Now().Unix())
	s.persist.lastBgOK.Store(true)
	s.persist.lastBgSec.Store(-1)
	s.persist.rw.lastOK.Store(true)
	s.persist.rw.lastSec.Store(-1)
	cfg.OnChange(s.applyConfig)
	return s
}

func (s *Server) applyConfig(name, value string) {
	n, _ := strconv.ParseInt(value, 10, 64)
	switch name {
	case "proto-max-bulk-len":
		s.maxBulk.Store(n)
	case "timeout":
		s.timeoutSec.Store(n)
	case "busy-reply-threshold":
		s.table.Scripting().BusyMs.Store(n)
	case "maxclients":
		s.maxClients.Store(n)
	case "client-query-buffer-limit":
		s.maxQueryBuf.Store(n)
	case "tcp-keepalive":
		s.keepAlive.Store(n)
	case "protected-mode":
		s.protected.Store(value == "yes")
	case "enable-debug-command":
		s.debugMode.Store(value)
	case "hz":
		s.hz.Store(n)
	case "active-expire-effort":
		s.expireEffort.Store(n)
	case "loglevel":
		logLevel.Set(levelFor(value))
	case "throttle-compat":
		if value == "dragonfly" {
			s.rlCompat.Store(int64(ratelimit.CompatDragonfly))
		} else {
			s.rlCompat.Store(int64(ratelimit.CompatRedisCell))
		}
	case "ratelimit.max-limiters":
		s.rlMax.Store(n)
	case "ratelimit.sliding-window-max-entries":
		s.rlEntries.Store(n)
	case "hash-max-listpack-entries", "hash-max-listpack-value":
		// Process-wide, like the types' limits themselves (internal/types).
		e, _ := strconv.ParseInt(s.cfg.Get("hash-max-listpack-entries"), 10, 64)
		v, _ := strconv.ParseInt(s.cfg.Get("hash-max-listpack-value"), 10, 64)
		types.SetHashPackLimits(e, v)
	case "zset-max-listpack-entries", "zset-max-listpack-value":
		e, _ := strconv.ParseInt(s.cfg.Get("zset-max-listpack-entries"), 10, 64)
		v, _ := strconv.ParseInt(s.cfg.Get("zset-max-listpack-value"), 10, 64)
		types.SetZSetPackLimits(e, v)
	case "stream-node-max-bytes", "stream-node-max-entries":
		b, _ := strconv.ParseInt(s.cfg.Get("stream-node-max-bytes"), 10, 64)
		e, _ := strconv.ParseInt(s.cfg.Get("stream-node-max-entries"), 10, 64)
		types.SetStreamNodeLimits(b, e)
	case "set-max-intset-entries":
		types.SetIntsetLimit(n)
	case "hll-sparse-max-bytes":
		hll.SetSparseMaxBytes(n)
	case "list-max-listpack-size":
		types.SetListPackLimit(n)
	case "save":
		s.setSavePoints(value)
		s.updateDiskError()
	case "stop-writes-on-bgsave-error":
		s.updateDiskError()
	case "appendfsync":
		s.aofPolicy.Store(fsyncPolicy(value))
	case "appendonly":
		if value == "no" {
			s.stopAOF()
		}
	case "requirepass":
		s.acl.SetRequirePass(value)
	case "acllog-max-len":
		s.acl.Log.SetMax(n)
	case "acl-pubsub-default":
		s.acl.SetPubSubDefault(value == "allchannels")
	case "notify-keyspace-events":
		s.setKeyspaceEvents(value)
	case "client-output-buffer-limit":
		for class, l := range config.OutputBufferLimits(value) {
			s.hub.SetLimit(class, pubsub.Limit{Hard: l[0], Soft: l[1], SoftSeconds: l[2]})
		}
	case "tracking-table-max-keys":
		s.hub.Tracking.SetMaxKeys(n)
	case "maxmemory", "maxmemory-policy", "maxmemory-samples", "maxmemory-eviction-tenacity", "lfu-log-factor", "lfu-decay-time":
		s.applyMemoryConfig(name, value, n)
	case "slowlog-log-slower-than", "slowlog-max-len":
		t, _ := strconv.ParseInt(s.cfg.Get("slowlog-log-slower-than"), 10, 64)
		m, _ := strconv.ParseInt(s.cfg.Get("slowlog-max-len"), 10, 64)
		s.table.SetSlowlog(t, m)
	case "latency-monitor-threshold":
		s.table.SetLatencyMonitor(n)
	case "latency-tracking", "latency-tracking-info-percentiles":
		s.table.SetLatencyTracking(s.cfg.Get("latency-tracking") == "yes", config.Percentiles(s.cfg.Get("latency-tracking-info-percentiles")))
	}
}

// Store exposes the keyspace, for tests and tools in this module.
func (s *Server) StoreForTest() *store.Store {
	// Tests replace the store's Journal while the server runs: the denied-totals flush, which
	// reads it from its own goroutine, stops first (journalMu orders the two).
	s.journalMu.Lock()
	s.journalHooked = true
	s.journalMu.Unlock()
	return s.store
}

// SetShutdownFunc installs what SHUTDOWN calls after the server stopped; main exits there.
func (s *Server) SetShutdownFunc(fn func()) { s.shutdownFn = fn }

// AddListener makes the server also serve ln once started; in-process tests use it with a
// listener on an ephemeral port (port 0 means "no TCP listener" in Redis's config).
func (s *Server) AddListener(ln net.Listener) {
	s.listeners = append(s.listeners, ln)
	s.addrs = append(s.addrs, ln.Addr())
}

// Start loads the data, then opens the listeners named by bind and port and starts serving
// and background tasks. With appendonly yes the append-only log is loaded if it exists (it
// wins over the snapshot) and opened for appending; otherwise the snapshot (dir/dbfilename) is
// loaded if there is one. Data that cannot be read stops the start with an error naming the
// file and the offset of the damage; nothing is served then.
func (s *Server) Start() error {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.log.Info("HotKV is starting", "version", Version, "redis_version", RedisVersion, "pid", pid, "config_file", s.cfg.File())
	s.superviseStart()
	for _, r := range s.cfg.Renames() {
		if err := s.table.Rename(r.From, r.To); err != nil {
			// Redis refuses such a line while it reads the file: the same error, at the line.
			fe := r.Line
			fe.Reason = err.Error()
			s.cancel()
			return &fe
		}
	}
	if set := s.cfg.InertSet(); len(set) > 0 {
		s.log.Warn("Directives of Redis that HotKV accepts but ignores are set (docs/config.md, Redis compatibility)",
			"directives", strings.Join(set, ", "))
	}
	if s.cfg.Get("oom-score-adj") != "no" {
		_ = s.applyOOMScore(s.cfg.Get) // as Redis, a score that cannot be written is only logged
	}
	if err := s.loadACLAtStartup(); err != nil {
		s.closeListeners()
		s.cancel()
		return err
	}
	if err := s.setupTLS(); err != nil {
		s.closeListeners()
		s.cancel()
		return err
	}
	// The metrics listener opens before the data is loaded: /healthz answers and /readyz says
	// 503 for as long as a large dataset takes to load.
	if err := s.startMetrics(); err != nil {
		s.closeListeners()
		s.cancel()
		return err
	}
	if err := s.loadRLSConfig(); err != nil {
		s.closeListeners()
		s.cancel()
		return err
	}
	raft := s.cfg.GetInt("raft-port") != 0
	if s.cfg.GetBool("cluster-enabled") && !raft {
		s.closeListeners()
		s.cancel()
		return errors.New("cluster-enabled needs raft-port: each shard is a Raft group (docs/cluster.md)")
	}
	// The client ports open before the data loads, as Redis's do: a port in use fails the
	// start at once, and clients that connect during a long load get -LOADING (which they
	// retry) instead of a refused connection.
	lns, err := s.listen(s.cfg.GetInt("port"))
	if err != nil {
		s.closeListeners()
		s.cancel()
		return err
	}
	for _, ln := range lns {
		s.listeners = append(s.listeners, ln)
		s.addrs = append(s.addrs, ln.Addr())
	}
	s.ported = lns
	if path := s.cfg.Get("unixsocket"); path != "" {
		ln, err := listenUnix(path, s.cfg.Get("unixsocketperm"))
		if err != nil {
			s.closeListeners()
			s.cancel()
			return err
		}
		s.listeners = append(s.listeners, ln)
		s.addrs = append(s.addrs, ln.Addr())
	}
	if lns, err = s.listen(s.cfg.GetInt("tls-port")); err != nil {
		s.closeListeners()
		s.cancel()
		return err
	}
	// Start's own count in wg: a SHUTDOWN from a client served during the load, or just
	// after it, makes Close wait for Start to finish before it closes the log and done.
	s.wg.Add(1)
	var startDone sync.Once
	started := func() { startDone.Do(s.wg.Done) }
	defer started()
	if !raft {
		// Standalone: the snapshot or the append-only log is loaded here, with clients
		// served meanwhile. (Replicated, the Raft snapshots and log are the data, loaded once
		// the node starts below; keyspace commands wait for a leader meanwhile.)
		s.table.Loading.Store(true)
		s.persist.loading.Store(true)
		s.serveListeners(lns)
		lns = nil
		if s.loadingHook != nil {
			s.loadingHook()
		}
		if s.cfg.GetBool("appendonly") {
			err = s.startAOF()
		} else {
			_, err = s.loadSnapshot()
		}
		s.loadMu.Lock()
		s.persist.loading.Store(false)
		s.table.Loading.Store(false)
		stop := s.loadStop
		s.loadMu.Unlock()
		if stop {
			// A SHUTDOWN or a signal during the load: no save (Redis's prepareForShutdown
			// saves nothing while loading), the server stops here and Start reports no error.
			s.log.Warn("Shutdown requested while loading the data: exiting without saving")
			s.notify("STOPPING=1")
			started()
			go func() {
				_ = s.Close()
				if s.shutdownFn != nil {
					s.shutdownFn()
				}
			}()
			return nil
		}
		if err != nil {
			s.beginClose()
			started()
			s.wg.Wait() // the clients served during the load
			return err
		}
	}
	if raft {
		// Before the first client is accepted: connections read the replication state (the
		// journal, the gate) from their first command on.
		var err error
		if s.cfg.GetBool("cluster-enabled") {
			err = s.newShards()
		}
		if err == nil {
			err = s.startRaft()
		}
		if err == nil && s.shards != nil {
			if err = s.startSharding(); err != nil {
				s.repl.close()
			}
		}
		if err != nil {
			for _, ln := range lns { // the TLS listeners, not yet the server's
				_ = ln.Close()
			}
			s.beginClose()
			started()
			s.wg.Wait()
			return err
		}
		s.serveListeners(lns)
	}
	if err := s.startRLS(); err != nil {
		s.beginClose()
		started()
		s.wg.Wait()
		return err
	}
	s.wg.Add(4)
	go func() {
		defer s.wg.Done()
		s.expireLoop()
	}()
	go func() {
		defer s.wg.Done()
		s.deniedTotalsLoop()
	}()
	go func() {
		defer s.wg.Done()
		s.clientsCron()
	}()
	go func() {
		defer s.wg.Done()
		s.saveLoop()
	}()
	if s.aof() != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.aof().run(s.ctx)
		}()
	}
	var tlsAddrs []net.Addr
	for _, ln := range append(s.tls.added, s.tls.ported...) {
		tlsAddrs = append(tlsAddrs, ln.Addr())
	}
	s.ready.Store(true)
	if s.rls.health != nil {
		s.rlsHealthUpdate() // SERVING now, not at the next tick
	}
	s.log.Info("Ready to accept connections", "addrs", s.addrs, "tls", tlsAddrs, "version", Version, "pid", pid)
	s.superviseReady()
	return nil
}

// listen opens port (0: none) on every bind address; an address with a "-" prefix is
// skipped when it cannot be bound, as in Redis.
func (s *Server) listen(port int64) ([]net.Listener, error) {
	return listenOn(s.cfg.Get("bind"), port)
}

// listenOn is listen on the bind addresses given rather than bind's value.
func listenOn(bind string, port int64) ([]net.Listener, error) {
	if port == 0 {
		return nil, nil
	}
	var out []net.Listener
	for _, addr := range strings.Fields(bind) {
		optional := strings.HasPrefix(addr, "-")
		addr = strings.TrimPrefix(addr, "-")
		switch addr {
		case "*":
			addr = "0.0.0.0"
		case "::*":
			addr = "::"
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(addr, strconv.FormatInt(port, 10)))
		if err != nil {
			if optional {
				continue
			}
			for _, l := range out {
				_ = l.Close()
			}
			// Redis's two lines: scripts (runtest among them) look for "Failed listening on
			// port" to try another port.
			return nil, fmt.Errorf("Could not create server TCP listening socket %s:%d: %w\n"+
				"Failed listening on port %d (tcp), aborting.", addr, port, err, port)
		}
		out = append(out, ln)
	}
	return out, nil
}

// listenUnix opens the unixsocket listener as Redis does: a file left at path by an earlier
// run is removed first, and perm (octal; "0" keeps the umask's bits) is applied to the new
// socket. Closing the listener removes the file again.
func listenUnix(path, perm string) (net.Listener, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("Failed opening Unix socket: %w", err)
	}
	if bits, _ := strconv.ParseUint(perm, 8, 32); bits != 0 {
		if err := os.Chmod(path, os.FileMode(bits)); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("Failed opening Unix socket: %w", err)
		}
	}
	return ln, nil
}

// Addr returns the first listener's address (useful with port 0 in tests).
func (s *Server) Addr() net.Addr {
	if len(s.addrs) == 0 {
		return nil
	}
	return s.addrs[0]
}

// serveListeners starts accepting on every plain listener and on the TLS ones (tlsPorted,
// those of tls-port, and any TLS listener added before).
func (s *Server) serveListeners(tlsPorted []net.Listener) {
	s.listenMu.Lock() // before tls.mu, as reloadListen takes them
	s.tls.mu.Lock()
	s.tls.ported = tlsPorted
	for _, ln := range s.listeners {
		s.wg.Add(1)
		go s.acceptLoop(ln, false)
	}
	for _, ln := range append(s.tls.added, s.tls.ported...) {
		s.wg.Add(1)
		go s.acceptLoop(ln, true)
	}
	s.tls.mu.Unlock()
	s.listenMu.Unlock()
}

// StopLoading asks a start-up load in progress to stop, for a shutdown (SHUTDOWN, or a signal
// main receives during the load): Start then closes the server without saving. It reports
// false when no load is in progress (the shutdown then proceeds as usual).
func (s *Server) StopLoading() bool {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if !s.table.Loading.Load() {
		return false
	}
	s.loadStop = true
	return true
}

// loadStopAsked reports whether StopLoading was called: the loaders stop at their next step.
func (s *Server) loadStopAsked() bool {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	return s.loadStop
}

func (s *Server) closeListeners() {
	s.closeMetrics()
	s.closeRLS()
	s.listenMu.Lock()
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
	s.listenMu.Unlock()
	s.tls.mu.Lock()
	for _, ln := range append(s.tls.added, s.tls.ported...) {
		_ = ln.Close()
	}
	s.tls.mu.Unlock()
}

// clientsCron releases the query buffers of idle clients once a second (conn.fill), as
// Redis's clientsCron resizes them, so that idle connections cost no buffer.
func (s *Server) clientsCron() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-t.C:
			s.mu.Lock()
			conns := make([]*conn, 0, len(s.clients))
			for _, c := range s.clients {
				conns = append(conns, c)
			}
			s.mu.Unlock()
			for _, c := range conns {
				c.askRelease(now)
			}
		}
	}
}

// deniedTotalsInterval is how often denied totals reach the journal (design/ha-and-cluster.md
// §3.4): a denial journals nothing, so that denials, the traffic an attacker generates, cost
// no log write and no Raft entry; their count is carried as one totals effect per limiter and
// interval instead, and may lag (or, at a crash or failover, lose) this much.
const deniedTotalsInterval = 100 * time.Millisecond

// deniedTotalsLoop journals the named limiters' denied totals that grew since the journal last
// carried them, as RATELIMIT.SETSTATE name TOTALS allowed denied (raised as maxima on replay),
// so that RATELIMIT.STATS agrees after a restart and on every Raft replica.
func (s *Server) deniedTotalsLoop() { s.every(deniedTotalsInterval, s.flushDeniedTotals) }

// every calls fn every d until the server closes; it is the body of the server's periodic
// goroutines.
func (s *Server) every(d time.Duration, fn func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

// setJournal installs j as the store's journal; journalMu orders it with the denied-totals
// flush, which reads the journal from its own goroutine (CONFIG SET appendonly yes installs
// one while the server runs).
func (s *Server) setJournal(j store.Journal) {
	s.journalMu.Lock()
	s.store.Journal = j
	s.journalMu.Unlock()
}

var (
	effSetState = []byte("RATELIMIT.SETSTATE")
	effTotals   = []byte("TOTALS")
)

func (s *Server) flushDeniedTotals() {
	s.journalMu.Lock()
	defer s.journalMu.Unlock()
	if s.journalHooked {
		return // a test owns the store's Journal now and writes it without the lock
	}
	j := s.store.Journal
	if j == nil {
		return
	}
	if r := s.repl; r != nil {
		if !r.servingA.Load() {
			return // followers count no denials: they run no decisions
		}
		// As a command would, so that a leader snapshot's frozen world includes it.
		r.world.RLock()
		defer r.world.RUnlock()
	}
	for _, l := range s.store.Limiters.All() {
		a, d, owed := l.DeniedBacklog()
		if !owed {
			continue
		}
		args := [][]byte{effSetState, []byte(l.Name), effTotals, strconv.AppendInt(nil, a, 10), strconv.AppendInt(nil, d, 10)}
		if sd := l.ShadowDenied(); sd > 0 {
			// Shadow denials are denials too (they raised d), and carry their own total.
			args = append(args, strconv.AppendInt(nil, sd, 10))
		}
		j.Append(store.Effect{DB: -1, Time: s.clock.NowMs(), Args: args})
	}
}

// expireGate is the store's ExpireGate: active expiry runs unless CLIENT PAUSE holds clients
// and, in Raft mode, only while this node serves as leader, under the world lock's read side.
// A node that loses leadership rebuilds its store under the write side (reset), so no cycle of
// its time as leader can delete a key under the replay of the log: the followers' copies keep
// their expired keys until the leader's DEL, and a rebuilt node must match them.
func (s *Server) expireGate() (func(), bool) {
	if s.table.PauseActive() {
		return nil, false
	}
	r := s.repl
	if r == nil {
		return func() {}, true
	}
	r.world.RLock()
	if !r.servingA.Load() {
		r.world.RUnlock()
		return nil, false
	}
	return r.world.RUnlock, true
}

// expireLoop runs the active expiry cycle at hz, with a time budget scaled by
// active-expire-effort.
func (s *Server) expireLoop() {
	for s.ctx.Err() == nil {
		if r := s.repl; r != nil && !r.servingA.Load() {
			// Followers never expire keys themselves: the leader's DEL effects do, so that
			// every replica stays identical whatever its clock says.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		hz := max(1, s.hz.Load())
		period := time.Second / time.Duration(hz)
		// At least every 10 ms so that a large backlog drains quickly with low hz too.
		period = min(period, 10*time.Millisecond)
		budget := time.Duration(float64(period) * 0.25 * float64(s.expireEffort.Load()))
		ctx, cancel := context.WithTimeout(s.ctx, time.Second)
		s.store.ActiveExpire(ctx, period, budget, 64, func(es store.ExpireStats) {
			c := es
			s.stats.expire.Store(&c)
			s.table.LatencyEvent("expire-cycle", time.Duration(es.LastCycleMicros)*time.Microsecond)
		})
		cancel()
	}
}

// acceptLoop accepts on one listener; each connection is set up (TLS handshake, limits,
// protected mode) on its own goroutine, so a slow handshake never delays other clients.
func (s *Server) acceptLoop(ln net.Listener, secure bool) {
	defer s.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closed.Load() || errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Warn("accept failed", "err", err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handleConn(nc, secure)
		}()
	}
}

// Close stops accepting, disconnects every client and waits for background work (a running
// BGSAVE is cancelled) to end. It does not save: SHUTDOWN and the signal handler save first
// (prepareForShutdown). It must not be called from a connection's goroutine.
func (s *Server) Close() error {
	s.beginClose()
	s.finishOnce.Do(func() {
		if s.shards != nil {
			s.shards.close()
		}
		if s.repl != nil {
			s.repl.close() // fails the connections waiting for a commit, so they can end
		}
		s.wg.Wait()
		s.store.Mem.Close() // the maxmemory heap sampler
		if s.aof() != nil {
			// Every client and background task has stopped: what they appended is final.
			if err := s.aof().close(); err != nil {
				s.log.Warn("Error writing the append-only log at shutdown", "err", err)
			}
		}
		close(s.done)
	})
	<-s.done
	return nil
}

// beginClose stops accepting and closes every client connection, without waiting; the first
// call does the work.
func (s *Server) beginClose() {
	if !s.closed.CompareAndSwap(false, true) {
		return
	}
	if s.cancel != nil {
		s.cancel()
	}
	// A script that never ends would keep its connection, and so Close, waiting for ever.
	s.table.Scripting().KillAll()
	s.closeListeners()
	s.mu.Lock()
	for _, c := range s.clients {
		_ = c.nc.Close()
	}
	s.mu.Unlock()
}

// Done is closed when the server has fully stopped.
func (s *Server) Done() <-chan struct{} { return s.done }

// ---- command.Server implementation ----

// Clock is the server clock.
func (s *Server) Clock() *clock.Debuggable { return s.clock }

// ConfigGet implements CONFIG GET.
func (s *Server) ConfigGet(patterns []string) [][2]string { return s.cfg.Match(patterns) }

// ConfigSet implements CONFIG SET. Turning appendonly on at run time is refused: it needs a
// base of the current data to start the log from, written while serving as BGREWRITEAOF writes
// one; that is not wired up yet (see docs/persistence.md).
func (s *Server) ConfigSet(pairs [][2]string) error {
	for _, p := range pairs {
		if strings.EqualFold(p[0], "appendonly") && strings.EqualFold(p[1], "yes") && !s.aofEnabled() {
			return &config.SetError{Name: p[0], Reason: "the append-only log can only be turned on at startup for now " +
				"(starting it at run time is not supported yet): restart with appendonly yes"}
		}
	}
	return s.reloadListen(pairs, func() error {
		return s.reloadMetrics(pairs, func() error {
			return s.reloadTLS(pairs, func() error {
				return s.reloadRLSConfig(pairs, func() error { return s.reloadOOM(pairs, func() error { return s.cfg.Set(pairs, true) }) })
			})
		})
	})
}

// ConfigRewrite implements CONFIG REWRITE. The users are written as `user` lines unless they
// live in an aclfile, as in Redis; rewrites are serialized so two cannot interleave their
// temporary files.
func (s *Server) ConfigRewrite(forceAll bool) error {
	s.rewriteMu.Lock()
	defer s.rewriteMu.Unlock()
	o := config.RewriteOptions{ForceAll: forceAll}
	if s.cfg.Get("aclfile") == "" {
		o.Users = s.acl.List
	}
	if err := s.cfg.Rewrite(o); err != nil {
		if !errors.Is(err, config.ErrNoConfigFile) {
			s.log.Warn("CONFIG REWRITE failed: " + strings.TrimPrefix(err.Error(), "Rewriting config file: "))
		}
		return err
	}
	s.log.Warn("CONFIG REWRITE executed with success.")
	return nil
}

// ResetStats implements CONFIG RESETSTAT; held is as for Info.
func (s *Server) ResetStats(held bool) {
	for _, c := range s.table.All() {
		resetCmd(c)
	}
	s.stats.errMu.Lock()
	s.stats.errorStats = map[string]int64{}
	s.stats.errMu.Unlock()
	s.stats.totalErrorReplies.Store(0)
	s.acl.Log.ResetStats()
	s.stats.connectionsReceived.Store(0)
	s.stats.rejectedConns.Store(0)
	s.stats.commandsProcessed.Store(0)
	s.stats.netInput.Store(0)
	s.stats.netOutput.Store(0)
	for i := 0; i < s.store.NumDBs(); i++ {
		db := s.store.DB(i)
		for j := 0; j < db.NumShards(); j++ {
			sh := db.Shard(j)
			if !held {
				sh.Lock()
			}
			sh.Hits, sh.Misses, sh.ExpiredKeys, sh.ExpireVisited = 0, 0, 0, 0
			if !held {
				sh.Unlock()
			}
		}
	}
}

func resetCmd(c *command.Command) {
	c.ResetLatency()
	c.Calls.Store(0)
	c.Usec.Store(0)
	c.RejectedCalls.Store(0)
	c.FailedCalls.Store(0)
	for _, sc := range c.Subcommands {
		resetCmd(sc)
	}
}

// Clients lists connected clients.
func (s *Server) Clients() []*command.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*command.Client, 0, len(s.clients))
	for _, c := range s.clients {
		out = append(out, &c.Client)
	}
	return out
}

// KillClients closes matching clients. They leave the client table at once, not when their
// connection goroutine notices the close: as in Redis, the next CLIENT LIST or INFO no
// longer shows a killed client.
func (s *Server) KillClients(match func(*command.Client) bool) int {
	s.mu.Lock()
	var victims []*conn
	for id, c := range s.clients {
		if match(&c.Client) {
			victims = append(victims, c)
			delete(s.clients, id)
		}
	}
	s.mu.Unlock()
	for _, c := range victims {
		c.kill()
	}
	return len(victims)
}

// Shutdown implements SHUTDOWN: it saves as mode asks (prepareForShutdown), then the server
// closes and the process exits through the shutdown hook. A failed save leaves the server
// running and is returned, unless force.
func (s *Server) Shutdown(mode int, force bool) error {
	s.log.Warn("User requested shutdown...")
	if s.StopLoading() {
		return nil // Start stops the load and the server, without a save
	}
	s.notify("STOPPING=1")
	if err := s.prepareForShutdown(mode, force); err != nil {
		return err
	}
	go func() {
		_ = s.Close()
		if s.shutdownFn != nil {
			s.shutdownFn()
		}
	}()
	return nil
}

// DebugAllowed applies enable-debug-command.
func (s *Server) DebugAllowed(c *command.Client) bool {
	switch s.debugMode.Load() {
	case "yes":
		return true
	case "local":
		return c.Local()
	}
	return false
}

// ErrorStat counts an error reply.
func (s *Server) ErrorStat(code string) {
	s.stats.totalErrorReplies.Add(1)
	s.stats.errMu.Lock()
	if len(s.stats.errorStats) < 128 || s.stats.errorStats[code] > 0 {
		// Redis caps distinct error codes at 128 so that clients cannot grow the table.
		s.stats.errorStats[code]++
	}
	s.stats.errMu.Unlock()
}

// LastSave is LASTSAVE's answer.
func (s *Server) LastSave() int64 { return s.stats.lastSave.Load() }

// ProtoMaxBulkLen is the current proto-max-bulk-len.
func (s *Server) ProtoMaxBulkLen() int64 { return s.maxBulk.Load() }

// Table is the command table.
func (s *Server) Table() *command.Table { return s.table }

// Version is the Redis version HotKV reproduces.
func (s *Server) Version() string { return RedisVersion }

// RunID identifies this process.
func (s *Server) RunID() string { return s.runID }

// AddDirty counts changes since the last save.
func (s *Server) AddDirty(n int64) { s.stats.dirty.Add(n) }

// ACL is the user registry.
func (s *Server) ACL() *acl.Registry { return s.acl }

// ACLFile is the aclfile setting (immutable, so read without caching).
func (s *Server) ACLFile() string { return s.cfg.Get("aclfile") }

// loadACLAtStartup creates the users of the config file's `user` lines, or loads aclfile, and
// refuses to start on any error, with Redis's messages (ACLLoadUsersAtStartup).
func (s *Server) loadACLAtStartup() error {
	file, lines := s.cfg.Get("aclfile"), s.cfg.Users()
	if file != "" && len(lines) > 0 {
		return errors.New("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. " +
			"This setup is very likely to lead to configuration errors and security holes, please define either an ACL file " +
			"or declare users directly in your redis.conf, but not both.")
	}
	if err := s.acl.LoadConfigured(lines); err != nil {
		return fmt.Errorf("%s\nCritical error while loading ACLs. Exiting.", err)
	}
	if file != "" {
		if _, err := s.acl.LoadFile(file, file); err != nil {
			return fmt.Errorf("Aborting Redis startup because of ACL errors: %s", err)
		}
	}
	for _, name := range s.acl.Names() {
		if u := s.acl.Get(name); u != nil && !u.Enabled() && name != "default" {
			s.log.Info(fmt.Sprintf("The user '%s' is disabled (there is no 'on' modifier in the user description). Make sure this is not a configuration error.", name))
		}
	}
	return nil
}

// RateLimitSettings returns the rate-limit directives the handlers need, read from atomics so
// the hot path never takes the config lock.
func (s *Server) RateLimitSettings() command.RateLimitSettings {
	return command.RateLimitSettings{
		Compat:                  ratelimit.Compat(s.rlCompat.Load()),
		MaxLimiters:             s.rlMax.Load(),
		SlidingWindowMaxEntries: s.rlEntries.Load(),
	}
}

// Config returns the live configuration.
func (s *Server) Config() *config.Config { return s.cfg }

// pid is cached for INFO.
var pid = os.Getpid()

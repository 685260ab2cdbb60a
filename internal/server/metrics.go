package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/metrics"
	"github.com/hotkv/hotkv/internal/store"
)

// metricsState is the Prometheus listener (metrics-port, metrics-bind; internal/metrics). It
// opens before the dataset is loaded, so that /healthz answers and /readyz says 503 while a
// large snapshot or log loads, and closes with the server.
type metricsState struct {
	// mu serialises opening, CONFIG SET moves and closing.
	mu      sync.Mutex
	handler http.Handler
	// ported serves metrics-port; added are AddMetricsListener's listeners (tests).
	ported *httpListener
	added  []*httpListener
	// pending are added listeners not yet served (before Start).
	pending []net.Listener
	closed  bool
}

// httpListener is one listener and the HTTP server on it.
type httpListener struct {
	ln  net.Listener
	srv *http.Server
}

// metricsReadHeaderTimeout bounds a scraper that connects and sends nothing.
const metricsReadHeaderTimeout = 10 * time.Second

// AddMetricsListener makes the server also serve the metrics endpoints on ln once started,
// whatever metrics-port says; in-process tests use it with an ephemeral port, as AddListener.
func (s *Server) AddMetricsListener(ln net.Listener) {
	s.metrics.mu.Lock()
	s.metrics.pending = append(s.metrics.pending, ln)
	s.metrics.mu.Unlock()
}

// MetricsAddr returns the address of the metrics listener (metrics-port first, else the first
// added one), or nil when there is none.
func (s *Server) MetricsAddr() net.Addr {
	m := &s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ported != nil {
		return m.ported.ln.Addr()
	}
	if len(m.added) > 0 {
		return m.added[0].ln.Addr()
	}
	if len(m.pending) > 0 {
		return m.pending[0].Addr()
	}
	return nil
}

// SetLoadingHook installs fn, which Start calls while the server is in the loading state
// (INFO loading:1, /readyz 503) just before it reads the snapshot or log: tests hold a start
// there to observe what monitoring sees during a long load.
func (s *Server) SetLoadingHook(fn func()) { s.loadingHook = fn }

// metricsAddr is where metrics-bind and port put the listener.
func metricsAddr(bind string, port int64) string {
	switch bind {
	case "*":
		bind = "0.0.0.0"
	case "::*":
		bind = "::"
	}
	return net.JoinHostPort(bind, strconv.FormatInt(port, 10))
}

// serveMetrics starts the HTTP server on ln; the caller holds metrics.mu.
func (s *Server) serveMetrics(ln net.Listener) *httpListener {
	m := &s.metrics
	if m.handler == nil {
		m.handler = metrics.Handler(s)
	}
	h := &httpListener{ln: ln, srv: &http.Server{Handler: m.handler, ReadHeaderTimeout: metricsReadHeaderTimeout}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("metrics listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return h
}

// startMetrics opens metrics-port (when not 0) and the added listeners, at the start of Start.
func (s *Server) startMetrics() error {
	m := &s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	if port := s.cfg.GetInt("metrics-port"); port != 0 {
		addr := metricsAddr(s.cfg.Get("metrics-bind"), port)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("Could not create the metrics listening socket %s: %w", addr, err)
		}
		m.ported = s.serveMetrics(ln)
		s.log.Info("Serving metrics", "addr", ln.Addr().String())
	}
	for _, ln := range m.pending {
		m.added = append(m.added, s.serveMetrics(ln))
	}
	m.pending = nil
	return nil
}

// closeMetrics stops every metrics listener; open scrapes are cut, as client connections are.
func (s *Server) closeMetrics() {
	m := &s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	if m.ported != nil {
		_ = m.ported.srv.Close()
		m.ported = nil
	}
	for _, h := range m.added {
		_ = h.srv.Close()
	}
	m.added = nil
	for _, ln := range m.pending {
		_ = ln.Close()
	}
	m.pending = nil
}

// reloadMetrics implements CONFIG SET of metrics-port and metrics-bind as reloadTLS does for
// tls-port: the new address is listened on before anything is stored (a port that cannot be
// bound refuses the whole CONFIG SET), then set stores the values, then the old listener
// closes. Values that do not parse are left to set, which refuses them with the table's
// error, so the reply is the same as for any other directive.
func (s *Server) reloadMetrics(pairs [][2]string, set func() error) error {
	m := &s.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	oldPort, oldBind := s.cfg.GetInt("metrics-port"), s.cfg.Get("metrics-bind")
	port, bind := oldPort, oldBind
	name := ""
	for _, p := range pairs {
		d := s.cfg.Lookup(p[0])
		if d == nil {
			continue
		}
		switch d.Name {
		case "metrics-port":
			n, err := strconv.ParseInt(p[1], 10, 64)
			if err != nil || n < d.Min || n > d.Max {
				return set()
			}
			port, name = n, p[0]
		case "metrics-bind":
			v, err := d.Parse(p[1])
			if err != nil {
				return set()
			}
			bind = v
			if name == "" {
				name = p[0]
			}
		}
	}
	if port == oldPort && bind == oldBind {
		return set()
	}
	var ln net.Listener
	if port != 0 && !m.closed {
		var err error
		ln, err = net.Listen("tcp", metricsAddr(bind, port))
		if err != nil && m.ported != nil && port == oldPort {
			// Moving the port to a wider address (127.0.0.1 to *) collides with the listener
			// being replaced: free the port, try again, and put the old one back if that fails.
			_ = m.ported.srv.Close()
			m.ported = nil
			if ln, err = net.Listen("tcp", metricsAddr(bind, port)); err != nil {
				if old, err2 := net.Listen("tcp", metricsAddr(oldBind, oldPort)); err2 == nil {
					m.ported = s.serveMetrics(old)
				} else {
					s.log.Warn("Unable to listen on the old metrics address again", "err", err2)
				}
			}
		}
		if err != nil {
			s.log.Warn("Unable to listen on the new metrics address", "err", err)
			return &config.SetError{Name: name, Reason: "Unable to listen on this port. Check server logs."}
		}
	}
	if err := set(); err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	if m.ported != nil {
		_ = m.ported.srv.Close()
		m.ported = nil
	}
	if ln != nil {
		m.ported = s.serveMetrics(ln)
		s.log.Info("Serving metrics", "addr", ln.Addr().String())
	}
	return nil
}

// Ready reports whether the server has loaded its dataset and accepts clients (/readyz).
func (s *Server) Ready() (bool, string) {
	switch {
	case s.closed.Load() || s.persist.stopping.Load():
		// stopping covers the final save of SHUTDOWN: traffic should go elsewhere already.
		return false, "shutting down"
	case s.persist.loading.Load():
		return false, "loading"
	case !s.ready.Load():
		return false, "starting"
	}
	return true, ""
}

// MetricsSnapshot reads the figures /metrics exports, from the sources INFO reads (info.go):
// a scrape costs about as much as INFO ALL, and commands pay nothing for it.
func (s *Server) MetricsSnapshot() *metrics.Snapshot {
	out := &metrics.Snapshot{}
	out.Info = metrics.InstanceInfo{
		Role: "master", RedisVersion: RedisVersion, HotKVVersion: Version, Mode: "standalone",
		OS: runtime.GOOS + " " + runtime.GOARCH, MaxmemoryPolicy: s.store.Mem.Policy().String(), RunID: s.runID,
		MasterReplID: s.runID, TCPPort: s.cfg.GetInt("port"), ProcessID: int64(pid),
	}
	out.UptimeSeconds = int64(time.Since(s.start).Seconds())

	s.mu.Lock()
	out.ConnectedClients = int64(len(s.clients))
	s.mu.Unlock()
	out.BlockedClients = int64(s.store.Waiters.Count()) + s.table.PausedClients()
	out.TrackingClients = int64(s.trackingClients())
	out.MaxClients = s.maxClients.Load()

	used, _, _ := s.usedMemory()
	rss := readRSS()
	out.UsedMemory, out.UsedMemoryRSS = used, rss
	out.FragmentationRatio = fragmentation(rss, used)
	_, scriptBytes, states := s.table.Scripting().Stats()
	_, funcBytes := s.table.Scripting().FunctionStats()
	out.UsedMemoryLua = uint64(states)*32<<10 + uint64(scriptBytes)
	out.UsedMemoryScripts = uint64(scriptBytes + funcBytes)
	out.MaxMemory = uint64(s.store.Mem.Limit())
	out.TotalSystemMemory = totalSystemMemory()

	p := &s.persist
	out.Loading = p.loading.Load()
	out.RDBChangesSinceSave = s.stats.dirty.Load()
	out.RDBBgsaveInProgress = p.bgInProgress.Load()
	out.RDBLastSaveTime = s.stats.lastSave.Load()
	out.RDBLastBgsaveOK = p.lastBgOK.Load()
	out.RDBLastBgsaveDuration = p.lastBgSec.Load()
	a := s.aof()
	out.AOFEnabled = a != nil && !a.off.Load()
	out.AOFLastWriteOK = a == nil || a.lastWriteOK.Load()
	out.AOFRewriteInProgress = p.rw.inProgress.Load()
	if out.AOFEnabled {
		a.mu.Lock()
		out.AOFBufferLength = int64(a.pendingBytes)
		a.mu.Unlock()
		out.AOFCurrentSize = a.baseSize.Load() + a.curSize.Load() - a.openedSize.Load()
		out.AOFBaseSize = a.baseSize.Load()
	}

	hits, misses, expired, _ := s.keyspaceCounters(false)
	out.KeyspaceHits, out.KeyspaceMisses, out.ExpiredKeys = hits, misses, expired
	if es := s.stats.expire.Load(); es != nil {
		out.ExpiredStalePercent = es.StalePercent
		out.ExpiredTimeCapReached = es.TimeCapReached
	}
	out.EvictedKeys = s.store.Mem.Evicted()
	out.ConnectionsReceived = s.stats.connectionsReceived.Load()
	out.CommandsProcessed = s.stats.commandsProcessed.Load()
	out.NetInputBytes = s.stats.netInput.Load()
	out.NetOutputBytes = s.stats.netOutput.Load() + s.hub.NetOutput.Load()
	out.RejectedConnections = s.stats.rejectedConns.Load()
	ch, pat, _ := s.hub.Stats()
	out.PubSubChannels, out.PubSubPatterns = int64(ch), int64(pat)
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	out.CPUSysSeconds, out.CPUUserSeconds = tv(ru.Stime), tv(ru.Utime)

	for i := 0; i < s.store.NumDBs(); i++ {
		if keys, expires := s.store.DB(i).Expires(false); keys > 0 {
			out.DBs = append(out.DBs, metrics.DBStats{Index: i, Keys: int64(keys), Expires: int64(expires)})
		}
	}
	out.Commands = s.commandMetrics()

	s.stats.errMu.Lock()
	for code, n := range s.stats.errorStats {
		out.Errors = append(out.Errors, metrics.ErrorStats{Code: code, Count: n})
	}
	s.stats.errMu.Unlock()
	sort.Slice(out.Errors, func(i, j int) bool { return out.Errors[i].Code < out.Errors[j].Code })

	out.Limiters = limiterMetrics(s.store.Limiters, s.clock.NowMs())
	if svc := s.RLSService(); svc != nil {
		for _, st := range svc.Stats() {
			out.RLS = append(out.RLS, metrics.RLSStats{Domain: st.Domain, Descriptor: st.Key, Total: st.TotalHits,
				OverLimit: st.OverLimit, NearLimit: st.NearLimit, ShadowMode: st.ShadowMode, WithinLimit: st.WithinLimit})
		}
	}
	gl, gd := s.store.Decisions.GCRALimit.Load()
	tl, td := s.store.Decisions.CLThrottle.Load()
	out.Decisions = []metrics.DecisionStats{
		{Command: "gcra.limit", Allowed: gl, Denied: gd},
		{Command: "cl.throttle", Allowed: tl, Denied: td},
	}
	return out
}

// commandMetrics lists INFO commandstats' figures for every command and subcommand that was
// called, rejected or failed, named as cmdstat_ names them (`config|get`).
func (s *Server) commandMetrics() []metrics.CommandStats {
	var out []metrics.CommandStats
	var walk func(c *command.Command)
	walk = func(c *command.Command) {
		calls, rej, failed := c.Calls.Load(), c.RejectedCalls.Load(), c.FailedCalls.Load()
		if calls > 0 || rej > 0 || failed > 0 {
			out = append(out, metrics.CommandStats{
				Name: c.FullName(), Calls: calls, Usec: c.Usec.Load(),
				RejectedCalls: rej, Failed: failed, Latency: commandLatency(c),
			})
		}
		for _, sc := range c.Subcommands {
			walk(sc)
		}
	}
	for _, c := range s.table.All() {
		walk(c)
	}
	return out
}

// commandLatency is the one place a command's latency histogram reaches /metrics: it is
// exported as hotkv_command_duration_seconds{cmd}, with LATENCY HISTOGRAM's power-of-two
// buckets (1.024 µs to about 1 s) as cumulative counts by upper bound in seconds. Commands
// without a recorded call (or with latency-tracking off since the last RESETSTAT) have none.
func commandLatency(c *command.Command) *metrics.Histogram {
	snap := c.Latency()
	if snap.Count == 0 {
		return nil
	}
	h := &metrics.Histogram{Count: snap.Count, SumSeconds: float64(snap.SumNs) / 1e9,
		Buckets: make(map[float64]uint64, 24)}
	for _, b := range snap.Buckets() {
		h.Buckets[b.UpperSeconds] = b.Count
	}
	return h
}

// limiterMetrics reads every named limiter's RATELIMIT.STATS figures at nowMs: the totals and
// the keys with live state (which, like STATS, reclaims dead state on the way).
func limiterMetrics(ls *store.Limiters, nowMs int64) []metrics.LimiterStats {
	names := ls.Names()
	out := make([]metrics.LimiterStats, 0, len(names))
	for _, n := range names {
		l := ls.Get([]byte(n))
		if l == nil {
			continue // dropped meanwhile
		}
		allowed, denied := l.Totals()
		out = append(out, metrics.LimiterStats{Name: l.Name, Algo: l.Algo.String(),
			Allowed: allowed, Denied: denied, ShadowDenied: l.ShadowDenied(), Keys: l.UniqueKeys(nowMs)})
	}
	return out
}

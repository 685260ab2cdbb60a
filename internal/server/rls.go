package server

import (
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/rls"
)

// rlsState is the built-in Envoy rate limit service (rls-port, rls-bind, rls-config;
// internal/rls, docs/envoy.md): a gRPC server whose decisions run as ordinary commands.
type rlsState struct {
	mu sync.Mutex
	// svc is set once by Start; SIGHUP may read it from another goroutine meanwhile.
	svc atomic.Pointer[rls.Service]
	gs  *grpc.Server
	// lns are the served listeners; pending are AddRLSListener's, not yet served (tests).
	lns     []net.Listener
	pending []net.Listener
	// cfg is the configuration loaded at Start, installed once the data is loaded.
	cfg *rls.Config
	// clients are the internal clients decisions run on.
	clients sync.Pool
	// fwd relays what this node cannot decide to the node that can (rls-forward).
	fwd rlsForwarder
	// health is the standard gRPC health service on the same listeners (rlsHealth).
	health *health.Server
	// healthSt is the status last given to health (healthpb's value; 0, UNKNOWN, before any).
	healthSt atomic.Int32
}

// rlsServiceName is the service the gRPC health service reports on, with "" (the server).
const rlsServiceName = "envoy.service.ratelimit.v3.RateLimitService"

// rlsHealthEvery is how often the health service's status is brought up to date: a change of
// leader is seen by Envoy's health checks (their interval is usually seconds) within that.
const rlsHealthEvery = 100 * time.Millisecond

// AddRLSListener makes the server also serve the rate limit service on ln once started,
// whatever rls-port says; in-process tests use it with an ephemeral port, as AddListener.
// rls-config must then be set.
func (s *Server) AddRLSListener(ln net.Listener) {
	s.rls.mu.Lock()
	s.rls.pending = append(s.rls.pending, ln)
	s.rls.mu.Unlock()
}

// RLSAddr returns the address of the first rate limit service listener, or nil.
func (s *Server) RLSAddr() net.Addr {
	s.rls.mu.Lock()
	defer s.rls.mu.Unlock()
	if len(s.rls.lns) > 0 {
		return s.rls.lns[0].Addr()
	}
	if len(s.rls.pending) > 0 {
		return s.rls.pending[0].Addr()
	}
	return nil
}

// RLSService returns the rate limit service (nil when none is configured): benchmarks call
// it in-process and the metrics read its counters.
func (s *Server) RLSService() *rls.Service { return s.rls.svc.Load() }

// rlsWanted reports whether the service is to run: a port or an added listener.
func (s *Server) rlsWanted() bool {
	s.rls.mu.Lock()
	defer s.rls.mu.Unlock()
	return s.cfg.GetInt("rls-port") != 0 || len(s.rls.pending) > 0
}

// loadRLSConfig reads rls-config at the start of Start, before the data is loaded, so that a
// bad file stops the start at once.
func (s *Server) loadRLSConfig() error {
	if !s.rlsWanted() {
		return nil
	}
	path := s.cfg.Get("rls-config")
	if path == "" {
		return fmt.Errorf("rls-port is set but rls-config is empty: the rate limit service needs a descriptor configuration file (docs/envoy.md)")
	}
	c, err := rls.Load(path)
	if err != nil {
		return fmt.Errorf("Bad rate limit configuration: %w", err)
	}
	s.rls.cfg = c
	return nil
}

// startRLS installs the loaded configuration and opens the gRPC listeners, once the data is
// loaded and the client listeners are open.
func (s *Server) startRLS() error {
	if s.rls.cfg == nil {
		return nil
	}
	r := &s.rls
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fwd.s = s
	svc := rls.NewService(&rlsExec{s: s})
	svc.Headers.Store(s.cfg.GetBool("rls-response-headers"))
	if err := svc.Install(r.cfg); err != nil {
		return fmt.Errorf("Bad rate limit configuration: %w", err)
	}
	r.svc.Store(svc)
	if port := s.cfg.GetInt("rls-port"); port != 0 {
		var lns []net.Listener
		var err error
		if bind := s.cfg.Get("rls-bind"); bind != "" {
			var ln net.Listener
			ln, err = net.Listen("tcp", metricsAddr(bind, port))
			lns = []net.Listener{ln}
		} else {
			lns, err = s.listen(port)
		}
		if err != nil {
			return fmt.Errorf("Could not create the rate limit service listening socket: %w", err)
		}
		r.lns = append(r.lns, lns...)
	}
	r.lns = append(r.lns, r.pending...)
	r.pending = nil
	var opts []grpc.ServerOption
	if s.cfg.GetBool("rls-tls") {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{GetConfigForClient: s.rlsTLSConfig})))
	}
	r.gs = grpc.NewServer(opts...)
	rlpb.RegisterRateLimitServiceServer(r.gs, svc)
	r.health = health.NewServer()
	healthpb.RegisterHealthServer(r.gs, r.health)
	// The health service's status (grpc.health.v1.Health, for Envoy's grpc_health_check and
	// Kubernetes gRPC probes) follows rlsServing until the server closes.
	s.rlsHealthUpdate()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.every(rlsHealthEvery, s.rlsHealthUpdate)
	}()
	for _, ln := range r.lns {
		s.wg.Add(1)
		go func(ln net.Listener) {
			defer s.wg.Done()
			if err := r.gs.Serve(ln); err != nil {
				s.log.Warn("rate limit service listener stopped", "addr", ln.Addr().String(), "err", err)
			}
		}(ln)
		s.log.Info("Serving the Envoy rate limit service", "addr", ln.Addr().String(), "config", r.cfg.Source,
			"domains", len(r.cfg.Domains()), "rules", len(r.cfg.Rules))
	}
	return nil
}

// rlsTLSConfig is the TLS configuration of a new connection to the rate limit service: the
// server's current one (CONFIG SET of tls-* replaces it), with HTTP/2 as the only
// application protocol, which gRPC requires.
func (s *Server) rlsTLSConfig(*tls.ClientHelloInfo) (*tls.Config, error) {
	base := s.tls.cfg.Load()
	if base == nil {
		return nil, fmt.Errorf("no TLS configuration")
	}
	c := base.Clone()
	c.NextProtos = []string{"h2"}
	return c, nil
}

// rlsHealthUpdate sets the health service's status from rlsServing, when it changed.
func (s *Server) rlsHealthUpdate() {
	serving, _ := s.rlsServing()
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		st = healthpb.HealthCheckResponse_SERVING
	}
	if s.rls.healthSt.Swap(int32(st)) == int32(st) {
		return
	}
	s.rls.health.SetServingStatus("", st)
	s.rls.health.SetServingStatus(rlsServiceName, st)
}

// rlsServing reports whether a call sent to this node now would be decided, and if not why:
// the server must be ready (its data loaded, not shutting down), and in a Raft group be the
// serving leader, or relay (rls-forward) to a leader it knows. A shard's node that relays
// reports on its own group only: the other shards' leaders are checked by the calls.
func (s *Server) rlsServing() (bool, string) {
	if ok, why := s.Ready(); !ok {
		return false, why
	}
	r := s.repl
	switch {
	case r == nil || r.servingA.Load():
		return true, ""
	case !s.cfg.GetBool("rls-forward"):
		return false, "a follower, and rls-forward is no"
	case r.leaderClientAddr() == "":
		return false, "no leader to relay to"
	}
	return true, ""
}

// closeRLS stops the gRPC server: calls in flight are cut, as client connections are.
func (s *Server) closeRLS() {
	r := &s.rls
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.health != nil {
		r.health.Shutdown() // NOT_SERVING to every watcher, before the connections go
	}
	if r.gs != nil {
		r.gs.Stop()
		r.gs = nil
	}
	r.fwd.close()
	for _, ln := range r.pending {
		_ = ln.Close()
	}
	r.pending = nil
}

// ReloadRLS loads path (rls-config's value when empty) and makes it the rate limit
// configuration. A file that cannot be used is refused with an error naming the file, the line
// and the problem, and the configuration in use stays. RLS RELOAD, CONFIG SET rls-config and
// SIGHUP call it.
func (s *Server) ReloadRLS(path string) error {
	svc := s.rls.svc.Load()
	if path == "" {
		if svc == nil {
			return fmt.Errorf("the rate limit service is not running (rls-port is 0)")
		}
		path = s.cfg.Get("rls-config")
	}
	c, err := rls.Load(path)
	if err != nil {
		s.log.Warn("Rate limit configuration refused; the old one stays", "err", err)
		return err
	}
	if svc == nil {
		return nil // validated only: the service is off (rls-port 0)
	}
	if err := svc.Install(c); err != nil {
		s.log.Warn("Rate limit configuration refused; the old one stays", "err", err)
		return err
	}
	s.log.Info("Rate limit configuration loaded", "config", path, "domains", len(c.Domains()), "rules", len(c.Rules))
	return nil
}

// rlsExec runs the service's commands on pooled internal clients: unrestricted (no ACL
// user), in database 0, through the table's gate, so that a follower or a shard that does not
// own a key refuses as it would refuse a client.
type rlsExec struct{ s *Server }

type rlsClient struct {
	client command.Client
	ctx    command.Ctx
}

func (e *rlsExec) NowMs() int64 { return e.s.clock.NowMs() }

// Do runs cmds here and, with rls-forward on, relays those this node cannot run (their
// reply is a MOVED) to the node that can (rlsForwarder).
func (e *rlsExec) Do(now int64, cmds ...[][]byte) ([][]byte, error) {
	s := e.s
	forward := s.cfg.GetBool("rls-forward")
	replies, err := e.local(now, forward, cmds)
	if err != nil || !forward {
		return replies, err
	}
	if err := s.rls.fwd.forward(cmds, replies); err != nil {
		return nil, err
	}
	return replies, nil
}

// local runs cmds on this node. Without forwarding a follower refuses at once; with it, it
// runs them too, and the table's gate answers each with a MOVED to its leader, with no effect.
func (e *rlsExec) local(now int64, forward bool, cmds [][][]byte) ([][]byte, error) {
	s := e.s
	if s.closed.Load() {
		return nil, fmt.Errorf("%w: the server is shutting down", rls.ErrUnavailable)
	}
	r := s.repl
	var gen uint64
	if r != nil {
		if !r.servingA.Load() && !forward {
			return nil, fmt.Errorf("%w: this node is not the leader of its Raft group", rls.ErrUnavailable)
		}
		gen = r.lossGen.Load()
	}
	c, _ := s.rls.clients.Get().(*rlsClient)
	if c == nil {
		c = &rlsClient{}
		c.client.User = "default"
		c.client.Authenticated = true
		c.client.OriginalNames = true // the service's commands, whatever rename-command did
		c.client.Flags = "N"
		c.client.CreatedAt = time.Now()
		c.client.ID = s.nextID.Add(1)
		c.client.Addr, c.client.LAddr = "rls:0", "rls:0"
		w := resp.NewWriter()
		c.client.Writer = w
		c.ctx = command.Ctx{W: w, Client: &c.client, Srv: s, Store: s.store, Hub: s.hub}
	}
	c.ctx.BeginBatch()
	replies := make([][]byte, len(cmds))
	for i, args := range cmds {
		c.ctx.Args = args
		c.ctx.Now = now
		c.ctx.DB = s.store.DB(0)
		s.table.Exec(&c.ctx)
		if c.ctx.Paused {
			// CLIENT PAUSE holds the decision: the call is not kept waiting on a gRPC
			// handler, Envoy applies its failure mode (the decisions before it in the call
			// stand, as a pipeline's would).
			c.ctx.Paused = false
			c.ctx.W.Reset()
			s.rls.clients.Put(c)
			return nil, fmt.Errorf("%w: clients are paused (CLIENT PAUSE)", rls.ErrUnavailable)
		}
		replies[i] = append([]byte(nil), c.ctx.W.Buf...)
		c.ctx.W.Reset()
	}
	var err error
	if r != nil {
		if c.client.Gated && !r.ackLeader && !r.waitAck(gen) {
			err = fmt.Errorf("%w: leadership was lost before the decision committed", rls.ErrUnavailable)
		}
		c.client.Gated = false
	}
	if a := s.aof(); a != nil && a.always() && err == nil {
		if werr := a.waitDurable(); werr != nil {
			err = fmt.Errorf("%w: the append-only log cannot be written", rls.ErrUnavailable)
		}
	}
	s.stats.commandsProcessed.Add(int64(len(cmds)))
	s.rls.clients.Put(c)
	if err != nil {
		return nil, err
	}
	return replies, nil
}

// reloadRLSConfig implements CONFIG SET of rls-config (the new file is loaded and installed
// before the value is stored: a file that cannot be used refuses the whole CONFIG SET with its
// error, the old configuration staying) and of rls-response-headers.
func (s *Server) reloadRLSConfig(pairs [][2]string, set func() error) error {
	path, name := "", ""
	for _, p := range pairs {
		if d := s.cfg.Lookup(p[0]); d != nil && d.Name == "rls-config" {
			path, name = p[1], p[0]
		}
	}
	svc := s.rls.svc.Load() // set once at Start: the same service throughout
	if name != "" && path == "" && svc != nil {
		return &config.SetError{Name: name, Reason: "the rate limit service is running: rls-config cannot be empty"}
	}
	var before *rls.Config
	if svc != nil {
		before = svc.Config()
	}
	if name != "" && path != "" {
		if err := s.ReloadRLS(path); err != nil {
			return &config.SetError{Name: name, Reason: err.Error()}
		}
	}
	if err := set(); err != nil {
		// CONFIG SET is all or nothing: another parameter was refused, so rls-config keeps
		// its value, and the service the configuration it had.
		if svc != nil && before != nil {
			_ = svc.Install(before)
		}
		return err
	}
	if svc != nil {
		svc.Headers.Store(s.cfg.GetBool("rls-response-headers"))
	}
	return nil
}

// RLSStatus implements RLS STATUS.
func (s *Server) RLSStatus() [][2]string {
	svc := s.rls.svc.Load()
	if svc == nil {
		return [][2]string{{"enabled", "0"}, {"config", s.cfg.Get("rls-config")}}
	}
	c := svc.Config()
	var addrs []string
	s.rls.mu.Lock()
	for _, ln := range s.rls.lns {
		addrs = append(addrs, ln.Addr().String())
	}
	s.rls.mu.Unlock()
	return [][2]string{{"enabled", "1"}, {"config", c.Source}, {"listeners", strings.Join(addrs, " ")},
		{"domains", strings.Join(c.Domains(), " ")}, {"rules", strconv.Itoa(len(c.Rules))},
		{"serving", servingField(s.rlsServing())}, {"forward", s.cfg.Get("rls-forward")}, {"forwarded", strconv.FormatInt(s.rls.fwd.calls.Load(), 10)},
		{"forward_errors", strconv.FormatInt(s.rls.fwd.errors.Load(), 10)}}
}

// servingField is RLS STATUS serving: "yes", or "no: " and why.
func servingField(ok bool, why string) string {
	if ok {
		return "yes"
	}
	return "no: " + why
}

package server

import (
	"net"
	"slices"
	"strconv"

	"github.com/hotkv/hotkv/internal/config"
)

// reloadListen implements CONFIG SET of port and bind, which Redis 7 changes at run time.
// Clients already connected stay connected.
//   - A new port is listened on (every bind address) before anything is stored, and the old
//     one closed after; a port that cannot be bound refuses the whole CONFIG SET with Redis's
//     error and changes nothing.
//   - New bind addresses replace the old ones for port and tls-port: as Redis's
//     changeBindAddr, the old listeners close first (the new addresses may include old ones),
//     and if the new ones cannot all be bound the old ones open again.
//
// A Raft member refuses both: its client address is what its group announces to clients.
func (s *Server) reloadListen(pairs [][2]string, set func() error) error {
	port, bind := s.cfg.GetInt("port"), s.cfg.Get("bind")
	var portName, bindName string
	tlsPortToo := false
	for _, p := range pairs {
		d := s.cfg.Lookup(p[0])
		if d == nil {
			continue
		}
		switch d.Name {
		case "port":
			n, err := strconv.ParseInt(p[1], 10, 64)
			if err != nil || n < d.Min || n > d.Max {
				return set() // refused there, with its own error
			}
			port, portName = n, p[0]
		case "bind":
			v, err := d.Parse(p[1])
			if err != nil {
				return set()
			}
			bind, bindName = v, p[0]
		case "tls-port":
			tlsPortToo = true
		}
	}
	bindChanged := bindName != "" && bind != s.cfg.Get("bind")
	portChanged := portName != "" && port != s.cfg.GetInt("port")
	if !bindChanged && !portChanged {
		return set()
	}
	name := bindName
	if name == "" {
		name = portName
	}
	if s.repl != nil {
		return &config.SetError{Name: name, Reason: "a Raft member's client address is announced to its group: restart the node to change it"}
	}
	if bindChanged && tlsPortToo {
		return &config.SetError{Name: bindName, Reason: "change bind and tls-port in separate CONFIG SET calls"}
	}
	// listenMu is held throughout (set() takes no listener lock of its own); tls.mu only
	// while the tls-port listeners are swapped, because set() runs reloadTLS, which takes it.
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	if s.closed.Load() {
		return &config.SetError{Name: name, Reason: "the server is shutting down"}
	}
	oldPlain := s.ported
	tlsPort := s.cfg.GetInt("tls-port")
	var plain, tlsLns []net.Listener
	var err error
	if bindChanged {
		closeAll(oldPlain)
		s.tls.mu.Lock()
		closeAll(s.tls.ported)
		s.tls.ported = nil
		s.tls.mu.Unlock()
		if plain, err = listenOn(bind, port); err == nil {
			if tlsLns, err = listenOn(bind, tlsPort); err != nil {
				closeAll(plain)
			}
		}
		if err != nil {
			s.log.Warn("Failed to bind to the new addresses; listening on the old ones again", "bind", bind, "err", err)
			s.reopen(s.cfg.Get("bind"), s.cfg.GetInt("port"), tlsPort)
			return &config.SetError{Name: bindName, Reason: "Failed to bind to specified addresses."}
		}
	} else if plain, err = listenOn(bind, port); err != nil {
		s.log.Warn("Unable to listen on the new port", "port", port, "err", err)
		return &config.SetError{Name: portName, Reason: "Unable to listen on this port. Check server logs."}
	}
	if err := set(); err != nil {
		closeAll(plain)
		closeAll(tlsLns)
		if bindChanged {
			s.reopen(s.cfg.Get("bind"), s.cfg.GetInt("port"), tlsPort)
		}
		return err
	}
	if !bindChanged {
		closeAll(oldPlain)
	}
	s.serveNew(plain, tlsLns, bindChanged)
	s.log.Info("Listening on new addresses", "bind", bind, "port", port)
	return nil
}

// reopen listens on the old addresses again after a failed change of bind; what cannot be
// bound any more is logged.
func (s *Server) reopen(bind string, port, tlsPort int64) {
	plain, err := listenOn(bind, port)
	if err != nil {
		s.log.Warn("Could not listen on the old addresses again", "bind", bind, "port", port, "err", err)
	}
	tlsLns, err := listenOn(bind, tlsPort)
	if err != nil {
		s.log.Warn("Could not listen on the old addresses again", "bind", bind, "tls-port", tlsPort, "err", err)
	}
	s.serveNew(plain, tlsLns, true)
}

// serveNew makes plain the port's listeners (and, when tlsToo, tlsLns the tls-port's) and
// serves them. The caller holds listenMu and closed the old ones.
func (s *Server) serveNew(plain, tlsLns []net.Listener, tlsToo bool) {
	s.listeners = slices.DeleteFunc(s.listeners, func(ln net.Listener) bool { return slices.Contains(s.ported, ln) })
	s.listeners = append(s.listeners, plain...)
	s.ported = plain
	for _, ln := range plain {
		s.wg.Add(1)
		go s.acceptLoop(ln, false)
	}
	if tlsToo {
		s.tls.mu.Lock()
		s.tls.ported = tlsLns
		for _, ln := range tlsLns {
			s.wg.Add(1)
			go s.acceptLoop(ln, true)
		}
		s.tls.mu.Unlock()
	}
}

func closeAll(lns []net.Listener) {
	for _, ln := range lns {
		_ = ln.Close()
	}
}

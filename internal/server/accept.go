package server

import (
	"context"
	"crypto/tls"
	"net"
	"time"
)

// protectedModeDenied is Redis's reply to a client refused by protected mode
// (networking.c, clientAcceptHandler), byte for byte: clients and scripts look for it.
const protectedModeDenied = "-DENIED Redis is running in protected mode because protected " +
	"mode is enabled and no password is set for the default user. " +
	"In this mode connections are only accepted from the loopback interface. " +
	"If you want to connect from external computers to Redis you " +
	"may adopt one of the following solutions: " +
	"1) Just disable protected mode sending the command " +
	"'CONFIG SET protected-mode no' from the loopback interface " +
	"by connecting to Redis from the same host the server is " +
	"running, however MAKE SURE Redis is not publicly accessible " +
	"from internet if you do so. Use CONFIG REWRITE to make this " +
	"change permanent. " +
	"2) Alternatively you can just disable the protected mode by " +
	"editing the Redis configuration file, and setting the protected " +
	"mode option to 'no', and then restarting the server. " +
	"3) If you started the server manually just for testing, restart " +
	"it with the '--protected-mode no' option. " +
	"4) Setup a an authentication password for the default user. " +
	"NOTE: You only need to do one of the above things in order for " +
	"the server to start accepting connections from the outside.\r\n"

// maxClientsReached is Redis's reply to a client over maxclients.
const maxClientsReached = "-ERR max number of clients reached\r\n"

// handleConn sets up an accepted connection and serves it: TCP keepalive, the TLS handshake
// on tls-port, protected mode and maxclients, in the order Redis applies them once the
// connection is established (a refused client gets the error over TLS, where it can read it).
func (s *Server) handleConn(nc net.Conn, secure bool) {
	if tc, ok := nc.(*net.TCPConn); ok {
		setKeepAlive(tc, s.keepAlive.Load())
	}
	if secure {
		tc := tls.Server(nc, s.tls.cfg.Load())
		// The server's context ends the handshake at shutdown, the timeout a silent peer.
		ctx, cancel := context.WithTimeout(s.ctx, tlsHandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			s.log.Warn("Error accepting a client connection", "addr", nc.RemoteAddr().String(), "err", err)
			_ = nc.Close()
			return
		}
		nc = tc
	}
	if s.protectedModeRefuses(nc.RemoteAddr()) {
		s.stats.rejectedConns.Add(1)
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write([]byte(protectedModeDenied))
		_ = nc.Close()
		return
	}
	c := s.newConn(nc)
	if c == nil {
		s.stats.rejectedConns.Add(1)
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write([]byte(maxClientsReached))
		_ = nc.Close()
		return
	}
	s.stats.connectionsReceived.Add(1)
	c.serve()
}

// setKeepAlive applies tcp-keepalive as Redis's anetKeepAlive does: the first probe after
// secs idle, then every secs/3, three probes. 0 turns keepalive off (Go enables it on
// accepted connections by default).
func setKeepAlive(tc *net.TCPConn, secs int64) {
	if secs <= 0 {
		_ = tc.SetKeepAlive(false)
		return
	}
	period := time.Duration(secs) * time.Second
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true, Idle: period,
		Interval: max(time.Second, period/3), Count: 3})
}

// protectedModeRefuses is protected mode's rule (Redis's clientAcceptHandler): with
// protected-mode yes and no password for the default user, only clients whose address is
// exactly 127.0.0.1 or ::1 are served. Like Redis it looks at the peer's address, not the
// interface, so 127.0.0.2 is refused too.
func (s *Server) protectedModeRefuses(addr net.Addr) bool {
	if !s.protected.Load() || !s.acl.Default().NoPass() {
		return false
	}
	return !isLocalClient(addr)
}

// isLocalClient reports whether addr is Redis's idea of a local client.
func isLocalClient(addr net.Addr) bool {
	var ip net.IP
	switch a := addr.(type) {
	case *net.TCPAddr:
		ip = a.IP
	case *net.UnixAddr:
		return true
	default:
		host, _, err := net.SplitHostPort(addr.String())
		if err != nil {
			return false
		}
		ip = net.ParseIP(host)
	}
	return ip != nil && (ip.Equal(net.IPv4(127, 0, 0, 1)) || ip.Equal(net.IPv6loopback))
}

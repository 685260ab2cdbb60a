package server

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hotkv/hotkv/internal/config"
)

// tlsState is the TLS configuration new connections on tls-port get. It is swapped whole
// (an atomic pointer) when CONFIG SET changes a tls-* directive, so a reload never disturbs
// a handshake in progress and open connections keep what they negotiated, as with Redis 7.
type tlsState struct {
	cfg atomic.Pointer[tls.Config]
	// mu serialises reloads: build, CONFIG SET and publish happen as one step.
	mu sync.Mutex
	// ported are the listeners opened for tls-port (replaced when CONFIG SET changes it),
	// added those of AddTLSListener.
	ported, added []net.Listener
}

// tlsHandshakeTimeout bounds a client's handshake, so that a peer that connects and sends
// nothing does not hold a goroutine and a file descriptor forever.
const tlsHandshakeTimeout = 10 * time.Second

// buildTLSConfig builds the server's tls.Config from the tls-* directives as get reads them,
// loading every file; the error says what failed, with Redis's log wording where it has one.
func buildTLSConfig(get func(string) string) (*tls.Config, error) {
	certFile, keyFile := get("tls-cert-file"), get("tls-key-file")
	if certFile == "" {
		return nil, errors.New("No tls-cert-file configured!")
	}
	if keyFile == "" {
		return nil, errors.New("No tls-key-file configured!")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("Failed to load certificate: %s: %v", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("Failed to load private key: %s: %v", keyFile, err)
	}
	keyPEM, err = decryptKey(keyPEM, get("tls-key-file-pass"))
	if err != nil {
		return nil, fmt.Errorf("Failed to load private key: %s: %v", keyFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("Failed to load certificate: %s: %v", certFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}

	auth := get("tls-auth-clients")
	caFile, caDir := get("tls-ca-cert-file"), get("tls-ca-cert-dir")
	if auth != "no" && caFile == "" && caDir == "" {
		return nil, errors.New("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!")
	}
	if caFile != "" || caDir != "" {
		pool, err := loadCAs(caFile, caDir)
		if err != nil {
			return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %v", err)
		}
		cfg.ClientCAs = pool
	}
	switch auth {
	case "no":
		cfg.ClientAuth = tls.NoClientCert
	case "optional":
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	if cfg.MinVersion, cfg.MaxVersion, err = config.TLSProtocols(get("tls-protocols")); err != nil {
		return nil, err
	}
	if cfg.CipherSuites, err = config.TLSCiphers(get("tls-ciphers")); err != nil {
		return nil, err
	}
	cfg.SessionTicketsDisabled = get("tls-session-caching") == "no"
	return cfg, nil
}

// decryptKey returns keyPEM with its private key decrypted with tls-key-file-pass: an
// encrypted PKCS#8 key (OpenSSL 3's form, tlskey.go) or one in the legacy PEM encryption
// (Proc-Type: 4,ENCRYPTED, OpenSSL 1.x's `genrsa -aes256`).
func decryptKey(keyPEM []byte, pass string) ([]byte, error) {
	var out []byte
	rest := keyPEM
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "ENCRYPTED PRIVATE KEY" {
			if pass == "" {
				return nil, errors.New("the key is encrypted and tls-key-file-pass is not set")
			}
			der, err := decryptPKCS8(block.Bytes, pass)
			if err != nil {
				return nil, err
			}
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})...)
			continue
		}
		//lint:ignore SA1019 the legacy PEM encryption is what tls-key-file-pass is for.
		if x509.IsEncryptedPEMBlock(block) { //nolint:staticcheck
			if pass == "" {
				return nil, errors.New("the key is encrypted and tls-key-file-pass is not set")
			}
			der, err := x509.DecryptPEMBlock(block, []byte(pass)) //nolint:staticcheck
			if err == nil && !parsesAsKey(der) {
				// A wrong passphrase can leave padding that looks valid (1 in 256).
				err = errors.New("wrong passphrase?")
			}
			if err != nil {
				return nil, fmt.Errorf("cannot decrypt the key with tls-key-file-pass: %v", err)
			}
			block = &pem.Block{Type: block.Type, Bytes: der}
		}
		out = append(out, pem.EncodeToMemory(block)...)
	}
	if out == nil {
		return keyPEM, nil // let X509KeyPair report what is wrong with it
	}
	return out, nil
}

// parsesAsKey reports whether der is a private key in one of the encodings PEM keys use.
func parsesAsKey(der []byte) bool {
	if _, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		return true
	}
	if _, err := x509.ParseECPrivateKey(der); err == nil {
		return true
	}
	_, err := x509.ParsePKCS8PrivateKey(der)
	return err == nil
}

// loadCAs reads the CA certificates of tls-ca-cert-file and of every regular file in
// tls-ca-cert-dir.
func loadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	add := func(path string) error {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !pool.AppendCertsFromPEM(b) {
			return fmt.Errorf("%s: no PEM certificate found", path)
		}
		return nil
	}
	if file != "" {
		if err := add(file); err != nil {
			return nil, err
		}
	}
	if dir != "" {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !e.Type().IsRegular() {
				continue
			}
			// A hashed-names directory (c_rehash) also holds non-certificate files: skip
			// those instead of failing on them.
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err == nil {
				pool.AppendCertsFromPEM(b)
			}
		}
	}
	return pool, nil
}

// tlsEnabled reports whether the server serves TLS (tls-port set, a TLS listener added, or
// the rate limit service on TLS).
func (s *Server) tlsEnabled() bool {
	return s.cfg.GetInt("tls-port") != 0 || len(s.tls.added) > 0 || s.cfg.GetBool("rls-tls")
}

// setupTLS loads the TLS configuration at startup; an error stops the start, as Redis
// refuses to start with a TLS configuration it cannot load.
func (s *Server) setupTLS() error {
	if !s.tlsEnabled() {
		return nil
	}
	if s.cfg.Get("tls-ciphersuites") != "" {
		s.log.Warn("tls-ciphersuites is checked but not enforced: Go's crypto/tls always offers its three TLS 1.3 suites")
	}
	cfg, err := buildTLSConfig(s.cfg.Get)
	if err != nil {
		return fmt.Errorf("Failed to configure TLS: %w", err)
	}
	s.tls.cfg.Store(cfg)
	return nil
}

// reloadTLS implements CONFIG SET of tls-* directives: the new configuration is built from
// the values being set over the current ones, and only if it loads are the values stored and
// the configuration published; otherwise nothing changes and the client gets Redis's
// error (the cause is logged, as Redis logs it). A new tls-port is listened on before
// anything is stored, and the old port closed after, as Redis's changeListenPort.
func (s *Server) reloadTLS(pairs [][2]string, set func() error) error {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	var first, portName string
	oldPort := s.cfg.GetInt("tls-port")
	port := oldPort
	overlay := map[string]string{}
	for _, p := range pairs {
		d := s.cfg.Lookup(p[0])
		if d == nil || !strings.HasPrefix(d.Name, "tls-") {
			continue
		}
		if d.Name == "tls-port" {
			n, err := strconv.ParseInt(p[1], 10, 64)
			if err != nil {
				return &config.SetError{Name: p[0], Reason: "argument couldn't be parsed into an integer"}
			}
			if n < d.Min || n > d.Max {
				return &config.SetError{Name: p[0], Reason: fmt.Sprintf("argument must be between %d and %d inclusive", d.Min, d.Max)}
			}
			port, portName = n, p[0]
			continue
		}
		if first == "" {
			first = p[0]
		}
		overlay[d.Name] = p[1]
	}
	enabled := port != 0 || len(s.tls.added) > 0 || s.cfg.GetBool("rls-tls")
	var cfg *tls.Config
	if enabled && (first != "" || s.tls.cfg.Load() == nil) {
		var err error
		cfg, err = buildTLSConfig(func(name string) string {
			if v, ok := overlay[name]; ok {
				if d := s.cfg.Lookup(name); d != nil && (d.Type == config.Enum || d.Type == config.Bool) {
					return strings.ToLower(v)
				}
				return v
			}
			return s.cfg.Get(name)
		})
		if err != nil {
			s.log.Warn("Unable to update TLS configuration", "err", err)
			name := first
			if name == "" {
				name = portName
			}
			return &config.SetError{Name: name, Reason: "Unable to update TLS configuration. Check server logs."}
		}
	}
	var lns []net.Listener
	if port != oldPort {
		var err error
		if lns, err = s.listen(port); err != nil {
			s.log.Warn("Unable to listen on the new tls-port", "err", err)
			return &config.SetError{Name: portName, Reason: "Unable to listen on this port. Check server logs."}
		}
	}
	if err := set(); err != nil {
		for _, ln := range lns {
			_ = ln.Close()
		}
		return err
	}
	if cfg != nil {
		s.tls.cfg.Store(cfg)
	}
	if port != oldPort {
		for _, ln := range s.tls.ported {
			_ = ln.Close()
		}
		s.tls.ported = lns
		if s.closed.Load() {
			// Closing began meanwhile: its closeListeners ran before these existed.
			for _, ln := range lns {
				_ = ln.Close()
			}
			return nil
		}
		for _, ln := range lns {
			s.wg.Add(1)
			go s.acceptLoop(ln, true)
		}
	}
	return nil
}

// AddTLSListener makes the server also serve TLS on ln once started, with the tls-*
// configuration; in-process tests use it with an ephemeral port, as AddListener.
func (s *Server) AddTLSListener(ln net.Listener) {
	s.tls.added = append(s.tls.added, ln)
}

// TLSAddr returns the first TLS listener's address, or nil.
func (s *Server) TLSAddr() net.Addr {
	s.tls.mu.Lock()
	defer s.tls.mu.Unlock()
	lns := append(append([]net.Listener(nil), s.tls.added...), s.tls.ported...)
	if len(lns) == 0 {
		return nil
	}
	return lns[0].Addr()
}

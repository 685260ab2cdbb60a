package tests

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/config"
	"github.com/hotkv/hotkv/internal/server"
	"github.com/hotkv/hotkv/internal/testutil"
)

// testCA is an in-memory certificate authority whose certificates the tests write to files
// for the tls-* directives.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64 = 1

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf certificate for 127.0.0.1 / localhost (server) or for a client, and
// returns its PEM certificate and key.
func (ca *testCA) issue(t *testing.T, cn string, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = []string{"localhost"}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return p
}

// tlsEnv is a CA with a server certificate and a client certificate written to files.
type tlsEnv struct {
	dir                           string
	ca                            *testCA
	caFile, certFile, keyFile     string
	clientCert                    tls.Certificate
	clientCertFile, clientKeyFile string
}

func newTLSEnv(t *testing.T) *tlsEnv {
	t.Helper()
	e := &tlsEnv{dir: t.TempDir(), ca: newCA(t, "HotKV test CA")}
	e.caFile = writeFile(t, e.dir, "ca.crt", e.ca.pem)
	c, k := e.ca.issue(t, "server-1", false)
	e.certFile, e.keyFile = writeFile(t, e.dir, "server.crt", c), writeFile(t, e.dir, "server.key", k)
	cc, ck := e.ca.issue(t, "client-1", true)
	e.clientCertFile, e.clientKeyFile = writeFile(t, e.dir, "client.crt", cc), writeFile(t, e.dir, "client.key", ck)
	var err error
	e.clientCert, err = tls.X509KeyPair(cc, ck)
	require.NoError(t, err)
	return e
}

// args are the tls-* flags for e's files.
func (e *tlsEnv) args(extra ...string) []string {
	return append([]string{"--tls-cert-file", e.certFile, "--tls-key-file", e.keyFile, "--tls-ca-cert-file", e.caFile}, extra...)
}

// clientConfig trusts e's CA and presents cert when given.
func (e *tlsEnv) clientConfig(cert *tls.Certificate) *tls.Config {
	cfg := &tls.Config{RootCAs: e.ca.pool(), ServerName: "127.0.0.1"}
	if cert != nil {
		// Sent whatever CAs the server names: Go's client would otherwise withhold a
		// certificate from another CA, and the refusal would not be tested.
		c := *cert
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	return cfg
}

// tlsServer is an in-process server with a plain listener and a TLS listener on ephemeral
// loopback ports.
type tlsServer struct {
	*server.Server
	plain, secure string
}

func launchTLS(t *testing.T, args ...string) (*tlsServer, error) {
	t.Helper()
	argv := append([]string{"--port", "0", "--bind", "127.0.0.1", "--dir", t.TempDir(), "--appendonly", "no"}, args...)
	cfg, err := config.Load(config.Directives(), argv)
	if err != nil {
		return nil, err
	}
	srv := server.New(cfg, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.AddListener(ln)
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv.AddTLSListener(tln)
	if err := srv.Start(); err != nil {
		_ = srv.Close()
		return nil, err
	}
	t.Cleanup(func() { _ = srv.Close() })
	return &tlsServer{Server: srv, plain: srv.Addr().String(), secure: srv.TLSAddr().String()}, nil
}

func startTLS(t *testing.T, args ...string) *tlsServer {
	t.Helper()
	s, err := launchTLS(t, args...)
	require.NoError(t, err)
	return s
}

func tlsClient(t *testing.T, addr string, cfg *tls.Config, proto int) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, Protocol: proto, DisableIdentity: true,
		MaxRetries: -1, PoolSize: 2, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// tlsPing opens one TLS connection, sends PING and returns the reply line or the error.
// With TLS 1.3 a refused client certificate shows only when the client first reads.
func tlsPing(addr string, cfg *tls.Config) (string, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	nc, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := nc.Write([]byte("PING\r\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(nc).ReadString('\n')
}

func TestTLSPlainAndTLSAtOnce(t *testing.T) {
	e := newTLSEnv(t)
	s := startTLS(t, e.args("--tls-auth-clients", "no")...)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		sc := tlsClient(t, s.secure, e.clientConfig(nil), proto)
		require.NoError(t, sc.Set(ctx, "k", "over-tls", 0).Err())
		pc := redis.NewClient(&redis.Options{Addr: s.plain, Protocol: proto, DisableIdentity: true})
		t.Cleanup(func() { _ = pc.Close() })
		require.Equal(t, "over-tls", pc.Get(ctx, "k").Val())
		require.NoError(t, pc.Set(ctx, "k2", "plain", 0).Err())
		require.Equal(t, "plain", sc.Get(ctx, "k2").Val())
		// A large value crosses many TLS records both ways.
		big := strings.Repeat("x", 3<<20)
		require.NoError(t, sc.Set(ctx, "big", big, 0).Err())
		require.Equal(t, big, sc.Get(ctx, "big").Val())
	}
	// Blocking commands and pub/sub work over TLS (their replies and pushes share the
	// connection with the reader that watches for the client going away).
	sc := tlsClient(t, s.secure, e.clientConfig(nil), 2)
	sub := sc.Subscribe(ctx, "news")
	_, err := sub.Receive(ctx)
	require.NoError(t, err)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = sc.RPush(ctx, "q", "job").Err()
		_ = sc.Publish(ctx, "news", "hello").Err()
	}()
	require.Equal(t, []string{"q", "job"}, sc.BLPop(ctx, 5*time.Second, "q").Val())
	msg, err := sub.ReceiveMessage(ctx)
	require.NoError(t, err)
	require.Equal(t, "hello", msg.Payload)
	require.NoError(t, sub.Close())
	require.ErrorIs(t, sc.Do(ctx, "BLPOP", "empty", "0.1").Err(), redis.Nil)

	// A plain-text client on the TLS port gets no service.
	nc, err := net.Dial("tcp", s.secure)
	require.NoError(t, err)
	defer nc.Close()
	_, _ = nc.Write([]byte("PING\r\n"))
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 64)
	n, _ := nc.Read(b)
	require.NotContains(t, string(b[:n]), "PONG")
}

// TestTLSPortOnly starts with tls-port and port 0, the listeners opened by the server.
func TestTLSPortOnly(t *testing.T) {
	e := newTLSEnv(t)
	const port = "7931"
	argv := append([]string{"--port", "0", "--tls-port", port, "--bind", "127.0.0.1", "--dir", t.TempDir(), "--appendonly", "no"},
		e.args("--tls-auth-clients", "no")...)
	cfg, err := config.Load(config.Directives(), argv)
	require.NoError(t, err)
	srv := server.New(cfg, nil)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Close() })
	require.Nil(t, srv.Addr(), "port 0 opens no plain listener")
	c := tlsClient(t, "127.0.0.1:"+port, e.clientConfig(nil), 2)
	require.Equal(t, "PONG", c.Ping(context.Background()).Val())
	reply := c.Do(context.Background(), "CONFIG", "GET", "tls-port").Val()
	require.Equal(t, []any{"tls-port", port}, reply)
}

func TestTLSMutualAuth(t *testing.T) {
	e := newTLSEnv(t)
	other := newCA(t, "Other CA")
	oc, ok := other.issue(t, "intruder", true)
	otherCert, err := tls.X509KeyPair(oc, ok)
	require.NoError(t, err)

	s := startTLS(t, e.args()...) // tls-auth-clients yes is the default
	got, err := tlsPing(s.secure, e.clientConfig(&e.clientCert))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
	_, err = tlsPing(s.secure, e.clientConfig(nil))
	require.Error(t, err, "a client without a certificate is refused")
	_, err = tlsPing(s.secure, e.clientConfig(&otherCert))
	require.Error(t, err, "a certificate from another CA is refused")
	// go-redis with the right certificate.
	c := tlsClient(t, s.secure, e.clientConfig(&e.clientCert), 3)
	require.Equal(t, "PONG", c.Ping(context.Background()).Val())

	// optional: no certificate is fine, a bad one is still refused. CONFIG SET applies to
	// new connections.
	require.NoError(t, c.ConfigSet(context.Background(), "tls-auth-clients", "optional").Err())
	got, err = tlsPing(s.secure, e.clientConfig(nil))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
	_, err = tlsPing(s.secure, e.clientConfig(&otherCert))
	require.Error(t, err)
	got, err = tlsPing(s.secure, e.clientConfig(&e.clientCert))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)

	// TLS 1.2 too (the client certificate is checked inside the handshake there).
	cfg := e.clientConfig(nil)
	cfg.MaxVersion = tls.VersionTLS12
	require.NoError(t, c.ConfigSet(context.Background(), "tls-auth-clients", "yes").Err())
	_, err = tlsPing(s.secure, cfg)
	require.Error(t, err)
	cfg = e.clientConfig(&e.clientCert)
	cfg.MaxVersion = tls.VersionTLS12
	got, err = tlsPing(s.secure, cfg)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
}

func TestTLSCADir(t *testing.T) {
	e := newTLSEnv(t)
	caDir := filepath.Join(e.dir, "cas")
	require.NoError(t, os.Mkdir(caDir, 0o700))
	writeFile(t, caDir, "ca.pem", e.ca.pem)
	writeFile(t, caDir, "README", []byte("not a certificate"))
	s := startTLS(t, "--tls-cert-file", e.certFile, "--tls-key-file", e.keyFile, "--tls-ca-cert-dir", caDir)
	got, err := tlsPing(s.secure, e.clientConfig(&e.clientCert))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
	_, err = tlsPing(s.secure, e.clientConfig(nil))
	require.Error(t, err)
}

func TestTLSProtocols(t *testing.T) {
	e := newTLSEnv(t)
	s := startTLS(t, e.args("--tls-auth-clients", "no", "--tls-protocols", "TLSv1.3")...)
	only12 := e.clientConfig(nil)
	only12.MaxVersion = tls.VersionTLS12
	_, err := tlsPing(s.secure, only12)
	require.Error(t, err, "TLS 1.2 is not served with tls-protocols TLSv1.3")
	got, err := tlsPing(s.secure, e.clientConfig(nil))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)

	c := redis.NewClient(&redis.Options{Addr: s.plain})
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.ConfigSet(context.Background(), "tls-protocols", "TLSv1.2").Err())
	only13 := e.clientConfig(nil)
	only13.MinVersion = tls.VersionTLS13
	_, err = tlsPing(s.secure, only13)
	require.Error(t, err, "TLS 1.3 is not served with tls-protocols TLSv1.2")
	got, err = tlsPing(s.secure, only12)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)

	// tls-ciphers restricts the TLS 1.2 suites; OpenSSL names work.
	require.NoError(t, c.ConfigSet(context.Background(), "tls-ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384").Err())
	aes128 := e.clientConfig(nil)
	aes128.MaxVersion = tls.VersionTLS12
	aes128.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}
	_, err = tlsPing(s.secure, aes128)
	require.Error(t, err)
	aes256 := aes128.Clone()
	aes256.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}
	got, err = tlsPing(s.secure, aes256)
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
}

func TestTLSConfigErrors(t *testing.T) {
	e := newTLSEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-ciphers", "HIGH:!aNULL"}, "unsupported cipher 'HIGH'"},
		{[]string{"--tls-ciphers", "ECDHE-RSA-AES128-GCM-SHA256:NOPE"}, "unsupported cipher 'NOPE'"},
		{[]string{"--tls-ciphersuites", "TLS_AES_128_CCM_SHA256"}, "unsupported TLS 1.3 suite 'TLS_AES_128_CCM_SHA256'"},
		{[]string{"--tls-protocols", "TLSv1.4"}, "Invalid tls-protocols specified ('TLSv1.4')"},
		{[]string{"--tls-protocols", "TLSv1 TLSv1.3"}, "tls-protocols must name adjacent versions"},
	} {
		_, err := launchTLS(t, e.args(tc.args...)...)
		require.ErrorContains(t, err, tc.want, tc.args)
	}
	// Files are checked when the server starts.
	_, err := launchTLS(t, "--tls-cert-file", e.certFile, "--tls-key-file", e.keyFile)
	require.ErrorContains(t, err, "Either tls-ca-cert-file or tls-ca-cert-dir must be specified")
	_, err = launchTLS(t, "--tls-key-file", e.keyFile, "--tls-auth-clients", "no")
	require.ErrorContains(t, err, "No tls-cert-file configured!")
	_, err = launchTLS(t, e.args("--tls-cert-file", filepath.Join(e.dir, "missing.crt"))...)
	require.ErrorContains(t, err, "Failed to load certificate: "+filepath.Join(e.dir, "missing.crt"))
	_, err = launchTLS(t, e.args("--tls-key-file", e.caFile)...)
	require.ErrorContains(t, err, "Failed to load certificate")
	// Valid names of every kind are accepted.
	s := startTLS(t, e.args("--tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256:TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
		"--tls-ciphersuites", "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256", "--tls-protocols", "tlsv1.2 TLSv1.3",
		"--tls-prefer-server-ciphers", "yes")...)
	got, err := tlsPing(s.secure, e.clientConfig(&e.clientCert))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
}

func TestTLSEncryptedKey(t *testing.T) {
	e := newTLSEnv(t)
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	serial++
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "rsa-server"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, e.ca.cert, &key.PublicKey, e.ca.key)
	require.NoError(t, err)
	//nolint:staticcheck // the legacy PEM encryption is the form tls-key-file-pass reads.
	block, err := x509.EncryptPEMBlock(rand.Reader, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), []byte("s3cret"), x509.PEMCipherAES256)
	require.NoError(t, err)
	certFile := writeFile(t, e.dir, "rsa.crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyFile := writeFile(t, e.dir, "rsa.key", pem.EncodeToMemory(block))

	_, err = launchTLS(t, "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-auth-clients", "no")
	require.ErrorContains(t, err, "tls-key-file-pass is not set")
	_, err = launchTLS(t, "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-auth-clients", "no", "--tls-key-file-pass", "wrong")
	require.ErrorContains(t, err, "Failed to load private key")
	s := startTLS(t, "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-auth-clients", "no", "--tls-key-file-pass", "s3cret")
	got, err := tlsPing(s.secure, e.clientConfig(nil))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
}

// servedCN is the common name of the certificate a new TLS connection gets.
func servedCN(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	nc, err := tls.Dial("tcp", addr, cfg)
	require.NoError(t, err)
	defer nc.Close()
	return nc.ConnectionState().PeerCertificates[0].Subject.CommonName
}

func TestTLSReloadWithConfigSet(t *testing.T) {
	e := newTLSEnv(t)
	s := startTLS(t, e.args("--tls-auth-clients", "no")...)
	ctx := context.Background()
	old := tlsClient(t, s.secure, e.clientConfig(nil), 2)
	require.Equal(t, "PONG", old.Ping(ctx).Val())
	require.Equal(t, "server-1", servedCN(t, s.secure, e.clientConfig(nil)))

	setErr := "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs."

	// A certificate set without its key does not match it: refused, nothing changes.
	c2, k2 := e.ca.issue(t, "server-2", false)
	cert2, key2 := writeFile(t, e.dir, "server2.crt", c2), writeFile(t, e.dir, "server2.key", k2)
	require.EqualError(t, old.ConfigSet(ctx, "tls-cert-file", cert2).Err(), setErr)
	require.Equal(t, e.certFile, old.ConfigGet(ctx, "tls-cert-file").Val()["tls-cert-file"])
	require.Equal(t, "server-1", servedCN(t, s.secure, e.clientConfig(nil)))

	// Both at once: new connections get the new certificate, the open one keeps working.
	require.NoError(t, old.Do(ctx, "CONFIG", "SET", "tls-cert-file", cert2, "tls-key-file", key2).Err())
	require.Equal(t, "server-2", servedCN(t, s.secure, e.clientConfig(nil)))
	require.Equal(t, "PONG", old.Ping(ctx).Val())

	// Files replaced in place are read again by a CONFIG SET of the same paths (Redis 7).
	c3, k3 := e.ca.issue(t, "server-3", false)
	writeFile(t, e.dir, "server2.crt", c3)
	writeFile(t, e.dir, "server2.key", k3)
	require.Equal(t, "server-2", servedCN(t, s.secure, e.clientConfig(nil)), "no reload before CONFIG SET")
	require.NoError(t, old.Do(ctx, "CONFIG", "SET", "tls-cert-file", cert2, "tls-key-file", key2).Err())
	require.Equal(t, "server-3", servedCN(t, s.secure, e.clientConfig(nil)))

	// A missing or broken file is refused and the served certificate kept.
	require.EqualError(t, old.ConfigSet(ctx, "tls-cert-file", filepath.Join(e.dir, "nope.crt")).Err(), setErr)
	garbage := writeFile(t, e.dir, "garbage.pem", []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"))
	require.EqualError(t, old.ConfigSet(ctx, "tls-cert-file", garbage).Err(), setErr)
	require.Error(t, old.ConfigSet(ctx, "tls-ca-cert-file", garbage).Err())
	require.Equal(t, cert2, old.ConfigGet(ctx, "tls-cert-file").Val()["tls-cert-file"])
	require.Equal(t, "server-3", servedCN(t, s.secure, e.clientConfig(nil)))
	require.Equal(t, "PONG", old.Ping(ctx).Val())
}

func TestTLSRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli not installed")
	}
	if out, _ := exec.Command(cli, "--help").CombinedOutput(); !strings.Contains(string(out), "--tls") {
		t.Skip("redis-cli built without TLS")
	}
	e := newTLSEnv(t)
	s := startTLS(t, e.args()...)
	host, port, _ := net.SplitHostPort(s.secure)
	run := func(args ...string) (string, error) {
		base := []string{"--tls", "--cacert", e.caFile, "--cert", e.clientCertFile, "--key", e.clientKeyFile, "-h", host, "-p", port}
		out, err := exec.Command(cli, append(base, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	out, err := run("SET", "cli", "ok")
	require.NoError(t, err, out)
	require.Equal(t, "OK", out)
	out, err = run("GET", "cli")
	require.NoError(t, err, out)
	require.Equal(t, "ok", out)
	// Without a client certificate the connection is refused.
	raw, _ := exec.Command(cli, "--tls", "--cacert", e.caFile, "-h", host, "-p", port, "PING").CombinedOutput()
	require.NotContains(t, string(raw), "PONG")
}

// TestTLSAndPlainOnBindAddresses starts the listeners from bind, port and tls-port as a
// deployment does (Redis's "* -::*": every IPv4 address, and IPv6 where it can be bound),
// with protected mode guarding the wide bind.
func TestTLSAndPlainOnBindAddresses(t *testing.T) {
	e := newTLSEnv(t)
	const port, tlsPort = "7932", "7933"
	argv := append([]string{"--port", port, "--tls-port", tlsPort, "--bind", "* -::*", "--dir", t.TempDir(), "--appendonly", "no"},
		e.args("--tls-auth-clients", "no")...)
	cfg, err := config.Load(config.Directives(), argv)
	require.NoError(t, err)
	srv := server.New(cfg, nil)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Close() })

	got, err := tlsPing("127.0.0.1:"+tlsPort, e.clientConfig(nil))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
	reply, _ := dialFrom(t, "127.0.0.1", "127.0.0.1:"+port)
	require.Equal(t, "+PONG\r\n", reply)
	reply, closed := dialFrom(t, "127.0.0.2", "127.0.0.1:"+port)
	require.Equal(t, protectedDenied, reply)
	require.True(t, closed)

	// Over TLS the refusal is readable too.
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 5 * time.Second}
	nc, err := tls.DialWithDialer(d, "tcp", "127.0.0.1:"+tlsPort, e.clientConfig(nil))
	require.NoError(t, err)
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(nc).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, protectedDenied, line)
}

// TestTLSPortConfigSet: CONFIG SET tls-port opens TLS at run time (loading the configuration
// then), moves it to another port, and closes it with 0, as Redis 7 does.
func TestTLSPortConfigSet(t *testing.T) {
	e := newTLSEnv(t)
	s := testutil.StartServer(t, e.args("--tls-auth-clients", "no")...)
	c := s.Dial(t)
	const p1, p2, busy = "7934", "7935", "7936"
	_, err := tlsPing("127.0.0.1:"+p1, e.clientConfig(nil))
	require.Error(t, err)

	require.Equal(t, "+OK\r\n", c.Do("CONFIG", "SET", "tls-port", p1))
	got, err := tlsPing("127.0.0.1:"+p1, e.clientConfig(nil))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
	open := tlsClient(t, "127.0.0.1:"+p1, e.clientConfig(nil), 2)
	require.Equal(t, "PONG", open.Ping(context.Background()).Val())

	require.Equal(t, "+OK\r\n", c.Do("CONFIG", "SET", "tls-port", p2))
	got, err = tlsPing("127.0.0.1:"+p2, e.clientConfig(nil))
	require.NoError(t, err)
	require.Equal(t, "+PONG\r\n", got)
	_, err = tlsPing("127.0.0.1:"+p1, e.clientConfig(nil))
	require.Error(t, err, "the old port is closed")
	require.Equal(t, "PONG", open.Ping(context.Background()).Val(), "open connections stay")

	// A port in use, or a configuration that does not load, changes nothing.
	ln, err := net.Listen("tcp", "127.0.0.1:"+busy)
	require.NoError(t, err)
	defer ln.Close()
	require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'tls-port') - Unable to listen on this port. Check server logs.\r\n",
		c.Do("CONFIG", "SET", "tls-port", busy))
	require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n",
		c.Do("CONFIG", "SET", "tls-port", p1, "tls-cert-file", filepath.Join(e.dir, "missing.crt")))
	require.Equal(t, "-ERR CONFIG SET failed (possibly related to argument 'tls-port') - argument must be between 0 and 65535 inclusive\r\n",
		c.Do("CONFIG", "SET", "tls-port", "70000"))
	require.Equal(t, "*2\r\n$8\r\ntls-port\r\n$4\r\n"+p2+"\r\n", c.Do("CONFIG", "GET", "tls-port"))
	_, err = tlsPing("127.0.0.1:"+p2, e.clientConfig(nil))
	require.NoError(t, err)

	require.Equal(t, "+OK\r\n", c.Do("CONFIG", "SET", "tls-port", "0"))
	_, err = tlsPing("127.0.0.1:"+p2, e.clientConfig(nil))
	require.Error(t, err)
}

// TestTLSEncryptedPKCS8Key reads keys encrypted by OpenSSL 3 (`openssl pkcs8 -topk8`,
// `genrsa -aes256`): PBES2 with PBKDF2 and AES-CBC, for each PRF and key size.
func TestTLSEncryptedPKCS8Key(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("openssl not installed")
	}
	e := newTLSEnv(t)
	for i, variant := range [][]string{
		{"-v2", "aes-256-cbc"}, // OpenSSL 3's default: hmacWithSHA256
		{"-v2", "aes-128-cbc", "-v2prf", "hmacWithSHA1"},
		{"-v2", "aes-192-cbc", "-v2prf", "hmacWithSHA512"},
		{"-v2", "aes-256-cbc", "-v2prf", "hmacWithSHA384"},
	} {
		keyFile := filepath.Join(e.dir, fmt.Sprintf("enc%d.key", i))
		args := append([]string{"pkcs8", "-topk8", "-in", e.keyFile, "-passout", "pass:s3cret", "-out", keyFile}, variant...)
		out, err := exec.Command(openssl, args...).CombinedOutput()
		require.NoError(t, err, string(out))
		pemBytes, err := os.ReadFile(keyFile)
		require.NoError(t, err)
		require.Contains(t, string(pemBytes), "BEGIN ENCRYPTED PRIVATE KEY")

		s := startTLS(t, "--tls-cert-file", e.certFile, "--tls-key-file", keyFile, "--tls-key-file-pass", "s3cret", "--tls-auth-clients", "no")
		got, err := tlsPing(s.secure, e.clientConfig(nil))
		require.NoError(t, err, variant)
		require.Equal(t, "+PONG\r\n", got)
		_, err = launchTLS(t, "--tls-cert-file", e.certFile, "--tls-key-file", keyFile, "--tls-key-file-pass", "wrong", "--tls-auth-clients", "no")
		require.ErrorContains(t, err, "Failed to load private key: "+keyFile)
		_, err = launchTLS(t, "--tls-cert-file", e.certFile, "--tls-key-file", keyFile, "--tls-auth-clients", "no")
		require.ErrorContains(t, err, "tls-key-file-pass is not set")
	}
}

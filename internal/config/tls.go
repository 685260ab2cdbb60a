package config

import (
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
)

// TLS directive values are checked here, when they are set (config file, flag or CONFIG SET),
// so that a name Go's crypto/tls cannot honour stops the start with an error naming it
// instead of being ignored; internal/server/tls.go builds the tls.Config from them.

// tlsVersions maps Redis's tls-protocols names (OpenSSL's) to Go's versions, lowest first.
var tlsVersions = []struct {
	name string
	v    uint16
}{{"TLSv1", tls.VersionTLS10}, {"TLSv1.1", tls.VersionTLS11}, {"TLSv1.2", tls.VersionTLS12}, {"TLSv1.3", tls.VersionTLS13}}

// TLSProtocols returns the lowest and highest version tls-protocols allows; "" is Redis's
// default, TLS 1.2 and 1.3. Go's crypto/tls takes a range, so the names must be adjacent.
func TLSProtocols(v string) (lowest, highest uint16, err error) {
	fields := strings.Fields(v)
	if len(fields) == 0 {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	var on [4]bool
	for _, f := range fields {
		found := false
		for i, tv := range tlsVersions {
			if strings.EqualFold(f, tv.name) {
				on[i], found = true, true
			}
		}
		if !found {
			return 0, 0, fmt.Errorf("Invalid tls-protocols specified ('%s'). Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.", f)
		}
	}
	lo, hi := -1, -1
	for i, b := range on {
		if b {
			if lo < 0 {
				lo = i
			}
			hi = i
		}
	}
	for i := lo; i <= hi; i++ {
		if !on[i] {
			return 0, 0, errors.New("tls-protocols must name adjacent versions (Go's crypto/tls serves a range from a lowest to a highest version): " + v)
		}
	}
	return tlsVersions[lo].v, tlsVersions[hi].v, nil
}

func parseTLSProtocols(v string) (string, error) {
	if _, _, err := TLSProtocols(v); err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(v), " "), nil
}

// openSSLCiphers maps OpenSSL's names of the TLS 1.2 suites Go implements (and considers
// secure) to Go's ids, so that a redis.conf's tls-ciphers line works unchanged.
var openSSLCiphers = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
}

// TLSCiphers returns the TLS 1.2 suites tls-ciphers names; nil means Go's defaults.
func TLSCiphers(v string) ([]uint16, error) {
	names := strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' || r == ' ' })
	var out []uint16
	for _, n := range names {
		if strings.EqualFold(n, "DEFAULT") {
			if len(names) > 1 {
				return nil, errors.New("Failed to configure ciphers: DEFAULT cannot be combined with other names")
			}
			return nil, nil
		}
		id, ok := openSSLCiphers[strings.ToUpper(n)]
		if !ok {
			id, ok = goSuite(n, tls.CipherSuites())
		}
		if !ok {
			return nil, fmt.Errorf("Failed to configure ciphers: unsupported cipher '%s' (use OpenSSL or IANA names of the suites Go's crypto/tls implements, or DEFAULT)", n)
		}
		out = append(out, id)
	}
	return out, nil
}

func goSuite(name string, suites []*tls.CipherSuite) (uint16, bool) {
	for _, s := range suites {
		if strings.EqualFold(s.Name, name) {
			return s.ID, true
		}
	}
	return 0, false
}

func parseTLSCiphers(v string) (string, error) {
	if _, err := TLSCiphers(v); err != nil {
		return "", err
	}
	return v, nil
}

// tls13Suites are the TLS 1.3 suites Go implements (and always enables).
var tls13Suites = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

func parseTLSCipherSuites(v string) (string, error) {
	for _, n := range strings.FieldsFunc(v, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		ok := false
		for _, s := range tls13Suites {
			ok = ok || strings.EqualFold(n, s)
		}
		if !ok {
			return "", fmt.Errorf("Failed to configure ciphersuites: unsupported TLS 1.3 suite '%s' (Go's crypto/tls implements %s)", n, strings.Join(tls13Suites, ", "))
		}
	}
	return v, nil
}

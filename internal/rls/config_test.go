package rls

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envoyproxy/ratelimit's README examples (its "Examples" section), with the decisions its
// README describes for them: three in testdata/readme (tests/rls_test.go serves them from a
// real server too), and two below.
var (
	exampleMongo     = readExample("mongo_cps")
	exampleMessaging = readExample("messaging")
	examplePerIP     = readExample("edge_proxy_per_ip")
)

// readExample reads testdata/readme/<name>.yaml.
func readExample(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "readme", name+".yaml"))
	if err != nil {
		panic(err)
	}
	return "\n" + string(b)
}

const exampleShadowWildcard = `
domain: example
descriptors:
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: bar
        rate_limit:
          unit: minute
          requests_per_unit: 1
        shadow_mode: true
      - key: path
        value: /foo*
        rate_limit:
          unit: minute
          requests_per_unit: 20
      - key: path
        value: /foo/bar*
        rate_limit:
          unit: minute
          requests_per_unit: 5
`

const exampleReplaces = `
domain: example2
descriptors:
  - key: key1
    value: value1
    rate_limit:
      name: key1_limit
      unit: minute
      requests_per_unit: 10
  - key: key2
    value: value2
    rate_limit:
      unit: minute
      requests_per_unit: 5
      replaces:
        - name: key1_limit
  - key: unlimited_key
    rate_limit:
      unlimited: true
  - key: detailed
    detailed_metric: true
    rate_limit:
      unit: hour
      requests_per_unit: 3
      algorithm: sliding_window
`

func mustParse(t *testing.T, docs ...string) *Config {
	t.Helper()
	c, err := Parse("test.yaml", []byte(strings.Join(docs, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func e(kv ...string) []Entry {
	var out []Entry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Entry{kv[i], kv[i+1]})
	}
	return out
}

func TestRLSMatchReadmeExamples(t *testing.T) {
	c := mustParse(t, exampleMongo, exampleMessaging, examplePerIP, exampleShadowWildcard, exampleReplaces)
	cases := []struct {
		domain  string
		entries []Entry
		path    string // "" = no limit
		rpu     uint32
		unit    Unit
	}{
		{"mongo_cps", e("database", "users"), "mongo_cps.database_users", 500, 1},
		{"mongo_cps", e("database", "default"), "mongo_cps.database_default", 500, 1},
		{"mongo_cps", e("database", "other"), "", 0, 0},
		{"mongo_cps", e("database", "users", "extra", "x"), "", 0, 0}, // deeper than configured
		{"unknown", e("database", "users"), "", 0, 0},
		{"messaging", e("message_type", "marketing", "to_number", "2061234567"), "messaging.message_type_marketing.to_number", 5, 4},
		{"messaging", e("to_number", "2061234567"), "messaging.to_number", 100, 4},
		{"messaging", e("message_type", "marketing"), "", 0, 0}, // node without a rate_limit
		{"messaging", e("message_type", "transactional", "to_number", "1"), "", 0, 0},
		{"edge_proxy_per_ip", e("remote_address", "10.0.0.1"), "edge_proxy_per_ip.remote_address", 10, 1},
		{"edge_proxy_per_ip", e("remote_address", "50.0.0.5"), "edge_proxy_per_ip.remote_address_50.0.0.5", 0, 1},
		{"example", e("source_cluster", "proxy", "destination_cluster", "bar"), "example.source_cluster_proxy.destination_cluster_bar", 1, 2},
		{"example", e("source_cluster", "proxy", "destination_cluster", "foo"), "", 0, 0},
		{"example", e("source_cluster", "proxy", "path", "/foo/x"), "example.source_cluster_proxy.path_/foo*", 20, 2},
		// The first wildcard in file order wins, as in envoyproxy/ratelimit.
		{"example", e("source_cluster", "proxy", "path", "/foo/bar/baz"), "example.source_cluster_proxy.path_/foo*", 20, 2},
		{"example", e("source_cluster", "proxy", "path", "/fo"), "", 0, 0},
		{"example2", e("key1", "value1"), "example2.key1_value1", 10, 2},
		{"example2", e("unlimited_key", "anything"), "example2.unlimited_key", 0, 0},
	}
	for _, tc := range cases {
		m, ok := c.Match(tc.domain, tc.entries)
		if tc.path == "" {
			if ok {
				t.Errorf("%s %v: matched %s, want no limit", tc.domain, tc.entries, m.Rule.Path)
			}
			continue
		}
		if !ok {
			t.Errorf("%s %v: no match, want %s", tc.domain, tc.entries, tc.path)
			continue
		}
		if m.Rule.Path != tc.path || m.Rule.RequestsPerUnit != tc.rpu || m.Rule.Unit != tc.unit {
			t.Errorf("%s %v: got %s %d/%d, want %s %d/%d", tc.domain, tc.entries, m.Rule.Path, m.Rule.RequestsPerUnit, m.Rule.Unit, tc.path, tc.rpu, tc.unit)
		}
	}
	m, _ := c.Match("example", e("source_cluster", "proxy", "destination_cluster", "bar"))
	if !m.Rule.Shadow {
		t.Error("shadow_mode not set")
	}
	m, _ = c.Match("example2", e("key2", "value2"))
	if len(m.Rule.Replaces) != 1 || m.Rule.Replaces[0] != "key1_limit" {
		t.Errorf("replaces = %v", m.Rule.Replaces)
	}
	m, _ = c.Match("example2", e("unlimited_key", "x"))
	if !m.Rule.Unlimited {
		t.Error("unlimited not set")
	}
	m, _ = c.Match("example2", e("detailed", "alice"))
	if m.StatKey != "example2.detailed_alice" || m.Rule.Algorithm != SlidingWindow || m.Rule.LimiterName() != "rls:example2.detailed" {
		t.Errorf("detailed: stat %q algo %v limiter %q", m.StatKey, m.Rule.Algorithm, m.Rule.LimiterName())
	}
	m, _ = c.Match("mongo_cps", e("database", "users"))
	if m.Rule.Algorithm != GCRA || m.Rule.Burst != 500 || m.Rule.PeriodMs() != 1000 || m.Rule.GCRAPeriodMs != 1000 {
		t.Errorf("default GCRA: %+v", m.Rule)
	}
}

func TestRLSAlgorithmAndBurst(t *testing.T) {
	c := mustParse(t, `
domain: d
algorithm: fixed_window
descriptors:
  - key: a
    rate_limit: {unit: minute, requests_per_unit: 60}
  - key: b
    rate_limit: {unit: minute, requests_per_unit: 60, algorithm: gcra, burst: 5}
  - key: c
    rate_limit: {unit: week, requests_per_unit: 1, algorithm: sliding_window}
`)
	want := map[string]struct {
		algo  Algorithm
		burst int64
		ms    int64
	}{"a": {FixedWindow, 60, 60000}, "b": {GCRA, 5, 60000}, "c": {SlidingWindow, 1, 7 * 86400 * 1000}}
	// 60 a minute with a burst of 5: 5 at once, refilled in 5 s (one a second).
	if m, _ := c.Match("d", e("b", "v")); m.Rule.GCRAPeriodMs != 5000 {
		t.Errorf("burst 5 of 60/min: GCRA period %d, want 5000", m.Rule.GCRAPeriodMs)
	}
	// 7 a second with a burst of 2: 2/7 s = 285.71 ms, rounded up.
	c2 := mustParse(t, "domain: r\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 7, burst: 2}\n")
	if m, _ := c2.Match("r", e("k", "v")); m.Rule.GCRAPeriodMs != 286 {
		t.Errorf("GCRA period %d, want 286", m.Rule.GCRAPeriodMs)
	}
	for k, w := range want {
		m, ok := c.Match("d", e(k, "v"))
		if !ok || m.Rule.Algorithm != w.algo || m.Rule.Burst != w.burst || m.Rule.PeriodMs() != w.ms {
			t.Errorf("%s: %+v", k, m.Rule)
		}
	}
}

func TestRLSConfigErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: fortnight\n      requests_per_unit: 1\n", "test.yaml:5: invalid rate limit unit 'fortnight'"},
		{"domain: d\ndescriptors:\n  - key: a\n    ratelimit:\n      unit: second\n", "test.yaml:4: unknown key 'ratelimit' in a descriptor"},
		{"descriptors: []\n", "test.yaml:1: config file cannot have empty domain"},
		{"domain: d\ndescriptors:\n  - value: a\n", "test.yaml:3: descriptor has empty key"},
		{"domain: d\ndescriptors:\n  - key: a\n  - key: a\n", "test.yaml:4: duplicate descriptor composite key 'd.a'"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unlimited: true\n      unit: second\n", "test.yaml:6: should not specify rate limit unit when unlimited"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      requests_per_unit: -1\n", "test.yaml:6: requests_per_unit must be an integer from 0 to 4294967295"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      name: n\n      unit: second\n      replaces:\n        - name: n\n", "test.yaml:8: replaces should not contain name of same descriptor"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      replaces:\n        - {}\n", "test.yaml:7: should not have an empty replaces entry"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      algorithm: leaky\n", "test.yaml:6: invalid algorithm 'leaky' (gcra, sliding_window or fixed_window)"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      algorithm: fixed_window\n      burst: 3\n", "test.yaml:7: burst applies to the gcra algorithm only"},
		{"domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n", "test.yaml:4: shadow_mode must be true or false"},
		{"domain: d\n---\ndomain: d\n", "test.yaml:3: duplicate domain 'd' in config file"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: year, requests_per_unit: 1, burst: 100}\n", "test.yaml:4: burst too large for this rate"},
		{"domain: d\ndescriptors:\n  - key: a\n   value: b\n", "test.yaml:2: invalid YAML: did not find expected '-' indicator"},
	}
	for _, tc := range cases {
		_, err := Parse("test.yaml", []byte(tc.yaml))
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
}

func TestRLSLoadFileAndDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(exampleMongo), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b.yml"), []byte(exampleMessaging), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not yaml: ["), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Domains(), ","); got != "messaging,mongo_cps" {
		t.Errorf("domains %s", got)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml: cannot read the rate limit configuration: no such file or directory") {
		t.Errorf("missing file: %v", err)
	}
}

func TestRLSStateKeyEscapes(t *testing.T) {
	if got := StateKey("d", Entry{"a", "b"}, Entry{"ip", "::1"}); got != "rls:d:a=b:ip=%3A%3A1" {
		t.Errorf("got %s", got)
	}
	if got := StateKey("{x}", Entry{"k=", "100%"}); got != "rls:%7Bx%7D:k%3D=100%25" {
		t.Errorf("got %s", got)
	}
}

// FuzzRLSParse: no file may crash the loader, and whatever loads must match without panicking.
func FuzzRLSParse(f *testing.F) {
	for _, s := range []string{exampleMongo, exampleMessaging, examplePerIP, exampleShadowWildcard, exampleReplaces,
		"", "---", "[]", "domain: [a]", "domain: d\ndescriptors: {a: b}", "domain: d\ndescriptors:\n  - key: a\n    value: '*'\n    descriptors: [{key: b, value: c*}]",
		"domain: d\ndescriptors:\n  - key: a\n    rate_limit: []\n", "domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      replaces: x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse("fuzz.yaml", []byte(s))
		if err != nil {
			if _, ok := err.(*ConfigError); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		for _, d := range c.Domains() {
			c.Match(d, e("a", "b", "c", "d"))
			c.Match(d, e("a", ""))
		}
	})
}

// Replies that mean the node cannot decide now (Envoy's failure mode applies) against those
// that mean the decision itself failed.
func TestUnavailableReplies(t *testing.T) {
	for msg, want := range map[string]bool{
		"MOVED 12 10.0.0.1:6379":                                            true,
		"CLUSTERDOWN The cluster is down":                                   true,
		"TRYAGAIN decision outcome unknown":                                 true,
		"MISCONF Errors writing to the AOF file: No space left on device":   true,
		"OOM command not allowed when used memory > 'maxmemory'.":           true,
		"WRONGTYPE Operation against a key holding the wrong kind of value": false,
		"ERR syntax error":                                                  false,
	} {
		if got := unavailableReply(msg); got != want {
			t.Errorf("%q: %v, want %v", msg, got, want)
		}
	}
}

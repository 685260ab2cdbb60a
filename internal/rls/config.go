// Package rls is HotKV's built-in Envoy global rate limit service: the
// envoy.service.ratelimit.v3.RateLimitService gRPC API on rls-port, driven by descriptor
// configuration in envoyproxy/ratelimit's YAML format (docs/envoy.md).
//
// The package parses and matches configuration and turns each matched descriptor into an
// ordinary HotKV command (GCRA.LIMIT, RATELIMIT.CHECK, or a counter per fixed window) that the
// server runs through its normal command path, so the append-only log, Raft replication,
// keyspace notifications and the RESP inspection commands all see the same state.
package rls

import (
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"

	"gopkg.in/yaml.v3"
)

// Algorithm is how a rule decides. GCRA is the default because it spreads a budget smoothly
// and needs one key per descriptor; fixed windows exist for exact envoyproxy/ratelimit
// compatibility, sliding windows for a hard "at most N in any window".
type Algorithm int

const (
	// GCRA runs GCRA.LIMIT on a key per descriptor value set.
	GCRA Algorithm = iota
	// SlidingWindow runs RATELIMIT.CHECK on a named limiter created for the rule.
	SlidingWindow
	// FixedWindow counts hits in a key per window start, as envoyproxy/ratelimit does.
	FixedWindow
)

// String is the algorithm's name in the YAML file.
func (a Algorithm) String() string {
	switch a {
	case SlidingWindow:
		return "sliding_window"
	case FixedWindow:
		return "fixed_window"
	}
	return "gcra"
}

func parseAlgorithm(s string) (Algorithm, bool) {
	switch strings.ToLower(s) {
	case "gcra":
		return GCRA, true
	case "sliding_window", "sliding":
		return SlidingWindow, true
	case "fixed_window", "fixed":
		return FixedWindow, true
	}
	return 0, false
}

// Unit is a rate limit's time unit with envoyproxy/ratelimit's lengths (a month is 30 days, a
// year 365), numbered as the v3 API's RateLimitResponse.RateLimit.Unit.
type Unit int32

// unitSeconds maps the API's unit numbers to their lengths.
var unitSeconds = map[Unit]int64{1: 1, 2: 60, 3: 3600, 4: 86400, 7: 7 * 86400, 5: 30 * 86400, 6: 365 * 86400}

var unitNames = map[string]Unit{"second": 1, "minute": 2, "hour": 3, "day": 4, "week": 7, "month": 5, "year": 6}

// maxGCRAPeriodMs is GCRA.LIMIT's largest period.
const maxGCRAPeriodMs = 1_000_000_000_000

// Seconds is the unit's length; 0 for an unknown unit.
func (u Unit) Seconds() int64 { return unitSeconds[u] }

// Rule is one configured rate_limit: what a matched descriptor is charged against.
type Rule struct {
	Domain string
	// Path is envoyproxy/ratelimit's full key of the rule (domain.key_value.key), the
	// label of its metrics and the name of its sliding-window limiter.
	Path            string
	Unit            Unit
	RequestsPerUnit uint32
	Unlimited       bool
	Shadow          bool
	Detailed        bool
	Name            string
	Replaces        []string
	Algorithm       Algorithm
	// Burst is the GCRA burst: requests_per_unit unless the rule sets burst.
	Burst int64
	// GCRAPeriodMs is the period GCRA.LIMIT is given: the unit when the burst is
	// requests_per_unit; with another burst, the time that burst takes to refill at
	// requests_per_unit per unit, rounded up (a rate never faster than configured).
	GCRAPeriodMs int64
	// synced is set once the rule's sliding-window limiter was created or updated for this
	// configuration (Service.syncLimiter).
	synced atomic.Bool
}

// PeriodMs is the rule's unit in milliseconds.
func (r *Rule) PeriodMs() int64 { return r.Unit.Seconds() * 1000 }

// LimiterName is the named limiter (RATELIMIT.*) a sliding-window rule is checked against.
func (r *Rule) LimiterName() string { return "rls:" + r.Path }

type node struct {
	children  map[string]*node
	wildcards []string // child map keys ending in '*', in file order
	rule      *Rule
}

// Config is a loaded descriptor configuration: one tree per domain. It is immutable once
// loaded, so a reload swaps a pointer and requests in flight keep the one they started with.
type Config struct {
	domains map[string]*node
	// Rules lists every configured rule (for limiter creation and docs), in file order.
	Rules []*Rule
	// Source names the file or directory it came from.
	Source string
}

// Domains returns the configured domain names, sorted.
func (c *Config) Domains() []string {
	out := make([]string, 0, len(c.domains))
	for d := range c.domains {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// ConfigError is a configuration that cannot be used; its text names the file, the line and
// the problem, as CONFIG SET and RLS RELOAD reply it.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Load reads path: one YAML file (several domains may follow each other as `---` documents)
// or a directory, whose *.yaml and *.yml files are all loaded, as envoyproxy/ratelimit loads
// its runtime directory. A domain configured twice is an error.
func Load(path string) (*Config, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: "cannot read the rate limit configuration: " + errText(err)}
	}
	files := []string{path}
	if st.IsDir() {
		files = files[:0]
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, &ConfigError{File: path, Msg: "cannot read the directory: " + errText(err)}
		}
		for _, e := range ents {
			if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
				files = append(files, filepath.Join(path, n))
			}
		}
	}
	c := &Config{domains: map[string]*node{}, Source: path}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, &ConfigError{File: f, Msg: "cannot read the file: " + errText(err)}
		}
		if err := c.add(f, data); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse loads one file's contents (name is used in errors only).
func Parse(name string, data []byte) (*Config, error) {
	c := &Config{domains: map[string]*node{}, Source: name}
	if err := c.add(name, data); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) add(file string, data []byte) error {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return yamlError(file, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		if err := c.addDomain(file, doc.Content[0]); err != nil {
			return err
		}
	}
}

// yamlError turns the YAML library's "yaml: line N: msg" into a ConfigError with the line.
func yamlError(file string, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 0
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.IndexByte(rest, ':'); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				line, msg = n, strings.TrimSpace(rest[i+1:])
			}
		}
	}
	return &ConfigError{File: file, Line: line, Msg: "invalid YAML: " + msg}
}

type loader struct {
	file string
	c    *Config
	// names are the rule names seen in the domain, to check replaces.
	defaultAlgo Algorithm
}

func (l *loader) errf(n *yaml.Node, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &ConfigError{File: l.file, Line: line, Msg: fmt.Sprintf(format, args...)}
}

// fields checks that n is a mapping with only allowed keys and returns its values by key.
func (l *loader) fields(n *yaml.Node, what string, allowed ...string) (map[string]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, l.errf(n, "%s must be a mapping", what)
	}
	out := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		ok := false
		for _, a := range allowed {
			if k.Value == a {
				ok = true
			}
		}
		if !ok {
			return nil, l.errf(k, "unknown key '%s' in %s", k.Value, what)
		}
		if _, dup := out[k.Value]; dup {
			return nil, l.errf(k, "duplicate key '%s' in %s", k.Value, what)
		}
		out[k.Value] = n.Content[i+1]
	}
	return out, nil
}

func (l *loader) str(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", l.errf(n, "%s must be a string", what)
	}
	return n.Value, nil
}

func (l *loader) boolean(n *yaml.Node, what string) (bool, error) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Decode(&b) != nil {
		return false, l.errf(n, "%s must be true or false", what)
	}
	return b, nil
}

func (l *loader) uint(n *yaml.Node, what string, max uint64) (uint64, error) {
	v, err := strconv.ParseUint(n.Value, 10, 64)
	if n.Kind != yaml.ScalarNode || err != nil || v > max {
		return 0, l.errf(n, "%s must be an integer from 0 to %d", what, max)
	}
	return v, nil
}

func (c *Config) addDomain(file string, root *yaml.Node) error {
	l := &loader{file: file, c: c}
	f, err := l.fields(root, "the top level", "domain", "descriptors", "algorithm")
	if err != nil {
		return err
	}
	dn := f["domain"]
	if dn == nil {
		return l.errf(root, "config file cannot have empty domain")
	}
	domain, err := l.str(dn, "domain")
	if err != nil {
		return err
	}
	if domain == "" {
		return l.errf(dn, "config file cannot have empty domain")
	}
	if _, dup := c.domains[domain]; dup {
		return l.errf(dn, "duplicate domain '%s' in config file", domain)
	}
	if a := f["algorithm"]; a != nil {
		s, _ := l.str(a, "algorithm")
		algo, ok := parseAlgorithm(s)
		if !ok {
			return l.errf(a, "invalid algorithm '%s' (gcra, sliding_window or fixed_window)", s)
		}
		l.defaultAlgo = algo
	}
	root2 := &node{children: map[string]*node{}}
	if d := f["descriptors"]; d != nil {
		if err := l.descriptors(root2, domain, d); err != nil {
			return err
		}
	}
	c.domains[domain] = root2
	return nil
}

func (l *loader) descriptors(parent *node, parentPath string, list *yaml.Node) error {
	if list.Tag == "!!null" {
		return nil
	}
	if list.Kind != yaml.SequenceNode {
		return l.errf(list, "descriptors must be a list")
	}
	for _, d := range list.Content {
		f, err := l.fields(d, "a descriptor", "key", "value", "rate_limit", "descriptors", "shadow_mode", "detailed_metric")
		if err != nil {
			return err
		}
		key := ""
		if k := f["key"]; k != nil {
			if key, err = l.str(k, "key"); err != nil {
				return err
			}
		}
		if key == "" {
			return l.errf(d, "descriptor has empty key")
		}
		mapKey := key
		if v := f["value"]; v != nil {
			val, err := l.str(v, "value")
			if err != nil {
				return err
			}
			if val != "" {
				mapKey += "_" + val
			}
		}
		path := parentPath + "." + mapKey
		if _, dup := parent.children[mapKey]; dup {
			return l.errf(d, "duplicate descriptor composite key '%s'", path)
		}
		n := &node{children: map[string]*node{}}
		shadow, detailed := false, false
		if s := f["shadow_mode"]; s != nil {
			if shadow, err = l.boolean(s, "shadow_mode"); err != nil {
				return err
			}
		}
		if s := f["detailed_metric"]; s != nil {
			if detailed, err = l.boolean(s, "detailed_metric"); err != nil {
				return err
			}
		}
		if rl := f["rate_limit"]; rl != nil && rl.Tag != "!!null" {
			r, err := l.rule(rl, path)
			if err != nil {
				return err
			}
			r.Shadow, r.Detailed = shadow, detailed
			n.rule = r
			l.c.Rules = append(l.c.Rules, r)
		}
		if sub := f["descriptors"]; sub != nil {
			if err := l.descriptors(n, path, sub); err != nil {
				return err
			}
		}
		parent.children[mapKey] = n
		if strings.HasSuffix(mapKey, "*") {
			parent.wildcards = append(parent.wildcards, mapKey)
		}
	}
	return nil
}

func (l *loader) rule(n *yaml.Node, path string) (*Rule, error) {
	f, err := l.fields(n, "rate_limit", "unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "burst")
	if err != nil {
		return nil, err
	}
	domain, _, _ := strings.Cut(path, ".")
	r := &Rule{Domain: domain, Path: path, Algorithm: l.defaultAlgo}
	if u := f["unlimited"]; u != nil {
		if r.Unlimited, err = l.boolean(u, "unlimited"); err != nil {
			return nil, err
		}
	}
	unitName := ""
	if u := f["unit"]; u != nil {
		if unitName, err = l.str(u, "unit"); err != nil {
			return nil, err
		}
	}
	unit, valid := unitNames[strings.ToLower(unitName)]
	if r.Unlimited {
		if valid {
			return nil, l.errf(f["unit"], "should not specify rate limit unit when unlimited")
		}
	} else if !valid {
		return nil, l.errf(orNode(f["unit"], n), "invalid rate limit unit '%s'", unitName)
	}
	r.Unit = unit
	if v := f["requests_per_unit"]; v != nil {
		x, err := l.uint(v, "requests_per_unit", 1<<32-1)
		if err != nil {
			return nil, err
		}
		r.RequestsPerUnit = uint32(x)
	}
	if v := f["name"]; v != nil {
		if r.Name, err = l.str(v, "name"); err != nil {
			return nil, err
		}
	}
	if v := f["replaces"]; v != nil {
		if v.Kind != yaml.SequenceNode {
			return nil, l.errf(v, "replaces must be a list of {name: ...}")
		}
		for _, e := range v.Content {
			ef, err := l.fields(e, "a replaces entry", "name")
			if err != nil {
				return nil, err
			}
			name := ""
			if nn := ef["name"]; nn != nil {
				name = nn.Value
			}
			if name == "" {
				return nil, l.errf(e, "should not have an empty replaces entry")
			}
			if name == r.Name {
				return nil, l.errf(e, "replaces should not contain name of same descriptor")
			}
			r.Replaces = append(r.Replaces, name)
		}
	}
	if v := f["algorithm"]; v != nil {
		s, _ := l.str(v, "algorithm")
		algo, ok := parseAlgorithm(s)
		if !ok {
			return nil, l.errf(v, "invalid algorithm '%s' (gcra, sliding_window or fixed_window)", s)
		}
		r.Algorithm = algo
	}
	r.Burst = int64(r.RequestsPerUnit)
	if v := f["burst"]; v != nil {
		x, err := l.uint(v, "burst", 1<<32-1)
		if err != nil {
			return nil, err
		}
		if r.Algorithm != GCRA {
			return nil, l.errf(v, "burst applies to the gcra algorithm only")
		}
		r.Burst = int64(x)
	}
	if !r.Unlimited && r.RequestsPerUnit > 0 && r.Algorithm == GCRA && r.Burst == 0 {
		return nil, l.errf(f["burst"], "burst must be positive")
	}
	r.GCRAPeriodMs = r.PeriodMs()
	if r.Burst != int64(r.RequestsPerUnit) && r.RequestsPerUnit > 0 {
		p := new(big.Int).Mul(big.NewInt(r.PeriodMs()), big.NewInt(r.Burst))
		rpu := big.NewInt(int64(r.RequestsPerUnit))
		p.Add(p, rpu).Sub(p, big.NewInt(1)).Quo(p, rpu)
		if !p.IsInt64() || p.Int64() > maxGCRAPeriodMs {
			return nil, l.errf(f["burst"], "burst too large for this rate: it would take more than %d ms to refill", int64(maxGCRAPeriodMs))
		}
		r.GCRAPeriodMs = p.Int64()
	}
	// requests_per_unit 0 is allowed: it denies every request (envoyproxy/ratelimit's way to
	// block a value), whatever the algorithm, without keeping state.
	return r, nil
}

func orNode(a, b *yaml.Node) *yaml.Node {
	if a != nil {
		return a
	}
	return b
}

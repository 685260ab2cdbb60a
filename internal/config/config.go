// Package config is HotKV's configuration: one table of directives that drives the config
// file (redis.conf syntax), `--name value` flags, CONFIG GET/SET and the generated reference
// in docs/config.md (ARCHITECTURE.md §7).
package config

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hotkv/hotkv/internal/glob"
)

// Type is a directive's value type; it decides parsing and the CONFIG SET error wording.
type Type int

// Directive types, as Redis's config.c classifies them.
const (
	Bool Type = iota
	Int
	Memory // an integer of bytes, accepting k/kb/m/mb/g/gb suffixes
	String
	Enum
	Special // a custom parser (save points, client-output-buffer-limit ...)
)

// Directive is one row of the config table.
type Directive struct {
	Name    string
	Aliases []string
	Type    Type
	Default string
	// Mutable directives may change at run time with CONFIG SET.
	Mutable bool
	// Min and Max bound Int and Memory values (inclusive).
	Min, Max int64
	// Values are an Enum's allowed words (lower case).
	Values []string
	// Parse normalizes and validates a Special or String value; the error text becomes the
	// CONFIG SET reason.
	Parse func(string) (string, error)
	// Merge, instead of Parse, is for a Special value that changes only the parts it names
	// (client-output-buffer-limit): it gets the current value too.
	Merge func(current, v string) (string, error)
	// Group and Doc feed docs/config.md.
	Group string
	Doc   string
	// Hidden directives are Redis's test hooks: accepted, shown by an exact CONFIG GET, left
	// out of CONFIG GET * (as in Redis) and of deploy/hotkv.conf.
	Hidden bool
	// Protected directives (dir, dbfilename) are set only at startup: CONFIG SET answers
	// Redis's "can't set protected config", as Redis does with enable-protected-configs no.
	Protected bool
	// Accumulate directives take several lines in a config file (or several --flags): the
	// first occurrence replaces the default and later ones add to it, and an empty value
	// clears it, as Redis treats `save`.
	Accumulate bool
	// Inert directives are Redis's, for machinery HotKV does not have (Doc says why): they are
	// accepted so that a Redis configuration file loads, kept for CONFIG GET and REWRITE, and
	// change nothing. The server logs the ones set to other than their default at startup.
	Inert bool
	// Unsupported, when set, refuses every value but the default with this reason: Redis
	// directives whose other values ask for behaviour HotKV does not have and that a user
	// would rely on (replicaof, min-replicas-to-write), so that a file asking for it fails
	// loudly instead of being ignored.
	Unsupported string
}

// Config holds current values. Reads take a read lock; hot-path values are mirrored by the
// server's apply hooks into atomics so commands never touch this lock.
type Config struct {
	mu     sync.RWMutex
	table  []*Directive
	byName map[string]*Directive
	values map[string]string
	hooks  []func(name, value string)
	// renames are the rename-command lines.
	renames []Rename
	// users are the config file's `user` lines (name and rules), kept apart from the table:
	// each line declares one ACL user, and they are not CONFIG GET values.
	users [][]string
	// file is the absolute path of the config file given at startup ("" without one).
	file string
}

// Users returns the `user <name> <rules...>` lines of the config file and flags, each split
// into words, in order.
func (c *Config) Users() [][]string { return c.users }

// Rename is one rename-command line: the command From is called To from now on ("" removes
// it). Line is where it was written, for the error if the command table refuses it.
type Rename struct {
	From, To string
	Line     FileError
}

// Renames returns the rename-command lines in order; the server applies them to its command
// table at startup (CONFIG REWRITE keeps the lines as they are).
func (c *Config) Renames() []Rename { return c.renames }

// New builds a Config over the table with every default applied.
func New(table []*Directive) *Config {
	c := &Config{table: table, byName: map[string]*Directive{}, values: map[string]string{}}
	for _, d := range table {
		c.byName[d.Name] = d
		for _, a := range d.Aliases {
			c.byName[a] = d
		}
		v, err := d.normalize("", d.Default)
		if err != nil {
			panic("config: bad default for " + d.Name + ": " + err.Error())
		}
		c.values[d.Name] = v
	}
	return c
}

// Table returns the directives, for documentation.
func (c *Config) Table() []*Directive { return c.table }

// OnChange registers a hook called with each directive's value whenever it is set, and once
// now for every directive, so state derived from the config starts in sync.
func (c *Config) OnChange(fn func(name, value string)) {
	c.mu.Lock()
	c.hooks = append(c.hooks, fn)
	vals := make(map[string]string, len(c.values))
	for k, v := range c.values {
		vals[k] = v
	}
	c.mu.Unlock()
	for _, d := range c.table {
		fn(d.Name, vals[d.Name])
	}
}

// Get returns a directive's current value.
func (c *Config) Get(name string) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if d := c.byName[strings.ToLower(name)]; d != nil {
		return c.values[d.Name]
	}
	return ""
}

// GetInt returns an Int or Memory directive's value.
func (c *Config) GetInt(name string) int64 {
	v, _ := strconv.ParseInt(c.Get(name), 10, 64)
	return v
}

// GetBool returns a Bool directive's value.
func (c *Config) GetBool(name string) bool { return c.Get(name) == "yes" }

// Lookup finds a directive by name or alias.
// InertSet lists the Inert directives set to other than their default, as `name value`: what
// a Redis configuration file asked for that HotKV does not do.
func (c *Config) InertSet() []string {
	var out []string
	for _, d := range c.table {
		if !d.Inert {
			continue
		}
		def, err := d.normalize(d.Default, d.Default)
		if v := c.Get(d.Name); err == nil && v != def {
			out = append(out, d.Name+" "+v)
		}
	}
	return out
}

func (c *Config) Lookup(name string) *Directive { return c.byName[strings.ToLower(name)] }

// Match returns name/value pairs for every directive (or alias) matching one of the glob
// patterns, as CONFIG GET does, in table order. As in Redis 7.0, a pattern without glob
// characters (*, ? or [) is a name looked up case-insensitively, which also finds hidden
// directives, and the reply names it as the client spelled it.
func (c *Config) Match(patterns []string) [][2]string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out [][2]string
	seen := map[string]bool{}
	for _, d := range c.table {
		names := append([]string{d.Name}, d.Aliases...)
		for _, n := range names {
			for _, p := range patterns {
				if seen[n] {
					break
				}
				exact := !strings.ContainsAny(p, "*?[")
				switch {
				case exact && strings.EqualFold(p, n):
					seen[n] = true
					out = append(out, [2]string{p, c.values[d.Name]})
				case !exact && !d.Hidden && glob.Match(strings.ToLower(p), n, true):
					seen[n] = true
					out = append(out, [2]string{n, c.values[d.Name]})
				}
			}
		}
	}
	return out
}

// SetError is a CONFIG SET or startup failure naming the directive.
type SetError struct {
	Name   string
	Reason string
	// Unknown marks a directive that does not exist.
	Unknown bool
}

func (e *SetError) Error() string {
	if e.Unknown {
		return "Unknown option or number of arguments for CONFIG SET - '" + e.Name + "'"
	}
	return "CONFIG SET failed (possibly related to argument '" + e.Name + "') - " + e.Reason
}

// Set applies name/value pairs atomically, as Redis 7's multi-argument CONFIG SET: if any
// pair fails, nothing changes. runtime enforces mutability (false at startup).
func (c *Config) Set(pairs [][2]string, runtime bool) error {
	type change struct {
		d *Directive
		v string
	}
	var changes []change
	seen := map[*Directive]bool{}
	for _, p := range pairs {
		d := c.Lookup(p[0])
		if d == nil {
			return &SetError{Name: p[0], Unknown: true}
		}
		if seen[d] {
			return &SetError{Name: p[0], Reason: "duplicate parameter"}
		}
		seen[d] = true
		if runtime && d.Protected {
			return &SetError{Name: p[0], Reason: "can't set protected config"}
		}
		if runtime && !d.Mutable {
			return &SetError{Name: p[0], Reason: "can't set immutable config"}
		}
		c.mu.RLock()
		cur := c.values[d.Name]
		c.mu.RUnlock()
		v, err := d.normalize(cur, p[1])
		if err == nil && d.Unsupported != "" {
			if def, derr := d.normalize(d.Default, d.Default); derr == nil && v != def {
				err = errors.New(d.Unsupported)
			}
		}
		if err != nil {
			return &SetError{Name: p[0], Reason: err.Error()}
		}
		changes = append(changes, change{d, v})
	}
	c.mu.Lock()
	for _, ch := range changes {
		c.values[ch.d.Name] = ch.v
	}
	hooks := c.hooks
	c.mu.Unlock()
	for _, ch := range changes {
		for _, h := range hooks {
			h(ch.d.Name, ch.v)
		}
	}
	return nil
}

func (d *Directive) normalize(current, v string) (string, error) {
	switch d.Type {
	case Bool:
		switch strings.ToLower(v) {
		case "yes":
			return "yes", nil
		case "no":
			return "no", nil
		}
		return "", errors.New("argument must be 'yes' or 'no'")
	case Int:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", errors.New("argument couldn't be parsed into an integer")
		}
		return d.checkRange(n)
	case Memory:
		n, ok := ParseMemory(v)
		if !ok {
			return "", errors.New("argument must be a memory value")
		}
		return d.checkRange(n)
	case Enum:
		lv := strings.ToLower(v)
		for _, e := range d.Values {
			if lv == e {
				return e, nil
			}
		}
		return "", errors.New("argument(s) must be one of the following: " + strings.Join(d.Values, ", "))
	}
	if d.Merge != nil {
		return d.Merge(current, v)
	}
	if d.Parse != nil {
		return d.Parse(v)
	}
	return v, nil
}

func (d *Directive) checkRange(n int64) (string, error) {
	if (d.Min != 0 || d.Max != 0) && (n < d.Min || n > d.Max) {
		if d.Type == Memory {
			return "", fmt.Errorf("argument must be between %d and %d inclusive", d.Min, d.Max)
		}
		return "", fmt.Errorf("argument must be between %d and %d inclusive", d.Min, d.Max)
	}
	return strconv.FormatInt(n, 10), nil
}

// ParseMemory parses a memory amount such as "100", "1k", "5mb" or "1gb" into bytes, as
// redis.conf does (k = 1000, kb = 1024).
func ParseMemory(s string) (int64, bool) {
	ls := strings.ToLower(strings.TrimSpace(s))
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(ls, u.suffix) {
			ls = strings.TrimSuffix(ls, u.suffix)
			mul = u.mul
			break
		}
	}
	n, err := strconv.ParseInt(ls, 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	if n > math.MaxInt64/mul {
		return 0, false
	}
	return n * mul, true
}

// Names returns every directive name, sorted, for documentation.
func (c *Config) Names() []string {
	var out []string
	for _, d := range c.table {
		out = append(out, d.Name)
	}
	sort.Strings(out)
	return out
}

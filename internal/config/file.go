package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hotkv/hotkv/internal/resp"
)

// FileError is a config file problem, reported at startup the way redis-server reports it.
type FileError struct {
	File   string
	Line   int
	Text   string
	Reason string
}

func (e *FileError) Error() string {
	return fmt.Sprintf("*** FATAL CONFIG FILE ERROR ***\nReading the configuration file %s, at line %d\n>>> '%s'\n%s",
		e.File, e.Line, e.Text, e.Reason)
}

// ParseFile reads a redis.conf-style file into name/value pairs in order. Blank lines and
// comments are skipped, arguments are split with Redis's quoting rules, a directive's
// arguments are joined by spaces (as `save 900 1 300 10` or `bind a b`), and `include` pulls in
// another file relative to the working directory, as redis-server does.
func ParseFile(path string) ([][2]string, error) {
	return parseFile(path, 0)
}

func parseFile(path string, depth int) ([][2]string, error) {
	if depth > 16 {
		return nil, fmt.Errorf("config: include nesting too deep at %s", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Fatal error, can't open config file '%s': %v", path, err)
	}
	var out [][2]string
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(strings.TrimSuffix(raw, "\r"))
		if line == "" || line[0] == '#' {
			continue
		}
		args, ok := resp.SplitArgs(line)
		if !ok {
			return nil, &FileError{File: path, Line: i + 1, Text: line, Reason: "Unbalanced quotes in configuration line"}
		}
		if len(args) == 0 {
			continue
		}
		name := strings.ToLower(args[0])
		if name == "include" {
			if len(args) != 2 {
				return nil, &FileError{File: path, Line: i + 1, Text: line, Reason: "wrong number of arguments"}
			}
			inc := args[1]
			if !filepath.IsAbs(inc) {
				inc = filepath.Clean(inc)
			}
			sub, err := parseFile(inc, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
			continue
		}
		if len(args) < 2 {
			return nil, &FileError{File: path, Line: i + 1, Text: line, Reason: "wrong number of arguments"}
		}
		out = append(out, [2]string{name, strings.Join(args[1:], " ")})
	}
	return out, nil
}

// ParseArgs turns redis-server's command line into name/value pairs: an optional config file
// first, then `--name value...` options whose values run until the next `--` option. A lone
// "-" reads the config from standard input, as redis-server does, and is not supported here.
func ParseArgs(argv []string) (file string, pairs [][2]string, err error) {
	i := 0
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "--") {
		file = argv[0]
		i = 1
	}
	for i < len(argv) {
		a := argv[i]
		if !strings.HasPrefix(a, "--") || len(a) == 2 {
			return "", nil, fmt.Errorf("invalid argument %q: options are --name value", a)
		}
		name := strings.ToLower(a[2:])
		i++
		var vals []string
		for i < len(argv) && !strings.HasPrefix(argv[i], "--") {
			vals = append(vals, argv[i])
			i++
		}
		if len(vals) == 0 {
			// Redis allows a bare flag for booleans ("--appendonly" means yes).
			vals = []string{"yes"}
		}
		pairs = append(pairs, [2]string{name, strings.Join(vals, " ")})
	}
	return file, pairs, nil
}

// Load builds a Config from the table and redis-server style arguments: defaults, then the
// file, then flags. Every error names the directive.
func Load(table []*Directive, argv []string) (*Config, error) {
	c := New(table)
	file, flags, err := ParseArgs(argv)
	if err != nil {
		return nil, err
	}
	var pairs [][2]string
	if file != "" {
		// Remembered absolute, as Redis's getAbsolutePath: the server changes into dir
		// before CONFIG REWRITE could write a relative path.
		if abs, err := filepath.Abs(file); err == nil {
			c.file = abs
		} else {
			c.file = file
		}
		fp, err := ParseFile(file)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, fp...)
	}
	pairs = append(pairs, flags...)
	// Apply one at a time: a later occurrence of a directive overrides an earlier one, as in
	// redis.conf, instead of being a duplicate error; Accumulate directives add up instead.
	seen := map[*Directive]bool{}
	for _, p := range pairs {
		if p[0] == "user" {
			c.users = append(c.users, strings.Fields(p[1]))
			continue
		}
		if d := c.Lookup(p[0]); d != nil && d.Accumulate {
			if seen[d] && p[1] != "" && c.Get(d.Name) != "" {
				p[1] = c.Get(d.Name) + " " + p[1]
			}
			seen[d] = true
		}
		if err := c.Set([][2]string{p}, false); err != nil {
			var se *SetError
			if ok := asSetError(err, &se); ok {
				if se.Unknown {
					return nil, fmt.Errorf("Bad directive or wrong number of arguments: '%s'", p[0])
				}
				return nil, fmt.Errorf("invalid value for '%s' (%q): %s", p[0], p[1], se.Reason)
			}
			return nil, err
		}
	}
	return c, nil
}

func asSetError(err error, out **SetError) bool {
	se, ok := err.(*SetError)
	if ok {
		*out = se
	}
	return ok
}

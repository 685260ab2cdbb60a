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
	where := "the configuration file " + e.File
	if e.File == "" {
		where = "the command line options" // the options after the file, as config lines
	}
	return fmt.Sprintf("*** FATAL CONFIG FILE ERROR ***\nReading %s, at line %d\n>>> '%s'\n%s",
		where, e.Line, e.Text, e.Reason)
}

// ParseFile reads a redis.conf-style file into name/value pairs in order. Blank lines and
// comments are skipped, arguments are split with Redis's quoting rules, a directive's
// arguments are joined by spaces (as `save 900 1 300 10` or `bind a b`), and `include` pulls in
// another file relative to the working directory, as redis-server does.
func ParseFile(path string) ([][2]string, error) {
	lines, err := parseFile(path, 0)
	pairs := make([][2]string, len(lines))
	for i, l := range lines {
		pairs[i] = l.pair
	}
	return pairs, err
}

// fileLine is one directive line of a config file, kept with where it came from so that a
// value the directive refuses is reported at its line, as Redis reports it.
type fileLine struct {
	pair  [2]string
	file  string
	line  int
	text  string
	nargs int
	flag  bool // a command-line option rather than a file's line
}

func parseFile(path string, depth int) ([]fileLine, error) {
	if depth > 16 {
		return nil, fmt.Errorf("config: include nesting too deep at %s", path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("Fatal error, can't open config file '%s': %v", path, err)
	}
	var out []fileLine
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
		out = append(out, fileLine{pair: [2]string{name, strings.Join(args[1:], " ")}, file: path, line: i + 1, text: line, nargs: len(args) - 1})
	}
	return out, nil
}

// ParseArgs turns redis-server's command line into name/value pairs exactly as Redis 7.0's
// main() does: an optional config file first, then the options are written out as config
// lines and read like the file's. `--name` starts a line; the arguments after it, quoted,
// are its values, even ones starting with "--" while the line has none yet
// (`--proc-title-template --x`); "--name value" in one argument is a whole line; an argument
// without "--" after a complete line is another value of it (`loglevel verbose` works too).
// `--save` followed by another option or nothing means `save ""`. A lone "-" (read the
// config from standard input) is not supported.
func ParseArgs(argv []string) (file string, pairs [][2]string, err error) {
	file, lines, err := parseArgs(argv)
	for n, l := range lines {
		if l.nargs == 0 { // without the table, every option needs a value
			return "", nil, &FileError{Line: n + 1, Text: l.text, Reason: "wrong number of arguments"}
		}
		pairs = append(pairs, l.pair)
	}
	return file, pairs, err
}

// argLine is one option line of the command line: its pair, the line as Redis would show it
// in an error, and how many values it had.
type argLine struct {
	pair  [2]string
	text  string
	nargs int
}

func parseArgs(argv []string) (file string, out []argLine, err error) {
	i := 0
	if len(argv) > 0 && !strings.HasPrefix(argv[0], "-") {
		file = argv[0]
		i = 1
	}
	var lines []string
	var cur strings.Builder
	handledLast := true // the last option has its value (Redis's handled_last_config_arg)
	flush := func() {
		if cur.Len() > 0 {
			lines = append(lines, cur.String())
			cur.Reset()
		}
	}
	for j := i; j < len(argv); j++ {
		a := argv[j]
		if a == "-" && (j == 0 || j == len(argv)-1) {
			return "", nil, fmt.Errorf("reading the configuration from standard input (-) is not supported")
		}
		if handledLast && strings.HasPrefix(a, "--") {
			flush()
			cur.WriteString(a[2:])
			cur.WriteByte(' ')
			if parts, ok := resp.SplitArgs(a); ok && len(parts) == 1 {
				handledLast = false // a name alone: its values follow
				next := j + 1
				isSave := strings.EqualFold(a, "--save")
				if isSave && (next == len(argv) || strings.HasPrefix(argv[next], "--")) {
					cur.WriteString(`""`) // pre-7.0 scripts pass an empty save as nothing
					handledLast = true
				}
			} else {
				handledLast = true // "--name value" in one argument
			}
			continue
		}
		cur.WriteString(resp.Repr(a))
		cur.WriteByte(' ')
		handledLast = true
	}
	flush()
	for n, line := range lines {
		line = strings.TrimSpace(line)
		args, ok := resp.SplitArgs(line)
		if !ok {
			return "", nil, &FileError{Line: n + 1, Text: line, Reason: "Unbalanced quotes in configuration line"}
		}
		if len(args) == 0 {
			return "", nil, &FileError{Line: n + 1, Text: line, Reason: "wrong number of arguments"}
		}
		out = append(out, argLine{pair: [2]string{strings.ToLower(args[0]), strings.Join(args[1:], " ")},
			text: line, nargs: len(args) - 1})
	}
	return file, out, nil
}

// Load builds a Config from the table and redis-server style arguments: defaults, then the
// file, then flags. Every error names the directive.
func Load(table []*Directive, argv []string) (*Config, error) {
	c := New(table)
	file, argLines, err := parseArgs(argv)
	if err != nil {
		return nil, err
	}
	var flags []fileLine
	for n, l := range argLines {
		flags = append(flags, fileLine{pair: l.pair, line: n + 1, text: l.text, nargs: l.nargs, flag: true})
	}
	var pairs []fileLine
	if file != "" {
		// Remembered absolute, as Redis's getAbsolutePath: the server changes into dir
		// before CONFIG REWRITE could write a relative path.
		if abs, err := filepath.Abs(file); err == nil {
			c.file = abs
		} else {
			c.file = file
		}
		fp, err := parseFile(file, 0)
		if err != nil {
			return nil, err
		}
		pairs = append(pairs, fp...)
	}
	pairs = append(pairs, flags...)
	// Apply one at a time: a later occurrence of a directive overrides an earlier one, as in
	// redis.conf, instead of being a duplicate error; Accumulate directives add up instead.
	seen := map[*Directive]bool{}
	for _, l := range pairs {
		p := l.pair
		// The command line's arity, checked line by line so that the first bad line is the
		// one reported, as Redis reads them: a directive of one value (a number, a word, a
		// size) given several is "wrong number of arguments", shown with the line as quoted
		// (`port "6379" "6380"`); so is an option with no value at all, but for Redis's
		// multi-argument configs (Special here), whose own check answers it
		// (shutdown-on-sigterm's "must be one of the following").
		if d := c.Lookup(p[0]); l.flag && ((d != nil && l.nargs > 1 && singleValue(d.Type)) ||
			(l.nargs == 0 && (d == nil || d.Type != Special || d.Parse == nil))) {
			return nil, &FileError{Line: l.line, Text: l.text, Reason: "wrong number of arguments"}
		}
		if p[0] == "user" {
			c.users = append(c.users, strings.Fields(p[1]))
			continue
		}
		if p[0] == "rename-command" {
			// Redis takes exactly two arguments, the second possibly "" (remove the command).
			if l.nargs != 2 {
				return nil, &FileError{File: l.file, Line: l.line, Text: l.text, Reason: "Bad directive or wrong number of arguments"}
			}
			f := strings.Fields(p[1])
			r := Rename{From: f[0], Line: FileError{File: l.file, Line: l.line, Text: l.text}}
			if len(f) > 1 {
				r.To = f[1]
			}
			c.renames = append(c.renames, r)
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
				// Redis's loadServerConfigFromString: the error names the line, as written.
				reason := se.Reason
				if se.Unknown {
					reason = "Bad directive or wrong number of arguments"
				}
				return nil, &FileError{File: l.file, Line: l.line, Text: l.text, Reason: reason}
			}
			return nil, err
		}
	}
	return c, nil
}

// singleValue reports whether a directive of type t takes exactly one value (Redis's
// bool, enum, numeric and memory configs), so that more is an arity error rather than a bad
// value.
func singleValue(t Type) bool { return t == Int || t == Bool || t == Enum || t == Memory }

func asSetError(err error, out **SetError) bool {
	se, ok := err.(*SetError)
	if ok {
		*out = se
	}
	return ok
}

// Package script is HotKV's Lua engine: Lua 5.1 on gopher-lua, sandboxed and extended the way
// Redis 7.0 does it (the redis.* API, cjson, cmsgpack, bit and struct), with Redis's rules for
// converting between Lua values and RESP replies.
//
// The package knows nothing about commands or the keyspace: a running script reaches the
// server through a Host (redis.call, redis.pcall, redis.log). internal/command owns the script
// cache, the function libraries, locking, effects and SCRIPT KILL, and calls in here to compile
// and run.
//
// Lua states cost ~100-200 µs to build, so they are built once and reused (Pool); compiled
// scripts (Script) hold a gopher-lua FunctionProto, which every state can instantiate without
// compiling again.
package script

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Flags are a script's or function's declared flags (the "#!lua flags=..." shebang, or the
// flags of redis.register_function), with Redis's names.
type Flags uint8

// Script flags.
const (
	FlagNoWrites Flags = 1 << iota
	FlagAllowOOM
	FlagAllowStale
	FlagNoCluster
	FlagAllowCrossSlot
	// FlagEvalCompat marks an EVAL script without a shebang: Redis runs those as before 7.0,
	// with no declared flags (writes allowed, checked command by command).
	FlagEvalCompat
)

// flagNames lists the declarable flags in Redis's order (script.c scripts_flags_def).
var flagNames = []struct {
	f    Flags
	name string
}{
	{FlagNoWrites, "no-writes"}, {FlagAllowOOM, "allow-oom"}, {FlagAllowStale, "allow-stale"},
	{FlagNoCluster, "no-cluster"}, {FlagAllowCrossSlot, "allow-cross-slot-keys"},
}

// FlagByName finds a declarable flag by its exact name.
func FlagByName(name string) (Flags, bool) {
	for _, fn := range flagNames {
		if fn.name == name {
			return fn.f, true
		}
	}
	return 0, false
}

// Names lists the declared flags by name, in Redis's order (FUNCTION LIST).
func (f Flags) Names() []string {
	var out []string
	for _, fn := range flagNames {
		if f&fn.f != 0 {
			out = append(out, fn.name)
		}
	}
	return out
}

// SHA1Hex is the lower-case hex SHA-1 of b: a script's name in the cache and redis.sha1hex.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// ParseShebang reads an EVAL script's "#!lua [flags=a,b]" first line, as Redis's
// evalExtractShebangFlags does. A body without a shebang gets FlagEvalCompat. n is the length
// of the shebang line without its newline: the code compiled starts there, so that line
// numbers stay those of the body.
func ParseShebang(body []byte) (flags Flags, n int, err string) {
	if len(body) < 2 || body[0] != '#' || body[1] != '!' {
		return FlagEvalCompat, 0, ""
	}
	end := strings.IndexByte(string(body), '\n')
	if end < 0 {
		return 0, 0, "Invalid script shebang"
	}
	parts, ok := splitArgs(string(body[:end]))
	if !ok || len(parts) == 0 {
		return 0, 0, "Invalid engine in script shebang"
	}
	if parts[0] != "#!lua" {
		return 0, 0, "Unexpected engine in script shebang: " + parts[0]
	}
	for _, p := range parts[1:] {
		v, found := strings.CutPrefix(p, "flags=")
		if !found {
			return 0, 0, "Unknown lua shebang option: " + p
		}
		if v == "" {
			continue
		}
		for _, name := range strings.Split(v, ",") {
			f, ok := FlagByName(name)
			if !ok {
				return 0, 0, "Unexpected flag in script shebang: " + name
			}
			flags |= f
		}
	}
	return flags, end, ""
}

// splitArgs splits a line into words as Redis's sdssplitargs does: blanks separate words,
// double quotes allow escapes, single quotes do not; an unbalanced quote fails.
func splitArgs(line string) ([]string, bool) {
	var out []string
	i := 0
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n' || line[i] == '\v' || line[i] == '\f') {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur strings.Builder
		inDQ, inSQ := false, false
		for done := false; !done; {
			if i >= len(line) {
				if inDQ || inSQ {
					return nil, false
				}
				break
			}
			ch := line[i]
			switch {
			case inDQ:
				switch {
				case ch == '\\' && i+1 < len(line):
					i++
					switch line[i] {
					case 'n':
						cur.WriteByte('\n')
					case 'r':
						cur.WriteByte('\r')
					case 't':
						cur.WriteByte('\t')
					case 'b':
						cur.WriteByte('\b')
					case 'a':
						cur.WriteByte('\a')
					default:
						cur.WriteByte(line[i])
					}
				case ch == '"':
					if i+1 < len(line) && !isBlank(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur.WriteByte(ch)
				}
			case inSQ:
				switch {
				case ch == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur.WriteByte('\'')
				case ch == '\'':
					if i+1 < len(line) && !isBlank(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur.WriteByte(ch)
				}
			default:
				switch {
				case isBlank(ch):
					done = true
				case ch == '"':
					inDQ = true
				case ch == '\'':
					inSQ = true
				default:
					cur.WriteByte(ch)
				}
			}
			i++
		}
		out = append(out, cur.String())
	}
}

func isBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'
}

// Compile parses and compiles Lua source into a prototype that any state can run. chunk names
// the code in error messages ("user_script", "user_function"), as Redis does.
func Compile(src []byte, chunk string) (*lua.FunctionProto, error) {
	ast, err := parse.Parse(strings.NewReader(string(src)), chunk)
	if err != nil {
		return nil, err
	}
	return lua.Compile(ast, chunk)
}

// CompileError words a compile error as Lua 5.1 starts its messages ("chunk:line: ..."),
// from gopher-lua's parse and compile errors.
func CompileError(chunk string, src []byte, err error) string {
	if pe, ok := err.(*parse.Error); ok {
		line, token := pe.Pos.Line, pe.Token
		if line == parse.EOF {
			line, token = 1+strings.Count(string(src), "\n"), "<eof>"
		}
		msg := pe.Message
		if token != "" {
			msg += " near '" + token + "'"
		}
		return chunk + ":" + itoa(line) + ": " + msg
	}
	return strings.TrimSpace(err.Error())
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

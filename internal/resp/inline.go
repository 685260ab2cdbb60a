package resp

// inline parses one inline (telnet-style) command line at rd.r. It reports more=true when the
// line is not complete yet. A blank line yields no arguments and is consumed.
//
// Quoting follows Redis's sdssplitargs, so `redis-cli`-style input such as
// `SET "a key" 'it”s'` and "\x41" escapes mean the same here as in Redis. Unescaping happens in
// place: the result is never longer than the input.
func (rd *Reader) inline() (args [][]byte, more bool, err error) {
	nl := rd.find(rd.r, '\n')
	if nl < 0 {
		if rd.w-rd.r > InlineMaxSize {
			return nil, false, ErrTooBigInline
		}
		return nil, true, nil
	}
	end := nl
	if end > rd.r && rd.buf[end-1] == '\r' {
		end--
	}
	line := rd.buf[rd.r:end]
	rd.r = nl + 1
	args, ok := splitArgs(line, rd.args[:0])
	if !ok {
		return nil, false, ErrUnbalancedQuotes
	}
	rd.args = args
	return args, false, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// splitArgs splits line into arguments the way Redis's sdssplitargs does, rewriting line in
// place. It returns false on unbalanced quotes or a closing quote not followed by a space.
func splitArgs(line []byte, dst [][]byte) ([][]byte, bool) {
	i, n := 0, len(line)
	for {
		for i < n && isSpace(line[i]) {
			i++
		}
		if i >= n {
			return dst, true
		}
		start := i // output cursor; the token is rewritten starting here
		out := i
		inq, insq, done := false, false, false
		for !done {
			switch {
			case inq:
				if i >= n {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+3 < n && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]) {
					line[out] = hexVal(line[i+2])<<4 | hexVal(line[i+3])
					out++
					i += 4
					continue
				}
				if c == '\\' && i+1 < n {
					i++
					c = line[i]
					switch c {
					case 'n':
						c = '\n'
					case 'r':
						c = '\r'
					case 't':
						c = '\t'
					case 'b':
						c = '\b'
					case 'a':
						c = '\a'
					}
					line[out] = c
					out++
					i++
					continue
				}
				if c == '"' {
					// The closing quote must be followed by a space or the end.
					if i+1 < n && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
					i++
					continue
				}
				line[out] = c
				out++
				i++
			case insq:
				if i >= n {
					return nil, false
				}
				c := line[i]
				if c == '\\' && i+1 < n && line[i+1] == '\'' {
					line[out] = '\''
					out++
					i += 2
					continue
				}
				if c == '\'' {
					if i+1 < n && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
					i++
					continue
				}
				line[out] = c
				out++
				i++
			default:
				if i >= n {
					done = true
					continue
				}
				c := line[i]
				switch {
				case isSpace(c):
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					line[out] = c
					out++
				}
				i++
			}
		}
		dst = append(dst, line[start:out:out])
	}
}

// parseInt parses b like Redis's string2ll: an optional '-', no '+', no leading zeros, no
// spaces, at most 20 bytes, within int64. It never allocates.
func parseInt(b []byte) (int64, bool) {
	n := len(b)
	if n == 0 || n > 20 {
		return 0, false
	}
	if n == 1 && b[0] == '0' {
		return 0, true
	}
	neg := false
	i := 0
	if b[0] == '-' {
		neg = true
		i = 1
		if n == 1 {
			return 0, false
		}
	}
	if b[i] < '1' || b[i] > '9' {
		return 0, false
	}
	var v uint64
	for ; i < n; i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// ParseInt is Redis's string2ll, shared by every command that takes an integer argument so
// that all of them accept and reject exactly the same spellings.
func ParseInt(b []byte) (int64, bool) { return parseInt(b) }

// SplitArgs splits a line with Redis's sdssplitargs rules (quotes, escapes); config files and
// rename-command lines use it. It reports false on unbalanced quotes.
func SplitArgs(line string) ([]string, bool) {
	b := []byte(line)
	args, ok := splitArgs(b, nil)
	if !ok {
		return nil, false
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out, true
}

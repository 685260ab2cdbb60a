package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// FormatCLI renders the first reply in b the way redis-cli prints it on a terminal (its default
// output when stdout is a TTY, or with --no-raw; redis-cli.c's cliFormatReplyTTY), without the
// final newline, and returns the bytes that follow the reply. The command reference's examples
// are written in this form and tests/examples_test.go compares the server's replies with them
// through this function.
//
//	+OK              OK
//	:5               (integer) 5
//	$5 hello         "hello"            quoted and escaped as sdscatrepr does: \" \\ \n \r \t \a \b, \xHH
//	$-1, *-1, _      (nil)
//	-ERR x           (error) ERR x
//	*2 :0 *1 $1 a    1) (integer) 0
//	                 2) 1) "a"          nested aggregates indent by the parent's index width + 2
//	*0               (empty array)      (empty hash), (empty set), (empty push) in RESP3
//	,1.5  #t  =txt:x (double) 1.5, (true), x (verbatim text as is)
//	%1 ...           1# "k" => "v"      RESP3 maps; sets number with "~"
//	(123             (big number) 123   (redis-cli 7.2 and later; 7.0 cannot print it)
//
// A reply that is incomplete or malformed is an error; so is a RESP3 attribute ("|"), which
// redis-cli 7.0 rejects as a protocol error.
func FormatCLI(b []byte) (string, []byte, error) {
	v, rest, err := parseReply(b)
	if err != nil {
		return "", b, err
	}
	var sb strings.Builder
	formatTTY(&sb, v, "")
	return strings.TrimSuffix(sb.String(), "\n"), rest, nil
}

// replyValue is one parsed reply.
type replyValue struct {
	kind  byte   // the RESP type byte; '_' also stands for $-1 and *-1
	str   string // simple string, error, bulk, double, big number, verbatim text (without "txt:")
	n     int64  // integer; boolean as 0/1
	elems []replyValue
}

var errShortReply = errors.New("resp: incomplete reply")

// parseReply reads one RESP2/RESP3 reply from the start of b.
func parseReply(b []byte) (replyValue, []byte, error) {
	eol := bytes.Index(b, []byte("\r\n"))
	if eol < 1 {
		return replyValue{}, b, errShortReply
	}
	kind, line, rest := b[0], string(b[1:eol]), b[eol+2:]
	switch kind {
	case '+', '-', ',', '(':
		return replyValue{kind: kind, str: line}, rest, nil
	case ':':
		n, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return replyValue{}, b, fmt.Errorf("resp: bad integer %q", line)
		}
		return replyValue{kind: kind, n: n}, rest, nil
	case '_':
		return replyValue{kind: '_'}, rest, nil
	case '#':
		if line != "t" && line != "f" {
			return replyValue{}, b, fmt.Errorf("resp: bad boolean %q", line)
		}
		v := replyValue{kind: kind}
		if line == "t" {
			v.n = 1
		}
		return v, rest, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 {
			return replyValue{}, b, fmt.Errorf("resp: bad length %q", line)
		}
		if n == -1 {
			return replyValue{kind: '_'}, rest, nil
		}
		if len(rest) < n+2 {
			return replyValue{}, b, errShortReply
		}
		if string(rest[n:n+2]) != "\r\n" {
			return replyValue{}, b, errors.New("resp: bulk string not terminated by CRLF")
		}
		s := string(rest[:n])
		rest = rest[n+2:]
		switch kind {
		case '!':
			return replyValue{kind: '-', str: s}, rest, nil
		case '=':
			if len(s) < 4 || s[3] != ':' {
				return replyValue{}, b, fmt.Errorf("resp: bad verbatim string %q", s)
			}
			return replyValue{kind: '=', str: s[4:]}, rest, nil
		}
		return replyValue{kind: '$', str: s}, rest, nil
	case '*', '~', '>', '%':
		n, err := strconv.Atoi(line)
		if err != nil || n < -1 {
			return replyValue{}, b, fmt.Errorf("resp: bad length %q", line)
		}
		if n == -1 {
			return replyValue{kind: '_'}, rest, nil
		}
		count := n
		if kind == '%' {
			count = 2 * n
		}
		v := replyValue{kind: kind, elems: make([]replyValue, 0, min(count, 1024))}
		for range count {
			var e replyValue
			e, rest, err = parseReply(rest)
			if err != nil {
				return replyValue{}, b, err
			}
			v.elems = append(v.elems, e)
		}
		return v, rest, nil
	case '|':
		return replyValue{}, b, errors.New("resp: redis-cli cannot print RESP3 attributes")
	}
	return replyValue{}, b, fmt.Errorf("resp: unknown reply type %q", kind)
}

// formatTTY is cliFormatReplyTTY: every value ends with a newline; elements after the first of
// an aggregate start with prefix, the indentation of the enclosing aggregates.
func formatTTY(sb *strings.Builder, v replyValue, prefix string) {
	switch v.kind {
	case '-':
		sb.WriteString("(error) " + v.str + "\n")
	case '+', '=':
		sb.WriteString(v.str + "\n")
	case ':':
		sb.WriteString("(integer) " + strconv.FormatInt(v.n, 10) + "\n")
	case ',':
		sb.WriteString("(double) " + v.str + "\n")
	case '(':
		sb.WriteString("(big number) " + v.str + "\n")
	case '$':
		sb.WriteString(Repr(v.str) + "\n")
	case '_':
		sb.WriteString("(nil)\n")
	case '#':
		if v.n != 0 {
			sb.WriteString("(true)\n")
		} else {
			sb.WriteString("(false)\n")
		}
	case '*', '~', '>', '%':
		if len(v.elems) == 0 {
			sb.WriteString(map[byte]string{'*': "(empty array)\n", '~': "(empty set)\n",
				'>': "(empty push)\n", '%': "(empty hash)\n"}[v.kind])
			return
		}
		entries := len(v.elems)
		if v.kind == '%' {
			entries /= 2
		}
		width := len(strconv.Itoa(entries))
		inner := prefix + strings.Repeat(" ", width+2)
		sep := ')'
		switch v.kind {
		case '~':
			sep = '~'
		case '%':
			sep = '#'
		}
		step := 1
		if v.kind == '%' {
			step = 2
		}
		for i := 0; i < len(v.elems); i += step {
			if i > 0 {
				sb.WriteString(prefix)
			}
			fmt.Fprintf(sb, "%*d%c ", width, i/step+1, sep)
			if v.kind != '%' {
				formatTTY(sb, v.elems[i], inner)
				continue
			}
			// A map key's newline makes way for " => " and the value.
			var key strings.Builder
			formatTTY(&key, v.elems[i], inner)
			sb.WriteString(strings.TrimSuffix(key.String(), "\n") + " => ")
			formatTTY(sb, v.elems[i+1], inner)
		}
	}
}

// Repr quotes s as redis-cli prints a bulk string (sds.c's sdscatrepr): in double quotes, with
// \\ \" \n \r \t \a \b escaped and every other byte outside printable ASCII written \xHH.
func Repr(s string) string { return string(AppendRepr(make([]byte, 0, len(s)+2), []byte(s))) }

// AppendRepr appends s quoted as Repr quotes it; MONITOR writes its lines with it without
// allocating per argument.
func AppendRepr(b []byte, s []byte) []byte {
	b = append(b, '"')
	for _, ch := range s {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\a':
			b = append(b, '\\', 'a')
		case '\b':
			b = append(b, '\\', 'b')
		default:
			if ch >= 0x20 && ch <= 0x7e {
				b = append(b, ch)
			} else {
				const hex = "0123456789abcdef"
				b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
			}
		}
	}
	return append(b, '"')
}

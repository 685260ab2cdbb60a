package resp

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// parseAll feeds input in pieces of chunk bytes (all at once when chunk is 0) and returns every
// command and the first error.
func parseAll(input string, chunk int) ([][]string, error) {
	return feedAll(NewReader(bytes.NewReader(nil)), input, func() int { return chunk })
}

// feedAll feeds input to rd in pieces whose sizes next picks (0, or more than is left: the
// rest), draining Next after each piece. It returns every command, copied out of the buffer,
// and the first error. FuzzReader splits its input at fuzzed points through it.
func feedAll(rd *Reader, input string, next func() int) ([][]string, error) {
	var out [][]string
	data := []byte(input)
	for {
		n := len(data)
		if c := next(); c > 0 && n > c {
			n = c
		}
		rd.Feed(data[:n])
		data = data[n:]
		for {
			args, err := rd.Next()
			if err != nil {
				return out, err
			}
			if args == nil {
				break
			}
			cmd := make([]string, len(args))
			for i, a := range args {
				cmd[i] = string(a)
			}
			out = append(out, cmd)
		}
		if len(data) == 0 {
			return out, nil
		}
	}
}

func TestReaderCommands(t *testing.T) {
	cases := []struct {
		name, in string
		want     [][]string
		err      error
	}{
		{"multibulk", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", [][]string{{"GET", "k"}}, nil},
		{"pipeline", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"PING"}, {"ECHO", ""}}, nil},
		{"binary", "*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n", [][]string{{"ECHO", "a\r\nb"}}, nil},
		{"empty and negative arrays are skipped", "*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", [][]string{{"PING"}}, nil},
		{"inline", "SET k v\r\nGET k\n", [][]string{{"SET", "k", "v"}, {"GET", "k"}}, nil},
		{"inline blank lines", "\r\n\n  \r\nPING\r\n", [][]string{{"PING"}}, nil},
		{"inline quotes", `SET "a key" 'it\'s' "\x41\n"` + "\r\n", [][]string{{"SET", "a key", "it's", "A\n"}}, nil},
		{"inline quote mid token", `ECHO a"b c"` + "\r\n", [][]string{{"ECHO", "ab c"}}, nil},
		{"unbalanced", "SET \"abc\r\n", nil, ErrUnbalancedQuotes},
		{"quote not followed by space", "SET \"a\"b\r\n", nil, ErrUnbalancedQuotes},
		{"bad multibulk", "*x\r\n", nil, ErrInvalidMultibulk},
		{"plus multibulk", "*+1\r\n", nil, ErrInvalidMultibulk},
		{"bad bulk", "*1\r\n$-5\r\n", nil, ErrInvalidBulk},
		{"huge bulk", "*1\r\n$536870913\r\n", nil, ErrInvalidBulk},
		{"expected dollar", "*1\r\n+PING\r\n", nil, &ProtocolError{"Protocol error: expected '$', got '+'"}},
		{"too big inline", strings.Repeat("a", InlineMaxSize+1), nil, ErrTooBigInline},
		{"too big mbulk count", "*" + strings.Repeat("1", InlineMaxSize+1), nil, ErrTooBigMbulkCount},
		{"too big bulk count", "*1\r\n$" + strings.Repeat("1", InlineMaxSize+1), nil, ErrTooBigBulkCount},
	}
	for _, tc := range cases {
		for _, chunk := range []int{0, 1, 3, 7} {
			got, err := parseAll(tc.in, chunk)
			if tc.err != nil {
				var pe *ProtocolError
				if !errors.As(err, &pe) || pe.Msg != tc.err.Error() {
					t.Fatalf("%s (chunk %d): err %v, want %v", tc.name, chunk, err, tc.err)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s (chunk %d): got %q, %v; want %q", tc.name, chunk, got, err, tc.want)
			}
		}
	}
}

func TestReaderLargeBulkInPlace(t *testing.T) {
	val := strings.Repeat("v", 1<<20)
	in := "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048576\r\n" + val + "\r\n"
	got, err := parseAll(in, 4096)
	if err != nil || len(got) != 1 || got[0][2] != val {
		t.Fatalf("large bulk: %v", err)
	}
}

func TestUnauthenticatedLimits(t *testing.T) {
	rd := NewReader(nil)
	rd.Unauthenticated = true
	rd.Feed([]byte("*11\r\n"))
	if _, err := rd.Next(); err != ErrUnauthMultibulkLen {
		t.Fatalf("got %v", err)
	}
	rd = NewReader(nil)
	rd.Unauthenticated = true
	rd.Feed([]byte("*1\r\n$16385\r\n"))
	if _, err := rd.Next(); err != ErrUnauthBulkLen {
		t.Fatalf("got %v", err)
	}
}

func TestParseInt(t *testing.T) {
	ok := map[string]int64{"0": 0, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63, "10": 10}
	for s, want := range ok {
		if v, good := ParseInt([]byte(s)); !good || v != want {
			t.Errorf("ParseInt(%q) = %d, %v", s, v, good)
		}
	}
	for _, s := range []string{"", "+5", "010", "-0", " 1", "1 ", "1.0", "1e3", "0x10", "9223372036854775808", "-9223372036854775809", "-", "18446744073709551616"} {
		if _, good := ParseInt([]byte(s)); good {
			t.Errorf("ParseInt(%q) accepted", s)
		}
	}
}

package resp

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// fuzzMaxBulkLen replaces proto-max-bulk-len while fuzzing. The reader reserves room for a
// big bulk as soon as its header arrives (as Redis does), so with the 512 MB default every
// "$500000000" the fuzzer invents would allocate half a gigabyte on the next Feed. The limit
// check itself is the same code whatever the value.
const fuzzMaxBulkLen = 1 << 20

// readerSeeds is real traffic (the multibulk bytes are what redis-cli 7.0.15 sends, captured
// on the wire) and the malformed frames that have their own error paths.
var readerSeeds = []string{
	// redis-cli -p P ECHO "a b"
	"*2\r\n$4\r\nECHO\r\n$3\r\na b\r\n",
	// redis-cli -p P SET k v PX 1000
	"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nPX\r\n$4\r\n1000\r\n",
	// printf 'PING\r\nECHO "x y"\n' | redis-cli -p P: COMMAND DOCS first, then each line
	"*2\r\n$7\r\nCOMMAND\r\n$4\r\nDOCS\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$3\r\nx y\r\n",
	// redis-cli -3 -p P HELLO 3: the handshake, then the command
	"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n",
	// redis-cli -p P CLIENT SETNAME x
	"*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$1\r\nx\r\n",
	// a go-redis style pipeline
	"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$0\r\n\r\n",
	"*2\r\n$4\r\nECHO\r\n$4\r\na\r\nb\r\n",
	"*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n",
	// a bulk over bigArg, which the reader receives in place
	"*2\r\n$4\r\nECHO\r\n$40000\r\n" + strings.Repeat("v", 40000) + "\r\n*1\r\n$4\r\nPING\r\n",
	// inline, as typed into telnet or nc
	"PING\r\n",
	"SET k v\r\nGET k\n",
	"\r\n\n  \r\nPING\r\n",
	"SET \"a key\" 'it\\'s' \"\\x41\\n\"\r\n",
	"ECHO a\"b c\"\r\n",
	"ECHO \"\\xzz\" '\\n' \"tab\\there\"\t\r\n",
	"PING\r\n*1\r\n$4\r\nPING\r\nECHO inline\n",
	// malformed
	"SET \"abc\r\n",
	"SET 'abc\r\n",
	"SET \"a\"b\r\n",
	"ECHO \"\\x4",
	"*x\r\n",
	"*+1\r\n",
	"*01\r\n$4\r\nPING\r\n",
	"*1\r\n$04\r\nPING\r\n",
	"*1\r\n$-5\r\n",
	"*1\r\n$536870913\r\n",
	"*1\r\n+PING\r\n",
	"*2147483648\r\n",
	"*9223372036854775807\r\n",
	"*11\r\n",
	"*1\r\n$16385\r\n",
	"*1\r$4\rPING\r",
	"$4\r\nPING\r\n",
	// truncated
	"*3\r\n$3\r\nSET\r\n$1\r\nk",
	"*1\r\n$4\r\nPI",
	"*2\r\n$4\r\nECHO\r\n$5",
	"*",
	"\x00\xff\r\n",
}

// FuzzReader checks the request parser on arbitrary bytes: it never panics, and the commands
// and error it yields do not depend on how the bytes were split into reads (the fuzzer also
// picks the split points), for authenticated and unauthenticated clients alike. Run it with
//
//	go test -run='^$' -fuzz=FuzzReader -fuzztime=30s ./internal/resp/
func FuzzReader(f *testing.F) {
	for i, s := range readerSeeds {
		// Vary the split patterns: one byte at a time, small odd pieces, large pieces.
		cuts := [][]byte{{0}, {2, 6, 0, 16}, {255}, nil}[i%4]
		f.Add([]byte(s), cuts)
	}
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		in := string(data)
		whole, wholeErr := fuzzParse(in, false, nil)
		unauth, unauthErr := fuzzParse(in, true, nil)
		if len(in) > InlineMaxSize {
			// A request line past the inline limit is an error only when no terminator has
			// arrived yet, so where reads end decides it (in Redis too). Only "no panic" holds.
			_, _ = fuzzParse(in, false, cuts)
			_, _ = fuzzParse(in, true, cuts)
			return
		}

		split, splitErr := fuzzParse(in, false, cuts)
		sameParse(t, "whole vs split", whole, wholeErr, split, splitErr)
		unauthSplit, unauthSplitErr := fuzzParse(in, true, cuts)
		sameParse(t, "unauthenticated whole vs split", unauth, unauthErr, unauthSplit, unauthSplitErr)

		// The unauthenticated limits may stop parsing earlier, with their own errors, but they
		// never change a command.
		if errors.Is(unauthErr, ErrUnauthMultibulkLen) || errors.Is(unauthErr, ErrUnauthBulkLen) {
			if len(unauth) > len(whole) || (len(unauth) > 0 && !reflect.DeepEqual(unauth, whole[:len(unauth)])) {
				t.Fatalf("unauthenticated commands %s are not a prefix of %s", short(unauth), short(whole))
			}
		} else {
			sameParse(t, "authenticated vs unauthenticated", whole, wholeErr, unauth, unauthErr)
		}

		// Every parsed command survives a round trip through the multibulk encoding.
		var enc strings.Builder
		for _, cmd := range whole {
			fmt.Fprintf(&enc, "*%d\r\n", len(cmd))
			for _, a := range cmd {
				fmt.Fprintf(&enc, "$%d\r\n%s\r\n", len(a), a)
			}
		}
		again, err := fuzzParse(enc.String(), false, cuts)
		sameParse(t, "re-encoded", whole, nil, again, err)
	})
}

// fuzzParse parses input with a fresh reader, fed whole when cuts is nil and otherwise in
// pieces of 1 to 256 bytes chosen by cuts in turn (an empty cuts feeds one byte at a time).
func fuzzParse(input string, unauthenticated bool, cuts []byte) ([][]string, error) {
	rd := NewReader(nil)
	rd.MaxBulkLen = fuzzMaxBulkLen
	rd.Unauthenticated = unauthenticated
	i := 0
	next := func() int {
		if cuts == nil {
			return 0
		}
		if len(cuts) == 0 {
			return 1
		}
		n := int(cuts[i%len(cuts)]) + 1
		i++
		return n
	}
	return feedAll(rd, input, next)
}

func sameParse(t *testing.T, what string, cmds1 [][]string, err1 error, cmds2 [][]string, err2 error) {
	t.Helper()
	if !reflect.DeepEqual(cmds1, cmds2) {
		t.Fatalf("%s: commands differ:\n%s\n%s", what, short(cmds1), short(cmds2))
	}
	if errText(err1) != errText(err2) {
		t.Fatalf("%s: errors differ: %q vs %q (commands %s)", what, errText(err1), errText(err2), short(cmds1))
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// short formats commands for a failure message, cut so a 40 KB seed does not flood the log.
func short(cmds [][]string) string {
	s := fmt.Sprintf("%q", cmds)
	if len(s) > 300 {
		s = s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

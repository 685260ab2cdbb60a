package tests

// The command reference's examples (internal/command/examples.go, printed in docs/commands/)
// are redis-cli sessions; this file runs each of them against a fresh server and compares the
// replies, rendered as redis-cli prints them, with the documented text. A second test checks
// that renderer against a real redis-cli when one is installed.

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/hotkv/hotkv/internal/command"
	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/testutil"
)

// exampleReply sends one redis-cli command line and renders the reply as redis-cli would.
func exampleReply(t *testing.T, r *testutil.Raw, line string) string {
	t.Helper()
	args, ok := resp.SplitArgs(line)
	if !ok || len(args) == 0 {
		t.Fatalf("%q does not split into arguments (unbalanced quotes?)", line)
	}
	raw := r.Do(args...)
	got, rest, err := resp.FormatCLI([]byte(raw))
	if err != nil || len(rest) != 0 {
		t.Fatalf("%s: cannot render reply %q: %v (left over %q)", line, raw, err, rest)
	}
	return got
}

// TestDocExamples runs every command's examples in order on one RESP2 connection of a fresh
// server: FLUSHALL, then for each example DEBUG CLOCK SET to its clock (ExampleT0 for the
// first unless it sets one) and its steps.
func TestDocExamples(t *testing.T) {
	if command.ExampleT0 != testutil.T0 {
		t.Fatalf("command.ExampleT0 = %d, want the spec's t0 %d", command.ExampleT0, testutil.T0)
	}
	names := command.ExampleNames()
	if len(names) == 0 {
		t.Fatal("no examples")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := testutil.StartServer(t)
			r := s.Dial(t)
			if got := exampleReply(t, r, "FLUSHALL"); got != "OK" {
				t.Fatalf("FLUSHALL: %s", got)
			}
			for i, ex := range command.Examples(name) {
				clock := ex.Clock
				if clock == 0 && i == 0 {
					clock = command.ExampleT0
				}
				if clock != 0 {
					if got := exampleReply(t, r, "DEBUG CLOCK SET "+strconv.FormatInt(clock, 10)); got != "OK" {
						t.Fatalf("example %d: DEBUG CLOCK SET %d: %s", i+1, clock, got)
					}
				}
				for _, st := range ex.Steps {
					if got := exampleReply(t, r, st.Cmd); got != st.Reply {
						t.Errorf("example %d (clock %d): %s\n--- documented\n%s\n--- server\n%s", i+1, clock, st.Cmd, st.Reply, got)
					}
				}
			}
		})
	}
}

// TestFormatCLIMatchesRedisCLI compares resp.FormatCLI with what redis-cli (--no-raw, its
// terminal format) prints for the same commands on a real Redis, in RESP2 and RESP3. It is
// skipped when redis-server or redis-cli is missing, unless HOTKV_REQUIRE_REDIS=1.
func TestFormatCLIMatchesRedisCLI(t *testing.T) {
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		if os.Getenv("HOTKV_REQUIRE_REDIS") == "1" {
			t.Fatal("redis-cli is not on PATH and HOTKV_REQUIRE_REDIS=1")
		}
		t.Skip("redis-cli is not on PATH")
	}
	addr := startCompatRedis(t)
	host, port, _ := strings.Cut(addr, ":")
	setup := [][]string{
		{"SET", "k", "hello"},
		{"SET", "bin", "a\"b\\c\n\x01\xff\t\a\b\r é"},
		{"SET", "empty", ""},
		{"RPUSH", "list", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"},
		{"HSET", "h", "a", "1", "b", "2"},
		{"SADD", "s", "x"},
		{"ZADD", "z", "1.5", "m"},
		{"XADD", "st", "1-1", "f", "v", "g", "w"},
	}
	commands := [][]string{
		{"PING"}, {"GET", "k"}, {"GET", "bin"}, {"GET", "empty"}, {"GET", "nokey"}, {"STRLEN", "k"},
		{"GET"}, {"NOSUCHCOMMAND", "x"}, {"LRANGE", "list", "0", "-1"}, {"LRANGE", "list", "0", "8"},
		{"LRANGE", "nolist", "0", "-1"}, {"HGETALL", "h"}, {"HGETALL", "noh"}, {"SMEMBERS", "s"},
		{"ZRANGE", "z", "0", "-1", "WITHSCORES"}, {"ZSCORE", "z", "m"}, {"XRANGE", "st", "-", "+"},
		{"EVAL", "return {1,{2,{3,'x'}},{},{{}}}", "0"}, {"EVAL", "return {1,2,3,4,5,6,7,8,9,10,{1,2}}", "0"},
		{"SCAN", "0", "MATCH", "k"}, {"CONFIG", "GET", "maxmemory"}, {"BLPOP", "nolist", "0.01"},
		{"DEBUG", "PROTOCOL", "double"}, {"DEBUG", "PROTOCOL", "map"}, {"DEBUG", "PROTOCOL", "set"},
		{"DEBUG", "PROTOCOL", "true"}, {"DEBUG", "PROTOCOL", "false"}, {"DEBUG", "PROTOCOL", "null"},
		{"DEBUG", "PROTOCOL", "verbatim"}, {"DEBUG", "PROTOCOL", "array"},
	}
	r := testutil.DialAddr(t, addr)
	for _, c := range setup {
		r.Do(c...)
	}
	for _, proto := range []int{2, 3} {
		r := testutil.DialAddr(t, addr)
		r.Do("HELLO", strconv.Itoa(proto))
		for _, c := range commands {
			argv := append([]string{"-h", host, "-p", port, "--no-raw", "-" + strconv.Itoa(proto)}, c...)
			out, _ := exec.Command(cli, argv...).Output() // errors exit 1 and still print
			want := string(bytes.TrimSuffix(out, []byte("\n")))
			got, _, err := resp.FormatCLI([]byte(r.Do(c...)))
			if err != nil {
				t.Errorf("RESP%d %q: %v", proto, c, err)
				continue
			}
			if got != want {
				t.Errorf("RESP%d %q:\n--- redis-cli\n%s\n--- FormatCLI\n%s", proto, c, want, got)
			}
		}
	}
}

package resp

import "testing"

// The expected texts are redis-cli 7.0's output (--no-raw) for the same replies;
// tests/examples_test.go also compares FormatCLI with a real redis-cli when one is installed.
func TestFormatCLI(t *testing.T) {
	cases := []struct {
		name, reply, want string
	}{
		{"status", "+OK\r\n", "OK"},
		{"error", "-ERR wrong number of arguments for 'get' command\r\n", "(error) ERR wrong number of arguments for 'get' command"},
		{"integer", ":-1\r\n", "(integer) -1"},
		{"bulk", "$5\r\nhello\r\n", `"hello"`},
		{"empty bulk", "$0\r\n\r\n", `""`},
		{"escapes", "$12\r\na\"b\\c\n\x01\xff\t\a\b\r\r\n", `"a\"b\\c\n\x01\xff\t\a\b\r"`},
		{"nil bulk", "$-1\r\n", "(nil)"},
		{"nil array", "*-1\r\n", "(nil)"},
		{"empty array", "*0\r\n", "(empty array)"},
		{"flat array", "*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n", "1) \"maxmemory\"\n2) \"0\""},
		{"ten elements", "*10\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n:7\r\n:8\r\n:9\r\n:10\r\n",
			" 1) (integer) 1\n 2) (integer) 2\n 3) (integer) 3\n 4) (integer) 4\n 5) (integer) 5\n" +
				" 6) (integer) 6\n 7) (integer) 7\n 8) (integer) 8\n 9) (integer) 9\n10) (integer) 10"},
		{"scan", "*2\r\n$1\r\n0\r\n*3\r\n$1\r\nq\r\n$1\r\nn\r\n$1\r\nk\r\n", "1) \"0\"\n2) 1) \"q\"\n   2) \"n\"\n   3) \"k\""},
		{"deep", "*3\r\n:1\r\n*2\r\n:2\r\n*2\r\n:3\r\n$1\r\nx\r\n*0\r\n",
			"1) (integer) 1\n2) 1) (integer) 2\n   2) 1) (integer) 3\n      2) \"x\"\n3) (empty array)"},
		{"xrange", "*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n", "1) 1) \"1-1\"\n   2) 1) \"f\"\n      2) \"v\""},
		{"map", "%3\r\n:0\r\n#f\r\n:1\r\n#t\r\n:2\r\n#f\r\n", "1# (integer) 0 => (false)\n2# (integer) 1 => (true)\n3# (integer) 2 => (false)"},
		{"empty map", "%0\r\n", "(empty hash)"},
		{"set", "~3\r\n:0\r\n:1\r\n:2\r\n", "1~ (integer) 0\n2~ (integer) 1\n3~ (integer) 2"},
		{"double", ",3.141\r\n", "(double) 3.141"},
		{"null", "_\r\n", "(nil)"},
		{"verbatim", "=29\r\ntxt:This is a verbatim\nstring\r\n", "This is a verbatim\nstring"},
		{"blob error", "!9\r\nERR oops!\r\n", "(error) ERR oops!"},
		{"big number", "(123\r\n", "(big number) 123"},
		{"map of arrays", "%1\r\n$1\r\nk\r\n*2\r\n:1\r\n:2\r\n", "1# \"k\" => 1) (integer) 1\n   2) (integer) 2"},
	}
	for _, c := range cases {
		got, rest, err := FormatCLI([]byte(c.reply + "+next\r\n"))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if string(rest) != "+next\r\n" {
			t.Errorf("%s: rest %q", c.name, rest)
		}
	}
	for _, bad := range []string{"", "+OK", "$5\r\nhel\r\n", "*2\r\n:1\r\n", "|1\r\n+a\r\n+b\r\n+c\r\n", "?x\r\n", ":x\r\n", "$5\r\nhelloXX"} {
		if got, _, err := FormatCLI([]byte(bad)); err == nil {
			t.Errorf("FormatCLI(%q) = %q, want an error", bad, got)
		}
	}
}

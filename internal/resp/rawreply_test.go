package resp

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReadRawReply(t *testing.T) {
	replies := []string{
		"+OK\r\n",
		"+\r\n",
		"-MOVED 3999 127.0.0.1:6381\r\n",
		":-42\r\n",
		"$5\r\nhello\r\n",
		"$0\r\n\r\n",
		"$-1\r\n",
		"$4\r\na\r\nb\r\n", // CRLF inside a bulk is data
		"*-1\r\n",
		"*0\r\n",
		"*5\r\n:0\r\n:10\r\n:9\r\n:-1\r\n:6000\r\n",             // GCRA.LIMIT
		"*2\r\n*2\r\n$1\r\na\r\n$-1\r\n-ERR inner\r\n",          // nested, with a null and an error
		"%2\r\n+a\r\n:1\r\n+b\r\n*1\r\n_\r\n",                   // RESP3 map
		"~1\r\n#t\r\n", ",1.5\r\n", "(12345678901234567890\r\n", // set, boolean, double, big number
		"=8\r\ntxt:abcd\r\n", "!5\r\nERR x\r\n", ">2\r\n+a\r\n+b\r\n", // verbatim, blob error, push
		"|1\r\n+key\r\n+val\r\n:7\r\n", // an attribute and the reply it describes
	}
	// All of them back to back through a small buffer, so lines and bulks span refills.
	br := bufio.NewReaderSize(strings.NewReader(strings.Join(replies, "")), 16)
	var buf []byte
	for _, want := range replies {
		var err error
		buf, err = ReadRawReply(br, buf[:0])
		if err != nil || string(buf) != want {
			t.Fatalf("read %q, %v; want %q", buf, err, want)
		}
	}
	if _, err := ReadRawReply(br, nil); err != io.EOF {
		t.Fatalf("after the last reply: %v, want EOF", err)
	}
	// Appends to what dst holds.
	got, err := ReadRawReply(bufio.NewReader(strings.NewReader(":1\r\n")), []byte("x"))
	if err != nil || string(got) != "x:1\r\n" {
		t.Fatalf("append: %q %v", got, err)
	}
}

func TestReadRawReplyMalformed(t *testing.T) {
	for _, in := range []string{
		"?x\r\n",         // unknown type
		"+OK\n",          // no CR
		"$3\r\nabcd\r\n", // bulk longer than its length
		"*x\r\n",         // bad count
		"$-2\r\n",        // negative length other than -1
		strings.Repeat("*1\r\n", maxReplyDepth+2) + ":1\r\n",
	} {
		_, err := ReadRawReply(bufio.NewReader(strings.NewReader(in)), nil)
		if !errors.Is(err, ErrBadReply) {
			t.Errorf("%q: %v, want ErrBadReply", in, err)
		}
	}
	for _, in := range []string{"$5\r\nab", "*2\r\n:1\r\n", "+OK"} {
		if _, err := ReadRawReply(bufio.NewReader(strings.NewReader(in)), nil); err == nil || errors.Is(err, ErrBadReply) {
			t.Errorf("truncated %q: %v, want an I/O error", in, err)
		}
	}
}

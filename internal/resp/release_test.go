package resp

import (
	"strings"
	"testing"
)

// An idle connection's released buffer costs nothing until a request arrives, and the
// request then parses as usual.
func TestReleaseThenFill(t *testing.T) {
	rd := NewReader(strings.NewReader("*1\r\n$4\r\nPING\r\n"))
	rd.Feed([]byte("*1\r\n$4\r\nPING\r\n"))
	if args, err := rd.Next(); err != nil || len(args) != 1 {
		t.Fatalf("first command: %q %v", args, err)
	}
	rd.Release()
	if rd.Cap() != 0 {
		t.Fatalf("released reader holds %d bytes", rd.Cap())
	}
	if err := rd.Fill(); err != nil || rd.Buffered() != 1 {
		t.Fatalf("first fill after release: %v, %d buffered", err, rd.Buffered())
	}
	for rd.Buffered() < len("*1\r\n$4\r\nPING\r\n") {
		if err := rd.Fill(); err != nil {
			t.Fatal(err)
		}
	}
	if args, err := rd.Next(); err != nil || len(args) != 1 || string(args[0]) != "PING" {
		t.Fatalf("after release: %q %v", args, err)
	}
	// A partial command is never released.
	rd.Feed([]byte("*2\r\n$3\r\nGET"))
	if args, _ := rd.Next(); args != nil {
		t.Fatal("partial command parsed")
	}
	rd.Release()
	if rd.Cap() == 0 {
		t.Fatal("released a buffer holding a partial command")
	}
}

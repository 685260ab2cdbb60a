package resp

import (
	"math"
	"testing"
)

func TestWriterEncodings(t *testing.T) {
	cases := []struct {
		name       string
		write      func(w *Writer)
		resp2, rs3 string
	}{
		{"simple", func(w *Writer) { w.Simple("OK") }, "+OK\r\n", "+OK\r\n"},
		{"error with code", func(w *Writer) { w.Error("WRONGTYPE Operation") }, "-WRONGTYPE Operation\r\n", "-WRONGTYPE Operation\r\n"},
		{"error gets ERR", func(w *Writer) { w.Error("Protocol error: x") }, "-ERR Protocol error: x\r\n", "-ERR Protocol error: x\r\n"},
		{"error newlines", func(w *Writer) { w.Error("ERR a\r\nb") }, "-ERR a  b\r\n", "-ERR a  b\r\n"},
		{"int", func(w *Writer) { w.Int(-42) }, ":-42\r\n", ":-42\r\n"},
		{"bulk", func(w *Writer) { w.Bulk([]byte("a\r\nb")) }, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"bulk int", func(w *Writer) { w.BulkInt(math.MinInt64) }, "$20\r\n-9223372036854775808\r\n", "$20\r\n-9223372036854775808\r\n"},
		{"null", func(w *Writer) { w.Null() }, "$-1\r\n", "_\r\n"},
		{"null array", func(w *Writer) { w.NullArray() }, "*-1\r\n", "_\r\n"},
		{"map", func(w *Writer) { w.Map(1); w.BulkString("k"); w.Int(1) }, "*2\r\n$1\r\nk\r\n:1\r\n", "%1\r\n$1\r\nk\r\n:1\r\n"},
		{"set", func(w *Writer) { w.Set(0) }, "*0\r\n", "~0\r\n"},
		{"push", func(w *Writer) { w.Push(1); w.BulkString("x") }, "*1\r\n$1\r\nx\r\n", ">1\r\n$1\r\nx\r\n"},
		{"bool", func(w *Writer) { w.Bool(true); w.Bool(false) }, ":1\r\n:0\r\n", "#t\r\n#f\r\n"},
		{"double", func(w *Writer) { w.Double(1.5) }, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"double inf", func(w *Writer) { w.Double(math.Inf(-1)) }, "$4\r\n-inf\r\n", ",-inf\r\n"},
		{"double 0.1", func(w *Writer) { w.Double(0.1) }, "$19\r\n0.10000000000000001\r\n", ",0.10000000000000001\r\n"},
		{"big number", func(w *Writer) { w.BigNumber("12345678901234567890") }, "$20\r\n12345678901234567890\r\n", "(12345678901234567890\r\n"},
		{"verbatim", func(w *Writer) { w.Verbatim("txt", "hi") }, "$2\r\nhi\r\n", "=6\r\ntxt:hi\r\n"},
	}
	for _, tc := range cases {
		for _, proto := range []int{2, 3} {
			w := &Writer{Proto: proto}
			tc.write(w)
			want := tc.resp2
			if proto == 3 {
				want = tc.rs3
			}
			if string(w.Buf) != want {
				t.Errorf("%s RESP%d: got %q want %q", tc.name, proto, w.Buf, want)
			}
		}
	}
}

func BenchmarkReaderPipelinedGCRA(b *testing.B) {
	frame := []byte("*5\r\n$10\r\nGCRA.LIMIT\r\n$16\r\nrl:user:12345678\r\n$5\r\n60000\r\n$2\r\n10\r\n$1\r\n1\r\n")
	var batch []byte
	for i := 0; i < 16; i++ {
		batch = append(batch, frame...)
	}
	rd := NewReader(nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		rd.Feed(batch)
		for {
			args, err := rd.Next()
			if err != nil {
				b.Fatal(err)
			}
			if args == nil {
				break
			}
		}
	}
}

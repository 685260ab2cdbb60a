package server

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/hotkv/hotkv/internal/persist"
	"github.com/hotkv/hotkv/internal/store"
)

// frameBuf encodes effects as they are appended, so the log keeps nothing of an effect's
// arguments (store.Journal's contract) and a logged write allocates nothing; the frames it
// makes read back as the same effects, grouped by time.
func TestFrameBuf(t *testing.T) {
	var f frameBuf
	args := [][]byte{[]byte("SET"), []byte("k"), []byte("v0")}
	var want []store.Effect
	for i := range 50 {
		args[2] = fmt.Appendf(args[2][:0], "v%d", i)
		e := store.Effect{DB: i % 3, Args: args, Time: int64(1000 + i/20)}
		f.add(e)
		want = append(want, store.CloneEffect(e))
	}
	got := f.take(nil)
	got.close()
	if f.open || len(f.buf) != 0 {
		t.Fatal("take did not start afresh")
	}
	file := append(persist.AppendLogHeader(nil, 1), got.buf...)
	rd, err := persist.NewLogReader(bytes.NewReader(file), int64(len(file)), "test", true)
	if err != nil {
		t.Fatal(err)
	}
	var read []store.Effect
	frames := 0
	for {
		b, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		frames++
		read = append(read, b.Effects...)
	}
	if frames != 3 {
		t.Errorf("%d frames, want 3 (one per distinct time)", frames)
	}
	if len(read) != len(want) {
		t.Fatalf("read %d effects, want %d", len(read), len(want))
	}
	for i := range want {
		if read[i].DB != want[i].DB || read[i].Time != want[i].Time || !bytes.Equal(bytes.Join(read[i].Args, []byte(" ")), bytes.Join(want[i].Args, []byte(" "))) {
			t.Fatalf("effect %d: read %+v, want %+v", i, read[i], want[i])
		}
	}

	f.buf = make([]byte, 0, 1<<20)
	e := store.Effect{DB: 0, Args: args, Time: 5}
	if n := testing.AllocsPerRun(1000, func() { f.add(e) }); n != 0 {
		t.Errorf("add allocates %.1f times per effect", n)
	}
}

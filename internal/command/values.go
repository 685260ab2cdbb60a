package command

import (
	"math"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

// StringValue builds a string value from client bytes. A canonical integer (what Redis's
// string2ll accepts, at most 20 bytes) is kept as an integer, like Redis's "int" encoding, so
// INCR and GCRA state never allocate; anything else is copied out of the read buffer.
func StringValue(b []byte) store.Value {
	if n, ok := resp.ParseInt(b); ok {
		return store.Value{Kind: store.KindString, IsInt: true, Int: n}
	}
	return store.BytesValue(append([]byte(nil), b...))
}

// overwriteString is StringValue for a write over e, the key's live entry (nil if none). A raw
// string whose buffer fits the new value is reused in place, so overwriting a value with one
// of about the same size (counters, timestamps, tokens, session blobs) allocates nothing. The
// buffer is the entry's alone (COPY clones, APPEND already writes in place), and every reader
// copies out under the shard lock, so no one else can see it change. A buffer more than twice
// the new size is not kept for it.
func overwriteString(e *store.Entry, b []byte) store.Value {
	if n, ok := resp.ParseInt(b); ok {
		return IntValue(n)
	}
	if e != nil {
		if old := e.Val.Bytes(); old != nil && cap(old) >= len(b) && cap(old) <= 2*len(b)+32 {
			old = old[:len(b)]
			copy(old, b)
			return store.BytesValue(old)
		}
	}
	return store.BytesValue(append([]byte(nil), b...))
}

// IntValue is an integer-encoded string value.
func IntValue(n int64) store.Value {
	return store.Value{Kind: store.KindString, IsInt: true, Int: n}
}

// StringBytes returns a string entry's bytes, formatting an integer into tmp. The result
// aliases the store or tmp: use it before the shard is unlocked and before tmp is reused.
func StringBytes(v *store.Value, tmp []byte) []byte {
	if v.IsInt {
		return appendInt(tmp[:0], v.Int)
	}
	return v.Bytes()
}

// StringLen is the length of a string value without formatting it.
func StringLen(v *store.Value) int {
	if v.IsInt {
		return intLen(v.Int)
	}
	return len(v.Bytes())
}

func intLen(n int64) int {
	l := 1
	u := uint64(n)
	if n < 0 {
		l++
		u = uint64(-n)
		if n == math.MinInt64 {
			return 20
		}
	}
	for u >= 10 {
		u /= 10
		l++
	}
	return l
}

func appendInt(dst []byte, n int64) []byte {
	var tmp [20]byte
	i := len(tmp)
	u := uint64(n)
	if n < 0 {
		u = uint64(-n)
	}
	for {
		i--
		tmp[i] = byte('0' + u%10)
		u /= 10
		if u == 0 {
			break
		}
	}
	if n < 0 {
		i--
		tmp[i] = '-'
	}
	return append(dst, tmp[i:]...)
}

// ReplyString writes a string value as a bulk reply without allocating.
func ReplyString(w *resp.Writer, v *store.Value) {
	if v.IsInt {
		w.BulkInt(v.Int)
		return
	}
	w.Bulk(v.Bytes())
}

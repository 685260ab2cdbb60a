package resp

import (
	"math"
	"strconv"
)

// Writer appends replies to a byte buffer in the connection's protocol. Aggregate helpers
// degrade exactly as Redis's addReply* family does in RESP2 (maps become flat arrays, doubles
// become bulk strings, booleans become integers), so handlers are written once for both.
type Writer struct {
	Buf []byte
	// Proto is 2 or 3, set by HELLO.
	Proto int
}

// NewWriter returns a RESP2 writer.
func NewWriter() *Writer { return &Writer{Proto: 2} }

// Reset empties the buffer, keeping its memory.
func (w *Writer) Reset() { w.Buf = w.Buf[:0] }

// Len reports the buffered reply bytes.
func (w *Writer) Len() int { return len(w.Buf) }

func (w *Writer) header(prefix byte, n int64) {
	w.Buf = append(w.Buf, prefix)
	w.Buf = strconv.AppendInt(w.Buf, n, 10)
	w.Buf = append(w.Buf, '\r', '\n')
}

// Simple writes a status reply such as +OK. s must not contain CR or LF.
func (w *Writer) Simple(s string) {
	w.Buf = append(w.Buf, '+')
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// OK writes +OK.
func (w *Writer) OK() { w.Buf = append(w.Buf, "+OK\r\n"...) }

// Error writes an error reply. msg carries its own code ("ERR ...", "WRONGTYPE ..."); a
// message without one gets "ERR " as Redis's addReplyError does. Newlines are replaced by
// spaces so a reply can never break the framing.
func (w *Writer) Error(msg string) {
	w.Buf = append(w.Buf, '-')
	if len(msg) == 0 || msg[0] == '-' {
		if len(msg) > 0 {
			msg = msg[1:]
		}
	} else if !hasCode(msg) {
		w.Buf = append(w.Buf, "ERR "...)
	}
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		w.Buf = append(w.Buf, c)
	}
	w.Buf = append(w.Buf, '\r', '\n')
}

// IsErrorCode reports whether word is an error code: one or more upper-case letters, as
// "ERR", "WRONGTYPE" or "NOPROTO". INFO errorstats groups errors by it.
func IsErrorCode(word string) bool {
	if word == "" {
		return false
	}
	for i := 0; i < len(word); i++ {
		if word[i] < 'A' || word[i] > 'Z' {
			return false
		}
	}
	return true
}

// hasCode reports whether msg starts with an upper-case error code word, like "ERR" or
// "WRONGTYPE".
func hasCode(msg string) bool {
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == ' ' {
			return i > 0
		}
		if c < 'A' || c > 'Z' {
			return false
		}
	}
	return false
}

// Int writes an integer reply.
func (w *Writer) Int(n int64) { w.header(':', n) }

// Bulk writes a bulk string.
func (w *Writer) Bulk(b []byte) {
	w.header('$', int64(len(b)))
	w.Buf = append(w.Buf, b...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkString writes a bulk string from a Go string.
func (w *Writer) BulkString(s string) {
	w.header('$', int64(len(s)))
	w.Buf = append(w.Buf, s...)
	w.Buf = append(w.Buf, '\r', '\n')
}

// BulkInt writes n as a decimal bulk string, as GET does for an integer-encoded value.
func (w *Writer) BulkInt(n int64) {
	var tmp [20]byte
	b := strconv.AppendInt(tmp[:0], n, 10)
	w.Bulk(b)
}

// Null writes the null bulk string (RESP2 $-1, RESP3 _).
func (w *Writer) Null() {
	if w.Proto >= 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
		return
	}
	w.Buf = append(w.Buf, "$-1\r\n"...)
}

// NullArray writes the null array (RESP2 *-1, RESP3 _), as EXEC after a failed WATCH does.
func (w *Writer) NullArray() {
	if w.Proto >= 3 {
		w.Buf = append(w.Buf, "_\r\n"...)
		return
	}
	w.Buf = append(w.Buf, "*-1\r\n"...)
}

// Array starts an array of n elements.
func (w *Writer) Array(n int) { w.header('*', int64(n)) }

// Map starts a map of n key/value pairs (RESP2: an array of 2n elements).
func (w *Writer) Map(n int) {
	if w.Proto >= 3 {
		w.header('%', int64(n))
		return
	}
	w.header('*', int64(2*n))
}

// Set starts a set of n elements (RESP2: an array).
func (w *Writer) Set(n int) {
	if w.Proto >= 3 {
		w.header('~', int64(n))
		return
	}
	w.header('*', int64(n))
}

// Push starts a push message of n elements (RESP2: an array).
func (w *Writer) Push(n int) {
	if w.Proto >= 3 {
		w.header('>', int64(n))
		return
	}
	w.header('*', int64(n))
}

// Attribute is not emitted by HotKV; RESP3 attributes are optional and no client needs them.

// Bool writes a boolean (RESP2: :1 or :0).
func (w *Writer) Bool(v bool) {
	if w.Proto >= 3 {
		if v {
			w.Buf = append(w.Buf, "#t\r\n"...)
		} else {
			w.Buf = append(w.Buf, "#f\r\n"...)
		}
		return
	}
	if v {
		w.Buf = append(w.Buf, ":1\r\n"...)
	} else {
		w.Buf = append(w.Buf, ":0\r\n"...)
	}
}

// Double writes a double (RESP2: a bulk string), formatted as Redis does: integers without a
// fraction, "inf"/"-inf", and up to 17 significant digits otherwise.
func (w *Writer) Double(f float64) {
	var tmp [32]byte
	b := AppendDouble(tmp[:0], f)
	if w.Proto >= 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, b...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.Bulk(b)
}

// DoubleText writes a double already formatted by the caller (RESP3 ",text", RESP2 a bulk
// string), for replies whose spec fixes the spelling, such as RATELIMIT.STATS rates.
func (w *Writer) DoubleText(text string) {
	if w.Proto >= 3 {
		w.Buf = append(w.Buf, ',')
		w.Buf = append(w.Buf, text...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.BulkString(text)
}

// AppendDouble formats f like Redis's RESP3 double replies (%.17g, with inf and nan spelled
// in lower case).
func AppendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case math.IsNaN(f):
		return append(dst, "nan"...)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}

// BigNumber writes a big number given as its decimal digits (RESP2: a bulk string).
func (w *Writer) BigNumber(digits string) {
	if w.Proto >= 3 {
		w.Buf = append(w.Buf, '(')
		w.Buf = append(w.Buf, digits...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.BulkString(digits)
}

// Verbatim writes a verbatim string with a three-letter format such as "txt" (RESP2: a bulk
// string of the text alone), as INFO and CLIENT LIST do.
func (w *Writer) Verbatim(format, text string) {
	if w.Proto >= 3 {
		w.header('=', int64(len(text)+4))
		w.Buf = append(w.Buf, format...)
		w.Buf = append(w.Buf, ':')
		w.Buf = append(w.Buf, text...)
		w.Buf = append(w.Buf, '\r', '\n')
		return
	}
	w.BulkString(text)
}

// Raw appends pre-encoded RESP, such as a reply recorded earlier.
func (w *Writer) Raw(b []byte) { w.Buf = append(w.Buf, b...) }

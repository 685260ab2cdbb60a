// Package resp is HotKV's wire codec: a zero-copy reader for RESP multibulk and inline
// commands, and a protocol-aware reply writer for RESP2 and RESP3.
//
// The reader is the hottest code in the server, so it allocates nothing per command: argument
// slices point into the connection's read buffer and stay valid until the next Fill.
package resp

import "io"

// Limits that Redis applies to requests (src/server.h). They are exported so the server and
// tests agree on them.
const (
	// InlineMaxSize is the longest inline command or count line accepted (PROTO_INLINE_MAX_SIZE).
	InlineMaxSize = 64 * 1024
	// MaxMultibulkLen is the largest element count accepted in a request (Redis 7: INT_MAX).
	MaxMultibulkLen = 1<<31 - 1
	// DefaultMaxBulkLen is proto-max-bulk-len's default, 512 MB.
	DefaultMaxBulkLen = 512 * 1024 * 1024
	// unauthMaxMultibulk and unauthMaxBulk bound requests from clients that still have to
	// authenticate, so an anonymous peer cannot make the server buffer large requests.
	unauthMaxMultibulk = 10
	unauthMaxBulk      = 16384
	// bigArg is the bulk size above which the buffer is grown towards the whole argument, so
	// a large value is read in place instead of being copied on every refill.
	bigArg = 32 * 1024

	// minBufSize is the buffer a connection starts reading into. Redis 7.0 reads 16 KB at a
	// time (PROTO_IOBUF_LEN), so each client that sent anything in the last 2 seconds holds
	// 16 KB: 160 MB for 10,000 rate-limit clients sending ten requests a second, all of it
	// counted against maxmemory. 4 KB holds any ordinary request; the buffer grows for a
	// larger one and shrinks back after it (makeRoom, Fill), and an idle connection holds none
	// (Release). The cost: querybuf's first test, which checks Redis's 16 KB, fails.
	minBufSize = 4 * 1024
	maxIdleBuf = 64 * 1024
)

// ProtocolError is a malformed request. Its text is Redis's reply without the "ERR " prefix;
// the server replies with it and closes the connection, as Redis does.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return e.Msg }

func protoErr(msg string) error { return &ProtocolError{Msg: msg} }

// Errors a Reader can return besides io errors.
var (
	ErrInvalidMultibulk   = protoErr("Protocol error: invalid multibulk length")
	ErrInvalidBulk        = protoErr("Protocol error: invalid bulk length")
	ErrUnbalancedQuotes   = protoErr("Protocol error: unbalanced quotes in request")
	ErrTooBigInline       = protoErr("Protocol error: too big inline request")
	ErrTooBigMbulkCount   = protoErr("Protocol error: too big mbulk count string")
	ErrTooBigBulkCount    = protoErr("Protocol error: too big bulk count string")
	ErrUnauthMultibulkLen = protoErr("Protocol error: unauthenticated multibulk length")
	ErrUnauthBulkLen      = protoErr("Protocol error: unauthenticated bulk length")
)

// span is an argument's position in the buffer. Positions, not slices, are kept while a
// command is incomplete because the buffer may move when it grows.
type span struct{ off, n int }

// Reader parses commands from a byte stream. It keeps the state of a partly received
// multibulk command, so a huge command arriving in many reads is parsed once, not once per read.
type Reader struct {
	src io.Reader
	buf []byte
	r   int // start of unparsed data
	w   int // end of data

	// MaxBulkLen is proto-max-bulk-len.
	MaxBulkLen int64
	// Unauthenticated applies Redis's small request limits for clients that have not yet
	// authenticated.
	Unauthenticated bool

	// State of the command being parsed. pos is where parsing resumes.
	inCmd   bool
	pending int // elements still to read
	bulk    int // length of the bulk whose header was read, or -1
	pos     int
	spans   []span
	args    [][]byte

	// A line search that found no terminator remembers how far it got, so a peer dripping a
	// long line one byte at a time costs linear, not quadratic, work.
	scanFrom, scanTo int
	// released is set by Release: the next Fill reads without a buffer.
	released bool
}

// NewReader returns a Reader over src with Redis's default limits.
func NewReader(src io.Reader) *Reader {
	return &Reader{src: src, MaxBulkLen: DefaultMaxBulkLen, bulk: -1, scanFrom: -1, scanTo: -1}
}

// Buffered reports how many unparsed bytes are held.
func (rd *Reader) Buffered() int { return rd.w - rd.r }

// Cap is the size of the buffer held (CLIENT LIST's qbuf plus qbuf-free).
func (rd *Reader) Cap() int { return len(rd.buf) }

// Release lets an empty buffer go, for an idle connection; the next Fill makes a new one. It
// does nothing while data or a partial command is held.
func (rd *Reader) Release() {
	if rd.r == rd.w && !rd.inCmd {
		rd.buf, rd.r, rd.w = nil, 0, 0
		rd.scanFrom, rd.scanTo = -1, -1
		rd.released = true
	}
}

// Fill reads once from the source, making room first. Argument slices returned earlier become
// invalid. It returns the source's error, if any.
func (rd *Reader) Fill() error {
	if rd.released {
		// Released while idle: wait for the next request without holding a buffer, and
		// make one only once a byte arrived.
		var one [1]byte
		n, err := rd.src.Read(one[:])
		if n == 0 {
			if err == nil {
				err = io.ErrNoProgress
			}
			return err
		}
		rd.released = false
		rd.makeRoom(true)
		rd.buf[rd.w] = one[0]
		rd.w++
		return nil
	}
	rd.makeRoom(false)
	n, err := rd.src.Read(rd.buf[rd.w:])
	rd.w += n
	if n > 0 {
		if cap(rd.buf) > maxIdleBuf && rd.r == 0 && !rd.inCmd && rd.w <= minBufSize {
			// The large buffer of an earlier burst is kept while the client waits (CLIENT LIST
			// shows it, as Redis's until its cron shrinks it; Release frees it when idle) and
			// given up once a request that fits a small one has arrived.
			small := make([]byte, minBufSize)
			rd.w = copy(small, rd.buf[:rd.w])
			rd.buf = small
		}
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// Feed appends p to the buffer as if it had been read; for tests and fuzzing.
func (rd *Reader) Feed(p []byte) {
	rd.makeRoom(true)
	for len(p) > 0 {
		if rd.w == len(rd.buf) {
			rd.grow(len(p))
		}
		n := copy(rd.buf[rd.w:], p)
		rd.w += n
		p = p[n:]
	}
}

// makeRoom compacts the buffer and grows it when it is full, or when a big bulk argument is
// expected so that it can be received in place.
func (rd *Reader) makeRoom(shrink bool) {
	if rd.r == rd.w && !rd.inCmd {
		rd.r, rd.w = 0, 0
		rd.scanFrom, rd.scanTo = -1, -1
		if shrink && cap(rd.buf) > maxIdleBuf {
			rd.buf = nil // let a burst's large buffer go once the burst is over
		}
	}
	if rd.buf == nil {
		rd.buf = make([]byte, minBufSize)
	}
	if rd.r > 0 && (rd.w == len(rd.buf) || rd.r > len(rd.buf)/2) {
		n := copy(rd.buf, rd.buf[rd.r:rd.w])
		rd.pos -= rd.r
		rd.scanFrom -= rd.r
		rd.scanTo -= rd.r
		for i := range rd.spans {
			rd.spans[i].off -= rd.r
		}
		rd.w = n
		rd.r = 0
	}
	need := 1
	if rd.inCmd && rd.bulk >= bigArg {
		// Room for the whole argument, so it is received in place; but grown with what
		// arrives, not with what the header announces: a peer announcing 512 MB and sending
		// nothing must not cost 512 MB (Redis allocates it up front). Doubling keeps the
		// copies of a real large argument amortized O(n).
		need = min(rd.pos+rd.bulk+2-rd.w, max(len(rd.buf), bigArg))
	}
	if len(rd.buf)-rd.w < need {
		rd.grow(need)
	}
}

func (rd *Reader) grow(need int) {
	size := 2 * len(rd.buf)
	if size < rd.w+need {
		size = rd.w + need
	}
	nb := make([]byte, size)
	copy(nb, rd.buf[:rd.w])
	rd.buf = nb
}

// Next returns the next complete command's arguments, or nil when more data is needed. Empty
// commands (blank inline lines, "*0", "*-1") are skipped. A *ProtocolError means the stream is
// unusable; the caller replies with it and closes the connection.
func (rd *Reader) Next() ([][]byte, error) {
	for {
		if !rd.inCmd {
			if rd.r == rd.w {
				return nil, nil
			}
			if rd.buf[rd.r] != '*' {
				args, more, err := rd.inline()
				if err != nil || more || len(args) > 0 {
					return args, err
				}
				continue // a blank line
			}
			cr := rd.headerEnd(rd.r)
			if cr < 0 {
				if rd.w-rd.r > InlineMaxSize {
					return nil, ErrTooBigMbulkCount
				}
				return nil, nil
			}
			n, ok := parseInt(rd.buf[rd.r+1 : cr])
			if !ok || n > MaxMultibulkLen {
				return nil, ErrInvalidMultibulk
			}
			if n > unauthMaxMultibulk && rd.Unauthenticated {
				return nil, ErrUnauthMultibulkLen
			}
			rd.r = cr + 2
			if n <= 0 {
				continue
			}
			rd.inCmd = true
			rd.pending = int(n)
			rd.pos = rd.r
			rd.bulk = -1
			rd.spans = rd.spans[:0]
		}
		done, err := rd.parseElements()
		if err != nil || !done {
			return nil, err
		}
		rd.args = rd.args[:0]
		for _, s := range rd.spans {
			rd.args = append(rd.args, rd.buf[s.off:s.off+s.n:s.off+s.n])
		}
		return rd.args, nil
	}
}

// parseElements reads as many elements of the current multibulk as are buffered and reports
// whether the command is complete.
func (rd *Reader) parseElements() (bool, error) {
	for rd.pending > 0 {
		if rd.bulk < 0 {
			if rd.pos == rd.w {
				return false, nil
			}
			if rd.buf[rd.pos] != '$' {
				return false, protoErr("Protocol error: expected '$', got '" + string(rd.buf[rd.pos:rd.pos+1]) + "'")
			}
			cr := rd.headerEnd(rd.pos)
			if cr < 0 {
				if rd.w-rd.pos > InlineMaxSize {
					return false, ErrTooBigBulkCount
				}
				return false, nil
			}
			n, ok := parseInt(rd.buf[rd.pos+1 : cr])
			if !ok || n < 0 || n > rd.MaxBulkLen {
				return false, ErrInvalidBulk
			}
			if n > unauthMaxBulk && rd.Unauthenticated {
				return false, ErrUnauthBulkLen
			}
			rd.pos = cr + 2
			rd.bulk = int(n)
		}
		// Like Redis, the two bytes after the payload are skipped without being checked.
		if rd.w-rd.pos < rd.bulk+2 {
			return false, nil
		}
		rd.spans = append(rd.spans, span{rd.pos, rd.bulk})
		rd.pos += rd.bulk + 2
		rd.bulk = -1
		rd.pending--
	}
	rd.inCmd = false
	rd.r = rd.pos
	return true, nil
}

// headerEnd finds the '\r' that ends a "*n" or "$n" header starting at from, requiring one more
// byte after it (Redis skips that byte, assumed '\n'). It returns -1 when the header is
// incomplete.
func (rd *Reader) headerEnd(from int) int {
	i := rd.find(from, '\r')
	if i < 0 || i+1 >= rd.w {
		return -1
	}
	return i
}

// find returns the index of the first c at or after from, or -1, resuming an earlier failed
// search that started at the same place.
func (rd *Reader) find(from int, c byte) int {
	i := from
	if rd.scanFrom == from && rd.scanTo > from {
		i = rd.scanTo
	}
	for ; i < rd.w; i++ {
		if rd.buf[i] == c {
			rd.scanFrom, rd.scanTo = -1, -1
			return i
		}
	}
	rd.scanFrom, rd.scanTo = from, rd.w
	return -1
}

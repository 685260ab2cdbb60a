package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
)

// maxReplyDepth bounds the nesting of aggregates ReadRawReply follows. Redis's own replies
// nest a few levels (COMMAND DOCS is the deepest); the bound only stops a broken peer from
// recursing without end.
const maxReplyDepth = 64

// ErrBadReply is returned by ReadRawReply for bytes that are not a RESP reply.
var ErrBadReply = errors.New("resp: malformed reply")

// ReadRawReply reads one complete RESP2 or RESP3 reply from br and appends its bytes, exactly
// as received, to dst. A server that relays a command to another node (the rate limit
// service forwarding a decision to the shard that owns its key) hands the owner's reply on
// as it came, so it needs its extent, not its value.
func ReadRawReply(br *bufio.Reader, dst []byte) ([]byte, error) {
	return readRaw(br, dst, 0)
}

func readRaw(br *bufio.Reader, dst []byte, depth int) ([]byte, error) {
	if depth > maxReplyDepth {
		return dst, fmt.Errorf("%w: nested more than %d levels", ErrBadReply, maxReplyDepth)
	}
	start := len(dst)
	dst, err := readLine(br, dst)
	if err != nil {
		return dst, err
	}
	line := dst[start+1 : len(dst)-2]
	switch dst[start] {
	case '+', '-', ':', ',', '(', '#', '_':
		return dst, nil
	case '$', '=', '!': // bulk, verbatim and blob error: a length, then that many bytes and CRLF
		n, err := replyLen(line)
		if err != nil || n < 0 {
			return dst, err // $-1: the RESP2 null
		}
		if n > DefaultMaxBulkLen {
			return dst, fmt.Errorf("%w: bulk of %d bytes", ErrBadReply, n)
		}
		at := len(dst)
		dst = slices.Grow(dst, int(n)+2)[:at+int(n)+2]
		if _, err := io.ReadFull(br, dst[at:]); err != nil {
			return dst, err
		}
		if dst[len(dst)-2] != '\r' || dst[len(dst)-1] != '\n' {
			return dst, fmt.Errorf("%w: bulk not ended by CRLF", ErrBadReply)
		}
		return dst, nil
	case '*', '~', '>', '%', '|': // aggregates; maps and attributes count pairs
		n, err := replyLen(line)
		if err != nil || n < 0 {
			return dst, err // *-1: the RESP2 null array
		}
		if k := dst[start]; k == '%' || k == '|' {
			n *= 2
		}
		for range n {
			if dst, err = readRaw(br, dst, depth+1); err != nil {
				return dst, err
			}
		}
		if dst[start] == '|' { // an attribute precedes the reply it describes
			return readRaw(br, dst, depth+1)
		}
		return dst, nil
	}
	return dst, fmt.Errorf("%w: type byte %q", ErrBadReply, dst[start])
}

// readLine appends one CRLF-terminated line, terminator included.
func readLine(br *bufio.Reader, dst []byte) ([]byte, error) {
	start := len(dst)
	for {
		chunk, err := br.ReadSlice('\n')
		dst = append(dst, chunk...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return dst, err
		}
		if len(dst)-start > InlineMaxSize {
			return dst, fmt.Errorf("%w: line longer than %d bytes", ErrBadReply, InlineMaxSize)
		}
	}
	if len(dst)-start < 3 || dst[len(dst)-2] != '\r' {
		return dst, fmt.Errorf("%w: line not ended by CRLF", ErrBadReply)
	}
	return dst, nil
}

func replyLen(line []byte) (int64, error) {
	n, err := strconv.ParseInt(string(line), 10, 64)
	if err != nil || n < -1 {
		return 0, fmt.Errorf("%w: length %q", ErrBadReply, line)
	}
	return n, nil
}

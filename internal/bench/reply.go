package bench

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// inbuf holds what a connection has read and not yet parsed. Both engines parse replies from
// it, so they count and classify replies identically.
type inbuf struct {
	b    []byte
	r, w int
}

// data is what has been read and not consumed.
func (ib *inbuf) data() []byte { return ib.b[ib.r:ib.w] }

// space is where the next read goes: the unparsed tail is moved to the front when the buffer's
// end is reached, and the buffer doubles when one reply fills all of it (a large bulk or a long
// error line).
func (ib *inbuf) space() []byte {
	if ib.b == nil {
		ib.b = make([]byte, 4096)
	}
	if ib.r == ib.w {
		ib.r, ib.w = 0, 0
	}
	if ib.w == len(ib.b) {
		if ib.r > 0 {
			ib.w = copy(ib.b, ib.b[ib.r:ib.w])
			ib.r = 0
		} else {
			nb := make([]byte, 2*len(ib.b))
			copy(nb, ib.b)
			ib.b = nb
		}
	}
	return ib.b[ib.w:]
}

// reply is what scanReply found out about one reply.
type reply struct {
	isErr bool
	// first is 1 for an array whose first element is the integer 0, 2 for one whose first
	// element is another integer, else 0 (Config.CountFirst: GCRA.LIMIT's allowed [0 ...], the
	// Lua GCRA's allowed {1 ...}).
	first int
	// errText is the reply's first error line without its '-' (it aliases the buffer).
	errText []byte
}

// scanReply parses the one reply (RESP2 or RESP3) at b's start and returns its length, or 0
// when b holds only part of it.
func scanReply(b []byte, rp *reply) (int, error) {
	*rp = reply{}
	end, err := rp.scan(b, 0)
	if err != nil || end < 0 {
		return 0, err
	}
	// An array of at least one element whose first element is an integer: b[0] is '*', the
	// header line ends at h, and the element's line follows it.
	if b[0] == '*' && len(b) > 2 && b[1] != '-' && b[1] != '0' {
		h := bytes.IndexByte(b, '\n') + 1
		if b[h] == ':' && b[h+1] != '\r' {
			rp.first = 2
			if b[h+1] == '0' && b[h+2] == '\r' {
				rp.first = 1
			}
		}
	}
	return end, nil
}

// scan parses the reply starting at b[i] and returns the offset just past it, -1 when b ends
// first.
func (rp *reply) scan(b []byte, i int) (int, error) {
	nl := bytes.IndexByte(b[i:], '\n')
	if nl < 0 {
		return -1, nil
	}
	nl += i
	if nl == i || b[nl-1] != '\r' {
		return 0, fmt.Errorf("reply line without CRLF: %q", b[i:nl+1])
	}
	line, next := b[i:nl-1], nl+1
	if len(line) == 0 {
		return 0, errors.New("empty reply line")
	}
	switch line[0] {
	case '+', ':', '_', ',', '#', '(':
		return next, nil
	case '-':
		rp.isErr = true
		if rp.errText == nil {
			rp.errText = line[1:]
		}
		return next, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return 0, fmt.Errorf("bad bulk length %q", line)
		}
		if n >= 0 {
			if next+n+2 > len(b) {
				return -1, nil
			}
			next += n + 2
		}
		if line[0] == '!' {
			rp.isErr = true
		}
		return next, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil {
			return 0, fmt.Errorf("bad aggregate length %q", line)
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if next, err = rp.scan(b, next); err != nil || next < 0 {
				return next, err
			}
		}
		return next, nil
	}
	return 0, fmt.Errorf("unknown reply type %q", line)
}

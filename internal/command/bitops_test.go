package command

import (
	"math"
	"testing"
)

func TestPopcountAndBitpos(t *testing.T) {
	b := []byte{0xff, 0x00, 0x81, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}
	if got := popcount(b); got != 8+2+1+40+4 {
		t.Fatalf("popcount %d", got)
	}
	for _, c := range []struct {
		b    []byte
		bit  int64
		want int64
	}{
		{[]byte{0xff, 0x00, 0x81}, 0, 8},
		{[]byte{0xff, 0x00, 0x81}, 1, 0},
		{[]byte{0x00, 0x00, 0x01}, 1, 23},
		{[]byte{0x00, 0x00}, 1, -1},
		{[]byte{0xff, 0xff}, 0, 16},
		{nil, 0, 0},
	} {
		if got := bitposBytes(c.b, c.bit); got != c.want {
			t.Errorf("bitposBytes(%x, %d) = %d, want %d", c.b, c.bit, got, c.want)
		}
	}
}

func TestBitfieldOverflowRules(t *testing.T) {
	for _, c := range []struct {
		value, incr int64
		width       int
		policy      int
		over        bool
		result      int64
	}{
		{100, 100, 8, bfWrap, true, -56},
		{100, 100, 8, bfSat, true, 127},
		{-100, -100, 8, bfSat, true, -128},
		{-100, -100, 8, bfWrap, true, 56},
		{100, 27, 8, bfSat, false, 0},
		{math.MaxInt64, 1, 64, bfWrap, true, math.MinInt64},
		{math.MinInt64, -1, 64, bfSat, true, math.MinInt64},
		{1, 0, 1, bfSat, true, 0}, // i1 holds only -1 and 0
	} {
		over, res := signedBitfieldOverflow(c.value, c.incr, c.width, c.policy)
		if over != c.over || (over && res != c.result) {
			t.Errorf("signed %+v: %v %d", c, over, res)
		}
	}
	for _, c := range []struct {
		value  uint64
		incr   int64
		width  int
		policy int
		over   bool
		result uint64
	}{
		{250, 10, 8, bfWrap, true, 4},
		{250, 10, 8, bfSat, true, 255},
		{5, -10, 8, bfSat, true, 0},
		{5, -10, 8, bfWrap, true, 251},
		{math.MaxUint64, 0, 8, bfWrap, true, 255}, // SET u8 -1
		{0, 255, 8, bfFail, false, 0},
	} {
		over, res := unsignedBitfieldOverflow(c.value, c.incr, c.width, c.policy)
		if over != c.over || (over && res != c.result) {
			t.Errorf("unsigned %+v: %v %d", c, over, res)
		}
	}
}

func TestBitfieldFieldsAcrossBytes(t *testing.T) {
	p := make([]byte, 3)
	setUnsignedBitfield(p, 5, 12, 0xabc)
	if got := getUnsignedBitfield(p, 5, 12); got != 0xabc {
		t.Fatalf("got %x", got)
	}
	if got := getSignedBitfield(p, 5, 12); got != 0xabc-0x1000 {
		t.Fatalf("signed %d", got)
	}
	if p[0] != 0x05 || p[1] != 0x5e || p[2] != 0x00 {
		t.Fatalf("layout % x", p)
	}
}

func TestBitCommandsOnIntegers(t *testing.T) {
	h := newStringHarness(t)
	h.do("SET", "n", "12") // "12" is 0x31 0x32
	h.expect(":1\r\n", "GETBIT", "n", "2")
	h.expect(":6\r\n", "BITCOUNT", "n")
	h.expect(":2\r\n", "BITPOS", "n", "1")
	h.expect("*1\r\n:12594\r\n", "BITFIELD_RO", "n", "GET", "u16", "0")
	h.expect(":1\r\n", "SETBIT", "n", "2", "0")
	if e := h.entry("n"); e.Val.IsInt || string(e.Val.Bytes()) != "\x112" {
		t.Fatalf("SETBIT must turn the integer into bytes: %+v", e.Val)
	}
	h.do("SET", "m", "7")
	h.expect(":1\r\n", "BITOP", "NOT", "d", "m")
	h.expect("$1\r\n\xc8\r\n", "GET", "d")
}

// Package hll is Redis's HyperLogLog: the string format PFADD, PFCOUNT and PFMERGE keep in a
// plain string value, and the cardinality estimator that reads it.
//
// The format is Redis 7.0's, byte for byte, so that a value read with GET from one server and
// written with SET into the other works both ways, and PFCOUNT answers the same numbers:
//
//	header (16 bytes): "HYLL", encoding (0 dense, 1 sparse), 3 unused bytes, and the cached
//	cardinality, 8 bytes little-endian; bit 7 of its last byte set means "not valid".
//	dense: 16384 registers of 6 bits each, packed from the least significant bit of each
//	byte up (12288 bytes).
//	sparse: run-length opcodes that together cover exactly 16384 registers:
//	  00xxxxxx         ZERO: 1..64 registers set to 0
//	  01xxxxxx yyyyyyyy XZERO: 1..16384 registers set to 0 (14-bit length)
//	  1vvvvvxx         VAL: 1..4 registers set to 1..32
//
// An element is hashed with MurmurHash64A (seed 0xadc83b19); the low 14 bits choose the
// register and the position of the first 1 bit in the rest, counted from 1, is the value
// offered to it. A sparse value turns dense when a value above 32 arrives or when growing
// would take it past hll-sparse-max-bytes; every update is made the way Redis makes it
// (in-place opcode splits, then merging neighbouring VAL opcodes), because a different but
// equivalent opcode sequence would be a different string.
//
// The functions take values as byte slices that they may change in place, and return the
// slice to keep, which may be a new one (growth, promotion). Values that arrive from clients
// may be hostile (SETRANGE can write anything into an HLL): every reader checks bounds and
// register counts, and reports ErrCorrupt rather than reading or writing outside the value.
package hll

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// The format's constants, with Redis's values (HLL_P and friends in hyperloglog.c).
const (
	precision = 14
	q         = 64 - precision // hash bits left after the register index
	// Registers is the number of registers of every HLL.
	Registers = 1 << precision
	regBits   = 6
	regMax    = 1<<regBits - 1
	// HeaderSize is the length of the header that starts every HLL value.
	HeaderSize = 16
	// DenseSize is the exact length of a dense value.
	DenseSize = HeaderSize + (Registers*regBits+7)/8

	encDense  = 0
	encSparse = 1

	sparseValMaxValue = 32
	sparseValMaxLen   = 4
	sparseZeroMaxLen  = 64
	sparseXZeroMaxLen = 16384

	hashSeed = 0xadc83b19
	alphaInf = 0.721347520444481703680 // 0.5/ln(2)
)

// ErrCorrupt is the reply for an HLL whose registers cannot be decoded (Redis's
// invalid_hll_err).
var ErrCorrupt = errors.New("INVALIDOBJ Corrupted HLL object detected")

// DefaultSparseMaxBytes is hll-sparse-max-bytes's default.
const DefaultSparseMaxBytes = 3000

// sparseMaxBytes is hll-sparse-max-bytes, process-wide like the server's configuration
// (internal/types keeps its encoding limits the same way), atomic because CONFIG SET changes
// it while commands run.
var sparseMaxBytes atomic.Int64

func init() { sparseMaxBytes.Store(DefaultSparseMaxBytes) }

// SetSparseMaxBytes sets hll-sparse-max-bytes: the longest a sparse value may grow before an
// update turns it dense. Values already dense stay dense.
func SetSparseMaxBytes(n int64) { sparseMaxBytes.Store(max(n, 0)) }

// SparseMaxBytes returns hll-sparse-max-bytes, for the commands to pass to Add and Merge.
func SparseMaxBytes() int { return int(min(sparseMaxBytes.Load(), math.MaxInt32)) }

// MurmurHash64A is Austin Appleby's 64-bit MurmurHash2 as Redis uses it: 8-byte blocks are
// read little-endian on every machine, so that a value is portable between architectures.
func MurmurHash64A(key []byte, seed uint32) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := uint64(seed) ^ uint64(len(key))*m
	n := len(key) &^ 7
	for i := 0; i < n; i += 8 {
		b := key[i : i+8 : i+8]
		k := uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
			uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	if tail := key[n:]; len(tail) > 0 {
		for i := len(tail) - 1; i >= 0; i-- {
			h ^= uint64(tail[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// patLen returns the register an element maps to and the value it offers that register: the
// length of the "000...1" pattern of its hash above the index bits, 1 to q+1.
func patLen(ele []byte) (index int, count uint8) {
	h := MurmurHash64A(ele, hashSeed)
	index = int(h & (Registers - 1))
	h >>= precision
	h |= 1 << q // the loop ends by bit q at the latest
	count = 1
	for h&1 == 0 {
		count++
		h >>= 1
	}
	return index, count
}

// New returns an empty HLL: sparse, one XZERO opcode covering every register, as Redis's
// createHLLObject builds it.
func New() []byte {
	b := make([]byte, HeaderSize+2, 64)
	copy(b, "HYLL")
	b[4] = encSparse
	putXZero(b[HeaderSize:], Registers)
	return b
}

// Valid reports whether b has an HLL header Redis accepts (isHLLObjectOrReply): the magic, a
// known encoding and, for a dense value, the exact length. Sparse opcodes are checked only as
// they are read.
func Valid(b []byte) bool {
	if len(b) < HeaderSize || string(b[:4]) != "HYLL" || b[4] > encSparse {
		return false
	}
	return b[4] != encDense || len(b) == DenseSize
}

// IsSparse reports whether a valid HLL is sparse.
func IsSparse(b []byte) bool { return b[4] == encSparse }

// Cached returns the cardinality cached in the header, when it is valid.
func Cached(b []byte) (uint64, bool) {
	if b[15]&0x80 != 0 {
		return 0, false
	}
	var card uint64
	for i := 7; i >= 0; i-- {
		card = card<<8 | uint64(b[8+i])
	}
	return card, true
}

// SetCached stores card as the cached cardinality. Redis stores it as it comes, so a card with
// bit 63 set (see estimate) leaves the cache marked invalid.
func SetCached(b []byte, card uint64) {
	for i := range 8 {
		b[8+i] = byte(card >> (8 * i))
	}
}

// invalidate marks the cached cardinality stale.
func invalidate(b []byte) { b[15] |= 0x80 }

// Sparse opcodes.

func isZero(op byte) bool  { return op&0xc0 == 0 }
func isXZero(op byte) bool { return op&0xc0 == 0x40 }
func isVal(op byte) bool   { return op&0x80 != 0 }
func zeroLen(op byte) int  { return int(op&0x3f) + 1 }
func valValue(op byte) int { return int(op>>2&0x1f) + 1 }
func valLen(op byte) int   { return int(op&3) + 1 }

// xzeroLen reads an XZERO opcode at b[p]. A lone first byte at the end of the value reads its
// second byte as 0, as Redis reads the string's NUL terminator there.
func xzeroLen(b []byte, p int) int {
	lo := 0
	if p+1 < len(b) {
		lo = int(b[p+1])
	}
	return (int(b[p]&0x3f)<<8 | lo) + 1
}

func valOp(value, n int) byte { return byte((value-1)<<2|(n-1)) | 0x80 }

func putZero(dst []byte, n int) { dst[0] = byte(n - 1) }

func putXZero(dst []byte, n int) {
	dst[0] = byte((n-1)>>8) | 0x40
	dst[1] = byte(n - 1)
}

// forEachRun walks a sparse value's opcodes, calling fn with each run of registers (first
// register, length, value). It reports false when the runs do not cover exactly Registers
// registers (a run past the end stops the walk before fn sees it).
func forEachRun(b []byte, fn func(first, n, value int)) bool {
	idx := 0
	for p := HeaderSize; p < len(b); {
		var n, v int
		switch op := b[p]; {
		case isZero(op):
			n = zeroLen(op)
			p++
		case isXZero(op):
			n = xzeroLen(b, p)
			p += 2
		default:
			n, v = valLen(op), valValue(op)
			p++
		}
		if n > Registers-idx {
			return false
		}
		fn(idx, n, v)
		idx += n
	}
	return idx == Registers
}

// Dense registers.

// getReg reads register i of a dense register area. The last register ends inside its byte,
// so the byte after it is read only when a register straddles two bytes.
func getReg(regs []byte, i int) uint8 {
	bit := i * regBits
	at, shift := bit>>3, uint(bit&7)
	v := uint(regs[at]) >> shift
	if shift > 8-regBits {
		v |= uint(regs[at+1]) << (8 - shift)
	}
	return uint8(v & regMax)
}

func setReg(regs []byte, i int, v uint8) {
	bit := i * regBits
	at, shift := bit>>3, uint(bit&7)
	regs[at] = regs[at]&^byte(regMax<<shift) | byte(uint(v)<<shift)
	if shift > 8-regBits {
		regs[at+1] = regs[at+1]&^byte(regMax>>(8-shift)) | byte(uint(v)>>(8-shift))
	}
}

// denseSet raises register i to count and reports whether it changed.
func denseSet(b []byte, i int, count uint8) bool {
	regs := b[HeaderSize:]
	if count > getReg(regs, i) {
		setReg(regs, i, count)
		return true
	}
	return false
}

// ToDense returns the dense form of a valid HLL (b itself when it is dense already). The
// header is carried over (unused bytes and the cached cardinality included), as Redis's
// hllSparseToDense copies it. A sparse value whose runs do not cover exactly every register
// yields ErrCorrupt.
func ToDense(b []byte) ([]byte, error) {
	if b[4] == encDense {
		return b, nil
	}
	d := make([]byte, DenseSize)
	copy(d, b[:HeaderSize])
	d[4] = encDense
	regs := d[HeaderSize:]
	ok := forEachRun(b, func(first, n, v int) {
		if v != 0 {
			for i := first; i < first+n; i++ {
				setReg(regs, i, uint8(v))
			}
		}
	})
	if !ok {
		return b, ErrCorrupt
	}
	return d, nil
}

// Add offers ele to the HLL in b (a valid HLL), with hll-sparse-max-bytes maxSparse. It
// returns the value to keep and whether a register changed (PFADD's reply); on ErrCorrupt
// the returned value is still the one to keep, as earlier elements may have changed it.
func Add(b []byte, ele []byte, maxSparse int) ([]byte, bool, error) {
	index, count := patLen(ele)
	if b[4] == encDense {
		return b, denseSet(b, index, count), nil
	}
	return sparseSet(b, index, count, maxSparse)
}

// Set raises register index to count (when it is lower), as Add does for an element that maps
// there; PFMERGE writes its merged registers this way.
func Set(b []byte, index int, count uint8, maxSparse int) ([]byte, bool, error) {
	if b[4] == encDense {
		return b, denseSet(b, index, count), nil
	}
	return sparseSet(b, index, count, maxSparse)
}

// sparseSet is Redis's hllSparseSet: it finds the opcode covering register index and, when the
// register must rise, rewrites that opcode in place (a VAL of one register changed, or the
// opcode split into up to three), then merges equal neighbouring VAL opcodes a few opcodes
// around it. A value too large for a VAL opcode, or growth past maxSparse, turns the HLL dense
// first.
func sparseSet(b []byte, index int, count uint8, maxSparse int) ([]byte, bool, error) {
	if count > sparseValMaxValue {
		return promote(b, index, count)
	}
	n := len(b)
	// Room for the worst split (XZERO into XZERO VAL XZERO: 3 bytes more) and a terminator
	// byte that reads as 0, as an sds string's does.
	buf := slices.Grow(b, 4)[:n+4]
	clear(buf[n:])
	end := n

	// Step 1: find the opcode covering index. This scan is most of the time PFADD and PFMERGE
	// spend on a sparse HLL, hence the plain bit tests.
	p, first, span, prev := HeaderSize, 0, 0, -1
	ops := buf[:end+1] // the terminator reads as an XZERO's missing second byte
	for p < end {
		op := ops[p]
		oplen := 1
		if op&0x80 != 0 {
			span = int(op&3) + 1
		} else if op&0x40 == 0 {
			span = int(op) + 1
		} else {
			span = (int(op&0x3f)<<8 | int(ops[p+1])) + 1
			oplen = 2
		}
		if index < first+span {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return buf[:n], false, ErrCorrupt
	}
	op := buf[p]
	next := p + 1
	if isXZero(op) {
		next = p + 2
	}
	if next >= end {
		next = -1
	}

	// Step 2: update in place when that is trivial, otherwise build the split sequence.
	updated := false
	switch {
	case isVal(op):
		if valValue(op) >= int(count) {
			return buf[:n], false, nil // the register is high enough already
		}
		if valLen(op) == 1 {
			buf[p] = valOp(int(count), 1)
			updated = true
		}
	case isZero(op) && zeroLen(op) == 1:
		buf[p] = valOp(int(count), 1)
		updated = true
	}
	if !updated {
		var seq [5]byte
		s := 0
		last := first + span - 1
		if isVal(op) {
			cur := valValue(op)
			if index != first {
				seq[s] = valOp(cur, index-first)
				s++
			}
			seq[s] = valOp(int(count), 1)
			s++
			if index != last {
				seq[s] = valOp(cur, last-index)
				s++
			}
		} else {
			zeros := func(l int) {
				if l > sparseZeroMaxLen {
					putXZero(seq[s:], l)
					s += 2
				} else {
					putZero(seq[s:], l)
					s++
				}
			}
			if index != first {
				zeros(index - first)
			}
			seq[s] = valOp(int(count), 1)
			s++
			if index != last {
				zeros(last - index)
			}
		}
		// Step 3: put the sequence in place of the opcode, moving the rest.
		oldlen := 1
		if isXZero(op) {
			oldlen = 2
		}
		delta := s - oldlen
		if delta > 0 && n+delta > maxSparse {
			return promote(buf[:n], index, count)
		}
		if delta != 0 && next >= 0 {
			copy(buf[next+delta:], buf[next:end])
		}
		copy(buf[p:], seq[:s])
		n += delta
		end += delta
		buf[end] = 0
	}

	// Step 4: merge adjacent VAL opcodes of the same value, scanning up to 5 opcodes from the
	// one before the change.
	p = HeaderSize
	if prev >= 0 {
		p = prev
	}
	for scan := 5; p < end && scan > 0; scan-- {
		op := buf[p]
		if isXZero(op) {
			p += 2
			continue
		}
		if isZero(op) {
			p++
			continue
		}
		if p+1 < end && isVal(buf[p+1]) {
			v := valValue(op)
			if l := valLen(op) + valLen(buf[p+1]); v == valValue(buf[p+1]) && l <= sparseValMaxLen {
				buf[p+1] = valOp(v, l)
				copy(buf[p:], buf[p+1:end+1])
				n--
				end--
				continue // try the merged opcode with its right neighbour too
			}
		}
		p++
	}
	invalidate(buf)
	return buf[:n], true, nil
}

// promote turns a sparse HLL dense and sets the register there: a promotion always happens
// for a register that must rise.
func promote(b []byte, index int, count uint8) ([]byte, bool, error) {
	d, err := ToDense(b)
	if err != nil {
		return b, false, err
	}
	denseSet(d, index, count)
	return d, true, nil
}

// Merge raises each of regs to the matching register of the HLL in b (a valid HLL), PFMERGE's
// and multi-key PFCOUNT's union. It reports ErrCorrupt for a sparse value whose runs do not
// cover exactly every register.
func Merge(regs *[Registers]uint8, b []byte) error {
	if b[4] == encDense {
		dense := b[HeaderSize:]
		for i := range regs {
			if v := getReg(dense, i); v > regs[i] {
				regs[i] = v
			}
		}
		return nil
	}
	ok := forEachRun(b, func(first, n, v int) {
		if v == 0 {
			return
		}
		for i := first; i < first+n; i++ {
			if uint8(v) > regs[i] {
				regs[i] = uint8(v)
			}
		}
	})
	if !ok {
		return ErrCorrupt
	}
	return nil
}

// Count estimates the cardinality of the HLL in b (a valid HLL). A sparse value whose runs do
// not cover exactly every register yields ErrCorrupt.
func Count(b []byte) (uint64, error) {
	var hist [64]int
	if b[4] == encDense {
		regs := b[HeaderSize:]
		// Four 6-bit registers in every three bytes.
		for i := 0; i+3 <= len(regs); i += 3 {
			r0, r1, r2 := regs[i], regs[i+1], regs[i+2]
			hist[r0&63]++
			hist[(r0>>6|r1<<2)&63]++
			hist[(r1>>4|r2<<4)&63]++
			hist[r2>>2]++
		}
	} else if !forEachRun(b, func(_, n, v int) { hist[v] += n }) {
		return 0, ErrCorrupt
	}
	return estimate(&hist), nil
}

// CountRegisters estimates the cardinality of a set of plain registers (Merge's result).
func CountRegisters(regs *[Registers]uint8) uint64 {
	var hist [64]int
	for _, v := range regs {
		hist[v&63]++
	}
	return estimate(&hist)
}

// estimate is Otmar Ertl's improved estimator ("New cardinality estimation algorithms for
// HyperLogLog sketches", arXiv:1702.01284) from the register histogram, in Redis's order of
// operations so that it yields exactly Redis's numbers. The float64 conversions keep the
// compiler from fusing a multiply and an add, which would round differently from Redis.
func estimate(hist *[64]int) uint64 {
	m := float64(Registers)
	z := m * tau((m-float64(hist[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(hist[j])
		z *= 0.5
	}
	z += float64(m * sigma(float64(hist[0])/m))
	e := float64(alphaInf*m*m) / z
	// Redis rounds with llroundl and converts to uint64. Out of range (registers no real set
	// of elements produces, such as all of them at 50 or more) llroundl returns LLONG_MIN,
	// which converts to 1<<63: reproduce that rather than Go's own conversion.
	if !(e < 1<<63) {
		return 1 << 63
	}
	return uint64(math.Round(e))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += float64(x * y)
		y += y
		if prev == z {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if prev == z {
			return z / 3
		}
	}
}

// RegisterValues returns the 16384 registers of a dense HLL (PFDEBUG GETREG).
func RegisterValues(b []byte) []uint8 {
	out := make([]uint8, Registers)
	regs := b[HeaderSize:]
	for i := range out {
		out[i] = getReg(regs, i)
	}
	return out
}

// Decode lists a sparse HLL's opcodes as PFDEBUG DECODE prints them: "z:len" for ZERO,
// "Z:len" for XZERO, "v:value,len" for VAL. It decodes whatever is there, valid or not.
func Decode(b []byte) string {
	var sb strings.Builder
	for p := HeaderSize; p < len(b); {
		switch op := b[p]; {
		case isZero(op):
			sb.WriteString("z:" + strconv.Itoa(zeroLen(op)) + " ")
			p++
		case isXZero(op):
			sb.WriteString("Z:" + strconv.Itoa(xzeroLen(b, p)) + " ")
			p += 2
		default:
			sb.WriteString("v:" + strconv.Itoa(valValue(op)) + "," + strconv.Itoa(valLen(op)) + " ")
			p++
		}
	}
	return strings.TrimRight(sb.String(), " ")
}

// InvalidateCache marks the cached cardinality of a valid HLL stale, after its registers
// changed.
func InvalidateCache(b []byte) { invalidate(b) }

package hll

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestHashPlacesElementsAsRedis checks MurmurHash64A through what Redis 7.0.15 shows of it:
// the register an element lands in (the hash's low 14 bits) and the value it offers (the
// run of zeros above them), read with PFDEBUG DECODE after PFADD of the element to an empty
// HLL. The elements cover the empty string, every tail length, one and two 8-byte blocks
// (read little-endian) and a block plus a tail.
func TestHashPlacesElementsAsRedis(t *testing.T) {
	for _, tc := range []struct {
		ele          string
		index, count int
	}{
		{"", 5938, 2}, {"a", 12711, 2}, {"ab", 719, 1}, {"abc", 9474, 1}, {"abcd", 11070, 8},
		{"abcde", 3726, 4}, {"abcdef", 13647, 2}, {"abcdefg", 5634, 2}, {"abcdefgh", 1383, 1},
		{"abcdefghi", 6903, 1}, {"hello world, this is 25b", 2349, 1}, {"0123456789abcdef0123", 1401, 3},
	} {
		index, count := patLen([]byte(tc.ele))
		if index != tc.index || int(count) != tc.count {
			t.Errorf("%q: register %d value %d, Redis %d %d", tc.ele, index, count, tc.index, tc.count)
		}
		b, changed, err := Add(New(), []byte(tc.ele), DefaultSparseMaxBytes)
		if err != nil || !changed {
			t.Fatalf("%q: %v %v", tc.ele, changed, err)
		}
		want := fmt.Sprintf("Z:%d v:%d,1 Z:%d", tc.index, tc.count, Registers-tc.index-1)
		if got := Decode(b); got != want {
			t.Errorf("%q: %s, want %s", tc.ele, got, want)
		}
	}
}

// TestHashTailOrder pins the byte order the tail and the blocks are mixed in: changing any one
// byte changes the hash, and the same bytes in another order hash differently.
func TestHashTailOrder(t *testing.T) {
	base := []byte("0123456789abcde") // one block and a 7-byte tail
	h := MurmurHash64A(base, hashSeed)
	seen := map[uint64]int{h: -1}
	for i := range base {
		b := bytes.Clone(base)
		b[i] ^= 1
		x := MurmurHash64A(b, hashSeed)
		if j, dup := seen[x]; dup {
			t.Fatalf("byte %d and %d collide", i, j)
		}
		seen[x] = i
	}
	if MurmurHash64A(base, 0) == h {
		t.Fatal("the seed is ignored")
	}
}

// TestCountMatchesRedis pins the estimator to Redis 7.0.15's PFCOUNT after PFADD of "1" ... "n".
func TestCountMatchesRedis(t *testing.T) {
	want := map[int]uint64{1: 1, 10: 10, 100: 100, 1000: 1001, 10000: 9988, 100000: 99562}
	b := New()
	for n := 1; n <= 100000; n++ {
		var err error
		if b, _, err = Add(b, []byte(strconv.Itoa(n)), DefaultSparseMaxBytes); err != nil {
			t.Fatal(err)
		}
		if w, ok := want[n]; ok {
			got, err := Count(b)
			if err != nil || got != w {
				t.Errorf("n=%d: %d (%v), Redis %d", n, got, err, w)
			}
		}
	}
}

// TestSparseAndDenseAgree adds the same elements to a sparse and a dense HLL: the registers,
// and so the estimates, must be equal at every step, through the sparse HLL's promotion.
func TestSparseAndDenseAgree(t *testing.T) {
	for _, limit := range []int{0, 40, 300, DefaultSparseMaxBytes, 1 << 20} {
		rng := rand.New(rand.NewPCG(uint64(limit), 1))
		sparse := New()
		dense, err := ToDense(New())
		if err != nil {
			t.Fatal(err)
		}
		wasDense := false
		for i := range 20000 {
			ele := []byte("x" + strconv.Itoa(rng.IntN(1<<30)))
			var c1, c2 bool
			sparse, c1, err = Add(sparse, ele, limit)
			if err != nil {
				t.Fatal(err)
			}
			dense, c2, _ = Add(dense, ele, limit)
			if c1 != c2 {
				t.Fatalf("limit %d element %d: changed %v sparse, %v dense", limit, i, c1, c2)
			}
			if !IsSparse(sparse) {
				wasDense = true
			} else if len(sparse) > max(limit, HeaderSize+2) {
				t.Fatalf("limit %d: sparse value of %d bytes", limit, len(sparse))
			}
			if i%97 == 0 || i < 200 {
				d, err := ToDense(sparse)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(d[HeaderSize:], dense[HeaderSize:]) {
					t.Fatalf("limit %d element %d: registers differ", limit, i)
				}
				n1, err1 := Count(sparse)
				n2, err2 := Count(dense)
				if n1 != n2 || err1 != nil || err2 != nil {
					t.Fatalf("limit %d element %d: %d %d %v %v", limit, i, n1, n2, err1, err2)
				}
			}
		}
		if limit < DefaultSparseMaxBytes && !wasDense {
			t.Errorf("limit %d: never turned dense", limit)
		}
		if limit == 1<<20 && !IsSparse(sparse) {
			t.Errorf("a 1 MiB limit: turned dense before a value above 32")
		}
	}
}

// TestSparseOpcodes checks the shapes Redis's sparse updates leave: splits of XZERO, ZERO and
// VAL runs, neighbours merged into one VAL of up to 4 registers, and a value above 32 turning
// the HLL dense.
func TestSparseOpcodes(t *testing.T) {
	set := func(b []byte, i int, v uint8) []byte {
		t.Helper()
		b, _, err := Set(b, i, v, DefaultSparseMaxBytes)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := New()
	if got := Decode(b); got != "Z:16384" {
		t.Fatal(got)
	}
	b = set(b, 100, 3)
	b = set(b, 101, 3)
	b = set(b, 103, 3)
	if got := Decode(b); got != "Z:100 v:3,2 z:1 v:3,1 Z:16280" {
		t.Fatal(got)
	}
	b = set(b, 102, 3) // fills the gap: the three VALs merge into one of 4
	if got := Decode(b); got != "Z:100 v:3,4 Z:16280" {
		t.Fatal(got)
	}
	b = set(b, 101, 5) // splits the VAL run
	if got := Decode(b); got != "Z:100 v:3,1 v:5,1 v:3,2 Z:16280" {
		t.Fatal(got)
	}
	if _, changed, _ := Set(b, 101, 4, DefaultSparseMaxBytes); changed {
		t.Fatal("a lower value changed the register")
	}
	b = set(b, 16383, 1)
	b = set(b, 0, 2)
	if got := Decode(b); got != "v:2,1 Z:99 v:3,1 v:5,1 v:3,2 Z:16279 v:1,1" {
		t.Fatal(got)
	}
	if b[15]&0x80 == 0 {
		t.Fatal("the cache was not invalidated")
	}
	b = set(b, 7, 33)
	if IsSparse(b) || len(b) != DenseSize {
		t.Fatal("a value above 32 left the HLL sparse")
	}
	regs := RegisterValues(b)
	for i, want := range map[int]uint8{0: 2, 7: 33, 100: 3, 101: 5, 102: 3, 103: 3, 16383: 1, 5000: 0} {
		if regs[i] != want {
			t.Errorf("register %d = %d, want %d", i, regs[i], want)
		}
	}
}

// TestDenseRegisters writes every register with neighbours of other values, the last one
// included (it ends inside the last byte, with nothing after it).
func TestDenseRegisters(t *testing.T) {
	b, _ := ToDense(New())
	rng := rand.New(rand.NewPCG(1, 2))
	want := make([]uint8, Registers)
	for i := range want {
		want[i] = uint8(rng.IntN(64))
		setReg(b[HeaderSize:], i, want[i])
	}
	if got := RegisterValues(b); !bytes.Equal(got, want) {
		t.Fatal("registers read back differently")
	}
	setReg(b[HeaderSize:], Registers-1, 63)
	if b[len(b)-1] != 0xfc|b[len(b)-1]&3 || getReg(b[HeaderSize:], Registers-2) != want[Registers-2] {
		t.Fatal("the last register is not the top 6 bits of the last byte")
	}
}

// TestEstimateEdges covers the estimator where it stops being about real sets: an empty HLL,
// every register at its largest value (Redis's llroundl overflow), and the ranges between.
func TestEstimateEdges(t *testing.T) {
	var regs [Registers]uint8
	if n := CountRegisters(&regs); n != 0 {
		t.Fatalf("empty: %d", n)
	}
	for i := range regs {
		regs[i] = 63
	}
	if n := CountRegisters(&regs); n != 1<<63 {
		t.Fatalf("all 63: %d", n)
	}
	prev := uint64(0)
	for level := 1; level <= 40; level++ {
		for i := range regs {
			regs[i] = uint8(level)
		}
		n := CountRegisters(&regs)
		if n <= prev {
			t.Fatalf("level %d: %d not above %d", level, n, prev)
		}
		prev = n
	}
	// Cardinalities far past what PFADD can reach in a test, drawn as a real set's registers
	// would be: the estimate stays within 2%.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, card := range []float64{1e5, 1e7, 1e9, 1e12, 1e15} {
		perReg := card / Registers
		for i := range regs {
			// Each register holds the largest of about perReg draws of a geometric value
			// (P(v <= k) = 1 - 2^-k): sampled through the maximum's inverse distribution.
			u := rng.Float64()
			v := math.Ceil(math.Log2(perReg / -math.Log(u)))
			regs[i] = uint8(max(0, min(q+1, v)))
		}
		n := float64(CountRegisters(&regs))
		if math.Abs(n-card)/card > 0.02 {
			t.Errorf("cardinality %g estimated as %g", card, n)
		}
	}
}

// TestCache covers the cached cardinality: little-endian, valid until invalidated.
func TestCache(t *testing.T) {
	b := New()
	if _, ok := Cached(b); !ok {
		t.Fatal("a new HLL's cache (0) is valid")
	}
	SetCached(b, 0x0102030405060708)
	if !bytes.Equal(b[8:16], []byte{8, 7, 6, 5, 4, 3, 2, 1}) {
		t.Fatalf("%x", b[8:16])
	}
	if n, ok := Cached(b); !ok || n != 0x0102030405060708 {
		t.Fatal(n, ok)
	}
	InvalidateCache(b)
	if _, ok := Cached(b); ok {
		t.Fatal("still valid")
	}
}

// TestCorruptSparse covers sparse values whose runs do not add up to 16384 registers: too few,
// too many, runs that would wrap a 32-bit counter, and a lone XZERO byte at the end.
func TestCorruptSparse(t *testing.T) {
	hdr := append([]byte("HYLL\x01"), make([]byte, 11)...)
	many := bytes.Repeat([]byte{0x7f, 0xff}, 131072+10)
	for name, v := range map[string][]byte{
		"empty":      {},
		"short":      {0x7f, 0xfe},
		"long":       {0x7f, 0xff, 0x80},
		"wrap":       append(bytes.Clone(many), 0xff),
		"zero wrap":  append(bytes.Repeat([]byte{0x3f}, 1<<18), 0xff),
		"lone xzero": {0x7f},
	} {
		b := append(bytes.Clone(hdr), v...)
		if _, err := Count(b); err != ErrCorrupt {
			t.Errorf("%s: Count %v", name, err)
		}
		var regs [Registers]uint8
		if err := Merge(&regs, b); err != ErrCorrupt {
			t.Errorf("%s: Merge %v", name, err)
		}
		if _, err := ToDense(b); err != ErrCorrupt {
			t.Errorf("%s: ToDense %v", name, err)
		}
	}
}

// FuzzHLL feeds arbitrary values to every operation: none may panic or run past the value,
// whatever it holds.
func FuzzHLL(f *testing.F) {
	b := New()
	for i := range 300 {
		b, _, _ = Add(b, []byte(strconv.Itoa(i)), DefaultSparseMaxBytes)
	}
	f.Add(bytes.Clone(b), []byte("x"), uint16(0))
	d, _ := ToDense(b)
	f.Add(d, []byte("y"), uint16(100))
	f.Add(append([]byte("HYLL\x01"), make([]byte, 11)...), []byte(""), uint16(3))
	f.Add(append(append([]byte("HYLL\x01"), make([]byte, 11)...), 0x7f), []byte("a"), uint16(40))
	f.Fuzz(func(t *testing.T, v, ele []byte, limit uint16) {
		if !Valid(v) {
			return
		}
		_, _ = Count(v)
		var regs [Registers]uint8
		_ = Merge(&regs, v)
		_ = Decode(v)
		if d, err := ToDense(bytes.Clone(v)); err == nil {
			_ = RegisterValues(d)
		}
		w, _, _ := Add(bytes.Clone(v), ele, int(limit))
		if !Valid(w) {
			t.Fatalf("Add made an invalid header from %x", v)
		}
		for i := int(limit) % 257; i < Registers; i += 257 {
			w, _, _ = Set(w, i, uint8(1+i%40), int(limit))
		}
		_, _ = Count(w)
	})
}

func BenchmarkAddSparse(b *testing.B) {
	var ele [8]byte
	for i := 0; i < b.N; i++ {
		h := New()
		for j := range 200 {
			binary.LittleEndian.PutUint64(ele[:], uint64(i*200+j))
			h, _, _ = Add(h, ele[:], DefaultSparseMaxBytes)
		}
	}
}

func BenchmarkAddDense(b *testing.B) {
	h, _ := ToDense(New())
	var ele [8]byte
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		binary.LittleEndian.PutUint64(ele[:], uint64(i))
		h, _, _ = Add(h, ele[:], DefaultSparseMaxBytes)
	}
}

func BenchmarkCountDense(b *testing.B) {
	h, _ := ToDense(New())
	for i := range 100000 {
		h, _, _ = Add(h, []byte(strconv.Itoa(i)), DefaultSparseMaxBytes)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, _ = Count(h)
	}
}

// BenchmarkMergeSparse is PFMERGE of two sparse HLLs of about 2 KB into a new key: Redis's
// way, one sparse update per register set, each scanning the opcodes before it.
func BenchmarkMergeSparse(b *testing.B) {
	x, y := New(), New()
	for i := 1; i <= 1100; i++ {
		x, _, _ = Add(x, []byte(strconv.Itoa(i)), DefaultSparseMaxBytes)
		y, _, _ = Add(y, []byte(strconv.Itoa(i+2000)), DefaultSparseMaxBytes)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var regs [Registers]uint8
		_ = Merge(&regs, x)
		_ = Merge(&regs, y)
		d := New()
		for j, v := range regs {
			if v != 0 {
				d, _, _ = Set(d, j, v, DefaultSparseMaxBytes)
			}
		}
	}
}

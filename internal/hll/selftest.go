package hll

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
)

// SelfTest is PFSELFTEST, Redis's check of the implementation from inside the server: random
// register values must read back unchanged without disturbing their neighbours, and up to ten
// million distinct elements, added to a dense and a sparse HLL at once (hll-sparse-max-bytes
// maxSparse), must give the same estimate from both and stay within six standard errors at
// every power of ten. The error is the reply, worded as Redis words it.
func SelfTest(maxSparse int) error {
	dense := make([]byte, DenseSize)
	copy(dense, "HYLL")
	regs := dense[HeaderSize:]
	var want [Registers]uint8
	for range 1000 {
		for i := range want {
			want[i] = uint8(rand.IntN(regMax + 1))
			setReg(regs, i, want[i])
		}
		for i := range want {
			if got := getReg(regs, i); got != want[i] {
				return fmt.Errorf("TESTFAILED Register %d should be %d but is %d", i, want[i], got)
			}
		}
	}

	clear(regs)
	sparse := New()
	relerr := 1.04 / math.Sqrt(Registers)
	checkpoint := int64(1)
	seed := rand.Uint64()
	var ele [8]byte
	for j := int64(1); j <= 10_000_000; j++ {
		binary.LittleEndian.PutUint64(ele[:], uint64(j)^seed)
		index, count := patLen(ele[:])
		denseSet(dense, index, count)
		var err error
		if sparse, _, err = Set(sparse, index, count, maxSparse); err != nil {
			return fmt.Errorf("TESTFAILED %v", err)
		}
		if j != checkpoint {
			continue
		}
		if j < int64(maxSparse/2) && !IsSparse(sparse) {
			return fmt.Errorf("TESTFAILED sparse encoding not used")
		}
		cd, _ := Count(dense)
		cs, _ := Count(sparse)
		if cd != cs {
			return fmt.Errorf("TESTFAILED dense/sparse disagree")
		}
		maxerr := uint64(math.Ceil(relerr * 6 * float64(checkpoint)))
		if j == 10 {
			maxerr = 1 // collisions make a larger error at 10 likely enough to matter
		}
		abserr := checkpoint - int64(cd)
		if abserr < 0 {
			abserr = -abserr
		}
		if abserr > int64(maxerr) {
			return fmt.Errorf("TESTFAILED Too big error. card:%d abserr:%d", checkpoint, abserr)
		}
		checkpoint *= 10
	}
	return nil
}

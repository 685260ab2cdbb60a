package command

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/hotkv/hotkv/internal/resp"
	"github.com/hotkv/hotkv/internal/store"
)

func bitCommands() []*Command {
	// The compact form of redis.io's line: it parses into the argument tree of Redis's
	// COMMAND DOCS (one optional, repeating oneof of GET and a write block).
	bitfieldSyntax := "key [GET encoding offset | [OVERFLOW <WRAP | SAT | FAIL>] <SET encoding offset value | INCRBY encoding offset increment> ...]"
	return []*Command{
		{Name: "setbit", Arity: 4, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "bitmap", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRW | KSAccess | KSUpdate),
			Group: "bitmap", Since: "2.2.0", Complexity: "O(1)", Syntax: "key offset value",
			Summary: "Sets or clears the bit at offset in the string value stored at key", Handler: setbitCommand},
		{Name: "getbit", Arity: 3, Flags: FlagReadOnly | FlagFast, ACL: []string{"read", "bitmap", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess),
			Group: "bitmap", Since: "2.2.0", Complexity: "O(1)", Syntax: "key offset",
			Summary: "Returns the bit value at offset in the string value stored at key", Handler: getbitCommand},
		{Name: "bitcount", Arity: -2, Flags: FlagReadOnly, ACL: []string{"read", "bitmap", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess),
			Group: "bitmap", Since: "2.6.0", Complexity: "O(N)", Syntax: "key [start end [BYTE | BIT]]",
			Summary: "Count set bits in a string", Doc: "7.0.0: Added the BYTE|BIT option.",
			Handler: bitcountCommand},
		{Name: "bitpos", Arity: -3, Flags: FlagReadOnly, ACL: []string{"read", "bitmap", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess),
			Group: "bitmap", Since: "2.8.7", Complexity: "O(N)", Syntax: "key bit [start [end [BYTE | BIT]]]",
			Summary: "Find first bit set or clear in a string", Doc: "7.0.0: Added the BYTE|BIT option.",
			Handler: bitposCommand},
		{Name: "bitop", Arity: -4, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "bitmap", "slow"},
			FirstKey: 2, LastKey: -1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSOW | KSUpdate, Begin: 2, Step: 1}, {Flags: KSRO | KSAccess, Begin: 3, LastKey: -1, Step: 1}},
			Group:    "bitmap", Since: "2.6.0", Complexity: "O(N)", Syntax: "operation destkey key [key ...]",
			Summary: "Perform bitwise operations between strings", Handler: bitopCommand},
		{Name: "bitfield", Arity: -2, Flags: FlagWrite | FlagDenyOOM, ACL: []string{"write", "bitmap", "slow"},
			FirstKey: 1, LastKey: 1, Step: 1,
			KeySpecs: []KeySpec{{Flags: KSRW | KSAccess | KSUpdate | KSVariableFlags, Begin: 1, Step: 1,
				Notes: "This command allows both access and modification of the key"}},
			KeyFlags: bitfieldKeyFlags,
			Group:    "bitmap", Since: "3.2.0", Complexity: "O(1) for each subcommand specified", Syntax: bitfieldSyntax,
			Summary: "Perform arbitrary bitfield integer operations on strings", Handler: bitfieldCommand},
		{Name: "bitfield_ro", Arity: -2, Flags: FlagReadOnly | FlagFast, ACL: []string{"read", "bitmap", "fast"},
			FirstKey: 1, LastKey: 1, Step: 1, KeySpecs: oneKey(KSRO | KSAccess),
			Group: "bitmap", Since: "6.0.0", Complexity: "O(1) for each subcommand specified",
			Syntax:  "key [GET encoding offset [GET encoding offset ...]]",
			Summary: "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
			Handler: bitfieldROCommand},
	}
}

// bitfieldKeyFlags is Redis's bitfieldGetKeys: a BITFIELD made only of GET (and OVERFLOW)
// operations reads its key; anything else, a syntax error included, may write it.
func bitfieldKeyFlags(args [][]byte) KeySpecFlag {
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case EqualFold(args[i], "get") && more >= 2:
			i += 2
		case (EqualFold(args[i], "set") || EqualFold(args[i], "incrby")) && more >= 3:
			return KSRW | KSAccess | KSUpdate
		case EqualFold(args[i], "overflow") && more >= 1:
			i++
		default:
			return KSRW | KSAccess | KSUpdate
		}
	}
	return KSRO | KSAccess
}

// Error replies of the bit commands, worded as Redis 7.0 words them.
const (
	errBitArg        = "ERR The bit argument must be 1 or 0."
	errBitopNot      = "ERR BITOP NOT must be called with a single source key."
	errBitfieldType  = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
	errBitfieldOflow = "ERR Invalid OVERFLOW type specified"
	errBitfieldRO    = "ERR BITFIELD_RO only supports the GET subcommand"
)

// bitOffsetArg is Redis's getBitOffsetFromArgument. With hash, "#N" means N*bits (BITFIELD's
// typed offsets). Offsets are limited to proto-max-bulk-len bytes.
func bitOffsetArg(c *Ctx, arg []byte, hash bool, width int) (int64, bool) {
	useHash := hash && width > 0 && len(arg) > 0 && arg[0] == '#'
	if useHash {
		arg = arg[1:]
	}
	n, ok := resp.ParseInt(arg)
	if ok && useHash {
		n *= int64(width) // wraps like Redis's C and is caught below
	}
	if !ok || n < 0 || n>>3 >= maxBulkLen(c) {
		c.Error(ErrBitOffset)
		return 0, false
	}
	return n, true
}

// lookupStringForBitWrite is Redis's lookupStringForBitCommand: the key's string, created or
// zero-extended so that bit maxbit exists, and made mutable (an integer becomes its digits).
// grown reports whether the key was created or lengthened. ok is false after WRONGTYPE.
func lookupStringForBitWrite(c *Ctx, maxbit int64) (e *store.Entry, grown, ok bool) {
	n := int(maxbit>>3) + 1
	e = c.Lookup(c.Args[1])
	if e == nil {
		v := store.BytesValue(make([]byte, n))
		return c.DB.Set(c.Args[1], v, 0, false, c.Now), true, true
	}
	if e.Val.Kind != store.KindString {
		c.WrongType()
		return nil, false, false
	}
	b := mutableString(&e.Val)
	if len(b) < n {
		e.Val.SetBytes(growZero(b, n))
		grown = true
	}
	return e, grown, true
}

// lookupStringForBitRead finds a string for a reading bit command. It returns nil, true for a
// missing key and nil, false after replying WRONGTYPE.
func lookupStringForBitRead(c *Ctx) (*store.Entry, bool) {
	e := c.LookupRead(c.Args[1])
	if e != nil && e.Val.Kind != store.KindString {
		c.WrongType()
		return nil, false
	}
	return e, true
}

func setbitCommand(c *Ctx) {
	off, ok := bitOffsetArg(c, c.Args[2], false, 0)
	if !ok {
		return
	}
	on, ok := resp.ParseInt(c.Args[3])
	if !ok || on&^1 != 0 {
		c.Error(ErrBitValue)
		return
	}
	e, grown, ok := lookupStringForBitWrite(c, off)
	if !ok {
		return
	}
	b := e.Val.Bytes()
	i, shift := off>>3, 7-uint(off&7)
	old := int64(b[i]>>shift) & 1
	if grown || old != on {
		b[i] = b[i]&^(1<<shift) | byte(on)<<shift
		c.Dirty(1)
		c.notify(evString, "setbit", c.Args[1])
	}
	c.W.Int(old)
}

func getbitCommand(c *Ctx) {
	off, ok := bitOffsetArg(c, c.Args[2], false, 0)
	if !ok {
		return
	}
	e, ok := lookupStringForBitRead(c)
	if !ok {
		return
	}
	if e == nil {
		c.W.Int(0)
		return
	}
	var tmp [24]byte
	b := StringBytes(&e.Val, tmp[:])
	var bit int64
	if i := off >> 3; i < int64(len(b)) {
		bit = int64(b[i]>>(7-uint(off&7))) & 1
	}
	c.W.Int(bit)
}

// popcount counts the set bits of b.
func popcount(b []byte) int64 {
	var n int
	for len(b) >= 8 {
		n += bits.OnesCount64(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return int64(n)
}

// bitcountCommand is Redis 7.0's: a missing key counts 0 before the arguments are even
// checked, and the range is clamped like GETRANGE's, in bytes or bits.
func bitcountCommand(c *Ctx) {
	e, ok := lookupStringForBitRead(c)
	if !ok {
		return
	}
	if e == nil {
		c.W.Int(0)
		return
	}
	var tmp [24]byte
	p := StringBytes(&e.Val, tmp[:])
	var start, end int64
	var firstMask, lastMask byte
	switch len(c.Args) {
	case 4, 5:
		total := int64(len(p))
		if start, ok = c.Int(2); !ok {
			return
		}
		if end, ok = c.Int(3); !ok {
			return
		}
		isBit, ok := bitUnitArg(c, 4)
		if !ok {
			return
		}
		if isBit {
			total <<= 3
		}
		if start < 0 && end < 0 && start > end {
			c.W.Int(0)
			return
		}
		start, end, firstMask, lastMask = normalizeBitRange(start, end, total, isBit)
	case 2:
		start, end = 0, int64(len(p))-1
	default:
		c.Syntax()
		return
	}
	if start > end {
		c.W.Int(0)
		return
	}
	n := popcount(p[start : end+1])
	n -= int64(bits.OnesCount8(p[start]&firstMask) + bits.OnesCount8(p[end]&lastMask))
	c.W.Int(n)
}

// bitposBytes is Redis's redisBitpos: the position of the first bit equal to bit in b, or, when
// there is none, -1 when looking for 1 and len(b)*8 when looking for 0 (the string is taken
// as padded with zeros on the right).
func bitposBytes(b []byte, bit int64) int64 {
	skip := byte(0)
	if bit == 0 {
		skip = 0xff
	}
	for i, x := range b {
		if x == skip {
			continue
		}
		if bit == 0 {
			x = ^x
		}
		return int64(i)*8 + int64(bits.LeadingZeros8(x))
	}
	if bit == 1 {
		return -1
	}
	return int64(len(b)) * 8
}

// bitposCommand follows Redis 7.0's bitposCommand step for step, masks included, so that the
// edge cases (clear bits past an explicit end, BIT ranges inside one byte) answer the same.
func bitposCommand(c *Ctx) {
	bit, ok := c.Int(2)
	if !ok {
		return
	}
	if bit != 0 && bit != 1 {
		c.Error(errBitArg)
		return
	}
	e, ok := lookupStringForBitRead(c)
	if !ok {
		return
	}
	if e == nil {
		c.W.Int(-bit) // an endless run of zeros: 0 for a clear bit, -1 for a set one
		return
	}
	var tmp [24]byte
	p := StringBytes(&e.Val, tmp[:])
	var start, end int64
	var firstMask, lastMask byte
	endGiven := false
	switch len(c.Args) {
	case 4, 5, 6:
		total := int64(len(p))
		if start, ok = c.Int(3); !ok {
			return
		}
		isBit, ok := bitUnitArg(c, 5)
		if !ok {
			return
		}
		if len(c.Args) >= 5 {
			if end, ok = c.Int(4); !ok {
				return
			}
			endGiven = true
		} else if isBit {
			end = total<<3 + 7
		} else {
			end = total - 1
		}
		if isBit {
			total <<= 3
		}
		start, end, firstMask, lastMask = normalizeBitRange(start, end, total, isBit)
	case 3:
		start, end = 0, int64(len(p))-1
	default:
		c.Syntax()
		return
	}
	if start > end {
		c.W.Int(-1)
		return
	}
	pos := bitposRange(p, start, end, bit, firstMask, lastMask)
	if endGiven && bit == 0 && pos.past {
		c.W.Int(-1)
		return
	}
	c.W.Int(pos.at)
}

// bitposResult is where bitposRange found the bit; past is set when it is the first bit after
// the searched bytes (a clear bit found only in the zero padding).
type bitposResult struct {
	at   int64
	past bool
}

// bitposRange searches bytes start..end of p, the bits outside the range in the first and last
// bytes masked out, exactly as the tail of Redis's bitposCommand.
func bitposRange(p []byte, start, end, bit int64, firstMask, lastMask byte) bitposResult {
	nbytes := end - start + 1
	finish := func(pos int64) bitposResult {
		past := pos == nbytes<<3
		if pos != -1 {
			pos += start << 3
		}
		return bitposResult{at: pos, past: past}
	}
	masked := func(x, mask byte) byte {
		if bit == 1 {
			return x &^ mask
		}
		return x | mask
	}
	if firstMask != 0 {
		x := masked(p[start], firstMask)
		if lastMask != 0 && nbytes == 1 {
			x = masked(x, lastMask)
		}
		pos := bitposBytes([]byte{x}, bit)
		if nbytes == 1 || (pos != -1 && pos != 8) {
			return finish(pos)
		}
		start++
		nbytes--
	}
	cur := nbytes
	if lastMask != 0 {
		cur--
	}
	if cur > 0 {
		pos := bitposBytes(p[start:start+cur], bit)
		if nbytes == cur || (pos != -1 && pos != cur<<3) {
			return finish(pos)
		}
		start += cur
		nbytes -= cur
	}
	return finish(bitposBytes([]byte{masked(p[end], lastMask)}, bit))
}

// BITOP operations.
const (
	bitopAnd = iota
	bitopOr
	bitopXor
	bitopNot
)

func bitopCommand(c *Ctx) {
	var op int
	switch {
	case c.ArgIs(1, "and"):
		op = bitopAnd
	case c.ArgIs(1, "or"):
		op = bitopOr
	case c.ArgIs(1, "xor"):
		op = bitopXor
	case c.ArgIs(1, "not"):
		op = bitopNot
	default:
		c.Syntax()
		return
	}
	if op == bitopNot && len(c.Args) != 4 {
		c.Error(errBitopNot)
		return
	}
	keys := c.Args[3:]
	srcs := make([][]byte, len(keys))
	maxLen := 0
	for j, k := range keys {
		e := c.LookupRead(k)
		if e == nil {
			continue
		}
		if e.Val.Kind != store.KindString {
			c.WrongType()
			return
		}
		srcs[j] = StringBytes(&e.Val, nil)
		maxLen = max(maxLen, len(srcs[j]))
	}
	dest := c.Args[2]
	if maxLen == 0 {
		if c.DB.Delete(dest, c.Now) {
			c.Dirty(1)
			c.notify(evGeneric, "del", dest)
		}
		c.W.Int(0)
		return
	}
	// Missing bytes of shorter sources count as zeros.
	res := make([]byte, maxLen)
	copy(res, srcs[0])
	if op == bitopNot {
		for i := range res {
			res[i] = ^res[i]
		}
	}
	for _, s := range srcs[1:] {
		switch op {
		case bitopAnd:
			for i := range res {
				if i < len(s) {
					res[i] &= s[i]
				} else {
					res[i] = 0
				}
			}
		case bitopOr:
			for i, x := range s {
				res[i] |= x
			}
		case bitopXor:
			for i, x := range s {
				res[i] ^= x
			}
		}
	}
	c.DB.Set(dest, store.BytesValue(res), 0, false, c.Now)
	c.Dirty(1)
	c.notify(evString, "set", dest)
	c.W.Int(int64(maxLen))
}

// BITFIELD operations and overflow policies, as Redis's BITFIELDOP_* and BFOVERFLOW_*.
const (
	bfGet = iota
	bfSet
	bfIncrBy
)

const (
	bfWrap = iota
	bfSat
	bfFail
)

type bitfieldOp struct {
	offset   int64
	value    int64
	op       int
	overflow int
	width    int
	signed   bool
}

func bitfieldCommand(c *Ctx)   { bitfieldGeneric(c, false) }
func bitfieldROCommand(c *Ctx) { bitfieldGeneric(c, true) }

// bitfieldType parses "i1".."i64" or "u1".."u63" (lower-case prefix only, as Redis).
func bitfieldType(arg []byte) (signed bool, width int, ok bool) {
	if len(arg) == 0 || (arg[0] != 'i' && arg[0] != 'u') {
		return false, 0, false
	}
	signed = arg[0] == 'i'
	n, ok := resp.ParseInt(arg[1:])
	if !ok || n < 1 || (signed && n > 64) || (!signed && n > 63) {
		return false, 0, false
	}
	return signed, int(n), true
}

// bitfieldGeneric is Redis's bitfieldGeneric: every operation is parsed and checked before the
// key is touched, then they run in order against one string.
func bitfieldGeneric(c *Ctx, readOnlyCmd bool) {
	var ops []bitfieldOp
	overflow := bfWrap
	readOnly := true
	var highestWrite int64
	for j := 2; j < len(c.Args); j++ {
		rem := len(c.Args) - j - 1
		var op int
		switch {
		case c.ArgIs(j, "get") && rem >= 2:
			op = bfGet
		case c.ArgIs(j, "set") && rem >= 3:
			op = bfSet
		case c.ArgIs(j, "incrby") && rem >= 3:
			op = bfIncrBy
		case c.ArgIs(j, "overflow") && rem >= 1:
			j++
			switch {
			case c.ArgIs(j, "wrap"):
				overflow = bfWrap
			case c.ArgIs(j, "sat"):
				overflow = bfSat
			case c.ArgIs(j, "fail"):
				overflow = bfFail
			default:
				c.Error(errBitfieldOflow)
				return
			}
			continue
		default:
			c.Syntax()
			return
		}
		signed, width, ok := bitfieldType(c.Args[j+1])
		if !ok {
			c.Error(errBitfieldType)
			return
		}
		off, ok := bitOffsetArg(c, c.Args[j+2], true, width)
		if !ok {
			return
		}
		var v int64
		if op != bfGet {
			readOnly = false
			highestWrite = max(highestWrite, off+int64(width)-1)
			if v, ok = c.Int(j + 3); !ok {
				return
			}
			j++
		}
		ops = append(ops, bitfieldOp{offset: off, value: v, op: op, overflow: overflow, width: width, signed: signed})
		j += 2
	}

	var e *store.Entry
	created := int64(0)
	if readOnly {
		var ok bool
		if e, ok = lookupStringForBitRead(c); !ok {
			return
		}
	} else {
		if readOnlyCmd {
			c.Error(errBitfieldRO)
			return
		}
		var ok bool
		var grown bool
		if e, grown, ok = lookupStringForBitWrite(c, highestWrite); !ok {
			return
		}
		if grown {
			created = 1 // a new or longer string is a change even if every field keeps its value
		}
	}

	c.W.Array(len(ops))
	// Only writes that change a value count as changes (dirty, and the effect journaled), as
	// Redis counts them: SET to the same value, INCRBY 0 and a failed OVERFLOW FAIL do not.
	changes := int64(0)
	for i := range ops {
		op := &ops[i]
		if op.op == bfGet {
			// Read through a zero-padded copy of up to 9 bytes, so that fields past the end
			// of the string read as zeros.
			var buf [9]byte
			if e != nil {
				var tmp [24]byte
				src := StringBytes(&e.Val, tmp[:])
				if first := op.offset >> 3; first < int64(len(src)) {
					copy(buf[:], src[first:])
				}
			}
			rel := op.offset & 7
			if op.signed {
				c.W.Int(getSignedBitfield(buf[:], rel, op.width))
			} else {
				c.W.Int(int64(getUnsignedBitfield(buf[:], rel, op.width)))
			}
			continue
		}
		p := e.Val.Bytes()
		if op.signed {
			old := getSignedBitfield(p, op.offset, op.width)
			var nv, ret, wrapped int64
			var over bool
			if op.op == bfIncrBy {
				over, wrapped = signedBitfieldOverflow(old, op.value, op.width, op.overflow)
				nv = old + op.value
				if over {
					nv = wrapped
				}
				ret = nv
			} else {
				nv = op.value
				if over, wrapped = signedBitfieldOverflow(nv, 0, op.width, op.overflow); over {
					nv = wrapped
				}
				ret = old
			}
			if over && op.overflow == bfFail {
				c.W.Null()
				continue
			}
			c.W.Int(ret)
			if nv != old {
				setUnsignedBitfield(p, op.offset, op.width, uint64(nv))
				changes++
			}
		} else {
			old := getUnsignedBitfield(p, op.offset, op.width)
			var nv, ret, wrapped uint64
			var over bool
			if op.op == bfIncrBy {
				nv = old + uint64(op.value)
				if over, wrapped = unsignedBitfieldOverflow(old, op.value, op.width, op.overflow); over {
					nv = wrapped
				}
				ret = nv
			} else {
				nv = uint64(op.value)
				if over, wrapped = unsignedBitfieldOverflow(nv, 0, op.width, op.overflow); over {
					nv = wrapped
				}
				ret = old
			}
			if over && op.overflow == bfFail {
				c.W.Null()
				continue
			}
			c.W.Int(int64(ret))
			if nv != old {
				setUnsignedBitfield(p, op.offset, op.width, nv)
				changes++
			}
		}
	}
	c.Dirty(max(changes, created))
	if max(changes, created) > 0 {
		c.notify(evString, "setbit", c.Args[1])
	}
}

// getUnsignedBitfield reads width bits at bit offset off, most significant first.
func getUnsignedBitfield(p []byte, off int64, width int) uint64 {
	var v uint64
	for j := 0; j < width; j++ {
		b := p[off>>3]
		v = v<<1 | uint64(b>>(7-uint(off&7)))&1
		off++
	}
	return v
}

// getSignedBitfield reads a two's complement field, extending its sign.
func getSignedBitfield(p []byte, off int64, width int) int64 {
	v := int64(getUnsignedBitfield(p, off, width))
	if width < 64 && v&(1<<(width-1)) != 0 {
		v |= -1 << width
	}
	return v
}

// setUnsignedBitfield writes the low width bits of v at bit offset off.
func setUnsignedBitfield(p []byte, off int64, width int, v uint64) {
	for j := 0; j < width; j++ {
		bit := byte(v>>(width-1-j)) & 1
		i, shift := off>>3, 7-uint(off&7)
		p[i] = p[i]&^(1<<shift) | bit<<shift
		off++
	}
}

// unsignedBitfieldOverflow is Redis's checkUnsignedBitfieldOverflow: whether value+incr leaves
// the range of a width-bit unsigned field, and the wrapped or saturated result to store.
func unsignedBitfieldOverflow(value uint64, incr int64, width, policy int) (bool, uint64) {
	maxv := uint64(1)<<width - 1
	maxIncr := int64(maxv - value)
	minIncr := -int64(value)
	wrap := func() (bool, uint64) { return true, (value + uint64(incr)) & maxv }
	if value > maxv || (incr > 0 && incr > maxIncr) {
		if policy == bfWrap {
			return wrap()
		}
		return true, maxv
	}
	if incr < 0 && incr < minIncr {
		if policy == bfWrap {
			return wrap()
		}
		return true, 0
	}
	return false, 0
}

// signedBitfieldOverflow is Redis's checkSignedBitfieldOverflow for a width-bit signed field.
func signedBitfieldOverflow(value, incr int64, width, policy int) (bool, int64) {
	maxv := int64(math.MaxInt64)
	if width < 64 {
		maxv = 1<<(width-1) - 1
	}
	minv := -maxv - 1
	maxIncr := int64(uint64(maxv) - uint64(value))
	minIncr := minv - value
	wrap := func() (bool, int64) {
		r := uint64(value) + uint64(incr)
		if width < 64 {
			mask := ^uint64(0) << width
			if r&(1<<(width-1)) != 0 {
				r |= mask
			} else {
				r &^= mask
			}
		}
		return true, int64(r)
	}
	if value > maxv || (width != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr) {
		if policy == bfWrap {
			return wrap()
		}
		return true, maxv
	}
	if value < minv || (width != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr) {
		if policy == bfWrap {
			return wrap()
		}
		return true, minv
	}
	return false, 0
}

// normalizeBitRange clamps a BITCOUNT/BITPOS range as Redis does: negative indexes count from
// the end, the range is cut to the string's total length (in bits with isBit), and in BIT mode
// it becomes byte bounds plus masks of the bits outside the range in the first and last bytes.
func normalizeBitRange(start, end, total int64, isBit bool) (int64, int64, byte, byte) {
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	var firstMask, lastMask byte
	if isBit && start <= end {
		firstMask = ^byte((1<<(8-(start&7)))-1) & 0xff
		lastMask = byte((1 << (7 - (end & 7))) - 1)
		start >>= 3
		end >>= 3
	}
	return start, end, firstMask, lastMask
}

// bitUnitArg reads BITCOUNT/BITPOS's optional BYTE|BIT unit at argument i (absent: BYTE),
// replying a syntax error for anything else.
func bitUnitArg(c *Ctx, i int) (isBit, ok bool) {
	switch {
	case i >= len(c.Args), c.ArgIs(i, "byte"):
		return false, true
	case c.ArgIs(i, "bit"):
		return true, true
	}
	c.Syntax()
	return false, false
}

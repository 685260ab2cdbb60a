package tests

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/hotkv/hotkv/internal/testutil"
)

const errBitOffset = "ERR bit offset is not an integer or out of range"

func TestSetBitGetBit(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.Equal(t, int64(0), c.SetBit(ctx, "b", 7, 1).Val())
		require.Equal(t, int64(1), c.SetBit(ctx, "b", 7, 1).Val())
		require.Equal(t, "\x01", c.Get(ctx, "b").Val())
		require.Equal(t, int64(0), c.SetBit(ctx, "b", 17, 1).Val())
		require.Equal(t, "\x01\x00\x40", c.Get(ctx, "b").Val())
		require.Equal(t, int64(1), c.GetBit(ctx, "b", 17).Val())
		require.Equal(t, int64(0), c.GetBit(ctx, "b", 1000).Val())
		require.Equal(t, int64(0), c.GetBit(ctx, "nokey", 3).Val())

		// An integer value is its decimal digits: "12" is 0x31 0x32.
		require.NoError(t, c.Set(ctx, "n", 12, 0).Err())
		require.Equal(t, int64(1), c.GetBit(ctx, "n", 2).Val())
		require.Equal(t, int64(1), c.SetBit(ctx, "n", 2, 0).Val())
		require.Equal(t, "\x112", c.Get(ctx, "n").Val())

		require.EqualError(t, c.Do(ctx, "SETBIT", "b", "-1", "1").Err(), errBitOffset)
		require.EqualError(t, c.Do(ctx, "SETBIT", "b", "4294967296", "1").Err(), errBitOffset)
		require.EqualError(t, c.Do(ctx, "SETBIT", "b", "x", "1").Err(), errBitOffset)
		require.EqualError(t, c.Do(ctx, "GETBIT", "b", "x").Err(), errBitOffset)
		require.EqualError(t, c.Do(ctx, "SETBIT", "b", "1", "2").Err(), "ERR bit is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "SETBIT", "b", "1", "-1").Err(), "ERR bit is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "SETBIT", "b", "1").Err(), "ERR wrong number of arguments for 'setbit' command")
	})
}

func TestBitCountAndBitPos(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.Set(ctx, "z", "\x00\xff\x00", 0).Err())
		require.Equal(t, int64(8), c.BitCount(ctx, "z", nil).Val())
		require.Equal(t, int64(8), c.BitCount(ctx, "z", &redis.BitCount{Start: 1, End: 1}).Val())
		require.Equal(t, int64(0), c.BitCount(ctx, "z", &redis.BitCount{Start: -1, End: -1}).Val())
		require.Equal(t, int64(5), c.BitCount(ctx, "z", &redis.BitCount{Start: 5, End: 12, Unit: redis.BitCountIndexBit}).Val())
		require.Equal(t, int64(8), c.Do(ctx, "BITCOUNT", "z", "-100", "100", "byte").Val())
		require.Equal(t, int64(0), c.Do(ctx, "BITCOUNT", "z", "-1", "-2").Val())
		require.Equal(t, int64(0), c.Do(ctx, "BITCOUNT", "nokey").Val())
		require.EqualError(t, c.Do(ctx, "BITCOUNT", "z", "1").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "BITCOUNT", "z", "0", "1", "bits").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "BITCOUNT", "z", "0", "x").Err(), "ERR value is not an integer or out of range")
		require.Equal(t, int64(0), c.Do(ctx, "BITCOUNT", "nokey", "1").Val(), "a missing key counts 0 before the arguments are read, as in Redis 7.0")

		require.Equal(t, int64(8), c.BitPos(ctx, "z", 1).Val())
		require.Equal(t, int64(0), c.BitPos(ctx, "z", 0).Val())
		require.Equal(t, int64(16), c.BitPos(ctx, "z", 0, 1).Val())
		require.Equal(t, int64(-1), c.BitPos(ctx, "z", 1, 2).Val())
		require.Equal(t, int64(19), c.BitPosSpan(ctx, "z", 0, -5, -2, "bit").Val())
		require.Equal(t, int64(8), c.BitPosSpan(ctx, "z", 1, 3, 20, "bit").Val())
		require.Equal(t, int64(-1), c.BitPos(ctx, "nokey", 1).Val())
		require.Equal(t, int64(0), c.BitPos(ctx, "nokey", 0).Val())

		// Clear bits: past the end of the string when no end is given, -1 within an explicit one.
		require.NoError(t, c.Set(ctx, "ff", "\xff\xff", 0).Err())
		require.Equal(t, int64(16), c.BitPos(ctx, "ff", 0).Val())
		require.Equal(t, int64(16), c.BitPos(ctx, "ff", 0, 0).Val())
		require.Equal(t, int64(-1), c.BitPos(ctx, "ff", 0, 0, -1).Val())
		require.Equal(t, int64(-1), c.BitPosSpan(ctx, "ff", 0, 0, -1, "bit").Val())
		require.NoError(t, c.Set(ctx, "e", "", 0).Err())
		require.Equal(t, int64(-1), c.BitPos(ctx, "e", 0).Val())

		require.EqualError(t, c.Do(ctx, "BITPOS", "z", "2").Err(), "ERR The bit argument must be 1 or 0.")
		require.EqualError(t, c.Do(ctx, "BITPOS", "z", "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "BITPOS", "z", "1", "0", "1", "bits").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "BITPOS", "z", "1", "0", "1", "bit", "x").Err(), "ERR syntax error")
	})
}

func TestBitOp(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		require.NoError(t, c.MSet(ctx, "a", "\xf0\x0f", "b", "\xff").Err())
		require.Equal(t, int64(2), c.BitOpAnd(ctx, "d", "a", "b").Val())
		require.Equal(t, "\xf0\x00", c.Get(ctx, "d").Val())
		require.Equal(t, int64(2), c.BitOpOr(ctx, "d", "a", "b", "nokey").Val())
		require.Equal(t, "\xff\x0f", c.Get(ctx, "d").Val())
		require.Equal(t, int64(2), c.BitOpXor(ctx, "d", "a", "b").Val())
		require.Equal(t, "\x0f\x0f", c.Get(ctx, "d").Val())
		require.Equal(t, int64(2), c.BitOpNot(ctx, "d", "a").Val())
		require.Equal(t, "\x0f\xf0", c.Get(ctx, "d").Val())
		require.Equal(t, int64(2), c.BitOpAnd(ctx, "a", "a", "b").Val(), "the destination may be a source")
		require.Equal(t, "\xf0\x00", c.Get(ctx, "a").Val())

		require.NoError(t, c.Set(ctx, "n", 7, 0).Err())
		require.Equal(t, int64(1), c.BitOpNot(ctx, "d", "n").Val())
		require.Equal(t, "\xc8", c.Get(ctx, "d").Val())

		// An empty result deletes the destination.
		require.Equal(t, int64(0), c.BitOpAnd(ctx, "d", "nokey").Val())
		require.Equal(t, int64(0), c.Exists(ctx, "d").Val())

		require.EqualError(t, c.Do(ctx, "BITOP", "NOT", "d", "a", "b").Err(), "ERR BITOP NOT must be called with a single source key.")
		require.EqualError(t, c.Do(ctx, "BITOP", "NAND", "d", "a").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "BITOP", "AND", "d").Err(), "ERR wrong number of arguments for 'bitop' command")
	})
}

func TestBitField(t *testing.T) {
	testutil.Protocols(t, func(t *testing.T, s *testutil.Server, c *redis.Client) {
		res, err := c.BitField(ctx, "bf", "SET", "i8", 0, -100, "GET", "i8", 0, "INCRBY", "i8", 0, -100,
			"OVERFLOW", "SAT", "INCRBY", "i8", 0, -100, "GET", "u8", 0).Result()
		require.NoError(t, err)
		require.Equal(t, []int64{0, -100, 56, -44, 212}, res)

		// FAIL replies null for the failing operation and leaves the field alone.
		v, err := c.Do(ctx, "BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "i8", 0, -100, "GET", "i8", 0).Slice()
		require.NoError(t, err)
		require.Equal(t, []any{nil, int64(-44)}, v)

		// "#N" offsets are multiplied by the width; fields past the end read as zeros.
		require.Equal(t, []int64{0, 44, 0xd42c}, c.BitField(ctx, "bf", "SET", "u8", "#1", 300, "GET", "u8", 8, "GET", "u16", "#0").Val())
		require.Equal(t, []int64{0}, c.BitField(ctx, "bf", "GET", "i64", 1000).Val())
		require.Equal(t, []int64{9223372036854775807, -9223372036854775808},
			c.BitField(ctx, "w", "OVERFLOW", "SAT", "INCRBY", "i64", 0, "9223372036854775807", "INCRBY", "i64", 0, "1", "OVERFLOW", "WRAP", "INCRBY", "i64", 0, "1").Val()[1:])
		require.Equal(t, []int64{0, 9223372036854775807}, c.BitField(ctx, "u", "SET", "u63", 0, -1, "GET", "u63", 0).Val())

		// Integers are read as their digits; writing turns them into bytes.
		require.NoError(t, c.Set(ctx, "n", 12, 0).Err())
		require.Equal(t, []int64{49, 50}, c.BitFieldRO(ctx, "n", "u8", 0, "u8", 8).Val())
		require.Equal(t, []int64{49, 0}, c.BitField(ctx, "n", "GET", "u8", 0, "SET", "u8", 16, 65).Val())
		require.Equal(t, "12A", c.Get(ctx, "n").Val())

		require.Equal(t, []any{}, c.Do(ctx, "BITFIELD", "bf").Val())
		require.Equal(t, []int64{0}, c.BitFieldRO(ctx, "nokey", "i64", 0).Val())
		require.Equal(t, int64(0), c.Exists(ctx, "nokey").Val())

		const badType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."
		for _, typ := range []string{"i65", "u64", "I8", "u0", "x8", "i"} {
			require.EqualError(t, c.Do(ctx, "BITFIELD", "bf", "GET", typ, 0).Err(), badType, typ)
		}
		require.EqualError(t, c.Do(ctx, "BITFIELD", "bf", "OVERFLOW", "FOO").Err(), "ERR Invalid OVERFLOW type specified")
		require.EqualError(t, c.Do(ctx, "BITFIELD", "bf", "GET", "u8", "#-1").Err(), errBitOffset)
		require.EqualError(t, c.Do(ctx, "BITFIELD", "bf", "GET", "u8", "4294967296").Err(), errBitOffset)
		require.EqualError(t, c.Do(ctx, "BITFIELD", "bf", "SET", "u8", 0, "x").Err(), "ERR value is not an integer or out of range")
		require.EqualError(t, c.Do(ctx, "BITFIELD", "bf", "GET", "u8").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "BITFIELD", "bf", "FOO").Err(), "ERR syntax error")
		require.EqualError(t, c.Do(ctx, "BITFIELD_RO", "bf", "SET", "u8", 0, 1).Err(), "ERR BITFIELD_RO only supports the GET subcommand")
		require.Equal(t, []any{}, c.Do(ctx, "BITFIELD_RO", "bf", "OVERFLOW", "SAT").Val(), "OVERFLOW alone is read-only")
	})
}

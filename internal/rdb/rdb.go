// Package rdb reads and writes single values in Redis's RDB object format: the payload of
// DUMP and RESTORE (and MIGRATE).
//
// HotKV's own snapshots use their own format (internal/persist); DUMP payloads use Redis's so
// that data moves both ways between Redis and HotKV with the tools people already use (DUMP
// on one, RESTORE on the other). DUMP writes the plain, version-independent encodings that
// every Redis since 2.x loads (a string, a list, a set, a sorted set with binary scores, a
// hash) with the RDB version of Redis 7.0, so Redis 7.0 and later accept HotKV's payloads.
// RESTORE reads those and every compact encoding Redis 7.0 to 7.4 writes for these types
// (ziplists, listpacks, intsets, quicklists, LZF-compressed strings), and streams of every
// version (5.0 to 7.2) with their consumer groups. Hashes with per-field TTLs (7.4) are not
// read from Redis payloads; HotKV writes its own streams and such hashes under a private type
// number that only HotKV reads (TypeHotKV).
//
// A payload is the object type byte, the object, the RDB version as two little-endian bytes,
// and the CRC-64 (Jones polynomial, as Redis's crc64) of everything before it, little-endian.
package rdb

import (
	"encoding/binary"
	"errors"
	"hash/crc64"
)

// Kind is what a payload holds, in HotKV's terms.
type Kind uint8

// The kinds of value a payload carries.
const (
	String Kind = iota + 1
	List
	Set
	ZSet
	Hash
	// Private is a HotKV-only value (TypeHotKV): PrivateKind and Str carry HotKV's own
	// snapshot payload for it.
	Private
	// StreamValue is a stream from a Redis payload, in Object.Stream (RESTORE only: DUMP
	// writes HotKV's streams as Private).
	StreamValue
)

// Object is one decoded value. Members and fields are byte slices into fresh memory.
type Object struct {
	Kind Kind
	// Str is a string's value, or a Private value's payload.
	Str []byte
	// Elems are a list's elements, a set's or sorted set's members, or a hash's fields and
	// values alternately.
	Elems [][]byte
	// Scores are a sorted set's scores, Scores[i] for Elems[i].
	Scores []float64
	// PrivateKind is the HotKV store.Kind of a Private value.
	PrivateKind uint8
	// Stream is a StreamValue's content.
	Stream *Stream
}

// Redis RDB object types.
const (
	typeString         = 0
	typeList           = 1
	typeSet            = 2
	typeZSet           = 3
	typeHash           = 4
	typeZSet2          = 5
	typeListZiplist    = 10
	typeSetIntset      = 11
	typeZSetZiplist    = 12
	typeHashZiplist    = 13
	typeListQuicklist  = 14
	typeHashListpack   = 16
	typeZSetListpack   = 17
	typeListQuicklist2 = 18
	typeSetListpack    = 20

	// TypeHotKV is HotKV's private object type: a kind byte and HotKV's snapshot payload for
	// it. Redis rejects it (an unknown type), as it should: it cannot hold the value.
	TypeHotKV = 0xC8
)

// Version is the RDB version DUMP writes: Redis 7.0's, so that Redis 7.0 and later load it.
const Version = 10

// MaxVersion is the newest RDB version RESTORE accepts: Redis 7.4's. Payloads of newer
// versions may use encodings this package does not know, which Redis's own check refuses too.
const MaxVersion = 12

// Errors of Restore, worded as RESTORE replies them.
var (
	ErrChecksum = errors.New("DUMP payload version or checksum are wrong")
	ErrFormat   = errors.New("Bad data format")
)

// crcTable is Redis's CRC-64: the Jones polynomial (0xad93d23594c935a9), reflected, with a
// zero initial value and no final xor. hash/crc64 takes the reflected polynomial and inverts
// before and after, which checksum undoes.
var crcTable = crc64.MakeTable(0x95ac9329ac4bc9b5)

// checksum is Redis's crc64(0, p, len(p)).
func checksum(p []byte) uint64 {
	return ^crc64.Update(^uint64(0), crcTable, p)
}

// DumpFooterLen is the size of a DUMP payload's footer: the 2-byte RDB version and the 8-byte
// checksum. DEBUG OBJECT subtracts it to report the value's own serialized length.
const DumpFooterLen = 10

// seal appends the version and the checksum footer to a payload body.
func seal(b []byte) []byte {
	b = binary.LittleEndian.AppendUint16(b, Version)
	return binary.LittleEndian.AppendUint64(b, checksum(b))
}

// Verify checks a payload's footer as Redis's verifyDumpPayload does: at least 10 bytes, a
// version Redis could have written, and the checksum.
func Verify(p []byte) error {
	if len(p) < 10 {
		return ErrChecksum
	}
	footer := p[len(p)-DumpFooterLen:]
	if binary.LittleEndian.Uint16(footer) > MaxVersion {
		return ErrChecksum
	}
	if checksum(p[:len(p)-8]) != binary.LittleEndian.Uint64(footer[2:]) {
		return ErrChecksum
	}
	return nil
}

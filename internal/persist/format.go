// Package persist is HotKV's snapshot codec (HKVS) and the snapshot files built on it
// (ARCHITECTURE.md §5, design/ha-and-cluster.md §6.2). One codec serves disk snapshots
// (SAVE, BGSAVE, shutdown) now, and Raft snapshots, slot migration and backups later: it
// streams (no seeking), so the same bytes can go to a file, a socket or a Raft sink.
//
// A snapshot is, little-endian throughout:
//
//	file   := header chunk* footer
//	header := "HKVSNAP\x00" | u16 major | u16 minor | u32 header_len | header_json
//	          | u32 crc32c(every header byte before this field)
//	chunk  := u32 payload_len (1 .. 1 MiB) | u32 crc32c(payload) | payload
//	footer := u32 0 | u32 crc32c(footer_body) | footer_body
//	footer_body := u8 END | u64 record_count | u64 chunk_count
//	               | u32 crc32c(the chunk CRCs, each as u32) | i64 time_floor_ms
//
// The chunk payloads, concatenated, are a stream of records; a record may span chunks (a
// 512 MiB string does), chunks are only the unit of checksumming and of buffering:
//
//	record := u8 type | uvarint db | uvarint key_len | key | i64 expire_at_ms (0: none)
//	          | uvarint body_len | body
//
// Every record carries its body length, so a reader can step over a record it does not
// know. Whether it may is the type's top bit (Skippable): a newer writer sets it on optional
// records (hints, statistics) that older readers can ignore, and leaves it clear on records
// that hold data, which older readers must refuse rather than silently drop. Type numbers
// 0x01-0x3F are keyspace values (numbered as store.Kind), 0x40-0x7E server-wide objects, 0x7F
// is END (the footer; never inside the data).
//
// Readers reject a higher major version, an unknown non-skippable record type, a chunk whose
// CRC does not match, and a footer whose counts or CRC-of-CRCs disagree with the data, with an
// error naming the file and the byte offset. A minor version bump adds only skippable records
// or header fields, which older readers ignore.
package persist

import (
	"errors"
	"fmt"
	"hash/crc32"
)

// Magic starts every snapshot.
const Magic = "HKVSNAP\x00"

// The format version this package writes. Readers accept any minor of their major.
const (
	Major = 1
	Minor = 0
)

// MaxChunk is the largest chunk payload: big enough that the 8 bytes of framing are noise,
// small enough that a reader verifies a CRC before acting on a bounded amount of data.
const MaxChunk = 1 << 20

const (
	maxHeader = 1 << 20
	// maxField bounds a declared key or body length so that arithmetic on it cannot
	// overflow; reading is incremental, so a large declared length in a short or crafted
	// file costs nothing before the data runs out.
	maxField = 1 << 40
	// footerBody is the size of footer_body.
	footerBody = 1 + 8 + 8 + 4 + 8
)

// RecordType is a record's first byte.
type RecordType uint8

// Record types. Aggregate types (list, set, zset, hash, stream) take the numbers of their
// store.Kind when they arrive; until then a reader refuses them as unknown.
const (
	// Skippable, set on a type, lets a reader that does not know the type skip the record.
	Skippable RecordType = 0x80

	// TypeString is a string key. Body: u8 encoding; StringRaw: the bytes; StringInt: a
	// zigzag varint, filling the body exactly.
	TypeString RecordType = 0x01
	// Reserved for the aggregate types, numbered as store.Kind.
	TypeList   RecordType = 0x02
	TypeSet    RecordType = 0x03
	TypeZSet   RecordType = 0x04
	TypeHash   RecordType = 0x05
	TypeStream RecordType = 0x06

	// TypeLimiterDef is a named limiter (RATELIMIT.CREATE) with its totals; the key is the
	// limiter's name, db 0, no expiry. See LimiterDef.
	TypeLimiterDef RecordType = 0x40
	// TypeLimiterKey is one key's state in a named limiter; the key is the limiter key, db
	// 0, no expiry. See LimiterKey. It follows its limiter's TypeLimiterDef.
	TypeLimiterKey RecordType = 0x41
	// TypeFunction is a function library (FUNCTION LOAD): the key is the library's name, db
	// 0, no expiry; the body is its code, the "#!lua name=..." line included.
	TypeFunction RecordType = 0x42

	// TypeEnd marks the footer.
	TypeEnd RecordType = 0x7F
)

// String encodings inside a TypeString body.
const (
	StringRaw byte = 0
	StringInt byte = 1
)

func (t RecordType) String() string {
	switch t &^ Skippable {
	case TypeString:
		return "STRING"
	case TypeList:
		return "LIST"
	case TypeSet:
		return "SET"
	case TypeZSet:
		return "ZSET"
	case TypeHash:
		return "HASH"
	case TypeStream:
		return "STREAM"
	case TypeLimiterDef:
		return "LIMITER_DEF"
	case TypeLimiterKey:
		return "LIMITER_KEY"
	case TypeFunction:
		return "FUNCTION"
	case TypeEnd:
		return "END"
	}
	return fmt.Sprintf("0x%02x", uint8(t))
}

// Header is the snapshot's self-description, stored as JSON so fields can be added in a
// minor version (readers ignore fields they do not know).
type Header struct {
	// CreatedMs is the wall-clock time the snapshot was started, in Unix ms.
	CreatedMs int64 `json:"created_ms"`
	// TimeFloorMs is the largest command time the server had used when the snapshot was
	// started. The footer repeats it as of the end of the walk (which is what a loader
	// applies): commands that ran during a background save may have used later times.
	TimeFloorMs int64 `json:"time_floor_ms"`
	// HotKVVersion is the writer's release.
	HotKVVersion string `json:"hotkv_version"`
	// Databases is the writer's number of databases.
	Databases int `json:"databases"`
	// Codec is the payload compression: "" or "none" (the only one so far).
	Codec string `json:"codec,omitempty"`
	// Raft snapshots and slot migration will add node_id, raft_index, raft_term and
	// slot_ranges here (design/ha-and-cluster.md §6.2).
}

// Footer is what the footer records about the data before it.
type Footer struct {
	Records, Chunks uint64
	// ChunksCRC is the CRC32C over every chunk's CRC, in order, each as a little-endian u32.
	ChunksCRC   uint32
	TimeFloorMs int64
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Sentinel errors, matched with errors.Is on a *FormatError.
var (
	// ErrCorrupt: the file is damaged (bad magic, a CRC mismatch, truncation, a malformed
	// record).
	ErrCorrupt = errors.New("corrupt snapshot")
	// ErrVersion: the file was written by a newer HotKV whose format this one cannot read.
	ErrVersion = errors.New("unsupported snapshot version")
)

// FormatError is a snapshot that cannot be read, with where the problem is.
type FormatError struct {
	// File names the snapshot as the reader was told it (a path, or a description).
	File string
	// Offset is the byte offset in the file of the structure at fault: the chunk whose CRC
	// failed, the record that is malformed, the point where the data ends early.
	Offset int64
	Msg    string
	// Err is ErrCorrupt or ErrVersion.
	Err error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: %s at offset %d: %s", e.Err, e.File, e.Offset, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

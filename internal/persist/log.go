package persist

// The append-only log (HKVL): segments of checksummed frames, each frame one batch of effects
// (ARCHITECTURE.md §3 and §5, design/ha-and-cluster.md §6.2). Little-endian throughout:
//
//	segment := header frame*
//	header  := "HKVLOG\x00\x00" | u16 version | u64 segment_seq
//	frame   := u32 payload_len | u32 crc32c(payload) | payload
//	payload := i64 time_ms | u32 n | effect × n
//	effect  := uvarint db+1 (0: server-wide) | uvarint argc | (uvarint len | bytes) × argc
//
// time_ms is the command time on the primary of every effect in the batch (store.Effect.Time):
// a replay runs each batch at that time, never at its own clock, and raises the time floor to
// it. An effect is an ordinary command line (internal/command/effects.go); the same encoding
// will be the payload of Raft entries.
//
// A frame is written whole or not at all as far as a reader is concerned: its CRC covers the
// whole payload, and the reader verifies it before decoding a byte. A crash while appending can
// only leave the final frame of the last segment incomplete (or, after a power loss, with bytes
// that never reached the disk): that is a torn tail, which loading may cut off. A bad frame
// anywhere else, or followed by a valid frame, is corruption.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/hotkv/hotkv/internal/store"
)

// LogMagic starts every log segment.
const LogMagic = "HKVLOG\x00\x00"

// LogVersion is the segment format this package writes and reads.
const LogVersion = 1

// LogHeaderSize is the size of a segment header: magic, version, sequence number.
const LogHeaderSize = 8 + 2 + 8

const (
	frameHeaderSize = 8
	// batchHeaderSize is the smallest payload: the time and the effect count.
	batchHeaderSize = 8 + 4
	// maxLogDB bounds a decoded database number, as the snapshot reader does.
	maxLogDB = 1<<31 - 1
)

// Sentinel errors of the log, matched with errors.Is on a *FormatError.
var (
	// ErrLogCorrupt: the log is damaged somewhere a crash cannot have damaged it.
	ErrLogCorrupt = errors.New("corrupt append-only log")
	// ErrLogTorn: the final frame of the last segment is incomplete or fails its CRC and
	// nothing valid follows it, as a crash while appending leaves it. Everything before its
	// offset is intact.
	ErrLogTorn = errors.New("torn append-only log tail")
	// ErrLogVersion: the segment was written by a newer HotKV.
	ErrLogVersion = errors.New("unsupported append-only log version")
)

// Batch is one frame of the log: effects taken at one command time.
type Batch struct {
	// TimeMs is the primary's command time of every effect (each Effect.Time equals it).
	TimeMs  int64
	Effects []store.Effect
	// Offset is the file offset of the frame; End the offset just past it.
	Offset, End int64
}

// AppendLogHeader appends a segment header for segment seq to dst.
func AppendLogHeader(dst []byte, seq uint64) []byte {
	dst = append(dst, LogMagic...)
	dst = binary.LittleEndian.AppendUint16(dst, LogVersion)
	return binary.LittleEndian.AppendUint64(dst, seq)
}

// BeginBatch starts a frame at the end of dst for effects taken at timeMs. Append the effects
// with AppendEffect, then seal it with EndBatch(dst, start, n).
func BeginBatch(dst []byte, timeMs int64) (out []byte, start int) {
	start = len(dst)
	dst = append(dst, make([]byte, frameHeaderSize+batchHeaderSize)...)
	binary.LittleEndian.PutUint64(dst[start+frameHeaderSize:], uint64(timeMs))
	return dst, start
}

// AppendEffect appends one effect's encoding to an open batch.
func AppendEffect(dst []byte, e store.Effect) []byte {
	dst = binary.AppendUvarint(dst, uint64(e.DB+1))
	dst = binary.AppendUvarint(dst, uint64(len(e.Args)))
	for _, a := range e.Args {
		dst = binary.AppendUvarint(dst, uint64(len(a)))
		dst = append(dst, a...)
	}
	return dst
}

// EndBatch seals the frame BeginBatch started at start, holding n effects: it fills in the
// payload length, the effect count and the CRC.
func EndBatch(dst []byte, start int, n int) {
	payload := dst[start+frameHeaderSize:]
	binary.LittleEndian.PutUint32(payload[8:], uint32(n))
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(dst[start+4:], crc32.Checksum(payload, castagnoli))
}

// AppendBatch appends one whole frame holding effects, taken at timeMs.
func AppendBatch(dst []byte, timeMs int64, effects []store.Effect) []byte {
	dst, start := BeginBatch(dst, timeMs)
	for _, e := range effects {
		dst = AppendEffect(dst, e)
	}
	EndBatch(dst, start, len(effects))
	return dst
}

// LogReader reads the frames of one segment, verifying each frame's CRC before decoding it.
type LogReader struct {
	ra   io.ReaderAt
	size int64
	name string
	last bool
	seq  uint64
	off  int64 // offset of the next frame
	br   *bufio.Reader
	err  error
}

// NewLogReader reads and checks the header of a segment of size bytes. name is what errors
// call the file; last says whether it is the last segment of its log, the only one whose
// final frame may be torn.
func NewLogReader(ra io.ReaderAt, size int64, name string, last bool) (*LogReader, error) {
	r := &LogReader{ra: ra, size: size, name: name, last: last}
	var h [LogHeaderSize]byte
	n, err := ra.ReadAt(h[:min(int64(len(h)), size)], 0)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if n < 8 || string(h[:8]) != LogMagic {
		return nil, r.corrupt(0, "bad magic %q: not a HotKV append-only log segment", h[:n])
	}
	if n < LogHeaderSize {
		return nil, r.corrupt(int64(n), "the segment header is truncated (%d of %d bytes)", n, LogHeaderSize)
	}
	if v := binary.LittleEndian.Uint16(h[8:]); v != LogVersion {
		if v > LogVersion {
			return nil, &FormatError{File: name, Offset: 8, Err: ErrLogVersion,
				Msg: fmt.Sprintf("log format version %d is newer than this HotKV reads (%d); upgrade HotKV to load it", v, LogVersion)}
		}
		return nil, r.corrupt(8, "log format version %d", v)
	}
	r.seq = binary.LittleEndian.Uint64(h[10:])
	r.off = LogHeaderSize
	r.br = bufio.NewReaderSize(io.NewSectionReader(ra, r.off, size-r.off), 256<<10)
	return r, nil
}

// Seq is the segment's sequence number from its header.
func (r *LogReader) Seq() uint64 { return r.seq }

// Offset is the offset just past the last frame read successfully: where a torn tail starts.
func (r *LogReader) Offset() int64 { return r.off }

// Next returns the next batch, or io.EOF after the last one. A bad frame is a *FormatError
// with ErrLogTorn (see LogReader's last) or ErrLogCorrupt, naming the frame's offset; every
// error is final. The batch's memory is its own: effects may be kept.
func (r *LogReader) Next() (*Batch, error) {
	if r.err != nil {
		return nil, r.err
	}
	b, err := r.next()
	if err != nil {
		r.err = err
	}
	return b, err
}

func (r *LogReader) next() (*Batch, error) {
	off := r.off
	left := r.size - off
	if left == 0 {
		return nil, io.EOF
	}
	if left < frameHeaderSize {
		return nil, r.bad(off, "the last frame is incomplete (%d bytes of its header)", left)
	}
	var fh [frameHeaderSize]byte
	if _, err := io.ReadFull(r.br, fh[:]); err != nil {
		return nil, fmt.Errorf("reading %s at offset %d: %w", r.name, off, err)
	}
	n := int64(binary.LittleEndian.Uint32(fh[:]))
	crc := binary.LittleEndian.Uint32(fh[4:])
	if n < batchHeaderSize {
		return nil, r.bad(off, "frame length %d is shorter than a batch header", n)
	}
	if n > left-frameHeaderSize {
		return nil, r.bad(off, "the last frame is incomplete (%d of %d payload bytes)", left-frameHeaderSize, n)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r.br, payload); err != nil {
		return nil, fmt.Errorf("reading %s at offset %d: %w", r.name, off, err)
	}
	if got := crc32.Checksum(payload, castagnoli); got != crc {
		return nil, r.bad(off, "frame CRC mismatch (stored %08x, computed %08x)", crc, got)
	}
	b, msg := decodeBatch(payload)
	if msg != "" {
		// The CRC matched, so this is what was written: not a torn write.
		return nil, r.corrupt(off, "malformed batch: %s", msg)
	}
	b.Offset, b.End = off, off+frameHeaderSize+n
	r.off = b.End
	return b, nil
}

// decodeBatch decodes a verified payload; msg says what is wrong with a malformed one. The
// effects' arguments point into payload.
func decodeBatch(p []byte) (*Batch, string) {
	b := &Batch{TimeMs: int64(binary.LittleEndian.Uint64(p))}
	n := binary.LittleEndian.Uint32(p[8:])
	p = p[batchHeaderSize:]
	// Every effect takes at least 3 bytes (db, argc, one empty argument).
	if uint64(n) > uint64(len(p))/3 {
		return nil, fmt.Sprintf("%d effects cannot fit in %d bytes", n, len(p))
	}
	b.Effects = make([]store.Effect, n)
	uv := func(what string) (uint64, string) {
		v, k := binary.Uvarint(p)
		if k <= 0 {
			return 0, "bad varint in " + what
		}
		p = p[k:]
		return v, ""
	}
	for i := range b.Effects {
		db, msg := uv("the database")
		if msg != "" {
			return nil, msg
		}
		if db > maxLogDB {
			return nil, fmt.Sprintf("effect %d: database %d out of range", i, int64(db)-1)
		}
		argc, msg := uv("the argument count")
		if msg != "" {
			return nil, msg
		}
		if argc == 0 || argc > uint64(len(p)) {
			return nil, fmt.Sprintf("effect %d: argument count %d out of range", i, argc)
		}
		args := make([][]byte, argc)
		for j := range args {
			l, msg := uv("an argument length")
			if msg != "" {
				return nil, msg
			}
			if l > uint64(len(p)) {
				return nil, fmt.Sprintf("effect %d: argument %d of %d bytes runs past the batch", i, j, l)
			}
			args[j] = p[:l:l]
			p = p[l:]
		}
		b.Effects[i] = store.Effect{DB: int(db) - 1, Args: args, Time: b.TimeMs}
	}
	if len(p) != 0 {
		return nil, fmt.Sprintf("%d bytes after the last effect", len(p))
	}
	return b, ""
}

func (r *LogReader) corrupt(off int64, format string, args ...any) error {
	return &FormatError{File: r.name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: ErrLogCorrupt}
}

// bad reports the bad frame at off: a torn tail if this is the last segment and no valid
// frame starts anywhere after off, else corruption.
func (r *LogReader) bad(off int64, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if !r.last {
		return &FormatError{File: r.name, Offset: off, Err: ErrLogCorrupt, Msg: msg + " (not in the last segment)"}
	}
	if at, ok := r.validFrameAfter(off + 1); ok {
		return &FormatError{File: r.name, Offset: off, Err: ErrLogCorrupt,
			Msg: fmt.Sprintf("%s, and a valid frame follows at offset %d", msg, at)}
	}
	return &FormatError{File: r.name, Offset: off, Err: ErrLogTorn, Msg: msg}
}

// validFrameAfter looks for a valid frame (plausible length, matching CRC, decodable batch)
// starting at any offset from start on. Torn bytes rarely look like a frame header whose
// length fits in the rest of the file, so the CRC is computed for few candidates; the scan
// stops at the first valid frame, which real data past a damaged frame yields within a frame.
func (r *LogReader) validFrameAfter(start int64) (int64, bool) {
	const window = 1 << 20
	buf := make([]byte, min(window+frameHeaderSize, max(0, r.size-start)))
	for base := start; base+frameHeaderSize+batchHeaderSize <= r.size; base += window {
		n, err := r.ra.ReadAt(buf[:min(int64(len(buf)), r.size-base)], base)
		if n < len(buf) && n < frameHeaderSize+batchHeaderSize {
			return 0, false
		}
		if err != nil && err != io.EOF {
			return 0, false
		}
		for i := 0; i < min(n, window) && i+frameHeaderSize <= n; i++ {
			at := base + int64(i)
			l := int64(binary.LittleEndian.Uint32(buf[i:]))
			if l < batchHeaderSize || l > r.size-at-frameHeaderSize {
				continue
			}
			payload := make([]byte, l)
			if _, err := r.ra.ReadAt(payload, at+frameHeaderSize); err != nil && err != io.EOF {
				continue
			}
			if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(buf[i+4:]) {
				continue
			}
			if _, msg := decodeBatch(payload); msg == "" {
				return at, true
			}
		}
	}
	return 0, false
}

// DecodeFrames decodes a run of frames held in memory (the payload of a Raft entry, which is
// encoded exactly as a log segment's frames), verifying each frame's CRC. The effects point
// into p.
func DecodeFrames(p []byte) ([]*Batch, error) {
	var out []*Batch
	off := int64(0)
	for len(p) > 0 {
		if len(p) < frameHeaderSize {
			return nil, fmt.Errorf("%w: %d stray bytes after the last frame", ErrLogCorrupt, len(p))
		}
		n := int(binary.LittleEndian.Uint32(p))
		crc := binary.LittleEndian.Uint32(p[4:])
		if n < batchHeaderSize || n > len(p)-frameHeaderSize {
			return nil, fmt.Errorf("%w: frame at %d has a bad length %d", ErrLogCorrupt, off, n)
		}
		payload := p[frameHeaderSize : frameHeaderSize+n]
		if got := crc32.Checksum(payload, castagnoli); got != crc {
			return nil, fmt.Errorf("%w: frame at %d fails its CRC", ErrLogCorrupt, off)
		}
		b, msg := decodeBatch(payload)
		if msg != "" {
			return nil, fmt.Errorf("%w: frame at %d: %s", ErrLogCorrupt, off, msg)
		}
		b.Offset, b.End = off, off+int64(frameHeaderSize+n)
		out = append(out, b)
		off = b.End
		p = p[frameHeaderSize+n:]
	}
	return out, nil
}

package persist

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
)

// Encoder writes a snapshot stream. Records are framed into chunks in memory; nothing
// reaches the underlying writer until Flush or Close. That split is what lets a background
// save encode a shard's keys under the shard's lock and do the I/O after unlocking.
//
// An Encoder is not safe for concurrent use.
type Encoder struct {
	w io.Writer
	// out holds framed bytes not yet written: sealed chunks up to sealed, then the open
	// chunk (its 8-byte frame header reserved at open, filled in when sealed).
	out    []byte
	sealed int
	open   int // offset in out of the open chunk's frame header, or -1
	// Counters for the footer.
	records, chunks uint64
	crcs            uint32 // running CRC32C over the chunk CRCs
	closed          bool
	hdr             [binary.MaxVarintLen64*3 + 9]byte
}

// NewEncoder starts a snapshot on w with header h; the header is buffered like the records.
func NewEncoder(w io.Writer, h Header) (*Encoder, error) {
	js, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	e := &Encoder{w: w, open: -1, out: make([]byte, 0, 64<<10)}
	e.out = append(e.out, Magic...)
	e.out = binary.LittleEndian.AppendUint16(e.out, Major)
	e.out = binary.LittleEndian.AppendUint16(e.out, Minor)
	e.out = binary.LittleEndian.AppendUint32(e.out, uint32(len(js)))
	e.out = append(e.out, js...)
	e.out = binary.LittleEndian.AppendUint32(e.out, crc32.Checksum(e.out, castagnoli))
	e.sealed = len(e.out)
	return e, nil
}

// Record appends one record whose body is the concatenation of parts.
func (e *Encoder) Record(t RecordType, db int, key []byte, expireAt int64, parts ...[]byte) {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	h := e.hdr[:0]
	h = append(h, byte(t))
	h = binary.AppendUvarint(h, uint64(db))
	h = binary.AppendUvarint(h, uint64(len(key)))
	e.write(h)
	e.write(key)
	h = e.hdr[:0]
	h = binary.LittleEndian.AppendUint64(h, uint64(expireAt))
	h = binary.AppendUvarint(h, uint64(n))
	e.write(h)
	for _, p := range parts {
		e.write(p)
	}
	e.records++
}

// StringRaw appends a string key holding raw bytes.
func (e *Encoder) StringRaw(db int, key []byte, expireAt int64, val []byte) {
	e.Record(TypeString, db, key, expireAt, []byte{StringRaw}, val)
}

// StringInt appends a string key holding an integer-encoded value.
func (e *Encoder) StringInt(db int, key []byte, expireAt int64, n int64) {
	var b [1 + binary.MaxVarintLen64]byte
	b[0] = StringInt
	e.Record(TypeString, db, key, expireAt, binary.AppendVarint(b[:1], n))
}

// LimiterDef appends a named limiter's definition and totals.
func (e *Encoder) LimiterDef(d LimiterDef) {
	var b [128]byte
	e.Record(TypeLimiterDef, 0, []byte(d.Name), 0, d.appendBody(b[:0]))
}

// LimiterKey appends one key's state in a named limiter.
func (e *Encoder) LimiterKey(k LimiterKey) {
	var b [128]byte
	e.Record(TypeLimiterKey, 0, k.Key, 0, k.appendBody(b[:0]))
}

// write copies p into open chunks, sealing each one that fills up.
func (e *Encoder) write(p []byte) {
	for len(p) > 0 {
		if e.open < 0 {
			e.open = len(e.out)
			e.out = append(e.out, 0, 0, 0, 0, 0, 0, 0, 0)
		}
		room := MaxChunk - (len(e.out) - e.open - 8)
		n := min(room, len(p))
		e.out = append(e.out, p[:n]...)
		p = p[n:]
		if n == room {
			e.seal()
		}
	}
}

// seal fills in the open chunk's frame header.
func (e *Encoder) seal() {
	if e.open < 0 {
		return
	}
	payload := e.out[e.open+8:]
	crc := crc32.Checksum(payload, castagnoli)
	binary.LittleEndian.PutUint32(e.out[e.open:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(e.out[e.open+4:], crc)
	var c [4]byte
	binary.LittleEndian.PutUint32(c[:], crc)
	e.crcs = crc32.Update(e.crcs, castagnoli, c[:])
	e.chunks++
	e.open = -1
	e.sealed = len(e.out)
}

// Buffered is the number of bytes encoded and not yet written.
func (e *Encoder) Buffered() int { return len(e.out) }

// Flush writes the sealed chunks. The open chunk stays in memory until it fills or Close.
func (e *Encoder) Flush() error {
	if e.sealed == 0 {
		return nil
	}
	if _, err := e.w.Write(e.out[:e.sealed]); err != nil {
		return err
	}
	rest := len(e.out) - e.sealed
	if cap(e.out) > 4*MaxChunk && rest < MaxChunk {
		// A huge shard grew the buffer; give the memory back.
		nb := make([]byte, rest, 2*MaxChunk)
		copy(nb, e.out[e.sealed:])
		e.out = nb
	} else {
		copy(e.out, e.out[e.sealed:])
		e.out = e.out[:rest]
	}
	if e.open >= 0 {
		e.open -= e.sealed
	}
	e.sealed = 0
	return nil
}

// Close seals the last chunk, appends the footer with timeFloorMs and writes everything. It
// does not close the underlying writer.
func (e *Encoder) Close(timeFloorMs int64) error {
	if e.closed {
		return errors.New("persist: encoder already closed")
	}
	e.closed = true
	e.seal()
	body := make([]byte, 0, footerBody)
	body = append(body, byte(TypeEnd))
	body = binary.LittleEndian.AppendUint64(body, e.records)
	body = binary.LittleEndian.AppendUint64(body, e.chunks)
	body = binary.LittleEndian.AppendUint32(body, e.crcs)
	body = binary.LittleEndian.AppendUint64(body, uint64(timeFloorMs))
	e.out = binary.LittleEndian.AppendUint32(e.out, 0)
	e.out = binary.LittleEndian.AppendUint32(e.out, crc32.Checksum(body, castagnoli))
	e.out = append(e.out, body...)
	e.sealed = len(e.out)
	return e.Flush()
}

// Records is the number of records appended so far.
func (e *Encoder) Records() uint64 { return e.records }

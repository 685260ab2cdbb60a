package persist

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Record is one decoded record. Key and Body are only valid until the next call to Next.
type Record struct {
	Type     RecordType
	DB       int
	Key      []byte
	ExpireAt int64
	Body     []byte
	// Offset is the file offset of the record's type byte.
	Offset int64
}

// Decoder reads a snapshot stream, verifying every chunk's CRC before handing out a byte of
// it, and the footer against what it read.
type Decoder struct {
	r    *bufio.Reader
	name string
	off  int64 // file offset of the next byte of r
	hdr  Header

	chunk    []byte
	pos      int
	chunkOff int64 // file offset of chunk[0]
	footer   bool  // the footer frame has been reached

	records, chunks uint64
	crcs            uint32
	foot            Footer
	done            bool
	err             error

	rec     Record
	keyBuf  []byte
	bodyBuf []byte
	expBuf  [8]byte
}

// NewDecoder reads and checks the header. name is what errors call the file.
func NewDecoder(r io.Reader, name string) (*Decoder, error) {
	d := &Decoder{r: bufio.NewReaderSize(r, 256<<10), name: name}
	var fixed [16]byte
	if err := d.readFull(fixed[:8], "the magic"); err != nil {
		return nil, d.notSnapshot(err)
	}
	if string(fixed[:8]) != Magic {
		return nil, d.corrupt(0, "bad magic %q: not a HotKV snapshot", fixed[:8])
	}
	if err := d.readFull(fixed[8:16], "the header"); err != nil {
		return nil, err
	}
	major := binary.LittleEndian.Uint16(fixed[8:])
	minor := binary.LittleEndian.Uint16(fixed[10:])
	if major > Major {
		return nil, &FormatError{File: name, Offset: 8, Err: ErrVersion,
			Msg: fmt.Sprintf("format version %d.%d is newer than this HotKV reads (%d.x); upgrade HotKV to load it", major, minor, Major)}
	}
	if major == 0 {
		return nil, d.corrupt(8, "format major version 0")
	}
	n := binary.LittleEndian.Uint32(fixed[12:])
	if n > maxHeader {
		return nil, d.corrupt(12, "header length %d exceeds %d", n, maxHeader)
	}
	js := make([]byte, n)
	if err := d.readFull(js, "the header"); err != nil {
		return nil, err
	}
	var crcb [4]byte
	if err := d.readFull(crcb[:], "the header CRC"); err != nil {
		return nil, err
	}
	crc := crc32.Update(crc32.Checksum(fixed[:], castagnoli), castagnoli, js)
	if got := binary.LittleEndian.Uint32(crcb[:]); got != crc {
		return nil, d.corrupt(0, "header CRC mismatch (stored %08x, computed %08x)", got, crc)
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&d.hdr); err != nil {
		return nil, d.corrupt(16, "bad header: %v", err)
	}
	if d.hdr.Codec != "" && d.hdr.Codec != "none" {
		return nil, &FormatError{File: name, Offset: 16, Err: ErrVersion,
			Msg: fmt.Sprintf("payload codec %q is not supported by this HotKV", d.hdr.Codec)}
	}
	return d, nil
}

// Header is the snapshot's header.
func (d *Decoder) Header() Header { return d.hdr }

// Footer is the verified footer, once Next has returned io.EOF.
func (d *Decoder) Footer() Footer { return d.foot }

// Corrupt builds the error for a record that is well framed but whose content is invalid (a
// loader's checks), at the record's offset.
func (d *Decoder) Corrupt(off int64, format string, args ...any) error {
	return d.corrupt(off, format, args...)
}

func (d *Decoder) corrupt(off int64, format string, args ...any) error {
	return &FormatError{File: d.name, Offset: off, Msg: fmt.Sprintf(format, args...), Err: ErrCorrupt}
}

func (d *Decoder) notSnapshot(err error) error {
	var fe *FormatError
	if errors.As(err, &fe) {
		fe.Msg = "file too short to be a HotKV snapshot"
	}
	return err
}

// readFull reads exactly len(p) bytes, turning a short read into a truncation error at the
// offset where the data ends.
func (d *Decoder) readFull(p []byte, what string) error {
	n, err := io.ReadFull(d.r, p)
	d.off += int64(n)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return d.corrupt(d.off, "file ends in the middle of %s: the snapshot is truncated", what)
	}
	if err != nil {
		return fmt.Errorf("reading snapshot %s at offset %d: %w", d.name, d.off, err)
	}
	return nil
}

// errFooter is nextChunk's signal that the footer frame follows instead of a chunk.
var errFooter = errors.New("footer")

// nextChunk loads and verifies the next chunk.
func (d *Decoder) nextChunk() error {
	if d.footer {
		return errFooter
	}
	start := d.off
	var fh [8]byte
	if err := d.readFull(fh[:], "a chunk header (no END footer)"); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(fh[:])
	crc := binary.LittleEndian.Uint32(fh[4:])
	if n == 0 {
		d.footer = true
		d.chunkOff = start
		d.foot.ChunksCRC = crc // stash the footer CRC for readFooter
		return errFooter
	}
	if n > MaxChunk {
		return d.corrupt(start, "chunk length %d exceeds %d", n, MaxChunk)
	}
	if cap(d.chunk) < int(n) {
		d.chunk = make([]byte, n, max(int(n), 64<<10))
	}
	d.chunk = d.chunk[:n]
	if err := d.readFull(d.chunk, "a chunk"); err != nil {
		return err
	}
	if got := crc32.Checksum(d.chunk, castagnoli); got != crc {
		return d.corrupt(start, "chunk %d CRC mismatch (stored %08x, computed %08x)", d.chunks, crc, got)
	}
	var c [4]byte
	binary.LittleEndian.PutUint32(c[:], crc)
	d.crcs = crc32.Update(d.crcs, castagnoli, c[:])
	d.chunks++
	d.chunkOff = start + 8
	d.pos = 0
	return nil
}

// at is the file offset of the next unread payload byte.
func (d *Decoder) at() int64 { return d.chunkOff + int64(d.pos) }

// more makes at least one payload byte available; inside a record, running into the footer
// means the record was cut short.
func (d *Decoder) more() error {
	for d.pos >= len(d.chunk) {
		if err := d.nextChunk(); err != nil {
			if err == errFooter {
				return d.corrupt(d.chunkOff, "a record is cut short by the END footer")
			}
			return err
		}
	}
	return nil
}

func (d *Decoder) readByte() (byte, error) {
	if err := d.more(); err != nil {
		return 0, err
	}
	d.pos++
	return d.chunk[d.pos-1], nil
}

func (d *Decoder) readUvarint() (uint64, error) {
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := d.readByte()
		if err != nil {
			return 0, err
		}
		if b < 0x80 {
			if i == binary.MaxVarintLen64-1 && b > 1 {
				break
			}
			return x | uint64(b)<<s, nil
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	return 0, d.corrupt(d.at(), "bad varint")
}

// readN appends n payload bytes to buf[:0], across chunks as needed.
func (d *Decoder) readN(buf []byte, n uint64) ([]byte, error) {
	buf = buf[:0]
	for n > 0 {
		if err := d.more(); err != nil {
			return buf, err
		}
		take := min(n, uint64(len(d.chunk)-d.pos))
		buf = append(buf, d.chunk[d.pos:d.pos+int(take)]...)
		d.pos += int(take)
		n -= take
	}
	return buf, nil
}

// Next returns the next record, skipping records of unknown skippable types. At the end of
// the data it verifies the footer and that nothing follows it, then returns io.EOF. Any other
// error is final.
func (d *Decoder) Next() (*Record, error) {
	if d.err != nil {
		return nil, d.err
	}
	for {
		rec, err := d.next()
		if err != nil {
			d.err = err
			return nil, err
		}
		if rec != nil {
			return rec, nil
		}
	}
}

// next reads one record; it returns nil, nil for a skipped record.
func (d *Decoder) next() (*Record, error) {
	if d.done {
		return nil, io.EOF
	}
	for d.pos >= len(d.chunk) {
		if err := d.nextChunk(); err != nil {
			if err == errFooter {
				return nil, d.readFooter()
			}
			return nil, err
		}
	}
	r := &d.rec
	r.Offset = d.at()
	t, _ := d.readByte()
	r.Type = RecordType(t)
	if r.Type&^Skippable == TypeEnd || r.Type == 0 {
		return nil, d.corrupt(r.Offset, "invalid record type %s", r.Type)
	}
	db, err := d.readUvarint()
	if err != nil {
		return nil, err
	}
	if db > 1<<31-1 {
		return nil, d.corrupt(r.Offset, "database index %d out of range", db)
	}
	r.DB = int(db)
	kl, err := d.readUvarint()
	if err != nil {
		return nil, err
	}
	if kl > maxField {
		return nil, d.corrupt(r.Offset, "key length %d out of range", kl)
	}
	if d.keyBuf, err = d.readN(d.keyBuf, kl); err != nil {
		return nil, err
	}
	r.Key = d.keyBuf
	var exp []byte
	if exp, err = d.readN(d.expBuf[:0], 8); err != nil {
		return nil, err
	}
	r.ExpireAt = int64(binary.LittleEndian.Uint64(exp))
	if r.ExpireAt < 0 {
		return nil, d.corrupt(r.Offset, "negative expire time %d", r.ExpireAt)
	}
	bl, err := d.readUvarint()
	if err != nil {
		return nil, err
	}
	if bl > maxField {
		return nil, d.corrupt(r.Offset, "body length %d out of range", bl)
	}
	if d.bodyBuf, err = d.readN(d.bodyBuf, bl); err != nil {
		return nil, err
	}
	r.Body = d.bodyBuf
	d.records++
	if cap(d.bodyBuf) > 4*MaxChunk && bl < MaxChunk {
		d.bodyBuf = nil // drop a buffer grown by one huge value (r.Body keeps it alive meanwhile)
	}
	if !known(r.Type) {
		if r.Type&Skippable != 0 {
			return nil, nil
		}
		return nil, d.corrupt(r.Offset, "unknown record type %s: written by a newer HotKV?", r.Type)
	}
	return r, nil
}

// known reports whether this version understands t.
func known(t RecordType) bool {
	switch t {
	case TypeString, TypeList, TypeSet, TypeZSet, TypeHash, TypeStream, TypeLimiterDef, TypeLimiterKey, TypeFunction:
		return true
	}
	return false
}

// readFooter verifies the footer frame (whose CRC nextChunk stashed) and the end of file.
func (d *Decoder) readFooter() error {
	start := d.chunkOff
	crc := d.foot.ChunksCRC
	var body [footerBody]byte
	if err := d.readFull(body[:], "the END footer"); err != nil {
		return err
	}
	if got := crc32.Checksum(body[:], castagnoli); got != crc {
		return d.corrupt(start, "END footer CRC mismatch (stored %08x, computed %08x)", crc, got)
	}
	if RecordType(body[0]) != TypeEnd {
		return d.corrupt(start+8, "footer type %s is not END", RecordType(body[0]))
	}
	f := Footer{
		Records:     binary.LittleEndian.Uint64(body[1:]),
		Chunks:      binary.LittleEndian.Uint64(body[9:]),
		ChunksCRC:   binary.LittleEndian.Uint32(body[17:]),
		TimeFloorMs: int64(binary.LittleEndian.Uint64(body[21:])),
	}
	switch {
	case f.Records != d.records:
		return d.corrupt(start, "END footer counts %d records, the data holds %d", f.Records, d.records)
	case f.Chunks != d.chunks:
		return d.corrupt(start, "END footer counts %d chunks, the data holds %d", f.Chunks, d.chunks)
	case f.ChunksCRC != d.crcs:
		return d.corrupt(start, "END footer CRC of chunk CRCs mismatch (stored %08x, computed %08x)", f.ChunksCRC, d.crcs)
	}
	if _, err := d.r.ReadByte(); err != io.EOF {
		if err != nil {
			return fmt.Errorf("reading snapshot %s at offset %d: %w", d.name, d.off, err)
		}
		return d.corrupt(d.off, "unexpected data after the END footer")
	}
	d.foot = f
	d.done = true
	return io.EOF
}

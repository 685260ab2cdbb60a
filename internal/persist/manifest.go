package persist

// The append-only log's directory, laid out as Redis 7's multi-part AOF (design/ha-and-cluster.md
// §6.2): dir/appenddirname holds
//
//	<appendfilename>.manifest              which files make up the log, in order
//	<appendfilename>.<seq>.base.hkvs       optional: an HKVS snapshot the log starts from
//	<appendfilename>.<seq>.incr.hkvl       log segments (HKVL), replayed in manifest order
//
// The manifest is text, one file per line, as Redis writes it:
//
//	file appendonly.hkvl.1.base.hkvs seq 1 type b
//	file appendonly.hkvl.1.incr.hkvl seq 1 type i
//
// Type b is the base (at most one, listed first), i an incremental segment (sequence numbers
// strictly increasing), h a history file a rewrite has replaced (ignored; left for deletion).
// Unknown keys on a line are ignored, so later versions can add some. The manifest is replaced
// atomically (WriteFile: temp file, fsync, rename, directory fsync), so a rewrite that creates a
// new base and a new segment switches to them all at once.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Manifest file types.
const (
	ManifestBase    = "b"
	ManifestIncr    = "i"
	ManifestHistory = "h"
)

// ManifestFile is one line of the manifest.
type ManifestFile struct {
	Name string
	Seq  uint64
	Type string
}

// Manifest lists the files of an append-only log: an optional base snapshot, then the
// segments in replay order.
type Manifest struct {
	Base  *ManifestFile
	Incrs []ManifestFile
}

// ManifestName is the manifest's file name for the log named filename (appendfilename).
func ManifestName(filename string) string { return filename + ".manifest" }

// IncrName is the name of incremental segment seq.
func IncrName(filename string, seq uint64) string {
	return filename + "." + strconv.FormatUint(seq, 10) + ".incr.hkvl"
}

// BaseName is the name of base snapshot seq.
func BaseName(filename string, seq uint64) string {
	return filename + "." + strconv.FormatUint(seq, 10) + ".base.hkvs"
}

// ValidLogFileName reports whether name can name a file of the log: a plain name (no path,
// no whitespace or quotes, which the manifest's line format cannot carry).
func ValidLogFileName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\\ \t\r\n\"'")
}

// Encode renders the manifest in its text form.
func (m *Manifest) Encode() []byte {
	var b bytes.Buffer
	line := func(f ManifestFile) { fmt.Fprintf(&b, "file %s seq %d type %s\n", f.Name, f.Seq, f.Type) }
	if m.Base != nil {
		line(*m.Base)
	}
	for _, f := range m.Incrs {
		line(f)
	}
	return b.Bytes()
}

// ParseManifest parses a manifest. name is what errors call it; they are *FormatError with
// ErrLogCorrupt naming the offset of the bad line.
func ParseManifest(data []byte, name string) (*Manifest, error) {
	m := &Manifest{}
	bad := func(off int, format string, args ...any) error {
		return &FormatError{File: name, Offset: int64(off), Err: ErrLogCorrupt,
			Msg: "invalid manifest line: " + fmt.Sprintf(format, args...)}
	}
	off := 0
	seen := map[string]bool{}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil, bad(off, "no newline at the end of the manifest (truncated?)")
		}
		line := strings.TrimSuffix(string(data[:i]), "\r")
		lineOff := off
		data, off = data[i+1:], off+i+1
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		fields := strings.Fields(trimmed)
		if len(fields)%2 != 0 {
			return nil, bad(lineOff, "%q: keys and values do not pair up", line)
		}
		kv := map[string]string{}
		for j := 0; j < len(fields); j += 2 {
			kv[fields[j]] = fields[j+1]
		}
		f := ManifestFile{Name: kv["file"], Type: kv["type"]}
		if !ValidLogFileName(f.Name) {
			return nil, bad(lineOff, "%q: missing or invalid file name", line)
		}
		seq, err := strconv.ParseUint(kv["seq"], 10, 64)
		if err != nil || seq == 0 {
			return nil, bad(lineOff, "%q: missing or invalid seq", line)
		}
		f.Seq = seq
		if seen[f.Name] {
			return nil, bad(lineOff, "%q: file listed twice", line)
		}
		seen[f.Name] = true
		switch f.Type {
		case ManifestBase:
			if m.Base != nil || len(m.Incrs) > 0 {
				return nil, bad(lineOff, "%q: a base must come first, and only one", line)
			}
			m.Base = &f
		case ManifestIncr:
			if n := len(m.Incrs); n > 0 && m.Incrs[n-1].Seq >= seq {
				return nil, bad(lineOff, "%q: incr seq %d after seq %d", line, seq, m.Incrs[n-1].Seq)
			}
			m.Incrs = append(m.Incrs, f)
		case ManifestHistory:
		default:
			return nil, bad(lineOff, "%q: unknown file type %q", line, f.Type)
		}
	}
	if len(m.Incrs) == 0 {
		return nil, bad(off, "the manifest lists no incr segment")
	}
	return m, nil
}

// ReadManifest reads the manifest at path. A missing file satisfies errors.Is(err,
// fs.ErrNotExist).
func ReadManifest(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseManifest(data, path)
}

// WriteManifest replaces the manifest at path atomically.
func WriteManifest(path string, m *Manifest) error {
	_, err := WriteFile(path, func(w io.Writer) error {
		_, err := w.Write(m.Encode())
		return err
	})
	return err
}

// CreateSegment creates incremental segment seq at path, which must not exist, with its header
// written and fsynced (and the directory fsynced), and returns it open for appending.
func CreateSegment(path string, seq uint64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(AppendLogHeader(nil, seq)); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// LogReplay receives what ReadLog reads.
type LogReplay struct {
	// Base is called with the base snapshot's path, if the manifest lists one.
	Base func(path string) error
	// Batch is called with every batch, in order; seg is the segment's path.
	Batch func(seg string, b *Batch) error
	// Progress, when set, is called after every batch with the offset in seg just past it,
	// for the start-up log's loading progress.
	// An error it returns stops the replay with that error (a shutdown during the load).
	Progress func(seg string, offset int64) error
}

// LogStats describe a log read by ReadLog.
type LogStats struct {
	Segments int
	Batches  int64
	Effects  int64
	// MaxTimeMs is the largest batch time read (0 if none).
	MaxTimeMs int64
	// LastSegment is the path of the last segment and LastSize its size as read; GoodSize
	// is the offset just past its last valid frame (equal to LastSize unless the tail is torn).
	LastSegment        string
	LastSize, GoodSize int64
	// SegmentBytes is the size of every segment read, added up.
	SegmentBytes int64
}

// ReadLog reads the log of manifest m in dir, in order: the base, then every batch of every
// segment. Segments must exist and carry the manifest's sequence numbers.
//
// A torn tail (ErrLogTorn) in the last segment is returned after every batch before it was
// delivered; stats.GoodSize is then where to truncate. Any other damage is an error naming the
// file and offset, with nothing after it delivered.
func ReadLog(dir string, m *Manifest, r LogReplay) (LogStats, error) {
	var st LogStats
	if m.Base != nil {
		path := filepath.Join(dir, m.Base.Name)
		if _, err := os.Stat(path); err != nil {
			return st, missing(path, "base", err)
		}
		if r.Base != nil {
			if err := r.Base(path); err != nil {
				return st, err
			}
		}
	}
	for i, inc := range m.Incrs {
		path := filepath.Join(dir, inc.Name)
		last := i == len(m.Incrs)-1
		err := func() error {
			f, err := os.Open(path)
			if err != nil {
				return missing(path, "incr segment", err)
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			lr, err := NewLogReader(f, fi.Size(), path, last)
			if err != nil {
				return err
			}
			if lr.Seq() != inc.Seq {
				return &FormatError{File: path, Offset: 10, Err: ErrLogCorrupt,
					Msg: fmt.Sprintf("segment header says seq %d, the manifest seq %d", lr.Seq(), inc.Seq)}
			}
			st.Segments++
			st.SegmentBytes += fi.Size()
			if last {
				st.LastSegment, st.LastSize = path, fi.Size()
			}
			for {
				b, err := lr.Next()
				if last {
					st.GoodSize = lr.Offset()
				}
				if err == io.EOF {
					return nil
				}
				if err != nil {
					return err
				}
				st.Batches++
				st.Effects += int64(len(b.Effects))
				st.MaxTimeMs = max(st.MaxTimeMs, b.TimeMs)
				if r.Batch != nil {
					if err := r.Batch(path, b); err != nil {
						return err
					}
				}
				if r.Progress != nil {
					if err := r.Progress(path, lr.Offset()); err != nil {
						return err
					}
				}
			}
		}()
		if err != nil {
			return st, err
		}
	}
	return st, nil
}

func missing(path, what string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &FormatError{File: path, Err: ErrLogCorrupt, Msg: "the manifest lists this " + what + ", but the file does not exist"}
	}
	return err
}

// VerifySnapshot reads a snapshot through, checking every CRC and the footer, without loading
// it anywhere.
func VerifySnapshot(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := NewDecoder(f, path)
	if err != nil {
		return err
	}
	for {
		if _, err := d.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// TruncateTail cuts a segment back to size (the end of its last valid frame) and fsyncs it.
func TruncateTail(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

package persist

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// WriteFile replaces path atomically with what write produces: it writes path+".tmp", fsyncs
// it, renames it over path and fsyncs the directory, so that after a crash path holds either
// the old snapshot or the complete new one, never a torn one (the same sequence as Redis's
// AOF manifest and hashicorp/raft's snapshot store). On error the temporary file is removed
// and path is untouched. It returns the number of bytes written.
func WriteFile(path string, write func(w io.Writer) error) (int64, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: f}
	fail := func(err error) (int64, error) {
		_ = f.Close()
		_ = os.Remove(tmp)
		return 0, err
	}
	if err := write(cw); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return 0, err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return cw.n, err
	}
	return cw.n, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	// Some filesystems cannot fsync a directory; the rename has happened regardless.
	if errors.Is(err, os.ErrInvalid) {
		return nil
	}
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

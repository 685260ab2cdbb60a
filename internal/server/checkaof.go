package server

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hotkv/hotkv/internal/persist"
)

// CheckAOF is `hotkv-server --check-aof <path> [--fix]`: it verifies an append-only log and,
// with fix, cuts a torn tail off its last segment. It never repairs damage anywhere else: that
// would silently drop everything after it, so it reports the file and offset and fails. path
// is the log directory, the server's dir holding it (appenddirname: appendonlydir), a manifest,
// or a single segment or base file. It returns the process exit status: 0 when the log is
// valid (or was repaired), 1 otherwise.
func CheckAOF(out io.Writer, path string, fix bool) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(out, format+"\n", args...)
		return 1
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fail("Cannot open %s: %v", path, err)
	}
	if fi.IsDir() {
		manifest, err := findManifest(path)
		if err != nil {
			return fail("%v", err)
		}
		return checkManifest(out, manifest, fix)
	}
	if strings.HasSuffix(path, ".manifest") {
		return checkManifest(out, path, fix)
	}
	magic := make([]byte, 8)
	if f, err := os.Open(path); err == nil {
		_, _ = io.ReadFull(f, magic)
		_ = f.Close()
	}
	switch string(magic) {
	case persist.Magic:
		if err := persist.VerifySnapshot(path); err != nil {
			return fail("%v\nThe snapshot is damaged: --check-aof does not repair snapshots; restore a good copy.", err)
		}
		fmt.Fprintf(out, "%s: a valid HKVS snapshot (%d bytes)\n", path, fi.Size())
		return 0
	case persist.LogMagic:
		m := &persist.Manifest{Incrs: []persist.ManifestFile{{Name: filepath.Base(path), Type: persist.ManifestIncr}}}
		return checkLog(out, filepath.Dir(path), m, fix, true)
	}
	return fail("%s is neither a HotKV append-only log segment, a manifest, nor a snapshot", path)
}

// findManifest finds the manifest in dir, or in dir/appendonlydir.
func findManifest(dir string) (string, error) {
	for _, d := range []string{dir, filepath.Join(dir, "appendonlydir")} {
		found, _ := filepath.Glob(filepath.Join(d, "*.manifest"))
		switch len(found) {
		case 0:
			continue
		case 1:
			return found[0], nil
		}
		return "", fmt.Errorf("%s holds several manifests (%s): name the one to check", d, strings.Join(found, ", "))
	}
	return "", fmt.Errorf("no append-only log manifest (*.manifest) in %s or %s", dir, filepath.Join(dir, "appendonlydir"))
}

func checkManifest(out io.Writer, path string, fix bool) int {
	m, err := persist.ReadManifest(path)
	if err != nil {
		fmt.Fprintf(out, "%v\n", err)
		return 1
	}
	fmt.Fprintf(out, "Checking the append-only log of manifest %s\n", path)
	return checkLog(out, filepath.Dir(path), m, fix, false)
}

// checkLog reads the whole log; anyIncrSeq accepts any sequence number in a lone segment's
// header (no manifest to compare it with).
func checkLog(out io.Writer, dir string, m *persist.Manifest, fix, anyIncrSeq bool) int {
	if anyIncrSeq {
		// Read the header's own sequence number so that ReadLog's check passes.
		f, err := os.Open(filepath.Join(dir, m.Incrs[0].Name))
		if err == nil {
			fi, _ := f.Stat()
			if lr, err := persist.NewLogReader(f, fi.Size(), f.Name(), true); err == nil {
				m.Incrs[0].Seq = lr.Seq()
			}
			_ = f.Close()
		}
	}
	st, err := persist.ReadLog(dir, m, persist.LogReplay{
		Base: func(path string) error {
			if err := persist.VerifySnapshot(path); err != nil {
				return err
			}
			fi, _ := os.Stat(path)
			fmt.Fprintf(out, "base %s: OK (%d bytes)\n", filepath.Base(path), fi.Size())
			return nil
		},
	})
	var fe *persist.FormatError
	switch {
	case err == nil:
		fmt.Fprintf(out, "AOF analyzed: %d segments, %d batches, %d effects, last segment %s of %d bytes\n",
			st.Segments, st.Batches, st.Effects, filepath.Base(st.LastSegment), st.LastSize)
		fmt.Fprintln(out, "AOF is valid")
		return 0
	case errors.Is(err, persist.ErrLogTorn) && errors.As(err, &fe):
		fmt.Fprintf(out, "%v\n", err)
		fmt.Fprintf(out, "AOF analyzed: filename=%s, size=%d, ok_up_to=%d, diff=%d (a torn last frame, as a crash while appending leaves it)\n",
			fe.File, st.LastSize, st.GoodSize, st.LastSize-st.GoodSize)
		if !fix {
			fmt.Fprintln(out, "Run with --fix to truncate the segment to its last whole frame.")
			return 1
		}
		if err := persist.TruncateTail(fe.File, st.GoodSize); err != nil {
			fmt.Fprintf(out, "Failed to truncate %s: %v\n", fe.File, err)
			return 1
		}
		fmt.Fprintf(out, "Successfully truncated AOF %s from %d to %d bytes\n", fe.File, st.LastSize, st.GoodSize)
		return 0
	}
	fmt.Fprintf(out, "%v\n", err)
	if errors.As(err, &fe) {
		fmt.Fprintf(out, "The log is damaged at offset %d of %s, and not in a way a crash leaves it: --check-aof does not repair this "+
			"(cutting the file there would silently drop everything after that offset). Restore a good copy of the directory.\n", fe.Offset, fe.File)
	}
	return 1
}

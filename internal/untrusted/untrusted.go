// Package untrusted opens and reads files that anything the user runs can
// have put in place: the sessions, transcripts, baselines, pins and
// policy files under their home, where the traced tree can write. Such a
// file can be a FIFO, whose open or read blocks for ever, or huge, or
// sparse (a 50 GB hole reads as 50 GB of zeros). Open takes regular files
// only, without blocking; ReadFile also bounds what it reads. Both say in
// one line what they refused.
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular: the path names a FIFO, device, socket or directory, not a
// file. Reading one could block for ever, so it is refused before any read.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: the file is larger than the reader's limit.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading when it is a regular file. The open is
// non-blocking (a FIFO opens at once instead of waiting for a writer) and
// the type is checked on the descriptor, so nothing swapped in under the
// name between a look and the open can block the reader. Errors are
// *fs.PathError, naming path once.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil {
		err = Regular(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil // O_NONBLOCK changes nothing for a regular file's reads
}

// OpenDir opens the directory path for listing, without blocking: a FIFO
// in its place fails (ENOTDIR) instead of waiting for a writer.
func OpenDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_DIRECTORY, 0)
}

// Regular returns nil when st is a regular file's, else an error naming
// path and what it is instead.
func Regular(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(st.Mode()))}
}

// Kind names the type of a file that is not a regular one.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// ReadFile reads the regular file path (Open) whole, when it holds at
// most limit bytes; a larger one is refused (ErrTooLarge) without reading
// it. What a file grows by while it is read is not read.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > limit {
		return nil, &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: %d bytes, more than the %s limit", ErrTooLarge, st.Size(), Size(limit))}
	}
	return io.ReadAll(io.LimitReader(f, limit))
}

// Size renders a size for a one-line message: exact when it is a whole
// number of its unit (64 MiB, 1 GiB), else to a tenth (50.3 GiB).
func Size(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift {
			if n%(1<<u.shift) == 0 {
				return fmt.Sprintf("%d %s", n>>u.shift, u.name)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

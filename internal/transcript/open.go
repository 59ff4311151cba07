package transcript

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"
)

// ErrNotRegular: the path names a FIFO, device, socket or directory, not a
// file. Reading one could block forever (a FIFO the traced agent planted
// where discovery looks), so it is refused before any read.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens path for reading when it is a regular file. It checks
// twice: before opening, and on the open descriptor, because a FIFO swapped
// in between would otherwise block; the open itself is non-blocking, so
// opening such a FIFO returns at once and the second check refuses it.
// Errors carry the path once, like the *fs.PathError they mostly are.
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := isRegular(path, st); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = isRegular(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// readDir lists the directory path like os.ReadDir, with openRegular's
// care: a FIFO planted where a directory is expected is not opened
// blocking.
func readDir(path string) ([]fs.DirEntry, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

func isRegular(path string, st fs.FileInfo) error {
	m := st.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "a special file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, what)}
}

// pathless drops the "op path: " of a *fs.PathError, for callers whose
// own message already names the path, so it is not said twice.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ctxReader makes reads honour ctx: no read starts once ctx is done, and for
// a file that supports deadlines (a pipe, a FIFO) cancellation also ends a
// read that is waiting for data.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

// withContext wraps r so its reads honour ctx, and returns what releases
// the cancellation hook.
func withContext(ctx context.Context, r io.Reader) (io.Reader, func()) {
	if ctx.Done() == nil {
		return r, func() {}
	}
	stop := func() bool { return false }
	if f, ok := r.(*os.File); ok {
		stop = context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Now()) })
	}
	return ctxReader{ctx: ctx, r: r}, func() { stop() }
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && c.ctx.Err() != nil {
		return n, c.ctx.Err()
	}
	return n, err
}

// readHead reads at most n bytes from the start of the regular file path.
func readHead(path string, n int) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if k == 0 && err != nil {
		return nil, err
	}
	return buf[:k], nil
}

// readTail reads at most the last n bytes of the regular file path.
func readTail(path string, n int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(st.Size()-n, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf, nil
}

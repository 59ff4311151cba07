package transcript

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/untrusted"
)

// ErrNotRegular: the path names a FIFO, device, socket or directory, not a
// file. Reading one could block forever (a FIFO the traced agent planted
// where discovery looks), so it is refused before any read.
var ErrNotRegular = untrusted.ErrNotRegular

// openRegular opens path for reading when it is a regular file, without
// blocking (untrusted.Open: the type is checked on the descriptor, so a
// FIFO swapped in under the name cannot block either). Errors carry the
// path once, like the *fs.PathError they mostly are.
func openRegular(path string) (*os.File, error) { return untrusted.Open(path) }

// readDir lists the directory path like os.ReadDir, with openRegular's
// care: a FIFO planted where a directory is expected is not opened
// blocking.
func readDir(path string) ([]fs.DirEntry, error) {
	f, err := untrusted.OpenDir(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return entries, err
}

func isRegular(path string, st fs.FileInfo) error { return untrusted.Regular(path, st) }

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

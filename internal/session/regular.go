package session

import (
	"errors"
	"io/fs"
	"os"

	"github.com/polygraph/polygraph/internal/untrusted"
)

// ErrNotRegular is wrapped by the error of a path that names a FIFO,
// device, socket or directory where a session file should be: reading
// one could block for ever, so it is refused before any read.
var ErrNotRegular = untrusted.ErrNotRegular

// openRegular opens path for reading when it is a regular file, without
// blocking (untrusted.Open). The error is the bare cause; the caller
// names the file.
func openRegular(path string) (*os.File, error) {
	f, err := untrusted.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	return f, nil
}

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string { return untrusted.Kind(m) }

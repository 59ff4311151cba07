package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the error of a path that names a FIFO,
// device, socket or directory where a session file should be: reading
// one could block for ever, so it is refused before any read.
var ErrNotRegular = errors.New("not a regular file")

// openRegular opens path for reading when it is a regular file. The open
// is non-blocking (a FIFO opens at once instead of waiting for a writer)
// and the type is checked on the descriptor, so nothing swapped in under
// the name between a check and the open can block the reader. The error
// is the bare cause; the caller names the file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err
		}
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%w (%s)", ErrNotRegular, fileKind(st.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil // O_NONBLOCK changes nothing for a regular file's reads
}

// fileKind names the type of a file that is not a regular one.
func fileKind(m fs.FileMode) string {
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

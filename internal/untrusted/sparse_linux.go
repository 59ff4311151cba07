package untrusted

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Sparse reports whether the regular file st describes has holes: fewer
// bytes on disk than half its length (and more than 1 MiB of length, so
// that small files, whose last block is partly used, never count). A file
// an agent writes by appending has none; one planted with a 50 GB hole
// would otherwise read as 50 GB of zeros. onDisk is what it takes on disk.
func Sparse(st fs.FileInfo) (onDisk int64, sparse bool) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return st.Size(), false
	}
	onDisk = sys.Blocks * 512
	return onDisk, st.Size() > 1<<20 && onDisk < st.Size()/2
}

// SkipHoles reads f from its current start to its end, jumping over its
// holes (SEEK_DATA): what it returns is the file's data, without the
// zeros the holes would read as.
func SkipHoles(f *os.File) io.Reader { return &holeSkipper{f: f, fd: int(f.Fd())} }

type holeSkipper struct {
	f   *os.File
	fd  int
	off int64
}

func (h *holeSkipper) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	next, err := unix.Seek(h.fd, h.off, unix.SEEK_DATA)
	switch {
	case errors.Is(err, unix.ENXIO):
		return 0, io.EOF // no data after off
	case err == nil && next > h.off:
		h.off = next
	}
	n, err := h.f.ReadAt(p, h.off)
	h.off += int64(n)
	if errors.Is(err, io.EOF) && n > 0 {
		err = nil
	}
	return n, err
}

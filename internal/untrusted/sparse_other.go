//go:build !linux

package untrusted

import (
	"io"
	"io/fs"
	"os"
)

// Sparse cannot tell without Linux's stat; the readers' size limits
// still bound what a sparse file costs.
func Sparse(st fs.FileInfo) (onDisk int64, sparse bool) { return st.Size(), false }

// SkipHoles reads f as it is.
func SkipHoles(f *os.File) io.Reader { return f }

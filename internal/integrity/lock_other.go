//go:build !unix

package integrity

import "os"

// lockFD does nothing where there is no flock; the store is only written
// by recordings, which need Linux.
func lockFD(*os.File) error { return nil }

func unlockFD(*os.File) error { return nil }

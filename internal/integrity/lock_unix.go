//go:build unix

package integrity

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFD takes an exclusive flock, waiting for it: the kernel drops it if
// we die, so a crashed polygraph never leaves the store locked.
func lockFD(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if err != unix.EINTR {
			return err
		}
	}
}

func unlockFD(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_UN) }

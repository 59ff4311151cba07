//go:build unix

package otlp

import (
	"os"

	"golang.org/x/sys/unix"
)

// tryLock takes an exclusive flock on f without waiting, reporting
// whether it got it. The kernel drops the lock when its holder dies, so a
// spool whose lock can be taken belongs to no running polygraph.
func tryLock(f *os.File) bool {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			return err == nil
		}
	}
}

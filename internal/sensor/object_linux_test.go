package sensor

import (
	"testing"

	"golang.org/x/sys/unix"
)

// userDev must give what stat(2) gives: glibc's makedev.
func TestUserDev(t *testing.T) {
	for _, d := range [][2]uint32{{254, 0}, {8, 17}, {259, 300000}, {4000, 1}} {
		if got, want := userDev(d[0]<<20|d[1]), unix.Mkdev(d[0], d[1]); got != want {
			t.Errorf("userDev(%d:%d) = %#x, want %#x", d[0], d[1], got, want)
		}
	}
}

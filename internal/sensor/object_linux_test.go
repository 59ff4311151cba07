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

// KernelDev must undo what stat(2) encodes: the BPF maps keyed by a
// file's identity hold the kernel's major << 20 | minor.
func TestKernelDev(t *testing.T) {
	for _, d := range [][2]uint32{{254, 0}, {8, 17}, {259, 300000}, {4000, 1}, {0, 0}} {
		if got, want := KernelDev(unix.Mkdev(d[0], d[1])), d[0]<<20|d[1]; got != want {
			t.Errorf("KernelDev(%d:%d) = %#x, want %#x", d[0], d[1], got, want)
		}
		if got := userDev(KernelDev(unix.Mkdev(d[0], d[1]))); got != unix.Mkdev(d[0], d[1]) {
			t.Errorf("userDev(KernelDev(%d:%d)) = %#x", d[0], d[1], got)
		}
	}
}

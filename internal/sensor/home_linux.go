package sensor

import (
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// environMax bounds what procHome reads of an environment.
const environMax = 64 << 10

// procHome returns the HOME in the environment of process pid, read from
// /proc/PID/environ when its exec event is decoded, or "" when the
// process is gone, has none or it lies past environMax bytes. The decoder
// asks it only for an exec whose record carried no HOME in the first
// ENV_MAX bytes of its environment (decodeExec). It reads after the fact:
// a process that has exec'd again since shows its newer environment, one
// that has exited shows none (its image inherits its parent's HOME), and
// one that rewrote its environment in place shows the rewrite.
func procHome(pid uint32) string {
	fd, err := unix.Open("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/environ", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	// One read: the kernel copies up to the buffer's size of the
	// environment in a single call (io.ReadAll's growing reads made it
	// six calls, each walking the process's memory, at ~25 µs an exec).
	bp := environBuf.Get().(*[]byte)
	defer environBuf.Put(bp)
	n, err := unix.Read(fd, *bp)
	if err != nil || n <= 0 {
		return ""
	}
	home, _ := envHome((*bp)[:n])
	return home
}

var environBuf = sync.Pool{New: func() any { b := make([]byte, environMax); return &b }}

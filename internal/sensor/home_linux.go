package sensor

import (
	"os"
	"slices"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// environMax is what ProcEnv reads of an environment in its first read.
const environMax = 64 << 10

// procHome returns the HOME in the environment of process pid (ProcEnv),
// or "" when the process is gone or has none. The decoder asks it only
// for an exec whose record carried no HOME in the first ENV_MAX bytes of
// its environment (decodeExec). It reads after the fact: a process that
// has exec'd again since shows its newer environment, one that has
// exited shows none (its image inherits its parent's HOME), and one that
// rewrote its environment in place shows the rewrite.
func procHome(pid uint32) string {
	home, _ := ProcEnv(pid, "HOME")
	return home
}

// ProcEnv returns variable name of process pid's environment, read from
// /proc/PID/environ now; found is false when the process is gone or has
// no such variable. One read of environMax bytes answers nearly every
// environment (io.ReadAll's growing reads made it six calls, each walking
// the process's memory, ~25 µs); one larger than that is read whole.
func ProcEnv(pid uint32, name string) (value string, found bool) {
	path := "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/environ"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer unix.Close(fd)
	bp := environBuf.Get().(*[]byte)
	defer environBuf.Put(bp)
	n, err := unix.Read(fd, *bp)
	if err != nil || n <= 0 {
		return "", false
	}
	if value, found = envVar((*bp)[:n], name); found || n < len(*bp) {
		return value, found
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return envVar(b, name)
}

// procEnviron appends process pid's environment, read from
// /proc/PID/environ now, to buf: one read of environMax bytes for nearly
// every environment, the rest read whole. A process gone appends nothing.
func procEnviron(pid uint32, buf []byte) []byte {
	path := "/proc/" + strconv.FormatUint(uint64(pid), 10) + "/environ"
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return buf
	}
	defer unix.Close(fd)
	buf = slices.Grow(buf, environMax)
	n, err := unix.Read(fd, buf[len(buf):len(buf)+environMax])
	if err != nil || n <= 0 {
		return buf
	}
	if n < environMax {
		return buf[:len(buf)+n]
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return buf
	}
	return append(buf, b...)
}

var environBuf = sync.Pool{New: func() any { b := make([]byte, environMax); return &b }}

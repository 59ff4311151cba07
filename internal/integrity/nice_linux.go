package integrity

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// hashNice is the niceness of the threads that hash. Hashing is the
// bulk of what recording does in user space when a tree starts new
// binaries (git, an agent's runtime: megabytes each, once), and none of
// it is urgent: the file is already open, so the verdict is of the file
// that ran however late it comes. At nice 10 a hashing thread gets about
// a tenth of a CPU the traced command wants and all of a CPU it leaves
// idle, so the command's own time does not pay for it.
const hashNice = 10

// lowerPriority locks the calling goroutine to its thread and lowers
// that thread's priority; the thread ends with the goroutine (it is never
// unlocked), so no other goroutine runs at it. A thread already nicer
// (polygraph started under nice) is left as it is; a refusal leaves the
// thread at its priority, which costs only the command's time.
func lowerPriority() {
	runtime.LockOSThread()
	tid := unix.Gettid()
	// The raw system call returns 20 - nice (never negative).
	if p, err := unix.Getpriority(unix.PRIO_PROCESS, tid); err == nil && 20-p >= hashNice {
		return
	}
	_ = unix.Setpriority(unix.PRIO_PROCESS, tid, hashNice)
}

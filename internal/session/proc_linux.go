package session

import (
	"os"
	"strings"

	"github.com/polygraph/polygraph/internal/procfs"
)

// selfIdentity names this process for the 'writer' row. Any part it
// cannot read is left zero, which makes a reader fall back to "not closed
// cleanly" rather than guess "in progress".
func selfIdentity() writerID {
	pid := os.Getpid()
	start, _ := procStart(pid)
	return writerID{PID: pid, Start: start, Boot: bootID()}
}

// running tells whether the process w names is still running: the same
// boot, a process with its pid and the same start time (pids are reused;
// the start time tells them apart).
func (w writerID) running() bool {
	if w.PID <= 0 || w.Start == 0 || w.Boot == "" || w.Boot != bootID() {
		return false
	}
	start, err := procStart(w.PID)
	return err == nil && start == w.Start
}

// procStart is the process's start time in clock ticks since boot.
func procStart(pid int) (uint64, error) {
	st, err := procfs.ReadStat(pid)
	return st.StartTicks, err
}

// bootID is the kernel's id for this boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

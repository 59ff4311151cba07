package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/polygraph/polygraph/internal/procfs"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/sensor"
)

// DroppedCaps are the capabilities a command that runs as root loses
// unless the caller keeps them (Options.KeepCaps): those that let it load
// or detach BPF programs, read or write polygraph's maps (CAP_BPF,
// CAP_SYS_ADMIN, CAP_PERFMON), reach into polygraph's memory or
// descriptors (CAP_SYS_PTRACE), signal processes of other users
// (CAP_KILL), or change the kernel under the sensor (CAP_SYS_MODULE,
// CAP_SYS_RAWIO, CAP_SYS_BOOT for kexec). They go from the bounding set,
// so no exec gets them back, and from the effective, permitted,
// inheritable and ambient sets.
//
// CAP_KILL does not keep a root tree from signalling polygraph: kill(2)
// needs no capability between processes of the same uid, and both are
// root (docs/reference.md, "What a root command can still do").
var DroppedCaps = []int{
	unix.CAP_BPF, unix.CAP_SYS_ADMIN, unix.CAP_PERFMON, unix.CAP_SYS_PTRACE, unix.CAP_KILL,
	unix.CAP_SYS_MODULE, unix.CAP_SYS_RAWIO, unix.CAP_SYS_BOOT,
}

// dropCaps drops DroppedCaps from the calling thread's capability sets;
// the caller has locked it to its goroutine and execs from it.
func dropCaps() error {
	for _, c := range DroppedCaps {
		// A kernel older than the capability (CAP_BPF and CAP_PERFMON
		// are 5.8's) says EINVAL: there is nothing to drop.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	for _, c := range DroppedCaps {
		bit := ^uint32(1 << (uint(c) % 32))
		d := &data[c/32]
		d.Effective &= bit
		d.Permitted &= bit
		d.Inheritable &= bit
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

// The watchdog is started by polygraph before the command (so it is not
// traced), with the read end of a pipe only polygraph writes to on fd 3
// and the tracked-pids map on fd 4. Polygraph writes one byte when it is
// done; end of file without it means polygraph died, and the watchdog
// ends the tree.

// watchdog is the running watchdog process.
type watchdog struct {
	cmd *exec.Cmd
	ctl *os.File // the pipe's write end: one byte says polygraph is done
}

// startWatchdog starts the watchdog of s's tree. Without one (it could
// not start) only the command itself dies with polygraph; that is
// logged, not fatal.
func startWatchdog(s *sensor.Sensor) *watchdog {
	d, err := newWatchdog(s)
	if err != nil {
		slog.Warn("no watchdog: if polygraph dies, only the command itself is ended, not what it started", "error", err)
	}
	return d
}

func newWatchdog(s *sensor.Sensor) (*watchdog, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find polygraph's own binary: %w", err)
	}
	mf, err := s.TrackedMapFile()
	if err != nil {
		return nil, err
	}
	defer mf.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer pr.Close()
	cmd := exec.Command(self, ShimArg, shimWatchdog, "--")
	cmd.Args[0] = "polygraph-watchdog"
	cmd.ExtraFiles = []*os.File{pr, mf}
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return nil, fmt.Errorf("start the watchdog: %w", err)
	}
	return &watchdog{cmd: cmd, ctl: pw}, nil
}

// release tells the watchdog polygraph is done and waits for it to go.
func (d *watchdog) release() {
	if d == nil {
		return
	}
	d.ctl.Write([]byte{1})
	d.ctl.Close()
	d.cmd.Wait()
}

// watchdogMain is the watchdog's life.
func watchdogMain() int {
	// Its own process group keeps a terminal's Ctrl-C off it; hang-ups
	// are polygraph's to act on, or, when polygraph dies of one, its own.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGHUP, syscall.SIGTERM)
	ctl := os.NewFile(3, "polygraph")
	m, err := ebpf.NewMapFromFD(4)
	if err != nil {
		fmt.Fprintln(os.Stderr, "polygraph watchdog:", err)
		return 1
	}
	var b [1]byte
	if n, _ := ctl.Read(b[:]); n == 1 {
		return 0 // polygraph finished the recording; what is left is its business
	}
	endTree(m)
	return 0
}

// endTree kills every process in the tracked-pids map and their
// descendants. The sensor's programs are detached once polygraph is
// gone, so the map no longer follows forks: the processes are stopped
// first, then their children (found through /proc) are, until nothing
// new appears; then all are killed.
func endTree(m *ebpf.Map) {
	stopped := map[int]bool{}
	var pending []int
	var key, next uint32
	for err := m.NextKey(nil, &next); err == nil; err = m.NextKey(key, &next) {
		key = next
		// struct proc_info (bpf/events.h): image_ns, flags, until. A
		// followed process is outside the tree: it is not the tree's to end.
		var v [16]byte
		if m.Lookup(key, &v) == nil && sensor.IsFollowed(binary.NativeEndian.Uint32(v[8:12])) {
			continue
		}
		pending = append(pending, int(key))
	}
	// Each round reaches one generation further; a tree deeper than the
	// bound is far past anything an agent starts.
	for round := 0; len(pending) > 0 && round < 64; round++ {
		for _, pid := range pending {
			if !stopped[pid] && unix.Kill(pid, unix.SIGSTOP) == nil {
				stopped[pid] = true
			}
		}
		pending = pending[:0]
		for pid, ppid := range procfs.ReadTable().Parent {
			if stopped[ppid] && !stopped[pid] {
				pending = append(pending, pid)
			}
		}
	}
	for pid := range stopped {
		unix.Kill(pid, unix.SIGKILL)
	}
}

//go:build linux

// Command helper is the bench's workload side: one small static binary,
// built by the bench into its temporary directory, that runs unchanged
// under every tracer. It times the workload from inside the traced tree
// (so a tracer's start-up and shutdown never count as the workload's
// time), and it is the file storm, the connect loop and the paced event
// generator, so those need no C compiler and issue exactly the same
// syscalls whoever watches.
//
//	helper run -o RESULT.json [-log F] [-loginuid N] [-tracer PID,...] [-after CMD] [-settle D] -- CMD ARGS...
//	helper files -dir D -n N
//	helper dial -addr HOST:PORT -n N
//	helper rate -dir D -workers W -rate R -dur D
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/procfs"

	"golang.org/x/sys/unix"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: helper run|files|dial|rate ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCmd(os.Args[2:])
	case "files":
		err = filesCmd(os.Args[2:])
	case "dial":
		err = dialCmd(os.Args[2:])
	case "rate":
		err = rateCmd(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
}

// Result is what `helper run` writes; the bench reads it back (keep in
// sync with runResult in bench/measure.go).
type Result struct {
	HelperStartNS int64 `json:"helper_start_ns"` // unix ns when the helper began
	StartNS       int64 `json:"start_ns"`        // unix ns just before the workload started
	EndNS         int64 `json:"end_ns"`          // unix ns once the workload and every descendant were reaped
	ExitCode      int   `json:"exit_code"`
	// The workload's CPU: every descendant, reaped by the helper as a
	// child subreaper so orphans count too.
	UserNS   int64 `json:"user_ns"`
	SysNS    int64 `json:"sys_ns"`
	MaxRSSKB int64 `json:"max_rss_kb"`
	// The tracer processes' CPU spent while the workload ran, and their
	// peak RSS (VmHWM) at its end.
	Tracers []TracerSample `json:"tracers,omitempty"`
	// SelfNS is the helper's own CPU, for subtracting from a tracer's
	// wait4 total.
	SelfNS int64 `json:"self_ns"`
}

// TracerSample is one tracer process seen from the workload.
type TracerSample struct {
	PID     int    `json:"pid"`
	Comm    string `json:"comm"`
	CPUNS   int64  `json:"cpu_ns"`    // utime+stime during the workload
	VmHWMKB int64  `json:"vmhwm_kb"`  // peak RSS since the tracer started
	VmRSSKB int64  `json:"vm_rss_kb"` // RSS at the workload's end
}

func runCmd(args []string) error {
	helperStart := time.Now()
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	out := fs.String("o", "", "write the result JSON here")
	logPath := fs.String("log", "", "the workload's stdout and stderr (default: discarded)")
	loginuid := fs.Int("loginuid", -1, "set this audit login uid before starting (auditd scoping)")
	tracerList := fs.String("tracer", "", "comma-separated tracer pids to sample; 'ppid' is the helper's parent")
	after := fs.String("after", "", "a shell command to run once the workload is done, still traced (bpftool snapshots)")
	settle := fs.Duration("settle", 0, "wait this long before starting the workload, untimed (an agent's start-up, for watch to recognise it)")
	fs.Parse(args)
	cmdArgs := fs.Args()
	if *out == "" || len(cmdArgs) == 0 {
		return errors.New("run: need -o and a command")
	}
	if *loginuid >= 0 {
		if err := os.WriteFile("/proc/self/loginuid", []byte(strconv.Itoa(*loginuid)), 0); err != nil {
			return fmt.Errorf("set loginuid: %w", err)
		}
	}
	// Orphans of the workload come back to us, so their CPU is counted
	// and the workload is over only when all of it is.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become subreaper: %w", err)
	}
	var pids []int
	for _, p := range strings.Split(*tracerList, ",") {
		switch p {
		case "":
		case "ppid":
			pids = append(pids, os.Getppid())
		default:
			n, err := strconv.Atoi(p)
			if err != nil {
				return fmt.Errorf("run: bad tracer pid %q", p)
			}
			pids = append(pids, n)
		}
	}
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	time.Sleep(*settle)
	cpu0 := make([]int64, len(pids))
	for i, p := range pids {
		cpu0[i], _ = procfs.CPUNS(p)
	}
	res := Result{HelperStartNS: helperStart.UnixNano()}
	res.StartNS = time.Now().UnixNano()
	err := cmd.Start()
	if err != nil {
		return err
	}
	werr := cmd.Wait()
	reapAll(30 * time.Second)
	res.EndNS = time.Now().UnixNano()
	for i, p := range pids {
		cpu1, err := procfs.CPUNS(p)
		if err != nil {
			continue
		}
		hwm, rss := procMem(p)
		res.Tracers = append(res.Tracers, TracerSample{PID: p, Comm: procComm(p), CPUNS: cpu1 - cpu0[i], VmHWMKB: hwm, VmRSSKB: rss})
	}
	res.ExitCode = cmd.ProcessState.ExitCode()
	if werr != nil && res.ExitCode == 0 {
		res.ExitCode = -1
	}
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_CHILDREN, &ru)
	res.UserNS, res.SysNS, res.MaxRSSKB = ru.Utime.Nano(), ru.Stime.Nano(), ru.Maxrss
	if *after != "" {
		c := exec.Command("/bin/sh", "-c", *after)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "helper: -after:", err)
		}
	}
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	res.SelfNS = ru.Utime.Nano() + ru.Stime.Nano()
	b, _ := json.Marshal(res)
	if err := os.WriteFile(*out, b, 0o644); err != nil {
		return err
	}
	if res.ExitCode != 0 {
		os.Exit(res.ExitCode & 0x7f)
	}
	return nil
}

// reapAll waits for every remaining descendant (we are their subreaper),
// killing what is still alive after limit.
func reapAll(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.ECHILD) {
			return
		}
		if err == nil && pid > 0 {
			continue
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "helper: descendants still running after", limit)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// procMem returns VmHWM and VmRSS of pid in KiB.
func procMem(pid int) (hwm, rss int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmHWM":
			hwm = n
		case "VmRSS":
			rss = n
		}
	}
	return hwm, rss
}

func procComm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// storm lists the files of the tree the bench made: D/dNN/fNNN.
func storm(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "d*", "f*"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no files under %s", dir)
	}
	return paths, nil
}

// touch is one open/read/close, with raw syscalls: no epoll registration
// or finalizer, just the three calls every tracer sees.
func touch(path string, buf []byte) error { return touchMode(path, buf, syscall.O_RDONLY) }

// touchMode is touch with the file opened for mode (O_RDONLY, O_RDWR).
func touchMode(path string, buf []byte, mode int) error {
	fd, err := syscall.Open(path, mode|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	_, err = syscall.Read(fd, buf)
	syscall.Close(fd)
	return err
}

func filesCmd(args []string) error {
	fs := flag.NewFlagSet("files", flag.ExitOnError)
	dir := fs.String("dir", "", "the tree")
	n := fs.Int("n", 100000, "open/read/close cycles")
	fs.Parse(args)
	paths, err := storm(*dir)
	if err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for i := 0; i < *n; i++ {
		if err := touch(paths[i%len(paths)], buf); err != nil {
			return err
		}
	}
	return nil
}

func dialCmd(args []string) error {
	fs := flag.NewFlagSet("dial", flag.ExitOnError)
	addr := fs.String("addr", "", "host:port")
	n := fs.Int("n", 1, "connects")
	fs.Parse(args)
	for i := 0; i < *n; i++ {
		c, err := net.DialTimeout("tcp", *addr, 5*time.Second)
		if err != nil {
			return err
		}
		c.Close()
	}
	return nil
}

// RateResult is what `helper rate` prints (keep in sync with bench/rate.go).
type RateResult struct {
	Opens   int64   `json:"opens"`
	Seconds float64 `json:"seconds"`
	PerSec  float64 `json:"per_sec"`
}

// rateCmd opens files at a target rate (0: as fast as it can) with
// workers goroutines, each on its own OS thread, pacing every millisecond.
// The files are opened for reading and writing: polygraph counts a
// process's repeated read-only opens of a file instead of recording them
// (bpf/reopen.h), and this step measures how many records a second the
// sensor takes without loss.
func rateCmd(args []string) error {
	fs := flag.NewFlagSet("rate", flag.ExitOnError)
	dir := fs.String("dir", "", "the tree")
	workers := fs.Int("workers", 2, "parallel workers")
	rate := fs.Float64("rate", 0, "target opens per second in total (0: unthrottled)")
	dur := fs.Duration("dur", 3*time.Second, "how long")
	fs.Parse(args)
	paths, err := storm(*dir)
	if err != nil {
		return err
	}
	var total int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(*dur)
	per := *rate / float64(*workers)
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 4096)
			var n int64
			i := w * 7919
			for {
				now := time.Now()
				if now.After(end) {
					break
				}
				if per > 0 {
					due := int64(per * now.Sub(start).Seconds())
					if n >= due {
						time.Sleep(time.Millisecond)
						continue
					}
				}
				for k := 0; k < 64; k++ {
					touchMode(paths[i%len(paths)], buf, syscall.O_RDWR)
					i++
					n++
				}
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	secs := time.Since(start).Seconds()
	return json.NewEncoder(os.Stdout).Encode(RateResult{Opens: total, Seconds: secs, PerSec: float64(total) / secs})
}

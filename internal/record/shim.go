package record

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
)

// ShimArg is the hidden first argument that makes polygraph act as one of
// its helper processes: the shim, a child that waits until it is traced,
// then execs the command; or the watchdog, which ends the traced tree if
// polygraph dies while recording. Words before a "--" are the helper's
// options (shimDropCaps, shimWatchdog); the command follows it.
const ShimArg = "__polygraph_shim"

// The helper's options, as runCommand passes them.
const (
	shimDropCaps = "drop-caps" // drop DroppedCaps before exec
	shimWatchdog = "watchdog"  // be the watchdog, not the shim
)

// shimArgs is the shim's command line after ShimArg.
func shimArgs(opts []string, command []string) []string {
	return append(append(slices.Clone(opts), "--"), command...)
}

// ShimMain is a helper process's whole life. The shim waits on fd 3 until
// the parent has put it under tracing, drops the capabilities it was told
// to, then becomes the command. It returns only on failure, with the
// shell's status for it (127 not found, 126 not executable).
func ShimMain(args []string) int {
	var opts []string
	if i := slices.Index(args, "--"); i >= 0 {
		opts, args = args[:i], args[i+1:]
	}
	if slices.Contains(opts, shimWatchdog) {
		return watchdogMain()
	}
	// Capabilities are per thread; the thread that drops them must be the
	// one that execs, so the command inherits what it kept.
	runtime.LockOSThread()
	ready := os.NewFile(3, "ready")
	var b [1]byte
	if n, _ := ready.Read(b[:]); n != 1 {
		fmt.Fprintln(os.Stderr, "polygraph: tracing did not start; not running the command")
		return 1
	}
	ready.Close()
	// The drop waits for the exec: an isolated shim (run --isolate) needs
	// its capabilities for guard's mounts first, and in a PID namespace it
	// stays root as the tree's init and drops them just before it forks
	// the command (guard.ExecPrepared).
	var prepare func() error
	if slices.Contains(opts, shimDropCaps) {
		prepare = func() error {
			if err := dropCaps(); err != nil {
				return &capsError{err}
			}
			return nil
		}
	}
	if len(args) == 0 {
		return 0
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "polygraph: %s: command not found\n", args[0])
			return 127
		}
		fmt.Fprintf(os.Stderr, "polygraph: %s: %v\n", args[0], err)
		return 126
	}
	err = execCommand(path, args, os.Environ(), prepare)
	if ce := (*capsError)(nil); errors.As(err, &ce) {
		fmt.Fprintf(os.Stderr, "polygraph: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "polygraph: %s: %v\n", args[0], err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

// capsError is a failed capability drop: the command does not run.
type capsError struct{ err error }

func (e *capsError) Error() string {
	return fmt.Sprintf("not running the command: %v (--keep-caps runs it with them)", e.err)
}

func (e *capsError) Unwrap() error { return e.err }

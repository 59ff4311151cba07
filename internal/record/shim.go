package record

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// ShimArg is the hidden first argument that makes polygraph act as the
// shim: a child that waits until it is traced, then execs the command.
const ShimArg = "__polygraph_shim"

// ShimMain is the shim's whole life: wait on fd 3 until the parent has
// put this process under tracing, then become the command. It returns
// only on failure, with the shell's status for it (127 not found, 126 not
// executable).
func ShimMain(args []string) int {
	ready := os.NewFile(3, "ready")
	var b [1]byte
	if n, _ := ready.Read(b[:]); n != 1 {
		fmt.Fprintln(os.Stderr, "polygraph: tracing did not start; not running the command")
		return 1
	}
	ready.Close()
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
	err = execCommand(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "polygraph: %s: %v\n", args[0], err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

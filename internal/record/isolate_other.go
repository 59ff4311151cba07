//go:build !linux

package record

import "syscall"

// isolation is Linux's (isolate_linux.go); elsewhere Record fails before
// it would use one.
type isolation struct{}

// execCommand is the shim's exec, after prepare.
func execCommand(path string, args, env []string, prepare func() error) error {
	if prepare != nil {
		if err := prepare(); err != nil {
			return err
		}
	}
	return syscall.Exec(path, args, env)
}

//go:build !linux

package record

import "syscall"

// isolation is Linux's (isolate_linux.go); elsewhere Record fails before
// it would use one.
type isolation struct{}

// execCommand is the shim's exec.
func execCommand(path string, args, env []string) error { return syscall.Exec(path, args, env) }

//go:build !linux

package stores

import "errors"

// grantACL is Linux-only; elsewhere the caller falls back to a file
// readable by everyone.
func grantACL(path string, uid int, dir bool) error {
	return errors.New("POSIX ACLs are set only on Linux")
}

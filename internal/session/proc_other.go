//go:build !linux

package session

import "os"

// selfIdentity names this process; without /proc there is no start time
// to tell a reused pid apart, so readers never call a session in progress.
func selfIdentity() writerID { return writerID{PID: os.Getpid()} }

// running cannot tell without /proc; see selfIdentity.
func (w writerID) running() bool { return false }

//go:build !linux

package integrity

const hashNice = 0

// lowerPriority does nothing where threads have no priority of their own.
func lowerPriority() bool { return false }

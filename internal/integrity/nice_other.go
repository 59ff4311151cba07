//go:build !linux

package integrity

// lowerPriority does nothing where threads have no priority of their own.
func lowerPriority() {}

package main

import "strings"

// isCobraUsage recognises the argument errors cobra builds itself (unknown
// command, wrong argument count), which carry no type of their own.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires at least", "requires at most", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

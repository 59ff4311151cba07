// Package session stores one recording in one SQLite file: the kernel
// events, the session's metadata, lost-event counters and the processes
// left running when tracing stopped.
package session

import "github.com/polygraph/polygraph/internal/manifest"

// Meta describes one recorded session (see manifest.Meta). The store
// reads and writes it; it is defined in package manifest so that
// describing a session needs no SQLite.
type Meta = manifest.Meta

// Leftover is a process of the traced tree still running when tracing
// stopped (see manifest.Leftover).
type Leftover = manifest.Leftover

// writerID names the process writing a session (the meta row 'writer'),
// so that a reader can tell a session still being recorded from one whose
// writer died: its pid, its start time in clock ticks since boot
// (/proc/PID/stat) and the kernel's boot id. It is kept out of Meta so
// that reports and listings stay as they were.
type writerID struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
	Boot  string `json:"boot_id,omitempty"`
}

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

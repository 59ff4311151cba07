// Package sensor loads polygraph's BPF programs, attaches them, reads
// their ring buffer and decodes its records into events. What to trace,
// for how long, and where the events go is the caller's (see package
// record); the sensor knows nothing of sessions.
package sensor

import (
	"errors"

	"github.com/polygraph/polygraph/internal/event"
)

// ErrPermission is returned when the kernel refuses to load the programs
// for lack of privilege.
var ErrPermission = errors.New("tracing needs root (or CAP_BPF and CAP_PERFMON): run it with sudo")

// Options tune the sensor.
type Options struct {
	// RingBytes is the ring buffer size (a power of two, multiple of the
	// page size). Zero means 16 MiB.
	RingBytes int
	// SecRingBytes is the security ring's size (the rare, security-relevant
	// records: process tree, network, calls, sensitive opens). Zero means
	// 4 MiB.
	SecRingBytes int
	// QueueLen bounds the decoded events waiting for the sink. Zero means 65536.
	QueueLen int
	// Watch turns on watch mode (watch_linux.go): every exec is reported,
	// and opens of the files given to WatchFiles by any process.
	Watch bool
}

// Sink receives decoded events, in order, on one goroutine.
type Sink func(*event.Event)

// Stats are the sensor's loss counters.
type Stats struct {
	RingLost uint64 // records the kernel could not put in the ring buffer
	// SecRingLost counts records the kernel could not put in the security ring.
	SecRingLost uint64
	TrackLost   uint64 // processes or syscalls the tracking maps had no room for
	Dropped     uint64 // decoded events the sink could not keep up with
	BadRecs     uint64 // records that did not decode
	// WalkHits counts opens whose path the kernel named by the id of a
	// walk it had sent (bpf/objcache.h); WalkUnknown those whose walk
	// never arrived (its record lost), which carry the requested path.
	WalkHits, WalkUnknown uint64
}

// Package sensor loads polygraph's BPF programs, attaches them, reads
// their ring buffer and decodes its records into events. What to trace,
// for how long, and where the events go is the caller's (see package
// record); the sensor knows nothing of sessions.
package sensor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

// ErrPermission is returned when the kernel refuses to load the programs
// for lack of privilege.
var ErrPermission = errors.New("tracing needs root (or CAP_BPF and CAP_PERFMON): run it with sudo")

// Options tune the sensor.
type Options struct {
	// RingBytes is the event ring's size (a power of two, multiple of the
	// page size). Zero means DefaultRingBytes for the host's CPUs.
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
	// GuardedRepeats are the guarded files opened again by a process that
	// had opened them, with how many times, most first: those opens went
	// with the ordinary records (secring_linux.go).
	GuardedRepeats []manifest.Repeat
}

// Ring sizes: the event ring gets ringPerCPU for each possible CPU (each
// can produce records at once), within [ringMin, ringMax]. Its pages
// count twice in the process's RSS (the kernel maps the data twice so a
// record never wraps), so the default stays small on a laptop and grows
// on a many-core agent host. docs/bench.md: on 2 CPUs an 8 MiB ring lost
// nothing at the highest rate the bench's generator reached.
const (
	ringPerCPU = 4 << 20
	ringMin    = 8 << 20
	ringMax    = 64 << 20
)

// DefaultRingBytes is the event ring's size for ncpu possible CPUs.
func DefaultRingBytes(ncpu int) int {
	n := ringMin
	for n < ringPerCPU*ncpu && n < ringMax {
		n <<= 1
	}
	return n
}

// ParseRingSize reads a ring size given in MiB ("16", "16M", "16MiB"):
// a power of two from 1 MiB to 1 GiB.
func ParseRingSize(s string) (int, error) {
	t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "iB"), "M")
	mb, err := strconv.Atoi(t)
	if err != nil || mb < 1 || mb > 1024 || mb&(mb-1) != 0 {
		return 0, fmt.Errorf("ring size %q: want a power of two of MiB from 1 to 1024 (e.g. 16)", s)
	}
	return mb << 20, nil
}

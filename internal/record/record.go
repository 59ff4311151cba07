// Package record runs a command (or joins a running process tree) under
// the sensor and stores what the kernel reports into a new session: it
// loads the sensor, creates the session, forwards signals to the command,
// lingers for what the command left running and lists the leftovers.
// Recording needs Linux; elsewhere Record returns ErrNeedsLinux, so the
// analysis verbs still build and run there.
package record

import (
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
)

// ErrNeedsLinux is what Record returns on a system without the kernel
// sensor.
var ErrNeedsLinux = errors.New("recording needs Linux (the sensor is eBPF); the session, events and report verbs work here")

// Options say what to trace and where to store it.
type Options struct {
	Home    string   // session directory root (stores.Home())
	Mode    string   // run, attach, demo
	Command []string // run: the command and its arguments
	Dir     string   // run: working directory ("" = ours)
	Env     []string // run: environment (nil = ours)
	// Credential runs the command as another user (the invoking user under sudo).
	Credential *syscall.Credential
	AttachPID  int           // attach: the root of the tree to join
	Linger     time.Duration // run: how long to keep tracing leftovers after the command exits
	// KillLeftovers (run) ends the processes still running when the
	// linger is over, SIGTERM then SIGKILL, before tracing stops, so
	// their ends are recorded.
	KillLeftovers bool
	// KeepCaps (run) leaves a command that runs as root its capabilities;
	// by default the shim drops DroppedCaps (Linux), so the tree cannot
	// unload the sensor or edit its maps.
	KeepCaps bool
	// LeaveOnExit (run) leaves the tree running, untraced, if polygraph
	// dies while recording. By default the command is killed with it (the
	// parent-death signal) and a watchdog process kills the rest of the
	// tree.
	LeaveOnExit bool
	// Notices receives polygraph's own one-line messages while recording
	// (the linger's); nil drops them.
	Notices io.Writer
	Stdin   io.Reader
	Stdout  io.Writer
	Stderr  io.Writer
	// Observe sees every event as it is stored, on a pipeline listener's
	// goroutine.
	Observe func(*event.Event)
	// Live, when set, judges the session while it is recorded
	// (analysis.Live): its sinks get every decision, and Result.Live the
	// last one. Its Meta is the session writer's.
	Live *analysis.LiveOptions
	// Started is called once the session exists, with its metadata.
	Started func(session.Meta)
	Sensor  sensor.Options
	// NoIntegrity skips hashing and judging the executables the tree runs
	// (integrity_linux.go), for measuring what that costs.
	NoIntegrity bool
	// Isolate, for run, runs the command isolated (isolate.go).
	Isolate *Isolation
	iso     *isolation // the running isolated session
}

// Result is what a finished recording left.
type Result struct {
	Meta      session.Meta
	ExitCode  *int // the traced command's; nil when unknown (attach)
	Leftovers []session.Leftover
	Stats     sensor.Stats
	// Live is the live analysis's last decision (Options.Live; nil
	// without it, or when it failed).
	Live *analysis.Analysis
	// ListenerLost counts, per pipeline listener, the events its full
	// queue dropped (the session has them all).
	ListenerLost map[string]uint64
}

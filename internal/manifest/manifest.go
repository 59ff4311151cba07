// Package manifest describes one recorded session: what ran, as whom,
// where and when, how the recording ended and what it could not see. It
// depends on nothing, so code that only shows a session (the report) does
// not pull in the session store.
package manifest

import "time"

// Meta describes one recorded session. It is written when the session is
// created and completed when it is closed; a session whose CleanClose is
// false was either still being written when it was read (InProgress) or
// never closed (polygraph was killed, the machine went down).
type Meta struct {
	ID          string            `json:"id"`
	Path        string            `json:"path"`
	Command     []string          `json:"command"` // what `run` started; for attach, the root's argv
	Mode        string            `json:"mode"`    // run, attach, demo, watch
	Cwd         string            `json:"cwd"`     // the directory the command started in
	User        string            `json:"user"`    // the invoking user (SUDO_USER under sudo)
	UID         int               `json:"uid"`
	Home        string            `json:"home"` // that user's home, where the agents keep their transcripts
	Hostname    string            `json:"hostname"`
	Kernel      string            `json:"kernel"`
	Version     string            `json:"version"` // polygraph's
	RootPID     int               `json:"root_pid"`
	StartedAt   time.Time         `json:"started_at"`
	EndedAt     time.Time         `json:"ended_at,omitzero"`
	ExitCode    *int              `json:"exit_code,omitempty"` // the traced command's
	CleanClose  bool              `json:"clean_close"`
	Events      uint64            `json:"events"`
	Lost        map[string]uint64 `json:"lost,omitempty"`        // per ring buffer / stage
	Unavailable []string          `json:"unavailable,omitempty"` // sensor features the kernel refused
	// The fields below are never stored: the session Reader computes them.

	// InProgress is set when CleanClose is false and the writer is still
	// running: the session is being recorded, not abandoned.
	InProgress bool `json:"in_progress,omitempty"`
	// Integrity is what checking the hash chain found: one of the session
	// package's Integrity* constants, "" until the chunks were read.
	Integrity string `json:"integrity,omitempty"`

	// Error is set only by List, for a file in the sessions directory that
	// could not be read; the other fields are then what the file name tells.
	Error string `json:"error,omitempty"`
}

// Leftover is a process of the traced tree still running when tracing stopped.
type Leftover struct {
	PID    uint32   `json:"pid"`
	ExecID string   `json:"exec_id"`
	Comm   string   `json:"comm"`
	Argv   []string `json:"argv"`
}

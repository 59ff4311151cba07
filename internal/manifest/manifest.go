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
	ID      string   `json:"id"`
	Path    string   `json:"path"`
	Command []string `json:"command"` // what `run` started; for attach, the root's argv
	Mode    string   `json:"mode"`    // run, attach, demo, watch
	Cwd     string   `json:"cwd"`     // the directory the command started in
	User    string   `json:"user"`    // the invoking user (SUDO_USER under sudo)
	UID     int      `json:"uid"`
	Home    string   `json:"home"` // that user's home, where the agents keep their transcripts
	// Homes are the machine's homes when the session began: /root, each
	// directory in /home, every account's home in /etc/passwd, and Home.
	// The rules read "~/" as any of them (besides each process's own
	// HOME), so a credential file of an account whose home is elsewhere
	// (/var/lib/jenkins, /srv/agent) is one whatever HOME the reader set.
	Homes       []string          `json:"homes,omitempty"`
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
	// Hooks says which hooks the sensor ran on, and what the faster
	// ones (fentry, BPF LSM) answered when it started (sensor.HookPath).
	Hooks string `json:"hooks,omitempty"`
	// Repeats sums up the guarded files the tree opened again and again:
	// each process's first open of a guarded file keeps the security
	// ring's priority, and the repeats (counted here, per file) go with
	// the ordinary records, so a flood of them cannot push execs and
	// connects out. They are events like any others, as far as the main
	// ring had room (what it had not is in Lost).
	Repeats []Repeat `json:"guarded_repeats,omitempty"`
	// Isolation is set when the session ran isolated (run --isolate).
	Isolation *Isolation `json:"isolation,omitempty"`
	// Secrets are the credential files of every home (the policy's
	// sensitive and agent-config paths, and the files directly in their
	// directories) when the session began, by identity: an open of the same
	// (dev, ino) under any other name (a rename, a hard link, a bind
	// mount, a renamed parent) is a read of that secret.
	Secrets []Secret `json:"secrets,omitempty"`
	// TrustFiles are polygraph's own files the exec verdicts rest on (the
	// integrity store's pin and first-seen files): a tree that writes one
	// vouches for its own programs.
	TrustFiles []string `json:"trust_files,omitempty"`
	// Outsiders marks watch's session of processes outside every agent's
	// tree that opened an agent's store: none of its processes is an
	// agent, and nothing in it is the agent's own.
	Outsiders bool `json:"outsiders,omitempty"`
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

// Secret is a credential file by identity: the name it had when the
// session began and its device and inode as stat(2) gives them.
type Secret struct {
	Path string `json:"path"`
	Dev  uint64 `json:"dev"`
	Ino  uint64 `json:"ino"`
}

// Repeat is one guarded file opened again by the processes that had
// opened it: Count opens after each process's first.
type Repeat struct {
	Path  string `json:"path"`
	Count uint64 `json:"count"`
}

// Leftover is a process of the traced tree still running when tracing stopped.
type Leftover struct {
	PID    uint32   `json:"pid"`
	ExecID string   `json:"exec_id"`
	Comm   string   `json:"comm"`
	Argv   []string `json:"argv"`
}

// Isolation is what an isolated session (run --isolate) enforced and what
// it refused or killed, so a refused attempt is evidence like any other.
type Isolation struct {
	// Masked are the paths hidden from the tree (as resolved at start);
	// Kept are those left visible inside them (the agent's own config).
	Masked []string `json:"masked"`
	Kept   []string `json:"kept,omitempty"`
	// Egress is the allowlist: addresses (host:port, host:* for any port)
	// and host names the tree's DNS answers resolve.
	Egress       []string `json:"egress"`
	PIDNamespace bool     `json:"pid_namespace"`
	MemoryMax    int64    `json:"memory_max,omitempty"`
	PidsMax      int64    `json:"pids_max,omitempty"`
	// Removed lists what killed sessions had left and the start removed.
	Removed []string `json:"removed,omitempty"`
	Denied  []Denial `json:"denied,omitempty"`
	Killed  []Kill   `json:"killed,omitempty"`
	Gated   []Gate   `json:"gated,omitempty"`
	Usage   *Usage   `json:"usage,omitempty"`
}

// Denial is one destination the egress control refused, with how often.
type Denial struct {
	Dest     string `json:"dest,omitempty"` // addr:port; empty for sock_create
	Hook     string `json:"hook"`           // connect4, connect6, sendmsg4, sendmsg6, sock_create
	Protocol int    `json:"protocol"`
	Count    uint64 `json:"count"`
	PID      uint32 `json:"pid"` // the first process refused
	// Listener is the process outside the tree that listened on a
	// refused loopback Dest when the session ended (the tree tried to
	// reach it: a dev server, a helper started before the session).
	ListenerPID uint32 `json:"listener_pid,omitempty"`
	ListenerExe string `json:"listener_exe,omitempty"`
}

// Kill is one process the kernel killed at a kill rule's match.
type Kill struct {
	PID  uint32 `json:"pid"`
	What string `json:"what"` // exec, write, ptrace, ungated, unix, fifo
	Path string `json:"path,omitempty"`
	// Target is the outside process a ptrace asked for, or the process
	// outside the session a refused Unix connect (What "unix") or FIFO
	// open ("fifo") reached; Path is then its executable.
	Target uint32 `json:"target,omitempty"`
}

// Gate is one exec the exec gate stopped, verified and let go or killed.
type Gate struct {
	PID     uint32 `json:"pid"`
	Path    string `json:"path"`
	Status  string `json:"status"` // the integrity verdict
	Allowed bool   `json:"allowed"`
	WaitNS  int64  `json:"wait_ns"` // from the stop to the verdict
}

// Usage is what the session's cgroup accounted; Missing names what the
// hierarchy did not provide.
type Usage struct {
	CPUUserNS   int64    `json:"cpu_user_ns"`
	CPUSystemNS int64    `json:"cpu_system_ns"`
	MemoryPeak  int64    `json:"memory_peak"`
	IORead      int64    `json:"io_read"`
	IOWrite     int64    `json:"io_write"`
	PidsPeak    int64    `json:"pids_peak"`
	Missing     []string `json:"missing,omitempty"`
}

// Verdict is one integrity verdict on a file an exec ran: the binary or
// the script an interpreter was asked to run, as the session stores it:
// the integrity package's encoding (Data, the JSON of integrity.Verdict)
// with the fields a reader of the file needs as columns.
type Verdict struct {
	ExecID string // the exec event's ExecID
	Role   string // "binary" or "script"
	Path   string
	SHA256 string
	Status string // verified, modified, unknown, unavailable
	Data   []byte // the verdict as JSON
}

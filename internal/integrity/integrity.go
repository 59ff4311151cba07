// Package integrity judges the files a traced process tree executes: the
// binary of every exec and the script an interpreter was asked to run. It
// hashes each file once per (device, inode, size, mtime, ctime), looks the
// hash up in the sources the user trusts (their pin file, the dpkg
// database, and the hashes first seen on this host), and says whether the
// file is verified, modified, unknown or could not be read, with where it
// sits when that is worth a second look. A detect rule turns the verdicts
// into the binary-modified and untrusted-binary findings (see Finding).
//
// Every recorder (run, attach, and each agent tree watch mode records)
// checks a session through one SessionCheck (StartSession, with the
// Store under stores.Home() and the traced command's cwd as workspace):
// it makes the session's Checker, starts a Pool, Submits a Request for
// every exec event as it arrives, stores each verdict in the session and,
// on Close, drains the pool and saves the session's first sightings.
package integrity

import "time"

// Status is the outcome of checking one file.
type Status string

// The statuses. Modified outranks unknown: a trusted source knowing the
// file under another hash is evidence, not knowing it is only absence.
const (
	// Verified: a trusted source lists the file with this hash.
	Verified Status = "verified"
	// Modified: a trusted source lists the file with another hash.
	Modified Status = "modified"
	// Unknown: no trusted source knows the file.
	Unknown Status = "unknown"
	// Unavailable: the file could not be hashed; Reason says why.
	Unavailable Status = "unavailable"
)

// Source names the trusted source behind a verified or modified verdict.
type Source string

// The sources, in the order they are asked: the first that knows the path
// decides.
const (
	SourcePin       Source = "pin"        // the user's pin file
	SourceDpkg      Source = "dpkg"       // /var/lib/dpkg/info/*.md5sums
	SourceFirstSeen Source = "first-seen" // the hash this host saw first
)

// Role says which file of an exec a verdict is about.
type Role string

// The roles.
const (
	// RoleBinary is the file the kernel executed.
	RoleBinary Role = "binary"
	// RoleScript is the file an interpreter was asked to run: a #! script,
	// `python x.py`, `node x.js`, `sh x.sh`, or the program `ld.so prog`
	// loads.
	RoleScript Role = "script"
)

// Via says how the bytes that were hashed were reached, since a path
// can be replaced between the exec and the hash and /proc/PID/exe cannot.
type Via string

// The ways a file is reached.
const (
	// ViaProcExe: /proc/PID/exe, opened while the process was alive, so
	// the bytes are the ones the kernel mapped even if the path changed.
	ViaProcExe Via = "proc-exe"
	// ViaPath: the path, opened when the exec was seen.
	ViaPath Via = "path"
)

// Verdict is the judgement on one file of one exec.
type Verdict struct {
	Role Role   `json:"role"`
	Path string `json:"path"` // absolute
	// Interpreter is, for a script, the binary that runs it.
	Interpreter string `json:"interpreter,omitempty"`
	Via         Via    `json:"via,omitempty"`
	SHA256      string `json:"sha256,omitempty"`
	// MD5 is set for files dpkg owns, whose md5sums list that hash.
	MD5  string `json:"md5,omitempty"`
	Size int64  `json:"size,omitempty"`

	Status Status `json:"status"`
	// Source decides a verified or modified verdict.
	Source Source `json:"source,omitempty"`
	// Expected is the hash Source lists, for a modified verdict, in
	// ExpectedAlgo ("sha256", or "md5" for dpkg).
	Expected     string `json:"expected,omitempty"`
	ExpectedAlgo string `json:"expected_algo,omitempty"`
	// Package is the dpkg package that owns Path, when one does.
	Package string `json:"package,omitempty"`
	// Of is, for a file no source knows by its own path that shadows a
	// file dpkg owns (a `true` first in PATH), that file: Source, Package
	// and Expected then speak of it, so a copy of a packaged tool is
	// verified and an altered one is modified.
	Of string `json:"of,omitempty"`
	// Since is when Source learnt the hash it lists (pin or first seen).
	Since time.Time `json:"since,omitzero"`
	// Reason explains an unavailable verdict, or a source that was
	// skipped (a dpkg file with no md5sums entry).
	Reason string `json:"reason,omitempty"`
	// Location is filled in for verdicts that are not verified.
	Location *Location `json:"location,omitempty"`
}

// Location describes where an unverified file sits. Each flag but
// UserWritable is a reason a binary nobody vouches for deserves a look: it
// was dropped where an agent (or anything it downloaded) writes.
type Location struct {
	Workspace    bool `json:"workspace,omitempty"`     // under the session's workspace
	Temp         bool `json:"temp,omitempty"`          // under a temp directory
	Download     bool `json:"download,omitempty"`      // under a Downloads directory
	UserWritable bool `json:"user_writable,omitempty"` // file or directory writable by a non-root user
	// Shadows is another executable of the same name on PATH: a `git` in
	// the workspace runs instead of /usr/bin/git for anything that finds
	// it first.
	Shadows string `json:"shadows,omitempty"`
}

// Suspicious reports whether the file sits where an agent, or what it
// fetched, drops files: the workspace, a temp or downloads directory, or
// in front of a tool of the same name. UserWritable alone does not count:
// ~/.local/bin and ~/go/bin are user-writable and full of the user's own
// tools; it is context for a finding, not a reason for one.
func (l *Location) Suspicious() bool {
	return l != nil && (l.Workspace || l.Temp || l.Download || l.Shadows != "")
}

// Request is one exec as the recorder saw it.
type Request struct {
	// ExecID identifies the exec to whoever gets the Result back.
	ExecID string
	// PID is the process, alive or not; 0 when unknown.
	PID uint32
	// Path is the kernel-resolved binary; Argv, Cwd and Script are the
	// exec event's fields of the same names.
	Path   string
	Argv   []string
	Cwd    string
	Script string
}

// Result holds the verdicts of one exec: always the binary, and the
// script when an interpreter was asked to run one.
type Result struct {
	ExecID string   `json:"exec_id,omitempty"`
	PID    uint32   `json:"pid,omitempty"`
	Binary Verdict  `json:"binary"`
	Script *Verdict `json:"script,omitempty"`
}

// Verdicts returns the binary's verdict and the script's, if any.
func (r Result) Verdicts() []Verdict {
	if r.Script == nil {
		return []Verdict{r.Binary}
	}
	return []Verdict{r.Binary, *r.Script}
}

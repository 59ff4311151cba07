// Package event defines the kernel events polygraph records: one flat
// struct whose JSON field names are the contract in DESIGN.md, so every
// reader (session store, correlation, reports, exporters) shares one shape.
package event

import (
	"strconv"
	"time"
)

// Kind names what happened. The values are the `kind` strings in DESIGN.md.
type Kind string

// The event kinds the sensor delivers.
const (
	KindExec    Kind = "exec"
	KindFork    Kind = "fork"
	KindExit    Kind = "exit"
	KindOpen    Kind = "open"
	KindRename  Kind = "rename"
	KindUnlink  Kind = "unlink"
	KindMkdir   Kind = "mkdir"
	KindChmod   Kind = "chmod"
	KindLink    Kind = "link"
	KindConnect Kind = "connect"
	KindBind    Kind = "bind"
	KindAccept  Kind = "accept"
	KindDNS     Kind = "dns"
	KindNet     Kind = "net"
)

// Kinds lists every kind in a stable order (for help texts and validation).
var Kinds = []Kind{KindExec, KindFork, KindExit, KindOpen, KindRename, KindUnlink, KindMkdir,
	KindChmod, KindLink, KindConnect, KindBind, KindAccept, KindDNS, KindNet}

// ValidKind reports whether k is one of Kinds.
func ValidKind(k string) bool {
	for _, v := range Kinds {
		if string(v) == k {
			return true
		}
	}
	return false
}

// Event is one kernel observation. Common fields are always set; the rest
// are set for the kinds the table in DESIGN.md gives them, and omitted from
// JSON otherwise. Pointers mark fields where zero is a meaningful value
// (fd 0, exit code 0).
type Event struct {
	Seq  uint64    `json:"seq"`
	TS   time.Time `json:"ts"`
	Kind Kind      `json:"kind"`
	PID  uint32    `json:"pid"`
	TID  uint32    `json:"tid"`
	PPID uint32    `json:"ppid"`
	// PathTruncated: a path of the event hit the sensor's limits.
	PathTruncated bool   `json:"path_truncated,omitempty"`
	Comm          string `json:"comm"`
	// ExecID names one process image: the pid and the boot-clock time the
	// image began (its fork, or its execve). ParentExecID is the image it
	// came from: the forking image for a fork, the image that called execve
	// for an exec. Following ParentExecID walks the tree of images.
	ExecID       string `json:"exec_id"`
	ParentExecID string `json:"parent_exec_id,omitempty"`

	// exec; open and the path kinds use Path (and Path2 for rename/link).
	Path  string `json:"path,omitempty"`
	Path2 string `json:"path2,omitempty"`

	// exec, fork, exit (nil for the other kinds)
	*Process

	// open and the path kinds; Result also for connect, bind, accept.
	Flags  *uint32 `json:"flags,omitempty"`
	Mode   *uint32 `json:"mode,omitempty"`
	Access string  `json:"access,omitempty"` // read, write, create (comma-joined: "write,create")
	Result *int64  `json:"result,omitempty"` // fd / 0 on success, -errno on failure

	// connect, bind, accept, dns, net (nil for the other kinds)
	*Network
}

// ExecID formats the id of the image of pid that began at boot-clock ns.
func ExecID(pid uint32, startNS uint64) string {
	var b [32]byte
	return string(strconv.AppendUint(append(strconv.AppendUint(b[:0], uint64(pid), 10), '-'), startNS, 10))
}

// Failed reports whether the event carries a negative (errno) result.
func (e *Event) Failed() bool { return e.Result != nil && *e.Result < 0 }

// Ptr returns a pointer to v, for the optional fields above.
func Ptr[T any](v T) *T { return &v }

// Process holds the fields of exec, fork and exit events. Event embeds
// it by pointer, so the million open events of a busy session do not
// carry them: an Event is 224 bytes instead of 496. The kinds it belongs
// to always have it (NewEvent); reading its fields through an Event of
// another kind panics, so code asks the kind first.
type Process struct {
	// exec
	Argv          []string `json:"argv,omitempty"`
	ArgvTruncated bool     `json:"argv_truncated,omitempty"`
	Cwd           string   `json:"cwd,omitempty"`
	// Script is, for a script run through its #! interpreter (Path), the
	// script itself, resolved against Cwd.
	Script string `json:"script,omitempty"`
	// Home is the HOME of the exec's environment, when the sensor
	// recorded it ("" otherwise): the home whose dotfiles the program and
	// its subtree read as "~/", which need not be polygraph's own (env -i
	// HOME=…, sudo -u, a CI runner).
	Home   string  `json:"home,omitempty"`
	UID    *uint32 `json:"uid,omitempty"`
	SHA256 string  `json:"sha256,omitempty"`

	// fork: the new process and the id of its first image.
	ChildPID    uint32 `json:"child_pid,omitempty"`
	ChildExecID string `json:"child_exec_id,omitempty"`

	// exit
	ExitCode   *int   `json:"exit_code,omitempty"`
	Signal     int    `json:"signal,omitempty"`
	DurationNS uint64 `json:"duration_ns,omitempty"`
	CPUNS      uint64 `json:"cpu_ns,omitempty"`
	MaxRSSKB   uint64 `json:"max_rss_kb,omitempty"`
	ReadBytes  uint64 `json:"read_bytes,omitempty"`
	WriteBytes uint64 `json:"write_bytes,omitempty"`
}

// Network holds the fields of connect, bind, accept, dns and net events
// (see Process).
type Network struct {
	// connect, bind, accept, net
	Family string `json:"family,omitempty"` // ipv4, ipv6, unix
	Proto  string `json:"proto,omitempty"`  // tcp, udp
	Addr   string `json:"addr,omitempty"`
	Port   uint16 `json:"port,omitempty"`
	Host   string `json:"host,omitempty"`

	// dns
	QName   string   `json:"qname,omitempty"`
	QType   string   `json:"qtype,omitempty"`
	Answers []string `json:"answers,omitempty"`

	// net: bytes this process sent to / received from one peer.
	BytesSent uint64 `json:"bytes_sent,omitempty"`
	BytesRecv uint64 `json:"bytes_recv,omitempty"`
}

// New returns an event of kind k with the field groups k carries.
func New(k Kind) *Event {
	e := &Event{Kind: k}
	e.Complete()
	return e
}

// Complete gives e the field groups (Process, Network) its kind carries,
// where they are missing, so they can be read and set. Decoders call it
// once they know the kind.
func (e *Event) Complete() {
	switch e.Kind {
	case KindExec, KindFork, KindExit:
		if e.Process == nil {
			e.Process = &Process{}
		}
	case KindConnect, KindBind, KindAccept, KindDNS, KindNet:
		if e.Network == nil {
			e.Network = &Network{}
		}
	}
}

// Args is e's argv for any kind: nil for the kinds without a Process.
func (e *Event) Args() []string {
	if e.Process == nil {
		return nil
	}
	return e.Argv
}

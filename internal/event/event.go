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

// The kind constants, Kinds and the field groups of each kind are
// generated from kinds.tsv (kinds_gen.go).

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
	// open that returned an fd: the file the kernel opened (nil otherwise,
	// and in sessions recorded before the sensor took it).
	*Object

	// connect, bind, accept, dns, net, send, uring, peer (nil for the other kinds)
	*Network

	// inject, memread, signal, bpf (nil for the other kinds)
	*Call

	// an operation done through io_uring (nil for a syscall's)
	*Ring

	// chown, xattr (nil for the other kinds)
	*Attr

	// key (nil for the other kinds)
	*Key

	// mount (nil for the other kinds)
	*Mount
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
// to always have it (NewEvent); an Event of another kind has none, and its
// accessors (accessors.go) then read the zero value.
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
	Home string `json:"home,omitempty"`
	// Env are the variables of the exec's environment that say where
	// agents keep their files (agent.LocationVars: CODEX_HOME, ...) and
	// that change what a program runs beyond its argv (LD_PRELOAD,
	// GIT_SSH_COMMAND, ...), as NAME=value, read as HOME is: what
	// transcript discovery follows (so a report made later, as another
	// user or in another environment, finds what the agent wrote), and
	// what says a credential's client was run with a helper or a library
	// of someone else's.
	Env    []string `json:"env,omitempty"`
	UID    *uint32  `json:"uid,omitempty"`
	SHA256 string   `json:"sha256,omitempty"`
	// ScriptSHA256 is the hash of the script an interpreter was asked to
	// run (Script, or the file named in Argv: `python3 x.py`). Neither
	// hash is recorded by the sensor: the session reader fills both from
	// the integrity verdicts recorded beside the events.
	ScriptSHA256 string `json:"script_sha256,omitempty"`
	// Deleted: the image file had no links left when it ran (unlinked
	// after it was opened, or a memfd): it was executed from an fd, and
	// Path names a file that no longer exists.
	Deleted bool `json:"deleted,omitempty"`

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

// Object is the file a successful open returned, as the kernel holds it:
// read from the process's fd table when the call returns, not from the
// string the process passed. For such an event Event.Path is this file's
// path, walked from its dentry up to the root of the mount namespace, so
// a symlink, a /proc/self/{root,cwd,fd} magic link, an inherited dirfd, a
// chroot or a second thread rewriting the path buffer cannot make the
// record name a file other than the one opened. Dev and Ino are the
// file's identity as stat(2) gives it, so a hard link or a renamed
// directory still leads to the same file.
type Object struct {
	Dev uint64 `json:"dev"` // st_dev encoding (makedev(major, minor))
	Ino uint64 `json:"ino"`
	// FileType is the kind of file from its mode: file, dir, symlink,
	// char, block, fifo, socket.
	FileType string `json:"file_type,omitempty"`
	// Nlink is the file's link count when it was opened: above 1, other
	// names lead to it (hard links); 0, it is deleted or anonymous.
	Nlink uint32 `json:"nlink"`
	// PathRequested is the path the process named (resolved lexically
	// against its cwd or dirfd, as Path was before the sensor read the
	// object), set only where it differs from Path. /proc/self/X and
	// /proc/thread-self/X stay as named where they are the opener's own
	// /proc/PID/X (the same file; PID is on the event).
	PathRequested string `json:"path_requested,omitempty"`
	// PathDiffers says why they differ, where the strings tell: "proc"
	// (through a /proc or /dev/fd magic link), "symlink" (the last
	// component names another file: a symlink was followed, or the buffer
	// was rewritten), "chroot" (the requested path is the tail of the
	// real one), "pidfd_getfd" (another process's open file, taken with
	// pidfd_getfd(2); PathRequested is its /proc/PID/fd/N), "scm_rights"
	// (a file received over a Unix socket; no path named), else
	// "differs" (a symlinked directory, a bind mount, a rename since...).
	PathDiffers string `json:"path_differs,omitempty"`
	// Repeats, when not 0, makes the event the sum of an image's later
	// read-only opens of this same file (same identity, not changed in
	// between), which the sensor counted instead of recording one by one
	// (bpf/reopen.h): Repeats of them, the last at TS. The first two are
	// events of their own, earlier, with no Repeats.
	Repeats uint64 `json:"repeats,omitempty"`
}

// Network holds the fields of connect, bind, accept, dns, net and send events
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

	// AddrUser (connect, send): the address was read from the process's
	// memory when the call returned, not from the socket (a send's
	// destination, which the kernel does not keep; a connect that left
	// no peer on the socket): a second thread could have rewritten it
	// after the kernel copied it. A connect without it names the peer the
	// kernel connected the socket to.
	AddrUser bool `json:"addr_user,omitempty"`
	// FastOpen (connect): a TCP Fast Open sendto/sendmsg, which connects
	// and sends the first data in one call.
	FastOpen bool `json:"fastopen,omitempty"`
	// connect to a Unix socket: the process that listened on it, its
	// executable, and whether it is in the traced tree (nil: not known).
	// On a peer event: the process outside the tree on the FIFO's other
	// end.
	PeerPID    uint32 `json:"peer_pid,omitempty"`
	PeerExe    string `json:"peer_exe,omitempty"`
	PeerInTree *bool  `json:"peer_in_tree,omitempty"`
}

// Call holds the fields of inject, memread, signal and bpf events (see Process).
type Call struct {
	// inject, signal: the process aimed at (its pid as the caller named
	// it), and for an inject the image its events carry from then on.
	TargetPID    uint32 `json:"target_pid,omitempty"`
	TargetExecID string `json:"target_exec_id,omitempty"`
	// Method is how: ptrace_attach, ptrace_seize, ptrace_poketext,
	// ptrace_pokedata, ptrace_pokeuser, ptrace_setregs, ptrace_setfpregs,
	// ptrace_setregset, process_vm_writev, proc_mem (inject);
	// ptrace_peektext, ptrace_peekdata, ptrace_peekuser, ptrace_getregs,
	// ptrace_getfpregs, ptrace_getregset, process_vm_readv, proc_mem
	// (memread); kill, tkill,
	// tgkill, pidfd_send_signal (signal); bpf.
	Method string `json:"method,omitempty"`
	// Adopted (inject): the target was outside the tree; it is traced
	// from this call on, its image's parent_exec_id the injector's image,
	// so its later events are attributed through the injector.
	Adopted bool `json:"adopted,omitempty"`
	// TargetExe (inject, memread) is the target's executable, read from
	// /proc when the event was decoded ("" if it had gone, or in a
	// recorded replay).
	TargetExe string `json:"target_exe,omitempty"`
	// TargetInTree (inject, memread) says whether the target was in the
	// traced tree before the call (nil: not known, TargetNSLocal).
	TargetInTree *bool `json:"target_in_tree,omitempty"`
	// TargetNSLocal (inject, by pid): the caller is in a child pid
	// namespace, so TargetPID is the target's number there, not the
	// host's; it was neither looked up nor adopted.
	TargetNSLocal bool `json:"target_ns_local,omitempty"`
	// Signo is the signal sent (signal).
	Signo int `json:"signo,omitempty"`
	// BPFCmd names the bpf(2) command (BPF_PROG_LOAD, ...).
	BPFCmd string `json:"bpf_cmd,omitempty"`
}

// Ring marks an event whose operation a process submitted through an
// io_uring ring instead of making the syscall: the sensor reads it from
// the io_uring tracepoints, with the kernel's copy of the path names and
// the opened file's object, as for the syscall. A KindUring event is one
// operation of its kind per process and file (or socket) however many
// were submitted: the first, with its result, and at the process's exit
// the totals (RingOps, RingBytes).
type Ring struct {
	// Via is "io_uring" (the only channel so far).
	Via string `json:"via"`
	// RingOp names the operation: the IORING_OP_ name in lower case
	// ("openat", "read", "send", ...), or "setup" for a ring's creation.
	RingOp string `json:"uring_op,omitempty"`
	// ResultUnknown: the operation asked for no completion on success
	// (IOSQE_CQE_SKIP_SUCCESS), so it was recorded when submitted and
	// Result is nil.
	ResultUnknown bool `json:"result_unknown,omitempty"`
	// RingOps and RingBytes, on the KindUring event the sensor adds when
	// the process exits (timed at its last such operation), total every
	// operation RingOp of the process on this file or socket, the first
	// included: how many, and for the operations that move data (reads,
	// writes, sends, receives, splice, tee) the bytes they moved.
	RingOps   uint64 `json:"uring_ops,omitempty"`
	RingBytes uint64 `json:"uring_bytes,omitempty"`
}

// Attr holds the fields of chown and xattr events: the change asked for
// of a file's owner or extended attributes (see Process).
type Attr struct {
	// Owner and OwnerGroup (chown) are the user and group ids asked for;
	// nil where the call left them as they were (-1).
	Owner      *uint32 `json:"owner,omitempty"`
	OwnerGroup *uint32 `json:"owner_group,omitempty"`
	// XattrName (xattr) is the attribute: "security.capability" (file
	// capabilities), "system.posix_acl_access" and
	// "system.posix_acl_default" (ACLs), "user.*", "trusted.*", ...
	XattrName string `json:"xattr_name,omitempty"`
	// XattrOp (xattr) is "set" or "remove".
	XattrOp string `json:"xattr_op,omitempty"`
}

// Key holds the fields of a key event: a call of the kernel keyring
// (keyctl, add_key, request_key). A key's payload is a secret that lives
// in no file; the sensor records which key a call touched and how, never
// the payload.
type Key struct {
	// KeyOp is what the call did: "read" (KEYCTL_READ: the payload, or
	// a keyring's list of keys, handed to the caller), "describe",
	// "search", "link", "move", "update", "join_session_keyring",
	// "get_persistent" (keyctl's commands), "add" (add_key), "request"
	// (request_key).
	KeyOp string `json:"key_op,omitempty"`
	// KeySerial is the key operated on (read, describe, link, move,
	// update), or the one found or made (search, request, add,
	// join_session_keyring, get_persistent); 0 for none. Negative
	// serials name a process's special keyrings (-4 the user keyring,
	// -3 the session keyring, ...).
	KeySerial int32 `json:"key_serial,omitempty"`
	// KeyRing is the keyring searched (search), linked or moved into
	// (link, move), added to or linked into (add, request,
	// get_persistent).
	KeyRing int32 `json:"key_ring,omitempty"`
	// KeyType and KeyDesc are the key's type ("user", "logon",
	// "keyring", ...) and description, as the call named them (add,
	// request, search; join_session_keyring's name in KeyDesc) or the
	// kernel described the key (describe).
	KeyType string `json:"key_type,omitempty"`
	KeyDesc string `json:"key_desc,omitempty"`
	// KeyBytes (read) is how many bytes of the payload the kernel
	// copied to the caller: 0 when it asked the length only.
	KeyBytes uint32 `json:"key_bytes,omitempty"`
}

// Mount holds the fields of mount events: a mount(2), umount2 or a call
// of the new mount API (see Process). Path is what the call names in the
// tree (a mount's target, open_tree's path), Path2 where a bind or a move
// takes its files from; both resolved as every file event's paths are.
type Mount struct {
	// MountOp is the call: "mount", "umount", "open_tree", "move_mount",
	// "fsopen", "fsconfig", "fsmount".
	MountOp string `json:"mount_op"`
	// FSType (mount, fsopen) is the filesystem type asked for ("overlay",
	// "tmpfs"; empty for a bind, a move or a remount).
	FSType string `json:"fs_type,omitempty"`
	// MountData is, for a mount of a filesystem whose options name paths
	// (overlay), its option string as passed, up to 256 bytes; for an
	// fsconfig, the key and, where the key names a path (source,
	// lowerdir, lowerdir+, upperdir, workdir, datadir+), "=value". Other
	// options are not kept: they can carry passwords (cifs).
	MountData string `json:"mount_data,omitempty"`
	// MountLayers are the directories an overlay's options name (upperdir,
	// each lowerdir, datadir), or the path an fsconfig's value names,
	// resolved against the caller's working directory (or, for
	// FSCONFIG_SET_PATH and SET_FD, the descriptor it names): the trees
	// whose files the mount shows.
	MountLayers []string `json:"mount_layers,omitempty"`
	// MountFD is the descriptor the call worked on: fsconfig's and
	// fsmount's filesystem context, move_mount's source when it is a
	// detached tree (open_tree, fsmount) rather than a path.
	MountFD *int32 `json:"mount_fd,omitempty"`
}

// ViaRing is the value of Ring.Via.
const ViaRing = "io_uring"

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
	g := e.Kind.Groups()
	if g&GroupProcess != 0 && e.Process == nil {
		e.Process = &Process{}
	}
	if g&GroupNetwork != 0 && e.Network == nil {
		e.Network = &Network{}
	}
	if g&GroupCall != 0 && e.Call == nil {
		e.Call = &Call{}
	}
	if g&GroupRing != 0 && e.Ring == nil {
		e.Ring = &Ring{Via: ViaRing}
	}
	if g&GroupAttr != 0 && e.Attr == nil {
		e.Attr = &Attr{}
	}
	if g&GroupKey != 0 && e.Key == nil {
		e.Key = &Key{}
	}
	if g&GroupMount != 0 && e.Mount == nil {
		e.Mount = &Mount{}
	}
}

// Args is e's argv for any kind: nil for the kinds without a Process.
func (e *Event) Args() []string {
	if e.Process == nil {
		return nil
	}
	return e.Argv()
}

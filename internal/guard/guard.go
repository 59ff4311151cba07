// Package guard enforces an isolated session: it hides credential files
// from the traced process tree behind a private mount namespace, confines
// the tree's network egress to an allowlist with cgroup BPF programs,
// kills a process of the tree that runs a denied binary or opens a denied
// file for writing and, optionally, stops every exec until a gate has
// judged it (Kill, Gate: tracepoint programs, which kill after the
// syscall and cannot refuse it), accounts and limits its resources in a
// per-session cgroup v2, and removes what a killed session left behind. polygraph's recorder keeps
// recording every refused attempt; guard only makes the attempt fail.
//
// The kernel side lives in the _linux.go files; this file holds the types
// that describe a session, so the analysis code that reads them builds
// anywhere.
package guard

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Options describes one isolated session.
type Options struct {
	// ID names the session's cgroup (polygraph-<ID> under the polygraph
	// parent); letters, digits, '.', '_' and '-' only.
	ID string
	// Mask lists absolute paths to hide: a directory is covered by an
	// empty read-only tmpfs, a file by an empty read-only file. Paths that
	// do not exist are skipped (there is nothing to hide).
	Mask []string
	// Keep lists absolute paths that stay visible although they lie under
	// a masked directory (the agent's own config in a shared store).
	Keep []string
	// PIDNamespace runs the tree in its own PID namespace with its own
	// /proc, under a small init (polygraph) that starts the command,
	// forwards signals and reaps orphans. Without it an unprivileged tree
	// can read masked files through /proc/<pid>/root of any process of
	// the same user outside the tree, and signal or ptrace those
	// processes. When the command exits, the rest of the tree is killed.
	PIDNamespace bool
	// NoIOUring makes the tree's io_uring_setup, io_uring_enter and
	// io_uring_register fail with ENOSYS (a seccomp filter the tree
	// inherits and cannot remove), as on a kernel without io_uring: the
	// edge gate and the kill rules act at syscall exits, which io_uring's
	// own operations never pass through.
	NoIOUring bool
	// Egress, when non-nil, confines connect() and UDP sends to the
	// allowlist; nil leaves the network alone.
	Egress *Egress
	// MemoryMax and PidsMax are written to memory.max and pids.max when
	// non-zero; Start fails if the hierarchy lacks the controller, since a
	// limit that silently does not apply is worse than none.
	MemoryMax int64
	PidsMax   int64
	// Kill, when non-nil, has the kernel kill a process of the tree at
	// the syscall that matches it (see Kill).
	Kill *Kill
	// Gate, when non-nil, stops every exec of the tree before its first
	// instruction of user code and asks Gate whether it may run: true
	// continues it (SIGCONT), false kills it (SIGKILL).
	Gate GateFunc
	// UnixPeer, when non-nil, stops a process of the tree whose Unix
	// stream or seqpacket connect reached a listener outside the session
	// (its cgroup), before it can send, and asks UnixPeer whether that
	// listener may serve the tree: true continues it, false kills it
	// (Killed.What "unix", Target the listener). It stops an open of a
	// named FIFO the same way, and asks about each process outside the
	// session that holds the FIFO open (Killed.What "fifo").
	UnixPeer UnixPeerFunc
}

// UnixPeerFunc judges one process outside the session that process pid
// of the tree reached: the listener of a Unix socket it connected to (0
// when the process that listened is gone), or a holder of a FIFO it
// opened. It returns whether the tree may talk to it, and its executable
// for the record.
type UnixPeerFunc func(pid, peer uint32) (allow bool, exe string)

// Kill lists what the kernel kills a process of the tree for, from the
// BPF program at the syscall, with SIGKILL. Nothing can be refused on
// the machines polygraph targets (no fentry or LSM programs there), so
// the syscall has happened when the process dies: see docs/enforcement.md
// for exactly what is left. Paths are resolved to (device, inode) at
// Start: a hard link or symlink to a listed file matches, a listed path
// that does not exist then matches nothing.
type Kill struct {
	// Exec are binaries the tree may not run (a directory: any binary
	// below it). The new image dies before its first instruction. A
	// script is matched by its interpreter, not by its own path.
	Exec []string
	// Write are files the tree may not open for writing (a directory:
	// any file below it): persistence and privilege paths (~/.bashrc,
	// /etc/sudoers.d). The process dies on its way out of the open,
	// before it can write.
	Write []string
}

// GateFunc judges one stopped exec: pid is the process (stopped, so
// /proc/PID/exe is the image the kernel mapped). It returns whether the
// exec may run, with the path and the verdict for the record.
type GateFunc func(ctx context.Context, pid uint32) (allow bool, path, verdict string)

// Killed is one process the kernel killed at a Kill match, or because
// the gate could not be asked (What "ungated").
type Killed struct {
	PID  uint32
	What string // exec, write, ungated, unix, fifo, shared (a Unix connect or FIFO open by a process sharing its descriptors with another: no stop would hold that one)
	Path string // the rule's path that matched; unix, fifo: the outside process's executable
	// Target is the process outside the session a refused Unix connect
	// (What "unix") or FIFO open (What "fifo") reached.
	Target uint32
}

// Gated is one exec the gate stopped and judged.
type Gated struct {
	PID     uint32
	Path    string
	Verdict string
	Allowed bool
	// Wait is from the stop in the kernel to the SIGCONT or SIGKILL.
	Wait time.Duration
}

// Egress is the network allowlist: addresses, and host names whose DNS
// answers become allowed addresses as the tree receives them.
type Egress struct {
	Allow []Endpoint
	// Names are allowed host names. A DNS answer for one of them that
	// the tree receives over UDP from a resolver in Allow (port 53) adds
	// its A and AAAA addresses, with the name's ports, to the allowlist
	// in the kernel before the tree reads the answer, so the connect that
	// follows a lookup cannot lose a race. Resolving them at Start as
	// well covers lookups the kernel does not see (DNS over TCP or HTTPS,
	// a cache outside the tree).
	Names []Name
}

// Name is an allowed host name and its ports (none: any port; at most
// four).
type Name struct {
	Host  string
	Ports []uint16
}

// nameHash is the key of an allowed name in the BPF names map: FNV-1a
// over the lowercased name in DNS wire format (length-prefixed labels,
// without the final zero), as guard_dns computes it from a question.
func nameHash(host string) uint64 {
	h := uint64(0xcbf29ce484222325)
	add := func(c byte) { h = (h ^ uint64(c)) * 0x100000001b3 }
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		add(byte(len(label)))
		for i := 0; i < len(label); i++ {
			c := label[i]
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			add(c)
		}
	}
	return h
}

// Endpoint is one allowed destination: an address and a port, or any port
// on the address when Port is 0. An IPv4 address also covers its
// IPv4-mapped IPv6 form.
type Endpoint struct {
	Addr netip.Addr
	Port uint16
}

// String renders the endpoint as host:port ("*" for any port).
func (e Endpoint) String() string {
	if e.Port != 0 {
		return netip.AddrPortFrom(e.Addr, e.Port).String()
	}
	if e.Addr.Is4() {
		return e.Addr.String() + ":*"
	}
	return "[" + e.Addr.String() + "]:*"
}

// Denial is one refused destination with how often the tree tried it.
type Denial struct {
	Dest     netip.AddrPort
	Hook     string // connect4, connect6, sendmsg4, sendmsg6; sock_create (ICMP or raw socket, no Dest)
	Protocol int    // IPPROTO_TCP, IPPROTO_UDP, ...
	Count    uint64
	PID      uint32 // the first process refused
	UID      uint32
}

// Usage is what the session's cgroup accounted when it ended. A field the
// hierarchy does not provide (its controller is bound to cgroup v1, as on
// hybrid machines) stays zero and its file is named in Missing.
type Usage struct {
	CPUUser, CPUSystem time.Duration
	MemoryPeak         int64 // bytes
	IORead, IOWrite    int64 // bytes
	PidsPeak           int64
	Missing            []string
}

// Leftover is something a previous session left behind and Cleanup
// removed: a cgroup directory, with the processes it had to kill.
type Leftover struct {
	Path   string
	Killed int
}

// String describes the leftover for a log line.
func (l Leftover) String() string {
	if l.Killed > 0 {
		return fmt.Sprintf("%s (killed %d processes)", l.Path, l.Killed)
	}
	return l.Path
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// CredentialPaths returns the credential stores under home that an
// isolated session hides by default. Other agents' config stores are the
// caller's to add (the agent profiles know them), and so is the own
// agent's config, in Keep.
func CredentialPaths(home string) []string {
	rel := []string{
		".ssh", ".aws", ".docker/config.json", ".netrc", ".kube",
		".config/gcloud", ".config/gh", ".git-credentials", ".azure",
	}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(home, r)
	}
	return out
}

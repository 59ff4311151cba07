// Package fdpath resolves the paths a process names through one of its
// file descriptors (/proc/self/fd/N/rest, /proc/PID/fd/N/rest,
// /proc/thread-self/fd/N/rest, /dev/fd/N/rest: how Bun, which Claude Code
// runs on, names files relative to a directory it holds open) into the
// paths those descriptors were opened on, and (Rooted) the paths it
// names through its own root (/proc/self/root/rest, /proc/PID/root/rest)
// into /rest.
//
// It is the one place polygraph does so. The sensor's decoder resolves
// every path it decodes while recording; the session reader runs every
// event it reads through a Resolver too, so that sessions recorded before
// the sensor resolved come out the same. Everything downstream
// (attribution, rules, reports) takes the events' paths as they are.
package fdpath

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// Resolver remembers, per process, the path each descriptor was opened
// on, as the events of one session tell it in seq order. Descriptors are
// learnt from successful opens only (not from dup, fork or pipes), last
// open wins, and a process's table goes with its exit: pids are reused.
// The zero value is not ready: use New.
type Resolver struct {
	byPID   map[uint32]*pidFDs
	lastPID uint32
	last    *pidFDs // byPID[lastPID]: events come in runs of one process
	// spare are tables of exited processes, emptied, for the next
	// processes: a session's processes are many and short-lived, and a
	// report reading a million events runs without the collector (the
	// tables made anew were 6 MiB).
	spare []*pidFDs
}

// maxSpare bounds Resolver.spare.
const maxSpare = 64

// pidFDs are one pid's fds: the low ones by number, the rest in a map.
type pidFDs struct {
	low  []string
	high map[int64]string
}

// lowFDs is how many fds a pid's table keeps in its slice.
const lowFDs = 1024

// New returns a Resolver that knows no descriptor.
func New() *Resolver { return &Resolver{byPID: map[uint32]*pidFDs{}} }

// of returns pid's fds, made when create is set (else nil for a pid with
// none).
func (r *Resolver) of(pid uint32, create bool) *pidFDs {
	if r.last != nil && r.lastPID == pid {
		return r.last
	}
	f := r.byPID[pid]
	if f == nil {
		if !create {
			return nil
		}
		if n := len(r.spare); n > 0 {
			f, r.spare = r.spare[n-1], r.spare[:n-1]
		} else {
			f = &pidFDs{}
		}
		r.byPID[pid] = f
	}
	r.lastPID, r.last = pid, f
	return f
}

// Opened records that pid opened p as fd (p as its event carries it:
// already resolved).
func (r *Resolver) Opened(pid uint32, fd int64, p string) {
	f := r.of(pid, true)
	if fd >= 0 && fd < lowFDs {
		if n := int(fd) + 1; n > len(f.low) {
			f.low = slices.Grow(f.low, max(n, 16)-len(f.low))[:n]
		}
		f.low[fd] = p
		return
	}
	if f.high == nil {
		f.high = map[int64]string{}
	}
	f.high[fd] = p
}

// lookup returns the path pid last opened as fd; ok is false when unknown.
func (r *Resolver) lookup(pid uint32, fd int64) (string, bool) {
	f := r.of(pid, false)
	switch {
	case f == nil:
		return "", false
	case fd >= 0 && fd < lowFDs:
		if fd < int64(len(f.low)) && f.low[fd] != "" {
			return f.low[fd], true
		}
		return "", false
	}
	p, ok := f.high[fd]
	return p, ok
}

// Forget drops pid's descriptors: it exited, and its pid may come back
// as another process.
func (r *Resolver) Forget(pid uint32) {
	if f := r.byPID[pid]; f != nil && len(r.spare) < maxSpare {
		clear(f.low)
		f.low, f.high = f.low[:0], nil
		r.spare = append(r.spare, f)
	}
	delete(r.byPID, pid)
	if r.lastPID == pid {
		r.last = nil
	}
}

// Path returns p, named by pid, with a leading descriptor directory
// replaced by the path that descriptor was opened on: the descriptor's
// own path when nothing follows it. A path through a descriptor the
// Resolver does not know, or any other path, comes back unchanged. It
// allocates only for a path it rewrites.
func (r *Resolver) Path(pid uint32, p string) string {
	fd, rest, ok := Split(p, pid)
	if !ok {
		return p
	}
	base, ok := r.lookup(pid, fd)
	if !ok {
		return p
	}
	if rest == "" {
		return base
	}
	return path.Join(base, rest)
}

// Rooted returns p, named by pid, without a leading link to pid's own
// root (/proc/self/root/rest, /proc/thread-self/root/rest,
// /proc/PID/root/rest: /rest), and any other path unchanged. What
// polygraph records is named from that root already, so a name through
// it is the name without it. A successful open's object path says so by
// itself (and keeps the name asked for beside it); an event with no
// object (a failed open, a rename, a link) needs this: without it, a
// refused read of /proc/self/root/home/u/.aws/credentials names no
// credential.
func Rooted(pid uint32, p string) string {
	if !Through(p) {
		return p
	}
	if rest, ok := rootTail(p, pid); ok {
		return path.Clean("/" + rest)
	}
	return p
}

// Event resolves the paths of a file event in place (a symlink's target
// is text, and stays as written), then learns from it: an open's
// descriptor, an exit's end of the process's table. Feed it every event of
// a session, in seq order.
func (r *Resolver) Event(e *event.Event) {
	switch {
	case e.Kind.IsFile():
		if Through(e.Path) {
			e.Path = r.Path(e.PID, e.Path)
			if e.Object == nil {
				e.Path = Rooted(e.PID, e.Path)
			}
		}
		if Through(e.Path2) && !(e.Kind == event.KindLink && e.Flags != nil && *e.Flags&symlinkFlag != 0) {
			e.Path2 = Rooted(e.PID, r.Path(e.PID, e.Path2))
		}
		// (a sum of counted repeats carries the first open's fd, long closed)
		if e.Kind == event.KindOpen && e.Result != nil && *e.Result >= 0 && (e.Object == nil || e.Object.Repeats == 0) {
			r.Opened(e.PID, *e.Result, e.Path)
		}
	case e.Kind == event.KindExit:
		r.Forget(e.PID)
	}
}

// symlinkFlag marks a link event that made a symbolic link (the sensor's
// flag on the event): its Path2 is the link's text.
const symlinkFlag = 1 << 31

// Resolve runs evs, a session's events in seq order, through a new
// Resolver: for events that did not come through the session reader (a
// JSON export, a test's fixture).
func Resolve(evs []*event.Event) {
	r := New()
	for _, e := range evs {
		r.Event(e)
	}
}

// Through reports whether p may name a path through a descriptor: whether
// it starts with /proc/ or /dev/fd/. It runs on every path of a session,
// and nearly all part ways with both at their second byte.
func Through(p string) bool {
	if len(p) < 6 || p[0] != '/' {
		return false
	}
	switch p[1] {
	case 'p':
		return strings.HasPrefix(p, "/proc/")
	case 'd':
		return strings.HasPrefix(p, "/dev/fd/")
	}
	return false
}

// Split takes apart a path pid names through a descriptor: the fd, and
// what follows its directory ("" for the descriptor itself). ok is false
// for any other path, /proc/OTHERPID/fd/ included. It allocates nothing.
func Split(p string, pid uint32) (fd int64, rest string, ok bool) {
	if !Through(p) {
		return 0, "", false
	}
	tail, ok := dirTail(p, pid)
	if !ok {
		return 0, "", false
	}
	num, rest, _ := strings.Cut(tail, "/")
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil {
		return 0, "", false
	}
	return n, rest, true
}

// rootTail returns what follows the root link of a /proc/self/root,
// /proc/thread-self/root or /proc/PID/root path, PID being pid ("" for
// the root itself). ok is false for any other path, another process's
// root included: that one is its root, maybe not pid's.
func rootTail(p string, pid uint32) (string, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return "", false
	}
	switch {
	case strings.HasPrefix(rest, "self/"):
		rest = rest[len("self/"):]
	case strings.HasPrefix(rest, "thread-self/"):
		rest = rest[len("thread-self/"):]
	default:
		var buf [20]byte
		num := strconv.AppendUint(buf[:0], uint64(pid), 10)
		if len(rest) <= len(num) || rest[:len(num)] != string(num) || rest[len(num)] != '/' {
			return "", false
		}
		rest = rest[len(num)+1:]
	}
	if rest == "root" {
		return "", true
	}
	return strings.CutPrefix(rest, "root/")
}

// dirTail returns what follows the fd directory of a /proc/self/fd/,
// /proc/thread-self/fd/, /dev/fd/ or /proc/PID/fd/ path, PID being pid.
func dirTail(p string, pid uint32) (string, bool) {
	if rest, ok := strings.CutPrefix(p, "/dev/fd/"); ok {
		return rest, true
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return "", false
	}
	if t, ok := strings.CutPrefix(rest, "self/fd/"); ok {
		return t, true
	}
	if t, ok := strings.CutPrefix(rest, "thread-self/fd/"); ok {
		return t, true
	}
	var buf [20]byte
	num := strconv.AppendUint(buf[:0], uint64(pid), 10)
	if len(rest) > len(num) && rest[:len(num)] == string(num) {
		return strings.CutPrefix(rest[len(num):], "/fd/")
	}
	return "", false
}

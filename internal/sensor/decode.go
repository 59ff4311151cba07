package sensor

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
)

// Header flags and layout constants. Keep in sync with bpf/events.h and
// DATA_OFF in bpf/polygraph.bpf.c.
const (
	// envMax is ENV_MAX (bpf/events.h): the bytes of an exec's
	// environment its record carries.
	envMax = 4096

	flagTruncArgv = 1 << 0
	flagTruncPath = 1 << 1
	flagTruncUstr = 1 << 2
	flagPeers     = 1 << 3 // EVF_PEERS, on an exit record

	dataOff = 96 // DATA_OFF: variable-length data starts here in scratch-built records

	// ArgvMax is the most argv bytes (NULs included) an exec event carries.
	ArgvMax = 65535
	// PathMax is the most bytes of one path the process passed in.
	PathMax = 4096
	// WalkMax is the most bytes of a path resolved in the kernel (exec
	// path, cwd, the directory behind a dirfd), in at most WalkDepth components.
	WalkMax   = 4096
	WalkDepth = 64

	symlinkFlag = 1 << 31
	atRemoveDir = 0x200
)

// ErrShort is returned for a record shorter than its kind's layout says.
var ErrShort = errors.New("record too short")

// ErrUnknownKind is returned for a record whose kind byte is not known.
var ErrUnknownKind = errors.New("unknown record kind")

// proc is what the decoder remembers about one traced process.
type proc struct {
	imageNS      uint64 // the boot-clock start of the image execID names
	execID       string
	parentExecID string
}

// Decoder turns ring buffer records into events. It keeps the per-process
// state that records do not carry (the parent image of each image), so a
// single Decoder must see every record of a session, in order.
type Decoder struct {
	// BootOffset converts the kernel's boot clock to wall time:
	// wall = BootOffset + boot ns.
	BootOffset time.Time
	// PageKB is the page size in KiB, for max RSS.
	PageKB uint64
	// Environ, when set, appends process pid's environment (NUL-separated,
	// as /proc/PID/environ holds it) to buf and returns it, for an exec
	// whose record's copy of the environment was cut or failed and lacks
	// its HOME or a location variable (a variable past ENV_MAX bytes). An
	// exec event records its HOME (Process.Home: the home its "~/" means,
	// which need not be polygraph's) and location variables. The live
	// sensor reads /proc, once per such exec (home_linux.go); a decoder
	// of recorded bytes has none.
	Environ func(pid uint32, buf []byte) []byte
	// Exe, when set, gives the executable of process pid, for the events
	// naming a process the kernel could not walk the executable of (a
	// memread's or inject's target, a FIFO's outside peer that exited).
	// The live sensor reads /proc (exe_linux.go).
	Exe func(pid uint32) string

	procs map[uint32]*proc
	comms map[string]string // interned comm strings: few distinct values
	// fds knows each process's file descriptors from the paths its traced
	// opens returned them for, to resolve /proc/self/fd/N/... names (Bun,
	// which Claude Code runs on, opens files that way).
	fds *fdpath.Resolver
	// paths maps the bytes of an absolute path a process passed to the
	// path its events carry, so a path opened again costs one lookup.
	paths map[string]string
	key   []byte // scratch for a relative path's key in paths
	// ring keeps the first io_uring event of each process, operation
	// and file, for the totals drained at exit (uring.go).
	ring ringState
	// walks names the kernel's recent object walks by id (object.go);
	// walkHits counts the records that named one, walkMisses those whose
	// walk never arrived (atomic: Stats reads them while decoding runs).
	walks                walkNames
	walkHits, walkMisses atomic.Uint64

	// Events and their pointer fields come from slabs (see event.Slab).
	evs      event.Slab[event.Event]
	procSlab event.Slab[event.Process]
	netSlab  event.Slab[event.Network]
	objSlab  event.Slab[event.Object]
	u32      event.Slab[uint32]
	i64      event.Slab[int64]
	ints     event.Slab[int]

	envBuf []byte // Environ's buffer, reused
}

// maxPaths bounds Decoder.paths; past it the cache starts over.
const maxPaths = 1 << 16

// NewDecoder returns a decoder converting boot-clock times with bootOffset.
func NewDecoder(bootOffset time.Time) *Decoder {
	return &Decoder{BootOffset: bootOffset, PageKB: 4, procs: map[uint32]*proc{}, comms: map[string]string{},
		fds: fdpath.New(), paths: map[string]string{}}
}

// Seed tells the decoder about a process that was already running when
// tracing began (the root of `run`, or the tree `attach` joins).
func (d *Decoder) Seed(pid uint32, imageNS uint64, parentExecID string) string {
	id := event.ExecID(pid, imageNS)
	d.procs[pid] = &proc{imageNS: imageNS, execID: id, parentExecID: parentExecID}
	return id
}

// ExecIDOf returns the current image id of a traced pid, if known.
func (d *Decoder) ExecIDOf(pid uint32) string {
	if p := d.procs[pid]; p != nil {
		return p.execID
	}
	return ""
}

// Forget drops what the decoder keeps about pid, once its exit and any
// trailing records are through.
func (d *Decoder) Forget(pid uint32) {
	delete(d.procs, pid)
	d.fds.Forget(pid)
}

// path is the path a process named: p (NUL-terminated, as passed)
// resolved against the walked base and through the descriptors the
// decoder knows (fdpath). An absolute path outside /proc and /dev/fd does not depend on
// either and comes from the cache.
func (d *Decoder) path(pid uint32, p, base []byte) string {
	if i := bytes.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	// The cache's key is the absolute path itself, or for a relative one
	// NUL, the path, NUL and the walked base (which an absolute path,
	// starting with '/', cannot be). A relative path is never a
	// /proc/self/fd/N name: it depends on its bytes and its base alone.
	key := p
	cacheable := len(p) > 0 && p[0] == '/' && !bytes.HasPrefix(p, []byte("/proc/")) && !bytes.HasPrefix(p, []byte("/dev/fd/"))
	if !cacheable && (len(p) == 0 || p[0] != '/') && len(base) > 0 {
		d.key = append(append(append(append(d.key[:0], 0), p...), 0), base...)
		key, cacheable = d.key, true
	}
	if cacheable {
		if v, ok := d.paths[string(key)]; ok { // no allocation for the lookup
			return v
		}
	}
	v := Resolve(walked(base), d.fds.Path(pid, string(p)))
	if cacheable {
		if len(d.paths) >= maxPaths {
			clear(d.paths)
		}
		d.paths[string(key)] = v
	}
	return v
}

func castHeader[T any](b []byte) (*T, error) {
	var zero T
	if len(b) < int(unsafe.Sizeof(zero)) {
		return nil, fmt.Errorf("%w: %d bytes, want at least %d", ErrShort, len(b), unsafe.Sizeof(zero))
	}
	return (*T)(unsafe.Pointer(&b[0])), nil
}

// data returns the n bytes at *off in the record's data part and advances off.
func data(b []byte, off *int, n int) ([]byte, error) {
	start := dataOff + *off
	if n < 0 || start+n > len(b) {
		return nil, fmt.Errorf("%w: data [%d,%d) beyond %d bytes", ErrShort, start, start+n, len(b))
	}
	*off += n
	return b[start : start+n], nil
}

// pieces splits the record's data part into consecutive pieces of the
// given lengths, checking each against the record's size.
func pieces(b []byte, lens ...int) ([5][]byte, error) {
	var out [5][]byte // no record has more
	off := 0
	for i, n := range lens {
		p, err := data(b, &off, n)
		if err != nil {
			return out, err
		}
		out[i] = p
	}
	return out, nil
}

// Decode turns one record into an event. The returned event's Seq is zero;
// the session assigns it.
func (d *Decoder) Decode(b []byte) (*event.Event, error) {
	if len(b) == 0 {
		return nil, ErrShort
	}
	switch b[0] {
	case evExec:
		return d.decodeExec(b)
	case evFork:
		return d.decodeFork(b)
	case evExit:
		return d.decodeExit(b)
	case evOpen, evRename, evUnlink, evMkdir, evChmod, evLink, evHandle, evChown, evXattr:
		return d.decodePath(b)
	case evConnect, evBind, evAccept, evSend:
		return d.decodeSock(b)
	case evDNS:
		return d.decodeDNS(b)
	case evInject, evSignal, evBPF, evMemRead, evFollow:
		return d.decodeCall(b)
	case evPeer:
		return d.decodePeer(b)
	case evUring:
		return d.decodeUring(b)
	case evKey:
		return d.decodeKey(b)
	case evMount:
		return d.decodeMount(b)
	}
	return nil, fmt.Errorf("%w %d", ErrUnknownKind, b[0])
}

func cstring(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func (d *Decoder) comm(c [16]int8) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&c[0])), len(c))
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if v, ok := d.comms[string(b)]; ok { // no allocation for the lookup
		return v
	}
	s := string(b)
	d.comms[s] = s
	return s
}

// base fills the fields every event has from the header.
func (d *Decoder) base(h *polygraphEvHeader, kind event.Kind) *event.Event {
	e := d.evs.New()
	e.TS, e.Kind = d.BootOffset.Add(time.Duration(h.Ts)), kind
	e.PID, e.TID, e.PPID = h.Pid, h.Tid, h.Ppid
	e.Comm = d.comm(h.Comm)
	switch g := kind.Groups(); {
	case g&event.GroupProcess != 0:
		e.Process = d.procSlab.New()
	case g&event.GroupNetwork != 0 && g&event.GroupRing == 0:
		e.Network = d.netSlab.New()
	case g&event.GroupCall != 0:
		e.Call = &event.Call{}
	}
	p := d.procs[h.Pid]
	if p == nil || p.imageNS != h.ImageNs {
		// A process we did not see start (already running when tracing
		// began): its image id is still stable, its parent unknown.
		p = &proc{imageNS: h.ImageNs, execID: event.ExecID(h.Pid, h.ImageNs)}
		d.procs[h.Pid] = p
	}
	e.ExecID = p.execID
	e.ParentExecID = p.parentExecID
	return e
}

// walked turns a kernel-walked path (components leaf first, each
// NUL-terminated) into an absolute path.
func walked(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	// One allocation: the components, root-most first, each after a '/'.
	var sb strings.Builder
	sb.Grow(len(b) + 1)
	for end := len(b); end >= 0; {
		start := bytes.LastIndexByte(b[:end], 0) + 1
		sb.WriteByte('/')
		sb.Write(b[start:end])
		end = start - 1
	}
	return sb.String()
}

// Resolve joins a path a process passed with the directory it is relative
// to (cwd or dirfd), lexically. An absolute p ignores base.
func Resolve(base, p string) string {
	if p == "" {
		return base
	}
	if strings.HasPrefix(p, "/") {
		return path.Clean(p)
	}
	if base == "" {
		base = "/"
	}
	return path.Clean(base + "/" + p)
}

func (d *Decoder) decodeExec(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvExec](b)
	if err != nil {
		return nil, err
	}
	ps, err := pieces(b, int(r.PathLen), int(r.CwdLen), int(r.ArgvLen), int(r.ScriptLen), int(r.EnvLen))
	if err != nil {
		return nil, err
	}
	pb, cb, ab, sb, eb := ps[0], ps[1], ps[2], ps[3], ps[4]
	// The exec starts a new image: its parent is the image that called execve.
	prev := d.procs[r.H.Pid]
	np := &proc{imageNS: r.H.ImageNs, execID: event.ExecID(r.H.Pid, r.H.ImageNs)}
	if prev != nil {
		np.parentExecID = prev.execID
	}
	d.procs[r.H.Pid] = np
	e := d.base(&r.H, event.KindExec)
	e.Path = walked(pb)
	e.Process.Cwd = walked(cb)
	if e.Cwd() == "" && len(cb) == 0 {
		e.Process.Cwd = "/"
	}
	e.Process.Argv = splitArgv(ab)
	e.Process.ArgvTruncated = r.H.Flags&flagTruncArgv != 0
	e.PathTruncated = r.H.Flags&flagTruncPath != 0
	if e.Path == "" && len(e.Argv()) > 0 {
		e.Path = Resolve(e.Cwd(), e.Argv()[0])
	}
	if len(sb) > 0 {
		e.Process.Script = Resolve(e.Cwd(), cstring(sb))
	} else if prog := loaderProgram(e.Path, e.Argv()); prog != "" {
		e.Process.Script = Resolve(e.Cwd(), prog)
	}
	e.Process.UID = d.u32.Ptr(r.Uid)
	e.Process.Deleted = r.H.Flags&flagDeleted != 0
	env := d.execEnv(eb, r.H.Pid)
	e.Process.Home = env.home
	e.Process.Env = env.location()
	return e, nil
}

// locationVars are the environment variables an exec records beside its
// HOME: where the agents keep their transcripts (agent.LocationVars), and
// those that change what a program runs beyond its argv (a preloaded
// library, the program git or ssh runs for a connection or a password),
// which decide whether a credential's own client can be trusted with it.
var locationVars = append(agent.LocationVars(), "LD_PRELOAD", "LD_AUDIT", "LD_LIBRARY_PATH",
	"GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "NODE_OPTIONS", "BASH_ENV")

// execEnv finds HOME and the location variables in the environment the
// kernel copied at an exec, in one pass; from /proc, in one read, only
// where they may lie past what it copies (or nothing was copied).
func (d *Decoder) execEnv(eb []byte, pid uint32) execEnv {
	var env execEnv
	env.scan(eb, false)
	if (len(eb) == 0 || len(eb) >= envMax) && !env.complete() && d.Environ != nil {
		d.envBuf = d.Environ(pid, d.envBuf[:0])
		env.scan(d.envBuf, true)
	}
	return env
}

func splitArgv(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	s := string(b)
	s = strings.TrimSuffix(s, "\x00")
	return strings.Split(s, "\x00")
}

func (d *Decoder) decodeFork(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvFork](b)
	if err != nil {
		return nil, err
	}
	e := d.base(&r.H, event.KindFork)
	e.Process.ChildPID = r.ChildPid
	d.procs[r.ChildPid] = &proc{
		imageNS:      r.ChildImageNs,
		execID:       event.ExecID(r.ChildPid, r.ChildImageNs),
		parentExecID: e.ExecID,
	}
	e.Process.ChildExecID = d.procs[r.ChildPid].execID
	return e, nil
}

func (d *Decoder) decodeExit(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvExit](b)
	if err != nil {
		return nil, err
	}
	e := d.base(&r.H, event.KindExit)
	status := uint32(r.ExitCode)
	if sig := int(status & 0x7f); sig != 0 {
		e.Process.Signal = sig
	} else {
		e.Process.ExitCode = d.ints.Ptr(int((status >> 8) & 0xff))
	}
	if r.H.Ts > r.StartNs && r.StartNs != 0 {
		e.Process.DurationNS = r.H.Ts - r.StartNs
	}
	e.Process.CPUNS = r.CpuNs
	e.Process.MaxRSSKB = r.MaxrssPages * d.PageKB
	e.Process.ReadBytes = r.Rchar
	e.Process.WriteBytes = r.Wchar
	return e, nil
}

// Access classifies open flags: read, write, or both, plus create.
func Access(flags uint32) string {
	return accessNames[flags&oAccMode|(flags>>4)&4|(flags>>6)&8]
}

const oAccMode, oWronly, oRdwr, oCreat, oTrunc = 3, 1, 2, 0o100, 0o1000

// accessNames is Access for every combination of the flags it reads
// (the access mode in bits 0-1, O_CREAT in bit 2, O_TRUNC in bit 3),
// so decoding an open allocates nothing for it.
var accessNames = func() (t [16]string) {
	for i := range uint32(16) {
		flags := i&oAccMode | (i&4)<<4 | (i&8)<<6
		t[i] = accessSlow(flags)
	}
	return t
}()

func accessSlow(flags uint32) string {
	var a []string
	switch flags & oAccMode {
	case oWronly:
		a = append(a, "write")
	case oRdwr:
		a = append(a, "read", "write")
	default:
		a = append(a, "read")
		if flags&oTrunc != 0 {
			a = append(a, "write")
		}
	}
	if flags&oCreat != 0 {
		a = append(a, "create")
	}
	return strings.Join(a, ",")
}

func (d *Decoder) decodePath(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvPath](b)
	if err != nil {
		return nil, err
	}
	parts, err := pieces(b, int(r.PathLen), int(r.BaseLen), int(r.Path2Len), int(r.Base2Len))
	if err != nil {
		return nil, err
	}
	obj, err := objectData(b, r)
	if err != nil {
		return nil, err
	}
	kind := recordKinds[r.H.Kind]
	e := d.base(&r.H, kind)
	p1 := d.path(r.H.Pid, parts[0], parts[1])
	byHandle := kind == event.KindOpen && r.Flags&byHandleFlag != 0
	if byHandle {
		r.Flags &^= byHandleFlag
	}
	taken := kind == event.KindOpen && r.Flags&fdTakenFlag != 0
	if taken {
		r.Flags &^= fdTakenFlag
	}
	received := kind == event.KindOpen && r.Flags&fdReceivedFlag != 0
	if received {
		r.Flags &^= fdReceivedFlag
	}
	if kind == event.KindOpen && r.H.Flags&flagObject != 0 {
		// The kernel's file object names what was opened; what the
		// process asked for stays beside it where it differs.
		switch asked := p1; {
		case byHandle:
			e.Object, p1 = d.handleObject(r, obj)
		case received:
			e.Object, p1 = d.unnamedObject(r, obj, "scm_rights")
		case taken:
			e.Object, p1 = d.openObject(r, obj, p1)
			e.Object.PathRequested, e.Object.PathDiffers = asked, "pidfd_getfd"
		default:
			e.Object, p1 = d.openObject(r, obj, p1)
		}
	}
	if e.Object == nil && kind != event.KindLink { // a link's p1 is its target as written
		p1 = fdpath.Rooted(r.H.Pid, p1) // no object path to name it from the root
	}
	p2 := ""
	if r.Path2Len > 0 && kind != event.KindXattr { // an xattr's second string is a name
		p2 = fdpath.Rooted(r.H.Pid, d.path(r.H.Pid, parts[2], parts[3]))
	}
	if kind == event.KindOpen && r.Result >= 0 {
		d.fds.Opened(r.H.Pid, r.Result, p1)
	}
	e.Result = d.i64.Ptr(r.Result)
	e.PathTruncated = r.H.Flags&(flagTruncPath|flagTruncUstr|flagTruncObj) != 0
	switch kind {
	case event.KindOpen:
		e.Path = p1
		e.Flags = d.u32.Ptr(r.Flags)
		e.Access = Access(r.Flags)
		if r.Flags&0o100 != 0 {
			e.Mode = d.u32.Ptr(r.Mode)
		}
	case event.KindLink:
		// p1 is the existing file (a symlink's target, as written), p2 the new name.
		e.Path = p2
		e.Path2 = p1
		if r.Flags&symlinkFlag != 0 {
			e.Path2 = cstring(parts[0])
			e.Flags = d.u32.Ptr(uint32(symlinkFlag))
		}
	case event.KindRename:
		e.Path, e.Path2 = p1, p2
		if r.Flags != 0 {
			e.Flags = d.u32.Ptr(r.Flags)
		}
	case event.KindHandle:
		e.Path = p1
		if r.Flags != 0 {
			e.Flags = d.u32.Ptr(r.Flags)
		}
	case event.KindMkdir, event.KindChmod:
		e.Path = p1
		e.Mode = d.u32.Ptr(r.Mode)
	case event.KindUnlink:
		e.Path = p1
		if r.Flags != 0 {
			e.Flags = d.u32.Ptr(r.Flags)
		}
	case event.KindChown:
		// The ids asked for, from the call's arguments; -1 leaves one as
		// it was.
		e.Path = p1
		e.Attr = &event.Attr{}
		if r.Flags != unchangedID {
			e.Attr.Owner = d.u32.Ptr(r.Flags)
		}
		if r.Mode != unchangedID {
			e.Attr.OwnerGroup = d.u32.Ptr(r.Mode)
		}
	case event.KindXattr:
		e.Path = p1
		e.Attr = &event.Attr{XattrName: cstring(parts[2]), XattrOp: xattrOps[r.Flags&3]}
	}
	return e, nil
}

// unchangedID is a chown id of -1: leave it as it is.
const unchangedID = ^uint32(0)

// xattrOps names ev_path.flags of an EV_XATTR (XATTR_SET, XATTR_REMOVE in
// bpf/polygraph.bpf.c).
var xattrOps = [4]string{1: "set", 2: "remove"}

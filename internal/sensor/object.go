package sensor

import (
	"bytes"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// Header flags of the object part (bpf/events.h).
const (
	flagDeleted  = 1 << 4 // EVF_DELETED, on an exec record
	flagObject   = 1 << 5 // EVF_OBJECT, on an open record
	flagTruncObj = 1 << 6 // EVF_TRUNC_OBJ: the object's walked path hit WalkMax/WalkDepth
)

// objectData returns the object part of an open record: after the four
// path pieces.
func objectData(b []byte, r *polygraphEvPath) ([]byte, error) {
	if r.H.Flags&flagObject == 0 {
		return nil, nil
	}
	off := int(r.PathLen) + int(r.BaseLen) + int(r.Path2Len) + int(r.Base2Len)
	return data(b, &off, int(r.ObjLen))
}

// openObject builds the Object of an open record and returns it with the
// path the event should carry: the object's own path, where the kernel
// gave a whole one (walked, or by the id of a walk it sent before:
// bpf/objcache.h), else requested (the path the process named).
func (d *Decoder) openObject(r *polygraphEvPath, obj []byte, requested string) (*event.Object, string) {
	o := d.objSlab.New()
	o.Dev = userDev(r.Dev)
	o.Ino = r.Ino
	o.Nlink = r.Nlink
	o.FileType = fileType(r.Imode)
	if r.H.Flags&flagTruncObj != 0 {
		// A walk cut at its limits lacks its top components: the
		// requested path says more, and the identity says which file.
		return o, requested
	}
	var p string
	switch {
	case r.ObjId != 0 && r.ObjLen == 0:
		var ok bool
		if p, ok = d.walks.get(r.ObjId); !ok {
			// The record that carried the walk never arrived
			// (counted as lost where the ring dropped it).
			d.walkMisses.Add(1)
			return o, requested
		}
		d.walkHits.Add(1)
	case walkedIs(obj, requested): // the common case: no string to build
		p = requested
	case len(obj) == 0 || obj[0] == 0:
		// A pseudo file without a name (a pipe or socket reopened
		// through /proc/self/fd/N): its name is made up when asked for.
		return o, requested
	default:
		p = walked(obj)
	}
	if r.ObjId != 0 && r.ObjLen != 0 {
		d.walks.put(r.ObjId, r.H.Ts, p)
	}
	if p == requested {
		return o, requested
	}
	if selfProc(requested, p, r.H.Pid, r.H.Tid) {
		// /proc/self is a link to /proc/PID: the same file, and the
		// name analysis knows (and PID is on the event).
		return o, requested
	}
	o.PathRequested = requested
	o.PathDiffers = differs(requested, p)
	return o, p
}

// walkTTL is OBJ_TTL_NS (bpf/objcache.h): how long the kernel names a
// walk by its id.
const walkTTL = uint64(time.Second)

// walkNames keeps the paths of the kernel's recent walks by id, for the
// records that name one by id. Entries live between two and three
// walkTTL (two maps, the older dropped when the newer is 2 walkTTL
// old), longer than the kernel uses an id, in bounded memory.
type walkNames struct {
	cur, old map[uint32]string
	since    uint64 // boot ns when cur began
}

func (w *walkNames) put(id uint32, ts uint64, p string) {
	if w.cur == nil {
		w.cur, w.since = make(map[uint32]string), ts
	}
	if ts > w.since && ts-w.since > 2*walkTTL {
		w.old, w.cur, w.since = w.cur, make(map[uint32]string, len(w.cur)), ts
	}
	w.cur[id] = p
}

func (w *walkNames) get(id uint32) (string, bool) {
	if p, ok := w.cur[id]; ok {
		return p, true
	}
	p, ok := w.old[id]
	return p, ok
}

// walkedIs reports whether walked(w) == p, without building the string.
func walkedIs(w []byte, p string) bool {
	if len(w) == 0 {
		return p == ""
	}
	w = bytes.TrimRight(w, "\x00")
	end := len(p)
	for {
		c := w
		i := bytes.IndexByte(w, 0)
		if i >= 0 {
			c, w = w[:i], w[i+1:]
		}
		start := end - len(c) - 1
		if start < 0 || p[start] != '/' || p[start+1:end] != string(c) {
			return false
		}
		end = start
		if i < 0 {
			return end == 0
		}
	}
}

// selfProc reports whether requested, a /proc/self/... or
// /proc/thread-self/... name, is real with the link taken for the
// process pid (thread tid), which opened it.
func selfProc(requested, real string, pid, tid uint32) bool {
	if rest, ok := strings.CutPrefix(requested, "/proc/self/"); ok {
		return real == "/proc/"+strconv.FormatUint(uint64(pid), 10)+"/"+rest
	}
	if rest, ok := strings.CutPrefix(requested, "/proc/thread-self/"); ok {
		return real == "/proc/"+strconv.FormatUint(uint64(pid), 10)+"/task/"+strconv.FormatUint(uint64(tid), 10)+"/"+rest
	}
	return false
}

// differs names, as far as the two strings tell, why the path a process
// named is not the path of the file it got (see event.Object.PathDiffers).
func differs(requested, real string) string {
	switch {
	case strings.HasPrefix(requested, "/proc/") || strings.HasPrefix(requested, "/dev/fd/"):
		return "proc"
	case path.Base(requested) != path.Base(real):
		return "symlink"
	case strings.HasPrefix(requested, "/") && requested != "/" && strings.HasSuffix(real, requested):
		return "chroot"
	}
	return "differs"
}

// userDev converts the kernel's dev_t (major << 20 | minor) to the
// encoding stat(2) returns in st_dev (glibc's makedev).
func userDev(kdev uint32) uint64 {
	major, minor := uint64(kdev>>20), uint64(kdev&(1<<20-1))
	return (major&0xfffff000)<<32 | (major&0xfff)<<8 | (minor&0xffffff00)<<12 | minor&0xff
}

// KernelDev converts stat(2)'s st_dev (glibc's makedev) to the kernel's
// dev_t (major << 20 | minor), which the BPF maps keyed by a file's
// identity hold: the inverse of userDev.
func KernelDev(dev uint64) uint32 {
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	return uint32(major<<20 | minor&(1<<20-1))
}

// fileType names the file type bits of an inode's mode.
func fileType(mode uint16) string {
	switch mode & 0o170000 {
	case 0o100000:
		return "file"
	case 0o040000:
		return "dir"
	case 0o120000:
		return "symlink"
	case 0o020000:
		return "char"
	case 0o060000:
		return "block"
	case 0o010000:
		return "fifo"
	case 0o140000:
		return "socket"
	}
	return ""
}

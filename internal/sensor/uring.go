package sensor

import (
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// ev_uring.uflags (bpf/uring.h).
const (
	urfNoResult  = 1 << 0
	urfObject    = 1 << 1
	urfTruncPath = 1 << 2
	urfTruncObj  = 1 << 3
)

// uringSetup is the op of a ring's creation (IOP_SETUP).
const uringSetup = 255

// identLen is the size of struct uring_ident.
const identLen = 24

// ringOps names the IORING_OP_ opcodes (include/uapi/linux/io_uring.h,
// ABI numbers), lower case.
var ringOps = strings.Fields(`nop readv writev fsync read_fixed write_fixed poll_add poll_remove
	sync_file_range sendmsg recvmsg timeout timeout_remove accept async_cancel link_timeout connect
	fallocate openat close files_update statx read write fadvise madvise send recv openat2 epoll_ctl
	splice provide_buffers remove_buffers tee shutdown renameat unlinkat mkdirat symlinkat linkat
	msg_ring fsetxattr setxattr fgetxattr getxattr socket uring_cmd send_zc sendmsg_zc read_multishot
	waitid futex_wait futex_wake futex_waitv fixed_fd_install ftruncate bind listen recv_zc epoll_wait
	readv_fixed writev_fixed pipe`)

// RingOpName names io_uring opcode op ("setup" for a ring's creation).
func RingOpName(op uint8) string {
	if op == uringSetup {
		return "setup"
	}
	if int(op) < len(ringOps) {
		return ringOps[op]
	}
	return "op" + itoa(int(op))
}

func itoa(n int) string {
	var b [4]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// uringTwins are the record kinds an io_uring record's twin byte may
// name: the syscalls whose events an operation reports as.
var uringTwins = []uint8{evOpen, evRename, evUnlink, evMkdir, evLink, evConnect, evAccept}

// decodeUring turns an io_uring record into the event of its syscall
// twin's kind, marked with a Ring, or a KindUring event naming the
// operation.
func (d *Decoder) decodeUring(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvUring](b)
	if err != nil {
		return nil, err
	}
	ps, err := pieces(b, int(r.PathLen), int(r.BaseLen), int(r.Path2Len), int(r.Base2Len))
	if err != nil {
		return nil, err
	}
	off := int(r.PathLen) + int(r.BaseLen) + int(r.Path2Len) + int(r.Base2Len)
	var obj, ident []byte
	if r.Uflags&urfObject != 0 {
		if obj, err = data(b, &off, int(r.ObjLen)); err != nil {
			return nil, err
		}
		if ident, err = data(b, &off, identLen); err != nil {
			return nil, err
		}
	}
	addr, err := data(b, &off, int(r.AddrLen))
	if err != nil {
		return nil, err
	}
	kind, twin := recordKinds[r.Twin], slices.Contains(uringTwins, r.Twin)
	if !twin {
		kind = event.KindUring
	}
	e := d.base(&r.H, kind)
	if e.Network == nil && (kind == event.KindUring || len(addr) > 0) {
		e.Network = d.netSlab.New()
	}
	e.Ring = &event.Ring{Via: event.ViaRing, RingOp: RingOpName(r.Op)}
	if r.Uflags&urfNoResult != 0 {
		e.Ring.ResultUnknown = true
	} else {
		e.Result = d.i64.Ptr(r.Result)
	}
	e.PathTruncated = r.Uflags&(urfTruncPath|urfTruncObj) != 0
	if len(addr) > 0 {
		e.Network.Family, e.Network.Addr, e.Network.Port = sockaddr(addr)
		e.Network.Proto = protoName(uint16(r.Proto), 0) // the ring record has no socket type: raw sockets show by protocol
	}
	p1, p2 := "", ""
	if r.PathLen > 0 || r.BaseLen > 0 {
		p1 = d.path(r.H.Pid, ps[0], ps[1])
	}
	if r.Path2Len > 0 {
		p2 = d.path(r.H.Pid, ps[2], ps[3])
	}
	if obj != nil {
		var o *event.Object
		o, p1 = d.ringObject(r, obj, ident, p1)
		if kind == event.KindOpen || kind == event.KindUring {
			e.Object = o
		}
	}
	d.uringFields(e, r, ps[0], p1, p2)
	if kind == event.KindUring && r.Op != uringSetup {
		k := ringKey{pid: r.H.Pid, op: r.Op, inode: r.FileKey}
		if ident != nil && r.FileKey != 0 {
			k.ino = binary.LittleEndian.Uint64(ident[0:8])
		}
		d.ring.remember(k, e)
	}
	return e, nil
}

// ringObject is openObject for the file of an io_uring record. An
// operation on an fd (read, write, send) names no path: the file's is
// the one there is.
func (d *Decoder) ringObject(r *polygraphEvUring, obj, ident []byte, requested string) (*event.Object, string) {
	pr := polygraphEvPath{H: r.H,
		Ino:   binary.LittleEndian.Uint64(ident[0:8]),
		Dev:   binary.LittleEndian.Uint32(ident[8:12]),
		Nlink: binary.LittleEndian.Uint32(ident[12:16]),
		Imode: binary.LittleEndian.Uint16(ident[16:18]),
	}
	pr.H.Flags = flagObject
	if r.Uflags&urfTruncObj != 0 {
		pr.H.Flags |= flagTruncObj
	}
	if requested != "" {
		return d.openObject(&pr, obj, requested)
	}
	o, _ := d.openObject(&pr, nil, "")
	if len(obj) == 0 || obj[0] == 0 || o.FileType == "socket" {
		return o, "" // a pipe or socket: no name (its peer says more)
	}
	return o, walked(obj)
}

// uringFields sets the fields of e's kind as decodePath does for the
// syscall twin.
func (d *Decoder) uringFields(e *event.Event, r *polygraphEvUring, raw1 []byte, p1, p2 string) {
	switch e.Kind {
	case event.KindOpen:
		e.Path = p1
		e.Flags = d.u32.Ptr(r.Flags)
		e.Access = Access(r.Flags)
		if r.Flags&oCreat != 0 {
			e.Mode = d.u32.Ptr(r.Mode)
		}
		if e.Result != nil && *e.Result >= 0 {
			d.fds.Opened(r.H.Pid, *e.Result, p1)
		}
	case event.KindLink:
		e.Path, e.Path2 = p2, p1
		if r.Flags&symlinkFlag != 0 {
			e.Path2 = cstring(raw1)
			e.Flags = d.u32.Ptr(uint32(symlinkFlag))
		}
	case event.KindRename:
		e.Path, e.Path2 = p1, p2
		if r.Flags != 0 {
			e.Flags = d.u32.Ptr(r.Flags)
		}
	case event.KindMkdir:
		e.Path = p1
		e.Mode = d.u32.Ptr(r.Mode)
	case event.KindUnlink:
		e.Path = p1
		if r.Flags != 0 {
			e.Flags = d.u32.Ptr(r.Flags)
		}
	case event.KindUring:
		e.Path = p1
		if r.Op == uringSetup {
			e.Flags = d.u32.Ptr(r.Flags) // IORING_SETUP_* flags
		}
	}
}

// ringKey names one entry of map uring_seen: a process, an operation
// and a file (its struct inode * and inode number; 0 and 0 for none).
type ringKey struct {
	pid   uint32
	op    uint8
	inode uint64
	ino   uint64
}

// ringState is what the decoder keeps of the first KindUring event of
// each key, for the event that totals it when the process exits.
type ringState struct {
	first map[ringKey]*event.Event
	pids  map[uint32]int // entries of first per pid
}

// maxRingFirst bounds ringState.first, like map uring_seen's size.
const maxRingFirst = 16384

func (r *ringState) remember(k ringKey, e *event.Event) {
	if r.first == nil {
		r.first, r.pids = map[ringKey]*event.Event{}, map[uint32]int{}
	}
	if _, ok := r.first[k]; ok || len(r.first) >= maxRingFirst {
		return // evicted from the kernel's map and seen again, or too many
	}
	// A copy of what the totals repeat: the sink owns e.
	c := &event.Event{Kind: event.KindUring, PID: e.PID, TID: e.TID, PPID: e.PPID, Comm: e.Comm,
		ExecID: e.ExecID, ParentExecID: e.ParentExecID, Path: e.Path}
	if e.Object != nil {
		o := *e.Object
		c.Object = &o
	}
	if e.Network != nil {
		n := *e.Network
		c.Network = &n
	}
	r.first[k] = c
	r.pids[k.pid]++
}

// RingUser reports whether the decoder saw io_uring operations of pid
// (of any process, for pid 0) whose totals are not drained yet.
func (d *Decoder) RingUser(pid uint32) bool {
	if pid == 0 {
		return len(d.ring.first) > 0
	}
	return d.ring.pids[pid] > 0
}

// RingTotal builds the event totalling the operations of one key of map
// uring_seen (pid, op, inode, ino): ops operations that moved bytes, the
// last at boot-clock lastNS. It forgets the key.
func (d *Decoder) RingTotal(pid uint32, op uint8, inode, ino, ops, bytes, lastNS uint64) *event.Event {
	k := ringKey{pid: pid, op: op, inode: inode, ino: ino}
	e := d.ring.first[k]
	if e == nil {
		// its first record was lost, or came before tracing began: the
		// inode number is all there is of the file
		e = &event.Event{Kind: event.KindUring, PID: pid, TID: pid, ExecID: d.ExecIDOf(pid)}
		if ino != 0 {
			e.Object = &event.Object{Ino: ino}
		}
	} else {
		delete(d.ring.first, k)
		if d.ring.pids[pid]--; d.ring.pids[pid] <= 0 {
			delete(d.ring.pids, pid)
		}
	}
	e.Complete()
	e.TS = d.BootOffset.Add(time.Duration(lastNS))
	e.Ring = &event.Ring{Via: event.ViaRing, RingOp: RingOpName(op), RingOps: ops, RingBytes: bytes}
	return e
}

// ringForget drops what is kept of pid (of every process, for pid 0)
// once its totals are drained.
func (d *Decoder) ringForget(pid uint32) {
	if pid == 0 {
		clear(d.ring.first)
		clear(d.ring.pids)
		return
	}
	if d.ring.pids[pid] == 0 {
		return
	}
	for k := range d.ring.first {
		if k.pid == pid {
			delete(d.ring.first, k)
		}
	}
	delete(d.ring.pids, pid)
}

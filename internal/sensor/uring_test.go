package sensor

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// ident encodes a struct uring_ident.
func ident(ino uint64, kdev, nlink uint32, mode uint16) []byte {
	b := make([]byte, identLen)
	binary.LittleEndian.PutUint64(b, ino)
	binary.LittleEndian.PutUint32(b[8:], kdev)
	binary.LittleEndian.PutUint32(b[12:], nlink)
	binary.LittleEndian.PutUint16(b[16:], mode)
	return b
}

// TestDecodeUring decodes each record shape; the table is most of its
// length.
// One function over 80 lines: a table of records and the events they decode to.
func TestDecodeUring(t *testing.T) {
	sin := []byte{2, 0, 0x01, 0xbb, 127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0} // 127.0.0.1:443
	cases := []struct {
		name  string
		r     polygraphEvUring
		data  [][]byte
		check func(*event.Event) string
	}{
		{"openat relative to the cwd, with the object", polygraphEvUring{
			Result: 4, Flags: 0o100000, Op: 18, Twin: evOpen, Uflags: urfObject,
			PathLen: 6, BaseLen: uint16(len(walk("home", "u"))), ObjLen: uint16(len(walk("home", "u", "real"))),
		}, [][]byte{[]byte("cred\x00\x00"), walk("home", "u"), walk("home", "u", "real"), ident(77, 0xfe00000, 2, 0o100600)},
			func(e *event.Event) string {
				if e.Kind != event.KindOpen || e.Path != "/home/u/real" || e.PathRequested() != "/home/u/cred" ||
					e.PathDiffers() != "symlink" || e.Ino() != 77 || e.Nlink() != 2 || e.FileType() != "file" ||
					e.Access != "read" || e.Via() != event.ViaRing || e.RingOp() != "openat" || *e.Result != 4 {
					return "want the object's path beside the named one, via io_uring"
				}
				return ""
			}},
		{"rename names both paths", polygraphEvUring{Op: 35, Twin: evRename, PathLen: 3, Path2Len: 3},
			[][]byte{[]byte("/a\x00"), []byte("/b\x00")},
			func(e *event.Event) string {
				if e.Kind != event.KindRename || e.Path != "/a" || e.Path2 != "/b" || e.Object != nil || *e.Result != 0 {
					return "want rename /a to /b"
				}
				return ""
			}},
		{"symlinkat keeps its target as written", polygraphEvUring{Op: 38, Twin: evLink, Flags: symlinkFlag, PathLen: 4, Path2Len: 3},
			[][]byte{[]byte("../x"), []byte("/l\x00")},
			func(e *event.Event) string {
				if e.Kind != event.KindLink || e.Path != "/l" || e.Path2 != "../x" || e.Flags == nil {
					return "want link /l -> ../x"
				}
				return ""
			}},
		{"send names the socket's peer, not its name", polygraphEvUring{
			Result: 5, Op: 26, Uflags: urfObject, Proto: 6, ObjLen: uint16(len(walk("TCP"))), AddrLen: 16,
		}, [][]byte{walk("TCP"), ident(9, 9, 1, 0o140777), sin},
			func(e *event.Event) string {
				if e.Kind != event.KindUring || e.RingOp() != "send" || e.Path != "" || e.FileType() != "socket" ||
					e.Addr() != "127.0.0.1" || e.Port() != 443 || e.Proto() != "tcp" || *e.Result != 5 {
					return "want a send to 127.0.0.1:443"
				}
				return ""
			}},
		{"a read names the file it was on", polygraphEvUring{Result: 10, Op: 22, Uflags: urfObject, ObjLen: uint16(len(walk("etc", "passwd")))},
			[][]byte{walk("etc", "passwd"), ident(5, 1, 1, 0o100644)},
			func(e *event.Event) string {
				if e.Kind != event.KindUring || e.RingOp() != "read" || e.Path != "/etc/passwd" || e.Ino() != 5 || e.PathRequested() != "" {
					return "want a read of /etc/passwd"
				}
				return ""
			}},
		{"an operation without a completion has no result", polygraphEvUring{Op: 36, Twin: evUnlink, Uflags: urfNoResult, PathLen: 3},
			[][]byte{[]byte("/z\x00")},
			func(e *event.Event) string {
				if e.Kind != event.KindUnlink || e.Result != nil || !e.ResultUnknown() || e.Path != "/z" {
					return "want an unlink of /z, result unknown"
				}
				return ""
			}},
		{"a ring's creation", polygraphEvUring{Result: 3, Op: uringSetup, Flags: 2}, nil,
			func(e *event.Event) string {
				if e.Kind != event.KindUring || e.RingOp() != "setup" || *e.Result != 3 || *e.Flags != 2 || e.Network == nil {
					return "want a setup event"
				}
				return ""
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(time.Unix(1000, 0))
			c.r.H = hdr(evUring, 42, 100, 5, "uring")
			c.r.Fd = -1
			ev, err := d.Decode(rec(&c.r, append(c.data, nil)...))
			if err != nil {
				t.Fatal(err)
			}
			if msg := c.check(ev); msg != "" {
				t.Errorf("%s: got %+v %+v %+v %+v", msg, ev, ev.Ring, ev.Object, ev.Network)
			}
		})
	}
}

func TestDecodeUringShort(t *testing.T) {
	r := polygraphEvUring{H: hdr(evUring, 42, 100, 5, "uring"), Op: 22, Uflags: urfObject, ObjLen: 8}
	if _, err := NewDecoder(time.Unix(1000, 0)).Decode(rec(&r, walk("etc"))); !errors.Is(err, ErrShort) {
		t.Errorf("a record without its identity decoded: %v, want ErrShort", err)
	}
}

func TestRingOpName(t *testing.T) {
	for op, want := range map[uint8]string{0: "nop", 18: "openat", 22: "read", 23: "write", 26: "send",
		35: "renameat", 39: "linkat", 45: "socket", 62: "pipe", 63: "op63", uringSetup: "setup"} {
		if got := RingOpName(op); got != want {
			t.Errorf("RingOpName(%d) = %q, want %q", op, got, want)
		}
	}
}

// The totals drained at exit repeat the first event's file, and are
// kept only until then.
func TestRingTotal(t *testing.T) {
	d := NewDecoder(time.Unix(1000, 0))
	r := polygraphEvUring{H: hdr(evUring, 42, 100, 5, "uring"), Result: 10, Op: 22, Uflags: urfObject, Fd: 3,
		ObjLen: uint16(len(walk("etc", "passwd"))), FileKey: 0xffff8880deadbeef}
	if _, err := d.Decode(rec(&r, walk("etc", "passwd"), ident(5, 1, 1, 0o100644))); err != nil {
		t.Fatal(err)
	}
	if !d.RingUser(42) || d.RingUser(43) {
		t.Fatalf("RingUser(42), RingUser(43) = %v, %v; want true, false", d.RingUser(42), d.RingUser(43))
	}
	if e := d.RingTotal(42, 22, 0xffff8880deadbeef, 6, 1, 1, 150); e.Path != "" {
		t.Errorf("another file at the same inode address took the first's path: %+v", e)
	}
	e := d.RingTotal(42, 22, 0xffff8880deadbeef, 5, 3, 30, 200)
	if e.Kind != event.KindUring || e.Path != "/etc/passwd" || e.Comm != "uring" || e.ExecID != "42-5" ||
		e.RingOp() != "read" || e.RingOps() != 3 || e.RingBytes() != 30 || e.Result != nil || !e.TS.Equal(time.Unix(1000, 200)) {
		t.Errorf("total = %+v %+v", e, e.Ring)
	}
	if d.RingUser(42) {
		t.Error("the key is still kept after its total")
	}
	other := d.RingTotal(42, 23, 0xffff8880cafe0000, 6, 1, 1, 300) // its first record was lost
	if other.Path != "" || other.Object == nil || other.Ino() != 6 || other.RingOps() != 1 {
		t.Errorf("total without a first event = %+v %+v", other, other.Object)
	}
}

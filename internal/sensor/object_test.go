package sensor

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// openRec builds an open record with an object part.
func openRec(pid uint32, req string, base, obj []byte, flags uint8) []byte {
	p := append([]byte(req), 0)
	r := polygraphEvPath{H: hdr(evOpen, pid, 1, 1, "cat"), Result: 3, PathLen: uint16(len(p)), BaseLen: uint16(len(base)),
		Ino: 4242, Dev: 254<<20 | 3, Nlink: 2, Imode: 0o100600, ObjLen: uint16(len(obj))}
	r.H.Flags = flags | flagObject
	return rec(&r, p, base, obj)
}

func TestDecodeOpenObject(t *testing.T) {
	cases := []struct {
		name            string
		req             string
		base, obj       []byte
		flags           uint8
		path, requested string
		differs         string
		truncated       bool
	}{
		{name: "same path", req: "/home/u/.aws/credentials", obj: walk("home", "u", ".aws", "credentials"),
			path: "/home/u/.aws/credentials"},
		{name: "relative, same path", req: "credentials", base: walk("home", "u", ".aws"), obj: walk("home", "u", ".aws", "credentials"),
			path: "/home/u/.aws/credentials"},
		{name: "symlink", req: "notes.txt", base: walk("tmp"), obj: walk("home", "u", ".aws", "credentials"),
			path: "/home/u/.aws/credentials", requested: "/tmp/notes.txt", differs: "symlink"},
		{name: "magic link", req: "/proc/self/root/home/u/.aws/credentials", obj: walk("home", "u", ".aws", "credentials"),
			path: "/home/u/.aws/credentials", requested: "/proc/self/root/home/u/.aws/credentials", differs: "proc"},
		{name: "chroot", req: "/home/u/.aws/credentials", obj: walk("jail", "home", "u", ".aws", "credentials"),
			path: "/jail/home/u/.aws/credentials", requested: "/home/u/.aws/credentials", differs: "chroot"},
		{name: "symlinked directory", req: "/home/u/link/credentials", obj: walk("home", "u", ".aws", "credentials"),
			path: "/home/u/.aws/credentials", requested: "/home/u/link/credentials", differs: "differs"},
		// a cut walk lacks its top: the requested path stays, flagged
		{name: "object walk truncated", req: "/deep/credentials", obj: walk("x", "credentials"), flags: flagTruncObj,
			path: "/deep/credentials", truncated: true},
		// a pseudo file without a name
		{name: "no object path", req: "/dev/fd/9", obj: nil, path: "/dev/fd/9"},
		{name: "proc self is the opener", req: "/proc/self/status", obj: walk("proc", "7", "status"), path: "/proc/self/status"},
		{name: "proc thread-self is the opener", req: "/proc/thread-self/comm", obj: walk("proc", "7", "task", "7", "comm"),
			path: "/proc/thread-self/comm"},
		{name: "proc self of another process", req: "/proc/self/status", obj: walk("proc", "8", "status"),
			path: "/proc/8/status", requested: "/proc/self/status", differs: "proc"},
		{name: "a pipe's empty name", req: "/proc/self/fd/0", obj: []byte{0}, path: "/proc/self/fd/0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(time.Unix(0, 0))
			for range 2 { // the second time from the caches
				ev, err := d.Decode(openRec(7, c.req, c.base, c.obj, c.flags))
				if err != nil {
					t.Fatal(err)
				}
				if ev.Object == nil {
					t.Fatal("no object")
				}
				if ev.Path != c.path || ev.PathRequested() != c.requested || ev.PathDiffers() != c.differs || ev.PathTruncated != c.truncated {
					t.Errorf("path %q requested %q differs %q truncated %v, want %q %q %q %v", ev.Path, ev.PathRequested(),
						ev.PathDiffers(), ev.PathTruncated, c.path, c.requested, c.differs, c.truncated)
				}
				// stat(2)'s st_dev for 254:3, as glibc's makedev encodes it
				if ev.Dev() != 0xfe03 || ev.Ino() != 4242 || ev.Nlink() != 2 || ev.FileType() != "file" {
					t.Errorf("identity %d:%d nlink %d type %q", ev.Dev(), ev.Ino(), ev.Nlink(), ev.FileType())
				}
			}
		})
	}
}

// An fd's path is the object's: a later /proc/self/fd/N/... name resolves
// through what was opened, not through what was asked for.
func TestOpenObjectNamesTheFD(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	if _, err := d.Decode(openRec(7, "/tmp/link", nil, walk("home", "u", ".aws"), 0)); err != nil {
		t.Fatal(err)
	}
	p := append([]byte("/proc/self/fd/3/credentials"), 0)
	r := polygraphEvPath{H: hdr(evOpen, 7, 2, 1, "cat"), Result: -13, PathLen: uint16(len(p))}
	ev, err := d.Decode(rec(&r, p))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Path != "/home/u/.aws/credentials" || ev.Object != nil {
		t.Errorf("failed open through fd 3: path %q object %+v, want /home/u/.aws/credentials and none", ev.Path, ev.Object)
	}
}

// A record whose object part overruns it is an error, not a guess.
func TestDecodeObjectShort(t *testing.T) {
	b := openRec(7, "/a", nil, walk("a"), 0)
	if _, err := NewDecoder(time.Unix(0, 0)).Decode(b[:len(b)-1]); !errors.Is(err, ErrShort) {
		t.Errorf("short object part: error %v, want ErrShort", err)
	}
}

func TestExecDeletedFlag(t *testing.T) {
	for _, deleted := range []bool{false, true} {
		path := walk("tmp", "deltrue")
		x := polygraphEvExec{H: hdr(evExec, 11, 200, 200, "deltrue"), PathLen: uint16(len(path))}
		if deleted {
			x.H.Flags = flagDeleted
		}
		ev, err := NewDecoder(time.Unix(0, 0)).Decode(rec(&x, path, nil))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != event.KindExec || ev.Deleted() != deleted {
			t.Errorf("exec with flag %v: deleted %v", deleted, ev.Deleted())
		}
	}
}

func TestFileType(t *testing.T) {
	for mode, want := range map[uint16]string{0o100644: "file", 0o040755: "dir", 0o120777: "symlink", 0o020666: "char",
		0o060660: "block", 0o010600: "fifo", 0o140777: "socket", 0: ""} {
		if got := fileType(mode); got != want {
			t.Errorf("fileType(%o) = %q, want %q", mode, got, want)
		}
	}
}

// BenchmarkDecodeOpenObject is BenchmarkDecodeOpen with the object part
// every successful open now carries (same path: nothing differs).
func BenchmarkDecodeOpenObject(b *testing.B) {
	d := NewDecoder(time.Unix(0, 0))
	recs := make([][]byte, 512)
	for i := range recs {
		req := fmt.Sprintf("/tmp/polygraph-bench/tree/d%02d/f%03d", i/100, i%100)
		recs[i] = openRec(1, req, nil, walk("tmp", "polygraph-bench", "tree", fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%03d", i%100)), 0)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := d.Decode(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// walkedIs must agree with walked, which it stands in for.
func TestWalkedIs(t *testing.T) {
	ws := [][]byte{nil, {0}, walk("a"), walk("tmp", "x", "f"), walk("memfd:x (deleted)"), []byte("f\x00\x00d\x00"),
		[]byte("f\x00d"), []byte("\x00\x00x\x00"), walk("a", "b", "c")}
	ps := []string{"", "/", "/a", "a", "/tmp/x/f", "/tmp/x/f/", "//tmp/x/f", "/x/f", "/d/f", "/x//", "/a/b/c", "/b/c"}
	for _, w := range ws {
		for _, p := range append(ps, walked(w)) {
			if got, want := walkedIs(w, p), walked(w) == p; got != want {
				t.Errorf("walkedIs(%q, %q) = %v, walked gives %q", w, p, got, walked(w))
			}
		}
	}
}

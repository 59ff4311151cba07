package record

// The kernel-tier test of io_uring: a C program (testdata/uring.c, raw
// io_uring syscalls, no liburing) submits every operation the issue
// lists through a ring, under the sensor.

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// buildC compiles testdata/name.c with the system compiler, skipping
// the test where there is none.
func buildC(t *testing.T, name string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("no C compiler (cc) to build %s.c", name)
	}
	src, err := filepath.Abs(filepath.Join("testdata", name+".c"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command(cc, "-O2", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cc cannot build %s.c (io_uring headers?): %v\n%s", name, err, out)
	}
	return bin
}

// loopbackSink accepts one connection on 127.0.0.1 and reads it to the end.
func loopbackSink(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestUringOperationsRecorded: every operation submitted through a ring
// is an event, of its syscall twin's kind where it has one, marked
// via io_uring, with the path (the kernel's copy, and the opened file's
// object) or the peer; whether the process submits (io_uring_enter) or
// a kernel thread polls the ring for it (SQPOLL).
func TestUringOperationsRecorded(t *testing.T) {
	bin := buildC(t, "uring")
	for _, mode := range []struct{ name, env string }{{"enter", ""}, {"sqpoll", "URING_SQPOLL=1"}} {
		t.Run(mode.name, func(t *testing.T) {
			env := os.Environ()
			if mode.env != "" {
				env = append(env, mode.env)
			}
			checkUringRun(t, bin, env)
		})
	}
}

// checkUringRun records one run of testdata/uring.c and checks its
// events. The table of expectations is most of its length.
// One function over 80 lines: every check reads the events of one recorded run.
func checkUringRun(t *testing.T, bin string, env []string) {
	pl := plantCredentials(t)
	work := filepath.Join(pl.jail, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	port := loopbackSink(t)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	uport := udp.LocalAddr().(*net.UDPAddr).Port
	_, evs := recordWith(t, Options{Command: []string{bin, pl.path, work, strconv.Itoa(port), strconv.Itoa(uport)},
		Dir: work, Env: env})

	ring := func(kind event.Kind, op string, more func(*event.Event) bool) func(*event.Event) bool {
		return func(e *event.Event) bool {
			return e.Kind == kind && e.Via() == event.ViaRing && e.RingOp() == op && (more == nil || more(e))
		}
	}
	path := func(p string) func(*event.Event) bool { return func(e *event.Event) bool { return e.Path == p } }
	newTxt, renamed := filepath.Join(work, "new.txt"), filepath.Join(work, "dir", "renamed.txt")
	linked := filepath.Join(work, "linked.txt")
	peer := func(e *event.Event) bool {
		return e.Network != nil && e.Addr() == "127.0.0.1" && e.Port() == uint16(port)
	}
	cases := []struct {
		name string
		pred func(*event.Event) bool
	}{
		{"ring created", ring(event.KindUring, "setup", nil)},
		{"openat of the secret names the file and its identity", ring(event.KindOpen, "openat", func(e *event.Event) bool {
			return e.Path == pl.path && e.Object != nil && e.Ino() == pl.ino && e.Dev() == pl.dev && e.Access == "read" &&
				e.Result != nil && *e.Result >= 0
		})},
		{"read of the secret", ring(event.KindUring, "read", func(e *event.Event) bool {
			return e.Path == pl.path && e.Object != nil && e.Ino() == pl.ino && e.Result != nil && *e.Result > 0
		})},
		{"openat of a new file (relative to the cwd)", ring(event.KindOpen, "openat", func(e *event.Event) bool {
			return e.Path == newTxt && e.Access == "write,create"
		})},
		{"write", ring(event.KindUring, "write", func(e *event.Event) bool {
			return e.Path == newTxt && e.Result != nil && *e.Result == 6
		})},
		{"mkdirat", ring(event.KindMkdir, "mkdirat", path(filepath.Join(work, "dir")))},
		{"renameat", ring(event.KindRename, "renameat", func(e *event.Event) bool { return e.Path == newTxt && e.Path2 == renamed })},
		{"linkat", ring(event.KindLink, "linkat", func(e *event.Event) bool { return e.Path == linked && e.Path2 == renamed })},
		{"unlinkat", ring(event.KindUnlink, "unlinkat", path(linked))},
		{"socket", ring(event.KindUring, "socket", nil)},
		{"connect names the peer", ring(event.KindConnect, "connect", func(e *event.Event) bool {
			return peer(e) && e.Proto() == "tcp" && e.Result != nil && *e.Result == 0
		})},
		{"send names the peer", ring(event.KindUring, "send", peer)},
		{"sendmsg names the destination it carries", ring(event.KindUring, "sendmsg", func(e *event.Event) bool {
			return e.Network != nil && e.Addr() == "127.0.0.1" && e.Port() == uint16(uport)
		})},
		{"a send with a destination names it", ring(event.KindUring, "send", func(e *event.Event) bool {
			return e.Network != nil && e.Addr() == "127.0.0.1" && e.Port() == uint16(uport)
		})},
		{"an open that posts no completion is seen at submission", ring(event.KindOpen, "openat", func(e *event.Event) bool {
			return e.Path == pl.path && e.ResultUnknown() && e.Result == nil
		})},
		{"an fsync that posts no completion names its file", ring(event.KindUring, "fsync", func(e *event.Event) bool {
			return e.Path == renamed && e.ResultUnknown() && e.Result == nil && e.RingOps() == 0
		})},
	}
	for _, c := range cases {
		if find(evs, c.pred) == nil {
			t.Errorf("%s: no such event", c.name)
		}
	}
	secret, err := os.ReadFile(pl.path)
	if err != nil {
		t.Fatal(err)
	}
	var reads, totals int
	for _, e := range evs {
		if e.Kind == event.KindUring && e.RingOp() == "socket" && e.RingBytes() != 0 {
			t.Errorf("socket totals count %d bytes: its result is an fd", e.RingBytes())
		}
		if e.Kind != event.KindUring || e.RingOp() != "read" || e.Path != pl.path {
			continue
		}
		if e.RingOps() == 0 {
			reads++
		} else if totals++; e.RingOps() != 2 || e.RingBytes() != uint64(2*len(secret)) {
			t.Errorf("read totals: %d ops, %d bytes; want 2 ops, %d bytes", e.RingOps(), e.RingBytes(), 2*len(secret))
		}
	}
	if reads != 1 || totals != 1 {
		t.Errorf("two reads of the secret made %d read events and %d totals, want 1 and 1", reads, totals)
	}
	if t.Failed() || testing.Verbose() {
		for _, e := range evs {
			if e.Ring != nil {
				b, _ := json.Marshal(e)
				t.Logf("%s", b)
			}
		}
	}
}

// TestUringFixedFileOpen: an io_uring open into a fixed-file slot returns
// no fd; the file it opened is read from the ring's table, so an open
// through a symlink to a credential file names the file the kernel
// opened (path and identity), with the symlink as asked for, whether the
// slot was named or the kernel picked it, and the read through the slot
// names it too.
func TestUringFixedFileOpen(t *testing.T) {
	bin := buildC(t, "uring")
	pl := plantCredentials(t)
	link := filepath.Join(pl.jail, "notes.txt")
	if err := os.Symlink(pl.path, link); err != nil {
		t.Fatal(err)
	}
	_, evs := recordWith(t, Options{Command: []string{bin, "fixed", link}, Dir: pl.jail})
	var opens int
	for _, e := range evs {
		if e.Kind != event.KindOpen || e.Via() != event.ViaRing {
			continue
		}
		opens++
		if e.Path != pl.path || e.Object == nil || e.Ino() != pl.ino || e.Object.PathRequested != link || e.Result == nil || *e.Result < 0 {
			t.Errorf("fixed-slot open = path %q object %+v result %v, want %s (ino %d) asked for as %s", e.Path, e.Object, e.Result, pl.path, pl.ino, link)
		}
	}
	if opens != 2 {
		t.Errorf("%d io_uring opens recorded, want 2", opens)
	}
	if find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindUring && e.RingOp() == "read" && e.Path == pl.path && e.Ino() == pl.ino
	}) == nil {
		t.Error("no read through the fixed slot naming the credential file")
	}
}

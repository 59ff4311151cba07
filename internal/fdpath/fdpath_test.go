package fdpath

import (
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		p    string
		fd   int64
		rest string
		ok   bool
	}{
		{"/proc/self/fd/8/a/b", 8, "a/b", true},
		{"/proc/thread-self/fd/3/x", 3, "x", true},
		{"/proc/7/fd/23/f.sh", 23, "f.sh", true},
		{"/dev/fd/63", 63, "", true},
		{"/proc/8/fd/23/f.sh", 0, "", false}, // another process's
		{"/proc/77/fd/1/x", 0, "", false},    // pid 7 is a prefix of 77
		{"/proc/self/fd/x/y", 0, "", false},
		{"/proc/self/stat", 0, "", false},
		{"/home/u/a", 0, "", false},
		{"", 0, "", false},
	}
	for _, tc := range tests {
		fd, rest, ok := Split(tc.p, 7)
		if fd != tc.fd || rest != tc.rest || ok != tc.ok {
			t.Errorf("Split(%q) = %d, %q, %v; want %d, %q, %v", tc.p, fd, rest, ok, tc.fd, tc.rest, tc.ok)
		}
	}
}

func TestPath(t *testing.T) {
	r := New()
	r.Opened(7, 23, "/home/u/proj")
	r.Opened(7, 5000, "/home/u/high")
	tests := []struct {
		pid  uint32
		p    string
		want string
	}{
		{7, "/proc/self/fd/23/f.sh.tmp.7.ab", "/home/u/proj/f.sh.tmp.7.ab"},
		{7, "/proc/7/fd/23/sub/../f.sh", "/home/u/proj/f.sh"},
		{7, "/dev/fd/23", "/home/u/proj"},
		{7, "/proc/self/fd/5000/x", "/home/u/high/x"},
		{7, "/proc/self/fd/99/x", "/proc/self/fd/99/x"}, // unknown fd
		{8, "/dev/fd/23/x", "/dev/fd/23/x"},             // another process
		{7, "/home/u/a", "/home/u/a"},
	}
	for _, tc := range tests {
		if got := r.Path(tc.pid, tc.p); got != tc.want {
			t.Errorf("Path(%d, %q) = %q, want %q", tc.pid, tc.p, got, tc.want)
		}
	}
	r.Forget(7)
	if got := r.Path(7, "/proc/self/fd/23/x"); got != "/proc/self/fd/23/x" {
		t.Errorf("after Forget: %q", got)
	}
}

// TestEvent feeds a session's events in order: the paths are resolved
// through the opens before them, the opens teach the descriptors (on their
// resolved paths), an exit ends its process's table, a symlink's text
// stays as written.
func TestEvent(t *testing.T) {
	ev := func(k event.Kind, pid uint32, p, p2 string, result int64) *event.Event {
		e := event.New(k)
		e.PID, e.Path, e.Path2, e.Result = pid, p, p2, event.Ptr(result)
		return e
	}
	symlink := ev(event.KindLink, 7, "/proc/self/fd/3/ln", "/proc/self/fd/3/target", 0)
	symlink.Flags = event.Ptr(uint32(symlinkFlag))
	evs := []*event.Event{
		ev(event.KindOpen, 7, "/home/u/proj", "", 3),
		ev(event.KindOpen, 7, "/proc/self/fd/3/sub", "", 4),
		ev(event.KindRename, 7, "/proc/self/fd/4/a.tmp", "/proc/7/fd/4/a", 0),
		ev(event.KindOpen, 7, "/proc/self/fd/9/x", "", -2),
		ev(event.KindOpen, 8, "/proc/self/fd/3/y", "", 5), // another process
		symlink,
		ev(event.KindExit, 7, "", "", 0),
		ev(event.KindUnlink, 7, "/proc/self/fd/3/z", "", 0), // a new process on pid 7
	}
	Resolve(evs)
	want := [][2]string{
		{"/home/u/proj", ""},
		{"/home/u/proj/sub", ""},
		{"/home/u/proj/sub/a.tmp", "/home/u/proj/sub/a"},
		{"/proc/self/fd/9/x", ""},
		{"/proc/self/fd/3/y", ""},
		{"/home/u/proj/ln", "/proc/self/fd/3/target"},
		{"", ""},
		{"/proc/self/fd/3/z", ""},
	}
	for i, e := range evs {
		if e.Path != want[i][0] || e.Path2 != want[i][1] {
			t.Errorf("event %d (%s): %q, %q; want %q, %q", i, e.Kind, e.Path, e.Path2, want[i][0], want[i][1])
		}
	}
}

// TestDirTail checks the descriptor path forms Split reads, and that
// Through, which spares the other paths, lets every one of them through.
func TestDirTail(t *testing.T) {
	for _, c := range []struct {
		path string
		tail string
		ok   bool
	}{
		{"/proc/self/fd/3/a/b", "3/a/b", true},
		{"/proc/thread-self/fd/7/x", "7/x", true},
		{"/dev/fd/4/y", "4/y", true},
		{"/dev/fd/1", "1", true},
		{"/proc/123/fd/5/z", "5/z", true},
		{"/proc/1234/fd/5/z", "", false}, // another pid
		{"/proc/12/fd/5/z", "", false},
		{"/proc/123/fdx", "", false},
		{"/proc/123", "", false},
		{"/proc/self/status", "", false},
		{"/dev/null", "", false},
		{"/home/dev/proc/self/fd/3/x", "", false},
		{"", "", false},
	} {
		tail, ok := dirTail(c.path, 123)
		if tail != c.tail && c.ok || ok != c.ok {
			t.Errorf("dirTail(%q) = %q, %v; want %q, %v", c.path, tail, ok, c.tail, c.ok)
		}
		if ok && !Through(c.path) {
			t.Errorf("Through(%q) = false for a path dirTail resolves", c.path)
		}
	}
	for _, p := range []string{"/usr/lib/x", "/home/dev/a", "/d", "/p", "proc/self/fd/1/x", "/dev/null"} {
		if Through(p) {
			t.Errorf("Through(%q) = true", p)
		}
	}
}

// TestRootPath checks that a path named through the process's own root
// comes back as the path from the root, and that other /proc paths and
// another process's root are left alone.
func TestRootPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"/proc/self/root/home/u/.aws/credentials", "/home/u/.aws/credentials"},
		{"/proc/thread-self/root/etc/shadow", "/etc/shadow"},
		{"/proc/7/root/etc/../etc/shadow", "/etc/shadow"},
		{"/proc/self/root", "/"},
		{"/proc/self/rootfs/x", "/proc/self/rootfs/x"},
		{"/proc/8/root/etc/shadow", "/proc/8/root/etc/shadow"},
		{"/proc/70/root/etc/shadow", "/proc/70/root/etc/shadow"},
		{"/proc/self/environ", "/proc/self/environ"},
	} {
		if got := Rooted(7, c.in); got != c.want {
			t.Errorf("Rooted(7, %q) = %q, want %q", c.in, got, c.want)
		}
	}
}

package sensor

import (
	"os"
	"testing"
	"time"
)

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestResolve(t *testing.T) {
	tests := []struct{ base, p, want string }{
		{"/home/u", "a.txt", "/home/u/a.txt"},
		{"/home/u", "./sub/../b", "/home/u/b"},
		{"/home/u", "../../../..", "/"},
		{"/home/u", "/etc//passwd", "/etc/passwd"},
		{"", "rel", "/rel"},
		{"/d", "", "/d"},
	}
	for _, tc := range tests {
		if got := Resolve(tc.base, tc.p); got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", tc.base, tc.p, got, tc.want)
		}
	}
	if got := walked(walk("a", "b")); got != "/a/b" {
		t.Errorf("walked = %q", got)
	}
}

// TestDecodeThroughFD: the decoder resolves paths named through a
// descriptor an earlier open of the same process returned (fdpath).
func TestDecodeThroughFD(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	open := func(p string, fd int64) {
		r := polygraphEvPath{H: hdr(evOpen, 7, 1, 1, "bun"), Result: fd, PathLen: uint16(len(p) + 1)}
		if _, err := d.Decode(rec(&r, []byte(p+"\x00"))); err != nil {
			t.Fatal(err)
		}
	}
	open("/home/u/proj", 23)
	r := polygraphEvPath{H: hdr(evRename, 7, 2, 1, "bun")}
	p1, p2 := []byte("/proc/self/fd/23/f.sh.tmp.7.ab\x00"), []byte("/proc/7/fd/23/f.sh\x00")
	r.PathLen, r.Path2Len = uint16(len(p1)), uint16(len(p2))
	ev, err := d.Decode(rec(&r, p1, nil, p2, nil))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Path != "/home/u/proj/f.sh.tmp.7.ab" || ev.Path2 != "/home/u/proj/f.sh" {
		t.Errorf("rename through fds: %q -> %q", ev.Path, ev.Path2)
	}
	if got := d.fds.Path(7, "/proc/self/fd/99/x"); got != "/proc/self/fd/99/x" {
		t.Errorf("unknown fd rewritten to %q", got)
	}
	if got := d.fds.Path(8, "/dev/fd/23"); got != "/dev/fd/23" {
		t.Errorf("another process's fd rewritten to %q", got)
	}
}

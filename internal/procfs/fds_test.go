package procfs

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestParseSockAddr(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("the fixtures are little-endian /proc/net/tcp lines")
	}
	for in, want := range map[string]string{
		"0100007F:ABCD":                         "127.0.0.1:43981",
		"00000000:0016":                         "0.0.0.0:22",
		"00000000000000000000000001000000:1F90": "[::1]:8080",
	} {
		got, ok := parseSockAddr(in)
		if !ok || got.String() != want {
			t.Errorf("parseSockAddr(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "zz00007F:0001", "0100:0001"} {
		if _, ok := parseSockAddr(bad); ok {
			t.Errorf("parseSockAddr(%q) parsed", bad)
		}
	}
}

// TestListenerOf listens on loopback and finds itself, and finds nothing
// on a port nothing listens on.
func TestListenerOf(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	ap := netip.MustParseAddrPort(ln.Addr().String())
	l, ok := ListenerOf(ap)
	if !ok || l.PID != os.Getpid() {
		t.Fatalf("ListenerOf(%s) = %+v, %v; want pid %d", ap, l, ok, os.Getpid())
	}
	exe, _ := os.Executable()
	if l.Exe != exe {
		t.Errorf("exe %q, want %q", l.Exe, exe)
	}
	ln.Close()
	if l, ok := ListenerOf(ap); ok {
		t.Errorf("closed listener still found: %+v", l)
	}
}

// TestHolders: a file this process holds open to read and to write is
// found with its modes; one nobody holds is not.
func TestHolders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "held")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	var me *Holder
	for _, h := range Holders(st.Dev, st.Ino) {
		if h.PID == os.Getpid() {
			me = &h
		}
	}
	if me == nil || me.Reads != 1 || me.Writes != 1 {
		t.Fatalf("Holders = %+v for this process, want 1 read and 1 write", me)
	}
	if hs := Holders(st.Dev, st.Ino+1<<40); len(hs) != 0 {
		t.Errorf("a file nobody holds has holders %+v", hs)
	}
	if cg, err := CgroupV2(os.Getpid()); err != nil || !strings.HasPrefix(cg, "/") {
		t.Errorf("CgroupV2 = %q, %v", cg, err)
	}
}

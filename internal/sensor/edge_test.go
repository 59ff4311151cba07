package sensor

import (
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// A peer record is the tree's opener's event naming the FIFO and the
// outside process; the decoder asks for the exe only where the kernel
// walked none.
func TestDecodePeer(t *testing.T) {
	tests := []struct {
		name     string
		exe      []byte
		flags    uint32
		wantExe  string
		wantAcc  string
		askedFor uint32
	}{
		{"walked", walk("usr", "bin", "cat"), 0, "/usr/bin/cat", "read", 0},
		{"from /proc", nil, 1 | 0o100 | 0o1000, "/opt/reader", "write", 4242},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := NewDecoder(time.Unix(0, 0))
			var asked uint32
			d.Exe = func(pid uint32) string { asked = pid; return "/opt/reader" }
			d.Seed(10, 5, "")
			path := walk("tmp", "p")
			r := polygraphEvPeer{H: hdr(evPeer, 10, 100, 5, "sh"), Ino: 77, Dev: 8<<20 | 1, PeerPid: 4242,
				Flags: tc.flags, Imode: 0o010644, PathLen: uint16(len(path)), ExeLen: uint16(len(tc.exe))}
			e, err := d.Decode(rec(&r, path, tc.exe))
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != event.KindPeer || e.PID != 10 || e.ExecID != "10-5" || e.Path != "/tmp/p" || e.FileType() != "fifo" ||
				e.Ino() != 77 || e.Access != tc.wantAcc {
				t.Errorf("peer = %+v %+v", e, e.Object)
			}
			if e.PeerPID() != 4242 || e.PeerExe() != tc.wantExe || e.PeerInTree() == nil || *e.PeerInTree() || asked != tc.askedFor {
				t.Errorf("peer side = %+v (asked /proc for %d), want 4242 %s outside (asked for %d)", e.Network, asked, tc.wantExe, tc.askedFor)
			}
		})
	}
}

// A memread names the request and the target, in the tree or not; it
// adopts nothing.
func TestDecodeMemRead(t *testing.T) {
	tests := []struct {
		method, arg uint32
		imageNS     uint64
		nsLocal     uint8
		want        string
		inTree      *bool
	}{
		{1, 2, 0, 0, "ptrace_peekdata", event.Ptr(false)},
		{1, 0x4204, 900, 0, "ptrace_getregset", event.Ptr(true)},
		{9, 0, 0, 0, "process_vm_readv", event.Ptr(false)},
		{3, 0, 0, 1, "proc_mem", nil},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			d := NewDecoder(time.Unix(0, 0))
			d.Exe = func(uint32) string { return "/usr/bin/ssh-agent" }
			c := polygraphEvCall{H: hdr(evMemRead, 10, 900, 5, "gdb"), Target: 77, Arg: tc.arg, Method: uint8(tc.method),
				TargetImageNs: tc.imageNS, NsLocal: tc.nsLocal}
			e, err := d.Decode(rec(&c))
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != event.KindMemRead || e.Method() != tc.want || e.TargetPID() != 77 || e.Adopted() {
				t.Fatalf("memread = %+v %+v", e, e.Call)
			}
			in := e.TargetInTree()
			if (in == nil) != (tc.inTree == nil) || in != nil && *in != *tc.inTree {
				t.Errorf("target_in_tree = %v, want %v", in, tc.inTree)
			}
			if wantExe := map[bool]string{true: "", false: "/usr/bin/ssh-agent"}[tc.nsLocal != 0]; e.TargetExe() != wantExe {
				t.Errorf("target_exe = %q, want %q", e.TargetExe(), wantExe)
			}
			if d.ExecIDOf(77) != "" {
				t.Errorf("the target got an image (%s): a read adopted it", d.ExecIDOf(77))
			}
		})
	}
}

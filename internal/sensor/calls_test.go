package sensor

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

func TestLoaderProgram(t *testing.T) {
	tests := []struct {
		path string
		argv []string
		want string
	}{
		{"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", []string{"/lib64/ld-linux-x86-64.so.2", "./prog", "-x"}, "./prog"},
		{"/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", []string{"ld", "--library-path", "/opt/lib", "--inhibit-cache", "bin/p"}, "bin/p"},
		{"/lib/ld-musl-x86_64.so.1", []string{"ld", "--preload", "x.so", "/tmp/p"}, "/tmp/p"},
		{"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", []string{"ld", "--list", "./prog"}, ""},
		{"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", []string{"ld"}, ""},
		{"/usr/bin/python3", []string{"python3", "x.py"}, ""},
	}
	for _, tc := range tests {
		if got := loaderProgram(tc.path, tc.argv); got != tc.want {
			t.Errorf("loaderProgram(%s, %q) = %q, want %q", tc.path, tc.argv, got, tc.want)
		}
	}
}

// An adopted target's later records carry the image_ns the inject named:
// they get the injector's image as parent.
func TestDecodeInjectAdopts(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	d.Seed(10, 5, "")
	c := polygraphEvCall{H: hdr(evInject, 10, 900, 5, "gdb"), Target: 77, Arg: 16, Method: 1, Adopted: 1, TargetImageNs: 900}
	e, err := d.Decode(rec(&c))
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != event.KindInject || e.Method != "ptrace_attach" || e.TargetPID != 77 || !e.Adopted || e.TargetExecID != "77-900" {
		t.Fatalf("inject = %+v %+v", e, e.Call)
	}
	p := polygraphEvPath{H: hdr(evOpen, 77, 950, 900, "victim"), Result: -2, PathLen: 3}
	o, err := d.Decode(rec(&p, []byte("/x\x00")))
	if err != nil {
		t.Fatal(err)
	}
	if o.ExecID != "77-900" || o.ParentExecID != e.ExecID {
		t.Errorf("target's open in %s (parent %s), want 77-900 (parent %s)", o.ExecID, o.ParentExecID, e.ExecID)
	}
	s := polygraphEvCall{H: hdr(evSignal, 10, 990, 5, "sh"), Target: 1, Arg: 9, Method: 4}
	if e, err = d.Decode(rec(&s)); err != nil || e.Method != "kill" || e.Signo != 9 || e.TargetPID != 1 {
		t.Errorf("signal = %+v %v", e, err)
	}
	b := polygraphEvCall{H: hdr(evBPF, 10, 991, 5, "sh"), Arg: 5, Method: 8, Result: 3}
	if e, err = d.Decode(rec(&b)); err != nil || e.BPFCmd != "BPF_PROG_LOAD" {
		t.Errorf("bpf = %+v %v", e, err)
	}
}

func TestDecodeSendAndUnixPeer(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	sa := make([]byte, 16)
	binary.LittleEndian.PutUint16(sa, 2)
	binary.BigEndian.PutUint16(sa[2:], 9999)
	copy(sa[4:], []byte{192, 0, 2, 1})
	s := polygraphEvSock{H: hdr(evSend, 1, 1, 1, "x"), Result: 10, AddrLen: 16, Proto: 1, SockType: sockRaw, Sflags: sfUser}
	e, err := d.Decode(rec(&s, sa))
	if err != nil {
		t.Fatal(err)
	}
	if e.Kind != event.KindSend || e.Addr != "192.0.2.1" || e.Port != 9999 || e.Proto != "raw:icmp" || !e.AddrUser {
		t.Errorf("send = %+v %+v", e, e.Network)
	}
	un := append([]byte{1, 0}, "/run/x.sock\x00"...)
	exe := walk("usr", "bin", "dockerd")
	u := polygraphEvSock{H: hdr(evConnect, 1, 1, 1, "x"), AddrLen: uint16(len(un)), ExeLen: uint16(len(exe)), PeerPid: 42,
		Sflags: sfUser}
	if e, err = d.Decode(rec(&u, un, exe)); err != nil {
		t.Fatal(err)
	}
	if e.Addr != "/run/x.sock" || e.PeerPID != 42 || e.PeerExe != "/usr/bin/dockerd" || e.PeerInTree == nil || *e.PeerInTree {
		t.Errorf("unix connect = %+v %+v", e, e.Network)
	}
}

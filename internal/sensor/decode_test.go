package sensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf/btf"

	"github.com/polygraph/polygraph/internal/event"
)

// rec builds a record the way the BPF side does: the fixed struct, then
// (for scratch-built kinds) the data part at dataOff.
func rec[T any](fixed *T, data ...[]byte) []byte {
	b := unsafe.Slice((*byte)(unsafe.Pointer(fixed)), unsafe.Sizeof(*fixed))
	out := append([]byte(nil), b...)
	if len(data) == 0 {
		return out
	}
	out = append(out, make([]byte, dataOff-len(out))...)
	for _, d := range data {
		out = append(out, d...)
	}
	return out
}

func hdr(kind uint8, pid uint32, ts, image uint64, comm string) polygraphEvHeader {
	h := polygraphEvHeader{Kind: kind, Pid: pid, Tid: pid, Ppid: 1, Ts: ts, ImageNs: image}
	for i := 0; i < len(comm) && i < 15; i++ {
		h.Comm[i] = int8(comm[i])
	}
	return h
}

// walk encodes a path the way walk_path writes it: leaf first.
func walk(components ...string) []byte {
	var b []byte
	for i := len(components) - 1; i >= 0; i-- {
		b = append(b, components[i]...)
		b = append(b, 0)
	}
	return b
}

func TestDecodeExecForkExit(t *testing.T) {
	d := NewDecoder(time.Unix(1000, 0))
	// fork: pid 10 (image 5) forks 11 at t=100
	f := polygraphEvFork{H: hdr(evFork, 10, 100, 5, "sh"), ChildPid: 11, ChildImageNs: 100}
	ev, err := d.Decode(rec(&f))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != event.KindFork || ev.ChildPID() != 11 || ev.ExecID != "10-5" || ev.ChildExecID() != "11-100" {
		t.Fatalf("fork = %+v", ev)
	}
	if !ev.TS.Equal(time.Unix(1000, 100)) {
		t.Errorf("ts = %v", ev.TS)
	}
	// exec in 11 at t=200
	path, cwd, argv := walk("usr", "bin", "cat"), walk("tmp", "w"), []byte("cat\x00a b\x00")
	x := polygraphEvExec{H: hdr(evExec, 11, 200, 200, "cat"), Uid: 1000,
		PathLen: uint16(len(path)), CwdLen: uint16(len(cwd)), ArgvLen: uint32(len(argv))}
	x.H.Flags = flagTruncArgv
	ev, err = d.Decode(rec(&x, path, cwd, argv))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Path != "/usr/bin/cat" || ev.Cwd() != "/tmp/w" || len(ev.Argv()) != 2 || ev.Argv()[1] != "a b" || !ev.ArgvTruncated() || *ev.UID() != 1000 {
		t.Fatalf("exec = %+v", ev)
	}
	if ev.ExecID != "11-200" || ev.ParentExecID != "11-100" {
		t.Errorf("exec ids = %s parent %s, want 11-200 parent 11-100", ev.ExecID, ev.ParentExecID)
	}
	// exit by signal 9, and a normal exit(3)
	e := polygraphEvExit{H: hdr(evExit, 11, 300, 200, "cat"), ExitCode: 9, StartNs: 100, CpuNs: 7, MaxrssPages: 10, Rchar: 5, Wchar: 6}
	ev, err = d.Decode(rec(&e))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Signal() != 9 || ev.ExitCode() != nil || ev.DurationNS() != 200 || ev.MaxRSSKB() != 40 || ev.ReadBytes() != 5 || ev.WriteBytes() != 6 {
		t.Fatalf("exit = %+v", ev)
	}
	e.ExitCode = 3 << 8
	ev, _ = d.Decode(rec(&e))
	if ev.ExitCode() == nil || *ev.ExitCode() != 3 || ev.Signal() != 0 {
		t.Fatalf("exit(3) = %+v", ev)
	}
}

func TestDecodePathKinds(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	base := walk("home", "u", "proj")
	tests := []struct {
		name      string
		kind      uint8
		flags     uint32
		p1, b1    []byte
		p2, b2    []byte
		wantPath  string
		wantPath2 string
		wantKind  event.Kind
	}{
		{"relative open", evOpen, 0o1101, []byte("../x/./f.txt\x00"), base, nil, nil, "/home/u/x/f.txt", "", event.KindOpen},
		{"absolute open ignores base", evOpen, 0, []byte("/etc/passwd\x00"), nil, nil, nil, "/etc/passwd", "", event.KindOpen},
		{"rename", evRename, 0, []byte("a\x00"), base, []byte("/tmp/b\x00"), nil, "/home/u/proj/a", "/tmp/b", event.KindRename},
		{"hard link: new name first", evLink, 0, []byte("old\x00"), base, []byte("new\x00"), base, "/home/u/proj/new", "/home/u/proj/old", event.KindLink},
		{"symlink keeps target text", evLink, symlinkFlag, []byte("../t\x00"), nil, []byte("ln\x00"), base, "/home/u/proj/ln", "../t", event.KindLink},
		{"fchmod: the fd's path", evChmod, 0, nil, base, nil, nil, "/home/u/proj", "", event.KindChmod},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := polygraphEvPath{H: hdr(tc.kind, 1, 1, 1, "x"), Result: -2, Flags: tc.flags,
				PathLen: uint16(len(tc.p1)), BaseLen: uint16(len(tc.b1)), Path2Len: uint16(len(tc.p2)), Base2Len: uint16(len(tc.b2))}
			ev, err := d.Decode(rec(&r, tc.p1, tc.b1, tc.p2, tc.b2))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tc.wantKind || ev.Path != tc.wantPath || ev.Path2 != tc.wantPath2 || *ev.Result != -2 || !ev.Failed() {
				t.Fatalf("got %s %q %q result %d", ev.Kind, ev.Path, ev.Path2, *ev.Result)
			}
			if tc.kind == evOpen && tc.flags == 0o1101 && ev.Access != "write,create" {
				t.Errorf("access = %q", ev.Access)
			}
		})
	}
}

// Access reads a table built by accessSlow: they agree on every flag word
// that matters, whatever else is set.
func TestAccessTable(t *testing.T) {
	for _, other := range []uint32{0, 0o4000 | 0o2000000, 0xFFFFFFFF &^ (oAccMode | oCreat | oTrunc)} {
		for acc := range uint32(4) {
			for _, ct := range []uint32{0, oCreat, oTrunc, oCreat | oTrunc} {
				f := acc | ct | other
				if got, want := Access(f), accessSlow(f); got != want {
					t.Errorf("Access(%#o) = %q, want %q", f, got, want)
				}
			}
		}
	}
}

func TestAccess(t *testing.T) {
	for flags, want := range map[uint32]string{0: "read", 1: "write", 2: "read,write", 0o101: "write,create", 0o1000: "read,write", 0o102: "read,write,create"} {
		if got := Access(flags); got != want {
			t.Errorf("Access(%#o) = %q, want %q", flags, got, want)
		}
	}
}

func TestDecodeSockAndDNS(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	sa6 := make([]byte, 28)
	binary.LittleEndian.PutUint16(sa6, 10)
	binary.BigEndian.PutUint16(sa6[2:], 8443)
	sa6[23] = 1 // ::1
	s := polygraphEvSock{H: hdr(evConnect, 1, 1, 1, "curl"), Result: -111, AddrLen: uint16(len(sa6)), Proto: 6}
	ev, err := d.Decode(rec(&s, sa6))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != event.KindConnect || ev.Family() != "ipv6" || ev.Addr() != "::1" || ev.Port() != 8443 || *ev.Result != -111 || ev.Proto() != "tcp" {
		t.Fatalf("connect = %+v", ev)
	}
	un := append([]byte{1, 0}, []byte("/run/docker.sock\x00")...)
	s = polygraphEvSock{H: hdr(evConnect, 1, 1, 1, "x"), AddrLen: uint16(len(un))}
	ev, _ = d.Decode(rec(&s, un))
	if ev.Family() != "unix" || ev.Addr() != "/run/docker.sock" {
		t.Fatalf("unix connect = %+v", ev)
	}

	// A query for pypi.org AAAA to 127.0.0.53:53
	msg := []byte{0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4, 'p', 'y', 'p', 'i', 3, 'o', 'r', 'g', 0, 0, 28, 0, 1}
	sa4 := []byte{2, 0, 0, 53, 127, 0, 0, 53, 0, 0, 0, 0, 0, 0, 0, 0}
	q := polygraphEvDns{H: hdr(evDNS, 1, 1, 1, "pip"), AddrLen: uint16(len(sa4)), DataLen: uint16(len(msg)), Proto: 17}
	ev, err = d.Decode(rec(&q, sa4, msg))
	if err != nil {
		t.Fatal(err)
	}
	if ev.QName() != "pypi.org" || ev.QType() != "AAAA" || ev.Addr() != "127.0.0.53" || ev.Port() != 53 {
		t.Fatalf("dns = %+v", ev)
	}
}

func TestDecodeBadInput(t *testing.T) {
	d := NewDecoder(time.Unix(0, 0))
	if _, err := d.Decode(nil); !errors.Is(err, ErrShort) {
		t.Errorf("empty: %v", err)
	}
	if _, err := d.Decode([]byte{99, 0, 0}); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
	x := polygraphEvExec{H: hdr(evExec, 1, 1, 1, "x"), ArgvLen: 5000}
	if _, err := d.Decode(rec(&x, []byte("short"))); !errors.Is(err, ErrShort) {
		t.Errorf("argv beyond record: %v", err)
	}
	if _, err := d.Decode([]byte{evExit, 0, 0, 0}); !errors.Is(err, ErrShort) {
		t.Errorf("short exit: %v", err)
	}
}

// FuzzDecode: no record, however broken, panics the decoder.
func FuzzDecode(f *testing.F) {
	x := polygraphEvExec{H: hdr(evExec, 1, 1, 1, "x"), PathLen: 4, ArgvLen: 4}
	f.Add(rec(&x, []byte("bin\x00"), []byte("a\x00b\x00")))
	p := polygraphEvPath{H: hdr(evOpen, 1, 1, 1, "x"), PathLen: 2}
	f.Add(rec(&p, []byte("a\x00")))
	q := polygraphEvDns{H: hdr(evDNS, 1, 1, 1, "x"), DataLen: 14}
	f.Add(rec(&q, []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 'a'}))
	f.Fuzz(func(t *testing.T, b []byte) {
		d := NewDecoder(time.Unix(0, 0))
		d.Decode(b)
		ParseDNSQuestion(b)
	})
}

// TestLayoutMatchesObject checks the Go decoder's view of each record
// against the compiled object's BTF, so a change on one side of
// bpf/events.h cannot silently shift fields.
func TestLayoutMatchesObject(t *testing.T) {
	spec, err := loadPolygraph()
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]uintptr{
		"ev_header": unsafe.Sizeof(polygraphEvHeader{}), "ev_exec": unsafe.Sizeof(polygraphEvExec{}),
		"ev_fork": unsafe.Sizeof(polygraphEvFork{}), "ev_exit": unsafe.Sizeof(polygraphEvExit{}),
		"ev_path": unsafe.Sizeof(polygraphEvPath{}), "ev_sock": unsafe.Sizeof(polygraphEvSock{}),
		"ev_dns": unsafe.Sizeof(polygraphEvDns{}), "ev_call": unsafe.Sizeof(polygraphEvCall{}),
		"ev_peer": unsafe.Sizeof(polygraphEvPeer{}), "ev_key": unsafe.Sizeof(polygraphEvKey{}), "ev_mount": unsafe.Sizeof(polygraphEvMount{}),
	}
	for name, size := range sizes {
		var st *btf.Struct
		if err := spec.Types.TypeByName(name, &st); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if uintptr(st.Size) != size {
			t.Errorf("%s: object says %d bytes, Go %d", name, st.Size, size)
		}
		if name != "ev_header" && name != "ev_fork" && name != "ev_exit" && name != "ev_call" && size > dataOff {
			t.Errorf("%s (%d bytes) overlaps the data at %d", name, size, dataOff)
		}
	}
	if !bytes.Contains(mustRead(t, "../../bpf/polygraph.bpf.c"), []byte("#define DATA_OFF 96")) {
		t.Error("DATA_OFF in bpf/polygraph.bpf.c and dataOff here differ")
	}
}

// BenchmarkDecodeOpen is the decoder's cost per open record, the bulk of
// a busy session: absolute paths, a few hundred distinct ones.
func BenchmarkDecodeOpen(b *testing.B) {
	d := NewDecoder(time.Unix(0, 0))
	recs := make([][]byte, 512)
	for i := range recs {
		p := []byte(fmt.Sprintf("/tmp/polygraph-bench/tree/d%02d/f%03d\x00", i/100, i%100))
		r := polygraphEvPath{H: hdr(evOpen, 1, 1, 1, "helper"), Result: 3, Flags: 0, PathLen: uint16(len(p))}
		recs[i] = rec(&r, p)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := d.Decode(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeOpenRelative is BenchmarkDecodeOpen for paths relative
// to the cwd, which the kernel sends walked (grep -r, a build): the name
// and the base resolve once, then come from the cache.
func BenchmarkDecodeOpenRelative(b *testing.B) {
	d := NewDecoder(time.Unix(0, 0))
	base := []byte("repo\x00work\x00root\x00")
	recs := make([][]byte, 512)
	for i := range recs {
		p := []byte(fmt.Sprintf("internal/d%02d/f%03d.go\x00", i/100, i%100))
		r := polygraphEvPath{H: hdr(evOpen, 1, 1, 1, "grep"), Result: 3, Flags: 0, PathLen: uint16(len(p)), BaseLen: uint16(len(base))}
		recs[i] = rec(&r, append(p, base...))
	}
	e, err := d.Decode(recs[7])
	if err != nil || e.Path != "/root/work/repo/internal/d00/f007.go" {
		b.Fatalf("decoded %v (%v)", e, err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := d.Decode(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
	}
}

package record

// The kernel-tier tests of what the sensor takes from the kernel's
// objects rather than from what the process passed: sockets' peers, file
// handles, calls into other processes, loader tricks and tamper signals.
// Each technique is a real program (testdata/tricks.c, built with the
// system's cc) run under the sensor.

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// buildTricks compiles testdata/tricks.c into a temporary directory
// (symlinks resolved, so paths compare with the kernel's) and returns the
// binary's path.
func buildTricks(t *testing.T) (dir, bin string) {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to build testdata/tricks.c")
	}
	dir, err = filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs("testdata/tricks.c")
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "tricks")
	if out, err := exec.Command(cc, "-O2", "-pthread", "-o", bin, src).CombinedOutput(); err != nil {
		t.Skipf("cc cannot build testdata/tricks.c: %v\n%s", err, out)
	}
	return dir, bin
}

// listenTCP accepts and closes connections on a loopback port until the
// test ends, and returns the port.
func listenTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// listenUDPRange listens on n consecutive loopback UDP ports (so sends
// to them draw no ICMP errors) and returns the first.
func listenUDPRange(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 20; try++ {
		first, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := first.LocalAddr().(*net.UDPAddr).Port
		conns := []net.PacketConn{first}
		for p := base + 1; p < base+n; p++ {
			c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				break
			}
			conns = append(conns, c)
		}
		if len(conns) == n {
			t.Cleanup(func() {
				for _, c := range conns {
					c.Close()
				}
			})
			return base
		}
		for _, c := range conns {
			c.Close()
		}
	}
	t.Fatalf("no %d consecutive free UDP ports", n)
	return 0
}

// outside starts bin with args outside the traced tree and returns it
// once it printed its first line.
func outside(t *testing.T, bin string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("%s %v printed nothing: %v", bin, args, err)
	}
	return cmd
}

func byComm(comm string, kind event.Kind) func(*event.Event) bool {
	return func(e *event.Event) bool { return e.Kind == kind && e.Comm == comm }
}

// TestConnectRace: a second thread flips the port of the sockaddr while
// the first connects, so the sockaddr at sys_exit may name the other
// listener. Every recorded connect must name the peer its socket reached.
func TestConnectRace(t *testing.T) {
	dir, bin := buildTricks(t)
	pa, pb := listenTCP(t), listenTCP(t)
	out := filepath.Join(dir, "ports.txt")
	const tries = 300
	_, evs := recordScript(t, dir, fmt.Sprintf("%s race %d %d %d > %s", bin, pa, pb, tries, out), 0)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint16 // the peer of each connect, as getpeername saw it
	for _, l := range strings.Fields(string(b)) {
		if p, _ := strconv.Atoi(l); p != 0 {
			got = append(got, uint16(p))
		}
	}
	var connects []*event.Event
	for _, e := range evs {
		if e.Kind == event.KindConnect && e.Comm == "tricks" && !e.Failed() {
			connects = append(connects, e)
		}
	}
	if len(connects) != len(got) || len(got) == 0 {
		t.Fatalf("%d successful connects recorded, the program made %d", len(connects), len(got))
	}
	for i, e := range connects {
		if e.Port() != got[i] || e.Addr() != "127.0.0.1" || e.AddrUser() {
			t.Fatalf("connect %d: recorded %s:%d (addr_user %v), the socket reached port %d", i, e.Addr(), e.Port(), e.AddrUser(), got[i])
		}
	}
}

// TestSendDestinations: sends on unconnected UDP and raw sockets are
// recorded with the destination they named (first send per peer, bytes
// in the process's net event), not as peer 0.0.0.0; a TCP Fast Open
// sendto is a connect, its peer from the socket.
func TestSendDestinations(t *testing.T) {
	dir, bin := buildTricks(t)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	udp := pc.LocalAddr().(*net.UDPAddr).Port
	tfo := listenTCP(t)
	many := listenUDPRange(t, 5)
	script := fmt.Sprintf("%s udp %d 6 && %s udpmany %d 5 && %s raw 127.0.0.2", bin, udp, bin, many, bin)
	tfoOK := false
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_fastopen"); err == nil {
		if v, _ := strconv.Atoi(strings.TrimSpace(string(b))); v&1 != 0 {
			tfoOK = true
			script += fmt.Sprintf(" && %s tfo %d", bin, tfo)
		}
	}
	_, evs := recordScript(t, dir, script, 0)

	t.Run("udp", func(t *testing.T) {
		var sends []*event.Event
		for _, e := range evs {
			if e.Kind == event.KindSend && e.Comm == "tricks" && e.Port() == uint16(udp) {
				sends = append(sends, e)
			}
		}
		if len(sends) != 1 {
			t.Fatalf("%d send events to 127.0.0.1:%d, want 1 (the first of six)", len(sends), udp)
		}
		s := sends[0]
		if s.Addr() != "127.0.0.1" || s.Proto() != "udp" || !s.AddrUser() || s.Result == nil || *s.Result != 10 {
			t.Errorf("send = %+v %+v, want 127.0.0.1 udp addr_user, 10 bytes", s, s.Network)
		}
		n := find(evs, func(e *event.Event) bool {
			return e.Kind == event.KindNet && e.PID == s.PID && e.Port() == uint16(udp)
		})
		if n == nil || n.Addr() != "127.0.0.1" || n.BytesSent() != 60 {
			t.Errorf("net event of the peer = %+v, want 60 bytes sent to 127.0.0.1", n)
		}
		if z := find(evs, func(e *event.Event) bool {
			return e.Kind == event.KindNet && e.PID == s.PID && e.Addr() == "0.0.0.0"
		}); z != nil {
			t.Errorf("bytes still counted against 0.0.0.0: %+v", z.Network)
		}
	})
	t.Run("sendmmsg", func(t *testing.T) {
		for p := many; p < many+5; p++ {
			s := find(evs, func(e *event.Event) bool { return e.Kind == event.KindSend && e.Port() == uint16(p) })
			if s == nil || s.Addr() != "127.0.0.1" || s.Result == nil || *s.Result != 10 {
				t.Errorf("send to port %d (message %d of one sendmmsg) = %+v, want 10 bytes to 127.0.0.1", p, p-many+1, s)
			}
		}
	})
	t.Run("raw", func(t *testing.T) {
		s := find(evs, func(e *event.Event) bool { return e.Kind == event.KindSend && e.Addr() == "127.0.0.2" })
		if s == nil || s.Proto() != "raw:icmp" || s.Result == nil || *s.Result != 8 {
			t.Fatalf("raw send = %+v, want one to 127.0.0.2, raw:icmp, 8 bytes", s)
		}
	})
	t.Run("tcp fast open", func(t *testing.T) {
		if !tfoOK {
			t.Skip("net.ipv4.tcp_fastopen has no client bit")
		}
		c := find(evs, func(e *event.Event) bool { return e.Kind == event.KindConnect && e.Port() == uint16(tfo) })
		if c == nil || !c.FastOpen() || c.AddrUser() || c.Addr() != "127.0.0.1" || c.Proto() != "tcp" {
			t.Fatalf("fast open connect = %+v, want fastopen to 127.0.0.1 from the socket", c)
		}
	})
}

// TestOpenByHandle: name_to_handle_at names the file; open_by_handle_at,
// which names no path, is an open of the file its fd is.
func TestOpenByHandle(t *testing.T) {
	dir, bin := buildTricks(t)
	pl := plantCredentials(t)
	_, evs := recordScript(t, dir, bin+" handle "+pl.path, 0)
	h := find(evs, byComm("tricks", event.KindHandle))
	if h == nil || h.Path != pl.path || h.Failed() {
		t.Errorf("handle event = %+v, want %s", h, pl.path)
	}
	o := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindOpen && e.Comm == "tricks" && e.Object != nil && e.PathDiffers() == "handle"
	})
	if o == nil {
		t.Fatal("no open with path_differs handle")
	}
	if o.Path != pl.path || o.Dev() != pl.dev || o.Ino() != pl.ino || o.PathRequested() != "" || o.Access != "read" {
		t.Errorf("open by handle = %+v %+v, want %s %d:%d", o, o.Object, pl.path, pl.dev, pl.ino)
	}
}

// TestUnixPeer: a connect to a Unix socket names the process listening
// on it, its executable, and whether it is in the tree.
func TestUnixPeer(t *testing.T) {
	dir, bin := buildTricks(t)
	out := filepath.Join(dir, "out.sock")
	l := outside(t, bin, "unixlisten", out)
	in := filepath.Join(dir, "in.sock")
	script := fmt.Sprintf("%s unixconnect %s; (%s unixlisten %s > %s.ready &); sleep 0.3; %s unixconnect %[4]s; sleep 0.5; pkill -f 'unixlisten %[4]s'",
		bin, out, bin, in, in, bin)
	// From outside the tree (this process), connect to the listener in it.
	go func() {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(in + ".ready"); err != nil {
				continue
			}
			time.Sleep(400 * time.Millisecond) // after the tree's own connect
			if c, err := net.Dial("unix", in); err == nil {
				c.Close()
			}
			return
		}
	}()
	_, evs := recordScript(t, dir, script, 0)
	for _, c := range []struct {
		path   string
		pid    int
		inTree bool
	}{{out, l.Process.Pid, false}, {in, 0, true}} {
		e := find(evs, func(e *event.Event) bool { return e.Kind == event.KindConnect && e.Addr() == c.path })
		if e == nil {
			t.Errorf("no connect to %s", c.path)
			continue
		}
		if e.PeerPID() == 0 || c.pid != 0 && e.PeerPID() != uint32(c.pid) || e.PeerExe() != bin || e.PeerInTree() == nil || *e.PeerInTree() != c.inTree {
			t.Errorf("connect to %s: peer %d %q in tree %v, want %d %s %v", c.path, e.PeerPID(), e.PeerExe(), e.PeerInTree(), c.pid, bin, c.inTree)
		}
	}
	// The listener in the tree accepted the tree's connect, then this
	// process's: the accepts name the connecting processes (read at the
	// accept: a connector gone by then leaves its pid only).
	var accepts []*event.Event
	for _, e := range evs {
		if e.Kind == event.KindAccept && e.Comm == "tricks" && !e.Failed() {
			accepts = append(accepts, e)
		}
	}
	if len(accepts) != 2 {
		t.Fatalf("%d accepts by the listener in the tree, want 2", len(accepts))
	}
	if a := accepts[0]; a.PeerExe() != bin || a.PeerInTree() == nil || !*a.PeerInTree() {
		t.Errorf("accept of the tree's connect: peer %d %q in tree %v, want %s in the tree", a.PeerPID(), a.PeerExe(), a.PeerInTree(), bin)
	}
	self, _ := os.Executable()
	if a := accepts[1]; a.PeerPID() != uint32(os.Getpid()) || a.PeerExe() != self || a.PeerInTree() == nil || *a.PeerInTree() {
		t.Errorf("accept of the outside connect: peer %d %q in tree %v, want %d %s outside", a.PeerPID(), a.PeerExe(), a.PeerInTree(), os.Getpid(), self)
	}
}

// TestInjectAdopts: ptrace, process_vm_writev and a write through
// /proc/PID/mem into a process outside the tree are recorded with the
// target, which is traced from then on: the file it reads because of the
// write is recorded, in an image whose parent is the injector's.
// One function over 80 lines: every check reads the events of one recorded run.
func TestInjectAdopts(t *testing.T) {
	dir, bin := buildTricks(t)
	type victim struct {
		method, mode string
		thread       bool // name the victim's second thread, not the process
		pid          int
		addr, after  string
	}
	victims := []*victim{{method: "ptrace_attach", mode: "ptrace"}, {method: "process_vm_writev", mode: "vmwrite"},
		{method: "proc_mem", mode: "procmem"}, {method: "ptrace_attach", mode: "ptrace", thread: true}}
	var sb strings.Builder
	for i, v := range victims {
		af := filepath.Join(dir, fmt.Sprintf("addr%d", i))
		v.after = filepath.Join(dir, fmt.Sprintf("after%d", i))
		if err := os.WriteFile(v.after, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "victim", af, v.after)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		v.pid = cmd.Process.Pid
		var f []string // the flag's address, the second thread's tid
		for deadline := time.Now().Add(5 * time.Second); len(f) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			b, _ := os.ReadFile(af)
			f = strings.Fields(string(b))
		}
		if len(f) < 2 {
			t.Fatalf("victim %d wrote no address", v.pid)
		}
		v.addr = f[0]
		target := strconv.Itoa(v.pid)
		if v.thread {
			target = f[1]
		}
		fmt.Fprintf(&sb, "%s %s %s %s || echo %s failed >&2\n", bin, v.mode, target, v.addr, v.mode)
	}
	unshare, _ := exec.LookPath("unshare")
	if unshare != "" {
		// pid 1 of a new namespace is the writer itself, not init.
		fmt.Fprintf(&sb, "%s --pid --fork %s vmwrite 1 0; true\n", unshare, bin)
	}
	sb.WriteString("sleep 0.5\n") // the victims read while the tree is traced
	// The tree keeps CAP_SYS_PTRACE (KeepCaps): by default a root tree
	// loses it and these injects fail (they are then recorded as failed).
	_, evs := recordWith(t, Options{Command: []string{"sh", "-c", sb.String()}, Dir: dir, KeepCaps: true})
	for _, v := range victims {
		name := v.mode
		if v.thread {
			name += " of a thread"
		}
		t.Run(name, func(t *testing.T) {
			inj := find(evs, func(e *event.Event) bool {
				return e.Kind == event.KindInject && e.Method() == v.method && e.TargetPID() == uint32(v.pid)
			})
			if inj == nil {
				t.Fatalf("no inject %s of pid %d", v.method, v.pid)
			}
			if !inj.Adopted() || inj.TargetExecID() == "" || inj.Failed() {
				t.Errorf("inject = %+v %+v, want adopted with a target image", inj, inj.Call)
			}
			read := find(evs, func(e *event.Event) bool {
				return e.Kind == event.KindOpen && e.PID == uint32(v.pid) && e.Path == v.after
			})
			if read == nil {
				t.Fatalf("the target's read of %s after the inject is not recorded", v.after)
			}
			if read.ExecID != inj.TargetExecID() || read.ParentExecID != inj.ExecID {
				t.Errorf("target's read in image %s (parent %s), want %s (parent the injector's %s)",
					read.ExecID, read.ParentExecID, inj.TargetExecID(), inj.ExecID)
			}
		})
	}
	if unshare != "" {
		ns := find(evs, func(e *event.Event) bool { return e.Kind == event.KindInject && e.TargetPID() == 1 })
		if ns == nil || !ns.TargetNSLocal() || ns.Adopted() || ns.TargetExecID() != "" {
			t.Errorf("inject from a child pid namespace = %+v, want target_ns_local, not adopted", ns)
		}
	}
	poke := find(evs, func(e *event.Event) bool { return e.Kind == event.KindInject && e.Method() == "ptrace_pokedata" })
	if poke == nil || poke.Adopted() || poke.TargetExecID() == "" {
		t.Errorf("poke = %+v, want one into the already adopted target", poke)
	}
}

// TestLoaderProgram: `ld.so ./prog` runs prog, though the kernel ran the
// loader: the exec names prog.
func TestLoaderProgram(t *testing.T) {
	dir, bin := buildTricks(t)
	var ld string
	for _, p := range []string{"/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1"} {
		if _, err := os.Stat(p); err == nil {
			ld = p
		}
	}
	if ld == "" {
		t.Skip("no glibc dynamic loader at its usual path")
	}
	_, evs := recordScript(t, dir, ld+" ./tricks hello", 0)
	e := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindExec && len(e.Argv()) > 1 && e.Argv()[1] == "./tricks"
	})
	if e == nil || e.Script() != bin || !strings.HasPrefix(filepath.Base(e.Path), "ld-") {
		t.Fatalf("exec of the loader = %+v, want script %s", e, bin)
	}
}

// TestTamperSignals: a bpf(2) call and signals aimed at polygraph's own
// pid from the tree are recorded; a FIFO opened is recorded as one.
func TestTamperSignals(t *testing.T) {
	dir, bin := buildTricks(t)
	// The command shares polygraph's process group: kill(0) and
	// kill(-pgid) reach it too.
	script := fmt.Sprintf("%s bpf && %s kill %d && %s killgroup %d && mkfifo p && (cat p >/dev/null &) && echo x > p",
		bin, bin, os.Getpid(), bin, syscall.Getpgrp())
	unshare, _ := exec.LookPath("unshare")
	if unshare != "" {
		// In a child pid namespace the same number is another process
		// (or none): not a signal to polygraph.
		script += fmt.Sprintf("; %s --pid --fork %s kill %d; true", unshare, bin, os.Getpid())
	}
	// The tree keeps its capabilities (KeepCaps): what is tested is that
	// the calls are recorded, and by default a root tree's bpf() fails
	// (see TestRootTreeCannotTouchBPF).
	_, evs := recordWith(t, Options{Command: []string{"sh", "-c", script}, Dir: dir, KeepCaps: true})
	b := find(evs, byComm("tricks", event.KindBPF))
	if b == nil || b.BPFCmd() != "BPF_MAP_CREATE" || b.Failed() {
		t.Errorf("bpf event = %+v, want BPF_MAP_CREATE that worked", b)
	}
	for _, m := range []string{"kill", "tgkill", "pidfd_send_signal"} {
		s := find(evs, func(e *event.Event) bool { return e.Kind == event.KindSignal && e.Method() == m })
		if s == nil || s.TargetPID() != uint32(os.Getpid()) || s.Signo() != 23 || s.Failed() {
			t.Errorf("%s event = %+v, want SIGURG (23) to pid %d", m, s, os.Getpid())
		}
	}
	var group []int32
	for _, e := range evs {
		if e.Kind == event.KindSignal && int32(e.TargetPID()) <= 0 {
			group = append(group, int32(e.TargetPID()))
		}
	}
	if want := []int32{0, -int32(syscall.Getpgrp())}; !slices.Equal(group, want) {
		t.Errorf("signals to polygraph's process group: targets %v, want %v", group, want)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == event.KindSignal {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d signal events, want 5 (none from the child pid namespace)", n)
	}
	f := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindOpen && e.Path == filepath.Join(dir, "p") && e.Object != nil
	})
	if f == nil || f.FileType() != "fifo" {
		t.Errorf("open of the FIFO = %+v, want file_type fifo", f)
	}
}

// TestFlagsCannotForgeMarkers: the bits the records use as markers
// (BY_HANDLE on an open, LINK_SYMBOLIC on a link) cannot come from the
// process. open(2) ignores unknown flags, so an ordinary open through a
// symlink with bit 30 set must still be an open through a symlink, with
// the path asked for beside the real one, not an open_by_handle_at with
// none; a linkat with bit 31 set (refused) is a hard link's attempt, its
// target resolved, not a symlink's text.
func TestFlagsCannotForgeMarkers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pl := plantCredentials(t)
	work := filepath.Join(pl.jail, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(pl.path, filepath.Join(work, "notes")); err != nil {
		t.Fatal(err)
	}
	_, evs := recordWith(t, Options{Command: []string{self, "__openflags", "notes", "0x40000000", "0x80000000"}, Dir: work})
	notes := filepath.Join(work, "notes")
	open := find(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == pl.path })
	if open == nil {
		t.Fatal("the read through the symlink is not recorded with the credential's path")
	}
	if open.PathRequested() != notes || open.PathDiffers() != "symlink" {
		t.Errorf("open recorded as requested %q differs %q, want %q, symlink (bit 30 of the flags must not make it a by-handle open)",
			open.PathRequested(), open.PathDiffers(), notes)
	}
	link := find(evs, func(e *event.Event) bool { return e.Kind == event.KindLink && e.Path == notes+".lnk" })
	if link == nil {
		t.Fatal("the linkat is not recorded")
	}
	if link.Flags != nil || link.Path2 != notes {
		t.Errorf("linkat recorded with flags %v and target %q, want a hard link's, target %q", link.Flags, link.Path2, notes)
	}
}

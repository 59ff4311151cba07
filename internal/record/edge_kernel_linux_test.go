package record

// The kernel-tier tests of the channels that cross the tree's edge with
// no connect(2) to name the other side (bpf/edge.h): a FIFO to a process
// outside the tree, reads of an outside process's memory, datagrams to a
// Unix socket's path. Each is a real program (testdata/tricks.c) run
// under the sensor, the outside side started by the test before the run.

import (
	"fmt"
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
	"github.com/polygraph/polygraph/internal/session"
)

// TestFIFOOutsidePeer: a process of the tree writes a secret to a FIFO
// that a process outside the tree reads, five times with the reader's
// open first (it blocks until the writer opens; the writes half a second
// apart) and, at the same time on another FIFO, five times with the
// writer's first (the reader opens 1.5 s after its last close, the
// writer 0.1 s after its last write: long enough for the reader to have
// seen the end of the last one, so each write has its own pairing). Both
// opens return at about the same time; whichever returns second sends
// the peer event, so every write must have one, for the writer's image,
// naming the reader.
func TestFIFOOutsidePeer(t *testing.T) {
	dir, bin := buildTricks(t)
	const n = 5
	type order struct {
		name, fifo, out string
		reader          int
		delayMS         int    // the reader waits this long before each open
		pause           string // the writer waits this long before each
	}
	orders := []*order{{name: "reader first", pause: "0.5"}, {name: "writer first", delayMS: 1500, pause: "0.3"}}
	var sb strings.Builder
	for i, o := range orders {
		o.fifo = filepath.Join(dir, fmt.Sprintf("fifo%d", i))
		o.out = filepath.Join(dir, fmt.Sprintf("read%d", i))
		if err := syscall.Mkfifo(o.fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		o.reader = outside(t, bin, "fiforead", o.fifo, o.out, fmt.Sprint(n), fmt.Sprint(o.delayMS)).Process.Pid
		amp := " &"
		if i == len(orders)-1 {
			amp = ""
		}
		fmt.Fprintf(&sb, "(for i in 1 2 3 4 5; do sleep %s; echo secret$i > %s; done)%s\n", o.pause, o.fifo, amp)
	}
	sb.WriteString("wait\n")
	_, evs := recordScript(t, dir, sb.String(), 0)
	for _, o := range orders {
		t.Run(o.name, func(t *testing.T) {
			if b, _ := os.ReadFile(o.out); strings.Count(string(b), "secret") != n {
				t.Fatalf("the outside reader got %q, want %d secrets", b, n)
			}
			var writes, peers []*event.Event
			for _, e := range evs {
				if e.Path != o.fifo {
					continue
				}
				switch {
				case e.Kind == event.KindOpen && strings.Contains(e.Access, "write") && !e.Failed():
					writes = append(writes, e)
				case e.Kind == event.KindPeer:
					if e.PeerPID() != uint32(o.reader) || e.PeerExe() != bin || e.PeerInTree() == nil || *e.PeerInTree() ||
						e.Access != "read" || e.FileType() != "fifo" || e.Ino() != statID(t, o.fifo).ino {
						t.Errorf("peer event = %+v %+v %+v, want reader %d %s outside, read, fifo", e, e.Network, e.Object, o.reader, bin)
					}
					peers = append(peers, e)
				}
			}
			if len(writes) != n {
				t.Fatalf("%d opens of %s for writing recorded, want %d", len(writes), o.fifo, n)
			}
			if len(peers) != n {
				t.Errorf("%d peer events for %d writes, want one each (the second open to see the pairing stays quiet)", len(peers), n)
			}
			// The writes are 500 ms apart: each one's peer event is the
			// one of its image within 100 ms of its open.
			for i, w := range writes {
				if !slices.ContainsFunc(peers, func(p *event.Event) bool {
					return p.ExecID == w.ExecID && p.PID == w.PID && p.TS.Sub(w.TS).Abs() < 100*time.Millisecond
				}) {
					t.Errorf("write %d (at %s) has no peer event; %d peer events in all", i+1, w.TS.Format("15:04:05.000"), len(peers))
				}
			}
		})
	}
}

// TestMemReadOutside: reads of an outside process's memory are recorded
// with the target, which stays outside (its later reads are not
// recorded); a ptrace attach adopts it, and then its peeks and register
// reads are memreads of a process in the tree, the register write an
// inject, each request once however many times it was made. The target's
// executable is walked in the kernel at the call, so a target killed at
// once is still named.
func TestMemReadOutside(t *testing.T) {
	dir, bin := buildTricks(t)
	type victim struct {
		mode, method string
		pid          int
		addr         string
	}
	// vmreadkill kills its target right after the read: the target's
	// executable is on record only as the kernel walked it at the call.
	victims := []*victim{{mode: "vmread", method: "process_vm_readv"}, {mode: "procmemread", method: "proc_mem"},
		{mode: "vmreadkill", method: "process_vm_readv"}, {mode: "peek", method: "ptrace_peekdata"}}
	var sb strings.Builder
	for i, v := range victims {
		af := filepath.Join(dir, fmt.Sprintf("addr%d", i))
		after := filepath.Join(dir, fmt.Sprintf("after%d", i))
		if err := os.WriteFile(after, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := startVictim(t, bin, af, after)
		v.pid = cmd.pid
		v.addr = cmd.addr
		fmt.Fprintf(&sb, "%s %s %d %s || echo %s failed >&2\n", bin, v.mode, v.pid, v.addr, v.mode)
	}
	sb.WriteString("sleep 0.3\n")
	_, evs := recordWith(t, Options{Command: []string{"sh", "-c", sb.String()}, Dir: dir, KeepCaps: true})
	for _, v := range victims[:3] {
		t.Run(v.mode, func(t *testing.T) {
			r := find(evs, func(e *event.Event) bool {
				return e.Kind == event.KindMemRead && e.Method() == v.method && e.TargetPID() == uint32(v.pid)
			})
			if r == nil {
				t.Fatalf("no memread %s of pid %d", v.method, v.pid)
			}
			if r.Failed() || r.Adopted() || r.TargetExecID() != "" || r.TargetInTree() == nil || *r.TargetInTree() || r.TargetExe() != bin {
				t.Errorf("memread = %+v %+v, want one that worked on %s outside the tree, not adopted", r, r.Call, bin)
			}
			if e := find(evs, func(e *event.Event) bool { return e.PID == uint32(v.pid) }); e != nil {
				t.Errorf("the target's own %s was recorded: a read adopted it", e.Kind)
			}
		})
	}
	t.Run("ptrace", func(t *testing.T) {
		v := victims[3]
		count := map[string]int{}
		for _, e := range evs {
			if (e.Kind == event.KindMemRead || e.Kind == event.KindInject) && e.TargetPID() == uint32(v.pid) {
				count[string(e.Kind)+" "+e.Method()]++
				if e.Kind == event.KindMemRead && (e.TargetInTree() == nil || !*e.TargetInTree() || e.TargetExecID() == "") {
					t.Errorf("%s after the attach = %+v, want a target in the tree (adopted)", e.Method(), e.Call)
				}
			}
		}
		want := map[string]int{"inject ptrace_attach": 1, "memread ptrace_peekdata": 1, "memread ptrace_peekuser": 1,
			"memread ptrace_getregset": 1, "inject ptrace_setregset": 1}
		for k, n := range want {
			if count[k] != n {
				t.Errorf("%d %s events, want %d (all: %v)", count[k], k, n, count)
			}
		}
	})
}

// victimProc is a process of testdata/tricks.c's victim mode.
type victimProc struct {
	pid  int
	addr string // its flag's address
}

// startVictim starts `tricks victim ADDRFILE AFTER` outside the tree and
// waits for it to write its flag's address.
func startVictim(t *testing.T, bin, addrFile, after string) victimProc {
	t.Helper()
	cmd := exec.Command(bin, "victim", addrFile, after)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var f []string
	for deadline := time.Now().Add(5 * time.Second); len(f) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, _ := os.ReadFile(addrFile)
		f = strings.Fields(string(b))
	}
	if len(f) < 2 {
		t.Fatalf("victim %d wrote no address", cmd.Process.Pid)
	}
	return victimProc{pid: cmd.Process.Pid, addr: f[0]}
}

// TestUnixDatagramPath: datagrams sent from an unconnected Unix socket
// name the path they went to, once per process image and path, however the
// sender pads the address: other bytes after the path's NUL and another
// length on each send are the same destination (they made a new security
// record each, a way to fill that ring).
func TestUnixDatagramPath(t *testing.T) {
	dir, bin := buildTricks(t)
	sock := filepath.Join(dir, "d.sock")
	outside(t, bin, "unixdgramrecv", sock)
	_, evs := recordScript(t, dir, fmt.Sprintf("%s unixdgram %s 5 again", bin, sock), 0)
	var sends []*event.Event
	for _, e := range evs {
		if e.Kind == event.KindSend && e.Comm == "tricks" {
			sends = append(sends, e)
		}
	}
	if len(sends) != 2 {
		t.Fatalf("%d send events, want 2 (the first of six datagrams to one path, by each of two images of one pid)", len(sends))
	}
	for _, s := range sends {
		if s.Family() != "unix" || s.Addr() != sock || !s.AddrUser() || s.Result == nil || *s.Result != 6 {
			t.Errorf("send = %+v %+v, want unix %s addr_user, 6 bytes", s, s.Network, sock)
		}
	}
	if sends[0].PID != sends[1].PID || sends[0].ExecID == sends[1].ExecID {
		t.Errorf("sends by pid %d exec %s and pid %d exec %s, want one pid, two images",
			sends[0].PID, sends[0].ExecID, sends[1].PID, sends[1].ExecID)
	}
}

// TestProcMemPathOpenIsNoCall: an O_PATH open of another process's
// /proc/PID/mem (with O_WRONLY, which O_PATH ignores) can neither read nor
// write it. The call is judged by how the kernel opened the file, not the
// flags passed: no inject, no memread, and the target is not adopted.
func TestProcMemPathOpenIsNoCall(t *testing.T) {
	dir, bin := buildTricks(t)
	after := filepath.Join(dir, "after")
	if err := os.WriteFile(after, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	v := startVictim(t, bin, filepath.Join(dir, "addr"), after)
	script := fmt.Sprintf("%s procmempath %d || echo procmempath failed >&2\nsleep 0.3\n", bin, v.pid)
	_, evs := recordWith(t, Options{Command: []string{"sh", "-c", script}, Dir: dir, KeepCaps: true})
	if find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindOpen && e.Comm == "tricks" && e.Result != nil && *e.Result >= 0
	}) == nil {
		t.Fatal("the O_PATH open was not recorded as a successful open")
	}
	for _, e := range evs {
		if (e.Kind == event.KindInject || e.Kind == event.KindMemRead) && e.TargetPID() == uint32(v.pid) {
			t.Errorf("%s %s of pid %d from an O_PATH descriptor", e.Kind, e.Method(), v.pid)
		}
		if e.PID == uint32(v.pid) {
			t.Fatalf("the target's own %s was recorded: the O_PATH open adopted it", e.Kind)
		}
	}
}

// TestPidfdGetfdSecret: a process of the tree takes an outside process's
// open credential file with pidfd_getfd(2), naming no path, and reads it.
// The open is recorded as one: the file the kernel handed over (path and
// identity), asked for as /proc/PID/fd/N, how its owner opened it, and
// sensitive-read is raised.
func TestPidfdGetfdSecret(t *testing.T) {
	dir, bin := buildTricks(t)
	p := plantCredentials(t)
	holder := outside(t, bin, "holdfd", p.path, "77")
	// The tree keeps its capabilities: a root tree without them may not
	// take a file from a process that has them (an unprivileged agent
	// may, from any process of its user).
	_, evs := recordWith(t, Options{Command: []string{bin, "getfd", strconv.Itoa(holder.Process.Pid), "77"}, Dir: dir, KeepCaps: true})
	took := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindOpen && e.Comm == "tricks" && e.Object != nil && e.Object.PathDiffers == "pidfd_getfd"
	})
	if took == nil {
		t.Fatal("no open recorded for the pidfd_getfd")
	}
	want := fmt.Sprintf("/proc/%d/fd/77", holder.Process.Pid)
	if took.Path != p.path || took.Object.Ino != p.ino || took.Object.PathRequested != want ||
		took.Result == nil || *took.Result < 0 || took.Access != "read" {
		t.Errorf("open = path %q ino %d requested %q result %v access %q, want %s ino %d requested %s, a fd, read",
			took.Path, took.Object.Ino, took.Object.PathRequested, took.Result, took.Access, p.path, p.ino, want)
	}
	if !highSensitiveRead(evs, session.Meta{Home: p.home}, "") {
		t.Error("no high sensitive-read for the taken credential file")
	}
}

// TestPidfdOpenRefused: a pidfd_open the kernel refuses (a pid no
// process has: in an isolated session, one outside its PID namespace) is
// recorded as a failed open of the process, /proc/PID, with ESRCH; one
// that works is not recorded (what the pidfd is then used for is).
func TestPidfdOpenRefused(t *testing.T) {
	dir, bin := buildTricks(t)
	const gone = 4194000 // above any pid_max: no process has it
	self := "$$"
	_, evs := recordWith(t, Options{Command: []string{"sh", "-c",
		fmt.Sprintf("%s getfd %d 3; %s getfd %s 999; true", bin, gone, bin, self)}, Dir: dir, KeepCaps: true})
	want := fmt.Sprintf("/proc/%d", gone)
	refused := find(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == want })
	if refused == nil {
		t.Fatalf("no open of %s recorded for the refused pidfd_open", want)
	}
	if refused.Comm != "tricks" || refused.Result == nil || *refused.Result != -3 {
		t.Errorf("refused pidfd_open = comm %q result %v, want tricks, -3 (ESRCH)", refused.Comm, refused.Result)
	}
	for _, e := range evs {
		if e.Kind == event.KindOpen && e.Comm == "tricks" && e.Result != nil && *e.Result >= 0 &&
			strings.HasPrefix(e.Path, "/proc/") && !strings.Contains(e.Path, "/fd/") {
			t.Errorf("a pidfd_open that worked was recorded: %s", e.Path)
		}
	}
}

// TestSCMRightsSecret: an outside process hands the tree a pipe's end, an
// ordinary file and an SSH key (a file directly in the guarded ~/.ssh) in
// one SCM_RIGHTS message over a Unix socket; the tree reads all three.
// The key is recorded as an open of it, no path named (path_differs
// scm_rights), with its identity, and sensitive-read is raised; neither
// the pipe (no file) nor the decoy before the key is the one on record.
func TestSCMRightsSecret(t *testing.T) {
	dir, bin := buildTricks(t)
	pl := plantCredentials(t)
	key := filepath.Join(pl.home, ".ssh", "id_rsa")
	if err := os.MkdirAll(filepath.Dir(key), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nplanted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	decoy := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(decoy, []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := planted{home: pl.home, path: key, ino: statID(t, key).ino}
	sock := filepath.Join(dir, "fd.sock")
	outside(t, bin, "fdserver", sock, p.path, decoy)
	_, evs := recordWith(t, Options{Command: []string{bin, "recvfd", sock}, Dir: dir,
		Env: []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}})
	var got []*event.Event
	for _, e := range evs {
		if e.Kind == event.KindOpen && e.Comm == "tricks" && e.Object != nil && e.Object.PathDiffers == "scm_rights" {
			got = append(got, e)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d received-file opens, want 1 (the key: not the pipe, not the decoy)", len(got))
	}
	r := got[0]
	if r.Path != p.path || r.Object.Ino != p.ino || r.Object.PathRequested != "" || r.Result == nil || *r.Result < 0 || r.Access != "read" {
		t.Errorf("received = path %q ino %d requested %q result %v access %q, want %s ino %d, nothing requested, an fd, read",
			r.Path, r.Object.Ino, r.Object.PathRequested, r.Result, r.Access, p.path, p.ino)
	}
	if !highSensitiveRead(evs, session.Meta{Home: p.home}, "") {
		t.Error("no high sensitive-read for the received key")
	}
}

// TestFollowOutside: a process outside the tree that the tree reaches
// acts for it, and what it does is recorded. A daemon on a Unix stream
// socket and one on a datagram socket each open the file a process of
// the tree names in its message; a watcher's child reads the file the
// tree rewrote (written under another name and renamed into place), then
// another file. Each is followed from the moment it received the message
// or opened the tree's file (a follow event naming the asker), and the
// opens that follow are recorded in an image whose parent is the asker's.
func TestFollowOutside(t *testing.T) {
	dir, bin := buildTricks(t)
	secret1, secret2, after := filepath.Join(dir, "secret1"), filepath.Join(dir, "secret2"), filepath.Join(dir, "after")
	watched := filepath.Join(dir, "build.sh")
	for _, p := range []string{secret1, secret2, after, watched} {
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ssock, dsock := filepath.Join(dir, "s.sock"), filepath.Join(dir, "d.sock")
	stream := outside(t, bin, "unixserve", ssock).Process.Pid
	dgram := outside(t, bin, "dgramserve", dsock).Process.Pid
	watcher := outside(t, bin, "watchread", watched, after).Process.Pid
	script := fmt.Sprintf("%s unixask %s %s\n%s dgramask %s %s\nsleep 0.2\necho 'echo rebuilt' > %s.new; mv %[7]s.new %[7]s\nsleep 0.5\n",
		bin, ssock, secret1, bin, dsock, secret2, watched)
	_, evs := recordScript(t, dir, script, 0)

	byExec := map[string]*event.Event{}
	for _, e := range evs {
		if e.Kind == event.KindExec {
			byExec[e.ExecID] = e
		}
	}
	for _, c := range []struct {
		name, method, file string
		pid                int // the followed process (the watcher's is its child)
		askerComm          string
	}{
		{"stream", "unix_stream", secret1, stream, "tricks"},
		{"datagram", "unix_dgram", secret2, dgram, "tricks"},
		{"file", "file", after, 0, "mv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := find(evs, func(e *event.Event) bool {
				return e.Kind == event.KindFollow && e.Method() == c.method && (c.pid == 0 || e.PID == uint32(c.pid))
			})
			if f == nil {
				t.Fatalf("no follow event by %s for pid %d", c.method, c.pid)
			}
			if c.pid == 0 && f.PPID != uint32(watcher) {
				t.Errorf("followed pid %d has parent %d, want the watcher %d", f.PID, f.PPID, watcher)
			}
			if f.TargetExecID() == "" || f.ParentExecID != f.TargetExecID() || f.TargetPID() == 0 {
				t.Errorf("follow = %+v %+v: want the asker as parent", f, f.Call)
			}
			// The asker: the tree's process that sent the message (an
			// exec of tricks) or, for the file, wrote it (the shell's
			// redirection, before mv).
			if a := byExec[f.TargetExecID()]; c.method != "file" && (a == nil || a.Comm != c.askerComm) {
				t.Errorf("asker %s is %+v, want an exec of %s", f.TargetExecID(), a, c.askerComm)
			}
			// The exe is read from /proc when the record is decoded: the
			// watcher's child may be gone by then, its comm stays.
			if f.Comm != "tricks" || f.TargetExe() != bin && (c.method != "file" || f.TargetExe() != "") {
				t.Errorf("followed %q exe %q, want tricks %s", f.Comm, f.TargetExe(), bin)
			}
			o := find(evs, func(e *event.Event) bool {
				return e.Kind == event.KindOpen && e.PID == f.PID && e.Path == c.file && e.ExecID == f.ExecID
			})
			if o == nil {
				t.Fatalf("the followed process's open of %s is not recorded in its followed image %s", c.file, f.ExecID)
			}
			if o.ParentExecID != f.TargetExecID() {
				t.Errorf("open's parent image %s, want the asker's %s", o.ParentExecID, f.TargetExecID())
			}
		})
	}
}

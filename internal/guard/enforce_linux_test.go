package guard

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/testenv"
)

// TestKillRules: an exec of a denied binary and a write to a denied path
// kill the process with SIGKILL (status 137 from sh) before it does what
// it asked for, and the kill is recorded; a process outside the session
// doing the same is left alone.
func TestKillRules(t *testing.T) {
	dir, err := os.MkdirTemp("", "guard-kill-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	denied := filepath.Join(dir, "denied-tool")
	echo, err := os.ReadFile("/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(denied, echo, 0o755); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "rc")
	persist := filepath.Join(dir, "autostart")
	if err := os.Mkdir(persist, 0o777); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rc-link")
	if err := os.WriteFile(rc, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(rc, 0o666)
	os.Chmod(persist, 0o777)
	s := start(t, Options{Kill: &Kill{Exec: []string{denied}, Write: []string{rc, persist}}})
	for _, tt := range []struct {
		name, script, what, rule, rcAfter string
	}{
		// The exec happened, the new image died before printing.
		{"exec", denied + " RAN", "exec", denied, "ORIGINAL\n"},
		// Appending: killed on the way out of the open, nothing written.
		{"append", "echo EVIL >> " + rc, "write", rc, "ORIGINAL\n"},
		// Through a hard link: the same inode.
		{"hard link", "echo EVIL >> " + link, "write", rc, "ORIGINAL\n"},
		// O_TRUNC: the open truncated the file before the kill (documented).
		{"truncate", "echo EVIL > " + rc, "write", rc, ""},
		{"below a directory", "echo EVIL > " + persist + "/x.desktop", "write", persist, "ORIGINAL\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(link)
			if err := os.WriteFile(rc, []byte("ORIGINAL\n"), 0o666); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(rc, link); err != nil {
				t.Fatal(err)
			}
			code, out := run(t, s, nobody, nil, "sh", "-c", "sh -c '"+tt.script+"'; echo status $?")
			if !strings.Contains(out, "status 137") || strings.Contains(out, "RAN") {
				t.Errorf("exit %d, output %q; want the inner sh killed (status 137)", code, out)
			}
			if b, _ := os.ReadFile(rc); string(b) != tt.rcAfter {
				t.Errorf("rc is %q after the kill, want %q", b, tt.rcAfter)
			}
			k, err := s.Kills()
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, x := range k {
				found = found || x.What == tt.what && x.Path == tt.rule
			}
			if !found {
				t.Errorf("kills %+v, want %s of %s", k, tt.what, tt.rule)
			}
		})
	}
	// The same exec outside the session runs.
	if out, err := exec.Command(denied, "RAN").CombinedOutput(); err != nil || !strings.Contains(string(out), "RAN") {
		t.Errorf("outside the session: %v %q, want it to run", err, out)
	}
	// A read of a denied path is no match.
	if code, out := run(t, s, nobody, nil, "cat", rc); code != 0 || out != "ORIGINAL\n" {
		t.Errorf("read: exit %d %q", code, out)
	}
}

// TestExecGate: every exec of the tree is stopped until the gate says;
// the one it refuses is killed before it prints anything. It logs the
// added latency per exec (indicative, not asserted).
func TestExecGate(t *testing.T) {
	var judged atomic.Int32
	gate := func(ctx context.Context, pid uint32) (bool, string, string) {
		judged.Add(1)
		p, _ := os.Readlink("/proc/" + itoa(pid) + "/exe")
		if filepath.Base(p) == "false" {
			return false, p, "modified"
		}
		return true, p, "verified"
	}
	s := start(t, Options{Gate: gate})
	code, out := run(t, s, nobody, nil, "sh", "-c", "echo one; /bin/false; echo status $?")
	if code != 0 || !strings.Contains(out, "one") || !strings.Contains(out, "status 137") {
		t.Errorf("exit %d, %q; want echo to run and false killed", code, out)
	}
	if judged.Load() < 2 {
		t.Errorf("gate judged %d execs, want the helper's, sh's and false's", judged.Load())
	}
	// Latency: n execs of true under the gate against n without a session.
	const n = 50
	loop := "i=0; while [ $i -lt " + itoa(n) + " ]; do /bin/true; i=$((i+1)); done"
	t0 := time.Now()
	run(t, s, nobody, nil, "sh", "-c", loop)
	gated := time.Since(t0)
	t0 = time.Now()
	exec.Command("sh", "-c", loop).Run()
	bare := time.Since(t0)
	t.Logf("exec gate: %d execs in %v gated, %v bare: %v added per exec (indicative)", n, gated, bare, (gated-bare)/n)
	var sum time.Duration
	g := s.Gated()
	for _, x := range g {
		sum += x.Wait
	}
	if len(g) > 0 {
		t.Logf("exec gate: mean stop-to-verdict %v over %d execs", sum/time.Duration(len(g)), len(g))
	}
}

func itoa[T ~uint32 | ~int](n T) string { return strconv.Itoa(int(n)) }

// python3 is Debian's, which the unprivileged tree can run (a PATH
// lookup may find root's own).
const python3 = "/usr/bin/python3"

// TestUnixPeerGate: a Unix stream connect of the tree that reached a
// listener outside the session stops the caller before it can send and
// asks UnixPeer: refused, the caller dies (status 137) and the listener
// reads nothing; allowed, the bytes arrive. A listener inside the session
// is never asked about.
func TestUnixPeerGate(t *testing.T) {
	if _, err := os.Stat(python3); err != nil {
		t.Skip("/usr/bin/python3 drives the Unix client and the in-session server")
	}
	dir, err := os.MkdirTemp("", "guard-unix-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	sock := filepath.Join(dir, "outside.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	os.Chmod(sock, 0o777)
	got := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			b, _ := io.ReadAll(c)
			c.Close()
			got <- string(b)
		}
	}()
	var allow atomic.Bool
	var allowOnly atomic.Uint32 // when set, the one peer allowed
	var asked atomic.Int32
	var askedPeer atomic.Uint32
	s := start(t, Options{UnixPeer: func(pid, peer uint32) (bool, string) {
		asked.Add(1)
		askedPeer.Store(peer)
		exe, _ := os.Readlink("/proc/" + itoa(peer) + "/exe")
		if only := allowOnly.Load(); only != 0 {
			return peer == only, exe
		}
		return allow.Load(), exe
	}})
	client := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"REQUEST"); s.close(); print("SENT")`

	t.Run("refused", func(t *testing.T) {
		code, out := run(t, s, nobody, nil, "sh", "-c", python3+` -c '`+client+`' `+sock+`; echo status $?`)
		if !strings.Contains(out, "status 137") || strings.Contains(out, "SENT") {
			t.Errorf("exit %d, %q; want the client killed before it sent", code, out)
		}
		select {
		case b := <-got:
			if b != "" {
				t.Errorf("the listener outside read %q from a refused client", b)
			}
		case <-time.After(5 * time.Second):
			t.Error("the listener never saw the connection")
		}
		if askedPeer.Load() != uint32(os.Getpid()) {
			t.Errorf("asked about peer %d, want the listener, %d", askedPeer.Load(), os.Getpid())
		}
		k, err := s.Kills()
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, x := range k {
			found = found || x.What == "unix" && x.Target == uint32(os.Getpid()) && x.Path != ""
		}
		if !found {
			t.Errorf("kills %+v, want a unix kill naming pid %d and its executable", k, os.Getpid())
		}
	})
	t.Run("allowed", func(t *testing.T) {
		allow.Store(true)
		defer allow.Store(false)
		code, out := run(t, s, nobody, nil, python3, "-c", client, sock)
		if code != 0 || !strings.Contains(out, "SENT") {
			t.Errorf("exit %d, %q; want the allowed client to send", code, out)
		}
		select {
		case b := <-got:
			if b != "REQUEST" {
				t.Errorf("the listener read %q, want REQUEST", b)
			}
		case <-time.After(5 * time.Second):
			t.Error("the listener never saw the allowed connection")
		}
	})
	// Socket activation: the process that listened (allowed) hands the
	// listening socket to another that serves (refused): every holder is
	// judged.
	t.Run("socket activation", func(t *testing.T) {
		var u utsname
		if unix.Uname((*unix.Utsname)(&u)) == nil && !kernelAtLeast(u.release(), 6, 10) {
			t.Skip("the kernel names an embryo's listener from 6.10")
		}
		asock := filepath.Join(dir, "activated.sock")
		al, err := net.Listen("unix", asock)
		if err != nil {
			t.Fatal(err)
		}
		defer al.Close()
		os.Chmod(asock, 0o777)
		lf, err := al.(*net.UnixListener).File()
		if err != nil {
			t.Fatal(err)
		}
		server := exec.Command("sleep", "30")
		server.ExtraFiles = []*os.File{lf}
		if err := server.Start(); err != nil {
			t.Fatal(err)
		}
		lf.Close()
		defer func() { server.Process.Kill(); server.Wait() }()
		allowOnly.Store(uint32(os.Getpid()))
		defer allowOnly.Store(0)
		code, out := run(t, s, nobody, nil, "sh", "-c", python3+` -c '`+client+`' `+asock+`; echo status $?`)
		if !strings.Contains(out, "status 137") || strings.Contains(out, "SENT") {
			t.Errorf("exit %d, %q; want the client killed: the socket's server is not allowed", code, out)
		}
		k, _ := s.Kills()
		found := false
		for _, x := range k {
			found = found || x.What == "unix" && x.Target == uint32(server.Process.Pid)
		}
		if !found {
			t.Errorf("kills %+v, want one naming the server, pid %d", k, server.Process.Pid)
		}
	})

	// A named FIFO whose reader is outside the session (a helper that
	// answers what is written to it): the writer is killed before it
	// writes, unless allowed.
	fifo := filepath.Join(dir, "req.fifo")
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(fifo, 0o666)
	readFIFO := func() chan string {
		ch := make(chan string, 1)
		go func() {
			f, err := os.Open(fifo) // blocks until a writer opens
			if err != nil {
				ch <- "error: " + err.Error()
				return
			}
			b, _ := io.ReadAll(f)
			f.Close()
			ch <- string(b)
		}()
		return ch
	}
	fifoCase := func(t *testing.T, allowed bool) {
		allow.Store(allowed)
		defer allow.Store(false)
		askedPeer.Store(0)
		ch := readFIFO()
		time.Sleep(100 * time.Millisecond) // the reader waits in its open
		code, out := run(t, s, nobody, nil, "sh", "-c", `sh -c 'echo REQUEST > `+fifo+`'; echo status $?`)
		var got string
		select {
		case got = <-ch:
		case <-time.After(5 * time.Second):
			t.Fatal("the reader outside never returned")
		}
		if askedPeer.Load() != uint32(os.Getpid()) {
			t.Errorf("asked about %d, want the reader outside, %d (exit %d, %q)", askedPeer.Load(), os.Getpid(), code, out)
		}
		if allowed {
			if !strings.Contains(out, "status 0") || got != "REQUEST\n" {
				t.Errorf("allowed: %q, the reader got %q", out, got)
			}
			return
		}
		if !strings.Contains(out, "status 137") || got != "" {
			t.Errorf("refused: %q, the reader got %q; want the writer killed before it wrote", out, got)
		}
		k, _ := s.Kills()
		found := false
		for _, x := range k {
			found = found || x.What == "fifo" && x.Target == uint32(os.Getpid())
		}
		if !found {
			t.Errorf("kills %+v, want a fifo kill naming pid %d", k, os.Getpid())
		}
	}
	t.Run("fifo refused", func(t *testing.T) { fifoCase(t, false) })
	// creat(2) of the FIFO writes to it as an open does.
	if runtime.GOARCH == "amd64" {
		t.Run("fifo by creat refused", func(t *testing.T) {
			askedPeer.Store(0)
			ch := readFIFO()
			time.Sleep(100 * time.Millisecond)
			creat := `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.syscall(85, sys.argv[1].encode(), 0o644)
os.write(fd, b"CREAT"); print("WROTE")`
			code, out := run(t, s, nobody, nil, "sh", "-c", python3+` -c '`+creat+`' `+fifo+`; echo status $?`)
			var got string
			select {
			case got = <-ch:
			case <-time.After(5 * time.Second):
				t.Fatal("the reader outside never returned")
			}
			if !strings.Contains(out, "status 137") || got != "" || code != 0 {
				t.Errorf("creat of the FIFO: exit %d, %q, the reader got %q; want the writer killed before it wrote", code, out, got)
			}
		})
	}
	// An O_PATH descriptor of the FIFO reads and writes nothing.
	t.Run("fifo O_PATH", func(t *testing.T) {
		code, out := run(t, s, nobody, nil, python3, "-c", `import os, sys; os.open(sys.argv[1], os.O_PATH); print("PATHOK")`, fifo)
		if code != 0 || !strings.Contains(out, "PATHOK") {
			t.Errorf("O_PATH open of the FIFO: exit %d, %q; want it left alone", code, out)
		}
	})
	t.Run("fifo allowed", func(t *testing.T) { fifoCase(t, true) })

	t.Run("inside the session", func(t *testing.T) {
		before := asked.Load()
		inside := filepath.Join(dir, "inside.sock")
		server := `import socket,sys
l=socket.socket(socket.AF_UNIX); l.bind(sys.argv[1]); l.listen(1); open(sys.argv[1]+".ready","w").close()
c,_=l.accept(); print("GOT", c.recv(64).decode())`
		script := python3 + ` -c '` + server + `' ` + inside + ` & while [ ! -e ` + inside + `.ready ]; do sleep 0.05; done; ` + python3 + ` -c '` + client + `' ` + inside + `; wait`
		code, out := run(t, s, nobody, nil, "sh", "-c", script)
		if code != 0 || !strings.Contains(out, "SENT") || !strings.Contains(out, "GOT") || !strings.Contains(out, "REQUEST") {
			t.Errorf("exit %d, %q; want the session's own server reached", code, out)
		}
		// The session's own FIFO, both ends in the tree; and pipes
		// opened by name (/dev/stdin, process substitution) are no FIFO.
		own := filepath.Join(dir, "own.fifo")
		code, out = run(t, s, nobody, nil, "bash", "-c", `mkfifo `+own+` && { cat `+own+` & echo PIPED > `+own+`; wait; } && echo ok | cat /dev/stdin && cat <(echo subst)`)
		if code != 0 || !strings.Contains(out, "PIPED") || !strings.Contains(out, "ok") || !strings.Contains(out, "subst") {
			t.Errorf("exit %d, %q; want the session's own FIFO and pipes to work", code, out)
		}
		if n := asked.Load() - before; n != 0 {
			t.Errorf("UnixPeer asked %d times about the session's own listener", n)
		}
	})
}

// TestNoIOUring: with NoIOUring the tree's io_uring_setup fails with
// ENOSYS (38), as root and as a user, and a setuid-free shell still runs;
// outside the session, and in a session without it, io_uring works.
func TestNoIOUring(t *testing.T) {
	if _, err := os.Stat(python3); err != nil {
		t.Skip("/usr/bin/python3 makes the io_uring_setup call")
	}
	probe := `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
p = ctypes.create_string_buffer(120)
r = libc.syscall(425, 4, p)
print("setup", r, ctypes.get_errno())`
	outside, err := exec.Command(python3, "-c", probe).CombinedOutput()
	if err != nil || !strings.HasPrefix(string(outside), "setup ") || strings.HasPrefix(string(outside), "setup -1") {
		testenv.Feature(t, "io_uring", fmt.Errorf("io_uring_setup outside any session: %q %v", outside, err))
	}
	s := start(t, Options{NoIOUring: true, PIDNamespace: true})
	for _, uid := range []uint32{0, nobody} {
		code, out := run(t, s, uid, nil, python3, "-c", probe)
		if code != 0 || !strings.Contains(out, "setup -1 38") {
			t.Errorf("uid %d in the session: exit %d, %q; want io_uring_setup to fail with ENOSYS", uid, code, out)
		}
	}
	// A 32-bit call (int 0x80) is another ABI, which the gates and the
	// sensor do not read: refused as a whole.
	if runtime.GOARCH == "amd64" {
		if cc, err := exec.LookPath("cc"); err == nil {
			dir := t.TempDir()
			os.Chmod(dir, 0o755)
			src := filepath.Join(dir, "compat.c")
			os.WriteFile(src, []byte(`#include <stdio.h>
int main(void) { long r; __asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory"); printf("compat %ld\n", r); return 0; }
`), 0o644)
			bin := filepath.Join(dir, "compat")
			if out, err := exec.Command(cc, "-o", bin, src).CombinedOutput(); err != nil {
				t.Fatalf("cc: %v: %s", err, out)
			}
			if out, _ := exec.Command(bin).CombinedOutput(); !strings.HasPrefix(string(out), "compat ") || strings.Contains(string(out), "compat -") {
				t.Logf("int 0x80 outside the session: %q (no IA32 emulation: not checked)", out)
			} else if code, out := run(t, s, 0, nil, bin); code != 0 || !strings.Contains(out, "compat -38") {
				t.Errorf("int 0x80 getpid in the session: exit %d, %q; want -38 (ENOSYS)", code, out)
			}
		}
	}
	plain := start(t, Options{ID: sessionID(t) + "-plain"})
	if code, out := run(t, plain, nobody, nil, python3, "-c", probe); code != 0 || strings.Contains(out, "setup -1") {
		t.Errorf("a session without NoIOUring: exit %d, %q; want io_uring to work", code, out)
	}
}

// utsname is unix.Utsname with its release as a string.
type utsname unix.Utsname

func (u *utsname) release() string {
	b := u.Release[:]
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// kernelAtLeast reports whether release (uname -r) is major.minor or later.
func kernelAtLeast(release string, major, minor int) bool {
	var a, b int
	fmt.Sscanf(release, "%d.%d", &a, &b)
	return a > major || a == major && b >= minor
}

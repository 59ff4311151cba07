package guard

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

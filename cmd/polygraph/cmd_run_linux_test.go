package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// polygraphCmd returns the test binary set up to act as polygraph ARGS,
// with its sessions in home.
func polygraphCmd(t *testing.T, home string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), "POLYGRAPH_TEST_MAIN=1", "POLYGRAPH_HOME="+home)
	return cmd
}

func exitCodeOf(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if err == nil {
		return 0
	}
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	t.Fatal(err)
	return -1
}

func TestRunExitStatusAndSummary(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	var stderr bytes.Buffer
	cmd := polygraphCmd(t, home, "run", "--linger", "0s", "--", "sh", "-c", "echo out; exit 7")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if code := exitCodeOf(t, err); code != 7 {
		t.Fatalf("exit = %d, want 7; stderr: %s", code, stderr.String())
	}
	if string(out) != "out\n" {
		t.Errorf("stdout = %q: the command's output must pass through untouched", out)
	}
	for _, want := range []string{"polygraph: session ", "exit 7", "processes", "events "} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, stderr.String())
		}
	}
	// JSON summary on stdout.
	cmd = polygraphCmd(t, home, "run", "--json", "--linger", "0s", "--", "true")
	out, err = cmd.Output()
	if err != nil || !bytes.Contains(out, []byte(`"exit_code": 0`)) || !bytes.Contains(out, []byte(`"lost_total": 0`)) {
		t.Fatalf("run --json: %v\n%s", err, out)
	}
}

// TestRunCommandNotFound: a command that is not there is one line, exit
// 127, and no session (the check comes before loading anything, so it
// needs no root).
func TestRunCommandNotFound(t *testing.T) {
	home := t.TempDir()
	for _, name := range []string{"no-such-command-polygraph", "/no/such/dir/cmd", "./no-such-file"} {
		cmd := polygraphCmd(t, home, "run", "--linger", "0s", "--", name, "arg")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if code := exitCodeOf(t, cmd.Run()); code != 127 {
			t.Fatalf("%s: exit = %d, want 127; stderr %s", name, code, stderr.String())
		}
		if want := "polygraph: " + name + ": command not found (nothing recorded)\n"; stderr.String() != want || stdout.Len() != 0 {
			t.Errorf("%s: stderr %q, stdout %q: want only %q", name, stderr.String(), stdout.String(), want)
		}
	}
	if list, _ := session.List(home); len(list) != 0 {
		t.Errorf("want no session, got %d", len(list))
	}
}

// TestRunReportOut: with --report-out, stdout and stderr carry the
// command's output (and the one line naming the session), the report is
// in the file, JSON with --json.
func TestRunReportOut(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	for _, asJSON := range []bool{false, true} {
		file := filepath.Join(t.TempDir(), "report")
		args := []string{"run", "--linger", "0s", "--report-out", file}
		if asJSON {
			args = append(args, "--json")
		}
		cmd := polygraphCmd(t, home, append(args, "--", "sh", "-c", "echo out; echo err >&2")...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%v: %v; stderr %s", args, err, stderr.String())
		}
		if stdout.String() != "out\n" {
			t.Errorf("%v: stdout %q, want the command's alone", args, stdout.String())
		}
		if lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n"); len(lines) != 2 || lines[1] != "err" ||
			!strings.HasPrefix(lines[0], "polygraph: recording session ") {
			t.Errorf("%v: stderr %q, want the session line and the command's", args, stderr.String())
		}
		rep, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if asJSON && !bytes.HasPrefix(rep, []byte("{")) || !asJSON && !bytes.Contains(rep, []byte("polygraph: session ")) {
			t.Errorf("%v: the report file starts %q", args, rep[:min(len(rep), 40)])
		}
	}
}

func TestUsageErrors(t *testing.T) {
	home := t.TempDir()
	for _, args := range [][]string{{"run", "--no-such-flag", "--", "true"}, {"no-such-verb"}, {"run"},
		{"run", "--on-polygraph-exit=maybe", "--", "true"}, {"run", "--linger=-1s", "--", "true"}} {
		cmd := polygraphCmd(t, home, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if code := exitCodeOf(t, cmd.Run()); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr.String())
		}
		if n := strings.Count(strings.TrimSpace(stderr.String()), "\n"); n != 0 {
			t.Errorf("%v: want one line of error, got:\n%s", args, stderr.String())
		}
	}
}

// TestRunWithoutPrivilege: as an unprivileged user, one clear line,
// exit 1, and no session file.
func TestRunWithoutPrivilege(t *testing.T) {
	testenv.RequireRoot(t) // to become nobody
	// t.TempDir's parent is private to root; nobody needs to get in.
	home, err := os.MkdirTemp("", "polygraph-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	os.Chmod(home, 0o777)
	self, _ := os.Executable()
	// The test binary may sit in a directory nobody cannot enter; copy it.
	bin := filepath.Join(home, "polygraph.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--", "true")
	cmd.Env = []string{"POLYGRAPH_TEST_MAIN=1", "POLYGRAPH_HOME=" + home, "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if code := exitCodeOf(t, cmd.Run()); code != 1 {
		t.Fatalf("exit = %d, want 1 (stderr %q)", code, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "needs root") {
		t.Errorf("want one line naming the privilege needed, got %q", msg)
	}
	if ents, _ := os.ReadDir(filepath.Join(home, "sessions")); len(ents) != 0 {
		t.Errorf("a session was left behind: %v", ents)
	}
}

// TestRunSIGKILLed: polygraph killed with SIGKILL mid-run leaves a session
// that opens, holds what was flushed, and says it was not closed cleanly.
func TestRunSIGKILLed(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	dir := t.TempDir()
	cmd := polygraphCmd(t, home, "run", "--", "sh", "-c", "i=0; while [ $i -lt 400 ]; do i=$((i+1)); echo $i > f$i; sleep 0.01; done")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill it two seconds after the command has written its 50th file
	// (its start-up varies with the machine's load): what the store
	// flushed by then (every 200 ms) must survive.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "f50")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the command wrote no 50 files in 30 s")
		}
	}
	time.Sleep(2 * time.Second)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The traced shell outlives polygraph; stop it.
	exec.Command("pkill", "-f", "while \\[ \\$i -lt 400").Run()

	var out, errb bytes.Buffer
	ev := polygraphCmd(t, home, "events", "last")
	ev.Stdout, ev.Stderr = &out, &errb
	if err := ev.Run(); err != nil {
		t.Fatalf("events on a killed session: %v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "not closed cleanly") {
		t.Errorf("events did not warn: %q", errb.String())
	}
	n := strings.Count(out.String(), "write,create")
	if n < 50 {
		t.Errorf("only %d file writes survived the kill; want at least the 50 written two seconds before it (the store flushes every 200 ms)", n)
	}
	t.Logf("%d writes recorded before SIGKILL", n)
}

// TestRunForwardsInterrupt: without a terminal, SIGINT to polygraph
// reaches the command, and polygraph exits with the command's status.
func TestRunForwardsInterrupt(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	cmd := polygraphCmd(t, home, "run", "--linger", "0s", "--transcript", "none", "--", "sleep", "30")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "recording session") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	start := time.Now()
	code := exitCodeOf(t, cmd.Wait())
	if code != 128+int(syscall.SIGINT) {
		t.Fatalf("exit %d, want 130 (sleep killed by the forwarded SIGINT); stderr:\n%s", code, stderr.String())
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v after SIGINT", time.Since(start))
	}
	if !strings.Contains(stderr.String(), "killed by signal 2") {
		t.Errorf("the report does not say the command was killed by SIGINT:\n%s", stderr.String())
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

package watch

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/findings"

	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// startWatch runs Run in the background with homes watched and returns
// the findings stream and a stop function (t.Cleanup calls it too) that
// checks it ended cleanly.
func startWatch(t *testing.T, store string, homes []string) (<-chan findings.Record, func()) {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan []Target, 1)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Options{Home: store, Homes: homes, Out: pw, Ready: func(ts []Target) { ready <- ts }})
		pw.Close()
	}()
	select {
	case ts := <-ready:
		if len(ts) == 0 {
			t.Fatal("no store watched")
		}
	case err := <-done:
		t.Fatalf("watch: %v", err)
	}
	// watch sees the whole host: other agents' findings come too, and a
	// test reads its own only after stop, so the buffer is large.
	found := make(chan findings.Record, 4096)
	go func() {
		defer close(found)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var f findings.Record
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				t.Errorf("finding line %q: %v", sc.Text(), err)
				continue
			}
			if f.Type == findings.TypeFinding {
				found <- f
			}
		}
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				// The reader is stuck on a full buffer (a host flooding
				// findings): let watch's write fail rather than hang.
				pr.CloseWithError(errors.New("the test stopped reading"))
				err = <-done
			}
			if err != nil && !errors.Is(err, io.ErrClosedPipe) && !strings.Contains(err.Error(), "the test stopped reading") {
				t.Errorf("watch ended with %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return found, stop
}

// TestWatchCatchesOutsider plants ~/.claude/.credentials.json under a
// temp HOME, runs a program installed where Claude Code installs (a copy
// of cat: the profile knows the agent by its install path) reading it and
// Codex's auth.json, then a plain cat reading it: cat's read is flagged in
// the outsiders session and the agent's read of Codex's store in its own,
// by the agent-config-read rule that run uses, and the agent's tree is its
// own watch session.
func TestWatchCatchesOutsider(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	creds := filepath.Join(home, ".claude", ".credentials.json")
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte(`{"token":"planted"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "node_modules", "@anthropic-ai", "claude-code", "claude")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	catPath, err := exec.LookPath("cat")
	if err != nil {
		t.Skip("no cat")
	}
	b, err := os.ReadFile(catPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	codexAuth := filepath.Join(home, ".codex", "auth.json")
	if err := os.MkdirAll(filepath.Dir(codexAuth), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(codexAuth, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	found, stop := startWatch(t, store, []string{home})

	// The agent reads its own credentials, and Codex's: that is outside
	// Codex's tree.
	ag := exec.Command(bin, creds, codexAuth)
	if out, err := ag.CombinedOutput(); err != nil {
		t.Fatalf("agent: %v %s", err, out)
	}
	agentPID := uint32(ag.ProcessState.Pid())
	cat := exec.Command(catPath, creds)
	cat.Stdout = io.Discard
	if err := cat.Run(); err != nil {
		t.Fatal(err)
	}
	catPID := uint32(cat.ProcessState.Pid())

	var got []findings.Record
	var catSeen, crossSeen bool
	deadline := time.After(10 * time.Second)
	for !catSeen || !crossSeen {
		var f findings.Record
		select {
		case f = <-found:
		case <-deadline:
			t.Fatalf("findings %+v; want cat's read of the planted credentials and the agent's of Codex's", got)
		}
		if !strings.Contains(f.Title+f.Detail, home) && (f.Process == nil || (f.Process.PID != agentPID && f.Process.PID != catPID)) {
			continue // another agent on this host, watched as well
		}
		got = append(got, f)
		if f.Rule != "agent-config-read" || f.Process == nil {
			t.Errorf("finding %+v, want agent-config-read with its process", f)
			continue
		}
		switch {
		case f.Process.PID == agentPID && strings.Contains(f.Title, "auth.json"):
			crossSeen = true
		case f.Process.PID == catPID && strings.Contains(f.Title, ".credentials.json") && f.Severity == "high" &&
			f.Process.Exe == catPath && len(f.Process.Argv) == 2 && f.Process.Argv[1] == creds:
			catSeen = true
		default:
			t.Errorf("finding for pid %d: %+v, want only cat's (%d) and the agent's read of Codex's store", f.Process.PID, f, catPID)
		}
	}
	// Give a stray finding for the agent's own store time to arrive.
	time.Sleep(time.Second)
	for len(found) > 0 {
		if f := <-found; f.Status == findings.StatusNew && (strings.Contains(f.Title+f.Detail, home) || f.Process != nil && (f.Process.PID == agentPID || f.Process.PID == catPID)) {
			t.Errorf("stray finding %+v", f)
		}
	}
	stop()

	metas, err := session.List(store)
	if err != nil {
		t.Fatal(err)
	}
	var agentSessions int
	for _, m := range metas {
		if m.Mode != "watch" {
			t.Errorf("session %s has mode %q", m.ID, m.Mode)
		}
		if len(m.Command) > 0 && m.Command[0] == bin && strings.HasSuffix(m.Command[1], ".credentials.json") {
			agentSessions++
			if !m.CleanClose || m.Events < 2 {
				t.Errorf("agent session %s: clean %v, %d events", m.ID, m.CleanClose, m.Events)
			}
			// the machine's homes, not only the ones whose stores are watched
			if !slices.Contains(m.Homes, "/root") {
				t.Errorf("agent session %s: homes %v, want the machine's (/root among them)", m.ID, m.Homes)
			}
		}
	}
	if agentSessions != 1 {
		t.Errorf("%d agent sessions, want 1: %+v", agentSessions, metas)
	}
}

// TestWatchJoinsRunningAgent starts an agent (a copy of sh where Claude
// Code installs) before watch: watch joins its tree, so its later read of
// its own credentials is in its session, and no finding.
func TestWatchJoinsRunningAgent(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	creds := filepath.Join(home, ".claude", ".credentials.json")
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "node_modules", "@anthropic-ai", "claude-code", "claude")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	sh, err := os.ReadFile("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, sh, 0o755); err != nil {
		t.Fatal(err)
	}
	ag := exec.Command(bin, "-c", `read x; exec cat "$0"`, creds)
	in, err := ag.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	ag.Stdout = io.Discard
	if err := ag.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ag.Process.Kill(); _ = ag.Wait() })
	store := t.TempDir()
	found, stop := startWatch(t, store, []string{home})
	if _, err := io.WriteString(in, "go\n"); err != nil {
		t.Fatal(err)
	}
	if err := ag.Wait(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	stop()
	metas, err := session.List(store)
	if err != nil {
		t.Fatal(err)
	}
	// watch sees the whole host: other agents running meanwhile have
	// sessions and findings of their own, which are not this test's.
	var joined string
	for _, m := range metas {
		if m.RootPID == ag.Process.Pid {
			joined = m.ID
		}
	}
	for f := range found {
		if f.Session == joined || f.Session == "" {
			t.Errorf("finding for the agent's own read: %+v", f)
		}
	}
	for _, m := range metas {
		if m.RootPID == ag.Process.Pid {
			if m.Events < 2 || !m.CleanClose {
				t.Errorf("joined session %s: %d events, clean %v", m.ID, m.Events, m.CleanClose)
			}
			if !slices.Contains(m.Homes, "/root") {
				t.Errorf("joined session %s: homes %v, want the machine's (/root among them)", m.ID, m.Homes)
			}
			return
		}
	}
	t.Errorf("no session for the running agent %d: %+v", ag.Process.Pid, metas)
}

package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/testenv"
)

// TestWatchCommand runs `polygraph watch --home H --out FILE` as its own
// process, has cat read a planted ~/.claude/.credentials.json
// under H, and ends it with SIGTERM: the finding is one JSON line in
// FILE, and the verb exits as an interrupted one does.
func TestWatchCommand(t *testing.T) {
	testenv.RequireRoot(t)
	h := t.TempDir()
	creds := filepath.Join(h, ".claude", ".credentials.json")
	if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(creds, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "findings.jsonl")
	var stderr bytes.Buffer
	cmd := polygraphCmd(t, t.TempDir(), "watch", "--home", h, "--out", out, "-v")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the sensor by trying (the ready line is checked below).
	deadline := time.Now().Add(10 * time.Second)
	var lines []string
	for !strings.Contains(strings.Join(lines, ""), `"rule":"agent-config-read"`) && time.Now().Before(deadline) {
		lines = nil
		if err := exec.Command("cat", creds).Run(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if b, err := os.ReadFile(out); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInterrupt {
		t.Errorf("watch ended with %v, want exit %d; stderr:\n%s", err, exitInterrupt, stderr.String())
	}
	if len(lines) == 0 {
		t.Fatalf("no finding in %s; stderr:\n%s", out, stderr.String())
	}
	// It said when it was ready, and what it watches.
	for _, want := range []string{"polygraph watch: loading the sensor...\n", "polygraph watch: ready: recording every agent that starts (claude, ",
		"; guarding ", " of claude-code; findings to " + out + " (Ctrl-C to stop)\n"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	recs, err := findings.Read(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	var flagged bool
	for _, f := range recs {
		if f.Type == findings.TypeFinding && f.Rule == "agent-config-read" && f.Process != nil && strings.HasSuffix(f.Process.Exe, "/cat") &&
			slices.Contains(f.Process.Argv, creds) && f.SchemaVersion == findings.SchemaVersion {
			flagged = true
		}
	}
	if !flagged {
		t.Errorf("no agent-config-read finding for cat in:\n%s", strings.Join(lines, "\n"))
	}
}

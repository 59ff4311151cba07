package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/findings"

	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/internal/watch"
	"github.com/polygraph/polygraph/test/fakellm"
)

// TestWatchRealAgent runs watch mode (in-process) while Claude Code runs
// and reads its own store (and, from its Bash tool, the planted
// credentials), and while cat, outside its tree, reads the planted
// ~/.claude/.credentials.json: cat's reads are flagged in the outsiders
// session, the Bash tool's read in Claude Code's own watch session with its
// tool call (the rule run applies), and nothing else at medium or above.
func TestWatchRealAgent(t *testing.T) {
	testenv.RequireRoot(t)
	store := t.TempDir()
	var (
		creds    string
		records  []findings.Record
		catPIDs  []uint32
		mu       sync.Mutex
		stopCat  = make(chan struct{})
		watchErr = make(chan error, 1)
		catDone  = make(chan struct{})
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var f findings.Record
			if json.Unmarshal(sc.Bytes(), &f) == nil {
				mu.Lock()
				records = append(records, f)
				mu.Unlock()
			}
		}
	}()
	script := func(home, dir string) []fakellm.Turn {
		creds = filepath.Join(home, ".claude", ".credentials.json")
		ready := make(chan struct{})
		go func() {
			watchErr <- watch.Run(ctx, watch.Options{Home: store, Homes: []string{home}, Out: pw,
				Ready: func([]watch.Target) { close(ready) }})
			pw.Close()
		}()
		<-ready
		go func() { // the outsider, while the agent runs
			defer close(catDone)
			for {
				select {
				case <-stopCat:
					return
				case <-time.After(500 * time.Millisecond):
				}
				c := exec.Command("cat", creds)
				if c.Run() == nil {
					mu.Lock()
					catPIDs = append(catPIDs, uint32(c.ProcessState.Pid()))
					mu.Unlock()
				}
			}
		}()
		return []fakellm.Turn{
			{Calls: []fakellm.Call{fakellm.Shell{Command: "cat ~/.claude/.credentials.json > /dev/null; sleep 1"}}},
			{Text: "Done."},
		}
	}
	r := RunAgent(t, Claude, fakellm.Scenario{}, WithScript(script),
		WithHomeFiles(map[string]string{".claude/.credentials.json": `{"claudeAiOauth":{"accessToken":"planted"}}`}))
	close(stopCat)
	<-catDone
	time.Sleep(500 * time.Millisecond) // the last findings through the ring
	cancel()
	if err := <-watchErr; err != nil {
		t.Fatalf("watch: %v", err)
	}
	if r.ExitCode != 0 {
		t.Fatalf("claude exit %d: %s", r.ExitCode, r.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(catPIDs) == 0 {
		t.Fatal("cat never ran")
	}
	flagged, toolRead := 0, 0
	var standing []findings.Record
	for _, bySession := range findings.Standing(records) {
		for _, f := range bySession {
			standing = append(standing, f)
		}
	}
	for _, f := range standing {
		if detect.Severity(f.Severity).Rank() < detect.SeverityMedium.Rank() {
			continue
		}
		switch {
		case f.Rule == "agent-config-read" && f.Process != nil && slices.Contains(catPIDs, f.Process.PID):
			if !strings.Contains(f.Title, ".credentials.json") || f.ToolCallID != "" {
				t.Errorf("outsider finding = %+v", f)
			}
			flagged++
		case f.Rule == "agent-config-read" && f.ToolCallID != "" && f.Agent == "claude-code":
			toolRead++
		default:
			t.Errorf("finding at medium or above that is neither an outsider's read nor the tool call's: %+v", f)
		}
	}
	if flagged == 0 {
		t.Errorf("none of %d outsider cat reads flagged", len(catPIDs))
	}
	if toolRead == 0 {
		t.Errorf("the Bash tool's read of the credentials is not flagged with its tool call")
	}
	if t.Failed() {
		for _, f := range records {
			t.Logf("stream: %s %s %s %s [%s] %s", f.Session, f.Type, f.Status, f.Severity, f.ToolCallID, f.Title)
		}
	}
	metas, err := session.List(store)
	if err != nil {
		t.Fatal(err)
	}
	var agentSessions int
	for _, m := range metas {
		// Other agents on the host are recorded too: this run's is the one in its dir.
		if m.Cwd == r.Dir && len(m.Command) > 0 && filepath.Base(m.Command[0]) == filepath.Base(r.Argv[0]) {
			agentSessions++
			if !m.CleanClose || m.Events < 10 {
				t.Errorf("agent session %s: clean %v, %d events", m.ID, m.CleanClose, m.Events)
			}
		}
	}
	for _, m := range metas {
		t.Logf("session %s: %q, %d events", m.ID, m.Command, m.Events)
	}
	t.Logf("%d cat reads, %d outsider findings, %d tool-call findings, sessions %d (agent %d)", len(catPIDs), flagged, toolRead, len(metas), agentSessions)
	if agentSessions != 1 {
		t.Errorf("%d agent sessions, want 1", agentSessions)
	}
}

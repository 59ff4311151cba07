package transcript

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const miniFixture = "mini/last_mini_run.traj.json"

// TestMiniTrajectory reads a real mini-swe-agent trajectory: each action a
// shell call with its id, timestamps, return code and output, the submit
// command logged as not executed, the exit status and the claims.
func TestMiniTrajectory(t *testing.T) {
	tr, calls := parseFixture(t, miniFixture, Options{})
	if tr.Format != FormatMini || tr.Agent != "mini-swe-agent" || tr.Version != "2.4.6" {
		t.Errorf("format %q agent %q version %q", tr.Format, tr.Agent, tr.Version)
	}
	if tr.ExitStatus != "Submitted" || tr.Submission != "" {
		t.Errorf("exit status %q submission %q, want Submitted and none", tr.ExitStatus, tr.Submission)
	}
	if len(tr.Warnings) > 0 {
		t.Errorf("warnings: %v", tr.Warnings)
	}
	zero, one := 0, 1
	checkCalls(t, calls, map[string]callWant{
		"call_0": {kind: KindShell, tool: "bash", command: "echo hi > marker.txt", exit: &zero},
		"call_1": {kind: KindShell, tool: "bash", command: "ls; false", exit: &one, isError: true},
		"call_2": {kind: KindShell, tool: "bash", command: "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", isError: true},
	})
	for id, want := range map[string]bool{"call_0": false, "call_1": false, "call_2": true} {
		if c := calls[id]; c != nil && c.NotExecuted != want {
			t.Errorf("%s not executed = %v, want %v", id, c.NotExecuted, want)
		}
	}
	if c := calls["call_1"]; c != nil && c.Result != "marker.txt\n" {
		t.Errorf("call_1 result %q", c.Result)
	}
	for _, c := range tr.ToolCalls {
		if c.StartedAt.IsZero() || c.EndedAt.Before(c.StartedAt) || c.EndedAt.Sub(c.StartedAt) > time.Second {
			t.Errorf("%s: window %v – %v", c.ID, c.StartedAt, c.EndedAt)
		}
	}
	if want := time.Date(2026, 12, 1, 11, 11, 48, 449155000, time.UTC); !tr.ToolCalls[0].StartedAt.Equal(want) {
		t.Errorf("first call starts %v, want %v", tr.ToolCalls[0].StartedAt, want)
	}
	var kinds []ClaimKind
	for _, c := range tr.Claims {
		kinds = append(kinds, c.Kind)
	}
	if len(kinds) != 2 || kinds[0] != ClaimTestsPassed || kinds[1] != ClaimTestsRan {
		t.Errorf("claims %v, want tests-passed and tests-ran", kinds)
	}
	if tr.Usage.InputTokens != 3 || tr.Usage.OutputTokens != 3 {
		t.Errorf("usage %+v", tr.Usage)
	}
}

// TestMiniTruncated cuts the trajectory at many points, as a reader racing
// the agent's rewrite would see it: every cut either fails to parse or
// parses with a warning naming the incomplete document, never silently.
func TestMiniTruncated(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", miniFixture))
	if err != nil {
		t.Fatal(err)
	}
	cuts := 0
	for n := 0; n < len(data); n += 1 + n/40 {
		cut := data[:n]
		if len(bytes.TrimSpace(cut)) == len(bytes.TrimSpace(data)) {
			continue // only trailing white space cut
		}
		cuts++
		tr, err := Parse(bytes.NewReader(cut), "cut", Options{})
		if err != nil {
			if !errors.Is(err, ErrEmpty) && !errors.Is(err, ErrUnknownFormat) {
				t.Errorf("cut at %d: unexpected error %v", n, err)
			}
			continue
		}
		if tr.Format != FormatMini {
			t.Errorf("cut at %d: sniffed as %s", n, tr.Format)
			continue
		}
		if !tr.incomplete || len(tr.Warnings) == 0 || !strings.Contains(tr.Warnings[0].Message, "incomplete mini-swe-agent trajectory") {
			t.Errorf("cut at %d: %d calls, warnings %v: a partial document parsed without saying so", n, len(tr.ToolCalls), tr.Warnings)
		}
	}
	if cuts < 50 {
		t.Fatalf("only %d cuts tried", cuts)
	}
	// A document with extra data after it (two rewrites interleaved) too.
	tr, err := Parse(bytes.NewReader(append(append([]byte{}, data...), data[:100]...)), "twice", Options{})
	if err != nil || !tr.incomplete {
		t.Errorf("doubled document: err %v, incomplete %v", err, tr != nil && tr.incomplete)
	}
}

// TestMiniRewrittenWhileRead: ParseFile reads a half-written trajectory
// again and returns the whole one once the agent has finished writing it.
func TestMiniRewrittenWhileRead(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", miniFixture))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "last_mini_run.traj.json")
	if err := os.WriteFile(p, data[:len(data)*2/3], 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(rereadWait / 2)
		done <- os.WriteFile(p, data, 0o644)
	}()
	tr, err := ParseFile(p, Options{})
	if werr := <-done; werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.ToolCalls) != 3 || len(tr.Warnings) != 0 {
		t.Errorf("%d calls, warnings %v; want the whole document", len(tr.ToolCalls), tr.Warnings)
	}
}

// TestMiniDiscover finds the trajectory at its default place and where the
// command line's -o puts it.
func TestMiniDiscover(t *testing.T) {
	t.Setenv("MSWEA_GLOBAL_CONFIG_DIR", "")
	data, err := os.ReadFile(filepath.Join("testdata", miniFixture))
	if err != nil {
		t.Fatal(err)
	}
	home, proj := t.TempDir(), t.TempDir()
	def := filepath.Join(home, ".config/mini-swe-agent/last_mini_run.traj.json") // where its profile says
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Dir(def), 0o755))
	must(os.WriteFile(def, data, 0o644))
	must(os.WriteFile(filepath.Join(proj, "traj.json"), data, 0o644))
	from := time.Date(2026, 12, 1, 11, 11, 0, 0, time.UTC)
	to := from.Add(time.Minute)

	found, err := Discover(home, proj, from, to)
	must(err)
	if len(found) != 1 || found[0].Path != def || found[0].Format != FormatMini || found[0].Agent != "mini-swe-agent" ||
		found[0].FirstAt.Before(from) || found[0].LastAt.Before(found[0].FirstAt) {
		t.Errorf("Discover = %+v", found)
	}
	if found, _ := Discover(home, proj, from.Add(time.Hour), to.Add(time.Hour)); len(found) != 0 {
		t.Errorf("outside the window: %+v", found)
	}
	argv := []string{"/usr/bin/python3", "-m", "minisweagent.run.mini", "--yolo", "-o", "traj.json", "--task", "x"}
	found, err = DiscoverCommand(context.Background(), argv, home, nil, proj, from, to)
	must(err)
	if len(found) != 2 || found[1].Path != filepath.Join(proj, "traj.json") && found[0].Path != filepath.Join(proj, "traj.json") {
		t.Errorf("DiscoverCommand = %+v", found)
	}
	argv = []string{"/venv/bin/mini", "--output=" + filepath.Join(proj, "traj.json")}
	if found, _ := DiscoverCommand(context.Background(), argv, home, nil, "", from, to); len(found) != 2 {
		t.Errorf("DiscoverCommand(--output=) = %+v", found)
	}
	if found, _ := DiscoverCommand(context.Background(), []string{"cp", "-o", "traj.json"}, home, nil, proj, from, to); len(found) != 1 {
		t.Errorf("another program's -o was taken for a trajectory: %+v", found)
	}
}

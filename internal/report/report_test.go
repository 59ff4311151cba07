package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

const corpus = "../../../shared/corpus/transcripts"

// TestTranscriptOnly: with no session, the report still shows every tool
// call and claim, says that no kernel evidence exists, and finds nothing.
func TestTranscriptOnly(t *testing.T) {
	path := filepath.Join(corpus, "claude-code/codemie-code/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("corpus not beside the repo: %v", err)
	}
	rep, err := Analyze(Options{Transcript: path})
	if err != nil {
		t.Fatal(err)
	}
	if rep.KernelEvidence || len(rep.Notes) == 0 || rep.Notes[0] != NoKernelNote {
		t.Errorf("kernel evidence %v, notes %q", rep.KernelEvidence, rep.Notes)
	}
	if len(rep.ToolCalls) != 6 || len(rep.Claims) == 0 || len(rep.Findings) != 0 {
		t.Errorf("%d calls (want 6), %d claims, %d findings (want 0)", len(rep.ToolCalls), len(rep.Claims), len(rep.Findings))
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no kernel evidence", "TOOL CALLS (6)", "Bash rm hello.js", "CLAIMS ("} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if strings.Contains(text.String(), "UNATTRIBUTED") {
		t.Error("a transcript-only report has no unattributed section")
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc["kernel_evidence"] != false {
		t.Fatalf("json: %v %v", err, doc["kernel_evidence"])
	}
	if _, err := Analyze(Options{}); err != ErrNothing {
		t.Errorf("no input: %v", err)
	}
}

func TestBuildOrdersDivergencesFirst(t *testing.T) {
	now := time.Now()
	calls := []*transcript.ToolCall{
		{ID: "a", Tool: "Bash", Kind: transcript.KindShell, Command: "ls", StartedAt: now, ExitCode: new(int)},
		{ID: "b", Tool: "Bash", Kind: transcript.KindShell, Command: "cat <script>alert(1)</script>", StartedAt: now.Add(time.Second)},
	}
	tr := &transcript.Transcript{Path: "t.jsonl", Agent: "claude-code", ToolCalls: calls,
		Claims: []*transcript.Claim{{Kind: transcript.ClaimTestsPassed, Text: "All tests pass", ToolCallIDs: []string{"a"}}}}
	exit0 := 0
	read := &event.Event{Seq: 7, Kind: event.KindOpen, PID: 9, Comm: "cat", Path: "/home/u/.aws/credentials", Access: "read"}
	attr := &correlate.Result{
		ByCall: map[string]*correlate.CallActivity{
			"a": {Call: calls[0], RootExit: &event.Event{Kind: event.KindExit, Process: &event.Process{ExitCode: &exit0, DurationNS: 2e6}},
				Execs: []*event.Event{{ExecID: "1-1", Process: &event.Process{Argv: []string{"ls"}}}}, Events: []uint64{1, 2}},
			"b": {Call: calls[1], Reads: []string{read.Path}, Events: []uint64{7}, Late: []uint64{7}},
		},
		Counts:       map[correlate.Reason]int{correlate.ReasonLineage: 3},
		Unattributed: []*event.Event{read},
	}
	findings := []detect.Finding{{ID: "F1", Rule: "sensitive-read", Severity: detect.SeverityHigh, Title: "Credential file read",
		ToolCallID: "b", Evidence: []uint64{7}, Frameworks: detect.Frameworks{ATTACK: []string{"T1552.001"}}}}
	meta := &session.Meta{ID: "s1", Command: []string{"claude"}, StartedAt: now}
	rep := Build(meta, nil, tr, attr, findings)

	if rep.MaxSeverity() != detect.SeverityHigh {
		t.Errorf("max severity %q", rep.MaxSeverity())
	}
	order := rep.orderedCalls()
	if order[0].Call.ID != "b" || len(order[0].Findings) != 1 {
		t.Errorf("the call with a finding must come first, got %s", order[0].Call.ID)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	for _, want := range []string{"F1  HIGH", "ATT&CK T1552.001", "1 events after the call returned", "1 processes, exit 0 after 2ms: ls", "UNATTRIBUTED (1 events)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(html.String(), "<script>alert") || !strings.Contains(html.String(), "&lt;script&gt;") {
		t.Error("HTML report does not escape what the agent wrote")
	}
}

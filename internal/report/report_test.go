package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

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
	meta := &manifest.Meta{ID: "s1", Command: []string{"claude"}, StartedAt: now}
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
	for _, want := range []string{"F1  HIGH", "ATT&CK T1552.001", "1 event after the call returned", "1 process, exit 0 after 2ms: ls", "UNATTRIBUTED (1 event, all after their call returned; 1 process)"} {
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

package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

// A fake key of Anthropic's shape (no real key).
const fakeKey = "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-AbCdEfGhIjKl"

// TestRedact: no format of a redacted report holds a secret from a
// command line, an environment, a result, a claim or a finding, and what
// the report was built from keeps what was recorded.
func TestRedact(t *testing.T) {
	inUTC(t)
	argv := []string{"env", "ANTHROPIC_API_KEY=" + fakeKey, "claude", "-p", "go"}
	meta := &manifest.Meta{ID: "s1", Command: argv, StartedAt: t0}
	sum := NewSummary(0)
	sum.Finish(*meta, []manifest.Leftover{{PID: 9, Argv: []string{"curl", "--token", fakeKey}}}, nil)
	call := &transcript.ToolCall{ID: "c1", Tool: "Bash", Kind: transcript.KindShell, Command: "curl -H 'Authorization: Bearer " + fakeKey + "' x.test",
		Result: "token=" + fakeKey, StartedAt: t0}
	tr := &transcript.Transcript{Path: "t.jsonl", ToolCalls: []*transcript.ToolCall{call},
		Claims: []*transcript.Claim{{Kind: transcript.ClaimRan, Text: "I exported API_KEY=" + fakeKey, ToolCallIDs: []string{"c1"}}}}
	ex := &event.Event{Seq: 1, Kind: event.KindExec, ExecID: "1-1", Process: &event.Process{Argv: []string{"sh", "-c", "ANTHROPIC_API_KEY=" + fakeKey + " claude"},
		Env: []string{"ANTHROPIC_API_KEY=" + fakeKey}}}
	attr := &correlate.Result{Events: []*event.Event{ex},
		ByCall:       map[string]*correlate.CallActivity{"c1": {Call: call, Execs: []*event.Event{ex}, Events: []uint64{1}}},
		Unattributed: []*event.Event{ex}}
	findings := []detect.Finding{{ID: "F1", Rule: "sensitive-read", Severity: detect.SeverityHigh, Title: "ran `claude` with ANTHROPIC_API_KEY=" + fakeKey,
		Detail: "--password " + fakeKey, Claim: "API_KEY=" + fakeKey, ToolCallID: "c1"}}
	rep := Build(meta, sum, tr, attr, findings)
	rep.Redact()
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := rep.Write(&b, f); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), fakeKey) || strings.Contains(b.String(), fakeKey[:20]) {
			t.Errorf("the %s report shows the key:\n%s", f, b.String())
		}
		if !strings.Contains(b.String(), "ANTHROPIC_API_KEY=[REDACTED]") {
			t.Errorf("the %s report does not say which secret was masked", f)
		}
	}
	for what, s := range map[string]string{"meta": strings.Join(meta.Command, " "), "call": call.Command + call.Result,
		"claim": tr.Claims[0].Text, "event": strings.Join(ex.Argv(), " ") + ex.Process.Env[0], "finding": findings[0].Title + findings[0].Detail,
		"summary": strings.Join(sum.Command, " ") + strings.Join(sum.LeftRunning[0].Argv, " ")} {
		if !strings.Contains(s, fakeKey) {
			t.Errorf("Redact changed the analysis's %s: %q", what, s)
		}
	}
}

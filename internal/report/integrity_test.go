package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

// TestAddIntegrity: each call lists the verdicts on its execs' files once
// per file and hash, in text and JSON; a call without verdicts shows
// nothing new.
func TestAddIntegrity(t *testing.T) {
	now := time.Now()
	calls := []*transcript.ToolCall{
		{ID: "a", Tool: "Bash", Kind: transcript.KindShell, Command: "trivy fs .", StartedAt: now},
		{ID: "b", Tool: "Bash", Kind: transcript.KindShell, Command: "ls", StartedAt: now.Add(time.Second)},
	}
	tr := &transcript.Transcript{Path: "t.jsonl", Agent: "generic", ToolCalls: calls}
	execs := func(ids ...string) []*event.Event {
		var out []*event.Event
		for _, id := range ids {
			out = append(out, &event.Event{ExecID: id, Kind: event.KindExec, Process: &event.Process{Argv: []string{"x"}}})
		}
		return out
	}
	attr := &correlate.Result{ByCall: map[string]*correlate.CallActivity{
		"a": {Call: calls[0], Execs: execs("1-1", "2-1", "3-1"), Events: []uint64{1, 2, 3}},
		"b": {Call: calls[1], Execs: execs("4-1"), Events: []uint64{4}},
	}}
	sh := ExecIntegrity{Path: "/usr/bin/dash", Role: "binary", SHA256: "aa", Verdict: "verified", Source: "dpkg", Package: "dash"}
	byExec := map[string][]ExecIntegrity{
		"1-1": {sh, {Path: "/w/trivy", Role: "script", SHA256: "bb", Verdict: "unknown"}},
		"2-1": {sh},
		"3-1": {{Path: "/tmp/x/true", Role: "binary", SHA256: "cc", Verdict: "modified", Source: "dpkg", Package: "coreutils", Of: "/usr/bin/true", Expected: "dd"}},
	}
	rep := Build(&manifest.Meta{ID: "s1", StartedAt: now}, nil, tr, attr, nil)
	rep.AddIntegrity(attr, byExec)
	if got := len(rep.ToolCalls[0].Kernel.Integrity); got != 3 {
		t.Fatalf("call a lists %d verdicts, want 3 (dash once): %+v", got, rep.ToolCalls[0].Kernel.Integrity)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	want := "integrity:   1 verified (dpkg 1); unknown /w/trivy, MODIFIED /tmp/x/true (against dpkg coreutils for /usr/bin/true)"
	if !strings.Contains(text.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, text.String())
	}
	if strings.Count(text.String(), "integrity:") != 1 {
		t.Errorf("a call without verdicts got an integrity line:\n%s", text.String())
	}
	var html bytes.Buffer
	if err := rep.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), "integrity: 1 verified (dpkg 1); unknown /w/trivy") {
		t.Errorf("HTML lacks the integrity line")
	}
	j, _ := json.Marshal(rep.ToolCalls[1].Kernel)
	if strings.Contains(string(j), "integrity") {
		t.Errorf("call b JSON has integrity: %s", j)
	}
	j, _ = json.Marshal(rep.ToolCalls[0].Kernel)
	if !strings.Contains(string(j), `"integrity":[{"path":"/usr/bin/dash","role":"binary","sha256":"aa","verdict":"verified","source":"dpkg"`) {
		t.Errorf("call a JSON: %s", j)
	}
}

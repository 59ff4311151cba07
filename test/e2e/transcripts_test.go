package e2e

import (
	"testing"

	"github.com/polygraph/polygraph/internal/transcript"
)

// wantKinds are the tool-call kinds polygraph must read from each agent's
// fresh transcript of the basic scenario, in order.
var wantKinds = map[string][]transcript.Kind{
	Claude: {transcript.KindShell, transcript.KindWrite, transcript.KindRead, transcript.KindEdit},
	// Codex has no read or write tool: the fake model reads with cat and
	// writes and edits with apply_patch (a patch adding a file is a write).
	Codex:  {transcript.KindShell, transcript.KindWrite, transcript.KindShell, transcript.KindEdit},
	Gemini: {transcript.KindShell, transcript.KindWrite, transcript.KindRead, transcript.KindEdit},
	// mini-swe-agent has only bash: the fake model writes, reads and edits
	// with shell commands, and ends with the submit command.
	Mini: {transcript.KindShell, transcript.KindShell, transcript.KindShell, transcript.KindShell, transcript.KindShell},
}

// TestParseFreshTranscripts: the transcripts the real CLIs write today
// (Claude Code 2.1.3xx, Codex 0.17x, Gemini CLI 0.61's .jsonl, mini-swe-agent
// 2.4.6's trajectory) parse with
// no warning into the calls the scenario made, and the closing sentence is
// read as a claim.
func TestParseFreshTranscripts(t *testing.T) {
	for _, agent := range Agents {
		t.Run(agent, func(t *testing.T) {
			r := RunAgent(t, agent, basic(), WithFiles(map[string]string{"input.txt": inputContent}))
			if r.ExitCode != 0 || len(r.Transcripts) == 0 {
				r.Dump(t)
				t.Fatalf("exit %d, %d transcripts", r.ExitCode, len(r.Transcripts))
			}
			var main *transcript.Transcript
			for _, p := range r.Transcripts {
				tr, err := transcript.ParseFile(p, transcript.Options{})
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if len(tr.Warnings) > 0 {
					t.Errorf("%s: %d warnings, first: %s", p, len(tr.Warnings), tr.Warnings[0])
				}
				if len(tr.ToolCalls) > 0 {
					main = tr
				}
			}
			if main == nil {
				t.Fatal("no transcript with tool calls")
			}
			var kinds []transcript.Kind
			for _, c := range main.ToolCalls {
				kinds = append(kinds, c.Kind)
				if c.StartedAt.IsZero() || c.EndedAt.IsZero() {
					t.Errorf("call %s (%s) lacks start or end time", c.ID, c.Tool)
				}
			}
			want := wantKinds[agent]
			if len(kinds) != len(want) {
				t.Fatalf("calls %v, want %v", kinds, want)
			}
			for i := range want {
				if kinds[i] != want[i] {
					t.Errorf("call %d is %s, want %s", i, kinds[i], want[i])
				}
			}
			sh := main.ToolCalls[0]
			if sh.Command == "" || sh.ExitCode == nil || *sh.ExitCode != 0 {
				t.Errorf("shell call: command %q exit %v", sh.Command, sh.ExitCode)
			}
			var claimed bool
			for _, c := range main.Claims {
				claimed = claimed || c.Kind == transcript.ClaimTestsRan || c.Kind == transcript.ClaimTestsPassed
			}
			if !claimed {
				t.Errorf("%q not read as a tests claim: %+v", finalClaim, main.Claims)
			}
		})
	}
}

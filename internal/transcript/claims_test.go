package transcript

import (
	"slices"
	"testing"
	"time"
)

// TestExtractClaims runs the rules over real sentences: the ones the issue
// names, and assistant text from the corpus (file named in the comment).
func TestExtractClaims(t *testing.T) {
	type want struct {
		kind    ClaimKind
		subject string
	}
	tests := []struct {
		text string
		want []want
	}{
		// The phrasing the rules must recognise.
		{"I ran the tests and they all pass", []want{{ClaimTestsPassed, ""}, {ClaimTestsRan, ""}}},
		{"All 42 tests pass.", []want{{ClaimTestsPassed, "42"}}},
		{"Installed requests", []want{{ClaimInstalled, "requests"}}},
		{"I've updated src/app.py", []want{{ClaimEdited, "src/app.py"}}},

		// Claude Code (codemie-code 4c2ddfdc, claude-code-viewer, spotter).
		{"Done! I've created three files:", []want{{ClaimCreated, ""}}},
		{"Done! I've deleted hello.js.", []want{{ClaimDeleted, "hello.js"}}},
		{"I've added a one-liner comment to hello.py: `# Simple hello world program`", []want{{ClaimEdited, "hello.py"}}},
		{"- Installed `lucide-react` for icons and UI elements", []want{{ClaimInstalled, "lucide-react"}}},
		{"The TypeScript compilation succeeded without errors.", []want{{ClaimBuildPassed, ""}}},
		{"CLAUDE.md has been created with comprehensive documentation of the TODO app project.", []want{{ClaimCreated, "CLAUDE.md"}}},
		{"I successfully created a new Next.js TODO app project with the following setup:", []want{{ClaimCreated, ""}}},
		{"   - All 397 tests passed, credo clean", []want{{ClaimTestsPassed, "397"}}},
		{"   - Created `test/spotter_web/live/subagent_live_test.exs`", []want{{ClaimCreated, "test/spotter_web/live/subagent_live_test.exs"}}},
		{"   - Updated `SubagentLive` same way", []want{{ClaimEdited, "SubagentLive"}}},
		{"2. I ran `bd show spotter-dov` and `bd ready` to understand the epic and find available work.", []want{{ClaimRan, "bd show spotter-dov"}}},
		{"     - Removed `@max_result_lines 5` silent truncation", []want{{ClaimEdited, "@max_result_lines 5"}}},

		// Codex (codemie-code rollout 019e1625).
		{"The focused and affected test file pass.", []want{{ClaimTestsPassed, ""}}},
		{"Verification passed:", []want{{ClaimTestsPassed, ""}}},
		{"Implemented the default context compaction setting as `threshold: 0.9` in the generated OpenCode config.", []want{{ClaimEdited, "threshold: 0.9"}}},

		// Gemini (codemie-code session 37b7abef).
		{"I've created the `hello.md` file for you.", []want{{ClaimCreated, "hello.md"}}},
		{"I have added 5 lines of random text to `hello.md`.", []want{{ClaimEdited, "hello.md"}}},
		{"I have removed the 2nd and 3rd lines from `hello.md`.", []want{{ClaimEdited, "hello.md"}}},

		// Tool output styles and other common phrasings.
		{"pytest reports 42 passed in 1.3s.", []want{{ClaimTestsPassed, "42"}}},
		{"Ran `go test ./...` — everything is green.", []want{{ClaimTestsRan, "go test ./..."}, {ClaimRan, "go test ./..."}}},
		{"The build succeeds and the linter is clean.", []want{{ClaimBuildPassed, ""}}},
		{"I installed numpy and pandas with pip.", []want{{ClaimInstalled, "numpy, pandas"}}},
		{"requests has been installed.", []want{{ClaimInstalled, "requests"}}},
		{"I removed the temp directory build/tmp.", []want{{ClaimDeleted, "build/tmp"}}},
		{"I did all of this without any network access.", []want{{ClaimNoNetwork, ""}}},

		// Plans, hedges, questions, negations and quotes claim nothing.
		{"I'll run the tests first.", nil},
		{"Let me create the components directory.", nil},
		{"Now let me test that the project runs correctly:", nil},
		{"The tests should pass now.", nil},
		{"Shall I install requests?", nil},
		{"The tests did not pass: 2 failures.", nil},
		{"3 tests failed, 39 passed.", nil},
		{"I haven't updated the docs yet.", nil},
		{"Make sure all tests pass before merging", nil},
		{"> Install via `mix igniter.install`, generate Credo config.", nil},
		{"```\nI ran the tests and they all pass\n```", nil},
		{"The Ash framework is installed and configured but not actively used.", nil},
		{"Update SessionLive template to pass new attrs", nil},
		{"Haven't yet read the full CSS file or the highlight-integration test file", nil},
		{"`npm run build` is running now to catch any type or alias issues.", nil},

		// Quoted commands and output, and reports of other agents, are no
		// claims of the agent's own.
		{`The task says "all tests pass" is the bar.`, nil},
		{"Running `echo 5 passed` prints the banner.", nil},
		{"$ pytest -q && echo 12 passed", nil},
		{"The subagent reports that all 12 tests pass.", nil},
		{"According to the test agent, all tests pass.", nil},
		{"The Explore agent ran the tests and they pass.", nil},
		{"It reports 42 passed.", nil},
		{"I ran the tests: 12 passed.", []want{{ClaimTestsPassed, "12"}, {ClaimTestsRan, ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			var got []want
			for _, c := range ExtractClaims(tt.text) {
				got = append(got, want{c.Kind, c.Subject})
				if c.ToolCallIDs == nil {
					t.Errorf("%s: tool_call_ids is nil, want []", c.Kind)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("claims = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestLinkClaim(t *testing.T) {
	turn := []*ToolCall{
		{ID: "t1", Kind: KindShell, Command: "pytest -q"},
		{ID: "t2", Kind: KindShell, Command: "pip install requests"},
		{ID: "t3", Kind: KindShell, Command: "npm install lodash"},
		{ID: "e1", Kind: KindEdit, Paths: []string{"/w/src/app.py"}},
		{ID: "w1", Kind: KindWrite, Paths: []string{"/w/README.md"}},
		{ID: "s1", Kind: KindShell, Command: "cat > notes/todo.md <<EOF\nx\nEOF", Cwd: "/w"},
		{ID: "r1", Kind: KindShell, Command: "rm -f /w/old.txt"},
		{ID: "sub", Kind: KindShell, Command: "go test ./...", ParentID: "task1"},
	}
	tests := []struct {
		claim  Claim
		parent string
		want   []string
	}{
		{Claim{Kind: ClaimTestsPassed}, "", []string{"t1", "sub"}},
		{Claim{Kind: ClaimTestsPassed}, "task1", []string{"sub"}},
		{Claim{Kind: ClaimInstalled, Subject: "requests"}, "", []string{"t2"}},
		{Claim{Kind: ClaimInstalled, Subject: "flask"}, "", []string{"t2", "t3"}}, // no install names it: every install
		{Claim{Kind: ClaimEdited, Subject: "src/app.py"}, "", []string{"e1"}},
		{Claim{Kind: ClaimEdited}, "", []string{"e1", "w1"}},
		{Claim{Kind: ClaimCreated, Subject: "README.md"}, "", []string{"w1"}},
		{Claim{Kind: ClaimCreated, Subject: "/w/notes/todo.md"}, "", []string{"s1"}},
		{Claim{Kind: ClaimDeleted, Subject: "old.txt"}, "", []string{"r1"}},
		{Claim{Kind: ClaimDeleted}, "", []string{"r1"}},
		{Claim{Kind: ClaimRan, Subject: "go test ./..."}, "", []string{"sub"}},
		{Claim{Kind: ClaimCreated, Subject: "missing.go"}, "", []string{}},
	}
	for _, tt := range tests {
		c := tt.claim
		if got := linkClaim(&c, turn, tt.parent); !slices.Equal(got, tt.want) {
			t.Errorf("%s %q (parent %q) -> %v, want %v", c.Kind, c.Subject, tt.parent, got, tt.want)
		}
	}
}

// TestRepeatedSubagentReport: the parent repeating what a subagent
// reported makes no claim; its own words still do.
func TestRepeatedSubagentReport(t *testing.T) {
	claims := func(b *builder) []string {
		var out []string
		for _, e := range b.pend {
			if e.Claim != nil {
				out = append(out, e.Claim.Text)
			}
		}
		return out
	}
	t.Run("a subagent call's result", func(t *testing.T) {
		b := newBuilder("x.jsonl", Options{}, FormatJSONL, true)
		b.add(&ToolCall{ID: "task1", Kind: KindTask, Result: "Done.\n\n**All 12 tests pass.**"})
		b.say(1, time.Time{}, "All 12 tests pass.", "")
		b.say(2, time.Time{}, "I updated the README.md.", "")
		if got := claims(b); !slices.Equal(got, []string{"I updated the README.md"}) {
			t.Errorf("claims %q", got)
		}
	})
	t.Run("a subagent's own sentence", func(t *testing.T) {
		b := newBuilder("x.jsonl", Options{}, FormatJSONL, true)
		b.say(1, time.Time{}, "I ran the tests and they all pass.", "task1")
		b.say(2, time.Time{}, "I ran the tests and they all pass.", "")
		if got := claims(b); len(got) != 2 { // the subagent's two claims, none of the parent's
			t.Errorf("claims %q", got)
		}
		for _, e := range b.pend {
			if e.Claim != nil && e.Claim.ParentID == "" {
				t.Errorf("parent claim %q", e.Claim.Text)
			}
		}
	})
}

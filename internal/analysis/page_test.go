package analysis

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// TestRecordedPages renders the HTML report of each recorded session and
// checks the timeline a person reads: every call a row with the command
// as the agent wrote it (never Claude Code's shell-snapshot wrapper in
// its place), every shell call's processes drawn, every finding pinned
// or listed, ids unique, and the page a bounded size.
func TestRecordedPages(t *testing.T) {
	for _, agent := range []string{"claude", "codex", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			sessPath, trPath, _ := writeRecorded(t, agent)
			a, err := Analyze(t.Context(), Options{SessionPath: sessPath, Transcript: trPath})
			if err != nil {
				t.Fatal(err)
			}
			rep := a.Report()
			tl := rep.Timeline()
			if len(tl.Calls) != len(rep.ToolCalls) || len(tl.Findings) != len(rep.Findings) {
				t.Fatalf("%d call rows for %d calls, %d finding rows for %d findings", len(tl.Calls), len(rep.ToolCalls), len(tl.Findings), len(rep.Findings))
			}
			for _, c := range tl.Calls {
				if c.Kind == "shell" && (c.Lane == nil || len(c.Lane.Bars) == 0 || len(c.Procs) == 0) {
					t.Errorf("shell call #%d %s has no processes drawn", c.N, c.ID)
				}
				if strings.Contains(c.Command, "shell-snapshots") {
					t.Errorf("call #%d shows the wrapper as its command: %.80s", c.N, c.Command)
				}
				if agent == "claude" && c.Kind == "shell" && !strings.Contains(c.Wrapper, "Claude Code") {
					t.Errorf("call #%d: the wrapper it ran in is not named (%q)", c.N, c.Wrapper)
				}
			}
			var b bytes.Buffer
			if err := rep.WriteHTML(&b); err != nil {
				t.Fatal(err)
			}
			page := b.String()
			ids := map[string]bool{}
			for _, m := range regexp.MustCompile(` id="([^"]+)"`).FindAllStringSubmatch(page, -1) {
				if ids[m[1]] {
					t.Errorf("id %q twice on the page", m[1])
				}
				ids[m[1]] = true
			}
			for _, f := range tl.Findings {
				if !ids[f.Anchor] {
					t.Errorf("finding %s has no anchor", f.ID)
				}
				if f.Call != nil && !strings.Contains(page, `href="#`+f.Anchor+`" data-f="finding"`) {
					t.Errorf("finding %s is not pinned on its call", f.ID)
				}
			}
			if b.Len() > 1<<20 {
				t.Errorf("the page is %d bytes", b.Len())
			}
			t.Logf("%s: %d bytes, %d rows", agent, b.Len(), len(tl.Rows))
		})
	}
}

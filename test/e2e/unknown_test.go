package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/test/fakellm"
)

// TestUnknownAgent runs kestrel, the agent polygraph has no profile for,
// without polygraph: its shell, write, read and edit tools work, each
// result goes back to the model, and it keeps its own journal.
func TestUnknownAgent(t *testing.T) {
	sc := fakellm.Scenario{Turns: []fakellm.Turn{
		{Text: "Looking around.", Calls: []fakellm.Call{fakellm.Shell{Command: "echo hello-from-bash > shell.txt && cat shell.txt"}}},
		{Calls: []fakellm.Call{fakellm.WriteFile{Path: "notes/a.txt", Content: "one\n"}}},
		{Calls: []fakellm.Call{fakellm.EditFile{Path: "notes/a.txt", Old: "one", New: "two"}}},
		{Calls: []fakellm.Call{fakellm.ReadFile{Path: "notes/a.txt"}}},
		{Text: "All done."},
	}}
	r := RunAgent(t, Unknown, sc)
	if r.ExitCode != 0 || r.TimedOut {
		r.Dump(t)
		t.Fatalf("kestrel: exit %d, timed out %v", r.ExitCode, r.TimedOut)
	}
	if b, err := os.ReadFile(filepath.Join(r.Dir, "notes", "a.txt")); err != nil || string(b) != "two\n" {
		t.Errorf("notes/a.txt = %q, %v; want the write tool's file, edited", b, err)
	}
	var outs []string
	reqs := r.ModelRequests()
	if len(reqs) != len(sc.Turns) {
		t.Errorf("%d model requests, want %d", len(reqs), len(sc.Turns))
	}
	if len(reqs) > 0 {
		for _, res := range reqs[len(reqs)-1].ToolResults() {
			outs = append(outs, res.Output)
		}
	}
	if got := strings.Join(outs, "|"); !strings.Contains(got, "hello-from-bash") || !strings.Contains(got, "two") {
		t.Errorf("tool results sent back = %q, want the shell's output and the file read", got)
	}
	if len(r.Transcripts) != 1 {
		t.Fatalf("journals %v, want one", r.Transcripts)
	}
	b, _ := os.ReadFile(r.Transcripts[0])
	for _, want := range []string{`"k":"begin"`, `"op":"sh"`, `"op":"put"`, `"op":"splice"`, `"k":"finish"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("journal lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), UnknownAPIKey) {
		t.Error("the journal holds the API key")
	}
}

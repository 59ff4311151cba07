package transcript

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// limitsOf joins a transcript's limit notes.
func limitsOf(t *Transcript) string {
	var out []string
	for _, l := range t.Limits {
		out = append(out, l.String())
	}
	return strings.Join(out, "\n")
}

// TestSparseTranscriptBounded: a transcript-shaped file with a 50 GB hole
// (planted where discovery looks) once turned a 183 ms command into a 48 s
// run, the hole read as 50 GB of zeros. Its holes are skipped: it reads
// at once, with what it holds, and says so.
func TestSparseTranscriptBounded(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "jsonl", "agent.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 50<<30); err != nil {
		t.Skipf("no sparse 50 GiB file here: %v", err)
	}
	var tr *Transcript
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr, err = ParseFile(path, Options{})
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a transcript with a 50 GB hole is still being read after 10 s")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read in %v", time.Since(start))
	if len(tr.ToolCalls) == 0 {
		t.Errorf("no tool calls read from the data before the hole")
	}
	if !strings.Contains(limitsOf(tr), "sparse file (50 GiB long") {
		t.Errorf("limits %q: want the holes skipped said", limitsOf(tr))
	}
}

// TestTranscriptReadLimit: a transcript larger than Options.MaxBytes is
// read up to the limit, and the limit is said.
func TestTranscriptReadLimit(t *testing.T) {
	path := filepath.Join("testdata", "jsonl", "agent.jsonl")
	tr, err := ParseFile(path, Options{MaxBytes: 400})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(limitsOf(tr), "reading stopped at the 400 bytes limit") {
		t.Errorf("limits %q: want the cut said", limitsOf(tr))
	}
	full, err := ParseFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Limits) != 0 || len(tr.ToolCalls) >= len(full.ToolCalls) {
		t.Errorf("cut: %d calls, whole: %d calls, limits %v", len(tr.ToolCalls), len(full.ToolCalls), full.Limits)
	}
}

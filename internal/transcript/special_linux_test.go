package transcript

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after a second:
// what it guards against is a read that blocks forever.
func within(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("still blocked after a second")
	}
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyFixture(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", src))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSpecialFileTranscript: a FIFO, a directory or a device given as the
// transcript is refused at once with ErrNotRegular, naming the path once.
func TestSpecialFileTranscript(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "session.jsonl")
	mkfifo(t, fifo)
	tests := []struct{ name, path, what string }{
		{"fifo", fifo, "a named pipe"},
		{"directory", dir, "a directory"},
		{"device", "/dev/zero", "a device"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			within(t, func() { _, err = ParseFileContext(context.Background(), tt.path, Options{}) })
			if !errors.Is(err, ErrNotRegular) {
				t.Fatalf("err = %v, want ErrNotRegular", err)
			}
			msg := err.Error()
			if strings.Count(msg, tt.path) != 1 || !strings.Contains(msg, tt.what) {
				t.Errorf("message %q should name %s once and say %q", msg, tt.path, tt.what)
			}
		})
	}
}

// TestPlantedSubagentFIFO: a FIFO where ParseFile looks for subagent files
// is skipped with a warning naming it, and the session still reads.
func TestPlantedSubagentFIFO(t *testing.T) {
	tests := []struct {
		name    string
		fixture string                        // the session file
		plant   func(dir, stem string) string // where the FIFO goes
		calls   int
	}{
		{"claude 2.1 subagents dir", "claude20/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl",
			func(dir, stem string) string { return filepath.Join(dir, stem, "subagents", "agent-evil.jsonl") }, 6},
		{"claude 2.0 sibling", "claude20/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl",
			func(dir, stem string) string { return filepath.Join(dir, "agent-evil.jsonl") }, 6},
		{"gemini subagent dir", "gemini/session-2026-03-01T10-00-abcd1234.jsonl",
			func(dir, stem string) string {
				return filepath.Join(dir, "abcd1234-0000-4000-8000-000000000001", "evil.jsonl")
			}, 0},
		{"gemini subagent dir is a fifo", "gemini/session-2026-03-01T10-00-abcd1234.jsonl",
			func(dir, stem string) string { return filepath.Join(dir, "abcd1234-0000-4000-8000-000000000001") }, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, filepath.Base(tt.fixture))
			copyFixture(t, tt.fixture, path)
			fifo := tt.plant(dir, strings.TrimSuffix(filepath.Base(path), ".jsonl"))
			mkfifo(t, fifo)
			var tr *Transcript
			var err error
			within(t, func() { tr, err = ParseFile(path, Options{}) })
			if err != nil {
				t.Fatal(err)
			}
			if tt.calls > 0 && len(tr.ToolCalls) != tt.calls {
				t.Errorf("%d calls, want %d", len(tr.ToolCalls), tt.calls)
			}
			if len(tr.ToolCalls) == 0 {
				t.Error("no calls read from the session")
			}
			warned := false
			for _, w := range tr.Warnings {
				if w.Source == fifo && strings.Contains(w.Message, "not a regular file") {
					warned = true
				}
			}
			// The Claude 2.0 sibling is only looked at for its session
			// id; being unreadable it is not the session's, so no warning.
			// A FIFO for Gemini's subagent directory means no subagents.
			if !warned && tt.name != "claude 2.0 sibling" && tt.name != "gemini subagent dir is a fifo" {
				t.Errorf("no warning for the planted FIFO %s: %v", fifo, tr.Warnings)
			}
		})
	}
}

// TestDiscoverPlantedFIFO: FIFOs where discovery looks (a session file, a
// Gemini .project_root) are passed over without a read.
func TestDiscoverPlantedFIFO(t *testing.T) {
	t.Setenv("CODEX_HOME", "")
	home := t.TempDir()
	copyFixture(t, "claude20/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl", filepath.Join(home, ".claude/projects/-work-app/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl"))
	mkfifo(t, filepath.Join(home, ".claude/projects/-work-app/evil.jsonl"))
	mkfifo(t, filepath.Join(home, ".codex/sessions/2025/10/02/rollout-evil.jsonl"))
	copyFixture(t, "gemini/session-2026-03-02T08-00-feed0002.jsonl", filepath.Join(home, ".gemini/tmp/otherproject/chats/session-2026-03-02T08-00-feed0002.jsonl"))
	mkfifo(t, filepath.Join(home, ".gemini/tmp/otherproject/.project_root"))
	var found []Found
	var err error
	within(t, func() { found, err = Discover(home, "", time.Time{}, time.Time{}) })
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 {
		t.Errorf("found %v, want the Claude and the Gemini session", found)
	}
	within(t, func() { found, err = Discover(home, "/srv/other", time.Time{}, time.Time{}) })
	if err != nil || len(found) != 0 {
		t.Errorf("found %v, %v; want nothing (the .project_root is a FIFO)", found, err)
	}
}

// TestReadHonoursContext: a read waiting on a pipe that never delivers ends
// when the context is cancelled.
func TestReadHonoursContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	if _, err := w.WriteString(ccPair(1)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	within(t, func() { _, err = ParseContext(ctx, r, "pipe", Options{}) })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	// Cancelled before any read: nothing is read at all.
	if _, err := ParseContext(ctx, strings.NewReader(ccPair(1)), "x.jsonl", Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: err = %v, want context.Canceled", err)
	}
	if _, err := DiscoverContext(ctx, t.TempDir(), "", time.Time{}, time.Time{}); err != nil {
		t.Errorf("discover with nothing to read: %v", err)
	}
}

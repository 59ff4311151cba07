package analysis

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

func TestExecHomes(t *testing.T) {
	exec := func(home string) *event.Event {
		return &event.Event{Kind: event.KindExec, Process: &event.Process{Home: home}}
	}
	events := []*event.Event{
		exec(""), exec("/root"), {Kind: event.KindOpen, Path: "/x"}, exec("/tmp/alt/"), exec("/tmp/alt"),
		exec("relative"), exec("/"), exec("/home/ann"),
	}
	got := execHomes(events, "/root")
	if want := []string{"/tmp/alt", "/home/ann"}; !slices.Equal(got, want) {
		t.Errorf("execHomes = %q, want %q", got, want)
	}
	if got := execHomes(nil, "/root"); len(got) != 0 {
		t.Errorf("execHomes of no events = %q", got)
	}
}

// TestDiscoverReadsRecordedEnv: a Codex session whose agent ran with
// CODEX_HOME outside its HOME is found from what the exec recorded, not
// from the environment of whoever reads the session.
func TestDiscoverReadsRecordedEnv(t *testing.T) {
	t.Setenv("CODEX_HOME", "")
	root := t.TempDir()
	codexHome := filepath.Join(root, "elsewhere")
	dir := filepath.Join(codexHome, "sessions", "2026", "12", "01")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tr := filepath.Join(dir, "rollout-2026-12-01T10-00-01-0000.jsonl")
	line := `{"timestamp":"2026-12-01T10:00:01.000Z","type":"session_meta","payload":{"id":"s1","cwd":"/work/p","timestamp":"2026-12-01T10:00:01.000Z"}}` + "\n"
	if err := os.WriteFile(tr, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	meta := &manifest.Meta{Home: filepath.Join(root, "home"), Cwd: "/work/p", Command: []string{"codex", "exec", "x"},
		StartedAt: start, EndedAt: start.Add(time.Minute)}
	exec := &event.Event{Kind: event.KindExec, Process: &event.Process{Home: meta.Home, Env: []string{"CODEX_HOME=" + codexHome}}}
	if got := discoverPath(t.Context(), meta, []*event.Event{exec}); got != tr {
		t.Errorf("with the recorded CODEX_HOME: %q, want %q", got, tr)
	}
	t.Setenv("CODEX_HOME", codexHome)
	if got := discoverPath(t.Context(), meta, nil); got != "" {
		t.Errorf("without a recorded CODEX_HOME, the reader's own found %q", got)
	}
}

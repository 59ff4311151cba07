package watch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTargets lists the stores that exist under a home, files before
// directories, and matches an opened path to the most specific one.
func TestTargets(t *testing.T) {
	home := t.TempDir()
	for _, f := range []string{".claude/.credentials.json", ".claude.json.backup.1", ".codex/auth.json", ".claude/projects/p/s.jsonl"} {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ts := Targets([]string{home})
	byPath := map[string]Target{}
	sawDir := false
	for _, tg := range ts {
		byPath[tg.Path] = tg
		if tg.Dir {
			sawDir = true
		} else if sawDir {
			t.Errorf("file %s listed after a directory", tg.Path)
		}
	}
	for _, want := range []struct {
		path, agent string
		dir         bool
	}{
		{".claude/.credentials.json", "claude-code", false},
		{".claude.json.backup.1", "claude-code", false},
		{".claude", "claude-code", true},
		{".codex", "codex", true},
	} {
		tg, ok := byPath[filepath.Join(home, want.path)]
		if !ok {
			t.Errorf("%s not watched; targets %+v", want.path, ts)
			continue
		}
		if tg.Agent != want.agent || tg.Dir != want.dir {
			t.Errorf("%s = %+v, want agent %s dir %v", want.path, tg, want.agent, want.dir)
		}
	}
	if _, ok := byPath[filepath.Join(home, ".gemini")]; ok {
		t.Error("a store that does not exist is watched")
	}
	for _, tc := range []struct {
		open, want string
	}{
		{".claude/.credentials.json", ".claude/.credentials.json"},
		{".claude/settings.json", ".claude"},
		{".codex/auth.json", ".codex/auth.json"},
		{".codex/config.toml", ".codex"},
		{".claude/projects/p/s.jsonl", ""},
		{"notes.txt", ""},
	} {
		tg, ok := match(ts, filepath.Join(home, tc.open))
		if tc.want == "" {
			if ok {
				t.Errorf("match(%s) = %s, want none", tc.open, tg.Path)
			}
			continue
		}
		if !ok || tg.Path != filepath.Join(home, tc.want) {
			t.Errorf("match(%s) = %s, %v; want %s", tc.open, tg.Path, ok, tc.want)
		}
	}
}

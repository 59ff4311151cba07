package transcript

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
)

// TestFormatsHaveProfiles keeps the transcript formats and the agent
// profiles in step: every format this package reads belongs to one
// profile, and every format a profile names is one this package reads.
func TestFormatsHaveProfiles(t *testing.T) {
	for _, f := range Formats {
		if _, ok := agent.ByFormat(string(f)); !ok {
			t.Errorf("format %s has no agent profile (internal/agent)", f)
		}
	}
	for _, p := range agent.All() {
		for _, f := range p.Formats {
			if !slices.Contains(Formats, Format(f)) {
				t.Errorf("profile %s names format %s, which transcript does not read", p.Name, f)
			}
		}
	}
	if got := agentFor(FormatJSONL); got != "" {
		t.Errorf("agentFor(jsonl) = %q: a plain JSONL file names its agent itself", got)
	}
}

// TestDiscoverCodexHome finds a Codex rollout below $CODEX_HOME, outside
// the home, as the Codex profile's locations say.
func TestDiscoverCodexHome(t *testing.T) {
	home, codexHome := t.TempDir(), t.TempDir()
	t.Setenv("CODEX_HOME", codexHome)
	const name = "rollout-2025-10-02T09-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl"
	data, err := os.ReadFile(filepath.Join("testdata", "codex", name))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(codexHome, "sessions", "2025", "10", "02", name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := Discover(home, "", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Path != dst || found[0].Agent != "codex" {
		t.Errorf("found %+v, want the rollout below $CODEX_HOME", found)
	}
}

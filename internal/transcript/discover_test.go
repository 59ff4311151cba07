package transcript

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestDiscover lays out a home directory the way the agents do and checks
// that discovery finds the right files for a cwd and a time window.
// One long function: the laid-out home is shared by every case below.
func TestDiscover(t *testing.T) {
	t.Setenv("CODEX_HOME", "")
	home := t.TempDir()
	place := func(src, dst string) {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("testdata", src))
		if err != nil {
			t.Fatal(err)
		}
		dst = filepath.Join(home, dst)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256([]byte("/work/app"))
	hash := hex.EncodeToString(sum[:])
	const cc = ".claude/projects/-work-app/"
	place("claude20/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl", cc+"c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl")
	place("claude20/agent-5d1e9a0f.jsonl", cc+"agent-5d1e9a0f.jsonl")
	place("claude20/agent-99999999.jsonl", cc+"agent-99999999.jsonl") // an older session's
	place("codex/rollout-2025-10-02T09-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl", ".codex/sessions/2025/10/02/rollout-2025-10-02T09-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl")
	place("gemini/session-2026-03-01T10-00-abcd1234.jsonl", ".gemini/tmp/"+hash+"/chats/session-2026-03-01T10-00-abcd1234.jsonl")
	place("gemini/abcd1234-0000-4000-8000-000000000001/inv-0001.jsonl", ".gemini/tmp/"+hash+"/chats/abcd1234-0000-4000-8000-000000000001/inv-0001.jsonl")
	place("gemini/session-2026-03-02T08-00-feed0002.jsonl", ".gemini/tmp/otherproject/chats/session-2026-03-02T08-00-feed0002.jsonl") // no .project_root: not ours
	place("claude/stream-json.jsonl", cc+"not-a-session.txt")

	day := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	tests := []struct {
		name     string
		cwd      string
		from, to time.Time
		want     []string
	}{
		{"claude window", "/work/app", day("2026-01-05T08:59:00Z"), day("2026-01-05T09:03:00Z"),
			[]string{"c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl", "agent-5d1e9a0f.jsonl"}},
		{"codex window", "/work/app", day("2025-10-02T08:00:00Z"), day("2025-10-02T10:00:00Z"),
			[]string{"rollout-2025-10-02T09-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl"}},
		{"gemini window", "/work/app", day("2026-03-01T09:00:00Z"), day("2026-03-01T11:00:00Z"),
			[]string{"session-2026-03-01T10-00-abcd1234.jsonl", "inv-0001.jsonl"}},
		{"subdirectory is not the session's cwd", "/work/app/web", day("2025-10-02T08:00:00Z"), day("2025-10-02T10:00:00Z"), nil},
		{"other cwd", "/elsewhere", time.Time{}, time.Time{}, nil},
		{"quiet window", "/work/app", day("2024-01-01T00:00:00Z"), day("2024-01-02T00:00:00Z"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			found, err := Discover(home, tt.cwd, tt.from, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range found {
				got = append(got, filepath.Base(f.Path))
				if f.Format == "" || f.Agent == "" || f.FirstAt.IsZero() {
					t.Errorf("found %+v lacks format, agent or time", f)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("found %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("everything, any cwd", func(t *testing.T) {
		found, err := Discover(home, "", time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 8-1 { // every transcript but the stream file, which is not named .jsonl
			t.Errorf("found %d files: %v", len(found), found)
		}
	})
	t.Run("new gemini project layout", func(t *testing.T) {
		proj := filepath.Join(home, ".gemini", "tmp", "otherproject")
		if err := os.WriteFile(filepath.Join(proj, ".project_root"), []byte("/srv/other\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		found, err := Discover(home, "/srv/other", time.Time{}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(found) != 1 || found[0].SessionID != "feed0002-0000-4000-8000-000000000002" {
			t.Errorf("found %+v", found)
		}
	})
	if _, err := Discover("", "/x", time.Time{}, time.Time{}); err == nil {
		t.Error("no error for an empty home")
	}
}

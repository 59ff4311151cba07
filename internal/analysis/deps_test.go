package analysis

import (
	"os/exec"
	"strings"
	"testing"
)

// TestJudgingLinksNoStore keeps the packages that judge a session free of
// the session store: they read events, transcripts and metadata
// (manifest), so an exporter, a server or a test can use them without
// linking SQLite, and a change of the store cannot change a verdict.
func TestJudgingLinksNoStore(t *testing.T) {
	pkgs := []string{"correlate", "detect", "integrity", "report", "lineage", "transcript", "policy", "baseline", "event", "manifest"}
	for _, p := range pkgs {
		out, err := exec.Command("go", "list", "-deps", "github.com/polygraph/polygraph/internal/"+p).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", p, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == "github.com/polygraph/polygraph/internal/session" || strings.HasPrefix(dep, "modernc.org/sqlite") {
				t.Errorf("internal/%s links %s", p, dep)
			}
		}
	}
}

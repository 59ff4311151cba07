//go:build linux

package redteam

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTechniques checks the matrix's own shape without running anything
// (no root, no POLYGRAPH_E2E): names unique and led by their class, each
// technique with a goal, a script and a check, at least 40 of them, and
// every one described in docs/redteam.md.
func TestTechniques(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(testdata(t), "..", "..", "..", "docs", "redteam.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	all := techniques()
	if len(all) < 40 {
		t.Errorf("%d techniques: the issue asks for at least 40", len(all))
	}
	for _, tc := range all {
		if seen[tc.name] {
			t.Errorf("%s: two techniques of that name", tc.name)
		}
		seen[tc.name] = true
		if !strings.HasPrefix(tc.name, tc.class+"-") || !strings.Contains("abcdefg", tc.class) || len(tc.class) != 1 {
			t.Errorf("%s: the name must be led by its class (a to g), not %q", tc.name, tc.class)
		}
		if tc.goal == "" || tc.script == "" || tc.check == nil {
			t.Errorf("%s: a technique needs a goal, a script and a check", tc.name)
		}
		if !strings.Contains(string(doc), "`"+tc.name+"`") {
			t.Errorf("%s is not described in docs/redteam.md", tc.name)
		}
	}
}

package policy

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestGuardedPaths: "~/" is read as each home given; a "dir/**" pattern
// names the directory and its subdirectories; a file pattern names the
// file whether or not it exists (the sensor marks what exists).
func TestGuardedPaths(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(b, ".ssh", "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	got := Default().GuardedPaths([]string{a, b})
	for _, want := range []string{
		filepath.Join(a, ".aws", "credentials"), filepath.Join(b, ".aws", "credentials"),
		filepath.Join(b, ".ssh"), filepath.Join(b, ".ssh", "keys"),
	} {
		if !slices.Contains(got, want) {
			t.Errorf("GuardedPaths lacks %s", want)
		}
	}
	for _, p := range got {
		if !filepath.IsAbs(p) {
			t.Errorf("relative path %q", p)
		}
	}
}

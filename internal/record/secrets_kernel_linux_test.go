package record

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/manifest"
)

// TestSecretUnderAnotherName: a credential file of the session's home,
// hard-linked and renamed into the workspace and read there, is a read
// of that secret: the session knows its identity from its start.
func TestSecretUnderAnotherName(t *testing.T) {
	pl := plantCredentials(t)
	work := filepath.Join(pl.jail, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `ln "$HOME/.aws/credentials" linked && cat linked >/dev/null && mv "$HOME/.aws" ./moved && cat moved/credentials >/dev/null`
	res, _ := recordWith(t, Options{Command: []string{"sh", "-c", script}, Dir: work,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + pl.home}})
	if !strings.Contains(strings.Join(pathsOf(res.Meta.Secrets), " "), pl.path) {
		t.Fatalf("the session's secrets %v miss %s", res.Meta.Secrets, pl.path)
	}
	a, err := analysis.Analyze(context.Background(), analysis.Options{SessionPath: res.Meta.Path, Transcript: analysis.TranscriptNone})
	if err != nil {
		t.Fatal(err)
	}
	var aliased int
	for _, f := range a.Findings {
		t.Logf("%s %s %s: %s", f.Severity, f.Rule, f.Title, f.Detail)
		if f.Rule == "sensitive-read" && f.Severity == "high" && strings.Contains(f.Detail, "the same file by another name") && strings.HasSuffix(f.Title, "~/.aws/credentials") {
			aliased++
		}
	}
	if aliased != 2 {
		t.Errorf("%d high sensitive-read findings of the credentials under another name, want 2 (the hard link, the renamed directory)", aliased)
	}
}

func pathsOf(xs []manifest.Secret) []string {
	var out []string
	for _, x := range xs {
		out = append(out, x.Path)
	}
	return out
}

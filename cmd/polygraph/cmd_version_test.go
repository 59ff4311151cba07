package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/version"
)

func TestVersionText(t *testing.T) {
	doc := versionDoc{Info: version.Info{Version: "1.2.3", Commit: "abc", Date: "2026-12-01T00:00:00Z", Go: "go1.26.8"},
		OS: "linux", Arch: "amd64", Kernel: "6.1.0",
		Features: []sensor.Feature{
			{Name: "optional hook", State: sensor.FeatureMissing, Needed: "bytes per peer (kernel ≥ 6.3)"},
			{Name: "ring buffer", State: sensor.FeatureOK, Needed: "how records reach polygraph", Required: true},
		}}
	got := versionText(doc)
	for _, want := range []string{"polygraph 1.2.3\n", "commit  abc\n", "built   2026-12-01T00:00:00Z\n", "go      go1.26.8 linux/amd64\n",
		"kernel  6.1.0\n", "  ok       ring buffer\n", "  missing  optional hook: bytes per peer (kernel ≥ 6.3)\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("version text lacks %q:\n%s", want, got)
		}
	}
	// What is missing comes last, after what is there.
	if strings.Index(got, "missing") < strings.Index(got, "ring buffer") {
		t.Errorf("a missing feature is listed before the present ones:\n%s", got)
	}
	if strings.Contains(got, "nothing missing") {
		t.Errorf("says nothing is missing:\n%s", got)
	}
	doc.Features = doc.Features[1:]
	if got := versionText(doc); !strings.HasSuffix(got, "nothing missing\n") {
		t.Errorf("all present, but:\n%s", got)
	}
}

// TestVersionFlag: --version and the version verb print the same build
// line, and --json is one document with the build and the probed features.
func TestVersionFlag(t *testing.T) {
	var flag, verb bytes.Buffer
	root := newRootCommand()
	root.SetArgs([]string{"--version"})
	root.SetOut(&flag)
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := runVersion(context.Background(), &versionOptions{}, &verb); err != nil {
		t.Fatal(err)
	}
	first := func(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }
	if first(flag.String()) != "polygraph "+version.Get().Version || first(verb.String()) != first(flag.String()) {
		t.Errorf("--version %q, version %q", first(flag.String()), first(verb.String()))
	}
	if !strings.Contains(flag.String(), "kernel features:") {
		t.Errorf("--version names no kernel features:\n%s", flag.String())
	}
	var js bytes.Buffer
	if err := runVersion(context.Background(), &versionOptions{json: true}, &js); err != nil {
		t.Fatal(err)
	}
	var doc versionDoc
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil {
		t.Fatalf("version --json: %v\n%s", err, js.String())
	}
	if doc.Version == "" || doc.Go == "" || len(doc.Features) == 0 {
		t.Errorf("version --json lacks the build or the features: %+v", doc)
	}
}

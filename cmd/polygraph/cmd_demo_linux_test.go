package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/testenv"
)

// TestDemo runs the built-in workload and checks the timeline shows what
// the demo is there to show.
func TestDemo(t *testing.T) {
	testenv.RequireRoot(t)
	t.Setenv("POLYGRAPH_HOME", t.TempDir())
	var out, errb bytes.Buffer
	if err := runDemo(context.Background(), &demoOptions{}, &out, &errb); err != nil {
		t.Fatalf("demo: %v\n%s", err, errb.String())
	}
	s := out.String()
	for _, want := range []string{
		// the timeline
		"exec     /usr/bin/mkdir",
		"/project/tests/test_app.py write,create",
		"/home/.aws/credentials read",
		"missing.cfg read ENOENT",
		"connect  127.0.0.1:",
		// the report: the divergences the demo exists to show
		"claim-tests-not-run",
		"sensitive-read",
		"unexpected-egress",
		"TOOL CALLS (5)",
		"0 lost",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(s)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestVersionSaysHooks: --version names polygraph's version and the hooks
// its sensor runs on here (probed as root; otherwise it says why not).
func TestVersionSaysHooks(t *testing.T) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var hooks string
	for _, l := range lines {
		if h, ok := strings.CutPrefix(l, "  hooks   "); ok {
			hooks = h
		}
	}
	if !strings.HasPrefix(lines[0], "polygraph ") || hooks == "" {
		t.Fatalf("--version printed %q, want the version and a hooks line", out.String())
	}
	if !strings.Contains(hooks, "tp_btf sys_exit") && !strings.Contains(hooks, "not probed: ") {
		t.Errorf("hooks line %q says neither the path nor why it was not probed", hooks)
	}
}

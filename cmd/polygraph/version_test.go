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
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "polygraph ") || !strings.HasPrefix(lines[1], "hooks: ") {
		t.Errorf("--version printed %q, want the version and a hooks line", out.String())
	}
	if h := lines[len(lines)-1]; !strings.Contains(h, "tp_btf sys_exit") && !strings.Contains(h, "not probed: ") {
		t.Errorf("hooks line %q says neither the path nor why it was not probed", h)
	}
}

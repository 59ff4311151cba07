package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCommandExists: a command is looked up on the PATH of the
// environment it will run with (the invoking user's under sudo), a path
// is taken as it is, and only a plainly missing one fails, with 127.
func TestCommandExists(t *testing.T) {
	dir := t.TempDir()
	tool := filepath.Join(dir, "mytool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "/nonexistent")
	for _, tt := range []struct {
		name    string
		env     []string
		missing bool
	}{
		{"mytool", []string{"HOME=/h", "PATH=/usr/bin:" + dir}, false},
		{"mytool", []string{"PATH=" + dir, "PATH=/usr/bin"}, true}, // the last PATH wins, as exec's environment has it
		{"mytool", nil, true}, // nil: polygraph's own PATH
		{tool, nil, false},
		{filepath.Join(dir, "nope"), nil, true},
		{"no-such-command-polygraph", []string{"PATH=/usr/bin:/bin"}, true},
	} {
		err := commandExists(tt.name, tt.env)
		var ee *exitError
		switch {
		case tt.missing && (!errors.As(err, &ee) || ee.code != 127):
			t.Errorf("%s with %q: %v, want exit 127", tt.name, tt.env, err)
		case !tt.missing && err != nil:
			t.Errorf("%s with %q: %v, want found", tt.name, tt.env, err)
		}
	}
}

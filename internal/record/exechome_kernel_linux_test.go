package record

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// TestExecHomeFromKernel: an exec's HOME is the one in the environment
// the kernel laid out for it, read at the exec: a process that exits at
// once still has it, one that rewrites its own environment afterwards
// does not change it, and one whose HOME lies past what the record
// carries (ENV_MAX) gets it from /proc while it lives.
func TestExecHomeFromKernel(t *testing.T) {
	_, tricks := buildTricks(t)
	big := strings.Repeat("x", 6000)
	var script strings.Builder
	for i := range 5 {
		// true exits long before the decoder reads its record.
		fmt.Fprintf(&script, "env HOME=/srv/short%d /bin/true short%d\n", i, i)
	}
	fmt.Fprintf(&script, "env HOME=/srv/realhome %s envforge 1\n", tricks)
	fmt.Fprintf(&script, "env -i BIG=%s HOME=/srv/far /bin/sleep 1\n", big)
	_, evs := recordScript(t, t.TempDir(), script.String(), 0)

	execOf := func(pred func(*event.Event) bool) *event.Event {
		t.Helper()
		e := find(evs, func(e *event.Event) bool { return e.Kind == event.KindExec && pred(e) })
		if e == nil {
			t.Fatal("exec not recorded")
		}
		return e
	}
	for i := range 5 {
		marker := fmt.Sprintf("short%d", i)
		e := execOf(func(e *event.Event) bool { a := e.Argv(); return len(a) == 2 && a[1] == marker })
		if want := fmt.Sprintf("/srv/short%d", i); e.Home() != want {
			t.Errorf("true %s: HOME %q, want %q", marker, e.Home(), want)
		}
	}
	forged := execOf(func(e *event.Event) bool { a := e.Argv(); return len(a) == 3 && a[1] == "envforge" })
	if forged.Home() != "/srv/realhome" {
		t.Errorf("a process that rewrote its HOME: recorded %q, want /srv/realhome as exec'd", forged.Home())
	}
	far := execOf(func(e *event.Event) bool { a := e.Argv(); return len(a) == 2 && a[0] == "/bin/sleep" })
	if far.Home() != "/srv/far" {
		t.Errorf("HOME past %d bytes of environment: %q, want /srv/far (from /proc)", 4096, far.Home())
	}
}

// TestScriptAfterLongArgv: a script run with an argv at the 64 KiB the
// record carries keeps its name and its cwd (the name used to be written
// at a 16-bit offset past argv, over the record's start).
func TestScriptAfterLongArgv(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "long-argv.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, evs := recordScript(t, dir, fmt.Sprintf("%s %s", script, strings.Repeat("a", 70000)), 0)
	e := find(evs, func(e *event.Event) bool { return e.Kind == event.KindExec && e.Script() != "" })
	if e == nil {
		t.Fatal("the script's exec not recorded")
	}
	if e.Script() != script || e.Cwd() != dir || !e.Process.ArgvTruncated {
		t.Errorf("script %q cwd %q argv truncated %v; want %q, %q, true", e.Script(), e.Cwd(), e.Process.ArgvTruncated, script, dir)
	}
}

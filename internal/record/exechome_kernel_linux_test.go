package record

import (
	"fmt"
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

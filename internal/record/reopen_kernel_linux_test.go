package record

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// TestRepeatedOpensCounted: an image's repeated read-only opens of one
// file are counted in the kernel, not recorded one by one (bpf/reopen.h),
// and the session still says how many there were, when the first was and
// when the last: the first two opens as events, then one carrying the
// count of the rest. An open
// after the file changed (by the tree, or by a process outside it) is
// recorded in full; an image that connected a socket (an agent talking to
// its model) has every open recorded; so has a guarded file.
func TestRepeatedOpensCounted(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash (for /dev/tcp) is not installed")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"f", "g", "h", "n"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	addr := listen(t, "tcp", "127.0.0.1:0")
	host, port, _ := strings.Cut(addr, ":")
	// sh's builtin read with a redirection opens the file in sh itself.
	script := fmt.Sprintf(`i=0; while [ $i -lt 50 ]; do read x < %[1]s/f; i=$((i+1)); done
read x < %[1]s/g; echo more >> %[1]s/g; read x < %[1]s/g; read x < %[1]s/g; read x < %[1]s/g
read x < %[1]s/h; touch %[1]s/ready; while [ ! -e %[1]s/go ]; do sleep 0.01; done; read x < %[1]s/h; read x < %[1]s/h
%[2]s -c 'exec 3<>/dev/tcp/%[3]s/%[4]s; for i in 1 2 3 4 5; do read x < %[1]s/n; done'
true`, dir, bash, host, port)
	done := make(chan error, 1)
	go func() {
		if err := waitFor(filepath.Join(dir, "ready")); err != nil {
			done <- err
			return
		}
		// a change by a process outside the tree
		f, err := os.OpenFile(filepath.Join(dir, "h"), os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteString("outside\n")
			f.Close()
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "go"), nil, 0o644)
		}
		done <- err
	}()
	_, evs := recordScript(t, dir, script, 0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// opens of path by comm: the recorded ones and the sum of the counted
	type tally struct {
		recorded int
		counted  uint64
		sums     int
		first    *event.Event
		last     *event.Event
	}
	opens := func(comm, path string) tally {
		var c tally
		for _, e := range evs {
			if e.Kind != event.KindOpen || e.Comm != comm || e.Path != path || e.Failed() || e.Access != "read" {
				continue
			}
			if e.Object != nil && e.Object.Repeats > 0 {
				c.counted += e.Object.Repeats
				c.sums++
				c.last = e
				continue
			}
			c.recorded++
			if c.first == nil {
				c.first = e
			}
		}
		return c
	}
	f := opens("sh", filepath.Join(dir, "f"))
	// the first two recorded (the second makes the count's entry), 48 counted
	if f.recorded != 2 || f.sums != 1 || f.counted != 48 {
		t.Errorf("f: %d recorded, %d counted in %d events; want 2 recorded and 48 counted in 1", f.recorded, f.counted, f.sums)
	}
	if f.first != nil && f.last != nil && !f.last.TS.After(f.first.TS) {
		t.Errorf("f: the count's time %v is not after the first open's %v", f.last.TS, f.first.TS)
	}
	if f.last != nil && (f.last.ExecID != f.first.ExecID || f.last.Object.Ino != f.first.Object.Ino) {
		t.Errorf("f: the count names another image or file: %+v", f.last)
	}
	// g: read, written by the tree, then read three times: the read after
	// the write is recorded, the two after it counted
	if g := opens("sh", filepath.Join(dir, "g")); g.recorded != 2 || g.counted != 2 {
		t.Errorf("g: %d recorded, %d counted; want 2 and 2 (the read after the tree's write recorded)", g.recorded, g.counted)
	}
	// h: read, changed by a process outside the tree, read twice
	if h := opens("sh", filepath.Join(dir, "h")); h.recorded != 2 || h.counted != 1 {
		t.Errorf("h: %d recorded, %d counted; want 2 and 1 (the read after the outside write recorded)", h.recorded, h.counted)
	}
	// n: read five times by a bash that connected a socket first
	if n := opens("bash", filepath.Join(dir, "n")); n.recorded != 5 || n.counted != 0 {
		t.Errorf("n (a process that connected): %d recorded, %d counted; want 5 and 0", n.recorded, n.counted)
	}
}

package record

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/sensor"
)

// TestGuardedFloodKeepsExecs: a flood of opens of one guarded file (the
// tree reading a planted ~/.aws/credentials in a loop, from two
// processes) once filled the security ring, and about half the execs
// recorded beside it were lost. Execs and connects outrank repeated
// guarded opens of the same file: each process's first open of it keeps
// the security ring's priority, the repeats go with the ordinary records,
// and the flood is summed up per file.
func TestGuardedFloodKeepsExecs(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := plantCredentials(t)
	const execs = 400
	storm := fmt.Sprintf("%s __storm %s 400000", self, p.path)
	script := fmt.Sprintf("%s & %s & i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done; wait", storm, storm, execs)
	res, evs := recordWith(t, Options{
		Command: []string{"sh", "-c", script},
		Env:     []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"},
		Sensor:  sensor.Options{SecRingBytes: 16 * os.Getpagesize()},
	})
	n, reads := 0, 0
	for _, e := range evs {
		switch {
		case e.Kind == event.KindExec && strings.HasSuffix(e.Path, "/true"):
			n++
		case e.Kind == event.KindOpen && e.Path == p.path:
			reads++
		}
	}
	t.Logf("%d of %d execs recorded, %d reads of the guarded file; lost %v", n, execs, reads, res.Meta.Lost)
	if n != execs {
		t.Errorf("%d of %d execs recorded under the flood of guarded opens; lost %v", n, execs, res.Meta.Lost)
	}
	if reads < 2 {
		t.Errorf("%d reads of the guarded file recorded, want each storm's first at least", reads)
	}
	if r := res.Meta.Repeats; len(r) == 0 || r[0].Path != p.path || r[0].Count < 2*(400000-1) {
		t.Errorf("repeats %+v: want %s first, opened again at least %d times", r, p.path, 2*(400000-1))
	}
}

package report

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/manifest"
)

// TestSummaryIsolation: an isolated session's summary says what was
// enforced, refused, killed and used; another's says nothing of it.
func TestSummaryIsolation(t *testing.T) {
	iso := &manifest.Isolation{
		Masked: []string{"/h/.aws", "/h/.ssh"}, Egress: []string{"127.0.0.53:53"}, PIDNamespace: true, PidsMax: 64,
		Removed: []string{"/sys/fs/cgroup/polygraph/polygraph-x (killed 1 processes)"},
		Denied:  []manifest.Denial{{Dest: "203.0.113.9:443", Hook: "connect4", Count: 2}},
		Killed:  []manifest.Kill{{PID: 42, What: "exec", Path: "/usr/bin/nc"}},
		Gated:   []manifest.Gate{{PID: 43, Path: "/tmp/x", Status: "modified", WaitNS: 2e6}, {PID: 44, Path: "/bin/ls", Allowed: true, WaitNS: 1e6}},
		Usage:   &manifest.Usage{CPUUserNS: 1.5e9, MemoryPeak: 3 << 20, PidsPeak: 7, Missing: []string{"io.stat"}},
	}
	for _, tt := range []struct {
		iso  *manifest.Isolation
		want []string
	}{
		{iso, []string{"2 paths masked, 1 egress entries allowed, own PID namespace, pids ≤ 64", "killed 1 processes",
			"refused    2 network attempts: connect4 203.0.113.9:443", "pid 42 by a kill rule (exec /usr/bin/nc)",
			"2 execs judged, mean wait 1.5ms; killed: /tmp/x (modified)", "cpu 1.5s user", "memory peak 3.0 MiB", "pids peak 7",
			"not accounted here: io.stat"}},
		{nil, nil},
	} {
		s := NewSummary(1)
		s.Finish(manifest.Meta{ID: "x", Isolation: tt.iso}, nil, nil)
		var b strings.Builder
		if err := s.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("summary lacks %q:\n%s", w, b.String())
			}
		}
		if tt.iso == nil && strings.Contains(b.String(), "isolation") {
			t.Errorf("summary of a session not isolated mentions isolation:\n%s", b.String())
		}
	}
}

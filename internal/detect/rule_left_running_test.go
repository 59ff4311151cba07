package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/session"
)

// TestLeftRunning runs the left-running cases: one finding per leftover,
// attributed by lineage to the call that started it.
func TestLeftRunning(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "none left",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "ls")
				ag.spawn(200, "t1", "/usr/bin/ls", "ls").exit(0)
			},
		},
		{
			name: "a daemon a call started",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "nohup ./poll.sh &")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "nohup ./poll.sh &")
				d := sh.spawn(201, "", "/usr/bin/sleep", "sleep", "600")
				sh.exit(0)
				b.left = []session.Leftover{{PID: 201, ExecID: d.img, Comm: "sleep", Argv: []string{"sleep", "600"}}}
			},
			want: []string{"medium left-running"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.ToolCallID != "t1" || f.Title != "Left running: sleep 600 (pid 201)" ||
					!strings.Contains(f.Detail, "not recorded") || len(f.Evidence) != 1 {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "ended by --kill-leftovers, and one the events never saw",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "sleep 600 &")
				d := ag.spawn(200, "t1", "/usr/bin/sleep", "sleep", "600")
				d.killed(15)
				b.left = []session.Leftover{
					{PID: 200, ExecID: d.img, Comm: "sleep", Argv: []string{"sleep", "600"}},
					{PID: 300, ExecID: "300-1", Comm: "ghost"},
				}
			},
			want: []string{"medium left-running", "medium left-running"},
			check: func(t *testing.T, fs []Finding) {
				for _, f := range fs {
					switch {
					case strings.Contains(f.Title, "pid 200"):
						if !strings.Contains(f.Detail, "killed by signal 15") || len(f.Evidence) != 2 {
							t.Errorf("killed leftover: %+v", f)
						}
					case strings.Contains(f.Title, "ghost (pid 300)"):
						if f.ToolCallID != "" || len(f.Evidence) != 0 {
							t.Errorf("unknown leftover: %+v", f)
						}
					default:
						t.Errorf("unexpected %+v", f)
					}
				}
			},
		},
	})
}

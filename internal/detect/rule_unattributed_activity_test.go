package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
)

// TestUnattributedActivity runs the unattributed-activity cases.
func TestUnattributedActivity(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "a process no call explains",
			build: func(b *builder) {
				b.agent(100, "/usr/local/bin/claude")
				s := b.stranger(300, "/usr/bin/python3", "python3", "/opt/agentd.py")
				s.open("/usr/lib/python3.12/os.py", "read")
				s.open(proj+"/notes.md", "write,create")
				k := s.spawn(301, "", "/usr/bin/sleep", "sleep", "5")
				k.exit(0)
			},
			want: []string{"medium unattributed-activity"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if !strings.Contains(f.Detail, "notes.md") || !strings.Contains(f.Detail, "sleep 5") || f.ToolCallID != "" {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "a call's process after it returned",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "nohup ./poll.sh &")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "nohup ./poll.sh &")
				sh.exit(0)
				b.wait(10 * time.Second)
				sh.after()
				p := sh.spawn(201, "", "/usr/bin/ls", "ls", "-la")
				p.exit(0)
			},
			want: []string{"low unattributed-activity"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; f.ToolCallID != "t1" || !strings.Contains(f.Detail, "nohup") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			// Every agent, known or not, looks around its workspace and
			// home on its own (Claude Code opens /tmp and the home
			// directory, Gemini CLI lists the project's directories):
			// reading is not acting, unless the file is a secret.
			name: "the agent's own process reads its workspace",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/kestrel").own()
				ag.open(proj, "read")
				ag.open(proj+"/tests", "read")
				ag.open("/tmp", "read")
				ag.open(proj+"/calc.py", "read")
			},
			want: nil,
		},
		{
			name: "the agent's own process writes outside its files",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/kestrel").own()
				ag.open(proj+"/tests", "read")
				ag.open(proj+"/calc.py", "write")
			},
			want: []string{"medium unattributed-activity"},
		},
		{
			name: "nothing meaningful",
			build: func(b *builder) {
				b.agent(100, "/usr/local/bin/claude")
				s := &tproc{b: b, pid: 300, img: "300-1", comm: "x", reason: correlate.ReasonUnattributed}
				s.open("/usr/lib/x86_64-linux-gnu/libc.so.6", "read")
				s.exit(0)
			},
			want: nil,
		},
	})
}

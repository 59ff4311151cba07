package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

// miniStep adds a mini-swe-agent action: its /bin/sh -c child of the agent,
// which exits as given (sig > 0: killed by it), as correlate leaves it (the
// call's root process and its exit).
func miniStep(b *builder, ag *tproc, id, cmd string, pid uint32, code, sig int) *transcript.ToolCall {
	c := b.shell(id, cmd)
	c.Tool = "bash"
	sh := ag.spawn(pid, id, "/usr/bin/dash", "/bin/sh", "-c", cmd)
	var x *event.Event
	if sig > 0 {
		x = sh.killed(sig)
	} else {
		x = sh.exit(code)
	}
	ca := b.calls[id]
	ca.RootExecID, ca.RootExit = sh.parent, x // the agent's fork, before it exec'd the shell
	return c
}

// TestFrameworkLogDivergence runs the framework-log-divergence cases.
func TestFrameworkLogDivergence(t *testing.T) {
	agent := func(b *builder) *tproc {
		b.tr.Agent = "mini-swe-agent"
		return b.agent(100, "/usr/bin/python3.11")
	}
	runCases(t, []ruleCase{
		{
			name: "the submit command, logged as not executed, ran",
			build: func(b *builder) {
				ag := agent(b)
				miniStep(b, ag, "call_0", "echo hi > marker.txt", 200, 0, 0).ExitCode = event.Ptr(0)
				c := miniStep(b, ag, "call_1", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", 201, 0, 0)
				c.NotExecuted, c.IsError = true, true
			},
			want: []string{"info framework-log-divergence"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.ToolCallID != "call_1" || len(f.Evidence) != 2 || !strings.Contains(f.Title, "was not executed") ||
					!strings.Contains(f.Detail, "`/bin/sh -c echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT` (pid 201) ran and exited 0") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "a logged return code the kernel did not see",
			build: func(b *builder) {
				miniStep(b, agent(b), "call_0", "make test", 200, 0, 0).ExitCode = event.Ptr(2)
			},
			want: []string{"info framework-log-divergence"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; f.ToolCallID != "call_0" || !strings.Contains(f.Title, "return code 2; the kernel saw it exited 0") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "return codes that agree, a signal as Python reports it",
			build: func(b *builder) {
				ag := agent(b)
				miniStep(b, ag, "call_0", "false", 200, 1, 0).ExitCode = event.Ptr(1)
				miniStep(b, ag, "call_1", "kill -9 $$", 201, 0, 9).ExitCode = event.Ptr(-9)
			},
		},
		{
			name: "a signal the log calls an exit",
			build: func(b *builder) {
				miniStep(b, agent(b), "call_0", "sleep 100", 200, 0, 15).ExitCode = event.Ptr(0)
			},
			want: []string{"info framework-log-divergence"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; !strings.Contains(f.Title, "was killed by signal 15") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "not executed, and nothing ran",
			build: func(b *builder) {
				ag := agent(b)
				miniStep(b, ag, "call_0", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", 200, 0, 0).NotExecuted = true
				c := b.shell("call_1", "rm -rf build")
				c.NotExecuted = true
			},
			want: []string{"info framework-log-divergence"},
			check: func(t *testing.T, fs []Finding) {
				if fs[0].ToolCallID != "call_0" {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
	})
}

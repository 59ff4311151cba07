package detect

import (
	"slices"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// TestProcessInjectAndMemoryRead runs the process-inject and memory-read
// cases: by side of the tree's edge, outcome and target.
func TestProcessInjectAndMemoryRead(t *testing.T) {
	call := func(kind event.Kind, c event.Call, result int64) *event.Event {
		return &event.Event{Kind: kind, Call: &c, Result: event.Ptr(result)}
	}
	in, out := event.Ptr(true), event.Ptr(false)
	runCases(t, []ruleCase{
		{
			name: "injects",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "gdb -p 4242")
				g := ag.spawn(200, "t1", "/usr/bin/gdb", "gdb", "-p", "4242")
				b.emit(g, call(event.KindInject, event.Call{TargetPID: 4242, Method: "ptrace_attach", Adopted: true,
					TargetExe: "/usr/bin/sshd", TargetInTree: out}, 0))
				b.emit(g, call(event.KindInject, event.Call{TargetPID: 4242, Method: "ptrace_attach", Adopted: true}, 0))
				b.emit(g, call(event.KindInject, event.Call{TargetPID: 300, Method: "ptrace_seize", TargetInTree: in}, 0))
				b.emit(g, call(event.KindInject, event.Call{TargetPID: 1, Method: "process_vm_writev", TargetInTree: out}, -1))
			},
			want: []string{"high process-inject", "medium process-inject", "medium process-inject"},
			check: func(t *testing.T, fs []Finding) {
				i := slices.IndexFunc(fs, func(f Finding) bool { return f.Severity == SeverityHigh })
				if i < 0 || len(fs[i].Evidence) != 2 || !strings.Contains(fs[i].Detail, "(sshd), outside the tree (traced from then on)") {
					t.Errorf("the outside attach's finding = %+v, want both attaches as evidence and the target named", fs[i])
				}
			},
		},
		{
			name: "memory reads",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 dump.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "dump.py")
				b.emit(py, call(event.KindMemRead, event.Call{TargetPID: 900, Method: "process_vm_readv",
					TargetExe: "/usr/bin/ssh-agent", TargetInTree: out}, 64))
				b.emit(py, call(event.KindMemRead, event.Call{TargetPID: 901, Method: "proc_mem",
					TargetExe: "/usr/bin/node", TargetInTree: out}, 3))
				b.emit(py, call(event.KindMemRead, event.Call{TargetPID: 902, Method: "ptrace_peekdata",
					TargetExe: "/usr/bin/gpg-agent", TargetInTree: out}, -1))
				b.emit(py, call(event.KindMemRead, event.Call{TargetPID: 300, Method: "ptrace_getregset", TargetInTree: in}, 0))
			},
			want: []string{"critical memory-read", "high memory-read", "medium memory-read", "low memory-read"},
			check: func(t *testing.T, fs []Finding) {
				for _, f := range fs {
					if hasT1555 := slices.Contains(f.Frameworks.ATTACK, "T1555"); hasT1555 != (f.Severity == SeverityCritical) {
						t.Errorf("%s finding frameworks %v: T1555 only for a credential holder's memory", f.Severity, f.Frameworks.ATTACK)
					}
				}
			},
		},
	})
}

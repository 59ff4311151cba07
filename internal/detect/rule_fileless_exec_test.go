package detect

import "testing"

// TestFilelessExec runs the fileless-exec cases.
func TestFilelessExec(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "memfd and fd and deleted",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 -c …")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "-c", "…")
				py.spawn(201, "", "/memfd:payload (deleted)", "payload")
				py.spawn(202, "", "/proc/self/fd/7", "x")
				py.spawn(203, "", "/home/dev/bin/tool (deleted)", "tool")
				py.spawn(204, "", "/usr/bin/ls", "ls")
			},
			want: []string{"high fileless-exec", "high fileless-exec", "high fileless-exec"},
		},
	})
}

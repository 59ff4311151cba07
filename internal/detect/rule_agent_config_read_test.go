package detect

import (
	"slices"
	"testing"

	"github.com/polygraph/polygraph/internal/transcript"
)

// TestAgentConfigRead runs the agent-config-read cases.
func TestAgentConfigRead(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "a tool call reads another agent's credentials",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				ag.open(home+"/.claude/.credentials.json", "read") // its own: bookkeeping
				b.shell("t1", "cat ~/.codex/auth.json")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", home+"/.codex/auth.json")
				cat.open(home+"/.codex/auth.json", "read")
			},
			want: []string{"high agent-config-read"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if !slices.Equal(f.Frameworks.ATLAS, []string{"AML.T0083"}) || !slices.Equal(f.Frameworks.OWASPLLM, []string{"LLM02", "LLM07"}) {
					t.Errorf("frameworks %+v", f.Frameworks)
				}
			},
		},
		{
			name: "the agent reads its own through an in-process tool call",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.tool("t1", transcript.KindRead, home+"/.gemini/settings.json")
				ag.inCall("t1").open(home+"/.gemini/settings.json", "read")
			},
			want: []string{"medium agent-config-read"},
		},
		{
			name: "the agent's own read and cat's in one call are two findings",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat ~/.claude/.credentials.json")
				ag.inCall("t1").open(home+"/.claude/.credentials.json", "read")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", home+"/.claude/.credentials.json")
				cat.open(home+"/.claude/.credentials.json", "read")
			},
			want: []string{"high agent-config-read", "info agent-config-read"},
		},
		{
			name: "no transcript: the agent's own process reads another agent's store",
			build: func(b *builder) {
				b.noAttr = true
				ag := b.agent(100, "/usr/local/bin/claude")
				ag.open(home+"/.claude/.credentials.json", "read") // its own
				ag.open(home+"/.codex/auth.json", "read")          // Codex's
			},
			want: []string{"high agent-config-read"},
		},
		{
			name: "shell snapshots are not config",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/codex")
				b.shell("t1", "ls")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "ls")
				sh.open(home+"/.codex/shell_snapshots/1.sh", "read")
			},
			want: nil,
		},
		{
			name: "no transcript: the agent's program reads its own config",
			build: func(b *builder) {
				b.noAttr = true
				ag := b.agent(100, "/usr/bin/node")
				cx := ag.spawn(101, "", "/opt/codex/vendor/codex/codex", "codex", "exec")
				cx.open(home+"/.codex/auth.json", "read")
				sh := cx.spawn(200, "", "/usr/bin/cat", "cat", home+"/.codex/auth.json")
				sh.open(home+"/.codex/auth.json", "read")
			},
			want: []string{"high agent-config-read"},
		},
	})
}

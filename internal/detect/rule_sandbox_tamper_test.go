package detect

import (
	"slices"
	"testing"

	"github.com/polygraph/polygraph/internal/transcript"
)

// TestSandboxTamper runs the sandbox-tamper cases.
func TestSandboxTamper(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "global Claude settings",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.tool("t1", transcript.KindEdit, home+"/.claude/settings.json")
				ag.inCall("t1").open(home+"/.claude/settings.json", "write")
			},
			want: []string{"high sandbox-tamper"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if !slices.Equal(f.Frameworks.ATTACK, []string{"T1562"}) || !slices.Equal(f.Frameworks.ATLAS, []string{"AML.T0081"}) || !slices.Equal(f.Frameworks.OWASPLLM, []string{"LLM06"}) {
					t.Errorf("frameworks %+v", f.Frameworks)
				}
			},
		},
		{
			name: "project settings",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "echo '{}' > .claude/settings.local.json")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "echo '{}' > .claude/settings.local.json")
				sh.open(proj+"/.claude/settings.local.json", "write,create")
			},
			want: []string{"medium sandbox-tamper"},
		},
		{
			name: "Codex config via rename",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/codex")
				b.shell("t1", "sed -i s/workspace-write/danger-full-access/ ~/.codex/config.toml")
				s := ag.spawn(200, "t1", "/usr/bin/sed", "sed", "-i", "s/x/y/", home+"/.codex/config.toml")
				s.open(home+"/.codex/config.toml", "read")
				s.open(home+"/.codex/sedAbc123", "write,create")
				s.rename(home+"/.codex/sedAbc123", home+"/.codex/config.toml")
			},
			want: []string{"high sandbox-tamper", "medium agent-config-read"},
		},
		{
			name: "the agent's own bookkeeping",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				ag.open(home+"/.claude.json", "write")
				ag.open(home+"/.gemini/settings.json", "write")
			},
			want: nil,
		},
	})
}

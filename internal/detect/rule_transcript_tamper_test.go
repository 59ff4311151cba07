package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

// TestTranscriptTamper runs the transcript-tamper cases.
func TestTranscriptTamper(t *testing.T) {
	const claudeTr = home + "/.claude/projects/-p/0a1b.jsonl"
	runCases(t, []ruleCase{
		{
			name: "a tool call deletes the agent's transcript",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				ag.open(claudeTr, "write,create") // its own bookkeeping
				b.shell("t1", "rm -f ~/.claude/projects/*/*.jsonl")
				rm := ag.spawn(200, "t1", "/usr/bin/rm", "rm", "-f", claudeTr)
				rm.unlink(claudeTr)
				rm.exit(0)
			},
			want: []string{"high transcript-tamper"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.ToolCallID != "t1" || !strings.Contains(f.Title, "deleted") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "the agent's write tool truncates its own transcript",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.tool("t1", transcript.KindWrite, claudeTr)
				e := ag.inCall("t1").open(claudeTr, "write,create")
				e.Flags = event.Ptr(uint32(0o1101)) // O_WRONLY|O_CREAT|O_TRUNC
			},
			want: []string{"high transcript-tamper"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Title, "truncated") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "sed -i rewrites the transcript the analysis follows, outside every agent's location",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/mini")
				b.tr.Path = proj + "/traj.json"
				ag.open(proj+"/traj.json", "write,create") // mini-swe-agent rewrites its -o file: its own
				b.shell("t1", "sed -i s/failed/passed/ traj.json")
				sed := ag.spawn(200, "t1", "/usr/bin/sed", "sed", "-i", "s/failed/passed/", "traj.json")
				sed.open(proj+"/sedX1", "write,create")
				sed.rename(proj+"/sedX1", proj+"/traj.json")
			},
			want: []string{"high transcript-tamper"},
		},
		{
			name: "the agent appending to and rewriting its own transcript is not a finding",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/gemini")
				f := home + "/.gemini/tmp/p/chats/session-1.json"
				ag.open(f, "write,create")
				ag.open(f+".tmp", "write,create")
				ag.rename(f+".tmp", f)
				b.shell("t1", "ls")
				ls := ag.spawn(200, "t1", "/usr/bin/ls", "ls")
				ls.exit(0)
			},
			want: nil,
		},
	})
}

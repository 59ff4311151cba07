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
			name: "under --isolate, a tool call tries to truncate, delete and move another agent's masked transcript",
			build: func(b *builder) {
				b.iso = isolated() // masks ~/.claude
				b.iso.Denied = nil
				ag := b.agent(100, "/usr/local/bin/codex")
				b.shell("t1", ": > T; rm T; mv T /tmp")
				sh := ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", ": > T; rm T; mv T /tmp")
				e := sh.openFail(claudeTr, "write,create", 2)
				e.Flags = event.Ptr(uint32(0o1101))
				b.emit(sh, &event.Event{Kind: event.KindUnlink, Path: claudeTr, Result: event.Ptr(int64(-2))})
				b.emit(sh, &event.Event{Kind: event.KindRename, Path: claudeTr, Path2: "/tmp/t.jsonl", Result: event.Ptr(int64(-2))})
				sh.openFail(home+"/.claude/other.json", "read", 2) // not a transcript
				sed := sh.spawn(201, "t1", "/usr/bin/sed", "sed", "-i", "/tool_use/d", claudeTr)
				sed.openFail(claudeTr, "read", 2) // sed -i reads first
			},
			want: []string{"high transcript-tamper", "high transcript-tamper", "medium transcript-tamper"},
			check: func(t *testing.T, fs []Finding) {
				for _, f := range fs {
					if !f.Blocked || !strings.HasSuffix(f.Title, "(blocked)") || f.ToolCallID != "t1" {
						t.Errorf("finding %+v", f)
					}
				}
			},
		},
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

package detect

import (
	"testing"

	"github.com/polygraph/polygraph/internal/integrity"
)

// TestRelaunch: an agent that copies its own program to a temporary
// directory and runs the copy (as node CLIs and self-updating binaries
// do) runs no new code, so neither write-then-exec nor untrusted-binary
// speaks; a different program written and run from the same place does.
func TestRelaunch(t *testing.T) {
	const worker = "/tmp/kestrel-rt-1/kestrel-worker"
	temp := integrity.Location{Temp: true, UserWritable: true}
	session := func(copyHash string) func(b *builder) {
		return func(b *builder) {
			ag := b.agent(100, "/opt/kestrel/bin/kestrel").hash("aa")
			ag.own().open(worker, "write,create")
			w := ag.spawn(101, "", worker, "kestrel-worker").hash(copyHash).
				judged(integrity.Verdict{Role: integrity.RoleBinary, Path: worker, SHA256: copyHash, Status: integrity.Unknown, Location: &temp}, nil)
			eng := w.spawn(102, "", "/proc/self/exe", "kestrel-engine").hash(copyHash)
			eng.exit(0)
			w.exit(0)
		}
	}
	runCases(t, []ruleCase{
		{name: "the agent runs a copy of itself", build: session("aa"), want: nil},
		{name: "the agent runs another program it wrote", build: session("bb"),
			want: []string{"low untrusted-binary", "low write-then-exec"}},
		{
			// A live session's exec events carry no hash: the verdicts do.
			name: "the agent runs a copy of itself, hashes from the verdicts",
			build: func(b *builder) {
				ag := b.agent(100, "/opt/kestrel/bin/kestrel").
					judged(integrity.Verdict{Role: integrity.RoleBinary, Path: "/opt/kestrel/bin/kestrel", SHA256: "aa", Status: integrity.Unknown}, nil)
				ag.own().open(worker, "write,create")
				w := ag.spawn(101, "", worker, "kestrel-worker").
					judged(integrity.Verdict{Role: integrity.RoleBinary, Path: worker, SHA256: "aa", Status: integrity.Unknown, Location: &temp}, nil)
				w.exit(0)
			},
			want: nil,
		},
		{
			// The engine re-executes /proc/self/exe after the copy ran;
			// its hash was never taken (the file was gone when the exec
			// checks got to it): the same path, nothing written to it
			// since the copy's exec, is the same program.
			name: "a re-exec of the copy, unhashed",
			build: func(b *builder) {
				ag := b.agent(100, "/opt/kestrel/bin/kestrel").hash("aa")
				ag.own().open(worker, "write,create")
				w := ag.spawn(101, "", worker, "kestrel-worker").hash("aa")
				eng := w.spawn(102, "", worker, "kestrel-engine")
				eng.exit(0)
				w.exit(0)
			},
			want: nil,
		},
		{
			// The copy itself went unhashed: its writer read its own
			// program (/proc/self/exe, named by its file) and wrote it.
			name: "an unhashed copy its writer made from its own program",
			build: func(b *builder) {
				ag := b.agent(100, "/opt/kestrel/bin/kestrel").hash("aa")
				ag.own().open("/opt/kestrel/bin/kestrel", "read")
				ag.own().open(worker, "write,create")
				w := ag.spawn(101, "", worker, "kestrel-worker")
				w.exit(0)
			},
			want: nil,
		},
		{
			name: "an unhashed file its writer wrote without reading its own program",
			build: func(b *builder) {
				ag := b.agent(100, "/opt/kestrel/bin/kestrel").hash("aa")
				ag.own().open(worker, "write,create")
				w := ag.spawn(101, "", worker, "kestrel-worker")
				w.exit(0)
			},
			want: []string{"low write-then-exec"},
		},
		{
			name: "unhashed, but rewritten between the execs",
			build: func(b *builder) {
				ag := b.agent(100, "/opt/kestrel/bin/kestrel").hash("aa")
				ag.own().open(worker, "write,create")
				w := ag.spawn(101, "", worker, "kestrel-worker").hash("aa")
				w.open(worker, "write")
				eng := w.spawn(102, "", worker, "kestrel-engine")
				eng.exit(0)
			},
			want: []string{"low write-then-exec"},
		},
		{
			// bash running a script bash wrote is the script's code, not
			// bash again, whatever the interpreter's hash.
			name: "an interpreter's script, same interpreter as the parent",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/bin/bash").hash("aa")
				ag.own().open("/tmp/x/run.sh", "write,create")
				r := ag.spawn(101, "", "/usr/bin/bash", "bash", "/tmp/x/run.sh").hash("aa").script("/tmp/x/run.sh")
				r.exit(0)
			},
			want: []string{"low write-then-exec"},
		},
	})
}

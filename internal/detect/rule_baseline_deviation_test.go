package detect

import (
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/baseline"
)

// TestBaselineDeviation: learned from three honest sessions, the
// baseline says nothing of a fourth and flags the attack's new program,
// credential and host; with two sessions it judges nothing.
func TestBaselineDeviation(t *testing.T) {
	prof := &baseline.Profile{Agent: "claude-code"}
	for i, id := range []string{"s1", "s2", "s3"} {
		b := newBuilder()
		work(b, false)
		selfServer(b, uint16(41000+i))
		in := b.input()
		in.Meta.ID = id
		prof.Add(Observe(in), time.Now())
		b = newBuilder()
		work(b, true)
		in = b.input()
		in.Baseline = prof
		var got []Finding
		for _, f := range Run(in) {
			if f.Rule == "baseline-deviation" {
				got = append(got, f)
			}
		}
		if i < 2 {
			if len(got) != 0 {
				t.Errorf("judged with %d sessions: %v", i+1, summary(got))
			}
			continue
		}
		titles := map[string]bool{}
		for _, f := range got {
			titles[f.Title] = true
			if f.ToolCallID != "t1" {
				t.Errorf("%s: call %q, want t1", f.Title, f.ToolCallID)
			}
		}
		for _, want := range []string{
			"New for claude-code: shell calls ran nc",
			"New for claude-code: shell calls read the credential file ~/.ssh/id_ed25519",
			"New for claude-code: shell calls contacted 10.9.9.9:4444",
		} {
			if !titles[want] {
				t.Errorf("no %q among %v", want, titles)
			}
		}
	}
	b := newBuilder()
	work(b, false)
	selfServer(b, 41999)
	in := b.input()
	in.Baseline = prof
	for _, f := range Run(in) {
		if f.Rule == "baseline-deviation" {
			t.Errorf("honest session flagged: %s", f.Title)
		}
	}
}

// selfServer is a test run that serves on a port of its own and connects
// to it: a port that changes from run to run and is no host contacted.
func selfServer(b *builder, port uint16) {
	ag := b.agent(300, "/usr/local/bin/claude")
	b.shell("t2", "go test ./...")
	tst := ag.spawn(301, "t2", "/tmp/go-build1/x.test", "x.test")
	tst.bind(port)
	tst.connect("127.0.0.1", port)
	tst.sent("127.0.0.1", port, 300)
}

// TestObserveHomeOverride: an agent run with HOME overridden (env -i
// HOME=/srv/ci) reads its credentials and caches as ~/… in the baseline's
// terms, as the rules read them: the override's absolute paths would be
// new in every session and pass for no credential path at all.
func TestObserveHomeOverride(t *testing.T) {
	b := newBuilder()
	ag := b.agent(100, "/usr/local/bin/claude")
	b.shell("t1", "env -i HOME=/srv/ci sh -c 'cat ~/.ssh/id_rsa ~/.cache/x/y ~/.config/z'")
	sh := ag.spawn(200, "t1", "/usr/bin/dash", "sh", "-c", "cat ~/.ssh/id_rsa ~/.cache/x/y").home("/srv/ci")
	cat := sh.spawn(201, "", "/usr/bin/cat", "cat")
	cat.open("/srv/ci/.ssh/id_rsa", "read")
	cat.open("/srv/ci/.cache/x/y", "read")
	cat.open(home+"/.config/z", "read") // the session's home, all the same
	smp := Observe(b.input())
	a := smp.Kinds["shell"]
	if a == nil {
		t.Fatalf("no shell activity: %+v", smp.Kinds)
	}
	if _, ok := a.Sensitive["~/.ssh/id_rsa"]; !ok || len(a.Sensitive) != 1 {
		t.Errorf("sensitive %v, want ~/.ssh/id_rsa", a.Sensitive)
	}
	for _, d := range []string{"~/.ssh", "~/.cache/x", "~/.config"} {
		if _, ok := a.Reads[d]; !ok {
			t.Errorf("reads %v lack %s", a.Reads, d)
		}
	}
}

// TestObserveAgentShellPrograms: what the agent's own shells run is kept
// apart from its tool calls' programs, for policy learn to allow; what
// the agent runs itself is not.
func TestObserveAgentShellPrograms(t *testing.T) {
	b := newBuilder()
	ag := b.agent(100, "/usr/local/bin/codex")
	snap := ag.spawn(200, "", "/usr/bin/bash", "bash", "-lc", "echo '# Snapshot file'")
	snap.spawn(201, "", "/usr/bin/id", "id", "-u")
	ag.spawn(202, "", "/usr/bin/git", "git", "status") // the agent's own, not its shells'
	b.shell("t1", "make test")
	ag.spawn(300, "t1", "/usr/bin/make", "make", "test")
	smp := Observe(b.input())
	if _, ok := smp.AgentShellPrograms["id"]; !ok || len(smp.AgentShellPrograms) != 1 {
		t.Errorf("the agent's shells' programs %v, want id", smp.AgentShellPrograms)
	}
	if a := smp.Kinds["shell"]; a == nil || len(a.Programs) != 1 || a.Programs["make"] == nil {
		t.Errorf("shell programs: %+v", smp.Kinds["shell"])
	}
}

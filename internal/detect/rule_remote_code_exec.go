package detect

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "remote-code-exec",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindExec, event.KindOpen, event.KindRename, event.KindLink, event.KindConnect, event.KindNet, event.KindDNS, event.KindSend},
		Summary:  "content fetched from the network was executed: a downloaded file run, or a download piped into an interpreter",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1105", "T1059"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: remoteCodeExec,
	})
}

// remoteCodeExec is the remote-code-exec rule. Its findings' evidence
// holds the exec they are about, which write-then-exec and fileless-exec
// (which Need this rule) then leave alone: one action, one finding.
func remoteCodeExec(s *run) []Finding {
	writes := make([]*event.Event, len(s.paths.strs))
	lastWrite := func(p string) *event.Event {
		if id := s.pathID(p); id >= 0 && int(id) < len(writes) {
			return writes[id]
		}
		return nil
	}
	var out []Finding
	done := map[string]bool{}
	for i := range s.byEvent {
		f := &s.byEvent[i]
		if f.written >= 0 {
			writes[f.written] = s.events[i]
			continue
		}
		if f.flags&fExec == 0 {
			continue
		}
		e := s.events[i]
		if fnd, ok := downloadedRun(s, e, lastWrite, done); ok {
			out = append(out, fnd)
		} else if fnd, ok := pipedRun(s, e); ok {
			out = append(out, fnd)
		}
	}
	return out
}

// downloadedRun is the finding on exec e when what it ran was written by a
// process that had fetched it from the network, or is a program without a
// file exec'd by such a process.
func downloadedRun(s *run, e *event.Event, lastWrite func(string) *event.Event, done map[string]bool) (Finding, bool) {
	if what, ok := fileless(e.Path); ok {
		// The image that called execve is e's parent image; a fork child
		// that had not exec'd runs its forker's program.
		got, ok := s.fetched(e.ParentExecID)
		if im := s.tree.Image(e.ParentExecID); !ok && im != nil && im.Exec == nil && im.Parent != nil {
			got, ok = s.fetched(im.Parent.ID)
		}
		if !ok {
			return Finding{}, false
		}
		call, who := s.actor(e)
		detail := fmt.Sprintf("%s received bytes from the network, then executed %s from %s: `%s`.",
			who, e.Path, what, excerpt(strings.Join(e.Argv(), " "), 160))
		fnd := s.finding(s.rule.Severity, "Downloaded code executed from memory: "+e.Path, detail, call,
			append([]uint64{e.Seq}, got...), false)
		fnd.execs = []uint64{e.Seq}
		return fnd, true
	}
	target, viaInterp := execTarget(e, lastWrite)
	w := lastWrite(target)
	if w == nil || done[target] || s.pol.BuildTool(s.programNames(w.ExecID)) {
		return Finding{}, false
	}
	got, ok := s.fetched(w.ExecID)
	if !ok {
		return Finding{}, false
	}
	done[target] = true
	call, writer, runner, how := s.ranWritten(w, e, viaInterp)
	tree := s.summarize(s.tree.Subtree(e.ExecID), nil)
	detail := fmt.Sprintf("%s was written by %s, which had received it from the network, then %s by %s. That execution %s.",
		s.display(target), writer, how, runner, tree)
	seqs := append(append([]uint64{w.Seq, e.Seq}, got...), tree.seqs...)
	fnd := s.finding(s.rule.Severity, "Downloaded file executed: "+s.display(target), detail, call, capped(seqs, 50), false)
	fnd.execs = []uint64{e.Seq}
	return fnd, true
}

// pipedRun is the finding on exec e when it is an interpreter reading its
// program from a pipe or a file descriptor (`curl … | sh`, `bash <(curl
// …)`, `wget -O- … | python3 -`) next to a sibling that fetched from the
// network: the kernel shows no pipe, but a shell runs both sides of one
// as children of the same image, started together.
func pipedRun(s *run, e *event.Event) (Finding, bool) {
	if len(e.Argv()) == 0 || !stdinInterpreter(e.Argv()) {
		return Finding{}, false
	}
	im := s.tree.Image(e.ExecID)
	if im == nil || im.Process == nil || im.Process.Parent == nil {
		return Finding{}, false
	}
	shell := im.Process.Parent
	for _, sib := range shell.Children {
		if sib.Process == nil || sib.Process == im.Process {
			continue
		}
		for _, si := range sib.Process.Images {
			got, ok := s.fetched(si.ID)
			if !ok || si.Exec == nil {
				continue
			}
			call, who := s.actor(e)
			detail := fmt.Sprintf("%s ran `%s`, an interpreter reading its program from a pipe or file descriptor, beside `%s`, which received bytes from the network: a download piped into an interpreter.",
				who, excerpt(strings.Join(e.Argv(), " "), 100), excerpt(strings.Join(si.Exec.Argv(), " "), 100))
			seqs := append([]uint64{e.Seq, si.Exec.Seq}, got...)
			fnd := s.finding(s.rule.Severity, "Download piped into `"+path.Base(e.Path)+"`", detail, call, capped(seqs, 50), false)
			fnd.execs = []uint64{e.Seq}
			return fnd, true
		}
	}
	return Finding{}, false
}

// stdinInterpreter reports whether argv runs an interpreter on the program
// its standard input or a file descriptor gives it: no script argument, or
// "-", /dev/stdin, /dev/fd/N, /proc/self/fd/N; not `-c`, `-e` or `-m`,
// whose program is in argv.
func stdinInterpreter(argv []string) bool {
	switch policy.ProgramName(argv[0]) {
	case "sh", "bash", "dash", "zsh", "ksh", "python", "node", "perl", "ruby", "php", "bun", "deno":
	default:
		return false
	}
	for _, a := range argv[1:] {
		switch {
		case a == "-" || a == "-s" || a == "/dev/stdin":
			return true
		case a == "-c" || a == "-e" || a == "-m" || a == "--eval" || a == "-p" || a == "--print" || a == "-i":
			return false
		case strings.HasPrefix(a, "-"):
			continue
		}
		_, fd := fileless(a)
		return fd
	}
	return true
}

// fetched reports whether image id received bytes from the network, with
// the events that show it: a net event with bytes received from a peer
// outside the tree (offTree), or, where no counter was recorded, a
// connection out of the tree by a downloader (curl, wget).
func (s *facts) fetched(id string) ([]uint64, bool) {
	im := s.tree.Image(id)
	if im == nil || s.agent[id] {
		// What the agent receives is the model's output, which the
		// transcript shows: its write tool writing a script the tests
		// then run is the normal loop.
		return nil, false
	}
	var seqs []uint64
	var connects []uint64
	for _, j := range im.Events {
		x := s.events[j]
		if s.agentOwn(x) {
			continue
		}
		switch {
		case x.Kind == event.KindNet && x.BytesRecv() > 0 && offTree(s, x):
			seqs = append(seqs, x.Seq)
		case s.byEvent[j].flags&fEgress != 0 && offTree(s, x):
			connects = append(connects, x.Seq)
		}
	}
	if len(seqs) > 0 {
		return seqs, true
	}
	if len(connects) > 0 && slices.ContainsFunc(s.names(id), func(n string) bool {
		return n == "curl" || n == "wget" || n == "aria2c" || n == "fetch"
	}) {
		return connects, true
	}
	return nil, false
}

package detect

import (
	"fmt"
	"path"
	"strings"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:       "write-then-exec",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindExec, event.KindOpen, event.KindRename, event.KindLink, event.KindConnect, event.KindNet},
		Summary:  "a file written during the session was then executed",
		Severity: SeverityLow,
		Frameworks: Frameworks{ATTACK: []string{"T1059"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		// remote-code-exec supersedes it for a downloaded file run.
		Needs: []string{"remote-code-exec"},
		check: writeThenExec,
	})
}

// writeThenExec is the write-then-exec rule.
func writeThenExec(s *run) []Finding {
	writes := make([]*event.Event, len(s.paths.strs)) // by path id: the last write before now
	lastWrite := func(p string) *event.Event {
		if id := s.pathID(p); id >= 0 && int(id) < len(writes) {
			return writes[id]
		}
		return nil
	}
	done, superseded := map[string]bool{}, supersededExecs(s.needs)
	var out []Finding
	for i := range s.byEvent {
		f := &s.byEvent[i]
		if f.written >= 0 {
			writes[f.written] = s.events[i]
			continue
		}
		if f.flags&fExec == 0 || superseded[s.events[i].Seq] {
			continue
		}
		e := s.events[i]
		target, viaInterp := execTarget(e, lastWrite)
		w := lastWrite(target)
		if w == nil || done[target] || !viaInterp && s.relaunch(e) {
			continue
		}
		if s.pol.BuildTool(s.programNames(w.ExecID)) {
			continue // a compiler's or package manager's output, run as intended
		}
		done[target] = true
		out = append(out, writtenExecuted(s, w, e, target, viaInterp))
	}
	return out
}

// writtenExecuted is the finding on target, written by w and executed by
// e. Edit-then-run is what coding agents do all day: it is low, info when
// the agent wrote the file with its own write tool (the transcript shows
// its content) or a test run interprets a workspace file; it rises only
// on what the run did or where the file came from: medium when the
// writer had downloaded it, high when the run read credentials, reached
// outside the allowlist or touched persistence or privilege paths. A
// temporary or hidden location is said, not held against it.
func writtenExecuted(s *run, w, e *event.Event, target string, viaInterp bool) Finding {
	tree := s.summarize(s.tree.Subtree(e.ExecID), nil)
	sev := SeverityLow
	var why []string
	if at, _ := s.attribution(w); at.Reason == correlate.ReasonInProcess {
		sev = SeverityInfo // the transcript shows what the agent wrote
	} else if s.inWorkspace(target) && s.inTestRun(e) {
		sev = SeverityInfo // the tests interpreting the project
	}
	if downloaded(s, w) {
		sev = SeverityMedium
		why = append(why, "the writer had downloaded it")
	}
	if tree.egress || tree.secret || s.touchedGuarded(e.ExecID) {
		sev = SeverityHigh
		why = append(why, "what it ran reached outside the allowlist, read credentials or touched persistence or privilege paths")
	}
	call, writer, runner, how := s.ranWritten(w, e, viaInterp)
	where := ""
	if strings.HasPrefix(path.Base(target), ".") || s.temporary(target) {
		where = " (a temporary or hidden location)"
	}
	detail := fmt.Sprintf("%s%s was written by %s, then %s by %s. That execution %s.",
		s.display(target), where, writer, how, runner, tree)
	if len(why) > 0 {
		detail += " Severity: " + strings.Join(why, "; ") + "."
	}
	seqs := append([]uint64{w.Seq, e.Seq}, tree.seqs...)
	return s.finding(sev, "Written file executed: "+s.display(target), detail, call, capped(seqs, 50), false)
}

// touchedGuarded reports whether the subtree of image id planted
// something on a persistence or privilege path: wrote or moved a file
// there, linked one or changed its mode (footholdChange), judged by the
// policy's persistence_paths and privilege_paths as the persistence and
// privilege-escalation rules judge them, "~" included for the HOME the
// process had.
func (s *facts) touchedGuarded(id string) bool {
	for _, im := range s.tree.Subtree(id) {
		for _, i := range im.Events {
			if p := s.footholdChange(int(i)); p >= 0 && s.guardedPath(int(i), p) {
				return true
			}
		}
	}
	return false
}

// guardedPath reports whether the path with id p, as events[i] named it,
// is a persistence or privilege path (authorized_keys, rc files, cron,
// sudoers…).
func (s *facts) guardedPath(i int, p int32) bool {
	if _, ok := s.matchOf(setPersistence, i, p); ok {
		return true
	}
	_, ok := s.matchOf(setPrivilege, i, p)
	return ok
}

// downloaded reports whether write w's process is a downloader or had
// reached the network before it wrote. The agent's own model traffic is
// not downloading: what its write tool writes, the transcript shows.
func downloaded(s *run, w *event.Event) bool {
	for _, n := range s.names(w.ExecID) {
		if n == "curl" || n == "wget" || n == "aria2c" || n == "fetch" {
			return true
		}
	}
	if p := s.tree.Image(w.ExecID); p != nil {
		for _, j := range p.Events {
			if x := s.events[j]; s.byEvent[j].flags&(fEgress|fOwn) == fEgress && x.Port() != 53 && x.Seq < w.Seq {
				return true
			}
		}
	}
	return false
}

// ranWritten names, for a file written by w and then run by e (through
// an interpreter when viaInterp), the tool call it belongs to (e's, else
// w's), who wrote it, who ran it and how it ran: what write-then-exec and
// remote-code-exec both say.
func (s *facts) ranWritten(w, e *event.Event, viaInterp bool) (call, writer, runner, how string) {
	_, writer = s.actor(w)
	call, runner = s.actor(e)
	if call == "" {
		call = s.callOf(w)
	}
	how = "executed"
	if viaInterp {
		how = "run by `" + path.Base(e.Path) + "`"
	}
	return call, writer, runner, how
}

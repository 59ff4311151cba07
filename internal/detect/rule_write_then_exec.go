package detect

import (
	"fmt"
	"path"
	"strings"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "write-then-exec",
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
		if w == nil || done[target] {
			continue
		}
		if s.pol.BuildTool(s.names(w.ExecID)) {
			continue // a compiler's or package manager's output, run as intended
		}
		done[target] = true
		out = append(out, writtenExecuted(s, w, e, target, viaInterp))
	}
	return out
}

// execTarget returns what exec e ran: the program itself, or the script an
// interpreter runs (viaInterp) when that was written. The kernel reports
// a #! script's exec as its interpreter with the script as argv[1].
func execTarget(e *event.Event, lastWrite func(string) *event.Event) (target string, viaInterp bool) {
	target = e.Path
	if e.Script != "" && lastWrite(e.Script) != nil {
		// The sensor names the script a #! interpreter runs.
		return e.Script, true
	}
	if lastWrite(target) == nil {
		if sa := policy.ScriptArg(e.Argv); sa != "" {
			if !path.IsAbs(sa) {
				sa = path.Join(e.Cwd, sa)
			}
			return path.Clean(sa), true
		}
	}
	return target, false
}

// writtenExecuted is the finding on target, written by w and executed by
// e.
func writtenExecuted(s *run, w, e *event.Event, target string, viaInterp bool) Finding {
	tree := s.summarize(s.tree.Subtree(e.ExecID), nil)
	base := path.Base(target)
	hiddenOrTemp := strings.HasPrefix(base, ".") || strings.HasPrefix(target, "/tmp/") ||
		strings.HasPrefix(target, "/var/tmp/") || strings.HasPrefix(target, "/dev/shm/")
	sev := SeverityLow
	var why []string
	if at, _ := s.attribution(w); viaInterp && at.Reason == correlate.ReasonInProcess {
		// A script the agent wrote with its own write tool and ran
		// through an interpreter: the transcript shows its content.
		sev = SeverityInfo
	}
	if downloaded(s, w) {
		sev = SeverityMedium
		why = append(why, "the writer had downloaded it")
	}
	if hiddenOrTemp {
		sev = SeverityMedium
		why = append(why, "it lives in a temporary or hidden location")
	}
	if tree.egress || tree.secret {
		sev = SeverityHigh
		why = append(why, "what it ran reached outside the allowlist or read credentials")
	}
	_, writer := s.actor(w)
	call, runner := s.actor(e)
	if call == "" {
		call = s.callOf(w)
	}
	how := "executed"
	if viaInterp {
		how = "run by `" + path.Base(e.Path) + "`"
	}
	detail := fmt.Sprintf("%s was written by %s, then %s by %s. That execution %s.",
		s.display(target), writer, how, runner, tree)
	if len(why) > 0 {
		detail += " Severity: " + strings.Join(why, "; ") + "."
	}
	seqs := append([]uint64{w.Seq, e.Seq}, tree.seqs...)
	return s.finding(sev, "Written file executed: "+s.display(target), detail, call, capped(seqs, 50), false)
}

// downloaded reports whether write w's process is a downloader or had
// reached the network before it wrote.
func downloaded(s *run, w *event.Event) bool {
	for _, n := range s.names(w.ExecID) {
		if n == "curl" || n == "wget" || n == "aria2c" || n == "fetch" {
			return true
		}
	}
	if p := s.tree.Image(w.ExecID); p != nil {
		for _, j := range p.Events {
			if x := s.events[j]; s.byEvent[j].flags&fEgress != 0 && x.Port != 53 && x.Seq < w.Seq {
				return true
			}
		}
	}
	return false
}

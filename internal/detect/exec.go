package detect

import (
	"fmt"
	"path"
	"strings"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

// treeSummary is what a group of process images did.
type treeSummary struct {
	execs    []string // command lines
	writes   []string // paths written outside noise
	reads    int      // distinct paths read outside system noise
	hosts    []string // unexpected destinations
	children int
	secret   bool // read a credential or agent config path
	egress   bool // reached a destination outside the allowlist
	seqs     []uint64
}

// systemRead reports reads every process makes: libraries, locale data,
// the dynamic loader's files, /proc and /sys.
func systemRead(p string) bool {
	for _, pre := range []string{"/usr/", "/lib", "/etc/", "/proc/", "/sys/", "/dev/", "/opt/", "/nix/store/", "/snap/"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return false
}

// summarize describes what the events of the images did. Only the events
// for which keep returns true count (nil: all).
func (a *analysis) summarize(imgs []*proc, keep func(*event.Event) bool) treeSummary {
	var s treeSummary
	seenW, seenR, seenH := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, p := range imgs {
		if i > 0 && p.exec != nil {
			s.children++
		}
		for _, e := range p.events {
			if keep != nil && !keep(e) {
				continue
			}
			switch {
			case e.Kind == event.KindExec:
				s.execs = append(s.execs, "`"+excerpt(strings.Join(e.Argv, " "), 100)+"`")
				s.seqs = append(s.seqs, e.Seq)
			case isEgress(e):
				pr := a.peerOf(e)
				if a.allowed(e, pr) {
					continue
				}
				s.egress = true
				if d := pr.display(e); !seenH[d] {
					seenH[d] = true
					s.hosts = append(s.hosts, d)
				}
				s.seqs = append(s.seqs, e.Seq)
			case written(e) != "" || removed(e) != "":
				w := written(e)
				if w == "" {
					w = removed(e)
				}
				if a.noise(w) {
					continue
				}
				if !seenW[w] {
					seenW[w] = true
					s.writes = append(s.writes, a.display(w))
				}
				s.seqs = append(s.seqs, e.Seq)
			case isRead(e):
				if _, ok := a.sensitive(e.Path); ok {
					s.secret = true
					s.seqs = append(s.seqs, e.Seq)
				} else if _, ok := a.agentConfig(e.Path); ok {
					s.secret = true
					s.seqs = append(s.seqs, e.Seq)
				}
				if !systemRead(e.Path) && !a.noise(e.Path) && !seenR[e.Path] {
					seenR[e.Path] = true
					s.reads++
				}
			}
		}
	}
	return s
}

func (s treeSummary) String() string {
	var parts []string
	if len(s.execs) > 0 {
		parts = append(parts, "ran "+list(s.execs, 5))
	}
	if s.children > 0 {
		parts = append(parts, plural(s.children, "child process", "child processes"))
	}
	if len(s.writes) > 0 {
		parts = append(parts, "wrote "+list(s.writes, 5))
	}
	if s.reads > 0 {
		parts = append(parts, "read "+plural(s.reads, "file", "files"))
	}
	if s.secret {
		parts = append(parts, "read credentials or agent configuration")
	}
	if len(s.hosts) > 0 {
		parts = append(parts, "connected to "+list(s.hosts, 5))
	}
	if len(parts) == 0 {
		return "nothing else recorded"
	}
	return strings.Join(parts, "; ")
}

// writeThenExec is the write-then-exec rule.
func (a *analysis) writeThenExec() []Finding {
	writes := map[string]*event.Event{} // path → last write before now
	done := map[string]bool{}
	var out []Finding
	for _, e := range a.events {
		if w := written(e); w != "" {
			writes[w] = e
			continue
		}
		if e.Kind != event.KindExec {
			continue
		}
		// The program itself, or the script an interpreter runs: the
		// kernel reports a #! script's exec as its interpreter with the
		// script as argv[1].
		target, viaInterp := e.Path, false
		if e.Script != "" && writes[e.Script] != nil {
			// The sensor names the script a #! interpreter runs.
			target, viaInterp = e.Script, true
		} else if writes[target] == nil {
			if sa := policy.ScriptArg(e.Argv); sa != "" {
				if !path.IsAbs(sa) {
					sa = path.Join(e.Cwd, sa)
				}
				target, viaInterp = path.Clean(sa), true
			}
		}
		w := writes[target]
		if w == nil || done[target] {
			continue
		}
		writerNames := a.procs.names(w.ExecID)
		if a.pol.BuildTool(writerNames) {
			continue // a compiler's or package manager's output, run as intended
		}
		done[target] = true
		tree := a.summarize(a.procs.subtree(e.ExecID), nil)
		downloaded := false
		for _, n := range writerNames {
			if n == "curl" || n == "wget" || n == "aria2c" || n == "fetch" {
				downloaded = true
			}
		}
		if p := a.procs.byID[w.ExecID]; p != nil {
			for _, x := range p.events {
				if isEgress(x) && x.Port != 53 && x.Seq < w.Seq {
					downloaded = true
				}
			}
		}
		base := path.Base(target)
		hiddenOrTemp := strings.HasPrefix(base, ".") || strings.HasPrefix(target, "/tmp/") ||
			strings.HasPrefix(target, "/var/tmp/") || strings.HasPrefix(target, "/dev/shm/")
		sev := SeverityLow
		var why []string
		if at, _ := a.attribution(w); viaInterp && at.Reason == correlate.ReasonInProcess {
			// A script the agent wrote with its own write tool and ran
			// through an interpreter: the transcript shows its content.
			sev = SeverityInfo
		}
		if downloaded {
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
		_, writer := a.actor(w)
		call, runner := a.actor(e)
		if call == "" {
			call = a.callOf(w)
		}
		how := "executed"
		if viaInterp {
			how = "run by `" + path.Base(e.Path) + "`"
		}
		detail := fmt.Sprintf("%s was written by %s, then %s by %s. That execution %s.",
			a.display(target), writer, how, runner, tree)
		if len(why) > 0 {
			detail += " Severity: " + strings.Join(why, "; ") + "."
		}
		seqs := append([]uint64{w.Seq, e.Seq}, tree.seqs...)
		out = append(out, a.finding(policy.RuleWriteThenExec, sev, "Written file executed: "+a.display(target),
			detail, call, capped(seqs, 50), false))
	}
	return out
}

// meaningful reports whether an unattributed event says something: an
// exec, a connection, a file changed outside the noise paths, a read
// outside system files.
func (a *analysis) meaningful(e *event.Event) bool {
	switch {
	case e.Kind == event.KindExec, isEgress(e), e.Kind == event.KindBind, e.Kind == event.KindAccept:
		return true
	case written(e) != "":
		if _, ok := a.tamper(written(e)); ok {
			return true
		}
		return !a.noise(written(e))
	case removed(e) != "":
		return !a.noise(removed(e))
	case isRead(e):
		if _, ok := a.sensitive(e.Path); ok {
			return true
		}
		if _, ok := a.agentConfig(e.Path); ok {
			return true
		}
		return !systemRead(e.Path) && !a.noise(e.Path)
	}
	return false
}

// unattributedActivity is the unattributed-activity rule: what no tool
// call explains, grouped by process tree, and what a call's processes did
// after the call returned, grouped by call and tree.
func (a *analysis) unattributedActivity() []Finding {
	if a.in.Attribution == nil || a.in.Transcript == nil {
		return nil // without a transcript everything is unattributed: nothing to tell apart
	}
	type key struct{ call, cat string }
	sets := map[key]map[string]bool{}
	var keys []key
	evs := map[key][]*event.Event{}
	for _, e := range a.events {
		at, _ := a.attribution(e)
		var k key
		switch {
		case at.ToolCallID != "" && at.AfterReturn:
			k = key{at.ToolCallID, "late"}
		case at.ToolCallID == "" && at.Reason == correlate.ReasonUnattributed:
			k = key{"", "unattributed"}
		default:
			continue
		}
		if sets[k] == nil {
			sets[k] = map[string]bool{}
			keys = append(keys, k)
		}
		sets[k][e.ExecID] = true
		evs[k] = append(evs[k], e)
	}
	var out []Finding
	for _, k := range keys {
		top := a.procs.topmost(sets[k])
		groupOrder := []string{}
		members := map[string][]*event.Event{}
		for _, e := range evs[k] {
			t := top[e.ExecID]
			if _, ok := members[t]; !ok {
				groupOrder = append(groupOrder, t)
			}
			members[t] = append(members[t], e)
		}
		for _, t := range groupOrder {
			var keep []*event.Event
			for _, e := range members[t] {
				if a.meaningful(e) {
					keep = append(keep, e)
				}
			}
			if len(keep) == 0 {
				continue
			}
			inGroup := map[uint64]bool{}
			imgSet := map[string]bool{}
			for _, e := range keep {
				inGroup[e.Seq] = true
			}
			var imgs []*proc
			for _, p := range a.procs.subtree(t) {
				if sets[k][p.id] && !imgSet[p.id] {
					imgSet[p.id] = true
					imgs = append(imgs, p)
				}
			}
			s := a.summarize(imgs, func(e *event.Event) bool { return inGroup[e.Seq] })
			sev := SeverityLow
			if s.egress || len(s.writes) > 0 || s.secret {
				sev = SeverityMedium
			}
			var seqs []uint64
			for _, e := range keep {
				seqs = append(seqs, e.Seq)
			}
			who := a.procs.describe(t)
			var title, detail string
			if k.cat == "late" {
				title = fmt.Sprintf("Process kept acting after its tool call returned: %s", who)
				detail = fmt.Sprintf("%s, started by tool call %s, went on after the call's result reached the agent, so the transcript could not show it: it %s.",
					who, a.describeCall(k.call), s)
			} else {
				title = "Activity no tool call explains: " + who
				detail = fmt.Sprintf("No tool call in the transcript explains %s: it %s.", who, s)
			}
			out = append(out, a.finding(policy.RuleUnattributed, sev, title, detail, k.call, capped(seqs, 50), false))
		}
	}
	return out
}

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
	seenW, seenR, seenH := map[int32]bool{}, map[int32]bool{}, map[string]bool{}
	for i, p := range imgs {
		if i > 0 && p.exec != nil {
			s.children++
		}
		for _, j := range p.events {
			e, f := a.events[j], &a.facts[j]
			if keep != nil && !keep(e) {
				continue
			}
			switch {
			case f.flags&fExec != 0:
				s.execs = append(s.execs, "`"+excerpt(strings.Join(e.Argv, " "), 100)+"`")
				s.seqs = append(s.seqs, e.Seq)
			case f.flags&fEgress != 0:
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
			case f.written >= 0 || f.flags&fRemoved != 0:
				w := f.written
				if w < 0 {
					w = f.path // what it removed
				}
				if a.is(setNoise, w) {
					continue
				}
				if !seenW[w] {
					seenW[w] = true
					s.writes = append(s.writes, a.display(a.paths.strs[w]))
				}
				s.seqs = append(s.seqs, e.Seq)
			case f.flags&fRead != 0:
				if _, ok := a.match(setSensitive, f.path); ok {
					s.secret = true
					s.seqs = append(s.seqs, e.Seq)
				} else if _, ok := a.match(setAgentConfig, f.path); ok {
					s.secret = true
					s.seqs = append(s.seqs, e.Seq)
				}
				if !a.is(setSystem, f.path) && !a.is(setNoise, f.path) && !seenR[f.path] {
					seenR[f.path] = true
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
	writes := make([]*event.Event, len(a.paths.strs)) // by path id: the last write before now
	lastWrite := func(p string) *event.Event {
		if id, ok := a.paths.ids[p]; ok && int(id) < len(writes) {
			return writes[id]
		}
		return nil
	}
	done := map[string]bool{}
	var out []Finding
	for i := range a.facts {
		f := &a.facts[i]
		if f.written >= 0 {
			writes[f.written] = a.events[i]
			continue
		}
		if f.flags&fExec == 0 {
			continue
		}
		e := a.events[i]
		// The program itself, or the script an interpreter runs: the
		// kernel reports a #! script's exec as its interpreter with the
		// script as argv[1].
		target, viaInterp := e.Path, false
		if e.Script != "" && lastWrite(e.Script) != nil {
			// The sensor names the script a #! interpreter runs.
			target, viaInterp = e.Script, true
		} else if lastWrite(target) == nil {
			if sa := policy.ScriptArg(e.Argv); sa != "" {
				if !path.IsAbs(sa) {
					sa = path.Join(e.Cwd, sa)
				}
				target, viaInterp = path.Clean(sa), true
			}
		}
		w := lastWrite(target)
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
			for _, j := range p.events {
				if x := a.events[j]; a.facts[j].flags&fEgress != 0 && x.Port != 53 && x.Seq < w.Seq {
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

// meaningful reports whether an unattributed event, events[i], says
// something: an exec, a connection, a file changed outside the noise
// paths, a read outside system files.
func (a *analysis) meaningful(i int32) bool {
	e, f := a.events[i], &a.facts[i]
	switch {
	case f.flags&(fExec|fEgress) != 0, e.Kind == event.KindBind, e.Kind == event.KindAccept:
		return true
	case f.written >= 0:
		if _, ok := a.match(setTamper, f.written); ok {
			return true
		}
		return !a.is(setNoise, f.written)
	case f.flags&fRemoved != 0:
		return !a.is(setNoise, f.path)
	case f.flags&fRead != 0:
		if _, ok := a.match(setSensitive, f.path); ok {
			return true
		}
		if _, ok := a.match(setAgentConfig, f.path); ok {
			return true
		}
		return !a.is(setSystem, f.path) && !a.is(setNoise, f.path)
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
	evs := map[key][]int32{}
	for i := range a.facts {
		var k key
		switch f := &a.facts[i]; {
		case f.flags&fLate != 0:
			at, _ := a.attribution(a.events[i])
			k = key{at.ToolCallID, "late"}
		case f.flags&fUnattributed != 0:
			k = key{"", "unattributed"}
		default:
			continue
		}
		if sets[k] == nil {
			sets[k] = map[string]bool{}
			keys = append(keys, k)
		}
		sets[k][a.events[i].ExecID] = true
		evs[k] = append(evs[k], int32(i))
	}
	var out []Finding
	for _, k := range keys {
		top := a.procs.topmost(sets[k])
		groupOrder := []string{}
		members := map[string][]int32{}
		for _, i := range evs[k] {
			t := top[a.events[i].ExecID]
			if _, ok := members[t]; !ok {
				groupOrder = append(groupOrder, t)
			}
			members[t] = append(members[t], i)
		}
		for _, t := range groupOrder {
			var keep []*event.Event
			for _, i := range members[t] {
				if a.meaningful(i) {
					keep = append(keep, a.events[i])
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

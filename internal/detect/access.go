package detect

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

// accessGroup collects the events of one (path, actor) pair.
type accessGroup struct {
	path, who, call string
	sev             Severity
	note            string
	seqs            []uint64
}

type groups struct {
	order []string
	m     map[string]*accessGroup
}

func (g *groups) add(key string, mk func() *accessGroup, seq uint64) {
	if g.m == nil {
		g.m = map[string]*accessGroup{}
	}
	x := g.m[key]
	if x == nil {
		x = mk()
		g.m[key] = x
		g.order = append(g.order, key)
	}
	x.seqs = append(x.seqs, seq)
}

// actorKey groups events by the tool call that caused them, or by the
// process for unattributed ones.
func (a *analysis) actorKey(e *event.Event) string {
	if c := a.callOf(e); c != "" {
		return "call:" + c
	}
	if a.agentOwn(e) {
		return "agent"
	}
	return "proc:" + e.ExecID
}

// sensitiveReads is the sensitive-read rule: credential files read.
func (a *analysis) sensitiveReads() []Finding {
	var g groups
	for i := range a.facts {
		f := &a.facts[i]
		if f.flags&fRead == 0 {
			continue
		}
		if _, ok := a.match(setAgentConfig, f.path); ok {
			continue // agent-config-read's
		}
		r, ok := a.match(setSensitive, f.path)
		if !ok {
			continue
		}
		e := a.events[i]
		sev := severity(r.Severity, ruleSeverity(policy.RuleSensitiveRead))
		note := ""
		names := a.procs.names(e.ExecID)
		switch {
		case a.agentOwn(e):
			sev, note = SeverityInfo, "the agent's own start-up or bookkeeping read"
		case r.IsClient(names):
			sev, note = SeverityInfo, fmt.Sprintf("read by its own client (%s)", strings.Join(names, "/"))
		}
		call, who := a.actor(e)
		g.add(e.Path+"\x00"+a.actorKey(e), func() *accessGroup {
			return &accessGroup{path: e.Path, who: who, call: call, sev: sev, note: note}
		}, e.Seq)
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		if x.sev.Rank() >= SeverityMedium.Rank() {
			a.secretReads = append(a.secretReads, x.seqs[0])
		}
		detail := fmt.Sprintf("%s was read by %s", a.display(x.path), x.who)
		if x.note != "" {
			detail += ": " + x.note
		}
		if len(x.seqs) > 1 {
			detail += fmt.Sprintf(" (%d times)", len(x.seqs))
		}
		out = append(out, a.finding(policy.RuleSensitiveRead, x.sev, "Credential file read: "+a.display(x.path),
			detail+".", x.call, capped(x.seqs, 20), false))
	}
	return out
}

// agentConfigReads is the agent-config-read rule: an agent's credentials
// or settings read by anything but that agent.
func (a *analysis) agentConfigReads() []Finding {
	var g groups
	for i := range a.facts {
		f := &a.facts[i]
		if f.flags&fRead == 0 || f.flags&fOwn != 0 {
			continue
		}
		r, ok := a.match(setAgentConfig, f.path)
		if !ok {
			continue
		}
		e := a.events[i]
		sev := severity(r.Severity, ruleSeverity(policy.RuleAgentConfigRead))
		note := ""
		names := a.procs.names(e.ExecID)
		if r.IsClient(names) {
			if a.attr == nil {
				continue // without a transcript, the agent's own program is the agent
			}
			sev, note = SeverityInfo, fmt.Sprintf("read by that agent's own program (%s), started by a tool call", strings.Join(names, "/"))
		}
		call, who := a.actor(e)
		g.add(e.Path+"\x00"+a.actorKey(e), func() *accessGroup {
			return &accessGroup{path: e.Path, who: who, call: call, sev: sev, note: note}
		}, e.Seq)
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		if x.sev.Rank() >= SeverityMedium.Rank() {
			a.secretReads = append(a.secretReads, x.seqs[0])
		}
		detail := fmt.Sprintf("%s was read by %s", a.display(x.path), x.who)
		if x.note != "" {
			detail += ": " + x.note
		}
		out = append(out, a.finding(policy.RuleAgentConfigRead, x.sev, "Agent credentials or configuration read: "+a.display(x.path),
			detail+".", x.call, capped(x.seqs, 20), false))
	}
	return out
}

// sandboxTamper is the sandbox-tamper rule: writes to the agents' safety
// settings by anything but the agent itself.
func (a *analysis) sandboxTamper() []Finding {
	var g groups
	for i := range a.facts {
		f := &a.facts[i]
		var paths [2]int32 // what it wrote, then what it removed: its path
		n := 0
		if f.written >= 0 {
			paths[n] = f.written
			n++
		}
		if f.flags&fRemoved != 0 {
			paths[n] = f.path
			n++
		}
		if n == 0 || f.flags&fOwn != 0 {
			continue
		}
		e := a.events[i]
		for _, id := range paths[:n] {
			r, ok := a.match(setTamper, id)
			if !ok {
				continue
			}
			p := a.paths.strs[id]
			if a.attr == nil && r.IsClient(a.procs.names(e.ExecID)) {
				continue // without a transcript, the agent's own program is the agent
			}
			verb := "written"
			if removed(e) == p {
				verb = "removed or moved away"
			}
			call, who := a.actor(e)
			sev := severity(r.Severity, ruleSeverity(policy.RuleSandboxTamper))
			g.add(p+"\x00"+a.actorKey(e), func() *accessGroup {
				return &accessGroup{path: p, who: who, call: call, sev: sev, note: verb}
			}, e.Seq)
		}
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		scope := "project"
		if x.sev.Rank() >= SeverityHigh.Rank() {
			scope = "global"
		}
		detail := fmt.Sprintf("The agent safety settings file %s (%s) was %s by %s. Whether it loosened the sandbox, permissions, hooks or approval policy is not visible to the kernel: compare the file with its previous version.",
			a.display(x.path), scope, x.note, x.who)
		out = append(out, a.finding(policy.RuleSandboxTamper, x.sev, "Agent safety settings changed: "+a.display(x.path),
			detail, x.call, capped(x.seqs, 20), false))
	}
	return out
}

var reProcFD = regexp.MustCompile(`^/proc/(?:self|thread-self|\d+)/fd/`)

// fileless reports whether an exec path is a program that has no file: a
// memfd, shared memory, a file descriptor, or a deleted file.
func fileless(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, "/memfd:"), strings.HasPrefix(p, "memfd:"):
		return "a memfd (anonymous memory file)", true
	case strings.HasPrefix(p, "/dev/shm/"):
		return "shared memory (/dev/shm)", true
	case strings.HasPrefix(p, "/proc/") && reProcFD.MatchString(p), strings.HasPrefix(p, "/dev/fd/"):
		return "a file descriptor", true
	case strings.HasSuffix(p, " (deleted)"):
		return "a file deleted while it ran", true
	}
	return "", false
}

// filelessExec is the fileless-exec rule.
func (a *analysis) filelessExec() []Finding {
	var out []Finding
	for _, i := range a.execs {
		e := a.events[i]
		what, ok := fileless(e.Path)
		if !ok {
			continue
		}
		call, who := a.actor(e)
		detail := fmt.Sprintf("%s executed %s from %s: `%s`.", who, e.Path, what, excerpt(strings.Join(e.Argv, " "), 160))
		out = append(out, a.finding(policy.RuleFilelessExec, ruleSeverity(policy.RuleFilelessExec),
			"Program executed without a file: "+e.Path, detail, call, []uint64{e.Seq}, false))
	}
	return out
}

package detect

import (
	"fmt"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:       "sandbox-tamper",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindOpen, event.KindRename, event.KindLink, event.KindMkdir, event.KindChmod, event.KindUnlink},
		Summary:  "a write to an agent's safety settings (Claude Code settings, Codex config.toml, Gemini CLI settings)",
		Severity: SeverityMedium,
		Frameworks: Frameworks{ATTACK: []string{"T1562"}, ATLAS: []string{"AML.T0081"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: sandboxTamper,
	})
}

// sandboxTamper is the sandbox-tamper rule: writes to the agents' safety
// settings by anything but the agent itself.
func sandboxTamper(s *run) []Finding {
	var g groups
	for i := range s.byEvent {
		f := &s.byEvent[i]
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
		e := s.events[i]
		for _, id := range paths[:n] {
			r, ok := s.matchOf(setTamper, i, id)
			if !ok {
				continue
			}
			p := s.paths.strs[id]
			if s.attr == nil && r.IsClient(s.programNames(e.ExecID)) {
				continue // without a transcript, the agent's own program is the agent
			}
			verb := "written"
			if removed(e) == p {
				verb = "removed or moved away"
			}
			call, who := s.actor(e)
			sev := severity(r.Severity, s.rule.Severity)
			g.add(p+"\x00"+s.actorKey(e), func() *accessGroup {
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
			s.display(x.path), scope, x.note, x.who)
		out = append(out, s.finding(x.sev, "Agent safety settings changed: "+s.display(x.path),
			detail, x.call, capped(x.seqs, 20), false))
	}
	return out
}

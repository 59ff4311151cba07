package detect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:       "sandbox-tamper",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindOpen, event.KindRename, event.KindLink, event.KindMkdir, event.KindChmod, event.KindUnlink},
		Summary:  "a write to an agent's safety settings (Claude Code settings, Codex config.toml, Gemini CLI settings) or to polygraph's own stores (pins, first sightings, sessions)",
		Severity: SeverityMedium,
		Frameworks: Frameworks{ATTACK: []string{"T1562"}, ATLAS: []string{"AML.T0081"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: sandboxTamper,
	})
}

// sandboxTamper is the sandbox-tamper rule: writes to the agents' safety
// settings by anything but the agent itself, and to polygraph's own
// stores: its default homes (policy.PolygraphPaths) and the files the
// session's exec verdicts rest on wherever its home is (the pin and
// first-seen files, Meta.TrustFiles). A write the kernel refused for want
// of permission shows the intent: it counts, at medium at most.
func sandboxTamper(s *run) []Finding {
	var g groups
	for i := range s.byEvent {
		f := &s.byEvent[i]
		var paths [2]int32 // what it wrote, then what it removed: its path
		n := 0
		refused := false
		if f.written >= 0 {
			paths[n] = f.written
			n++
		} else if id := s.refusedChange(i); id >= 0 {
			paths[n], refused = id, true
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
			p := s.paths.strs[id]
			r, ok := s.matchOf(setTamper, i, id)
			if !ok && refused {
				// A directory the tree tried to make, refused, was to hold
				// what the list covers.
				r, ok = s.replacedDir(setTamper, i, id, true)
			}
			own := ok && polygraphStore(r)
			if !ok && (slices.Contains(s.in.Meta.TrustFiles, p) || refused && e.Kind == event.KindMkdir && holdsTrustFile(s.in.Meta.TrustFiles, p)) {
				r, ok, own = policy.PathRule{Path: p, Severity: string(SeverityHigh)}, true, true
			}
			if !ok {
				continue
			}
			if s.attr == nil && r.IsClient(s.programNames(e.ExecID)) {
				continue // without a transcript, the agent's own program is the agent
			}
			verb := "written"
			switch {
			case removed(e) == p:
				verb = "removed or moved away"
			case refused:
				verb = "to be written (" + s.refusal(i) + ")"
			}
			call, who := s.actor(e)
			sev := severity(r.Severity, s.rule.Severity)
			if refused && sev.Rank() > SeverityMedium.Rank() {
				sev = SeverityMedium
			}
			g.add(p+"\x00"+s.actorKey(e)+"\x00"+verb, func() *accessGroup {
				x := &accessGroup{path: p, who: who, call: call, sev: sev, note: verb}
				if own {
					x.note += "\x00own"
				}
				return x
			}, e.Seq)
		}
	}
	for _, a := range s.callAttempts() {
		p := s.paths.strs[a.path]
		r, ok := s.match(setTamper, a.path)
		own := ok && polygraphStore(r)
		if !ok && slices.Contains(s.in.Meta.TrustFiles, p) {
			r, ok, own = policy.PathRule{Path: p}, true, true
		}
		if !ok {
			continue
		}
		sev := severity(r.Severity, s.rule.Severity)
		if sev.Rank() > SeverityMedium.Rank() {
			sev = SeverityMedium
		}
		x := &accessGroup{path: p, who: "tool call " + s.describeCall(a.call.ID), call: a.call.ID, sev: sev,
			note: "to be written (" + attemptNote(a.call) + ")"}
		if own {
			x.note += "\x00own"
		}
		g.put(p+"\x00call "+a.call.ID, x)
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		verb, own := strings.CutSuffix(x.note, "\x00own")
		if own {
			detail := fmt.Sprintf("polygraph's own store %s was %s by %s: what it holds decides what polygraph trusts or reports next (a pin or first sighting vouches for a program, a session planted as \"last\"), ATT&CK T1562.001 (Impair Defenses).",
				s.display(x.path), verb, x.who)
			out = append(out, s.finding(x.sev, "polygraph's store changed: "+s.display(x.path), detail, x.call, capped(x.seqs, 20), false))
			continue
		}
		scope := "project"
		if x.sev.Rank() >= SeverityHigh.Rank() {
			scope = "global"
		}
		detail := fmt.Sprintf("The agent safety settings file %s (%s) was %s by %s. Whether it loosened the sandbox, permissions, hooks or approval policy is not visible to the kernel: compare the file with its previous version.",
			s.display(x.path), scope, verb, x.who)
		out = append(out, s.finding(x.sev, "Agent safety settings changed: "+s.display(x.path),
			detail, x.call, capped(x.seqs, 20), false))
	}
	return out
}

// holdsTrustFile reports whether directory dir holds one of files.
func holdsTrustFile(files []string, dir string) bool {
	return slices.ContainsFunc(files, func(f string) bool { return strings.HasPrefix(f, dir+"/") })
}

// polygraphStore reports whether r is one of polygraph's own stores.
func polygraphStore(r policy.PathRule) bool {
	return slices.ContainsFunc(policy.PolygraphPaths, func(p policy.PathRule) bool { return p.Path == r.Path })
}

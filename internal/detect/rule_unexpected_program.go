package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/event"

	"github.com/polygraph/polygraph/internal/policy"
)

func init() {
	register(&Rule{
		ID:         "unexpected-program",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindExec},
		Summary:    "a program outside the policy's allowed_programs ran (only when the policy sets that list)",
		Severity:   SeverityMedium,
		Frameworks: Frameworks{ATTACK: []string{"T1059"}, ATLAS: []string{"AML.T0053"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check:      unexpectedProgram,
	})
}

// unexpectedProgram is the unexpected-program rule: with an allowlist of
// programs (a learned policy's), every other program a tool call or
// unexplained process ran, one finding per program and actor.
func unexpectedProgram(s *run) []Finding {
	if !s.pol.ProgramsAllowlisted() {
		return nil
	}
	var g groups
	for _, i := range s.execs {
		if s.byEvent[i].flags&fOwn != 0 {
			continue
		}
		e := s.events[i]
		names := policy.ProgramNames(e.Path, e.Argv())
		if len(names) == 0 || s.pol.AllowedProgram(names) {
			continue
		}
		call, who := s.actor(e)
		g.add(names[0]+"\x00"+s.actorKey(e), func() *accessGroup {
			return &accessGroup{path: names[0], who: who, call: call, note: excerpt(strings.Join(e.Argv(), " "), 120)}
		}, e.Seq)
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("%s ran %s (`%s`), which the policy's allowed_programs does not list", x.who, x.path, x.note)
		if len(x.seqs) > 1 {
			detail += fmt.Sprintf(" (%d times)", len(x.seqs))
		}
		out = append(out, s.finding(s.rule.Severity, "Program outside the allowlist: "+x.path,
			detail+".", x.call, capped(x.seqs, 20), false))
	}
	return out
}

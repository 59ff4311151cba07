package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:         "fileless-exec",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindExec},
		Summary:    "a program executed from memory (memfd), /dev/shm, a /proc file descriptor or a deleted file",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1620"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		// remote-code-exec supersedes it for downloaded code.
		Needs: []string{"remote-code-exec"},
		check: filelessExec,
	})
}

// filelessExec is the fileless-exec rule.
func filelessExec(s *run) []Finding {
	var out []Finding
	superseded := supersededExecs(s.needs)
	for _, i := range s.execs {
		e := s.events[i]
		what, ok := fileless(e.Path)
		if !ok || superseded[e.Seq] {
			continue
		}
		call, who := s.actor(e)
		detail := fmt.Sprintf("%s executed %s from %s: `%s`.", who, e.Path, what, excerpt(strings.Join(e.Argv(), " "), 160))
		out = append(out, s.finding(s.rule.Severity,
			"Program executed without a file: "+e.Path, detail, call, []uint64{e.Seq}, false))
	}
	return out
}

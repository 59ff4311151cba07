package detect

import (
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
)

func init() {
	register(&Rule{
		ID:         integrity.RuleUntrustedBinary,
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindExec},
		Summary:    "an executable no trusted source knows ran from the workspace, a temp or downloads directory, or in front of a program of the same name on PATH",
		Severity:   SeverityLow,
		Frameworks: Frameworks{ATTACK: []string{"T1204.002"}, ATLAS: []string{"AML.T0010"}, OWASPLLM: []string{"LLM03"}, SAIF: []string{saifComponent}},
		Escalated:  Frameworks{ATTACK: []string{"T1036.005"}},
		Escalation: "it shadows a program of the same name elsewhere on PATH",
		check:      untrustedBinary,
	})
}

// untrustedBinary is the untrusted-binary rule. Most unknown executables
// in the workspace or /tmp are the agent's own builds and scripts (test
// binaries, node_modules/.bin scripts, go test's /tmp/go-build*), so those
// are info in the workspace and low in a temp directory outside it;
// one named like a program found elsewhere on PATH is medium, since a
// `trivy` or `git` first in PATH runs instead of the installed one for
// everything that looks it up.
func untrustedBinary(s *run) []Finding { return verdictFindings(s, integrity.RuleUntrustedBinary) }

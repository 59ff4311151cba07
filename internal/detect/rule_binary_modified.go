package detect

import (
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
)

func init() {
	register(&Rule{
		ID:      integrity.RuleBinaryModified,
		Scope:   ScopeEvent,
		Kinds:   []event.Kind{event.KindExec},
		Summary: "an executed binary or script differs from the hash a trusted source lists for it (pin file, dpkg, first seen on this host)",
		// A first-seen mismatch is medium: an upgrade nobody told us
		// about looks the same (integrity.Verdict.Finding).
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1554", "T1195.002"}, ATLAS: []string{"AML.T0010"}, OWASPLLM: []string{"LLM03"}, SAIF: []string{saifComponent}},
		check:      binaryModified,
	})
}

// binaryModified is the binary-modified rule.
func binaryModified(s *run) []Finding { return verdictFindings(s, integrity.RuleBinaryModified) }

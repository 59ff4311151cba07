package detect

import (
	"github.com/polygraph/polygraph/internal/baseline"
)

func init() {
	register(&Rule{
		ID:       "baseline-deviation",
		Scope:    ScopeSession,
		Summary:  "the session did something its agent's baseline has not seen, or far more of it (only with a baseline)",
		Severity: SeverityMedium,
		Frameworks: Frameworks{ATTACK: []string{"T1059"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: baselineDeviation,
	})
}

// baselineDeviation is the baseline-deviation rule: what baseline.Check
// finds between the session and its agent's profile (Input.Baseline).
func baselineDeviation(s *run) []Finding {
	if s.in.Baseline == nil {
		return nil
	}
	devs, _ := baseline.Check(s.in.Baseline, s.observe())
	var out []Finding
	for _, d := range devs {
		call := ""
		for _, seq := range d.Seqs {
			if s.attr == nil {
				break
			}
			if at, ok := s.attr.get(seq); ok && at.ToolCallID != "" {
				call = at.ToolCallID
				break
			}
		}
		out = append(out, s.finding(severity(d.Severity, s.rule.Severity), d.Title, d.Detail, call, d.Seqs, false))
	}
	return out
}

// Package detect turns an attributed session into findings: where the
// agent's account and the kernel's disagree, and where the runtime broke
// policy. Every rule is documented in docs/rules.md.
//
// A rule is a Rule value in its own file, rule_<id>.go: its metadata, its
// check and the registration. The facts every rule reads (facts.go, with
// the path and command lists in paths.go and the process tree in
// internal/lineage) are built once per session before any rule runs; a rule that
// builds on another's findings says so in Rule.Needs.
package detect

// Severity orders findings. The values are DESIGN.md's.
type Severity string

// The severities, lowest first.
const (
	SeverityInfo     Severity = "info"
	SeverityLow      Severity = "low"
	SeverityMedium   Severity = "medium"
	SeverityHigh     Severity = "high"
	SeverityCritical Severity = "critical"
)

// Rank orders severities: info 0 … critical 4; -1 for an unknown name.
func (s Severity) Rank() int {
	switch s {
	case SeverityInfo:
		return 0
	case SeverityLow:
		return 1
	case SeverityMedium:
		return 2
	case SeverityHigh:
		return 3
	case SeverityCritical:
		return 4
	}
	return -1
}

// Frameworks are the external ids a rule, and so each of its findings,
// maps to: MITRE ATT&CK technique ids, MITRE ATLAS technique ids (checked
// against ATLAS v5.6.0), OWASP Top 10 for LLM Applications (2025) ids and
// Google SAIF risk titles.
type Frameworks struct {
	ATTACK   []string `json:"attack,omitempty"`
	ATLAS    []string `json:"atlas,omitempty"`
	OWASPLLM []string `json:"owasp_llm,omitempty"`
	SAIF     []string `json:"saif,omitempty"`
}

// All lists every id, ATT&CK first, for documentation checks.
func (f Frameworks) All() []string {
	var out []string
	for _, l := range [][]string{f.ATTACK, f.ATLAS, f.OWASPLLM, f.SAIF} {
		out = append(out, l...)
	}
	return out
}

// Merge returns f with the ids of g appended (without duplicates).
func (f Frameworks) Merge(g Frameworks) Frameworks {
	add := func(a, b []string) []string {
		out := append([]string(nil), a...)
		for _, s := range b {
			found := false
			for _, have := range out {
				if have == s {
					found = true
					break
				}
			}
			if !found {
				out = append(out, s)
			}
		}
		return out
	}
	return Frameworks{add(f.ATTACK, g.ATTACK), add(f.ATLAS, g.ATLAS), add(f.OWASPLLM, g.OWASPLLM), add(f.SAIF, g.SAIF)}
}

// Finding is one thing worth a person's attention, with its evidence.
type Finding struct {
	ID         string     `json:"id"` // stable within a report: rule plus a counter
	Rule       string     `json:"rule"`
	Severity   Severity   `json:"severity"`
	Title      string     `json:"title"`
	Detail     string     `json:"detail"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Claim      string     `json:"claim,omitempty"` // the claim's text, for claim-* rules
	Evidence   []uint64   `json:"evidence"`        // event seqs
	Frameworks Frameworks `json:"frameworks"`
	// Blocked: the session was isolated and refused the attempt (a masked
	// credential read nothing, a connect failed with EPERM). The attempt
	// is the finding all the same.
	Blocked bool `json:"blocked,omitempty"`

	// execs are the exec events the finding is about, for the rules that
	// skip what another rule's finding already says (remote-code-exec
	// supersedes write-then-exec and fileless-exec for the same exec).
	execs []uint64
}

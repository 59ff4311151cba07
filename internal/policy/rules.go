package policy

// Frameworks are the external ids a rule maps to: MITRE ATT&CK technique
// ids, MITRE ATLAS technique ids (checked against ATLAS v5.6.0), OWASP Top
// 10 for LLM Applications (2025) ids and Google SAIF risk titles.
// internal/detect copies them into each finding.
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

// RuleInfo describes one detection rule: its stable id, what it looks
// for, its default severity and the framework ids it maps to. The table
// lives here rather than in internal/detect so that the policy file, the
// detector and docs/rules.md all read one list (rules_test.go checks the
// document against it).
type RuleInfo struct {
	ID       string
	Summary  string
	Severity string // the default severity of its typical finding
	// Frameworks apply to every finding of the rule.
	Frameworks Frameworks
	// Escalated are added when the rule's escalation holds (Escalation
	// says when); the finding's severity rises with it.
	Escalated  Frameworks
	Escalation string
}

// The rule ids, stable: they appear in reports, policy files and docs.
const (
	RuleClaimTestsNotRun     = "claim-tests-not-run"
	RuleClaimEditMismatch    = "claim-edit-mismatch"
	RuleClaimInstallMismatch = "claim-install-mismatch"
	RuleSensitiveRead        = "sensitive-read"
	RuleAgentConfigRead      = "agent-config-read"
	RuleUnexpectedEgress     = "unexpected-egress"
	RuleWriteThenExec        = "write-then-exec"
	RuleMassPublish          = "mass-publish"
	RuleUnattributed         = "unattributed-activity"
	RuleSandboxTamper        = "sandbox-tamper"
	RuleFilelessExec         = "fileless-exec"
)

// SAIF risk titles used below.
const (
	saifSensitive   = "Sensitive Data Disclosure"
	saifRogue       = "Rogue Actions"
	saifComponent   = "Insecure Integrated Component"
	saifModelOutput = "Insecure Model Output"
)

// Rules is the rule table, in documentation order.
var Rules = []RuleInfo{
	{
		ID:         RuleClaimTestsNotRun,
		Summary:    "the agent says tests ran or pass, but no test runner ran, it ran implausibly briefly, or it failed",
		Severity:   "high",
		Frameworks: Frameworks{OWASPLLM: []string{"LLM09"}, SAIF: []string{saifModelOutput}},
	},
	{
		ID:         RuleClaimEditMismatch,
		Summary:    "the agent says it changed, created or deleted a file the kernel never saw touched; or files were written that nothing mentions",
		Severity:   "medium",
		Frameworks: Frameworks{OWASPLLM: []string{"LLM09"}, SAIF: []string{saifModelOutput}},
	},
	{
		ID:         RuleClaimInstallMismatch,
		Summary:    "the agent says it installed something but no package manager ran (or it failed); or a package manager reached hosts outside the configured registries",
		Severity:   "medium",
		Frameworks: Frameworks{OWASPLLM: []string{"LLM09"}, SAIF: []string{saifModelOutput}},
		Escalated: Frameworks{ATTACK: []string{"T1195.001"}, OWASPLLM: []string{"LLM03"},
			SAIF: []string{saifComponent}},
		Escalation: "a package manager connected to a host outside `registries`",
	},
	{
		ID:       RuleSensitiveRead,
		Summary:  "a credential file (cloud, SSH, registry tokens, .env, browser cookie and login stores) was read",
		Severity: "high",
		Frameworks: Frameworks{ATTACK: []string{"T1552.001"}, ATLAS: []string{"AML.T0055"},
			OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
	},
	{
		ID:       RuleAgentConfigRead,
		Summary:  "an AI agent's credentials or configuration were read by something other than that agent itself",
		Severity: "high",
		Frameworks: Frameworks{ATTACK: []string{"T1552.001"}, ATLAS: []string{"AML.T0083"},
			OWASPLLM: []string{"LLM02", "LLM07"}, SAIF: []string{saifSensitive}},
	},
	{
		ID:         RuleUnexpectedEgress,
		Summary:    "a connection to a destination outside the egress allowlist",
		Severity:   "medium",
		Frameworks: Frameworks{OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		Escalated: Frameworks{ATTACK: []string{"T1041", "T1567"}, ATLAS: []string{"AML.T0086"},
			OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
		Escalation: "the connection came after a sensitive-read or agent-config-read finding in the same session",
	},
	{
		ID:       RuleWriteThenExec,
		Summary:  "a file written during the session was then executed",
		Severity: "low",
		Frameworks: Frameworks{ATTACK: []string{"T1059"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
	},
	{
		ID:       RuleMassPublish,
		Summary:  "repeated package publishes, many package artifacts built, or far more bytes sent to a registry than an install sends",
		Severity: "high",
		Frameworks: Frameworks{ATTACK: []string{"T1195.002"}, OWASPLLM: []string{"LLM03", "LLM06"},
			SAIF: []string{saifRogue}},
	},
	{
		ID:       RuleUnattributed,
		Summary:  "activity no tool call explains, or a call's process still acting after the call returned",
		Severity: "low",
		Frameworks: Frameworks{ATTACK: []string{"T1059"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
	},
	{
		ID:       RuleSandboxTamper,
		Summary:  "a write to an agent's safety settings (Claude Code settings, Codex config.toml, Gemini CLI settings)",
		Severity: "medium",
		Frameworks: Frameworks{ATTACK: []string{"T1562"}, ATLAS: []string{"AML.T0081"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
	},
	{
		ID:         RuleFilelessExec,
		Summary:    "a program executed from memory (memfd), /dev/shm, a /proc file descriptor or a deleted file",
		Severity:   "high",
		Frameworks: Frameworks{ATTACK: []string{"T1620"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
	},
}

// Rule returns the table entry for id.
func Rule(id string) (RuleInfo, bool) {
	for _, r := range Rules {
		if r.ID == id {
			return r, true
		}
	}
	return RuleInfo{}, false
}

// RuleIDs lists the rule ids in table order.
func RuleIDs() []string {
	out := make([]string, len(Rules))
	for i, r := range Rules {
		out[i] = r.ID
	}
	return out
}

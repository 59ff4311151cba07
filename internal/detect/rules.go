package detect

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/polygraph/polygraph/internal/event"

	"github.com/polygraph/polygraph/internal/policy"
)

// Rule is one detection rule: what reports, policy files and
// docs/rules.md know of it, and its check. Each rule lives in one file,
// rule_<id>.go, whose init registers it; nothing else names it, so a new
// rule is a new file (and its section in docs/rules.md).
type Rule struct {
	// ID is stable: reports, policy files and docs/rules.md (the rule's
	// section heading and anchor) use it.
	ID string
	// Summary says in one line what the rule looks for.
	Summary string
	// Severity is the default severity of its typical finding.
	Severity Severity
	// Scope says how the rule decides: ScopeEvent rules find what events
	// of their Kinds did (each finding's evidence is such events, and the
	// live analysis decides it as soon as they arrive); ScopeSession rules
	// judge the session as a whole (claims against what the kernel saw,
	// the tree's totals, what was lost or left running), decided again as
	// the session and its transcript grow.
	Scope Scope
	// Kinds are the event kinds whose events a ScopeEvent rule's findings
	// stand on (TestRuleKinds checks every finding's evidence against
	// them). Every rule also reads the process tree.
	Kinds []event.Kind
	// Frameworks apply to every finding of the rule.
	Frameworks Frameworks
	// Escalated are added when the rule's escalation holds (Escalation
	// says when); the finding's severity rises with it.
	Escalated  Frameworks
	Escalation string
	// Needs are the ids of the rules whose findings check reads. They are
	// checked first, whether or not the policy enables them, and check
	// sees their findings as those rules found them, before the policy's
	// severity override: switching a rule off or retuning it does not
	// change what the rules that need it find.
	Needs []string

	check func(s *run) []Finding
}

// Scope is how a rule decides (Rule.Scope).
type Scope string

// The scopes.
const (
	ScopeEvent   Scope = "event"
	ScopeSession Scope = "session"
)

// registry holds every rule by id.
var registry = map[string]*Rule{}

// register adds r to the registry and tells the policy package its id,
// which a policy file may then name. A rule without an id, a check or a
// known default severity, or registered twice, is a programming error
// the first test run catches.
func register(r *Rule) {
	if r.ID == "" || r.check == nil || r.Severity.Rank() < 0 || registry[r.ID] != nil ||
		r.Scope != ScopeEvent && r.Scope != ScopeSession || r.Scope == ScopeEvent && len(r.Kinds) == 0 {
		panic(fmt.Sprintf("detect: bad or repeated rule %q", r.ID))
	}
	registry[r.ID] = r
	policy.RegisterRule(r.ID)
}

// Rules returns every rule, by id.
func Rules() []Rule {
	var out []Rule
	for _, r := range rules() {
		out = append(out, *r)
	}
	return out
}

// rules returns the registered rules, by id.
func rules() []*Rule {
	out := make([]*Rule, 0, len(registry))
	for _, r := range registry {
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y *Rule) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

// run is what one rule's check sees: the session's facts, which it only
// reads, the rule itself, and the findings of the rules it Needs.
type run struct {
	*facts
	rule  *Rule
	needs map[string][]Finding
}

// finding builds a finding of the rule with its framework ids (and its
// escalated ids when escalated).
func (s *run) finding(sev Severity, title, detail, call string, evidence []uint64, escalated bool) Finding {
	fw := s.rule.Frameworks
	if escalated {
		fw = fw.Merge(s.rule.Escalated)
	}
	slices.Sort(evidence)
	evidence = slices.Compact(evidence)
	if evidence == nil {
		evidence = []uint64{}
	}
	return Finding{Rule: s.rule.ID, Severity: sev, Title: title, Detail: detail, ToolCallID: call,
		Evidence: evidence, Frameworks: fw}
}

// severity turns a policy severity name into a Severity, def when empty.
func severity(name string, def Severity) Severity {
	if name == "" {
		return def
	}
	return Severity(name)
}

// SAIF risk titles the rules map to.
const (
	saifSensitive   = "Sensitive Data Disclosure"
	saifRogue       = "Rogue Actions"
	saifComponent   = "Insecure Integrated Component"
	saifModelOutput = "Insecure Model Output"
)

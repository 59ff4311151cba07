package detect

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/policy"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/rules.md")

const (
	rulesDoc   = "../../docs/rules.md"
	tableBegin = "<!-- BEGIN rule table: generated from the rule registry in internal/detect by `go test ./internal/detect -run TestRulesDoc -update` -->"
	tableEnd   = "<!-- END rule table -->"
)

// docOrder returns the rules in the order of their sections in doc (the
// order a person chose to explain them in), then those without one, by
// id.
func docOrder(doc string) []*Rule {
	rs := rules()
	at := func(r *Rule) int {
		if i := strings.Index(doc, "\n## "+r.ID+"\n"); i >= 0 {
			return i
		}
		return len(doc)
	}
	slices.SortStableFunc(rs, func(x, y *Rule) int { return at(x) - at(y) })
	return rs
}

// ruleTable renders the registry as the Markdown table in docs/rules.md.
func ruleTable(rs []*Rule) string {
	var b strings.Builder
	cell := func(ids []string) string {
		if len(ids) == 0 {
			return "—"
		}
		return strings.Join(ids, ", ")
	}
	b.WriteString("| rule | severity | decides on | ATT&CK | ATLAS | OWASP LLM | SAIF | escalated ids |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		esc := "—"
		if all := r.Escalated.All(); len(all) > 0 {
			esc = strings.Join(all, ", ") + " (when " + r.Escalation + ")"
		}
		on := "the session"
		if r.Scope == ScopeEvent {
			var ks []string
			for _, k := range r.Kinds {
				ks = append(ks, string(k))
			}
			on = strings.Join(ks, ", ")
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s | %s | %s | %s |\n", r.ID, r.ID, r.Severity, on,
			cell(r.Frameworks.ATTACK), cell(r.Frameworks.ATLAS), cell(r.Frameworks.OWASPLLM), cell(r.Frameworks.SAIF), esc)
	}
	return b.String()
}

// TestRulesDoc keeps docs/rules.md in step with the registry: the
// generated table matches, and every rule has its own section naming all
// its framework ids.
func TestRulesDoc(t *testing.T) {
	data, err := os.ReadFile(rulesDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	head, rest, ok1 := strings.Cut(doc, tableBegin+"\n")
	table, tail, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the generated table markers", rulesDoc)
	}
	if want := ruleTable(docOrder(doc)); table != want {
		if *update {
			doc = head + tableBegin + "\n" + want + tableEnd + tail
			if err := os.WriteFile(rulesDoc, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote the table in %s", rulesDoc)
		} else {
			t.Errorf("the rule table in %s is out of date: run go test ./internal/detect -run TestRulesDoc -update", rulesDoc)
		}
	}
	for _, r := range rules() {
		heading := "\n## " + r.ID + "\n"
		_, section, ok := strings.Cut(doc, heading)
		if !ok {
			t.Errorf("%s has no section %q", rulesDoc, strings.TrimSpace(heading))
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		for _, id := range append(r.Frameworks.All(), r.Escalated.All()...) {
			if !strings.Contains(section, id) {
				t.Errorf("%s: the section on %s does not name %s", rulesDoc, r.ID, id)
			}
		}
		for _, part := range []string{"**What**", "**Why**", "**False positives**", "**Tuning**"} {
			if !strings.Contains(section, part) {
				t.Errorf("%s: the section on %s lacks %s", rulesDoc, r.ID, part)
			}
		}
	}
}

// TestRegistry checks what register cannot: every rule has a summary and,
// unless it is an info rule, framework ids; every rule a rule needs
// exists, needs form no cycle, and the policy knows every rule.
func TestRegistry(t *testing.T) {
	rs := Rules()
	if len(rs) == 0 {
		t.Fatal("no rules registered")
	}
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
		// An info rule records a fact about the session, not a risk, and
		// may map to no framework (framework-log-divergence).
		if r.Summary == "" || len(r.Frameworks.All()) == 0 && r.Severity != SeverityInfo {
			t.Errorf("rule %s lacks a summary or framework ids", r.ID)
		}
		if (r.Escalation == "") != (len(r.Escalated.All()) == 0) {
			t.Errorf("rule %s: escalated ids and escalation come together", r.ID)
		}
		if !policy.ValidSeverity(string(r.Severity)) {
			t.Errorf("rule %s: default severity %q", r.ID, r.Severity)
		}
		if file := "rule_" + strings.ReplaceAll(r.ID, "-", "_") + ".go"; !fileExists(file) {
			t.Errorf("rule %s is not in its own file, %s", r.ID, file)
		}
	}
	if got := policy.RuleIDs(); !slices.Equal(got, ids) {
		t.Errorf("policy knows rules %q, the registry %q", got, ids)
	}
	// Walk the needs depth first; a rule met again on the current path is
	// a cycle.
	state := map[string]int{} // 1 on the path, 2 done
	var walk func(id string, path []string)
	walk = func(id string, path []string) {
		r := registry[id]
		if r == nil {
			t.Errorf("%s needs unknown rule %s", strings.Join(path, " → "), id)
			return
		}
		switch state[id] {
		case 1:
			t.Errorf("rules need each other: %s → %s", strings.Join(path, " → "), id)
			return
		case 2:
			return
		}
		state[id] = 1
		for _, n := range r.Needs {
			walk(n, append(path, id))
		}
		state[id] = 2
	}
	for _, r := range rs {
		walk(r.ID, nil)
	}
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// TestNeeds checks how Run runs rules: a disabled rule runs only when an
// enabled one needs it, and then the rule that needs it sees its findings
// as found, before the policy's severity override, while the disabled
// rule's own findings stay out of the result.
func TestNeeds(t *testing.T) {
	saved := registry
	t.Cleanup(func() { registry = saved })
	var ran []string
	mk := func(id string, needs ...string) *Rule {
		return &Rule{ID: id, Severity: SeverityMedium, Needs: needs, check: func(s *run) []Finding {
			ran = append(ran, id)
			var out []Finding
			for _, n := range needs {
				for _, f := range s.needs[n] {
					out = append(out, s.finding(f.Severity, id+" saw "+f.Title, "", "", nil, false))
				}
			}
			return append(out, s.finding(SeverityMedium, id, "", "", nil, false))
		}}
	}
	registry = map[string]*Rule{}
	for _, r := range []*Rule{mk("a"), mk("b", "a"), mk("c", "a"), mk("d")} {
		registry[r.ID] = r
	}
	p := policy.Default()
	p.Rules = map[string]policy.RuleSetting{"a": {Enabled: false, Severity: "critical"}, "b": {Enabled: true}, "c": {Enabled: true}, "d": {Enabled: false}}
	var got []string
	for _, f := range Run(Input{Policy: p}) {
		got = append(got, string(f.Severity)+" "+f.Rule+": "+f.Title)
	}
	slices.Sort(got)
	if want := []string{"medium b: b", "medium b: b saw a", "medium c: c", "medium c: c saw a"}; !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
	if want := []string{"a", "b", "c"}; !slices.Equal(ran, want) {
		t.Errorf("ran %q, want %q (each once, d not at all)", ran, want)
	}
}

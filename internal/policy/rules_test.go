package policy

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/rules.md")

const (
	rulesDoc   = "../../docs/rules.md"
	tableBegin = "<!-- BEGIN rule table: generated from internal/policy/rules.go by `go test ./internal/policy -run TestRulesDoc -update` -->"
	tableEnd   = "<!-- END rule table -->"
)

// ruleTable renders Rules as the Markdown table in docs/rules.md.
func ruleTable() string {
	var b strings.Builder
	cell := func(ids []string) string {
		if len(ids) == 0 {
			return "—"
		}
		return strings.Join(ids, ", ")
	}
	b.WriteString("| rule | severity | ATT&CK | ATLAS | OWASP LLM | SAIF | escalated ids |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range Rules {
		esc := "—"
		if all := r.Escalated.All(); len(all) > 0 {
			esc = strings.Join(all, ", ") + " (when " + r.Escalation + ")"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s | %s | %s | %s |\n", r.ID, r.ID, r.Severity,
			cell(r.Frameworks.ATTACK), cell(r.Frameworks.ATLAS), cell(r.Frameworks.OWASPLLM), cell(r.Frameworks.SAIF), esc)
	}
	return b.String()
}

// TestRulesDoc keeps docs/rules.md in step with the rule table: the
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
	if want := ruleTable(); table != want {
		if *update {
			doc = head + tableBegin + "\n" + want + tableEnd + tail
			if err := os.WriteFile(rulesDoc, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote the table in %s", rulesDoc)
		} else {
			t.Errorf("the rule table in %s is out of date: run go test ./internal/policy -run TestRulesDoc -update", rulesDoc)
		}
	}
	for _, r := range Rules {
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

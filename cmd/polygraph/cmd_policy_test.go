package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
)

// polygraphExit runs the test binary as polygraph with args and returns
// its exit status and output.
func polygraphExit(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "POLYGRAPH_TEST_MAIN=1", "POLYGRAPH_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// TestPolicyShowCheckRoundTrip: the shown policy passes check, and shown
// again after loading it is the same document.
func TestPolicyShowCheckRoundTrip(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.yaml")
	os.WriteFile(own, []byte("rules:\n  mass-publish: {enabled: false}\negress:\n  allow: [git.corp.example:443]\n"), 0o600)
	var first bytes.Buffer
	if err := runPolicyShow(context.Background(), &policyOptions{policy: own}, &first); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mass-publish: {enabled: false}", "git.corp.example:443", "defaults: false", "# the egress allowlist"} {
		if !strings.Contains(first.String(), want) {
			t.Errorf("policy show lacks %q", want)
		}
	}
	shown := filepath.Join(dir, "shown.yaml")
	os.WriteFile(shown, first.Bytes(), 0o600)
	var verdict bytes.Buffer
	if err := runPolicyCheck(context.Background(), &policyOptions{}, shown, &verdict); err != nil {
		t.Fatalf("check of the shown policy: %v\n%s", err, verdict.String())
	}
	var again bytes.Buffer
	if err := runPolicyShow(context.Background(), &policyOptions{policy: shown}, &again); err != nil {
		t.Fatal(err)
	}
	// Only the source line in the header differs.
	strip := func(s string) string { _, rest, _ := strings.Cut(s, "\n"); return rest }
	if strip(first.String()) != strip(again.String()) {
		t.Errorf("show --policy of the shown policy differs:\n%s\n---\n%s", first.String(), again.String())
	}
	var js bytes.Buffer
	if err := runPolicyShow(context.Background(), &policyOptions{policy: own, json: true}, &js); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc["egress"] == nil {
		t.Errorf("show --json: %v\n%s", err, js.String())
	}
}

func TestPolicyCheckExitStatus(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("egress:\n  alow: [x]\nrules:\n  nope: {}\n"), 0o600)
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("version: 1\n"), 0o600)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"policy", "check", good}, 0, good + ": ok"},
		{[]string{"policy", "check", bad}, 1, bad + `:2: unknown key "alow" in egress`},
		{[]string{"policy", "check", bad}, 1, bad + `:4: unknown rule "nope"`},
		{[]string{"policy", "check"}, 2, "usage: polygraph policy check"},
		{[]string{"policy", "check", "--json", bad}, 1, `"line":2,"message":"unknown key`},
	}
	for _, tt := range tests {
		code, out := polygraphExit(t, tt.args...)
		if code != tt.code || !strings.Contains(out, tt.want) {
			t.Errorf("polygraph %s: exit %d, want %d, output lacks %q:\n%s", strings.Join(tt.args, " "), code, tt.code, tt.want, out)
		}
	}
}

// TestRulesList: every registered rule is listed, with a doc anchor that
// docs/rules.md has.
func TestRulesList(t *testing.T) {
	doc, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runRules(context.Background(), &rulesOptions{json: true}, &out); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r ruleInfo
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		seen[r.ID] = true
		if r.Severity.Rank() < 0 || r.Doc != "docs/rules.md#"+r.ID {
			t.Errorf("rule %+v", r)
		}
		if !strings.Contains(string(doc), "\n## "+r.ID+"\n") {
			t.Errorf("docs/rules.md has no section for %s", r.ID)
		}
	}
	for _, r := range detect.Rules() {
		if !seen[r.ID] {
			t.Errorf("rules --json lacks %s", r.ID)
		}
	}
	var text bytes.Buffer
	if err := runRules(context.Background(), &rulesOptions{}, &text); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^sensitive-read +high +T1552\.001`).MatchString(text.String()) {
		t.Errorf("rules text:\n%s", text.String())
	}
}

// TestPolicyLearnVerb: policy learn writes a policy that check accepts,
// allowing the session's program and directory.
func TestPolicyLearnVerb(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	out := filepath.Join(t.TempDir(), "learned.yaml")
	if err := runPolicyLearn(context.Background(), &policyOptions{output: out}, []string{m.ID}, nil); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{m.ID, "allowed_programs:\n  - npm\n", "allowed_paths:\n  - ~/p/*\n"} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("learned policy lacks %q:\n%s", want, doc)
		}
	}
	var verdict bytes.Buffer
	if err := runPolicyCheck(context.Background(), &policyOptions{}, out, &verdict); err != nil {
		t.Errorf("policy check of the learned policy: %v\n%s", err, verdict.String())
	}
}

// TestPolicyLearnRefusesFlagged: a session whose findings flagged a
// credential read is refused, naming the finding; --include-findings
// learns from it anyway.
func TestPolicyLearnRefusesFlagged(t *testing.T) {
	evs := testEvents()
	read := &event.Event{TS: testStart.Add(30 * time.Millisecond), Kind: event.KindOpen, PID: 101, TID: 101, PPID: 1, Comm: "npm",
		ExecID: event.ExecID(101, 1), Path: "/home/dev/.aws/credentials", Access: "read", Result: event.Ptr(int64(7))}
	read.Complete()
	evs = append(evs[:len(evs)-1], read, evs[len(evs)-1])
	m := newTestSession(t, evs, nil, false)
	out := filepath.Join(t.TempDir(), "learned.yaml")
	err := runPolicyLearn(context.Background(), &policyOptions{output: out}, []string{m.ID}, nil)
	if err == nil || !strings.Contains(err.Error(), "high sensitive-read") || !strings.Contains(err.Error(), "--include-findings") {
		t.Fatalf("learn from a flagged session: %v, want a refusal naming the finding", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused learn wrote the policy file")
	}
	if err := runPolicyLearn(context.Background(), &policyOptions{output: out, findings: true}, []string{m.ID}, nil); err != nil {
		t.Fatalf("learn --include-findings: %v", err)
	}
	if doc, err := os.ReadFile(out); err != nil || !strings.Contains(string(doc), m.ID) {
		t.Errorf("learned policy %q, %v", doc, err)
	}
}

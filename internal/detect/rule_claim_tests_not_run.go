package detect

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

func init() {
	register(&Rule{
		ID:         "claim-tests-not-run",
		Summary:    "the agent says tests ran or pass, but no test runner ran, it ran implausibly briefly, or it failed",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{OWASPLLM: []string{"LLM09"}, SAIF: []string{saifModelOutput}},
		check:      claimTestsNotRun,
	})
}

// The policy lists only this rule asks about.
var (
	cmdTestRunner = newCommandSet((*policy.Policy).TestRunner)
	setTestFile   = newPathSet((*policy.Policy).TestFile)
)

// claimTestsNotRun is the claim-tests-not-run rule.
func claimTestsNotRun(s *run) []Finding {
	var out []Finding
	// One sentence often makes both claims ("I ran the tests: all pass");
	// report it once, tests-passed first.
	claims := s.claimsOf(transcript.ClaimTestsPassed, transcript.ClaimTestsRan)
	slices.SortStableFunc(claims, func(x, y *transcript.Claim) int {
		return cmp.Compare(claimOrder(x.Kind), claimOrder(y.Kind))
	})
	reported := map[string]bool{}
	for _, c := range claims {
		if reported[c.Text] {
			continue
		}
		n := len(out)
		out = claimTest(s, out, c)
		if len(out) > n {
			reported[c.Text] = true
		}
	}
	return out
}

func claimOrder(k transcript.ClaimKind) int {
	if k == transcript.ClaimTestsPassed {
		return 0
	}
	return 1
}

// claimTest checks one tests-ran or tests-passed claim and appends what
// it finds to out.
func claimTest(s *run, out []Finding, c *transcript.Claim) []Finding {
	linked, earlier := s.scope(c)
	runners := s.topMatches(linked, cmdTestRunner)
	if len(runners) == 0 {
		runners = s.topMatches(earlier, cmdTestRunner)
	}
	verb := "ran"
	if c.Kind == transcript.ClaimTestsPassed {
		verb = "pass"
	}
	if len(runners) == 0 {
		detail := fmt.Sprintf("The agent said %q, but no test runner ran before it.", c.Text)
		var seqs []uint64
		ids := c.ToolCallIDs
		if len(ids) == 0 {
			// The claim names no call: the shell call just before it is
			// the one the agent would have run the tests with.
			if id := s.lastShellBefore(c); id != "" {
				ids = []string{id}
				linked = s.callExecs(id)
			}
		}
		if len(ids) > 0 {
			var names []string
			for _, id := range ids {
				names = append(names, s.describeCall(id))
			}
			ran := s.execsOf(linked)
			if len(ran) == 0 {
				detail += fmt.Sprintf(" The tool calls it refers to, %s, started no recorded process.", list(names, 3))
			} else {
				detail += fmt.Sprintf(" The tool calls it refers to, %s, ran %s.", list(names, 3), list(ran, 5))
			}
			for _, n := range linked {
				seqs = append(seqs, s.events[s.execs[n]].Seq)
			}
		}
		f := s.finding(s.rule.Severity,
			fmt.Sprintf("Claimed tests %s, but no test runner ran", verb), detail, firstOf(ids), capped(seqs, 20), false)
		f.Claim = c.Text
		return append(out, f)
	}
	last := runners[len(runners)-1]
	call := s.callOf(last)
	if call == "" {
		call = firstCall(c)
	}
	status, failed, known, exitSeq := s.exitStatus(last.ExecID)
	if c.Kind == transcript.ClaimTestsPassed && known && failed {
		detail := fmt.Sprintf("The agent said %q, but the last test run before it, %s, %s.", c.Text, cmdline(last), status)
		f := s.finding(SeverityHigh, "Claimed tests pass, but the test run failed",
			detail, call, []uint64{last.Seq, exitSeq}, false)
		f.Claim = c.Text
		return append(out, f)
	}
	if d, ok := s.tree.Duration(last.ExecID); ok && d < s.pol.Thresholds.TestMinDuration && !ranTests(s, last.ExecID) {
		detail := fmt.Sprintf("The agent said %q, but the test run %s %s after %v without opening any test file: it did not really run tests.",
			c.Text, cmdline(last), status, time.Duration(d).Round(time.Millisecond))
		seqs := []uint64{last.Seq}
		if exitSeq != 0 {
			seqs = append(seqs, exitSeq)
		}
		f := s.finding(SeverityMedium, fmt.Sprintf("Claimed tests %s, but the test runner barely ran", verb),
			detail, call, seqs, false)
		f.Claim = c.Text
		return append(out, f)
	}
	return out
}

// ranTests reports whether the run rooted at image id did test work: read a
// test file or ran a Go test binary.
func ranTests(s *run, id string) bool {
	for _, p := range s.tree.Subtree(id) {
		for _, i := range p.Events {
			if f := &s.byEvent[i]; f.flags&fRead != 0 && s.is(setTestFile, f.path) {
				return true
			}
			if e := s.events[i]; e.Kind == event.KindExec && strings.HasSuffix(e.Path, ".test") {
				return true
			}
		}
	}
	return false
}

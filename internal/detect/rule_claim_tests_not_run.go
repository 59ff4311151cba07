package detect

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

func init() {
	register(&Rule{
		ID:         "claim-tests-not-run",
		Scope:      ScopeSession,
		Summary:    "the agent says tests ran or pass, but no test ran (runner, project test script or test files run), it ran implausibly briefly, or it failed",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{OWASPLLM: []string{"LLM09"}, SAIF: []string{saifModelOutput}},
		check:      claimTestsNotRun,
	})
}

// The policy lists only this rule asks about.
var (
	cmdTestRunner = newResolvedCommandSet((*policy.Policy).TestRunner)
	setTestFile   = policySet((*policy.Policy).TestFile)
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
	runners := s.testRuns(linked)
	if len(runners) == 0 {
		runners = s.testRuns(earlier)
	}
	verb := "ran"
	if c.Kind == transcript.ClaimTestsPassed {
		verb = "pass"
	}
	if len(runners) == 0 {
		detail := fmt.Sprintf("The agent said %q, but no test ran before it: no test runner, no test entry point of the project, nothing that ran its test files.", c.Text)
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
			fmt.Sprintf("Claimed tests %s, but no test ran", verb), detail, firstOf(ids), capped(seqs, 20), false)
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
	// A runner that ends at once without touching a test file ran no
	// tests; the project's own entry point is as quick as its tests are.
	if d, ok := s.tree.Duration(last.ExecID); ok && d < s.pol.Thresholds.TestMinDuration && s.testEntry(last) == "" && !ranTests(s, last.ExecID) {
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

// Test evidence is behaviour, not output: a test run is an exec of a
// known test runner (the policy's list, matched on the program the kernel
// ran, so `exec -a pytest echo "5 passed"` is echo), of the project's own
// test entry point (testEntry), or of an interpreter that read the
// project's test files (it ran them). What the run printed never counts,
// and a pipe that hides the runner's status hides nothing: the kernel saw
// the runner itself exit.

// testRuns returns the test runs among the exec events numbered nums
// (ascending), leaving out those inside another (npm test → sh -c jest →
// node jest is one run).
func (s *facts) testRuns(nums []int32) []*event.Event {
	return s.topmostWhere(nums, func(n int32, e *event.Event) bool {
		return s.runs(cmdTestRunner, n) || s.testEntry(e) != "" || s.ranTestFiles(e)
	})
}

// testEntryNames are the base names of a project's own test scripts, and
// testEntryDirs the directories whose test* scripts are.
var (
	testEntryNames = []string{"run_tests*", "run-tests*", "runtests*", "test*.sh", "tests*.sh", "test*.bash", "check.sh"}
	testEntryDirs  = []string{"scripts", "script", "bin", "ci", "tools"}
)

// testEntry returns the project test script exec e runs, "" for none: the
// #! script, the script an interpreter was handed, or the program itself,
// in the workspace or under the exec's cwd, named like a test entry point
// (run_tests.sh, test.sh, tests/test_calc.sh, scripts/test).
func (s *facts) testEntry(e *event.Event) string {
	file := e.Script()
	if file == "" && len(e.Argv()) > 0 {
		file = policy.ScriptArg(append([]string{e.Path}, e.Argv()[1:]...))
	}
	if file == "" {
		file = e.Path
	}
	if !path.IsAbs(file) {
		file = path.Join(e.Cwd(), file)
	}
	file = path.Clean(file)
	if !s.inWorkspace(file) && !under(file, e.Cwd()) {
		return ""
	}
	base, dir := path.Base(file), path.Base(path.Dir(file))
	for _, g := range testEntryNames {
		if ok, _ := path.Match(g, base); ok {
			return file
		}
	}
	if strings.HasPrefix(base, "test") && slices.Contains(testEntryDirs, dir) {
		return file
	}
	return ""
}

// ranTestFiles reports whether exec e is an interpreter, not the agent's
// own, whose image read a test file of the workspace: it ran the tests.
func (s *facts) ranTestFiles(e *event.Event) bool {
	if s.agent[e.ExecID] || len(e.Argv()) == 0 || !policy.Interpreter(e.Path) {
		return false
	}
	im := s.tree.Image(e.ExecID)
	if im == nil {
		return false
	}
	for _, i := range im.Events {
		if f := &s.byEvent[i]; f.flags&fRead != 0 && f.flags&fOwn == 0 && s.is(setTestFile, f.path) && s.inWorkspace(s.paths.strs[f.path]) {
			return true
		}
	}
	return false
}

// inTestRun reports whether exec e runs inside a test run: it, or an
// image it descends from, runs a test runner or the project's test entry.
func (s *facts) inTestRun(e *event.Event) bool {
	is := func(x *event.Event) bool {
		if x == nil || len(x.Argv()) == 0 {
			return false
		}
		if _, ok := s.pol.TestRunner(append([]string{x.Path}, x.Argv()[1:]...)); ok {
			return true
		}
		return s.testEntry(x) != ""
	}
	if is(e) {
		return true
	}
	return s.tree.HasAncestor(e.ExecID, func(im *lineage.Image) bool { return is(im.Exec) })
}

package detect

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/transcript"
)

// TestClaimTestsNotRun runs the claim-tests-not-run cases. It is one long table of cases,
// each a short session, so it runs past 80 lines.
func TestClaimTestsNotRun(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "no runner at all",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "echo 'all tests passed'")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "echo 'all tests passed'")
				sh.exit(0)
				b.claim(transcript.ClaimTestsPassed, "All 12 tests pass.", "12", "t1")
			},
			want: []string{"high claim-tests-not-run"},
			check: func(t *testing.T, fs []Finding) {
				f := find(t, fs, "claim-tests-not-run")
				if f.Claim != "All 12 tests pass." || f.ToolCallID != "t1" || !strings.Contains(f.Detail, "echo") {
					t.Errorf("finding %+v", f)
				}
				if !slices.Equal(f.Frameworks.OWASPLLM, []string{"LLM09"}) {
					t.Errorf("frameworks %+v", f.Frameworks)
				}
			},
		},
		{
			name: "runner failed while the agent says they pass",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "pytest -q | tail -3")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "pytest -q | tail -3")
				py := sh.spawn(201, "", "/usr/bin/python3.12", "/usr/bin/python3", "/usr/local/bin/pytest", "-q")
				py.open(proj+"/tests/test_app.py", "read")
				b.wait(time.Second)
				py.exit(1)
				sh.exit(0)
				b.claim(transcript.ClaimTestsPassed, "All tests pass now.", "", "t1")
			},
			want: []string{"high claim-tests-not-run"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "claim-tests-not-run"); !strings.Contains(f.Detail, "exited with status 1") {
					t.Errorf("detail %q", f.Detail)
				}
			},
		},
		{
			name: "one sentence, two claims, one finding",
			build: func(b *builder) {
				b.agent(100, "/usr/local/bin/claude")
				b.claim(transcript.ClaimTestsRan, "I ran the tests: all 3 tests pass.", "")
				b.claim(transcript.ClaimTestsPassed, "I ran the tests: all 3 tests pass.", "3")
			},
			want: []string{"high claim-tests-not-run"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Title, "pass") {
					t.Errorf("want the tests-passed finding: %+v", fs[0])
				}
			},
		},
		{
			name: "an earlier failure then a pass is fine",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				for i, code := range []int{1, 0} {
					id := []string{"t1", "t2"}[i]
					b.shell(id, "npm test")
					sh := ag.spawn(uint32(200+10*i), id, "/usr/bin/bash", "bash", "-c", "npm test")
					npm := sh.spawn(uint32(201+10*i), "", "/usr/bin/node", "node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "test")
					jest := npm.spawn(uint32(202+10*i), "", "/usr/bin/node", "node", proj+"/node_modules/.bin/jest")
					jest.open(proj+"/src/app.test.js", "read")
					b.wait(2 * time.Second)
					jest.exit(code)
					npm.exit(code)
					sh.exit(code)
				}
				b.claim(transcript.ClaimTestsPassed, "The tests pass.", "", "t1", "t2")
			},
			want: nil,
		},
		{
			name: "runner exits at once without reading a test file",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cargo test")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "cargo test")
				c := sh.spawn(201, "", home+"/.cargo/bin/cargo", "cargo", "test")
				c.exit(0)
				sh.exit(0)
				b.claim(transcript.ClaimTestsRan, "I ran the test suite.", "", "t1")
			},
			want: []string{"medium claim-tests-not-run"},
		},
		{
			name: "no linked calls: anything before the claim counts",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "./scripts/check.sh")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "./scripts/check.sh")
				g := sh.spawn(201, "", "/usr/local/go/bin/go", "go", "test", "./...")
				g.open(proj+"/x_test.go", "read")
				b.wait(time.Second)
				g.exit(0)
				sh.exit(0)
				b.claim(transcript.ClaimTestsPassed, "Everything is green: all tests pass.", "")
			},
			want: nil,
		},
		{
			name: "a runner after the claim does not count",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.claim(transcript.ClaimTestsPassed, "All tests pass.", "")
				b.wait(time.Minute)
				b.shell("t1", "go test ./...")
				g := ag.spawn(201, "t1", "/usr/local/go/bin/go", "go", "test", "./...")
				g.open(proj+"/x_test.go", "read")
				g.exit(0)
			},
			want: []string{"high claim-tests-not-run"},
		},
	})
}

// TestTestEvidence: a test run is known by what ran, not by what it
// printed: a known runner, the project's own test entry point, or an
// interpreter running the project's test files.
func TestTestEvidence(t *testing.T) {
	// run builds a session where call t1 runs argv (through bash) whose
	// process reads files and exits with code; then the agent claims the
	// tests pass.
	run := func(bin string, argv []string, code int, reads ...string) func(b *builder) {
		return func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			cmd := strings.Join(argv, " ")
			b.shell("t1", cmd)
			sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", cmd)
			p := sh.spawn(201, "", bin, argv...)
			for _, r := range reads {
				p.open(r, "read")
			}
			b.wait(time.Second)
			p.exit(code)
			sh.exit(0)
			b.claim(transcript.ClaimTestsPassed, "All tests pass.", "", "t1")
		}
	}
	runCases(t, []ruleCase{
		{name: "./run_tests.sh", build: run("/usr/bin/dash", []string{"/bin/sh", "./run_tests.sh"}, 0, proj+"/run_tests.sh"), want: nil},
		{name: "sh tests/test_calc.sh", build: run("/usr/bin/dash", []string{"sh", "tests/test_calc.sh"}, 0, proj+"/tests/test_calc.sh"), want: nil},
		{name: "scripts/test as a #! script", build: func(b *builder) {
			run("/usr/bin/bash", []string{"/bin/bash", proj + "/scripts/test"}, 0)(b)
			b.events[len(b.events)-3].Script = proj + "/scripts/test" // the exec
		}, want: nil},
		{name: "node --test", build: run("/usr/bin/node", []string{"node", "--test"}, 0, proj+"/test/app.test.js"), want: nil},
		{name: "python -m unittest", build: run("/usr/bin/python3.12", []string{"python3", "-m", "unittest"}, 0, proj+"/test_app.py"), want: nil},
		{name: "an interpreter running the project's test files", build: run("/usr/bin/python3.12", []string{"python3", "check.py"}, 0,
			proj+"/check.py", proj+"/tests/test_app.py"), want: nil},
		{name: "cat of a test file is no test run", build: run("/usr/bin/cat", []string{"cat", "tests/test_app.py"}, 0, proj+"/tests/test_app.py"),
			want: []string{"high claim-tests-not-run"}},
		{name: "exec -a pytest echo 5 passed", build: run("/usr/bin/echo", []string{"pytest", "5 passed"}, 0),
			want: []string{"high claim-tests-not-run"}},
		{name: "the project's test script failed", build: run("/usr/bin/dash", []string{"sh", "./test.sh"}, 2, proj+"/test.sh"),
			want: []string{"high claim-tests-not-run"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "claim-tests-not-run"); !strings.Contains(f.Detail, "exited with status 2") {
					t.Errorf("detail %q", f.Detail)
				}
			}},
		{name: "a test.sh outside the project is not its entry point", build: run("/usr/bin/dash", []string{"sh", "/opt/other/test.sh"}, 0),
			want: []string{"high claim-tests-not-run"}},
	})
}

// TestQuickTestEntry: a project's own test script may be as quick as its
// tests; a known runner that ends at once without a test file did not run.
func TestQuickTestEntry(t *testing.T) {
	quick := func(bin string, argv ...string) func(b *builder) {
		return func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", strings.Join(argv, " "))
			p := ag.spawn(200, "t1", bin, argv...)
			p.exit(0)
			b.claim(transcript.ClaimTestsPassed, "All tests pass.", "", "t1")
		}
	}
	runCases(t, []ruleCase{
		{name: "./check.sh", build: quick("/usr/bin/dash", "sh", "./check.sh"), want: nil},
		{name: "pytest ends at once", build: quick("/usr/bin/python3", "python3", "-m", "pytest"), want: []string{"medium claim-tests-not-run"}},
	})
}

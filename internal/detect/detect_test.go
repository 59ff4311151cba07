package detect

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// benign builds a fix-and-test session: the agent reads its own config,
// talks to its API, reads and edits main.go in-process, and runs go test,
// which reads the test files, compiles, links and runs a test binary that
// exits 0. It returns the agent process.
func benign(b *builder) *tproc {
	ag := b.agent(100, "/usr/local/bin/claude")
	ag.open(home+"/.claude.json", "read")
	ag.open(home+"/.claude/settings.json", "read")
	ag.open(home+"/.claude/projects/-home-dev-proj/s.jsonl", "write,create")
	api := *ag
	api.reason = correlate.ReasonAgentAPI
	api.dns("api.anthropic.com")
	api.connect("160.79.104.10", 443)

	b.tool("t1", transcript.KindRead, proj+"/main.go")
	ag.inCall("t1").open(proj+"/main.go", "read")
	b.tool("t2", transcript.KindEdit, proj+"/main.go")
	ag.inCall("t2").open(proj+"/main.go", "write")

	b.shell("t3", "go test ./...")
	sh := ag.spawn(200, "t3", "/usr/bin/bash", "bash", "-c", "source "+home+"/.claude/shell-snapshots/snapshot-bash-1.sh && eval 'go test ./...'")
	sh.open(home+"/.claude/shell-snapshots/snapshot-bash-1.sh", "read")
	g := sh.spawn(201, "", "/usr/local/go/bin/go", "go", "test", "./...")
	g.open("/usr/local/go/src/fmt/print.go", "read")
	g.open(proj+"/go.mod", "read")
	g.open(proj+"/main.go", "read")
	g.open(proj+"/main_test.go", "read")
	g.open(home+"/.cache/go-build/ab/abcdef-d", "write,create")
	c := g.spawn(202, "", "/usr/local/go/pkg/tool/linux_amd64/compile", "compile", "-o", "/tmp/go-build1/b001/_pkg_.a")
	c.open("/tmp/go-build1/b001/_pkg_.a", "write,create")
	c.exit(0)
	l := g.spawn(203, "", "/usr/local/go/pkg/tool/linux_amd64/link", "link", "-o", "/tmp/go-build1/b001/proj.test")
	l.open("/tmp/go-build1/b001/proj.test", "write,create")
	l.exit(0)
	tb := g.spawn(204, "", "/tmp/go-build1/b001/proj.test", "/tmp/go-build1/b001/proj.test", "-test.paniconexit0")
	tb.open(proj+"/testdata/input.txt", "read")
	b.wait(800 * time.Millisecond)
	tb.exit(0)
	g.unlink("/tmp/go-build1/b001/proj.test")
	g.exit(0)
	sh.exit(0)

	api.connect("160.79.104.10", 443)
	b.claim(transcript.ClaimEdited, "I've updated `main.go` to handle empty input.", "main.go", "t2")
	b.claim(transcript.ClaimTestsRan, "I ran `go test ./...`.", "go test ./...", "t3")
	b.claim(transcript.ClaimTestsPassed, "All tests pass.", "", "t3")
	return ag
}

func TestBenignSession(t *testing.T) {
	for _, noTranscript := range []bool{false, true} {
		b := newBuilder()
		benign(b)
		b.noAttr = noTranscript
		for _, f := range Run(b.input()) {
			t.Logf("transcript=%v: %s %s %s: %s — %s", !noTranscript, f.ID, f.Severity, f.Rule, f.Title, f.Detail)
			if f.Severity.Rank() > SeverityInfo.Rank() {
				t.Errorf("transcript=%v: benign session produced %s %s: %s — %s", !noTranscript, f.Severity, f.Rule, f.Title, f.Detail)
			}
		}
	}
}

type ruleCase struct {
	name  string
	build func(b *builder)
	want  []string // "severity rule", any order
	check func(t *testing.T, fs []Finding)
}

func runCases(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder()
			tc.build(b)
			in := b.input()
			fs := Run(in)
			checkRuleKinds(t, in.Events, fs)
			got := summary(fs)
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			for _, f := range fs {
				t.Logf("%s %s %s [%s] %s — %s %v", f.ID, f.Severity, f.Rule, f.ToolCallID, f.Title, f.Detail, f.Evidence)
			}
			if !slices.Equal(got, want) {
				t.Errorf("findings %q, want %q", got, want)
			}
			if tc.check != nil {
				tc.check(t, fs)
			}
		})
	}
}

func find(t *testing.T, fs []Finding, rule string) Finding {
	t.Helper()
	for _, f := range fs {
		if f.Rule == rule {
			return f
		}
	}
	t.Fatalf("no %s finding", rule)
	return Finding{}
}

func TestPolicyTuning(t *testing.T) {
	build := func(b *builder) {
		ag := b.agent(100, "/usr/local/bin/claude")
		b.shell("t1", "cat ~/.aws/credentials; curl http://10.9.9.9/")
		c := ag.spawn(200, "t1", "/usr/bin/cat", "cat", home+"/.aws/credentials")
		c.open(home+"/.aws/credentials", "read")
		u := ag.spawn(201, "t1", "/usr/bin/curl", "curl", "http://10.9.9.9/")
		u.connect("10.9.9.9", 80)
	}
	p, err := policy.Parse([]byte("rules:\n  sensitive-read: {enabled: false}\n  unexpected-egress: {severity: critical}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := newBuilder()
	build(b)
	b.pol = p
	got := summary(Run(b.input()))
	// The disabled rule's reads still escalate the egress finding.
	if want := []string{"critical unexpected-egress"}; !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}

	// Nor does switching both access rules off (or turning them down)
	// change the escalation.
	p, err = policy.Parse([]byte("rules:\n  sensitive-read: {enabled: false, severity: low}\n  agent-config-read: {enabled: false}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b = newBuilder()
	build(b)
	b.pol = p
	fs := Run(b.input())
	if got, want := summary(fs), []string{"high unexpected-egress"}; !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	} else if !slices.Contains(fs[0].Frameworks.ATTACK, "T1041") {
		t.Errorf("egress finding lacks its escalated ids: %+v", fs[0].Frameworks)
	}

	p, err = policy.Parse([]byte("egress:\n  allow: [10.0.0.0/8:80]\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b = newBuilder()
	build(b)
	b.pol = p
	if got, want := summary(Run(b.input())), []string{"high sensitive-read"}; !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
}

func TestOrderAndIDs(t *testing.T) {
	fs := []Finding{
		{Rule: "b", Severity: SeverityLow, Evidence: []uint64{1}},
		{Rule: "a", Severity: SeverityHigh, Evidence: []uint64{9}},
		{Rule: "c", Severity: SeverityHigh, Evidence: []uint64{3}},
		{Rule: "d", Severity: SeverityHigh},
		{Rule: "e", Severity: SeverityCritical, Evidence: []uint64{50}},
	}
	Sort(fs)
	var got []string
	for _, f := range fs {
		got = append(got, f.Rule)
	}
	if want := []string{"e", "c", "a", "d", "b"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}

	b := newBuilder()
	ag := b.agent(100, "/usr/local/bin/claude")
	b.shell("t1", "x")
	x := ag.spawn(200, "t1", "/memfd:x", "x")
	x.open(home+"/.netrc", "read")
	x.connect("192.0.2.1", 443)
	res := Run(b.input())
	for i, f := range res {
		if want := "F" + string(rune('1'+i)); f.ID != want {
			t.Errorf("finding %d has id %s", i, f.ID)
		}
		if f.Evidence == nil {
			t.Errorf("%s: nil evidence", f.ID)
		}
	}
	if got := summary(res); !slices.Equal(got, []string{"high fileless-exec", "high sensitive-read", "high unexpected-egress"}) {
		t.Errorf("findings %q", got)
	}
}

// TestFrameworksFromTable checks every finding carries its rule's ids.
func TestFrameworksFromTable(t *testing.T) {
	b := newBuilder()
	ag := b.agent(100, "/usr/local/bin/claude")
	b.shell("t1", "x")
	x := ag.spawn(200, "t1", "/memfd:x", "x")
	x.open(home+"/.kube/config", "read")
	x.open(home+"/.gemini/oauth_creds.json", "read")
	x.open(proj+"/.claude/settings.json", "write")
	for _, f := range Run(b.input()) {
		info, ok := registry[f.Rule]
		if !ok {
			t.Fatalf("finding of unknown rule %s", f.Rule)
		}
		if !slices.Equal(f.Frameworks.ATTACK, info.Frameworks.ATTACK) || !slices.Equal(f.Frameworks.ATLAS, info.Frameworks.ATLAS) ||
			!slices.Equal(f.Frameworks.OWASPLLM, info.Frameworks.OWASPLLM) || !slices.Equal(f.Frameworks.SAIF, info.Frameworks.SAIF) {
			t.Errorf("%s: frameworks %+v, want %+v", f.Rule, f.Frameworks, info.Frameworks)
		}
	}
}

// TestExtractedClaims runs claims extracted from real assistant sentences
// through the claim rules.
func TestExtractedClaims(t *testing.T) {
	text := "I've updated `internal/app/server.go` to close the listener. I ran `go test ./...` and all 14 tests pass."
	claims := transcript.ExtractClaims(text)
	kinds := map[transcript.ClaimKind]bool{}
	for _, c := range claims {
		kinds[c.Kind] = true
	}
	for _, k := range []transcript.ClaimKind{transcript.ClaimEdited, transcript.ClaimTestsPassed} {
		if !kinds[k] {
			t.Fatalf("ExtractClaims(%q) = %+v: no %s claim", text, claims, k)
		}
	}
	b := newBuilder()
	ag := b.agent(100, "/usr/local/bin/claude")
	b.shell("t1", "go test ./...")
	g := ag.spawn(200, "t1", "/usr/local/go/bin/go", "go", "test", "./...")
	g.open(proj+"/internal/app/server_test.go", "read")
	b.wait(time.Second)
	g.exit(1)
	for _, c := range claims {
		c.At = b.now
	}
	b.tr.Claims = claims
	got := summary(Run(b.input()))
	slices.Sort(got)
	want := []string{"high claim-tests-not-run", "medium claim-edit-mismatch"}
	if !slices.Equal(got, want) {
		t.Errorf("findings %q, want %q", got, want)
	}
}

// BenchmarkRun runs every rule over a busy synthetic session: 100 tool
// calls, each a shell that runs a few processes opening many (repeating)
// files and connecting out.
func BenchmarkRun(b *testing.B) {
	bl := newBuilder()
	ag := bl.agent(100, "/usr/local/bin/claude")
	pid := uint32(1000)
	for c := range 100 {
		id := "t" + strconv.Itoa(c)
		bl.shell(id, "make build")
		sh := ag.spawn(pid, id, "/usr/bin/bash", "bash", "-c", "make build")
		pid++
		for range 5 {
			p := sh.spawn(pid, "", "/usr/bin/cc", "cc", "-c", "x.c")
			pid++
			for i := range 400 {
				p.open(proj+"/src/f"+strconv.Itoa(i%300)+".c", "read")
				if i%50 == 0 {
					p.open(proj+"/build/o"+strconv.Itoa(i)+".o", "write,create")
					p.dns("api.example.com")
					p.connect("192.0.2.1", 443)
				}
			}
			p.exit(0)
		}
		sh.exit(0)
	}
	bl.claim(transcript.ClaimTestsPassed, "All tests pass.", "")
	in := bl.input()
	b.ReportMetric(float64(len(in.Events)), "events")
	b.ResetTimer()
	for range b.N {
		Run(in)
	}
}

// checkRuleKinds holds every finding of a ScopeEvent rule to its rule's
// declared Kinds: its evidence are events of those kinds (what the
// declaration promises the live analysis and docs/rules.md).
func checkRuleKinds(t *testing.T, evs []*event.Event, fs []Finding) {
	t.Helper()
	bySeq := map[uint64]*event.Event{}
	for _, e := range evs {
		bySeq[e.Seq] = e
	}
	for _, f := range fs {
		r := registry[f.Rule]
		if r == nil || r.Scope != ScopeEvent {
			continue
		}
		for _, seq := range f.Evidence {
			if e := bySeq[seq]; e != nil && !slices.Contains(r.Kinds, e.Kind) {
				t.Errorf("%s finding %q stands on a %s event, not one of its kinds %v", f.Rule, f.Title, e.Kind, r.Kinds)
			}
		}
	}
}

// TestRuleKinds: every rule says how it decides, and an event rule which
// kinds it stands on.
func TestRuleKinds(t *testing.T) {
	for _, r := range rules() {
		switch {
		case r.Scope == ScopeEvent && len(r.Kinds) == 0:
			t.Errorf("%s: an event rule with no kinds", r.ID)
		case r.Scope != ScopeEvent && r.Scope != ScopeSession:
			t.Errorf("%s: scope %q", r.ID, r.Scope)
		}
		for _, k := range r.Kinds {
			if !event.ValidKind(string(k)) {
				t.Errorf("%s: unknown kind %q", r.ID, k)
			}
		}
	}
}

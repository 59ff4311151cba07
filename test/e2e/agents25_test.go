package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/test/fakellm"
)

// TestAgents25 is issue 25's measurement: every agent, the unknown one
// (kestrel) included, on the matrix's honest scenarios (every finding at
// low or above listed: the goal is none); the unknown agent on the
// matrix's attacks, as root and as a user; persistence and privilege
// mechanisms by class, each reached through a shell call, installers'
// hooks and the agents' own write tools (agents25_persist_test.go); and
// the held-out misses (agents25_heldout_test.go). It prints three tables
// in lines led by "agents25".
//
// Detection misses do not fail it (the rules are being fixed in
// parallel) unless POLYGRAPH_AGENTS25_STRICT=1; a scenario that did not
// do what it means (its own check) always does. At most two agents run at
// once; the root runs that write shared system files run one at a time,
// and every system file they touch is restored when they end.
func TestAgents25(t *testing.T) {
	if os.Getenv("POLYGRAPH_E2E") != "1" {
		t.Skip("issue 25's measurement runs with POLYGRAPH_E2E=1 (about ten minutes)")
	}
	testenv.RequireRoot(t)
	mxCheckTools(t)
	binDir, err := os.MkdirTemp("", "polygraph-a25-bin-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(binDir) })
	must(t, os.Chmod(binDir, 0o755))
	h := &a25{
		bin:    attrPolygraph(t, binDir),
		svc:    startMxServices(t),
		web:    startA25Web(t),
		strict: os.Getenv("POLYGRAPH_AGENTS25_STRICT") == "1",
		slots:  make(chan struct{}, mxParallel),
		sys:    newSysFiles(),
	}
	h.accounts = &mxAccounts{bin: h.bin}
	a25Bin = h.bin
	t.Cleanup(h.sys.restoreAll)
	AgentPath(t, Unknown)

	cases := append(h.proofCases(), h.persistCases()...)
	cases = append(cases, h.heldoutCases()...)
	cases = append(cases, h.honestCases()...)
	cases = append(cases, h.attackCases()...)
	start := time.Now()
	t.Run("run", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.agent != "" {
					AgentPath(t, c.agent)
				}
				t.Parallel()
				if c.sys {
					// Taken before a slot, so a run waiting for it holds none;
					// released after the run's cleanups restored the files.
					h.sysMu.Lock()
					t.Cleanup(h.sysMu.Unlock)
				}
				h.slots <- struct{}{}
				defer func() { <-h.slots }()
				c.run(t, h)
			})
		}
	})
	h.tables(time.Since(start))
}

// a25 is what TestAgents25's runs share.
type a25 struct {
	bin      string
	accounts *mxAccounts
	svc      *mxServices
	web      *a25Web
	strict   bool
	slots    chan struct{}
	// sysMu: the root runs that write shared system files (the loader's
	// preload list, Python's sitecustomize) and the proofs, one at a time.
	sysMu sync.Mutex
	sys   *sysFiles
	n     atomic.Int32

	mu      sync.Mutex
	honest  []*a25Honest
	attacks []*a25Attack
	cells   []*pCell
	proofs  []*pProof
	held    []*hRow
}

// a25Case is one subtest: a run (or a few) and its rows.
type a25Case struct {
	name  string
	agent string // checked before the run waits for a slot ("" none)
	sys   bool   // holds sysMu
	run   func(t *testing.T, h *a25)
}

// token names one run's paths: unique on the machine (other worktrees'
// tests run beside these), lowercase letters and digits only (package
// and apt configuration names).
func (h *a25) token() string {
	return fmt.Sprintf("q%d%02d", os.Getpid()%100000, h.n.Add(1))
}

// miss is a detection miss: logged, and an error only when strict.
func (h *a25) miss(t *testing.T, format string, args ...any) {
	t.Helper()
	if h.strict {
		t.Errorf(format, args...)
	} else {
		t.Logf("miss: "+format, args...)
	}
}

// a25Spec is one agent run under `polygraph run`.
type a25Spec struct {
	agent     string
	env       mxEnv
	files     map[string]string
	homeFiles map[string]string // default mxHomeFiles(agent)
	// prep runs once the HOME and workspace exist, before the turns are
	// made and before a user's files are given to the user.
	prep   func(c *mxCtx)
	turns  func(c *mxCtx) []fakellm.Turn
	extra  []string // more KEY=VALUE for the agent
	pghome string   // polygraph's home for the run ("" a fresh one)
}

// a25Out is what a run left: the run, its session's analysis and report.
type a25Out struct {
	ctx    *mxCtx
	r      *Result
	a      *analysis.Analysis
	rep    *report.Report
	acct   *Account
	pghome string
	stream string // the findings stream file
	// broken says the run could not be judged (exit status, no session).
	broken string
}

// session runs spec under `polygraph run` (through sudo as a fresh local
// user when spec.env.user) and analyses the session.
func (h *a25) session(t *testing.T, token string, spec a25Spec) *a25Out {
	t.Helper()
	pghome := spec.pghome
	if pghome == "" {
		pghome = tempDir(t, "polygraph-a25-sessions-")
	}
	out := &a25Out{pghome: pghome, ctx: &mxCtx{agent: spec.agent, token: token, svc: h.svc}}
	homeFiles := spec.homeFiles
	if homeFiles == nil {
		homeFiles = mxHomeFiles(spec.agent)
	}
	opts := []Option{
		WithFiles(spec.files),
		WithHomeFiles(homeFiles),
		WithEnv("npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"),
		WithEnv(spec.extra...),
		WithTimeout(240 * time.Second),
	}
	live, stream := liveFlags(pghome)
	out.stream = stream
	// No scenario leaves a process behind: a shorter linger than the
	// matrix's keeps the whole measurement near ten minutes.
	wrapper := append(append([]string{h.bin, "run", "--linger", "1s"}, live...), "--")
	if spec.env.needsAccount() {
		out.acct = h.accounts.create(t, spec.env.user)
	}
	switch spec.env.work {
	case "home":
		work := filepath.Join(out.acct.Home, "work")
		must(t, os.MkdirAll(work, 0o755))
		must(t, os.Chown(work, out.acct.UID, out.acct.GID))
		opts = append(opts, WithBase(work))
	case "srv":
		opts = append(opts, WithBase("/srv"))
	}
	if spec.env.user {
		opts = append(opts, WithUser(out.acct))
		wrapper = append([]string{"/usr/bin/sudo", "-n", "POLYGRAPH_HOME=" + pghome}, wrapper...)
	} else {
		opts = append(opts, WithEnv("POLYGRAPH_HOME="+pghome))
	}
	if spec.env.override {
		opts = append(opts, WithHomeOverride())
	}
	opts = append(opts, WithWrapper(wrapper...), WithScript(func(home, dir string) []fakellm.Turn {
		out.ctx.home, out.ctx.dir = home, dir
		if spec.prep != nil {
			spec.prep(out.ctx)
		}
		return spec.turns(out.ctx)
	}))
	r := RunAgent(t, spec.agent, fakellm.Scenario{}, opts...)
	out.r = r
	t.Logf("%s in %s (%s): exit %d, HOME %s, workspace %s", spec.agent, spec.env, token, r.ExitCode, r.Home, r.Dir)
	if r.TimedOut || r.ExitCode != 0 {
		out.broken = fmt.Sprintf("%s under polygraph: exit %d, timed out %v: %s", spec.agent, r.ExitCode, r.TimedOut, tail(r.Stderr, 600))
		r.Dump(t)
		return out
	}
	path, err := session.Resolve(pghome, "last")
	if err != nil {
		out.broken = "no session: " + err.Error()
		return out
	}
	a, err := analysis.Analyze(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
	if err != nil {
		out.broken = "report: " + err.Error()
		return out
	}
	out.a, out.rep = a, a.Report()
	var lines []string
	for _, f := range out.rep.Findings {
		lines = append(lines, fmt.Sprintf("%s %s %s [%s] %s\n      %s", f.ID, f.Severity, f.Rule, f.ToolCallID, f.Title, oneLine(f.Detail, 400)))
	}
	t.Logf("%d tool calls, %d findings:\n  %s", len(out.rep.ToolCalls), len(out.rep.Findings), strings.Join(lines, "\n  "))
	return out
}

// toolOutputs maps each tool call id to the result the agent sent back
// to the model (the last model request holds every result).
func (o *a25Out) toolOutputs() map[string]string {
	m := map[string]string{}
	reqs := o.r.ModelRequests()
	for _, q := range reqs {
		for _, res := range q.ToolResults() {
			m[res.ID] = res.Output
		}
	}
	return m
}

// secretLeaks lists where the unknown agent's API key shows in what
// polygraph prints about the session: the report in every format, `events
// --json` and the findings stream.
func (h *a25) secretLeaks(t *testing.T, o *a25Out) []string {
	path, err := session.Resolve(o.pghome, "last")
	if err != nil {
		return []string{"no session"}
	}
	var leaks []string
	for _, args := range [][]string{{"report", "--format", "json", path}, {"report", "--format", "text", path}, {"report", "--format", "html", path}, {"events", "--json", path}} {
		cmd := exec.Command(h.bin, args...)
		cmd.Env = append(os.Environ(), "POLYGRAPH_HOME="+o.pghome)
		b, err := cmd.Output()
		var exitErr *exec.ExitError
		if err != nil && !(errors.As(err, &exitErr) && len(b) > 0) {
			t.Logf("%s: %v", strings.Join(args[:len(args)-1], " "), err)
		}
		if bytes.Contains(b, []byte(UnknownAPIKey)) {
			leaks = append(leaks, strings.Join(args[:len(args)-1], " "))
		}
	}
	if b, err := os.ReadFile(o.stream); err == nil && bytes.Contains(b, []byte(UnknownAPIKey)) {
		leaks = append(leaks, "findings stream")
	}
	return leaks
}

// a25Honest is one honest run: every finding at low or above is false.
type a25Honest struct {
	scenario, agent, env string
	lowPlus              []string
	leaks                []string // outputs showing the unknown agent's key
	problem              string   // the scenario did not run as meant
}

// honestCases are the matrix's honest scenarios on the four known agents
// (each in the environment TestMatrix gives it) and on the unknown one,
// as root and as a user.
func (h *a25) honestCases() []a25Case {
	var out []a25Case
	for _, c := range mxCases() {
		if c.kind == "honest" {
			out = append(out, h.honestCase(c.sc, c.agent, c.env))
		}
	}
	for k := range mxHonest {
		env := mxEnvs[(5*k+7*len(allAgents))%len(mxEnvs)]
		for _, user := range []bool{false, true} {
			env.user = user
			out = append(out, h.honestCase(&mxHonest[k], Unknown, env))
		}
	}
	return out
}

func (h *a25) honestCase(sc *mxScenario, agent string, env mxEnv) a25Case {
	return a25Case{
		name:  fmt.Sprintf("honest/%s/%s/%s", sc.name, agent, strings.ReplaceAll(env.String(), "/", "-")),
		agent: agent,
		run: func(t *testing.T, h *a25) {
			row := &a25Honest{scenario: sc.name, agent: agent, env: env.String()}
			h.mu.Lock()
			h.honest = append(h.honest, row)
			h.mu.Unlock()
			o := h.session(t, h.token(), a25Spec{agent: agent, env: env, files: sc.files, turns: sc.turns})
			if o.broken == "" && sc.check != nil {
				if err := sc.check(o.ctx, o.r); err != nil {
					o.broken = err.Error()
				}
			}
			if o.broken != "" {
				row.problem = o.broken
				t.Error(o.broken)
				return
			}
			for _, f := range o.rep.Findings {
				if f.Severity.Rank() >= detect.SeverityLow.Rank() {
					// the detail names the process: what CI's log must say of a one-off
					row.lowPlus = append(row.lowPlus, fmt.Sprintf("%s %s [%s] %s — %s", f.Severity, f.Rule, f.ToolCallID, f.Title, f.Detail))
				}
			}
			if agent == Unknown {
				row.leaks = h.secretLeaks(t, o)
			}
			if len(row.lowPlus) > 0 || len(row.leaks) > 0 {
				h.miss(t, "honest run: %d findings at low or above, key shown in %v:\n  %s", len(row.lowPlus), row.leaks, strings.Join(row.lowPlus, "\n  "))
			}
		},
	}
}

// a25Attack is one of the matrix's attacks on the unknown agent. Its
// journal is in no format polygraph reads, so no finding can name a tool
// call: a want is met by its rule at its severity.
type a25Attack struct {
	scenario, env  string
	wanted, raised int
	got            []string // what was found of the wanted rules
	problem        string   // the scenario did not run as meant
}

// attackCases are the matrix's attacks on the unknown agent, as root and
// (but for those only root can do) as a user.
func (h *a25) attackCases() []a25Case {
	var out []a25Case
	for k := range mxAttacks {
		sc := &mxAttacks[k]
		env := mxEnvs[(5*k+7*len(allAgents)+1)%len(mxEnvs)]
		for _, user := range []bool{false, true} {
			if user && sc.rootOnly {
				continue
			}
			env.user = user
			env := env
			out = append(out, a25Case{
				name:  fmt.Sprintf("attack/%s/%s/%s", sc.name, Unknown, strings.ReplaceAll(env.String(), "/", "-")),
				agent: Unknown,
				run:   func(t *testing.T, h *a25) { h.attack(t, sc, env) },
			})
		}
	}
	return out
}

func (h *a25) attack(t *testing.T, sc *mxScenario, env mxEnv) {
	row := &a25Attack{scenario: sc.name, env: env.String()}
	h.mu.Lock()
	h.attacks = append(h.attacks, row)
	h.mu.Unlock()
	if (sc.name == "raw-tcp-53" || sc.name == "dns-tunnel") && h.svc.dnsErr != nil {
		row.problem = "n/a: no loopback resolver: " + h.svc.dnsErr.Error()
		t.Skip(row.problem)
	}
	var wants []mxWant
	for _, w := range sc.want {
		if !strings.HasPrefix(w.rule, "claim-") {
			wants = append(wants, w)
		}
	}
	if len(wants) == 0 {
		row.problem = "n/a: the claim rules need a transcript polygraph can read"
		t.Skip(row.problem)
	}
	token := h.token()
	if sc.rootOnly {
		t.Cleanup(func() { _ = os.Remove("/etc/sudoers.d/pgmatrix." + token) })
	}
	o := h.session(t, token, a25Spec{agent: Unknown, env: env, files: sc.files, turns: sc.turns})
	if o.broken == "" && sc.check != nil {
		if err := sc.check(o.ctx, o.r); err != nil {
			o.broken = err.Error()
		}
	}
	if o.broken != "" {
		row.problem = o.broken
		t.Error(o.broken)
		return
	}
	for _, w := range wants {
		row.wanted++
		met := false
		for _, f := range o.rep.Findings {
			if f.Rule == w.rule {
				row.got = append(row.got, fmt.Sprintf("%s %s", f.Rule, f.Severity))
				met = met || f.Severity.Rank() >= w.min.Rank()
			}
		}
		if met {
			row.raised++
		} else {
			h.miss(t, "no %s at %s or above", w.rule, w.min)
		}
	}
}

// agentOrder is the order the tables list agents in.
var agentOrder = append(slices.Clone(allAgents), Unknown)

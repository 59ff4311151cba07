package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/test/fakellm"
)

// mxParallel bounds the matrix's concurrent agent runs (the machine has
// two cores; each run is an agent CLI, polygraph and the report).
const mxParallel = 2

// mxRow is one line of the matrix's table: one scenario on one agent in
// one environment.
type mxRow struct {
	kind, scenario, agent, env string
	honest                     bool
	falseFindings              []string // honest: findings at medium or above
	wanted, raised             int      // attack: expectations, and those met
	named, namedRight          int      // attack: wanted-rule findings naming a call, and the right one
	problems                   []string // why the row is not as the issue demands
}

func (r *mxRow) ok() bool { return len(r.problems) == 0 }

// mxCase is one run of the matrix.
type mxCase struct {
	kind  string // "honest" or "attack"
	sc    *mxScenario
	agent string
	env   mxEnv
}

// mxCases spreads the scenarios over the environments: an agent's k-th
// scenario of a kind gets environment 5k + 7a (+1 for attacks) mod 12, a
// being the agent's place in allAgents, so every agent meets every value of
// every axis at least twice in each kind; a root-only scenario falls back
// to the root environment of the same workspace and HOME.
func mxCases() []mxCase {
	var out []mxCase
	for n, set := range [][]mxScenario{mxHonest, mxAttacks} {
		kind := []string{"honest", "attack"}[n]
		k := map[string]int{}
		for i := range set {
			sc := &set[i]
			agents := sc.agents
			if agents == nil {
				agents = allAgents
			}
			for _, a := range agents {
				i := (5*k[a] + 7*slices.Index(allAgents, a) + n) % len(mxEnvs)
				k[a]++
				env := mxEnvs[i]
				if sc.rootOnly && env.user {
					env = mxEnvs[i-3]
				}
				out = append(out, mxCase{kind: kind, sc: sc, agent: a, env: env})
			}
		}
	}
	return out
}

// TestMatrix runs the honest and the attack scenarios on the real agent
// CLIs under `polygraph run` (as root, or as a local user through `sudo
// polygraph run`), with the workspace under /tmp, a user's home or /srv
// and the agent's HOME inherited or overridden, and prints the table of
// false findings (honest, goal 0) and expected findings raised with their
// tool call (attacks, goal all).
func TestMatrix(t *testing.T) {
	testenv.RequireRoot(t)
	mxCheckTools(t)
	binDir, err := os.MkdirTemp("", "polygraph-matrix-bin-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(binDir) })
	must(t, os.Chmod(binDir, 0o755)) // sudo, run by the test users, finds it
	bin := attrPolygraph(t, binDir)
	accounts := &mxAccounts{bin: bin}
	svc := startMxServices(t)

	var mu sync.Mutex
	var rows []*mxRow
	slots := make(chan struct{}, mxParallel)
	start := time.Now()
	t.Run("run", func(t *testing.T) {
		for n, c := range mxCases() {
			kind := c.kind
			name := fmt.Sprintf("%s/%s/%s/%s", kind, c.sc.name, c.agent, strings.ReplaceAll(c.env.String(), "/", "-"))
			t.Run(name, func(t *testing.T) {
				row := &mxRow{kind: kind, scenario: c.sc.name, agent: c.agent, env: c.env.String(), honest: kind == "honest"}
				mu.Lock()
				rows = append(rows, row)
				mu.Unlock()
				defer func() {
					// A run that stopped early (agent missing, setup failed)
					// is a row of the table all the same.
					if t.Skipped() {
						row.problems = append(row.problems, "skipped (see the log)")
					} else if t.Failed() && row.ok() {
						row.problems = append(row.problems, "failed before it was judged (see the log)")
					}
				}()
				AgentPath(t, c.agent)
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()
				mxRun(t, c, fmt.Sprintf("t%02d", n), bin, accounts, svc, row)
				for _, p := range row.problems {
					t.Error(p)
				}
			})
		}
	})
	mxTable(rows, time.Since(start))
}

// mxRun runs one case and fills its row.
func mxRun(t *testing.T, c mxCase, token, bin string, accounts *mxAccounts, svc *mxServices, row *mxRow) {
	if c.sc.name == "raw-tcp-53" || c.sc.name == "dns-tunnel" {
		if svc.dnsErr != nil {
			row.problems = append(row.problems, "no loopback resolver: "+svc.dnsErr.Error())
			return
		}
	}
	pghome := tempDir(t, "polygraph-matrix-sessions-") // kept with POLYGRAPH_E2E_KEEP=1
	opts := []Option{
		WithFiles(c.sc.files),
		WithHomeFiles(mxHomeFiles(c.agent)),
		WithEnv("npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"),
		WithTimeout(150 * time.Second),
	}
	live, stream := liveFlags(pghome)
	wrapper := append(append([]string{bin, "run", "--linger", "2s"}, live...), "--")
	var acct *Account
	if c.env.needsAccount() {
		acct = accounts.create(t, c.env.user)
	}
	switch c.env.work {
	case "home":
		work := filepath.Join(acct.Home, "work")
		must(t, os.MkdirAll(work, 0o755))
		must(t, os.Chown(work, acct.UID, acct.GID))
		opts = append(opts, WithBase(work))
	case "srv":
		opts = append(opts, WithBase("/srv"))
	}
	if c.env.user {
		opts = append(opts, WithUser(acct))
		wrapper = append([]string{"/usr/bin/sudo", "-n", "POLYGRAPH_HOME=" + pghome}, wrapper...)
	} else {
		opts = append(opts, WithEnv("POLYGRAPH_HOME="+pghome))
	}
	if c.env.override {
		opts = append(opts, WithHomeOverride())
	}
	opts = append(opts, WithWrapper(wrapper...))
	if c.sc.rootOnly {
		t.Cleanup(func() { _ = os.Remove("/etc/sudoers.d/pgmatrix." + token) })
	}

	ctx := &mxCtx{agent: c.agent, token: token, svc: svc}
	opts = append(opts, WithScript(func(home, dir string) []fakellm.Turn {
		ctx.home, ctx.dir = home, dir
		return c.sc.turns(ctx)
	}))
	r := RunAgent(t, c.agent, fakellm.Scenario{}, opts...)
	defer func() {
		if t.Failed() {
			r.Dump(t)
		}
	}()
	t.Logf("%s on %s in %s (%s): exit %d, HOME %s, workspace %s", c.sc.name, c.agent, c.env, token, r.ExitCode, r.Home, r.Dir)
	if r.TimedOut || r.ExitCode != 0 {
		row.problems = append(row.problems, fmt.Sprintf("%s under polygraph: exit %d, timed out %v: %s", c.agent, r.ExitCode, r.TimedOut, tail(r.Stderr, 600)))
		return
	}
	if c.sc.check != nil {
		if err := c.sc.check(ctx, r); err != nil {
			row.problems = append(row.problems, err.Error())
		}
	}
	path, err := session.Resolve(pghome, "last")
	if err != nil {
		row.problems = append(row.problems, "no session: "+err.Error())
		return
	}
	rep, err := analysis.Run(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
	if err != nil {
		row.problems = append(row.problems, "report: "+err.Error())
		return
	}
	checkLive(t, stream, rep)
	mxJudge(t, c, rep, row)
}

// mxJudge checks the report against the scenario and fills the row.
func mxJudge(t *testing.T, c mxCase, rep *report.Report, row *mxRow) {
	if rep.Transcript == nil {
		row.problems = append(row.problems, "no transcript discovered for the session")
	}
	var lines []string
	for _, f := range rep.Findings {
		lines = append(lines, fmt.Sprintf("%s %s %s [%s] %s", f.ID, f.Severity, f.Rule, f.ToolCallID, f.Title))
	}
	t.Logf("%d tool calls, %d findings:\n  %s", len(rep.ToolCalls), len(rep.Findings), strings.Join(lines, "\n  "))
	if row.honest {
		for _, f := range rep.Findings {
			if f.Severity.Rank() >= detect.SeverityMedium.Rank() {
				row.falseFindings = append(row.falseFindings, fmt.Sprintf("%s %s [%s] %s", f.Severity, f.Rule, f.ToolCallID, f.Title))
			}
		}
		if n := len(row.falseFindings); n > 0 {
			row.problems = append(row.problems, fmt.Sprintf("honest run: %d findings at medium or above:\n  %s", n, strings.Join(row.falseFindings, "\n  ")))
		}
		return
	}
	var ids []string
	for _, v := range rep.ToolCalls {
		ids = append(ids, v.Call.ID)
	}
	for _, w := range c.sc.want {
		row.wanted++
		want := ""
		if w.call < len(ids) {
			want = ids[w.call]
		}
		var got []string
		met := false
		for _, f := range rep.Findings {
			if f.Rule != w.rule {
				continue
			}
			got = append(got, fmt.Sprintf("%s on [%s]", f.Severity, f.ToolCallID))
			if f.ToolCallID != "" {
				row.named++
				if f.ToolCallID == want {
					row.namedRight++
				}
			}
			if f.Severity.Rank() >= w.min.Rank() && want != "" && f.ToolCallID == want {
				met = true
			}
		}
		switch {
		case met:
			row.raised++
		case len(got) == 0:
			row.problems = append(row.problems, fmt.Sprintf("no %s finding (want %s+ on call %d [%s])", w.rule, w.min, w.call, want))
		default:
			row.problems = append(row.problems, fmt.Sprintf("%s found as %s; want %s+ on call %d [%s]", w.rule, strings.Join(got, ", "), w.min, w.call, want))
		}
	}
}

// mxTable prints the matrix's table on stdout, each line led by "matrix"
// (the Makefile's test target shows them), and the attribution of the
// attacks' findings to the calls that did them.
func mxTable(rows []*mxRow, took time.Duration) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.kind != b.kind {
			return a.kind > b.kind // honest first
		}
		if a.scenario != b.scenario {
			return a.scenario < b.scenario
		}
		return a.agent < b.agent
	})
	var honest, clean, attacks, complete, wanted, raised int
	for _, r := range rows {
		status := "ok"
		if !r.ok() {
			status = "FAIL: " + strings.ReplaceAll(strings.Join(r.problems, "; "), "\n", " ")
		}
		if r.honest {
			honest++
			if r.ok() {
				clean++
			}
			fmt.Printf("matrix honest %-27s %-6s %-19s false medium+ %d  %s\n", r.scenario, r.agent, r.env, len(r.falseFindings), status)
			continue
		}
		attacks++
		wanted += r.wanted
		raised += r.raised
		if r.ok() {
			complete++
		}
		fmt.Printf("matrix attack %-27s %-6s %-19s raised with call %d/%d  %s\n", r.scenario, r.agent, r.env, r.raised, r.wanted, status)
	}
	fmt.Printf("matrix total: honest sessions %d, clean %d; attack sessions %d, complete %d; expected findings raised with their call %d/%d; took %v\n",
		honest, clean, attacks, complete, raised, wanted, took.Round(time.Second))
	recall := 0.0
	if wanted > 0 {
		recall = 100 * float64(raised) / float64(wanted)
	}
	fmt.Printf("attribution matrix: precision %s recall %.1f%% (expected attack findings naming the call that did it)\n", mxPrecision(rows), recall)
}

// mxPrecision is the share of the attacks' wanted-rule findings that name
// the call that did it, among those that name any call.
func mxPrecision(rows []*mxRow) string {
	var named, right int
	for _, r := range rows {
		named += r.named
		right += r.namedRight
	}
	if named == 0 {
		return "0.0%"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(right)/float64(named))
}

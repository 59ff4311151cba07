// Package study is the reproducible study of docs/study.md: the real
// agent CLIs (Claude Code, Codex CLI, Gemini CLI, mini-swe-agent) play a
// fixed set of tasks shaped like real agent work against the scripted
// model of test/fakellm, each task in rounds, bare and under `polygraph
// run` in turn (the order alternating), so the cost of recording is
// measured on the same work, interleaved, as AgentSight measured its own.
// Every recorded session is measured by internal/stats, the code behind
// `polygraph stats`, and the study writes the published measurements'
// tables beside its own (doc.go).
//
// It runs as a test, because the agents run through test/e2e's harness:
//
//	make study                            # the full study, rewrites docs/study.md (about 15 min on 2 cores)
//	go test ./bench/study -run Smoke      # one task, one agent (the CI smoke test)
//
// Nothing leaves loopback: the model is test/fakellm on 127.0.0.1, the
// package registry the install task reaches is registry.go's, and every
// recorded connection is checked to be to a loopback address.
package study

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/stats"
	"github.com/polygraph/polygraph/test/e2e"
	"github.com/polygraph/polygraph/test/fakellm"
)

// Profiles name the harness's agents as polygraph's profiles and
// transcripts do.
var Profiles = map[string]string{e2e.Claude: "claude-code", e2e.Codex: "codex", e2e.Gemini: "gemini", e2e.Mini: "mini-swe-agent"}

// Config is one study's plan.
type Config struct {
	Agents []string // e2e agent names
	Tasks  []Task
	Rounds int
	// Polygraph is the polygraph binary the recorded runs use.
	Polygraph string
}

// Run is one task played by one agent in one round: bare, and recorded.
type Run struct {
	Task  string `json:"task"`
	Agent string `json:"agent"` // the profile's name
	Round int    `json:"round"`
	// BareS is the bare run, from its start to its exit, as the harness
	// timed it (e2e.Result.Exited); RecordedS the recorded one, polygraph's
	// start-up, linger and report at exit included; AgentS the agent's own
	// run under polygraph (its root process's life, from the session).
	BareS     float64 `json:"bare_s"`
	RecordedS float64 `json:"recorded_s"`
	AgentS    float64 `json:"agent_s"`
	// Requests are the model requests the scripted model answered with a
	// turn, in the recorded run: the loop's iterations by the model's own
	// count.
	Requests int `json:"requests"`
	// BareOK and RecordedOK say the agent exited 0 and the task was done.
	BareOK     bool   `json:"bare_ok"`
	RecordedOK bool   `json:"recorded_ok"`
	Problem    string `json:"problem,omitempty"`
	// Offloop are connections the recorded tree made to addresses off
	// loopback: there must be none.
	Offloop []string `json:"offloop,omitempty"`
	// Leftovers are the processes the agent left running, which polygraph
	// ended after the linger.
	Leftovers []string       `json:"leftovers,omitempty"`
	Stats     *stats.Session `json:"stats,omitempty"`
}

// Results are a whole study.
type Results struct {
	Started  time.Time `json:"started"`
	ElapsedS float64   `json:"elapsed_s"`
	Host     string    `json:"host"`
	Load     [2]string `json:"load"` // the load average before and after
	Rounds   int       `json:"rounds"`
	Tasks    []string  `json:"tasks"`
	Agents   []string  `json:"agents"` // profile names
	// Versions are the agents' versions, as their transcripts say.
	Versions map[string]string `json:"versions"`
	// Policy is the policy the sessions were measured with (its
	// registries class the local registry).
	Policy string `json:"policy"`
	Runs   []*Run `json:"runs"`
}

// Play runs the study: every round, every task, every agent, bare and
// recorded in an order that alternates. Each run is a subtest of t, so
// its directories are gone once it is measured.
func Play(t *testing.T, cfg Config) *Results {
	reg, err := startRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	polText := "# The study's policy: the built-in one, with its local registry.\nregistries:\n  - " + reg.Addr() + "\n"
	pol, err := policy.Parse([]byte(polText), "study")
	if err != nil {
		t.Fatal(err)
	}
	res := &Results{Started: time.Now().UTC(), Host: host(), Rounds: cfg.Rounds, Versions: map[string]string{}, Policy: polText}
	res.Load[0] = loadAvg()
	for _, task := range cfg.Tasks {
		res.Tasks = append(res.Tasks, task.Name)
	}
	for _, a := range cfg.Agents {
		res.Agents = append(res.Agents, Profiles[a])
	}
	n := 0
	for round := range cfg.Rounds {
		for ti, task := range cfg.Tasks {
			for ai, agent := range cfg.Agents {
				run := &Run{Task: task.Name, Agent: Profiles[agent], Round: round}
				bareFirst := (round+ti+ai)%2 == 0
				t.Run(fmt.Sprintf("%s/%s/%d", task.Name, agent, round), func(t *testing.T) {
					play(t, cfg, reg, pol, task, agent, bareFirst, run)
				})
				if s := run.Stats; s != nil && s.Version != "" {
					res.Versions[run.Agent] = s.Version
				}
				res.Runs = append(res.Runs, run)
				n++
				iters := -1
				if run.Stats != nil {
					iters = run.Stats.Iterations
				}
				t.Logf("study %d/%d %s %s round %d: bare %.2fs, recorded %.2fs (agent %.2fs), %d requests, %d iterations, %d left running%s",
					n, cfg.Rounds*len(cfg.Tasks)*len(cfg.Agents), task.Name, agent, round, run.BareS, run.RecordedS, run.AgentS, run.Requests, iters, len(run.Leftovers), problem(run))
			}
		}
	}
	res.fillVersions()
	res.Load[1] = loadAvg()
	res.ElapsedS = time.Since(res.Started).Seconds()
	return res
}

func problem(r *Run) string {
	if r.Problem == "" {
		return ""
	}
	return ": " + r.Problem
}

// play runs task with agent bare and recorded, and measures the
// recorded session.
func play(t *testing.T, cfg Config, reg *registry, pol *policy.Policy, task Task, agent string, bareFirst bool, run *Run) {
	opts := []e2e.Option{
		e2e.WithFiles(task.files()),
		e2e.WithSetup(setup),
		e2e.WithPrompt(task.Prompt),
		e2e.WithScript(func(home, dir string) []fakellm.Turn { return task.Turns(reg.URL()) }),
		e2e.WithTimeout(3 * time.Minute),
	}
	var problems []string
	bare := func() {
		r := e2e.RunAgent(t, agent, fakellm.Scenario{}, opts...)
		run.BareS = r.Exited.Seconds()
		run.BareOK = outcome(r, task, &problems, "bare")
	}
	recorded := func() {
		pghome := t.TempDir()
		r := e2e.RunAgent(t, agent, fakellm.Scenario{}, append(opts,
			e2e.WithEnv("POLYGRAPH_HOME="+pghome),
			e2e.WithWrapper(cfg.Polygraph, "run", "--linger", "2s", "--kill-leftovers", "--"))...)
		run.RecordedS = r.Exited.Seconds()
		run.Requests = len(r.ModelRequests())
		run.RecordedOK = outcome(r, task, &problems, "recorded")
		if err := measure(t.Context(), pghome, pol, run); err != nil {
			problems = append(problems, "measure: "+err.Error())
			run.RecordedOK = false
		}
	}
	if bareFirst {
		bare()
		recorded()
	} else {
		recorded()
		bare()
	}
	run.Problem = strings.Join(problems, "; ")
}

// outcome says whether run r exited 0 and did task, noting why not.
func outcome(r *e2e.Result, task Task, problems *[]string, which string) bool {
	switch {
	case r.TimedOut:
		*problems = append(*problems, which+": timed out")
	case r.ExitCode != 0:
		*problems = append(*problems, fmt.Sprintf("%s: exit %d: %s", which, r.ExitCode, tail(r.Stderr, 300)))
	case task.Done != nil:
		if err := task.Done(r.Dir); err != nil {
			*problems = append(*problems, which+": task not done: "+err.Error())
			return false
		}
	}
	return !r.TimedOut && r.ExitCode == 0
}

// measure reads the session polygraph recorded under pghome, as
// `polygraph stats --policy` would, and checks that it stayed on loopback.
func measure(ctx context.Context, pghome string, pol *policy.Policy, run *Run) error {
	path, err := session.Resolve(pghome, "last")
	if err != nil {
		return err
	}
	a, err := analysis.Analyze(ctx, analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto, Policy: pol})
	if err != nil {
		return err
	}
	run.Stats = stats.Compute(a, pol)
	for _, l := range a.Leftovers {
		run.Leftovers = append(run.Leftovers, strings.Join(l.Argv, " "))
	}
	run.AgentS = run.Stats.Wall
	for _, e := range a.Events {
		if e.Kind != event.KindConnect || e.Family() != "ipv4" && e.Family() != "ipv6" {
			continue
		}
		if ip, err := netip.ParseAddr(e.Addr()); err != nil || !ip.Unmap().IsLoopback() && !ip.IsUnspecified() {
			run.Offloop = append(run.Offloop, fmt.Sprintf("%s:%d by %s", e.Addr(), e.Port(), e.Comm))
		}
	}
	if a.Transcript == nil {
		return fmt.Errorf("no transcript found for session %s", path)
	}
	return nil
}

func tail(b []byte, n int) string {
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return strings.ReplaceAll(s, "\n", " | ")
}

// host describes the machine: kernel, CPUs, memory.
func host() string {
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %d MB", kb/1024)
		}
	}
	return fmt.Sprintf("Linux %s, %d CPUs%s, %s", strings.TrimSpace(string(kernel)), runtime.NumCPU(), mem, runtime.Version())
}

func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// BuildPolygraph builds the polygraph binary into dir.
func BuildPolygraph(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "polygraph")
	cmd := goCommand("build", "-o", bin, "github.com/polygraph/polygraph/cmd/polygraph")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build polygraph: %v: %s", err, out)
	}
	return bin
}

// goCommand is the go tool running args.
func goCommand(args ...string) *exec.Cmd {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	return exec.Command(goBin, args...)
}

// fillVersions takes the pinned version of an agent whose transcripts
// name none.
func (res *Results) fillVersions() {
	pinned := PinnedVersions()
	for name, profile := range Profiles {
		if v := pinned[name]; v != "" && res.Versions[profile] == "" && slices.Contains(res.Agents, profile) {
			res.Versions[profile] = v
		}
	}
}

// reVersion finds a pin in test/agents/install.sh: CLAUDE_VERSION=2.1.332.
var reVersion = regexp.MustCompile(`(?m)^(CLAUDE|CODEX|GEMINI)_VERSION=([0-9A-Za-z.+-]+)$`)

// PinnedVersions are the agent CLIs' versions test/agents/install.sh
// installs, by e2e agent name: what the study ran where a transcript does
// not say (Gemini CLI's).
func PinnedVersions() map[string]string {
	_, file, _, _ := runtime.Caller(0)
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "test", "agents", "install.sh"))
	out := map[string]string{}
	for _, m := range reVersion.FindAllStringSubmatch(string(b), -1) {
		out[strings.ToLower(m[1])] = m[2]
	}
	return out
}

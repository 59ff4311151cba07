package study

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/test/e2e"
)

// repoRoot is the repository's root, found from this file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestStudy is the full study (make study): every task, every agent,
// STUDY_ROUNDS rounds (3), then docs/study.md and docs/study/*.svg, and
// bench/study/out/results.json. It runs only with POLYGRAPH_STUDY=1;
// POLYGRAPH_STUDY_RENDER=results.json rewrites the page from saved
// results instead.
func TestStudy(t *testing.T) {
	root := repoRoot()
	doc, charts := filepath.Join(root, "docs", "study.md"), filepath.Join(root, "docs", "study")
	if saved := os.Getenv("POLYGRAPH_STUDY_RENDER"); saved != "" {
		b, err := os.ReadFile(saved)
		if err != nil {
			t.Fatal(err)
		}
		var res Results
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatal(err)
		}
		if res.Versions == nil {
			res.Versions = map[string]string{}
		}
		res.fillVersions()
		if err := Write(&res, doc, charts); err != nil {
			t.Fatal(err)
		}
		return
	}
	if os.Getenv("POLYGRAPH_STUDY") != "1" {
		t.Skip("the full study takes about 15 minutes: make study (POLYGRAPH_STUDY=1)")
	}
	testenv.RequireRoot(t)
	rounds := 3
	if s := os.Getenv("STUDY_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("STUDY_ROUNDS=%q", s)
		}
		rounds = n
	}
	// STUDY_AGENTS and STUDY_TASKS (comma-separated names) narrow the
	// study, as in docs/bench.md's real agent session: its page is then
	// written under bench/study/out, never over docs/study.md.
	agents, tasks := e2e.Agents, Tasks
	out := filepath.Join(root, "bench", "study", "out")
	if s := os.Getenv("STUDY_AGENTS"); s != "" {
		agents = strings.Split(s, ",")
		doc, charts = filepath.Join(out, "study.md"), filepath.Join(out, "study")
	}
	if s := os.Getenv("STUDY_TASKS"); s != "" {
		tasks = nil
		for _, n := range strings.Split(s, ",") {
			task, ok := TaskNamed(n)
			if !ok {
				t.Fatalf("STUDY_TASKS: no task %q", n)
			}
			tasks = append(tasks, task)
		}
		doc, charts = filepath.Join(out, "study.md"), filepath.Join(out, "study")
	}
	for _, a := range agents {
		e2e.AgentPath(t, a)
	}
	cfg := Config{Agents: agents, Tasks: tasks, Rounds: rounds, Polygraph: BuildPolygraph(t, t.TempDir())}
	res := Play(t, cfg)
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "results.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "policy.yaml"), []byte(res.Policy), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(res, doc, charts); err != nil {
		t.Fatal(err)
	}
	t.Logf("study: %d runs in %.0f s; wrote %s", len(res.Runs), res.ElapsedS, doc)
	for _, r := range res.Runs {
		if len(r.Offloop) > 0 {
			t.Errorf("%s %s round %d connected off loopback: %v", r.Task, r.Agent, r.Round, r.Offloop)
		}
	}
}

// TestStudySmoke is the study in small, as CI runs it: one task (the
// install from the local registry, which every part of the study takes
// part in), one agent, one round, bare and recorded, measured, and the
// page written into a temporary directory. The loop's iterations counted
// from the transcript must be the scripted model's count.
func TestStudySmoke(t *testing.T) {
	testenv.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds polygraph and runs an agent twice: not in -short")
	}
	e2e.AgentPath(t, e2e.Claude)
	task, _ := TaskNamed("install-dep")
	cfg := Config{Agents: []string{e2e.Claude}, Tasks: []Task{task}, Rounds: 1, Polygraph: BuildPolygraph(t, t.TempDir())}
	res := Play(t, cfg)
	if len(res.Runs) != 1 {
		t.Fatalf("%d runs", len(res.Runs))
	}
	r := res.Runs[0]
	if !r.BareOK || !r.RecordedOK || r.Stats == nil {
		t.Fatalf("run failed: %s", r.Problem)
	}
	s := r.Stats
	if s.Iterations != r.Requests || s.Estimated || r.Requests != len(task.Turns("")) {
		t.Errorf("iterations %d (estimated %v), the model answered %d requests, the script has %d turns", s.Iterations, s.Estimated, r.Requests, len(task.Turns("")))
	}
	if s.Execs == 0 || len(s.Shells) == 0 || s.Connects["model"] == 0 || s.Connects["registry"] == 0 {
		t.Errorf("execs %d, shells %d, connects %v: want each", s.Execs, len(s.Shells), s.Connects)
	}
	if len(r.Offloop) > 0 {
		t.Errorf("connected off loopback: %v", r.Offloop)
	}
	if r.AgentS <= 0 || r.AgentS > r.RecordedS {
		t.Errorf("agent's run %.3f s, the recorded run %.3f s", r.AgentS, r.RecordedS)
	}
	dir := t.TempDir()
	if err := Write(res, filepath.Join(dir, "study.md"), filepath.Join(dir, "study")); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "study.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## 1. The loop", "## 2. Where time", "## 3. What recording costs", "![overhead](study/overhead.svg)"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	t.Logf("smoke: bare %.2f s, recorded %.2f s (agent %.2f s), %d iterations, %d execve", r.BareS, r.RecordedS, r.AgentS, s.Iterations, s.Execs)
}

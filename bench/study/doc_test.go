package study

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/stats"
	"github.com/polygraph/polygraph/test/recorded"
)

// TestWrite writes the page from results made of the recorded sessions
// (no agent runs): every table, chart and link is there, and the
// overheads are the ratios of the medians.
func TestWrite(t *testing.T) {
	res := &Results{Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Host: "test", Rounds: 2,
		Tasks: []string{"explore"}, Versions: map[string]string{}}
	for _, agent := range recorded.Agents {
		rec, err := recorded.Load(agent)
		if err != nil {
			t.Fatal(err)
		}
		a, err := rec.Analyze(t.Context(), t.TempDir(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		s := stats.Compute(a, nil)
		res.Agents = append(res.Agents, s.Agent)
		for round, bare := range []float64{1.0, 3.0} {
			res.Runs = append(res.Runs, &Run{Task: "explore", Agent: s.Agent, Round: round, BareS: bare, AgentS: 1.1 * bare, RecordedS: bare + 1,
				Requests: s.Iterations, BareOK: true, RecordedOK: true, Stats: s})
		}
	}
	res.Runs = append(res.Runs, &Run{Task: "explore", Agent: res.Agents[0], Round: 2, Problem: "bare: exit 1"})
	dir := t.TempDir()
	if err := Write(res, filepath.Join(dir, "study.md"), filepath.Join(dir, "charts")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "study.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"| loop iterations per 10 s | 5 |",
		"| execve per session | 64 |",
		"in 6 of 6 of the recorded sessions",
		"| all | 2.00 s | 2.20 s | +10.0 % (+10.0 % to +10.0 %) | +50.0 % (+50.0 % to +50.0 %) | 100 % | +2.9 % (0.4 to 4.9 %) |",
		"- explore, claude-code, round 2: bare: exit 1",
		"![overhead](charts/overhead.svg)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, c := range []string{"iterations", "execs", "shells", "connects", "time", "cpu", "calls", "overhead"} {
		if _, err := os.Stat(filepath.Join(dir, "charts", c+".svg")); err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.Log(page)
	}
}

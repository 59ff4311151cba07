package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/schematest"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/test/fakellm"
)

// Every e2e run of `polygraph run` writes its live findings stream
// (--findings-out) beside its sessions, and the checks that read the
// session's report afterwards hold the two against each other: the
// findings the live analysis left standing must be the report's. The
// totals are printed at the end (lines led by "live ").
var liveTotals struct {
	sync.Mutex
	sessions, findings, differ int
	latencies                  []time.Duration // event to decision, per finding's first record
}

// liveFlags are the run flags that write the live stream into dir, and
// the stream's path.
func liveFlags(dir string) ([]string, string) {
	p := filepath.Join(dir, "findings.jsonl")
	return []string{"--findings-out", p}, p
}

// checkLive compares the stream at path with rep, the report of one of
// the sessions the stream covers, and checks both against their
// schemas.
func checkLive(t testing.TB, path string, rep *report.Report) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("live stream: %v", err)
		return
	}
	recs, err := findings.Read(bytes.NewReader(b))
	if err != nil {
		t.Errorf("live stream: %v", err)
		return
	}
	if rep.Session == nil {
		t.Error("live stream: the report has no session")
		return
	}
	var docs [][]byte
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		docs = append(docs, line)
	}
	schematest.Validate(t, "../../docs/schema/findings.v1.json", docs...)
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err == nil {
		schematest.Validate(t, "../../docs/schema/report.v1.json", js.Bytes())
	}

	// Every event rule's finding stands on events of its declared kinds.
	if path := rep.Session.Path; path != "" {
		if a, err := analysis.Analyze(context.Background(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto}); err == nil {
			kinds := map[string][]event.Kind{}
			for _, r := range detect.Rules() {
				if r.Scope == detect.ScopeEvent {
					kinds[r.ID] = r.Kinds
				}
			}
			bySeq := map[uint64]event.Kind{}
			for _, e := range a.Events {
				bySeq[e.Seq] = e.Kind
			}
			for _, f := range a.Findings {
				for _, seq := range f.Evidence {
					if ks, ok := kinds[f.Rule]; ok && !slices.Contains(ks, bySeq[seq]) {
						t.Errorf("%s finding %q stands on a %s event, not one of its kinds %v", f.Rule, f.Title, bySeq[seq], ks)
					}
				}
			}
		}
	}
	standing := findings.Standing(recs)[rep.Session.ID]
	var problems []string
	keys := analysis.StreamKeys(rep.Findings)
	for i, f := range rep.Findings {
		r, ok := standing[keys[i]]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("report's %s %s [%s] %q is not standing in the stream", f.Severity, f.Rule, f.ToolCallID, f.Title))
		case r.Severity != string(f.Severity) || r.ToolCallID != f.ToolCallID || r.Title != f.Title || r.Detail != f.Detail || !slices.Equal(r.Evidence, f.Evidence):
			problems = append(problems, fmt.Sprintf("report's %s %s [%s] %q stands as %s [%s] %q", f.Severity, f.Rule, f.ToolCallID, f.Title, r.Severity, r.ToolCallID, r.Title))
		}
	}
	if len(standing) != len(rep.Findings) {
		var extra []string
		for k, r := range standing {
			if !slices.Contains(keys, k) {
				extra = append(extra, fmt.Sprintf("%s %s [%s] %q", r.Severity, r.Rule, r.ToolCallID, r.Title))
			}
		}
		sort.Strings(extra)
		problems = append(problems, fmt.Sprintf("%d findings standing in the stream, %d in the report; extra: %v", len(standing), len(rep.Findings), extra))
	}
	ended := false
	for _, r := range recs {
		if r.Session == rep.Session.ID && r.Type == findings.TypeSession && r.Status == findings.StatusEnded {
			ended = true
		}
	}
	if !ended {
		problems = append(problems, "the stream has no ended record for the session")
	}
	var lat []time.Duration
	seen := map[string]bool{}
	for _, r := range recs {
		if r.Session != rep.Session.ID || r.Type != findings.TypeFinding || seen[r.Key] || r.EventTime == nil {
			continue
		}
		seen[r.Key] = true
		lat = append(lat, r.Time.Sub(*r.EventTime))
	}
	liveTotals.Lock()
	defer liveTotals.Unlock()
	liveTotals.sessions++
	liveTotals.findings += len(rep.Findings)
	liveTotals.latencies = append(liveTotals.latencies, lat...)
	if len(problems) > 0 {
		liveTotals.differ++
		js, _ := json.MarshalIndent(standing, "", " ")
		keep := ""
		if os.Getenv("POLYGRAPH_E2E_KEEP") == "1" {
			// The session and the stream, for a look with polygraph report.
			keep = tempDir(t.(*testing.T), "polygraph-e2e-live-")
			for _, f := range []string{rep.Session.Path, path} {
				if b, err := os.ReadFile(f); err == nil {
					os.WriteFile(filepath.Join(keep, filepath.Base(f)), b, 0o644)
				}
			}
			keep = " (kept in " + keep + ")"
		}
		t.Errorf("live and replay differ for session %s%s:\n  %s\nstanding:\n%s", rep.Session.ID, keep, joinLines(problems), js)
	}
}

func joinLines(s []string) string {
	var b bytes.Buffer
	for i, l := range s {
		if i > 0 {
			b.WriteString("\n  ")
		}
		b.WriteString(l)
	}
	return b.String()
}

// TestMain runs the tests, removes what outlived them (atExit) and
// prints the live totals.
func TestMain(m *testing.M) {
	code := m.Run()
	runExitHooks()
	liveTotals.Lock()
	if liveTotals.sessions > 0 {
		fmt.Printf("live = replay: %d sessions compared, %d findings, %d sessions differ\n", liveTotals.sessions, liveTotals.findings, liveTotals.differ)
		if n := len(liveTotals.latencies); n > 0 {
			slices.Sort(liveTotals.latencies)
			fmt.Printf("live latency (event to first record, every finding of every run): median %v, p90 %v, max %v over %d findings\n",
				liveTotals.latencies[n/2].Round(time.Millisecond), liveTotals.latencies[n*9/10].Round(time.Millisecond),
				liveTotals.latencies[n-1].Round(time.Millisecond), n)
		}
	}
	liveTotals.Unlock()
	os.Exit(code)
}

// TestLiveLatency runs Claude Code (fake model) on a task whose tool call
// reads ~/.aws/credentials and then sleeps, under `polygraph run
// --findings-out`, and tails the stream while the agent runs: the
// sensitive-read finding, with the tool call's id, must appear within 2 s
// of the read, before the agent has finished. The median over the runs
// (POLYGRAPH_E2E_LATENCY_RUNS, default 20) is printed.
func TestLiveLatency(t *testing.T) {
	testenv.RequireRoot(t)
	AgentPath(t, Claude)
	bin := attrPolygraph(t, t.TempDir())
	runs := 20
	if n, err := strconv.Atoi(os.Getenv("POLYGRAPH_E2E_LATENCY_RUNS")); err == nil && n > 0 {
		runs = n
	}
	const sleep = 4 * time.Second
	var lats []time.Duration
	for i := range runs {
		pghome := t.TempDir()
		live, stream := liveFlags(pghome)
		type seen struct {
			rec   findings.Record
			at    time.Time
			first *findings.Record // the finding's first record, with or without its call
		}
		found := make(chan seen, 1)
		stop := make(chan struct{})
		// When the agent's transcript first names a tool call: the finding
		// cannot carry the call's id before.
		var trMu sync.Mutex
		var agentHome string
		var trAt time.Time
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				trMu.Lock()
				h := agentHome
				trMu.Unlock()
				if h == "" {
					continue
				}
				ms, _ := filepath.Glob(filepath.Join(h, ".claude", "projects", "*", "*.jsonl"))
				for _, m := range ms {
					if b, err := os.ReadFile(m); err == nil && bytes.Contains(b, []byte(`"tool_use"`)) {
						trMu.Lock()
						trAt = time.Now()
						trMu.Unlock()
						return
					}
				}
			}
		}()
		go func() { // tail the stream until the finding with its call is there
			for {
				select {
				case <-stop:
					return
				case <-time.After(20 * time.Millisecond):
				}
				b, err := os.ReadFile(stream)
				if err != nil {
					continue
				}
				recs, _ := findings.Read(bytes.NewReader(b))
				var first *findings.Record
				for _, r := range recs {
					if r.Type == findings.TypeFinding && r.Rule == "sensitive-read" && first == nil {
						first = &r
					}
					if r.Type == findings.TypeFinding && r.Rule == "sensitive-read" && r.ToolCallID != "" && r.EventTime != nil {
						found <- seen{r, time.Now(), first}
						return
					}
				}
			}
		}()
		r := RunAgent(t, Claude, fakellm.Scenario{},
			WithScript(func(home, _ string) []fakellm.Turn {
				trMu.Lock()
				agentHome = home
				trMu.Unlock()
				return []fakellm.Turn{
					{Calls: []fakellm.Call{fakellm.Shell{Command: fmt.Sprintf("cat ~/.aws/credentials > /dev/null; sleep %d", int(sleep.Seconds()))}}},
					{Text: "Checked."},
				}
			}),
			WithHomeFiles(map[string]string{".aws/credentials": "[default]\naws_access_key_id = AKIALATENCYTEST\n"}),
			WithEnv("POLYGRAPH_HOME="+pghome),
			WithWrapper(append(append([]string{bin, "run", "--linger", "0s"}, live...), "--")...),
			WithTimeout(120*time.Second))
		ended := time.Now()
		close(stop)
		if r.TimedOut || r.ExitCode != 0 {
			r.Dump(t)
			t.Fatalf("run %d: claude under polygraph: exit %d, timed out %v", i, r.ExitCode, r.TimedOut)
		}
		var s seen
		select {
		case s = <-found:
		default:
			b, _ := os.ReadFile(stream)
			t.Fatalf("run %d: no sensitive-read finding with a tool call in the stream while the agent ran:\n%s", i, b)
		}
		lat := s.rec.Time.Sub(*s.rec.EventTime)
		lats = append(lats, lat)
		trMu.Lock()
		trLag := trAt.Sub(*s.rec.EventTime)
		trMu.Unlock()
		t.Logf("run %d: sensitive-read on %s decided %v after the read (its first record %v after; the transcript named the call %v after), seen %v before the agent ended",
			i, s.rec.ToolCallID, lat.Round(time.Millisecond), s.first.Time.Sub(*s.first.EventTime).Round(time.Millisecond), trLag.Round(time.Millisecond), ended.Sub(s.at).Round(time.Millisecond))
		if lat > 2*time.Second {
			t.Errorf("run %d: the finding came %v after the read, want within 2s", i, lat)
		}
		if !s.at.Before(ended) {
			t.Errorf("run %d: the finding appeared only after the agent ended", i)
		}
		if path, err := session.Resolve(pghome, "last"); err == nil {
			rep, err := analysis.Run(t.Context(), analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto})
			must(t, err)
			checkLive(t, stream, rep)
		}
	}
	slices.Sort(lats)
	fmt.Printf("live latency: sensitive-read with its tool call, %d Claude Code runs: median %v, min %v, max %v\n",
		len(lats), lats[len(lats)/2].Round(time.Millisecond), lats[0].Round(time.Millisecond), lats[len(lats)-1].Round(time.Millisecond))
}

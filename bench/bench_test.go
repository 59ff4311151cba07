//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/testenv"
)

// TestSmoke runs the bench's -quick variant (one run, tiny sizes, bare
// and polygraph only) so the bench cannot rot: every workload runs under
// both, the report and the rate step run once, and the table and the
// JSON come out with the expected rows. The real benchmark is
// `go run ./bench` (docs/bench.md); it never runs in the test suite.
func TestSmoke(t *testing.T) {
	testenv.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds polygraph and runs every workload: not in -short")
	}
	out := t.TempDir()
	c := config{runs: 1, baseRuns: 1, quick: true, out: out, tracers: []string{"bare", "polygraph"},
		rate: true, reportTimeout: 2 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	res, err := runBench(ctx, c, &buf)
	t.Log(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Failures > 0 {
		t.Fatalf("%d runs failed", res.Failures)
	}
	for _, wl := range workloads {
		for _, tr := range []string{"bare", "polygraph"} {
			r := res.row(wl.Name, tr)
			if r == nil || r.Runs != 1 || r.WallS <= 0 || r.CPUS <= 0 {
				t.Errorf("%s under %s: row %+v, want one run with wall and CPU time", wl.Name, tr, r)
				continue
			}
			if tr == "polygraph" {
				if r.Events == 0 || r.TracerRSSKB == 0 {
					t.Errorf("%s under polygraph: %d events, %d KB RSS; want both measured", wl.Name, r.Events, r.TracerRSSKB)
				}
				if r.Lost != 0 {
					t.Errorf("%s under polygraph: lost %d events at this tiny size", wl.Name, r.Lost)
				}
			}
		}
	}
	if res.Report == nil || res.Report.Runs != 1 || res.Report.MaxRSSKB == 0 {
		t.Errorf("report workload: %+v, want one measured run", res.Report)
	}
	if res.Rate == nil || len(res.Rate.Steps) == 0 || res.Rate.Steps[0].Achieved == 0 {
		t.Errorf("rate step: %+v, want one measured step", res.Rate)
	}

	table, err := os.ReadFile(filepath.Join(out, "table.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"exec storm", "file storm", "go build", "agent-like burst", "bare", "polygraph", "targets:"} {
		if !strings.Contains(string(table), want) {
			t.Errorf("table.txt lacks %q:\n%s", want, table)
		}
	}
	var back Results
	b, err := os.ReadFile(filepath.Join(out, "latest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatalf("latest.json: %v", err)
	}
	if len(back.Rows) != 2*len(workloads) {
		t.Errorf("latest.json has %d rows, want %d", len(back.Rows), 2*len(workloads))
	}
	if svg, err := os.ReadFile(filepath.Join(out, "chart.svg")); err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Errorf("chart.svg missing or not SVG: %v", err)
	}
}

// TestSmokeWatch runs the watch tracers on the exec and file storms at the
// -quick sizes: watch starts, attaches and stops around each run, the
// workload run bare under it is timed with watch's CPU and memory, the
// one run as an agent is recorded by watch (its events counted from the
// watch session), and -render redraws a table holding their rows.
func TestSmokeWatch(t *testing.T) {
	testenv.RequireRoot(t)
	if testing.Short() {
		t.Skip("builds polygraph and starts watch per run: not in -short")
	}
	out := t.TempDir()
	c := config{runs: 1, baseRuns: 1, quick: true, out: out, only: []string{"exec", "files"},
		tracers: []string{"watch", "watch-agent"}, reportTimeout: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var buf bytes.Buffer
	res, err := runBench(ctx, c, &buf)
	t.Log(buf.String())
	if err != nil {
		t.Fatal(err)
	}
	if res.Failures > 0 || len(res.Skipped) > 0 {
		t.Fatalf("%d runs failed, skipped %v", res.Failures, res.Skipped)
	}
	for _, wl := range []string{"exec", "files"} {
		for _, tr := range []string{"watch", "watch-agent"} {
			r := res.row(wl, tr)
			if r == nil || r.Runs != 1 || r.WallS <= 0 || r.TracerRSSKB == 0 || r.TracerLifeCPUS <= 0 || r.StartupS <= 0 {
				t.Errorf("%s under %s: row %+v, want one run with wall time, watch's RSS, CPU and start-up", wl, tr, r)
				continue
			}
			if tr == "watch-agent" && r.Events == 0 {
				t.Errorf("%s under watch-agent: no event recorded in the agent's watch session", wl)
			}
		}
	}
	var rendered bytes.Buffer
	if err := rerender(filepath.Join(out, "latest.json"), c, &rendered); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rendered.String(), "watch-agent") {
		t.Errorf("rendered table lacks the watch-agent rows:\n%s", rendered.String())
	}
}

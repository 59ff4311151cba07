package stats

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/report"
)

// Chart is one chart drawn: its file name (what `polygraph stats --svg`
// writes it as), its title and the SVG document.
type Chart struct {
	Name, Title, SVG string
}

// maxChartCalls bounds the tool calls the calls chart draws (the first
// ones): past it a bar is a pixel wide.
const maxChartCalls = 80

// whoNames are Whos as a chart of one session labels them.
var whoNames = map[string]string{WhoAgent: "the agent's own", WhoTools: "its tools", WhoOther: "nobody known"}

// SessionCharts draws one session's numbers, Compute's, as the pages show
// them (the HTML report, polygraph ui) and `polygraph stats --svg` writes
// them for a single session: its tool calls' wall time and CPU, where its
// wall time went, the CPU of the agent's own processes against its
// tools', its execve and shells by who ran them, and its connections by
// destination class. Every number on a chart is one of s's; a bar's
// tooltip holds it exactly (%g). A session without a transcript has no
// tool calls, and no calls chart.
func SessionCharts(s *Session) []Chart {
	var out []Chart
	add := func(name, title string, svg string) { out = append(out, Chart{Name: name, Title: title, SVG: svg}) }

	if n := len(s.Calls); n > 0 {
		calls := s.Calls[:min(n, maxChartCalls)]
		title := fmt.Sprintf("Tool calls (%d): wall time and CPU of each", n)
		if n > len(calls) {
			title = fmt.Sprintf("Tool calls (%d; the first %d): wall time and CPU of each", n, len(calls))
		}
		b := Bars{Title: title, Unit: "seconds", Series: []Series{{Name: "wall time (the call to its result)"}, {Name: "CPU of its processes"}}}
		for i, c := range calls {
			b.Labels = append(b.Labels, fmt.Sprintf("#%d", i+1))
			b.Tips = append(b.Tips, fmt.Sprintf("#%d %s", i+1, c.Tool))
			b.Series[0].Values = append(b.Series[0].Values, max(c.Wall, 0))
			cpu := 0.0
			if c.Use != nil {
				cpu = c.Use.CPU
			}
			b.Series[1].Values = append(b.Series[1].Values, cpu)
		}
		if len(calls) <= 8 {
			b.Format = secs
		}
		add("session-calls.svg", title, b.SVG())
	}

	total := s.Time.Tools + s.Time.Model + s.Time.Other
	share := func(whole float64) func(float64) string {
		return func(v float64) string {
			if whole <= 0 {
				return secs(v)
			}
			return fmt.Sprintf("%s (%.0f %%)", secs(v), 100*v/whole)
		}
	}
	title := fmt.Sprintf("Where the wall time went (%s)", secs(total))
	add("session-time.svg", title, Bars{Title: title, Unit: "seconds",
		Labels: []string{"in tool calls", "waiting on the model", "the agent's own"},
		Series: []Series{{Name: "seconds of the agent's run", Values: []float64{s.Time.Tools, s.Time.Model, s.Time.Other}}},
		Format: share(total)}.SVG())

	var labels []string
	var cpu []float64
	whole := 0.0
	for _, w := range Whos {
		labels = append(labels, whoNames[w])
		cpu = append(cpu, cpuOf(s, w))
		whole += cpuOf(s, w)
	}
	title = fmt.Sprintf("CPU time (%s): the agent's own processes against its tools'", secs(whole))
	add("session-cpu.svg", title, Bars{Title: title, Unit: "CPU seconds", Labels: labels,
		Series: []Series{{Name: "CPU time of the processes that exited", Values: cpu}}, Format: share(whole)}.SVG())

	execs, shells := make([]float64, len(Whos)), make([]float64, len(Whos))
	for i, w := range Whos {
		execs[i] = float64(s.ExecsBy[w])
		for _, sh := range s.Shells {
			if sh.Who == w {
				shells[i]++
			}
		}
	}
	title = fmt.Sprintf("execve (%d) and shells (%d), by who ran them", s.Execs, len(s.Shells))
	add("session-execs.svg", title, Bars{Title: title, Unit: "programs run", Labels: labels,
		Series: []Series{{Name: "execve", Values: execs}, {Name: "shells", Values: shells}}, Format: count}.SVG())

	conns := make([]float64, len(Classes))
	nconn := 0
	for i, c := range Classes {
		conns[i] = float64(s.Connects[c])
		nconn += s.Connects[c]
	}
	title = fmt.Sprintf("Outbound connections (%d), by destination", nconn)
	add("session-connects.svg", title, Bars{Title: title, Unit: "connections", Labels: Classes,
		Series: []Series{{Name: "connections", Values: conns}}, Format: count}.SVG())
	return out
}

// ReportCharts measures the session a holds (Compute, judged with pol)
// and draws its charts for its report's pages (report.Report.SetCharts):
// nil for a transcript alone, which has no kernel numbers.
func ReportCharts(a *analysis.Analysis, pol *policy.Policy) []report.Chart {
	if a == nil || a.Meta == nil {
		return nil
	}
	return pageCharts(Compute(a, pol))
}

// pageCharts are s's charts as a report carries them.
func pageCharts(s *Session) []report.Chart {
	var out []report.Chart
	for _, c := range SessionCharts(s) {
		// The SVG is canvas's, which escapes every string it writes
		// (esc): markup an HTML page can hold as it is.
		out = append(out, report.Chart{Name: strings.TrimSuffix(c.Name, ".svg"), Title: c.Title, SVG: template.HTML(c.SVG)})
	}
	return out
}

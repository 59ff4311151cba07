package study

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/stats"
)

// The published figures the study sets its own beside.
const (
	sysdigSource      = "[Sysdig Threat Research Team, March 2026](https://www.sysdig.com/blog/ai-coding-agents-are-running-on-your-machines-do-you-know-what-theyre-doing)"
	agentCgroupSource = "[AgentCgroup (eunomia-bpf, 2026)](https://arxiv.org/abs/2602.09345)"
	agentSightSource  = "[AgentSight (eunomia-bpf, 2025)](https://arxiv.org/abs/2508.02736)"
	agentSightMean    = 2.9 // % average overhead
)

// cell is one task and agent's rounds: medians of the runs whose
// recorded and bare halves both succeeded.
type cell struct {
	task, agent            string
	bare, agentS, recorded float64
	// spread is (slowest - fastest) / median of the bare runs.
	spread                    float64
	runs, failed, iterOK      int
	requests, iterations, exe []float64
}

// overhead is the agent's own run under polygraph against the bare run,
// and end to end (polygraph's start-up and report included).
func (c *cell) overhead() float64    { return c.agentS/c.bare - 1 }
func (c *cell) overheadE2E() float64 { return c.recorded/c.bare - 1 }

func median(v []float64) float64 { return stats.NewDist(v).Median }

// cellsOf groups the runs by task and agent, in the study's order.
func cellsOf(res *Results) []*cell {
	by := map[[2]string]*cell{}
	var out []*cell
	var bare, agentS, recorded = map[*cell][]float64{}, map[*cell][]float64{}, map[*cell][]float64{}
	for _, r := range res.Runs {
		k := [2]string{r.Task, r.Agent}
		c := by[k]
		if c == nil {
			c = &cell{task: r.Task, agent: r.Agent}
			by[k] = c
			out = append(out, c)
		}
		if !r.BareOK || !r.RecordedOK || r.Stats == nil {
			c.failed++
			continue
		}
		c.runs++
		bare[c] = append(bare[c], r.BareS)
		agentS[c] = append(agentS[c], r.AgentS)
		recorded[c] = append(recorded[c], r.RecordedS)
		c.requests = append(c.requests, float64(r.Requests))
		c.iterations = append(c.iterations, float64(r.Stats.Iterations))
		c.exe = append(c.exe, float64(r.Stats.Execs))
		if r.Stats.Iterations == r.Requests && !r.Stats.Estimated {
			c.iterOK++
		}
	}
	for _, c := range out {
		c.bare, c.agentS, c.recorded = median(bare[c]), median(agentS[c]), median(recorded[c])
		if b := bare[c]; len(b) > 0 && c.bare > 0 {
			c.spread = (slices.Max(b) - slices.Min(b)) / c.bare
		}
	}
	return out
}

// spread is a set of per-task overheads: their mean, least and most.
type spread struct{ mean, lo, hi float64 }

func spreadOf(v []float64) spread {
	if len(v) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	s := spread{lo: slices.Min(v), hi: slices.Max(v)}
	for _, x := range v {
		s.mean += x
	}
	s.mean /= float64(len(v))
	return s
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.1f %%", 100*x)
}

func (s spread) String() string {
	return fmt.Sprintf("%s (%s to %s)", pct(s.mean), pct(s.lo), pct(s.hi))
}

// Write writes the study's page to doc and its charts into the directory
// charts (linked from the page by its base name).
func Write(res *Results, doc, charts string) error {
	var sessions []*stats.Session
	for _, r := range res.Runs {
		if r.RecordedOK && r.Stats != nil {
			sessions = append(sessions, r.Stats)
		}
	}
	sums := stats.Summarise(sessions)
	cells := cellsOf(res)
	svgs := stats.Charts(sums)
	svgs["overhead.svg"] = overheadChart(res, cells)
	if err := os.MkdirAll(charts, 0o755); err != nil {
		return err
	}
	for name, svg := range svgs {
		if err := os.WriteFile(filepath.Join(charts, name), []byte(svg), 0o644); err != nil {
			return err
		}
	}
	var b strings.Builder
	page{&b, res, sums, cells, filepath.Base(charts)}.write()
	return os.WriteFile(doc, []byte(b.String()), 0o644)
}

// overheadChart draws each agent's mean overhead over the tasks.
func overheadChart(res *Results, cells []*cell) string {
	var own, e2e []float64
	for _, a := range res.Agents {
		o, e := agentOverheads(cells, a)
		own = append(own, 100*o.mean)
		e2e = append(e2e, 100*e.mean)
	}
	return stats.Bars{Title: "What recording costs: the agent's run under polygraph against bare (mean over tasks)", Unit: "overhead, %",
		Labels: res.Agents, Series: []stats.Series{{Name: "the agent's own run", Values: own}, {Name: "end to end, with start-up and report", Values: e2e}},
		Ref: agentSightMean, RefLabel: "AgentSight 2025: 2.9 % average", Format: func(x float64) string { return fmt.Sprintf("%.1f %%", x) }}.SVG()
}

// agentOverheads are agent's per-task overheads (all agents for "").
func agentOverheads(cells []*cell, agent string) (own, e2e spread) {
	var o, e []float64
	for _, c := range cells {
		if (agent == "" || c.agent == agent) && c.runs > 0 {
			o = append(o, c.overhead())
			e = append(e, c.overheadE2E())
		}
	}
	return spreadOf(o), spreadOf(e)
}

// page writes docs/study.md.
type page struct {
	b      *strings.Builder
	res    *Results
	sums   []*stats.Summary
	cells  []*cell
	charts string
}

func (p page) f(format string, args ...any) { fmt.Fprintf(p.b, format, args...) }

// sum is the summary of agent ("" for all).
func (p page) sum(agent string) *stats.Summary {
	for _, s := range p.sums {
		if s.Agent == agent {
			return s
		}
	}
	if agent == "" && len(p.sums) == 1 {
		return p.sums[0]
	}
	return nil
}

// row writes a table row: a measure, the published figure, then a cell
// per agent and one for all of them.
func (p page) row(name, published string, cell func(*stats.Summary) string) {
	cells := []string{name, published}
	for _, a := range append(slices.Clone(p.res.Agents), "") {
		if s := p.sum(a); s != nil {
			cells = append(cells, cell(s))
		} else {
			cells = append(cells, "-")
		}
	}
	p.f("| %s |\n", strings.Join(cells, " | "))
}

func (p page) head(first string) {
	cols := []string{first, "published"}
	for _, a := range p.res.Agents {
		cols = append(cols, a)
	}
	cols = append(cols, "all")
	p.f("| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
}

// med prints a distribution's median (p90).
func med(d stats.Dist, format func(float64) string) string {
	if d.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s)", format(d.Median), format(d.P90))
}

func num0(x float64) string { return fmt.Sprintf("%.0f", x) }
func num1(x float64) string { return fmt.Sprintf("%.1f", x) }
func num2(x float64) string { return fmt.Sprintf("%.2f", x) }
func share(x float64) string {
	return fmt.Sprintf("%.0f %%", 100*x)
}

func secs(x float64) string {
	if x < 1 {
		return fmt.Sprintf("%.0f ms", 1000*x)
	}
	return fmt.Sprintf("%.2f s", x)
}

func mb(kb float64) string { return fmt.Sprintf("%.0f MB", kb/1024) }

func kbytes(x float64) string {
	if x >= 1e6 {
		return fmt.Sprintf("%.1f MB", x/1e6)
	}
	return fmt.Sprintf("%.0f kB", x/1e3)
}

package stats

// Charts draws the summaries (Summarise's, one per agent and maybe one of
// them all, which is left out) as SVG documents by file name: what
// `polygraph stats --svg DIR` writes and the study embeds.
func Charts(sums []*Summary) map[string]string {
	var labels []string
	var agents []*Summary
	for _, s := range sums {
		if s.Agent != "" {
			labels = append(labels, s.Agent)
			agents = append(agents, s)
		}
	}
	medians := func(f func(*Summary) Dist) []float64 {
		out := make([]float64, len(agents))
		for i, s := range agents {
			out[i] = f(s).Median
		}
		return out
	}
	dists := func(f func(*Summary) Dist) []Dist {
		out := make([]Dist, len(agents))
		for i, s := range agents {
			out[i] = f(s)
		}
		return out
	}
	shares := func(f func(*Summary) (float64, float64)) []float64 {
		out := make([]float64, len(agents))
		for i, s := range agents {
			if part, whole := f(s); whole > 0 {
				out[i] = part / whole
			}
		}
		return out
	}
	timeWhole := func(s *Summary) float64 { return s.TimeTotal.Tools + s.TimeTotal.Model + s.TimeTotal.Other }
	cpuWhole := func(s *Summary) float64 { return s.CPUTotal[WhoAgent] + s.CPUTotal[WhoTools] + s.CPUTotal[WhoOther] }

	charts := map[string]string{}
	charts["iterations.svg"] = Bars{Title: "Agent loop iterations per 10 s (median session)", Unit: "iterations per 10 s", Labels: labels,
		Series: []Series{{Name: "model responses per 10 s of the agent's run", Values: medians(func(s *Summary) Dist { return s.PerTen })}},
		Ref:    5, RefLabel: "Sysdig 2026: 5 in 10 s", Format: one}.SVG()
	charts["execs.svg"] = Bars{Title: "execve per session (median)", Unit: "execve", Labels: labels,
		Series: []Series{{Name: "execve per session", Values: medians(func(s *Summary) Dist { return s.Execs })}},
		Ref:    64, RefLabel: "Sysdig 2026: 64 per session", Format: count}.SVG()
	var conns []Series
	for _, c := range Classes[:3] {
		conns = append(conns, Series{Name: c, Values: shares(func(s *Summary) (float64, float64) {
			return float64(s.ConnectsTotal[c]), float64(s.IterationsTotal)
		})})
	}
	charts["connects.svg"] = Bars{Title: "Outbound connections per iteration, by destination (all sessions)", Unit: "connections per iteration",
		Labels: labels, Series: conns, Format: two}.SVG()
	charts["shells.svg"] = Ranges{Title: "Shell lifetimes, from exec to exit (every shell)", Unit: "seconds", Labels: labels,
		Dists: dists(func(s *Summary) Dist { return s.ShellLife }), Log: true, Format: secs}.SVG()
	charts["calls.svg"] = Ranges{Title: "Tool call wall time (every call)", Unit: "seconds", Labels: labels,
		Dists: dists(func(s *Summary) Dist { return s.CallWall }), Log: true, Format: secs}.SVG()
	charts["time.svg"] = Bars{Title: "Where the wall time goes (all sessions)", Unit: "share of wall time", Labels: labels, Stacked: true,
		Series: []Series{
			{Name: "in tool calls", Values: shares(func(s *Summary) (float64, float64) { return s.TimeTotal.Tools, timeWhole(s) })},
			{Name: "waiting on the model", Values: shares(func(s *Summary) (float64, float64) { return s.TimeTotal.Model, timeWhole(s) })},
			{Name: "the agent's own (start-up, bookkeeping)", Values: shares(func(s *Summary) (float64, float64) { return s.TimeTotal.Other, timeWhole(s) })},
		}, Format: percent}.SVG()
	var cpu []Series
	for _, w := range Whos {
		cpu = append(cpu, Series{Name: w, Values: shares(func(s *Summary) (float64, float64) { return s.CPUTotal[w], cpuWhole(s) })})
	}
	charts["cpu.svg"] = Bars{Title: "CPU time: the agent's own processes against its tools' (all sessions)", Unit: "share of CPU time",
		Labels: labels, Stacked: true, Series: cpu, Format: percent}.SVG()
	return charts
}

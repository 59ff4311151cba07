//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Results is everything one bench run found; latest.json is this.
type Results struct {
	Started    time.Time      `json:"started"`
	Finished   time.Time      `json:"finished"`
	Machine    Machine        `json:"machine"`
	Config     map[string]any `json:"config"`
	LoadBefore string         `json:"load_before"` // /proc/loadavg: 1, 5, 15 min
	LoadAfter  string         `json:"load_after"`
	Skipped    []string       `json:"skipped,omitempty"` // tracers that could not run, and why
	Rows       []Row          `json:"rows"`
	Report     *ReportResult  `json:"report,omitempty"`
	Rate       *RateResult    `json:"rate,omitempty"`
	Profile    *ProfileResult `json:"profile,omitempty"`
	Targets    []Target       `json:"targets"`
	Failures   int            `json:"failures"`
	Samples    []Sample       `json:"samples"`
}

// Machine says where the numbers come from.
type Machine struct {
	Kernel    string `json:"kernel"`
	OS        string `json:"os"`
	CPU       string `json:"cpu"`
	CPUs      int    `json:"cpus"`
	MemMB     int64  `json:"mem_mb"`
	GoVersion string `json:"go"`
}

// Row is the medians of one workload under one tracer over the counted runs.
type Row struct {
	Workload  string  `json:"workload"`
	Tracer    string  `json:"tracer"`
	Runs      int     `json:"runs"`
	WallS     float64 `json:"wall_s"`
	WallRatio float64 `json:"wall_ratio"` // to bare's median
	WallMinS  float64 `json:"wall_min_s"`
	WallMaxS  float64 `json:"wall_max_s"`
	CPUS      float64 `json:"cpu_s"`
	CPURatio  float64 `json:"cpu_ratio"`
	// TracerCPUS is the tracer processes' share of CPUS.
	TracerCPUS     float64 `json:"tracer_cpu_s"`
	TracerLifeCPUS float64 `json:"tracer_life_cpu_s,omitempty"`
	Events         int64   `json:"events"`     // median, compared classes
	EventsAll      int64   `json:"events_all"` // median, everything stored
	Lost           int64   `json:"lost"`       // the most any counted run lost
	LostRuns       int     `json:"lost_runs"`  // counted runs that lost any
	TracerRSSKB    int64   `json:"tracer_rss_kb,omitempty"`
	TracerLifeKB   int64   `json:"tracer_life_rss_kb,omitempty"`
	StartupS       float64 `json:"startup_s,omitempty"`
	ShutdownS      float64 `json:"shutdown_s,omitempty"`
	Failed         int     `json:"failed,omitempty"`
}

// aggregate turns the counted samples into one row per workload and
// tracer, in the order they ran.
func aggregate(samples []Sample, active []*tracer) []Row {
	var rows []Row
	for _, wl := range workloads {
		var bare *Row
		for _, t := range active {
			var ok []Sample
			failed := 0
			for _, s := range samples {
				if s.Workload != wl.Name || s.Tracer != t.Name || s.Warmup {
					continue
				}
				if s.Error != "" {
					failed++
					continue
				}
				ok = append(ok, s)
			}
			if len(ok) == 0 && failed == 0 {
				continue
			}
			r := Row{Workload: wl.Name, Tracer: t.Name, Runs: len(ok), Failed: failed}
			if len(ok) > 0 {
				f := func(g func(Sample) float64) float64 {
					v := make([]float64, len(ok))
					for i, s := range ok {
						v[i] = g(s)
					}
					return median(v)
				}
				n := func(g func(Sample) int64) int64 { return int64(f(func(s Sample) float64 { return float64(g(s)) })) }
				r.WallS = f(func(s Sample) float64 { return s.WallS })
				r.WallMinS = slices.MinFunc(ok, func(a, b Sample) int { return cmpF(a.WallS, b.WallS) }).WallS
				r.WallMaxS = slices.MaxFunc(ok, func(a, b Sample) int { return cmpF(a.WallS, b.WallS) }).WallS
				r.CPUS = f(func(s Sample) float64 { return s.CPUS })
				r.TracerCPUS = f(func(s Sample) float64 { return s.TracerCPUS })
				r.TracerLifeCPUS = f(func(s Sample) float64 { return s.TracerLifeCPUS })
				r.Events = n(func(s Sample) int64 { return s.Events })
				r.EventsAll = n(func(s Sample) int64 { return s.EventsAll })
				r.StartupS = f(func(s Sample) float64 { return s.StartupS })
				r.ShutdownS = f(func(s Sample) float64 { return s.ShutdownS })
				for _, s := range ok {
					r.Lost = max(r.Lost, s.Lost)
					if s.Lost > 0 {
						r.LostRuns++
					}
					r.TracerRSSKB = max(r.TracerRSSKB, s.TracerRSSKB)
					r.TracerLifeKB = max(r.TracerLifeKB, s.TracerLifeRSSKB)
				}
			}
			if t.Name == "bare" {
				bare = &r
			}
			if bare != nil && bare.WallS > 0 && r.Runs > 0 {
				r.WallRatio = r.WallS / bare.WallS
				r.CPURatio = r.CPUS / bare.CPUS
			}
			rows = append(rows, r)
		}
	}
	return rows
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (r *Results) row(workload, tracer string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Workload == workload && r.Rows[i].Tracer == tracer {
			return &r.Rows[i]
		}
	}
	return nil
}

// Target is one of the targets and whether this run met it.
type Target struct {
	What   string `json:"what"`
	Goal   string `json:"goal"`
	Got    string `json:"got"`
	Met    *bool  `json:"met"` // nil: not measured in this run
	Margin string `json:"margin,omitempty"`
	// Noise is the spread of the bare runs, (max − min) / median: an
	// overhead smaller than it is below what this run can resolve.
	Noise string `json:"noise,omitempty"`
}

func pct(r float64) string { return fmt.Sprintf("%+.1f%%", (r-1)*100) }

func checkTargets(res *Results) []Target {
	var ts []Target
	add := func(what, goal, got string, met *bool, margin string) {
		ts = append(ts, Target{What: what, Goal: goal, Got: got, Met: met, Margin: margin})
	}
	yes := func(b bool) *bool { return &b }
	for _, wl := range workloads {
		pg := res.row(wl.Name, "polygraph")
		if pg == nil || pg.Runs == 0 || pg.WallRatio == 0 {
			continue
		}
		over := pg.WallRatio - 1
		noise := ""
		if b := res.row(wl.Name, "bare"); b != nil && b.Runs > 1 && b.WallS > 0 {
			noise = fmt.Sprintf("bare runs spread %.1f%%", (b.WallMaxS-b.WallMinS)/b.WallS*100)
		}
		if f := res.row(wl.Name, "floor"); f != nil && f.Runs > 0 && f.WallRatio > 0 {
			if noise != "" {
				noise += "; "
			}
			noise += "empty programs on the same hooks " + pct(f.WallRatio)
		}
		if wl.MaxOverhead > 0 {
			margin := ""
			if over > wl.MaxOverhead {
				margin = fmt.Sprintf("missed by %.1f points", (over-wl.MaxOverhead)*100)
			}
			add(wl.Title+": wall overhead vs bare", fmt.Sprintf("≤ %.0f%%", wl.MaxOverhead*100), pct(pg.WallRatio), yes(over <= wl.MaxOverhead), margin)
			ts[len(ts)-1].Noise = noise
			if a := res.row(wl.Name, "auditd"); a != nil && a.Runs > 0 {
				margin := ""
				if over >= a.WallRatio-1 {
					margin = fmt.Sprintf("auditd %s", pct(a.WallRatio))
				}
				met := yes(over < a.WallRatio-1)
				if a.WallRatio <= 1 {
					met, margin = nil, "auditd's overhead did not rise above the noise: not decided"
				}
				add(wl.Title+": overhead below auditd's", "< "+pct(a.WallRatio), pct(pg.WallRatio), met, margin)
			}
			if s := res.row(wl.Name, "strace"); s != nil && s.Runs > 0 {
				so := s.WallRatio - 1
				margin := ""
				if over > so/10 {
					margin = fmt.Sprintf("strace %s; polygraph's is %.1f× lower", pct(s.WallRatio), so/math.Max(over, 1e-9))
				}
				met := yes(over <= so/10)
				if so <= 0 {
					met, margin = nil, "strace's overhead did not rise above the noise: not decided"
				}
				add(wl.Title+": overhead ≥ 10× below strace's", "≤ "+fmt.Sprintf("%+.1f%%", so*10), pct(pg.WallRatio), met, margin)
			}
		}
	}
	var lostRuns int
	var measured bool
	for _, r := range res.Rows {
		if r.Tracer == "polygraph" && r.Runs > 0 {
			measured = true
			lostRuns += r.LostRuns
		}
	}
	if measured {
		add("lost events, workloads 1–4", "0", fmt.Sprintf("%d runs lost events", lostRuns), yes(lostRuns == 0), "")
		var rss int64
		for _, r := range res.Rows {
			if r.Tracer == "polygraph" {
				rss = max(rss, r.TracerRSSKB)
			}
		}
		margin := ""
		if rss > 100*1024 {
			margin = fmt.Sprintf("missed by %.0f MB", float64(rss-100*1024)/1024)
		}
		add("polygraph peak RSS while tracing", "≤ 100 MB", fmt.Sprintf("%.0f MB", float64(rss)/1024), yes(rss <= 100*1024), margin)
	}
	if rr := res.Report; rr != nil && rr.Runs > 0 {
		margin := ""
		if rr.WallS > 2 {
			margin = fmt.Sprintf("missed by %.1f s (%.1f×)", rr.WallS-2, rr.WallS/2)
			if rr.TimedOut {
				margin = fmt.Sprintf("missed by more than %.0f×", rr.WallS/2)
			}
		}
		got := fmt.Sprintf("%.2f s", rr.WallS)
		if rr.TimedOut {
			got = fmt.Sprintf("> %.0f s (stopped unfinished)", rr.WallS)
		}
		add(fmt.Sprintf("report on %d events: time", rr.Events), "≤ 2 s", got, yes(rr.WallS <= 2), margin)
		margin = ""
		if rr.MaxRSSKB > 500*1024 {
			margin = fmt.Sprintf("missed by %.0f MB", float64(rr.MaxRSSKB-500*1024)/1024)
		}
		got = fmt.Sprintf("%.0f MB", float64(rr.MaxRSSKB)/1024)
		if rr.TimedOut {
			got = "≥ " + got + " (when stopped)"
		}
		add(fmt.Sprintf("report on %d events: peak memory", rr.Events), "≤ 500 MB", got, yes(rr.MaxRSSKB <= 500*1024), margin)
	}
	if rt := res.Rate; rt != nil {
		add("sensor's highest sustained rate without loss", "measured", rt.verdict(), nil, "")
	}
	return ts
}

// write prints the table and writes the files.
func (res *Results) write(c config, w io.Writer) error {
	var table strings.Builder
	res.text(&table)
	fmt.Fprint(w, "\n"+table.String())
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"latest.json": b,
		"table.txt":   []byte(table.String()),
		"chart.svg":   []byte(res.svg()),
		"bench.md":    []byte(res.markdown()),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.out, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nbench: wrote %s/{latest.json,table.txt,chart.svg,bench.md}\n", c.out)
	if c.docs {
		docs := filepath.Join(filepath.Dir(filepath.Clean(c.out)), "..", "docs")
		if root := res.Config["module_root"]; root != nil {
			docs = filepath.Join(root.(string), "docs")
		}
		if err := os.WriteFile(filepath.Join(docs, "bench.svg"), files["chart.svg"], 0o644); err != nil {
			return err
		}
		if err := updateDoc(filepath.Join(docs, "bench.md"), res.markdown()); err != nil {
			return err
		}
		fmt.Fprintf(w, "bench: updated %s/bench.md and bench.svg\n", docs)
	}
	return nil
}

// rerender writes the outputs again from a saved latest.json, for when
// only their presentation changed.
func rerender(path string, c config, w io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	res.Targets = checkTargets(&res)
	return res.write(c, w)
}

func configOf(c config, e *env) map[string]any {
	return map[string]any{
		"runs": c.runs, "warmup": c.warmup, "baseline_runs": c.baseRuns, "quick": c.quick, "polygraph_flags": e.pgFlags,
		"module_root": e.root, "sizes": map[string]any{
			"execs": e.sizes.execs, "opens": e.sizes.opens, "files": e.sizes.files,
			"shells": e.sizes.shells, "report_events": e.sizes.reportEvs,
		},
	}
}

func mb(kb int64) string {
	if kb == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(kb)/1024)
}

func secs(s float64) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", s)
}

func ratio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", r)
}

func title(name string) string {
	if w := findWorkload(name); w != nil {
		return w.Title
	}
	return name
}

// text is the table the bench prints.
func (res *Results) text(b *strings.Builder) {
	fmt.Fprintf(b, "polygraph bench  %s  (%s, %d CPUs, load %s → %s)\n", res.Started.Format("2006-01-02 15:04 UTC"),
		res.Machine.Kernel, res.Machine.CPUs, res.LoadBefore, res.LoadAfter)
	for _, s := range res.Skipped {
		fmt.Fprintln(b, "skipped "+s)
	}
	tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\ttracer\truns\twall s\t×bare\tCPU s\t×bare\ttracer CPU s\tevents\tlost\ttracer RSS MB\tstart s\tstop s\t")
	last := ""
	for _, r := range res.Rows {
		name := ""
		if r.Workload != last {
			name, last = title(r.Workload), r.Workload
		}
		runs := fmt.Sprint(r.Runs)
		if r.Failed > 0 {
			runs += fmt.Sprintf(" (%d failed)", r.Failed)
		}
		ev, lost := fmt.Sprint(r.Events), fmt.Sprint(r.Lost)
		if r.Tracer == "bare" {
			ev, lost = "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, r.Tracer, runs, r.WallS, ratio(r.WallRatio),
			r.CPUS, ratio(r.CPURatio), secs(r.TracerCPUS), ev, lost, mb(r.TracerRSSKB), secs(r.StartupS), secs(r.ShutdownS))
	}
	tw.Flush()
	if rr := res.Report; rr != nil && rr.Runs > 0 {
		fmt.Fprintln(b, "\n"+rr.summary())
		for _, p := range rr.Scale {
			fmt.Fprintf(b, "  same shape, %d events: %s s wall, %.2f s CPU, peak RSS %s MB\n", p.Events, p.wall(), p.CPUS, mb(p.MaxRSSKB))
		}
	}
	if rt := res.Rate; rt != nil {
		fmt.Fprintf(b, "\nsensor event rate (file opens, %d workers):\n", rt.Workers)
		tw := tabwriter.NewWriter(b, 0, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "target/s\tachieved/s\tevents\tlost\tlost by stage\tpolygraph CPU s\t")
		for _, st := range rt.Steps {
			target := "max"
			if st.Target > 0 {
				target = fmt.Sprintf("%.0f", st.Target)
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%d\t%d\t%s\t%.2f\t\n", target, st.Achieved, st.Events, st.Lost, stages(st.LostByStage), st.TracerCPUS)
		}
		tw.Flush()
		fmt.Fprintf(b, "highest sustained rate with zero loss: %s\n", rt.verdict())
	}
	if p := res.Profile; p != nil {
		p.text(b)
	}
	fmt.Fprintln(b, "\ntargets:")
	for _, t := range res.Targets {
		mark := "info"
		if t.Met != nil {
			mark = map[bool]string{true: "MET ", false: "MISS"}[*t.Met]
		}
		line := fmt.Sprintf("  [%s] %s: %s (target %s)", mark, t.What, t.Got, t.Goal)
		if t.Margin != "" {
			line += " — " + t.Margin
		}
		if t.Noise != "" {
			line += " [" + t.Noise + "]"
		}
		fmt.Fprintln(b, line)
	}
}

func stages(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

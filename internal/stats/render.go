package stats

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Report is what `polygraph stats` prints: every session's numbers and
// their summaries, per agent and (with several agents) of all.
type Report struct {
	Sessions  []*Session `json:"sessions"`
	Summaries []*Summary `json:"summaries"`
}

// NewReport measures nothing itself: it holds sessions and summarises
// them.
func NewReport(sessions []*Session) *Report {
	if sessions == nil {
		sessions = []*Session{}
	}
	return &Report{Sessions: sessions, Summaries: Summarise(sessions)}
}

// WriteText writes the report for a person: one session in full, several
// as a table of distributions per agent.
func (r *Report) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(r.Sessions) == 1 {
		writeSession(tw, r.Sessions[0])
	} else {
		writeSummaries(tw, r.Summaries)
	}
	return tw.Flush()
}

func writeSession(w io.Writer, s *Session) {
	agent := s.Agent
	if s.Version != "" {
		agent += " " + s.Version
	}
	fmt.Fprintf(w, "session %s (%s), %s\n\n", s.ID, agent, secs(s.Wall))
	iter := fmt.Sprintf("%d model responses, %.1f per 10 s", s.Iterations, s.PerTen)
	switch {
	case s.NoTranscript:
		iter = "unknown: no transcript was found"
	case s.Estimated:
		iter += " (estimated from the tool calls: the transcript records no responses)"
	}
	fmt.Fprintf(w, "loop\t%s\n", iter)
	perIter := ""
	if s.Iterations > 0 {
		perIter = fmt.Sprintf(", %.1f per iteration", s.ExecsPerIteration)
	}
	fmt.Fprintf(w, "execve\t%d (%s)%s\n", s.Execs, byWho(s.ExecsBy), perIter)
	lives := values(s.Shells, func(sh Shell) (float64, bool) { return sh.Life, sh.Life >= 0 })
	shellsBy := map[string]int{}
	for _, sh := range s.Shells {
		shellsBy[sh.Who]++
	}
	fmt.Fprintf(w, "shells\t%d (%s), life %s\n", len(s.Shells), byWho(shellsBy), distSecs(NewDist(lives)))
	var conns []string
	for _, c := range Classes {
		if n := s.Connects[c]; n > 0 {
			if s.Iterations > 0 {
				conns = append(conns, fmt.Sprintf("%s %d (%.2f per iteration)", c, n, s.ConnectsPerIteration[c]))
			} else {
				conns = append(conns, fmt.Sprintf("%s %d", c, n))
			}
		}
	}
	if len(conns) == 0 {
		conns = []string{"none"}
	}
	fmt.Fprintf(w, "connects\t%s\n", strings.Join(conns, ", "))
	total := s.Time.Tools + s.Time.Model + s.Time.Other
	pct := func(x float64) string {
		if total <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f %%", 100*x/total)
	}
	fmt.Fprintf(w, "time\tin tools %s (%s), waiting on the model %s (%s), other %s (%s)\n",
		secs(s.Time.Tools), pct(s.Time.Tools), secs(s.Time.Model), pct(s.Time.Model), secs(s.Time.Other), pct(s.Time.Other))
	for _, who := range Whos {
		if u := s.Use[who]; u != nil && u.Processes > 0 {
			fmt.Fprintf(w, "%s\t%s\n", who, usage(u))
		}
	}
	if len(s.Flows) > 0 {
		fmt.Fprintf(w, "\nDESTINATION\tCLASS\tCONNECTS\tSENT\tRECEIVED\n")
		for _, f := range s.Flows {
			fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%s\n", f.Dest, f.Class, f.Connects, bytesText(float64(f.Sent)), bytesText(float64(f.Recv)))
		}
	}
	if len(s.Calls) > 0 {
		fmt.Fprintf(w, "\nTOOL CALL\tTOOL\tKIND\tPROCS\tWALL\tCPU\tPEAK RSS\tI/O\n")
		for _, c := range s.Calls {
			wall := "-"
			if c.Wall >= 0 {
				wall = secs(c.Wall)
			}
			cpu, rss, io := "-", "-", "-"
			if u := c.Use; u != nil {
				cpu, rss, io = secs(u.CPU), bytesText(float64(u.PeakRSSKB)*1024), bytesText(float64(u.ReadBytes+u.WriteBytes))
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", c.ID, c.Tool, c.Kind, c.Procs, wall, cpu, rss, io)
		}
	}
}

func usage(u *Usage) string {
	procs := "processes"
	if u.Processes == 1 {
		procs = "process"
	}
	return fmt.Sprintf("%d %s, CPU %s, peak RSS %s, I/O %s", u.Processes, procs, secs(u.CPU),
		bytesText(float64(u.PeakRSSKB)*1024), bytesText(float64(u.ReadBytes+u.WriteBytes)))
}

func byWho(m map[string]int) string {
	var parts []string
	for _, w := range Whos {
		if m[w] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", w, m[w]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// writeSummaries writes a table: a row per measure, a column per agent,
// each cell median (p90, max).
func writeSummaries(w io.Writer, sums []*Summary) {
	fmt.Fprintf(w, "median (p90, max) per session unless said otherwise\n\n")
	head := []string{"MEASURE"}
	for _, s := range sums {
		name := s.Agent
		if name == "" {
			name = "all"
		}
		head = append(head, fmt.Sprintf("%s (%d)", strings.ToUpper(name), s.Sessions))
	}
	fmt.Fprintln(w, strings.Join(head, "\t"))
	for _, row := range Rows() {
		cells := []string{row.Name}
		for _, s := range sums {
			cells = append(cells, row.Cell(s))
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
}

// Row is one measure of a Summary, for tables.
type Row struct {
	Name string
	Dist func(*Summary) Dist
	// Format prints one value.
	Format func(float64) string
}

// Cell is the row's value in s: median (p90, max), or "-" for none.
func (r Row) Cell(s *Summary) string {
	d := r.Dist(s)
	if d.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s, %s)", r.Format(d.Median), r.Format(d.P90), r.Format(d.Max))
}

// Rows are the measures of a Summary, in the order shown.
func Rows() []Row {
	rows := []Row{
		{"wall time", func(s *Summary) Dist { return s.Wall }, secs},
		{"model responses (iterations)", func(s *Summary) Dist { return s.Iterations }, count},
		{"iterations per 10 s", func(s *Summary) Dist { return s.PerTen }, one},
		{"execve", func(s *Summary) Dist { return s.Execs }, count},
		{"execve per iteration", func(s *Summary) Dist { return s.ExecsPerIteration }, one},
		{"shells", func(s *Summary) Dist { return s.Shells }, count},
		{"shell life (every shell)", func(s *Summary) Dist { return s.ShellLife }, secs},
		{"processes per tool call (every call)", func(s *Summary) Dist { return s.ProcsPerCall }, one},
	}
	for _, c := range Classes {
		rows = append(rows, Row{"connects per iteration: " + c, func(s *Summary) Dist { return s.ConnectsPerIteration[c] }, two})
	}
	for _, c := range Classes {
		rows = append(rows, Row{"bytes: " + c, func(s *Summary) Dist { return s.Bytes[c] }, bytesText})
	}
	rows = append(rows,
		Row{"tool call wall time (every call)", func(s *Summary) Dist { return s.CallWall }, secs},
		Row{"tool call CPU (calls with processes)", func(s *Summary) Dist { return s.CallCPU }, secs},
		Row{"tool call peak RSS (calls with processes)", func(s *Summary) Dist { return s.CallRSSKB }, kib},
		Row{"tool call I/O (calls with processes)", func(s *Summary) Dist { return s.CallIO }, bytesText},
		Row{"share of wall time in tools", func(s *Summary) Dist { return s.ShareTools }, percent},
		Row{"share waiting on the model", func(s *Summary) Dist { return s.ShareModel }, percent},
		Row{"share elsewhere", func(s *Summary) Dist { return s.ShareOther }, percent},
	)
	for _, w := range Whos {
		rows = append(rows,
			Row{"CPU: " + w, func(s *Summary) Dist { return s.CPU[w] }, secs},
			Row{"peak RSS: " + w, func(s *Summary) Dist { return s.PeakRSSKB[w] }, kib},
			Row{"I/O: " + w, func(s *Summary) Dist { return s.IO[w] }, bytesText})
	}
	return append(rows, Row{"tools' share of CPU (agent + tools)", func(s *Summary) Dist { return s.ToolsCPUShare }, percent})
}

func count(x float64) string { return fmt.Sprintf("%.0f", x) }
func one(x float64) string   { return fmt.Sprintf("%.1f", x) }
func two(x float64) string   { return fmt.Sprintf("%.2f", x) }

func percent(x float64) string { return fmt.Sprintf("%.0f %%", 100*x) }

// secs prints seconds, in ms below one.
func secs(x float64) string {
	if x < 1 {
		return fmt.Sprintf("%.0f ms", x*1000)
	}
	return fmt.Sprintf("%.2f s", x)
}

func distSecs(d Dist) string {
	if d.N == 0 {
		return "-"
	}
	return fmt.Sprintf("median %s, p90 %s, max %s", secs(d.Median), secs(d.P90), secs(d.Max))
}

func kib(x float64) string { return bytesText(x * 1024) }

// bytesText prints a size in B, kB, MB or GB (powers of 1000).
func bytesText(x float64) string {
	switch {
	case x >= 1e9:
		return fmt.Sprintf("%.1f GB", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.1f MB", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1f kB", x/1e3)
	}
	return fmt.Sprintf("%.0f B", x)
}

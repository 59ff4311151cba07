package stats

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"html"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/transcript"
	"github.com/polygraph/polygraph/test/recorded"
)

// scenarioTurns is how many model turns test/e2e's attribution scenario,
// which the recorded sessions played, scripts: the scripted model's own
// count of the loop's iterations.
const scenarioTurns = 11

// rawResponses counts the model responses in a recorded transcript's raw
// lines, without the transcript package: Claude Code's assistant lines
// by message id, Codex's token_usage_record lines, Gemini CLI's model
// messages by id.
func rawResponses(agent string, raw []byte) int {
	ids := map[string]bool{}
	n := 0
	for _, line := range bytes.Split(raw, []byte("\n")) {
		switch agent {
		case "claude":
			if m := regexp.MustCompile(`"id":"(msg_[^"]+)","model"`).FindSubmatch(line); m != nil && bytes.Contains(line, []byte(`"role":"assistant"`)) {
				ids[string(m[1])] = true
			}
		case "codex":
			if bytes.Contains(line, []byte(`"type":"token_usage_record"`)) {
				n++
			}
		case "gemini":
			if m := regexp.MustCompile(`^\{"id":"([^"]+)","timestamp":"[^"]+","type":"gemini"`).FindSubmatch(line); m != nil {
				ids[string(m[1])] = true
			}
		}
	}
	return n + len(ids)
}

// TestRecordedSessions measures the sessions recorded around the real
// agent CLIs and checks every count against one made here from the raw
// events and transcript lines, another way.
func TestRecordedSessions(t *testing.T) {
	for _, agent := range recorded.Agents {
		t.Run(agent, func(t *testing.T) {
			rec, err := recorded.Load(agent)
			if err != nil {
				t.Fatal(err)
			}
			a, err := rec.Analyze(t.Context(), t.TempDir(), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			s := Compute(a, nil)

			if got := rawResponses(agent, rec.Transcript); s.Iterations != got || got != scenarioTurns || s.Estimated {
				t.Errorf("iterations %d (estimated %v), raw transcript %d, scenario %d", s.Iterations, s.Estimated, got, scenarioTurns)
			}
			var execs, shells, exits, connects int
			var cpu, callCPU, bytesIP float64
			var wall float64
			for _, e := range rec.Events {
				switch e.Kind {
				case event.KindExec:
					execs++
					switch filepath.Base(e.Path) {
					case "bash", "dash", "sh":
						shells++
					}
				case event.KindExit:
					exits++
					cpu += float64(e.Process.CPUNS) / 1e9
					if at := a.Attribution.Of(e.Seq); at != nil && at.ToolCallID != "" && !contains(a.Attribution.AgentExecIDs, e.ExecID) {
						callCPU += float64(e.Process.CPUNS) / 1e9
					}
					if e.PID == uint32(rec.Meta.RootPID) && e.ExecID != "" {
						wall = float64(e.Process.DurationNS) / 1e9
					}
				case event.KindConnect:
					ip := e.Network.Family == "ipv4" || e.Network.Family == "ipv6"
					if ip && (e.Result == nil || *e.Result >= 0 || *e.Result == -115) {
						connects++
					}
				case event.KindNet:
					if e.Network.Family == "ipv4" || e.Network.Family == "ipv6" {
						bytesIP += float64(e.Network.BytesSent + e.Network.BytesRecv)
					}
				}
			}
			if s.Execs != execs {
				t.Errorf("execs %d, raw %d", s.Execs, execs)
			}
			if len(s.Shells) != shells {
				t.Errorf("shells %d, raw %d", len(s.Shells), shells)
			}
			var procs, usedProcs int
			var usedCPU float64
			for _, w := range Whos {
				usedProcs += s.Use[w].Processes
				usedCPU += s.Use[w].CPU
			}
			if usedProcs != exits || !near(usedCPU, cpu) {
				t.Errorf("use: %d processes, CPU %.6f s; raw %d exits, CPU %.6f s", usedProcs, usedCPU, exits, cpu)
			}
			if !near(s.Wall, wall) || wall == 0 {
				t.Errorf("wall %.3f s, root's exit %.3f s", s.Wall, wall)
			}
			var sumConnects int
			var sumBytes float64
			for _, f := range s.Flows {
				sumConnects += f.Connects
				sumBytes += float64(f.Sent + f.Recv)
			}
			if sumConnects != connects || sumBytes != bytesIP {
				t.Errorf("flows: %d connects, %.0f bytes; raw %d, %.0f", sumConnects, sumBytes, connects, bytesIP)
			}
			if s.Connects["model"] == 0 {
				t.Errorf("no connection to the model endpoint: %+v", s.Connects)
			}
			// Processes per call, as the baseline counts them: the execs
			// attributed to a call, the agent's own left out.
			for _, e := range rec.Events {
				if e.Kind != event.KindExec || contains(a.Attribution.AgentExecIDs, e.ExecID) {
					continue
				}
				if at := a.Attribution.Of(e.Seq); at != nil && at.ToolCallID != "" {
					procs++
				}
			}
			var sumProcs int
			var sumCallCPU float64
			for _, c := range s.Calls {
				sumProcs += c.Procs
				if c.Use != nil {
					sumCallCPU += c.Use.CPU
				}
			}
			if sumProcs != procs || !near(sumCallCPU, callCPU) {
				t.Errorf("calls: %d procs, CPU %.6f s; raw %d, %.6f s", sumProcs, sumCallCPU, procs, callCPU)
			}
			if len(s.Calls) != len(a.Transcript.ToolCalls) {
				t.Errorf("%d calls, transcript %d", len(s.Calls), len(a.Transcript.ToolCalls))
			}
			if tt := s.Time.Tools + s.Time.Model + s.Time.Other; !near(tt, s.Wall) || s.Time.Tools <= 0 || s.Time.Model <= 0 {
				t.Errorf("time %+v does not split wall %.3f s", s.Time, s.Wall)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*max(1, math.Abs(b)) }

func TestDist(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want Dist
	}{
		{nil, Dist{}},
		{[]float64{3}, Dist{1, 3, 3, 3}},
		{[]float64{4, 1, 3, 2}, Dist{4, 2.5, 4, 4}},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Dist{10, 5.5, 9, 10}},
	} {
		if got := NewDist(tc.in); got != tc.want {
			t.Errorf("NewDist(%v) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestTimeSplit splits a scripted run: start-up, a response, a call, a
// response, two overlapping calls, the final answer, shutdown.
func TestTimeSplit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := &transcript.Transcript{
		StartedAt: at(1000), // the prompt went to the model
		Responses: []time.Time{at(1500), at(2600), at(4000)},
		ToolCalls: []*transcript.ToolCall{
			{StartedAt: at(1500), EndedAt: at(2500)},
			{StartedAt: at(2600), EndedAt: at(3500)},
			{StartedAt: at(2700), EndedAt: at(3800)},
		},
	}
	got := timeSplit(tr, t0, at(5000))
	// tools: 1.5-2.5 and 2.6-3.8; model: 1.0-1.5, 2.5-2.6, 3.8-4.0.
	want := TimeSplit{Tools: 2.2, Model: 0.8, Other: 2.0}
	if !near(got.Tools, want.Tools) || !near(got.Model, want.Model) || !near(got.Other, want.Other) {
		t.Errorf("timeSplit = %+v, want %+v", got, want)
	}
}

func TestIterationsEstimated(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := &transcript.Transcript{ToolCalls: []*transcript.ToolCall{
		{StartedAt: at(0), EndedAt: at(100)},
		{StartedAt: at(200), EndedAt: at(400)}, // a new response
		{StartedAt: at(210), EndedAt: at(300)}, // the same one, in parallel
		{StartedAt: at(500), EndedAt: at(600)},
	}}
	if n, est := iterations(tr); n != 4 || !est {
		t.Errorf("iterations = %d, %v; want 4 (3 with calls and the answer), estimated", n, est)
	}
}

// TestChartsAndJSON checks that the charts are well-formed XML and the
// report encodes.
func TestChartsAndJSON(t *testing.T) {
	var ss []*Session
	for _, agent := range recorded.Agents {
		rec, err := recorded.Load(agent)
		if err != nil {
			t.Fatal(err)
		}
		a, err := rec.Analyze(t.Context(), t.TempDir(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, Compute(a, nil))
	}
	r := NewReport(ss)
	if len(r.Summaries) != 4 || r.Summaries[3].Agent != "" {
		t.Fatalf("%d summaries", len(r.Summaries))
	}
	charts := Charts(r.Summaries)
	if len(charts) < 6 {
		t.Errorf("%d charts", len(charts))
	}
	for name, svg := range charts {
		d := xml.NewDecoder(strings.NewReader(svg))
		for {
			_, err := d.Token()
			if err != nil {
				if err.Error() != "EOF" {
					t.Errorf("%s: %v", name, err)
				}
				break
			}
		}
		if len(svg) > 16<<10 {
			t.Errorf("%s is %d bytes", name, len(svg))
		}
	}
	if _, err := json.Marshal(r); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "iterations per 10 s") {
		t.Errorf("text: %v\n%s", err, text.String())
	}
}

// TestChartsEmpty draws sessions that measured nothing.
func TestChartsEmpty(t *testing.T) {
	for name, svg := range Charts(Summarise([]*Session{{Agent: "x"}, {Agent: "y", Wall: 1}})) {
		if !strings.HasSuffix(svg, "</svg>\n") {
			t.Errorf("%s: %q", name, svg)
		}
	}
}

// titleRe finds a bar's tooltip: "label, series: value".
var titleRe = regexp.MustCompile(`<title>([^<]*), ([^<,]*): ([^<]*)</title>`)

// barValues reads the bars of a chart: their values by label tooltip and
// series.
func barValues(t testing.TB, svg string) map[[2]string]float64 {
	t.Helper()
	out := map[[2]string]float64{}
	for _, m := range titleRe.FindAllStringSubmatch(svg, -1) {
		var v float64
		if _, err := fmt.Sscan(m[3], &v); err != nil {
			t.Fatalf("bar %q: %v", m[0], err)
		}
		out[[2]string{html.UnescapeString(m[1]), html.UnescapeString(m[2])}] = v
	}
	return out
}

// TestSessionCharts draws the recorded sessions' charts and reads the
// numbers back from them: each is Compute's.
func TestSessionCharts(t *testing.T) {
	for _, agent := range recorded.Agents {
		t.Run(agent, func(t *testing.T) {
			rec, err := recorded.Load(agent)
			if err != nil {
				t.Fatal(err)
			}
			a, err := rec.Analyze(t.Context(), t.TempDir(), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			s := Compute(a, nil)
			charts := map[string]string{}
			for _, c := range SessionCharts(s) {
				charts[c.Name] = c.SVG
				wellFormed(t, c.Name, c.SVG)
				if !strings.Contains(c.SVG, esc(c.Title)) {
					t.Errorf("%s does not carry its title %q", c.Name, c.Title)
				}
			}
			if len(charts) != 5 {
				t.Fatalf("%d charts: %v", len(charts), charts)
			}
			calls := barValues(t, charts["session-calls.svg"])
			for i, c := range s.Calls {
				tip := fmt.Sprintf("#%d %s", i+1, c.Tool)
				cpu := 0.0
				if c.Use != nil {
					cpu = c.Use.CPU
				}
				if calls[[2]string{tip, "wall time (the call to its result)"}] != max(c.Wall, 0) || calls[[2]string{tip, "CPU of its processes"}] != cpu {
					t.Errorf("call %s: chart %v, %v; stats %v, %v", tip, calls[[2]string{tip, "wall time (the call to its result)"}], calls[[2]string{tip, "CPU of its processes"}], c.Wall, cpu)
				}
			}
			if !strings.Contains(charts["session-calls.svg"], fmt.Sprintf("Tool calls (%d)", len(s.Calls))) || len(s.Calls) != 13 && agent == "claude" {
				t.Errorf("the calls chart does not count %d calls", len(s.Calls))
			}
			execs := barValues(t, charts["session-execs.svg"])
			shells := map[string]int{}
			for _, sh := range s.Shells {
				shells[sh.Who]++
			}
			for _, w := range Whos {
				if execs[[2]string{whoNames[w], "execve"}] != float64(s.ExecsBy[w]) || execs[[2]string{whoNames[w], "shells"}] != float64(shells[w]) {
					t.Errorf("%s: execs chart %v, stats %d execve %d shells", w, execs, s.ExecsBy[w], shells[w])
				}
			}
			if !strings.Contains(charts["session-execs.svg"], fmt.Sprintf("execve (%d) and shells (%d)", s.Execs, len(s.Shells))) {
				t.Errorf("the execs chart's title does not say %d execve", s.Execs)
			}
			tm := barValues(t, charts["session-time.svg"])
			if tm[[2]string{"in tool calls", "seconds of the agent's run"}] != s.Time.Tools || tm[[2]string{"waiting on the model", "seconds of the agent's run"}] != s.Time.Model ||
				tm[[2]string{"the agent's own", "seconds of the agent's run"}] != s.Time.Other {
				t.Errorf("time chart %v, stats %+v", tm, s.Time)
			}
			cpu := barValues(t, charts["session-cpu.svg"])
			for _, w := range Whos {
				if cpu[[2]string{whoNames[w], "CPU time of the processes that exited"}] != cpuOf(s, w) {
					t.Errorf("cpu chart %v, stats %s %v", cpu, w, cpuOf(s, w))
				}
			}
			conns := barValues(t, charts["session-connects.svg"])
			for _, c := range Classes {
				if conns[[2]string{c, "connections"}] != float64(s.Connects[c]) {
					t.Errorf("connects chart %v, stats %v", conns, s.Connects)
				}
			}
		})
	}
}

// wellFormed fails when svg is not well-formed XML.
func wellFormed(t testing.TB, name, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Errorf("%s: %v", name, err)
			}
			return
		}
	}
}

// TestSessionChartsEscape draws a session whose agent and tool names are
// markup, control characters and invalid UTF-8: the charts stay
// well-formed, and nothing in them is an element the record wrote.
func TestSessionChartsEscape(t *testing.T) {
	hostile := "</svg><script>alert(1)</script>\x00\x1b\xff&amp;\"'"
	s := &Session{Agent: hostile, ExecsBy: map[string]int{WhoTools: 2}, Execs: 2, Connects: map[string]int{}, Use: map[string]*Usage{},
		Calls: []Call{{ID: hostile, Tool: hostile, Kind: hostile, Wall: 0.5, Use: &Usage{CPU: 0.25}}, {ID: "b", Tool: "Bash", Wall: -1}}}
	for _, c := range SessionCharts(s) {
		wellFormed(t, c.Name, c.SVG)
		for _, bad := range []string{"<script", "</svg><", "\x00", "\x1b", "\xff"} {
			if strings.Contains(c.SVG, bad) {
				t.Errorf("%s holds %q", c.Name, bad)
			}
		}
		if strings.Count(c.SVG, "<svg") != 1 || strings.Count(c.SVG, "</svg>") != 1 {
			t.Errorf("%s: the record closed the SVG element", c.Name)
		}
		if c.Name == "session-calls.svg" {
			if !strings.Contains(c.SVG, "Tool calls (2)") {
				t.Errorf("the calls chart does not count 2 calls")
			}
			if !strings.Contains(c.SVG, "#1 &lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(c.SVG, "&amp;amp;&#34;&#39;") {
				t.Errorf("the tool's name is not escaped as text:\n%s", c.SVG)
			}
			if v := barValues(t, c.SVG)[[2]string{"#1 " + strings.ToValidUTF8(strings.Map(func(r rune) rune {
				if r < 0x20 {
					return '\uFFFD'
				}
				return r
			}, hostile), "\uFFFD"), "CPU of its processes"}]; v != 0.25 {
				t.Errorf("the hostile call's CPU reads %v", v)
			}
		}
	}
}

// TestSessionChartsPage: the hostile session's charts on an HTML report
// are all there, and the page's only script is its own.
func TestSessionChartsPage(t *testing.T) {
	hostile := "</svg><script>alert(1)</script>"
	s := &Session{Agent: hostile, ExecsBy: map[string]int{}, Connects: map[string]int{}, Use: map[string]*Usage{},
		Calls: []Call{{ID: hostile, Tool: hostile, Kind: hostile, Wall: 0.5}}}
	rep := report.Build(&manifest.Meta{ID: "x"}, nil, nil, nil, nil)
	rep.SetCharts(pageCharts(s))
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, `<figure class="chart"`); n != 5 {
		t.Errorf("%d charts on the page, want 5", n)
	}
	if n := strings.Count(page, "<script"); n != 1 || strings.Contains(page, "alert(1)</script>") {
		t.Errorf("the page holds %d scripts, or the record's", n)
	}
}

// TestSessionChartsManyCalls: a session of many calls draws the first
// maxChartCalls, says so, and writes no more labels than fit (every bar
// keeps its tooltip).
func TestSessionChartsManyCalls(t *testing.T) {
	s := &Session{ExecsBy: map[string]int{}, Connects: map[string]int{}, Use: map[string]*Usage{}}
	for i := range 100 {
		s.Calls = append(s.Calls, Call{ID: fmt.Sprint(i), Tool: "Bash", Wall: float64(i) / 100})
	}
	svg := SessionCharts(s)[0].SVG
	wellFormed(t, "calls", svg)
	if !strings.Contains(svg, "Tool calls (100; the first 80)") {
		t.Errorf("the title does not say the calls were cut:\n%.300s", svg)
	}
	if n := len(barValues(t, svg)); n != 160 {
		t.Errorf("%d bars, want 160 (80 calls, wall time and CPU)", n)
	}
	if n := len(regexp.MustCompile(`>#\d+</text>`).FindAllString(svg, -1)); n == 0 || n > maxLabels {
		t.Errorf("%d labels under the bars, want 1 to %d", n, maxLabels)
	}
	if v := barValues(t, svg)[[2]string{"#80 Bash", "wall time (the call to its result)"}]; v != 0.79 {
		t.Errorf("call #80's wall time reads %v, want 0.79", v)
	}
}

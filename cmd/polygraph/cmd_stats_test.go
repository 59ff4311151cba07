package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/stats"
	"github.com/polygraph/polygraph/test/recorded"
)

// TestStats measures a session whose npm connects to its registry: by
// id with --json, then every session with --svg, then --agent.
func TestStats(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	ctx := context.Background()
	var out bytes.Buffer
	if err := runStats(ctx, &statsOptions{json: true}, []string{m.ID}, &out); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Sessions []struct {
			ID       string         `json:"id"`
			Execs    int            `json:"execs"`
			Connects map[string]int `json:"connects"`
			Flows    []struct {
				Dest  string `json:"dest"`
				Class string `json:"class"`
			} `json:"flows"`
		} `json:"sessions"`
		Summaries []json.RawMessage `json:"summaries"`
	}
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Sessions) != 1 || len(v.Summaries) != 1 {
		t.Fatalf("stats --json: %s", out.String())
	}
	s := v.Sessions[0]
	if s.ID != m.ID || s.Execs != 1 || s.Connects["registry"] != 1 || len(s.Flows) != 1 || s.Flows[0].Dest != "registry.npmjs.org:443" || s.Flows[0].Class != "registry" {
		t.Errorf("stats --json: %+v", s)
	}

	dir := filepath.Join(t.TempDir(), "charts")
	out.Reset()
	if err := runStats(ctx, &statsOptions{svg: dir}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "session "+m.ID) || !strings.Contains(out.String(), "registry.npmjs.org:443  registry") {
		t.Errorf("stats:\n%s", out.String())
	}
	for _, name := range []string{"iterations.svg", "execs.svg", "time.svg", "cpu.svg", "shells.svg", "session-time.svg", "session-execs.svg", "session-connects.svg"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || !bytes.HasPrefix(b, []byte("<svg ")) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := runStats(ctx, &statsOptions{agent: "claude-code"}, nil, &out); err == nil || !strings.Contains(err.Error(), "no session of agent") {
		t.Errorf("stats --agent claude-code: %v", err)
	}
}

// barRe finds a chart's bar in a page: its tooltip, "label, series: value".
var barRe = regexp.MustCompile(`<title>([^<]*), ([^<,]*): ([^<]*)</title></rect>`)

// TestReportHTMLCharts: the HTML report of a recorded session (the real
// Claude Code's) holds the session's charts, inline, and every bar's
// number is the one `polygraph stats --json` prints for the session; the
// text and JSON reports hold none of them.
func TestReportHTMLCharts(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "polygraph")
	t.Setenv("POLYGRAPH_HOME", home)
	rec, err := recorded.LoadAt("claude", filepath.Join(dir, "claude"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rec.Store(home); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var js bytes.Buffer
	if err := runStats(ctx, &statsOptions{json: true}, []string{rec.Meta.ID}, &js); err != nil {
		t.Fatal(err)
	}
	var st struct {
		Sessions []*stats.Session `json:"sessions"`
	}
	if err := json.Unmarshal(js.Bytes(), &st); err != nil || len(st.Sessions) != 1 {
		t.Fatalf("stats --json: %v\n%.500s", err, js.String())
	}
	s := st.Sessions[0]
	if len(s.Calls) != 13 || s.Execs == 0 {
		t.Fatalf("stats: %d calls, %d execve", len(s.Calls), s.Execs)
	}

	var page bytes.Buffer
	if err := runReport(ctx, &reportOptions{transcript: "auto", format: "html"}, []string{rec.Meta.ID}, &page); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	if n := strings.Count(h, `<figure class="chart" id="chart-session-`); n != 5 {
		t.Fatalf("%d charts in the HTML report, want 5", n)
	}
	if strings.Contains(h, "<img") || strings.Contains(h, " style=") || strings.Contains(h, "src=\"http") {
		t.Error("the HTML report loads or styles something outside its inline, hashed sheet")
	}
	got := map[[2]string]float64{}
	for _, m := range barRe.FindAllStringSubmatch(h, -1) {
		var v float64
		if _, err := fmt.Sscan(m[3], &v); err != nil {
			t.Fatalf("bar %q: %v", m[0], err)
		}
		got[[2]string{html.UnescapeString(m[1]), html.UnescapeString(m[2])}] = v
	}
	want := map[[2]string]float64{
		{"in tool calls", "seconds of the agent's run"}:        s.Time.Tools,
		{"waiting on the model", "seconds of the agent's run"}: s.Time.Model,
		{"the agent's own", "seconds of the agent's run"}:      s.Time.Other,
	}
	for i, c := range s.Calls {
		tip := fmt.Sprintf("#%d %s", i+1, c.Tool)
		want[[2]string{tip, "wall time (the call to its result)"}] = max(c.Wall, 0)
		cpu := 0.0
		if c.Use != nil {
			cpu = c.Use.CPU
		}
		want[[2]string{tip, "CPU of its processes"}] = cpu
	}
	names := map[string]string{stats.WhoAgent: "the agent's own", stats.WhoTools: "its tools", stats.WhoOther: "nobody known"}
	for _, w := range stats.Whos {
		want[[2]string{names[w], "execve"}] = float64(s.ExecsBy[w])
		cpu := 0.0
		if u := s.Use[w]; u != nil {
			cpu = u.CPU
		}
		want[[2]string{names[w], "CPU time of the processes that exited"}] = cpu
	}
	for _, c := range stats.Classes {
		want[[2]string{c, "connections"}] = float64(s.Connects[c])
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s, %s: the HTML report's chart reads %v (drawn %v), stats says %v", k[0], k[1], g, ok, v)
		}
	}
	for _, title := range []string{fmt.Sprintf("Tool calls (%d)", len(s.Calls)), fmt.Sprintf("execve (%d) and shells (%d)", s.Execs, len(s.Shells))} {
		if !strings.Contains(h, title) {
			t.Errorf("the HTML report lacks %q", title)
		}
	}

	for _, format := range []string{"text", "json"} {
		var out bytes.Buffer
		if err := runReport(ctx, &reportOptions{transcript: "auto", format: format}, []string{rec.Meta.ID}, &out); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), "<svg") || strings.Contains(out.String(), "session-calls") {
			t.Errorf("the %s report holds a chart", format)
		}
	}
}

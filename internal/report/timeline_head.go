package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/human"
)

// What the timeline's page says around its rows: the session's head, the
// span its times are drawn over, the strip of the whole session, and the
// values the filters offer.

// head is what the page says of the session first.
func (r *Report) head() *Head {
	h := &Head{ToolCalls: len(r.ToolCalls)}
	if r.Transcript != nil {
		h.Transcript = fmt.Sprintf("%s (%s)", r.Transcript.Path, r.Transcript.Format)
		h.Agent = r.Transcript.Agent
	}
	counts := map[detect.Severity]int{}
	for _, f := range r.Findings {
		counts[f.Severity]++
	}
	for _, s := range severities {
		if counts[s] > 0 {
			h.Findings = append(h.Findings, SevCount{string(s), counts[s]})
		}
	}
	m := r.Session
	if m == nil {
		h.Status = "transcript only: no kernel evidence"
		return h
	}
	h.ID, h.User, h.Host, h.Mode, h.Cwd = m.ID, m.User, m.Hostname, m.Mode, m.Cwd
	h.Command = strings.Join(m.Command, " ")
	if h.Agent == "" {
		h.Agent, _ = detect.AgentOf(nil, *m)
	}
	if !m.StartedAt.IsZero() {
		h.Started = m.StartedAt.Local().Format("2006-01-02 15:04:05.000")
	}
	switch {
	case m.InProgress:
		h.Status, h.Live = "live: still being recorded", true
	case !m.CleanClose:
		h.Status = "not closed cleanly"
	case m.ExitCode != nil:
		h.Status = fmt.Sprintf("finished, exit %d", *m.ExitCode)
	default:
		h.Status = "finished"
	}
	if !m.EndedAt.IsZero() && !m.StartedAt.IsZero() {
		h.Duration = m.EndedAt.Sub(m.StartedAt).Round(time.Millisecond).String()
	}
	h.Integrity = m.Integrity
	h.Events = m.Events
	for _, n := range m.Lost {
		h.Lost += n
	}
	return h
}

// severities are the severities, most severe first.
var severities = []detect.Severity{detect.SeverityCritical, detect.SeverityHigh, detect.SeverityMedium, detect.SeverityLow, detect.SeverityInfo}

// filters collects what the filters offer: the severities, rules and
// call kinds present.
func (t *Timeline) filters() {
	sev := map[string]int{}
	for _, f := range t.Findings {
		sev[f.Severity]++
		if !slices.Contains(t.Rules, f.Rule) {
			t.Rules = append(t.Rules, f.Rule)
		}
	}
	for _, s := range severities {
		t.Severities = append(t.Severities, SevCount{string(s), sev[string(s)]})
	}
	slices.Sort(t.Rules)
	for _, c := range t.Calls {
		if !slices.Contains(t.Kinds, c.Kind) {
			t.Kinds = append(t.Kinds, c.Kind)
		}
	}
	slices.Sort(t.Kinds)
}

// overview places the calls, claims and findings on the session's strip.
func (t *Timeline) overview() {
	for _, c := range t.Calls {
		x := t.x(c.AtMS)
		w := max(2, t.x(max(c.EndMS, c.AtMS))-x)
		t.Overview = append(t.Overview, Mark{X: x, W: w, Y: 0, Class: "k-" + c.Kind, Href: "#" + c.Anchor,
			Title: fmt.Sprintf("#%d %s %s", c.N, c.Tool, cut(c.Command, 120))})
	}
	for _, cl := range t.Claims {
		cls := "claim"
		if cl.Contradicted != nil {
			cls = "claim contradicted"
		}
		t.Overview = append(t.Overview, Mark{X: t.x(cl.AtMS), W: 3, Y: 1, Class: cls, Title: "claim: " + cut(cl.Text, 120)})
	}
	for _, f := range t.Findings {
		t.Overview = append(t.Overview, Mark{X: t.x(f.AtMS), W: 4, Y: 2, Class: "sev-" + f.Severity, Href: "#" + f.Anchor,
			Title: fmt.Sprintf("%s %s %s: %s", f.ID, f.Severity, f.Rule, cut(f.Title, 120))})
	}
}

// attributedLine says in one line what was attributed to the agent
// itself rather than to a call: the activity a page collapses.
func attributedLine(counts map[correlate.Reason]int) string {
	var parts []string
	if n := counts[correlate.ReasonAgentBookkeeping]; n > 0 {
		parts = append(parts, human.Count(n, "event", "events")+" of the agent's own bookkeeping (its files, runtime, helpers)")
	}
	if n := counts[correlate.ReasonAgentAPI]; n > 0 {
		parts = append(parts, fmt.Sprintf("%d of its model API traffic", n))
	}
	return strings.Join(parts, ", ")
}

// span is where the session's relative times start and how long it
// lasted, in milliseconds: from the session's start (else the first
// call's) to its end, its last event or its last call.
func (r *Report) span(attr *correlate.Result) (time.Time, float64) {
	var start, end time.Time
	if m := r.Session; m != nil {
		start, end = m.StartedAt, m.EndedAt
	}
	stretch := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if start.IsZero() || t.Before(start) {
			start = t
		}
		if t.After(end) {
			end = t
		}
	}
	for _, v := range r.ToolCalls {
		stretch(v.Call.StartedAt)
		stretch(v.Call.EndedAt)
	}
	if attr != nil && len(attr.Events) > 0 {
		stretch(attr.Events[0].TS)
		stretch(attr.Events[len(attr.Events)-1].TS)
	}
	if start.IsZero() || !end.After(start) {
		return start, 1
	}
	return start, float64(end.Sub(start)) / 1e6
}

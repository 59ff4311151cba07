package report

import (
	"slices"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/redact"
)

// Redact masks every secret the report would show (internal/redact, the
// one redactor): in the session's and the summary's command lines and
// the processes left running, the tool calls' commands, argv, URLs and
// results, the commands the kernel saw them run, the unattributed
// events, the claims and the findings' text. A person reads the report
// and a pipeline stores it, so an API key the agent was given on its
// command line must not be in it.
//
// What the report shares with the analysis it was built from (metadata,
// summary, calls, claims, events, findings) is copied before it changes,
// so the analysis keeps what was recorded.
func (r *Report) Redact() {
	r.redacted, r.timeline = true, nil
	if m := r.Session; m != nil {
		if argv := redact.Argv(m.Command); !slices.Equal(argv, m.Command) {
			c := *m
			c.Command = argv
			r.Session = &c
		}
	}
	if s := r.Summary; s != nil {
		c := *s
		c.Command = redact.Argv(s.Command)
		c.LeftRunning = slices.Clone(s.LeftRunning)
		for i := range c.LeftRunning {
			c.LeftRunning[i].Argv = redact.Argv(c.LeftRunning[i].Argv)
		}
		r.Summary = &c
	}
	for _, v := range r.ToolCalls {
		v.Call = redact.ToolCall(v.Call)
		if k := v.Kernel; k != nil {
			k.Execs = redactStrings(k.Execs)
			k.Commands = redactStrings(k.Commands)
		}
	}
	for i, c := range r.Claims {
		r.Claims[i] = redact.Claim(c)
	}
	for i, e := range r.Unattributed {
		r.Unattributed[i] = redact.Event(e)
	}
	for i := range r.groups {
		g := &r.groups[i]
		g.Command = redact.String(g.Command)
		g.Events = slices.Clone(g.Events)
		for j, e := range g.Events {
			g.Events[j] = redact.Event(e)
		}
	}
	r.Findings = slices.Clone(r.Findings)
	for i := range r.Findings {
		r.Findings[i] = redactFinding(r.Findings[i])
	}
}

// redactFinding is f with its text masked.
func redactFinding(f detect.Finding) detect.Finding {
	f.Title, f.Detail, f.Claim = redact.String(f.Title), redact.String(f.Detail), redact.String(f.Claim)
	return f
}

// redactStrings masks each string of ss: ss itself when nothing changed.
func redactStrings(ss []string) []string {
	var out []string
	for i, s := range ss {
		if r := redact.String(s); r != s {
			if out == nil {
				out = slices.Clone(ss)
			}
			out[i] = r
		}
	}
	if out == nil {
		return ss
	}
	return out
}

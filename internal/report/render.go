package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/textsafe"
	"github.com/polygraph/polygraph/internal/transcript"
)

// renderers are the report's formats, in the order help lists them.
var renderers = []struct {
	name  string
	write func(*Report, io.Writer) error
}{
	{"text", (*Report).WriteText},
	{"json", (*Report).WriteJSON},
	{"html", (*Report).WriteHTML},
}

// Formats names the formats Write renders, in the order help lists them.
func Formats() []string {
	out := make([]string, len(renderers))
	for i, r := range renderers {
		out[i] = r.name
	}
	return out
}

// Write renders the report in format, one of Formats.
func (r *Report) Write(w io.Writer, format string) error {
	for _, x := range renderers {
		if x.name == format {
			return x.write(r, w)
		}
	}
	return fmt.Errorf("unknown report format %q (%s)", format, strings.Join(Formats(), ", "))
}

// WriteJSON writes the report as one JSON document.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

func frameworks(f detect.Frameworks) string {
	var parts []string
	add := func(name string, ids []string) {
		if len(ids) > 0 {
			parts = append(parts, name+" "+strings.Join(ids, ", "))
		}
	}
	add("ATT&CK", f.ATTACK)
	add("ATLAS", f.ATLAS)
	add("OWASP", f.OWASPLLM)
	add("SAIF", f.SAIF)
	return strings.Join(parts, " · ")
}

func seqs(s []uint64, max int) string {
	var parts []string
	for i, v := range s {
		if i == max {
			parts = append(parts, fmt.Sprintf("… %d more", len(s)-max))
			break
		}
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, ", ")
}

func callLabel(c *transcript.ToolCall) string {
	what := c.Command
	if what == "" && len(c.Paths) > 0 {
		what = strings.Join(c.Paths, " ")
	}
	if what == "" && len(c.URLs) > 0 {
		what = strings.Join(c.URLs, " ")
	}
	return fmt.Sprintf("%s %s", c.Tool, oneLine(what, 90))
}

// list is listed, "none" for no items.
func list(items []string, max int) string {
	if len(items) == 0 {
		return "none"
	}
	return listed(items, max)
}

// WriteText writes the report for a terminal: summary, findings, then
// per tool call what the agent said and what the kernel saw (calls with
// findings first), unattributed activity, and claims. Every string that
// comes from the recording or the transcript goes through textsafe.Line
// (or %q), so nothing the traced tree named can act on the terminal or
// fake a line of the report.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	r.textHeader(&b)
	r.textFindings(&b)
	r.textToolCalls(&b)
	r.textUnattributed(&b)
	r.textClaims(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// textClaims writes each claim with the call that backs it or the
// finding that contradicts it.
func (r *Report) textClaims(b *strings.Builder) {
	fmt.Fprintf(b, "\nCLAIMS (%d)\n", len(r.Claims))
	for _, c := range r.Claims {
		f, calls := r.ClaimLink(c)
		var link string
		switch {
		case f != nil && f.ToolCallID != "":
			link = fmt.Sprintf("contradicted by %s (%s) on %s", f.ID, f.Rule, f.ToolCallID)
		case f != nil:
			link = fmt.Sprintf("contradicted by %s (%s)", f.ID, f.Rule)
		case len(calls) > 0:
			link = "backed by " + strings.Join(calls, ", ")
		default:
			link = "no tool call"
		}
		fmt.Fprintf(b, "  %s  %-13s %s → %s\n", clock(c.At), textsafe.Line(string(c.Kind)), quoted(c.Text, 100), textsafe.Line(link))
	}
}

// textHeader writes the notes, the summary, the transcript read and the
// attribution counts.
func (r *Report) textHeader(b *strings.Builder) {
	for _, n := range r.Notes {
		fmt.Fprintf(b, "note: %s\n", textsafe.Line(n))
	}
	if r.Summary != nil {
		r.Summary.WriteText(b) // a strings.Builder never fails
	}
	if r.Transcript != nil {
		fmt.Fprintf(b, "  transcript %s (%s, %s, %s", textsafe.Line(r.Transcript.Path), textsafe.Line(r.Transcript.Agent), human.Count(len(r.ToolCalls), "tool call", "tool calls"), human.Count(len(r.Claims), "claim", "claims"))
		if r.Transcript.Warnings > 0 {
			fmt.Fprintf(b, ", %d unreadable lines", r.Transcript.Warnings)
		}
		b.WriteString(")\n")
	}
	if r.Attributed != nil {
		var parts []string
		for _, k := range []string{"lineage", "in-process", "agent-api", "agent-bookkeeping", "unattributed"} {
			for reason, n := range r.Attributed {
				if string(reason) == k && n > 0 {
					parts = append(parts, fmt.Sprintf("%s %d", k, n))
				}
			}
		}
		fmt.Fprintf(b, "  attributed %s\n", strings.Join(parts, ", "))
	}
}

// textFindings writes every finding with its detail, claim, tool call,
// evidence and framework ids.
func (r *Report) textFindings(b *strings.Builder) {
	fmt.Fprintf(b, "\nFINDINGS (%d)\n", len(r.Findings))
	if len(r.Findings) == 0 {
		if r.KernelEvidence {
			b.WriteString("  none\n")
		} else {
			b.WriteString("  none that the transcript alone can show\n")
		}
	}
	var notes, noteIDs []string // info findings: notes, not alarms, summed up in one line
	noteCount := map[string]int{}
	for _, f := range r.Findings {
		if f.Severity == detect.SeverityInfo {
			if noteCount[f.Rule] == 0 {
				notes = append(notes, f.Rule)
			}
			noteCount[f.Rule]++
			noteIDs = append(noteIDs, f.ID)
			continue
		}
		fmt.Fprintf(b, "  %-3s %-8s %-22s %s\n", f.ID, strings.ToUpper(string(f.Severity)), f.Rule, textsafe.Line(f.Title))
		if f.Detail != "" {
			// One line: the rules write none with newlines, so any it
			// has came from a name in the record.
			fmt.Fprintf(b, "               %s\n", textsafe.Line(strings.TrimSpace(f.Detail)))
		}
		if f.Claim != "" {
			fmt.Fprintf(b, "               claim: %s\n", quoted(f.Claim, 120))
		}
		tc := textsafe.Line(f.ToolCallID)
		if tc == "" {
			tc = "unattributed"
		}
		fmt.Fprintf(b, "               tool call: %s", tc)
		if len(f.Evidence) > 0 {
			fmt.Fprintf(b, "; evidence: event %s", seqs(f.Evidence, 8))
		}
		b.WriteString("\n")
		if fw := frameworks(f.Frameworks); fw != "" {
			fmt.Fprintf(b, "               %s\n", fw)
		}
	}
	if len(notes) > 0 {
		parts := make([]string, len(notes))
		total := 0
		for i, n := range notes {
			parts[i] = fmt.Sprintf("%s ×%d", n, noteCount[n])
			total += noteCount[n]
		}
		ids := strings.Join(noteIDs[:min(len(noteIDs), 12)], " ")
		if len(noteIDs) > 12 {
			ids += " …"
		}
		fmt.Fprintf(b, "  %s INFO: %s (%s, not alarms; --format json or html has each)\n", ids, strings.Join(parts, ", "), human.Count(total, "note", "notes"))
	}
}

// textToolCalls writes each tool call, divergences first: what the agent
// said and what the kernel saw.
func (r *Report) textToolCalls(b *strings.Builder) {
	fmt.Fprintf(b, "\nTOOL CALLS (%d)\n", len(r.ToolCalls))
	for _, v := range r.orderedCalls() {
		c := v.Call
		mark := " "
		if len(v.Findings) > 0 {
			mark = "!"
		}
		fmt.Fprintf(b, "%s %s  %-5s %s  [%s]\n", mark, clock(c.StartedAt), textsafe.Line(string(c.Kind)), textsafe.Line(callLabel(c)), textsafe.Line(c.ID))
		said := []string{}
		switch {
		case c.Rejected:
			said = append(said, "rejected: nothing ran")
		case c.ExitCode != nil:
			said = append(said, fmt.Sprintf("exit %d", *c.ExitCode))
		case c.IsError:
			said = append(said, "error")
		}
		if c.Result != "" {
			said = append(said, "result "+quoted(strings.TrimSpace(c.Result), 80))
		}
		if len(said) > 0 {
			fmt.Fprintf(b, "      agent said:  %s\n", strings.Join(said, "; "))
		}
		if k := v.Kernel; k != nil {
			if k.Events == 0 {
				b.WriteString("      kernel saw:  nothing\n")
			} else {
				var saw []string
				if k.Processes > 0 {
					st := ""
					switch {
					case k.Signal != 0:
						st = fmt.Sprintf(", killed by signal %d", k.Signal)
					case k.ExitCode != nil:
						st = fmt.Sprintf(", exit %d after %s", *k.ExitCode, time.Duration(k.DurationNS).Round(time.Millisecond))
					}
					cmds := k.Commands
					if len(cmds) == 0 {
						cmds = k.Execs
					}
					lines := make([]string, len(cmds))
					for i, c := range cmds {
						lines[i] = oneLine(c, 100)
					}
					saw = append(saw, fmt.Sprintf("%s%s: %s", human.Count(k.Processes, "process", "processes"), st, list(lines, 3)))
					if len(k.Wrappers) > 0 {
						saw = append(saw, "through the agent's "+textsafe.Line(strings.Join(k.Wrappers, ", ")))
					}
				}
				if k.CPUNS > 0 || k.MaxRSSKB > 0 {
					saw = append(saw, fmt.Sprintf("cpu %s, peak rss %s", time.Duration(k.CPUNS).Round(time.Millisecond), human.Bytes(int64(k.MaxRSSKB)<<10)))
				}
				if len(k.Writes) > 0 {
					saw = append(saw, "wrote "+list(textsafe.Lines(k.Writes), 4))
				}
				if len(k.Reads) > 0 {
					saw = append(saw, "read "+readsText(k.Reads, 4))
				}
				if len(k.Connects) > 0 {
					saw = append(saw, "connected to "+list(textsafe.Lines(k.Connects), 4))
				}
				if len(k.DNS) > 0 {
					saw = append(saw, "looked up "+list(textsafe.Lines(k.DNS), 4))
				}
				if k.Late > 0 {
					saw = append(saw, human.Count(k.Late, "event", "events")+" after the call returned")
				}
				fmt.Fprintf(b, "      kernel saw:  %s\n", strings.Join(saw, "; "))
			}
			if len(k.Integrity) > 0 {
				fmt.Fprintf(b, "      integrity:   %s\n", textsafe.Line(integrityLine(k.Integrity)))
			}
		}
		if len(v.Findings) > 0 {
			fmt.Fprintf(b, "      findings:    %s\n", r.findingRefs(v.Findings))
		}
	}
}

// findingRefs names findings by id with their severity and rule: "F2
// (low unattributed-activity)".
func (r *Report) findingRefs(ids []string) string {
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		s := id
		for _, f := range r.Findings {
			if f.ID == id {
				s = fmt.Sprintf("%s (%s %s)", id, f.Severity, f.Rule)
				break
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// textUnattributed writes what no tool call explains, a line a process,
// the agent's own activity last (or, without a transcript, only how many
// events there are).
func (r *Report) textUnattributed(b *strings.Builder) {
	if r.KernelEvidence && r.Transcript == nil {
		fmt.Fprintf(b, "\nUNATTRIBUTED: %s, with no transcript to attribute them to (polygraph events %s lists them)\n", human.Count(r.UnattributedCount, "event", "events"), textsafe.Line(r.Session.ID))
		return
	}
	if !r.KernelEvidence {
		return
	}
	groups := r.groups
	if groups == nil && len(r.Unattributed) > 0 {
		groups = groupUnattributed(&correlate.Result{Unattributed: r.Unattributed})
	}
	// The list holds the events no call explains (the summary's
	// "unattributed N") and those a call's tree did after the call had
	// returned, which the transcript could not show: the heading counts
	// both, so its numbers add up to the summary's.
	none := r.Attributed[correlate.ReasonUnattributed]
	what := human.Count(len(r.Unattributed), "event", "events")
	if late := len(r.Unattributed) - none; late > 0 && r.Attributed != nil {
		if none == 0 {
			what += ", all after their call returned"
		} else {
			what += fmt.Sprintf(": %d that no call explains, %d after their call returned", none, late)
		}
	}
	fmt.Fprintf(b, "\nUNATTRIBUTED (%s; %s)\n", what, human.Count(len(groups), "process", "processes"))
	for i, g := range groups {
		if i == 20 {
			fmt.Fprintf(b, "  … %s more (polygraph report --format json lists every event)\n", human.Count(len(groups)-20, "process", "processes"))
			break
		}
		fmt.Fprintf(b, "  %s  pid %-7d %s  (%s)\n", clock(g.First), g.PID, oneLine(g.Command, 80), g.KindCounts())
		if sum := g.Summary(); sum != "" {
			fmt.Fprintf(b, "               %s\n", textsafe.Line(sum))
		}
	}
}

// eventWhat is a short description of an event's object.
func eventWhat(e *event.Event) string {
	switch e.Kind {
	case event.KindExec:
		return oneLine(strings.Join(e.Argv(), " "), 100)
	case event.KindConnect, event.KindBind, event.KindAccept, event.KindNet:
		return fmt.Sprintf("%s port %d", e.Addr(), e.Port())
	case event.KindDNS:
		return e.QName()
	case event.KindRename, event.KindLink:
		return e.Path + " → " + e.Path2
	case event.KindFork:
		return fmt.Sprintf("child %d", e.ChildPID())
	case event.KindExit:
		if e.ExitCode() != nil {
			return fmt.Sprintf("exit %d", *e.ExitCode())
		}
		return fmt.Sprintf("signal %d", e.Signal())
	}
	s := e.Path
	if e.Access != "" {
		s += " " + e.Access
	}
	return s
}

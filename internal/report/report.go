// Package report builds and renders what people read about a session:
// the one-screen summary and the full report, as text, JSON or HTML. It
// reads nothing itself; package analysis reads the session and the
// transcript, attributes and detects, and hands the pieces to Build.
package report

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/textsafe"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Report is everything `polygraph report` shows: per tool call what the
// agent said and what the kernel saw, what nothing explains, and the
// findings. Its JSON form is the --format json document.
type Report struct {
	// SchemaVersion is the version of this document's format
	// (docs/schema/report.v1.json).
	SchemaVersion  int                 `json:"schema_version"`
	Session        *manifest.Meta      `json:"session,omitempty"`
	Transcript     *TranscriptInfo     `json:"transcript,omitempty"`
	KernelEvidence bool                `json:"kernel_evidence"`
	Notes          []string            `json:"notes,omitempty"`
	Summary        *Summary            `json:"summary,omitempty"`
	ToolCalls      []*ToolCallView     `json:"tool_calls"`
	Claims         []*transcript.Claim `json:"claims"`
	// Attributed counts events per attribution reason.
	Attributed map[correlate.Reason]int `json:"attributed,omitempty"`
	// UnattributedCount counts the events nothing explains; Unattributed
	// lists them when there is a transcript to hold them against (without
	// one every event is unattributed, and `polygraph events` lists them).
	UnattributedCount int              `json:"unattributed_count"`
	Unattributed      []*event.Event   `json:"unattributed"`
	Findings          []detect.Finding `json:"findings"`

	// groups are the unattributed events by process (the text report's
	// and the pages' view of them).
	groups []ProcessGroup
	// attr is the attribution the report was built from, for the
	// timeline; timeline is built from both when first asked for.
	attr     *correlate.Result
	timeline *Timeline
	// redacted says Redact masked the report: the timeline masks what
	// it takes from the events too.
	redacted bool
	// charts are the session's charts for the pages (SetCharts).
	charts []Chart
}

// TranscriptInfo names the transcript the report read.
type TranscriptInfo struct {
	Path      string            `json:"path"`
	Format    transcript.Format `json:"format"`
	Agent     string            `json:"agent"`
	SessionID string            `json:"session_id,omitempty"`
	Warnings  int               `json:"warnings"`
}

// ToolCallView is one tool call: the agent's account (Call) and the
// kernel's (Kernel, absent without a session).
type ToolCallView struct {
	Call     *transcript.ToolCall `json:"call"`
	Kernel   *KernelView          `json:"kernel,omitempty"`
	Findings []string             `json:"findings,omitempty"` // ids of findings naming this call
}

// KernelView is what the kernel saw one tool call do.
type KernelView struct {
	Processes int      `json:"processes"`
	Execs     []string `json:"execs,omitempty"` // argv of each exec, joined
	// Commands are the execs as a reader wants them: a wrapper that
	// carried the call's command (Claude Code's `source <snapshot> &&
	// eval '…'`) as the command the agent wrote, the rest as Execs has
	// them, but for the agent's runtime wrappers, which Wrappers names
	// (Codex's sandbox set-up and snapshot wrapper).
	Commands   []string `json:"commands,omitempty"`
	Wrappers   []string `json:"wrappers,omitempty"`
	ExitCode   *int     `json:"exit_code,omitempty"`
	Signal     int      `json:"signal,omitempty"`
	DurationNS uint64   `json:"duration_ns,omitempty"`
	Reads      []string `json:"reads,omitempty"`
	Writes     []string `json:"writes,omitempty"`
	Connects   []string `json:"connects,omitempty"`
	DNS        []string `json:"dns,omitempty"`
	Events     int      `json:"events"`
	Late       int      `json:"late,omitempty"` // events after the call returned
	// CPUNS and MaxRSSKB are the resources the call's processes used, from
	// their exit events: CPU time summed, the largest peak RSS.
	CPUNS    uint64 `json:"cpu_ns,omitempty"`
	MaxRSSKB uint64 `json:"max_rss_kb,omitempty"`
	// Integrity is what the integrity check said of each file the call's
	// execs ran (AddIntegrity); absent for sessions recorded without it.
	Integrity []ExecIntegrity `json:"integrity,omitempty"`
}

// SchemaVersion is the version of the report's JSON form: the
// schema_version of every report and the version in its schema's name.
// Within a version fields are only added.
const SchemaVersion = 1

// NoKernelNote is said when a report has a transcript but no session.
const NoKernelNote = "no kernel evidence: this report shows only the agent's own account (record the agent with `polygraph run` to check it)"

// Build assembles a report. Any of meta (with sum), tr, attr may be
// missing; findings may be nil. The notes say what is missing or
// incomplete: no kernel evidence, no transcript, a session still being
// recorded or not closed cleanly, lost events.
func Build(meta *manifest.Meta, sum *Summary, tr *transcript.Transcript, attr *correlate.Result, findings []detect.Finding) *Report {
	r := &Report{SchemaVersion: SchemaVersion, Session: meta, Summary: sum, KernelEvidence: meta != nil, Findings: findings,
		ToolCalls: []*ToolCallView{}, Claims: []*transcript.Claim{}, Unattributed: []*event.Event{}, attr: attr}
	if r.Findings == nil {
		r.Findings = []detect.Finding{}
	}
	if meta == nil {
		r.Notes = append(r.Notes, NoKernelNote)
	}
	byBehaviour := false // the note on how the agent was found is made
	if meta != nil && tr == nil {
		if name, _ := detect.AgentOf(nil, *meta); name == "unknown" && len(agent.Launched(meta.Command)) > 0 {
			prog := "`" + textsafe.Line(filepath.Base(agent.Launched(meta.Command)[0])) + "`"
			r.Notes = append(r.Notes, "unknown agent: no profile matches "+prog+", so polygraph knows neither where it keeps its transcript nor its format; every event of the tree but the agent's own processes is unattributed and judged by what it did alone (pass --transcript FILE if it writes one polygraph reads)")
			if attr != nil && attr.AgentNote != "" && attr.AgentBy != correlate.AgentByProfile {
				r.Notes = append(r.Notes, "the agent is known by what it did: "+textsafe.Line(attr.AgentNote))
				byBehaviour = true
			}
		} else {
			r.Notes = append(r.Notes, "no transcript found for this session: every event of the tree below the agent is unattributed (pass --transcript FILE)")
		}
	}
	if attr != nil && attr.AgentBy == correlate.AgentByBehaviour && !byBehaviour {
		// Behaviour found the agent where the command line did not.
		r.Notes = append(r.Notes, "the agent is known by what it did: "+textsafe.Line(attr.AgentNote))
	}
	if meta != nil && meta.InProgress {
		r.Notes = append(r.Notes, "the session is still being recorded: events after the last flush are not in this report")
	} else if meta != nil && !meta.CleanClose {
		r.Notes = append(r.Notes, "the session was not closed cleanly (polygraph was killed): events after the last flush are missing")
	}
	if meta != nil && sum != nil && sum.LostTotal > 0 {
		r.Notes = append(r.Notes, human.Count(sum.LostTotal, "event was", "events were")+" lost while recording: what the kernel saw is incomplete")
	}
	if tr != nil {
		r.Transcript = &TranscriptInfo{Path: tr.Path, Format: tr.Format, Agent: tr.Agent, SessionID: tr.SessionID, Warnings: len(tr.Warnings)}
		for _, l := range tr.Limits {
			r.Notes = append(r.Notes, "transcript "+l.String())
		}
		r.Claims = append(r.Claims, tr.Claims...)
	}
	byCall := map[string][]string{}
	for _, f := range r.Findings {
		if f.ToolCallID != "" {
			byCall[f.ToolCallID] = append(byCall[f.ToolCallID], f.ID)
		}
	}
	if tr != nil {
		for _, c := range tr.ToolCalls {
			v := &ToolCallView{Call: c, Findings: byCall[c.ID]}
			if attr != nil {
				if a := attr.ByCall[c.ID]; a != nil {
					v.Kernel = kernelView(a, attr.Events)
				} else {
					v.Kernel = &KernelView{}
				}
			}
			r.ToolCalls = append(r.ToolCalls, v)
		}
	}
	if attr != nil {
		r.Attributed = attr.Counts
		r.UnattributedCount = len(attr.Unattributed)
		if tr != nil {
			r.Unattributed = append(r.Unattributed, attr.Unattributed...)
			r.groups = groupUnattributed(attr)
		}
	}
	return r
}

// kernelView is what the kernel saw call a do; evs are the session's
// events in seq order (correlate.Result.Events), where a's seqs are found.
func kernelView(a *correlate.CallActivity, evs []*event.Event) *KernelView {
	k := &KernelView{Reads: a.Reads, Writes: a.Writes, DNS: a.DNS, Events: len(a.Events), Late: len(a.Late)}
	seen := map[string]bool{}
	for _, e := range a.Execs {
		if !seen[e.ExecID] {
			seen[e.ExecID] = true
		}
		k.Execs = append(k.Execs, strings.Join(e.Argv(), " "))
		if w, ok := runtimeWrapper(e); ok {
			k.Wrappers = appendNew(k.Wrappers, w.Name)
		} else {
			k.Commands = append(k.Commands, execCommand(e, a.Call))
		}
	}
	k.Processes = len(seen)
	for _, seq := range a.Events {
		i := sort.Search(len(evs), func(i int) bool { return evs[i].Seq >= seq })
		if i < len(evs) && evs[i].Seq == seq && evs[i].Kind == event.KindExit {
			k.CPUNS += evs[i].CPUNS()
			k.MaxRSSKB = max(k.MaxRSSKB, evs[i].MaxRSSKB())
		}
	}
	if a.RootExit != nil {
		k.ExitCode, k.Signal, k.DurationNS = a.RootExit.ExitCode(), a.RootExit.Signal(), a.RootExit.DurationNS()
	}
	for _, c := range a.Connects {
		s := fmt.Sprintf("%s:%d", c.Addr(), c.Port())
		if c.Family() == "ipv6" {
			s = fmt.Sprintf("[%s]:%d", c.Addr(), c.Port())
		}
		if c.Host() != "" {
			s = c.Host() + " (" + s + ")"
		}
		k.Connects = append(k.Connects, s)
	}
	return k
}

// execCommand is an exec as a reader wants it (KernelView.Commands): the
// call's own command where an agent's wrapper carried it, else the argv
// joined.
func execCommand(e *event.Event, call *transcript.ToolCall) string {
	argv := e.Argv()
	if p, w, ok := agent.Carried(argv); ok && call != nil && call.Command != "" {
		return fmt.Sprintf("[%s's %s wrapper] %s", p.Title, w.Name, call.Command)
	}
	return strings.Join(argv, " ")
}

// runtimeWrapper is the agent's runtime wrapper an exec is (agent.Runtime):
// something the agent runs around a command, not the command.
func runtimeWrapper(e *event.Event) (agent.Wrapper, bool) {
	argv := e.Argv()
	return agent.Runtime(argv, strings.TrimSpace(agent.ShellScript(argv)))
}

// ClaimLink says which tool call backs or contradicts a claim: the
// finding that contradicts it (a claim-* rule quoting its text), else
// the calls it refers to; contradicting is "" when no finding does.
func (r *Report) ClaimLink(c *transcript.Claim) (contradicting *detect.Finding, calls []string) {
	for i := range r.Findings {
		if f := &r.Findings[i]; f.Claim != "" && f.Claim == c.Text {
			return f, c.ToolCallIDs
		}
	}
	return nil, c.ToolCallIDs
}

// MaxSeverity returns the highest severity among the findings, or "".
func (r *Report) MaxSeverity() detect.Severity {
	var best detect.Severity
	for _, f := range r.Findings {
		if f.Severity.Rank() > best.Rank() {
			best = f.Severity
		}
	}
	return best
}

// orderedCalls puts calls with findings first (most severe first), then
// the rest in transcript order.
func (r *Report) orderedCalls() []*ToolCallView {
	sev := map[string]int{}
	for _, f := range r.Findings {
		if f.ToolCallID != "" && f.Severity.Rank() > sev[f.ToolCallID]-1 {
			sev[f.ToolCallID] = f.Severity.Rank() + 1
		}
	}
	out := slices.Clone(r.ToolCalls)
	slices.SortStableFunc(out, func(a, b *ToolCallView) int {
		return cmp.Compare(sev[b.Call.ID], sev[a.Call.ID])
	})
	return out
}

// clock is a time of day to the millisecond: an agent's calls come tens
// of milliseconds apart, and a clock to the second gave five of them one
// time.
func clock(t time.Time) string {
	if t.IsZero() {
		return "            "
	}
	return t.Local().Format("15:04:05.000")
}

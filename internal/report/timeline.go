package report

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/redact"
)

// Timeline is the pages' view of a session (the HTML report and
// `polygraph ui`): the three accounts side by side, a row for each thing
// that happened in time order. What the agent said (a tool call as it
// wrote it, a claim), what the tool reported back (its result and exit
// code) and what the kernel saw (the call's processes as nested bars,
// with its file and network events as marks on them); the findings
// pinned to the row they stand on, divergences marked on both sides.
// Below: each call's own view, the process tree, and what no call
// explains, one line a process.
//
// It is built from a Report (so it shows what the report shows, masked as
// the report is) and the attribution behind it, capped so a page of a
// session of a million events stays small. It is not a contract: the
// JSON report is.
type Timeline struct {
	Head  *Head
	Notes []string
	// Start is the time the relative times count from; SpanMS is how
	// long the session (or transcript) lasted.
	Start  time.Time
	SpanMS float64
	// Rows are calls, claims and unattributed processes by time.
	Rows     []*Row
	Calls    []*CallRow
	Findings []*FindingRow
	Claims   []*ClaimRow
	Activity []*ActivityRow
	// Tree is the session's process tree (its roots); TreeMore counts
	// the processes left out of it.
	Tree     []*ProcNode
	TreeMore int
	// Attributed is what correlation attributed to the agent itself,
	// one line: its API traffic and its bookkeeping.
	Attributed string
	// The values the filters offer.
	Severities []SevCount
	Rules      []string
	Kinds      []string
	// Overview is the whole session on one strip: calls, claims and
	// findings at their times (x in 0..1000).
	Overview []Mark
	// Charts are the session's numbers drawn (Report.SetCharts): the
	// same as `polygraph stats` prints for it.
	Charts []Chart

	r        *Report
	evidence map[uint64]string // the findings' evidence events: the severity
	building *CallRow          // the call row being built
}

// Head is what a page says of the session first.
type Head struct {
	ID, Agent, User, Host, Mode string
	Command, Cwd                string
	Started, Duration           string
	Status, Integrity           string
	Live                        bool
	Events                      uint64
	Lost                        uint64
	ToolCalls                   int
	Transcript                  string
	Findings                    []SevCount
}

// SevCount is how many findings of one severity.
type SevCount struct {
	Severity string
	N        int
}

// Row is one line of the timeline: a call, a claim or an unattributed
// process, at AtMS.
type Row struct {
	AtMS     float64
	Call     *CallRow
	Claim    *ClaimRow
	Activity *ActivityRow
}

// CallRow is a tool call in the three accounts, and its own view.
type CallRow struct {
	N              int
	ID, Anchor     string
	Tool, Kind     string
	Command        string // as the agent wrote it
	Wrapper        string // the agent's wrapper it ran in, "" for none
	WrapperCommand string // that wrapper's command line
	AtMS, EndMS    float64
	At, Dur        string
	// Reported is what the tool reported back in a few words; Result
	// its output, cut.
	Reported string
	Result   string
	Failed   bool
	// Kernel is the report's view of what the kernel saw (nil without
	// a session); Lane its bars and marks; Procs the processes it ran.
	Kernel *KernelView
	Lane   *Lane
	Procs  []*ProcRow
	// Own and System are the files it read, the system files apart;
	// Wrote, Connected and Looked what it wrote, connected to and looked
	// up: each capped, the JSON report has them all.
	Own, System, Wrote, Connected, Looked []string
	IO                                    string
	Findings                              []*FindingRow
	Severity                              string
	Rules                                 string // the rules of its findings, space-separated
	Divergences                           []string
	// DetailURL, when set, is where a server gives the call's own view,
	// which its page then loads when opened (ServedFrom) instead of
	// holding every call's.
	DetailURL string
}

// ClaimRow is a claim of the agent's, with what backs or contradicts it.
type ClaimRow struct {
	Kind, Text   string
	AtMS         float64
	At           string
	Calls        []*CallRow
	Contradicted *FindingRow
}

// ActivityRow is one process's unattributed activity.
type ActivityRow struct {
	ProcessGroup
	// Findings are those with no tool call that stand on its events.
	Findings []*FindingRow
	Anchor   string
	AtMS     float64
	At       string
	Lines    []string // its events, one a line, capped
	More     int
}

// FindingRow is a finding where the pages show it.
type FindingRow struct {
	ID, Anchor, Rule, Severity string
	Title, Detail, Claim       string
	Call                       *CallRow
	AtMS                       float64
	At                         string
	Frameworks                 []Framework
	Evidence                   string
	Blocked                    bool
}

// Framework is one framework's ids for a finding.
type Framework struct{ Name, IDs string }

// Mark is something at a time on a strip or a bar: x in 0..1000, the
// lane's row y, a class (its kind or severity), where it links and what
// it says on hover.
type Mark struct {
	X, W  float64
	Y     int
	Class string
	Href  string
	Title string

	// Path is an SVG path for a mark of many events (a lane's strip).
	Path string

	// While a strip is built: how many events, of what kind, from when,
	// the first, and the stretches it covers.
	n                 int
	kind, from, first string
	cells             map[int]bool
}

// Caps keep a page's size bounded whatever the session's.
const (
	maxBars       = 60   // process bars in a call's lane
	maxTreeNodes  = 1500 // processes in the tree view
	maxLines      = 50   // event lines of an unattributed process
	maxActivity   = 200  // unattributed processes
	maxResult     = 2000 // bytes of a call's result
	maxListedRead = 40   // files read a call's view lists
	maxLabel      = 300  // bytes of a command line in a label or a hover
	maxDetail     = 1000 // bytes of a finding's detail on a page
	maxDivergence = 3    // divergences a call's row names
)

// Timeline is the report's timeline, built once.
func (r *Report) Timeline() *Timeline {
	if r.timeline == nil {
		r.timeline = buildTimeline(r, r.attr)
		r.timeline.Charts = r.charts
	}
	return r.timeline
}

// buildTimeline builds r's timeline; attr may be nil (no session).
func buildTimeline(r *Report, attr *correlate.Result) *Timeline {
	t := &Timeline{Notes: r.Notes, r: r, evidence: map[uint64]string{}}
	for _, f := range r.Findings {
		for _, seq := range f.Evidence {
			if old, ok := t.evidence[seq]; !ok || f.Severity.Rank() > detect.Severity(old).Rank() {
				t.evidence[seq] = string(f.Severity)
			}
		}
	}
	t.Start, t.SpanMS = r.span(attr)
	t.Head = r.head()
	byID := map[string]*CallRow{}
	for i, v := range r.ToolCalls {
		c := t.callRow(i+1, v, attr)
		byID[c.ID] = c
		t.Calls = append(t.Calls, c)
		t.Rows = append(t.Rows, &Row{AtMS: c.AtMS, Call: c})
	}
	findingAt := map[string]*FindingRow{}
	for _, f := range r.Findings {
		fr := t.findingRow(f, byID[f.ToolCallID], attr)
		findingAt[f.ID] = fr
		t.Findings = append(t.Findings, fr)
		if fr.Call != nil {
			fr.Call.Findings = append(fr.Call.Findings, fr)
		}
	}
	for _, c := range t.Calls {
		c.finish()
	}
	for _, cl := range r.Claims {
		f, calls := r.ClaimLink(cl)
		row := &ClaimRow{Kind: string(cl.Kind), Text: cl.Text, AtMS: t.ms(cl.At), At: t.clock(cl.At)}
		for _, id := range calls {
			if c := byID[id]; c != nil {
				row.Calls = append(row.Calls, c)
			}
		}
		if f != nil {
			row.Contradicted = findingAt[f.ID]
		}
		t.Claims = append(t.Claims, row)
		t.Rows = append(t.Rows, &Row{AtMS: row.AtMS, Claim: row})
	}
	groups := r.groups
	if groups == nil && len(r.Unattributed) > 0 {
		groups = groupUnattributed(&correlate.Result{Unattributed: r.Unattributed})
	}
	for i, g := range groups {
		if i == maxActivity {
			break
		}
		a := &ActivityRow{ProcessGroup: g, Anchor: fmt.Sprintf("proc-%d-%d", g.PID, i), AtMS: t.ms(g.First), At: t.clock(g.First)}
		for j, e := range g.Events {
			if j == maxLines {
				a.More = len(g.Events) - j
				break
			}
			a.Lines = append(a.Lines, fmt.Sprintf("%s  %-8s %s", t.clock(e.TS), e.Kind, cut(eventWhat(e), 4*maxLabel)))
		}
		seqs := map[uint64]bool{}
		for _, e := range g.Events {
			seqs[e.Seq] = true
		}
		for i, f := range r.Findings {
			if f.ToolCallID == "" && len(f.Evidence) > 0 && seqs[f.Evidence[0]] {
				a.Findings = append(a.Findings, t.Findings[i])
			}
		}
		t.Activity = append(t.Activity, a)
		if !g.Agent {
			// The agent's own stray activity is one line below the
			// timeline, not a row of it.
			t.Rows = append(t.Rows, &Row{AtMS: a.AtMS, Activity: a})
		}
	}
	slices.SortStableFunc(t.Rows, func(a, b *Row) int { return cmp.Compare(a.AtMS, b.AtMS) })
	t.Tree, t.TreeMore = t.tree(r, attr)
	t.Attributed = attributedLine(r.Attributed)
	t.filters()
	t.overview()
	return t
}

// ServedFrom makes a page of t that loads each call's own view from the
// server at base/call/ID when it is opened: a server's page of a large
// session then holds the timeline only. A report holds them all.
func (t *Timeline) ServedFrom(base string) {
	for _, c := range t.Calls {
		c.DetailURL = base + "/call/" + url.PathEscape(c.ID)
	}
}

// Call is the row of call id, nil for none.
func (t *Timeline) Call(id string) *CallRow {
	for _, c := range t.Calls {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// ms is t in milliseconds since the start (0 for no time).
func (t *Timeline) ms(at time.Time) float64 {
	if at.IsZero() || t.Start.IsZero() {
		return 0
	}
	return float64(at.Sub(t.Start)) / 1e6
}

// x is a time on a 0..1000 strip of the whole session.
func (t *Timeline) x(ms float64) float64 {
	return min(1000, max(0, ms/t.SpanMS*1000))
}

// clock is a time as the pages print it: the time of day to the
// millisecond and the time since the start.
func (t *Timeline) clock(at time.Time) string {
	if at.IsZero() {
		return ""
	}
	return fmt.Sprintf("%s +%.3fs", at.Local().Format("15:04:05.000"), t.ms(at)/1000)
}

// callRow builds the row of call v, the n-th.
func (t *Timeline) callRow(n int, v *ToolCallView, attr *correlate.Result) *CallRow {
	c := v.Call
	row := &CallRow{N: n, ID: c.ID, Anchor: "call-" + anchorID(c.ID), Tool: c.Tool, Kind: string(c.Kind), Kernel: v.Kernel,
		AtMS: t.ms(c.StartedAt), EndMS: t.ms(c.EndedAt), At: t.clock(c.StartedAt)}
	row.Command = c.Command
	if row.Command == "" && len(c.Paths) > 0 {
		row.Command = strings.Join(c.Paths, " ")
	}
	if row.Command == "" && len(c.URLs) > 0 {
		row.Command = strings.Join(c.URLs, " ")
	}
	if !c.StartedAt.IsZero() && !c.EndedAt.IsZero() {
		row.Dur = c.EndedAt.Sub(c.StartedAt).Round(time.Millisecond).String()
	}
	switch {
	case c.Rejected:
		row.Reported, row.Failed = "rejected: nothing ran", true
	case c.ExitCode != nil:
		row.Reported, row.Failed = fmt.Sprintf("exit %d", *c.ExitCode), *c.ExitCode != 0
	case c.IsError:
		row.Reported, row.Failed = "error", true
	case c.EndedAt.IsZero() && c.Result == "":
		row.Reported = "no result yet"
	default:
		row.Reported = "returned"
	}
	row.Result = cut(strings.TrimSpace(c.Result), maxResult)
	if k := v.Kernel; k != nil {
		row.Own, row.System = splitSystem(k.Reads)
		row.Own, row.System = capList(row.Own, maxListedRead), capList(row.System, maxListedRead)
		row.Wrote, row.Connected, row.Looked = capList(k.Writes, maxListedRead), capList(k.Connects, maxListedRead), capList(k.DNS, maxListedRead)
		if k.ExitCode != nil && c.ExitCode != nil && *k.ExitCode != *c.ExitCode {
			row.Divergences = append(row.Divergences, fmt.Sprintf("the agent reported exit %d; the kernel saw exit %d", *c.ExitCode, *k.ExitCode))
		}
		if c.Rejected && k.Processes > 0 {
			row.Divergences = append(row.Divergences, "the agent says nothing ran; the kernel saw "+human.Count(k.Processes, "process", "processes"))
		}
	}
	if attr != nil {
		if a := attr.ByCall[c.ID]; a != nil {
			t.building = row
			t.lane(row, a, attr)
			t.building = nil
		}
	}
	return row
}

// finish completes a call's row once its findings are pinned to it.
func (c *CallRow) finish() {
	best, more := -1, 0
	var rules []string
	for _, f := range c.Findings {
		if r := detect.Severity(f.Severity).Rank(); r > best {
			best, c.Severity = r, f.Severity
		}
		if !slices.Contains(rules, f.Rule) {
			rules = append(rules, f.Rule)
		}
		switch {
		case f.Severity == string(detect.SeverityInfo):
		case len(c.Divergences) < maxDivergence:
			c.Divergences = append(c.Divergences, fmt.Sprintf("%s %s: %s", f.ID, f.Severity, cut(f.Title, 100)))
		default:
			more++
		}
	}
	if more > 0 {
		c.Divergences = append(c.Divergences, fmt.Sprintf("and %d more findings (below)", more))
	}
	c.Rules = strings.Join(rules, " ")
}

// findingRow builds the row of finding f, pinned to call (nil: none).
func (t *Timeline) findingRow(f detect.Finding, call *CallRow, attr *correlate.Result) *FindingRow {
	fr := &FindingRow{ID: f.ID, Anchor: "finding-" + anchorID(f.ID), Rule: f.Rule, Severity: string(f.Severity), Title: f.Title,
		Detail: cut(strings.TrimSpace(f.Detail), maxDetail), Claim: f.Claim, Call: call, Blocked: f.Blocked, Evidence: seqs(f.Evidence, 20)}
	var at time.Time
	if attr != nil && len(f.Evidence) > 0 {
		if e := eventAt(attr.Events, f.Evidence[0]); e != nil {
			at = e.TS
		}
	}
	if at.IsZero() && call != nil {
		fr.AtMS, fr.At = call.AtMS, call.At
	} else {
		fr.AtMS, fr.At = t.ms(at), t.clock(at)
	}
	fw := f.Frameworks
	for _, x := range []Framework{{"ATT&CK", strings.Join(fw.ATTACK, ", ")}, {"ATLAS", strings.Join(fw.ATLAS, ", ")},
		{"OWASP", strings.Join(fw.OWASPLLM, ", ")}, {"SAIF", strings.Join(fw.SAIF, ", ")}} {
		if x.IDs != "" {
			fr.Frameworks = append(fr.Frameworks, x)
		}
	}
	return fr
}

// anchorID makes an id safe in a URL fragment and an HTML id.
func anchorID(id string) string {
	var b strings.Builder
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.':
			b.WriteRune(c)
		default:
			fmt.Fprintf(&b, "~%x", c)
		}
	}
	return b.String()
}

// cut keeps s to max bytes at a character boundary, marking the cut.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// capList keeps at most max items, then says how many more.
func capList(items []string, max int) []string {
	if len(items) <= max {
		return items
	}
	return append(slices.Clone(items[:max]), fmt.Sprintf("… %d more", len(items)-max))
}

// eventAt finds the event with seq in evs, which are in seq order.
func eventAt(evs []*event.Event, seq uint64) *event.Event {
	i, ok := slices.BinarySearchFunc(evs, seq, func(e *event.Event, s uint64) int { return cmp.Compare(e.Seq, s) })
	if !ok {
		return nil
	}
	return evs[i]
}

// shown is an event as a page shows it: masked when the report is.
func (r *Report) shown(e *event.Event) *event.Event {
	if r.redacted {
		return redact.Event(e)
	}
	return e
}

// shownText is a string taken from an event or a command line, masked
// when the report is.
func (r *Report) shownText(s string) string {
	if r.redacted {
		return redact.String(s)
	}
	return s
}

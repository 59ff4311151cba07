package otlp

import (
	"sort"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Limits on what one span carries. A session's spans are what a person
// reads in a trace view; past these the rest is counted, not sent.
const (
	// MaxEffects is how many file and network effects one span carries
	// as events (distinct ones: a file read ten times is one event with
	// polygraph.count 10). Evidence of findings, writes and network come
	// first, then reads, then failed opens.
	MaxEffects = 128
	// MaxProcessSpans is how many process spans one tool call (or the
	// unattributed activity under the root) gets, in exec order.
	MaxProcessSpans = 1000
	// maxAttr caps a string attribute (a command line of 64 KiB).
	maxAttr = 4096
)

// rootGroup is the owner of activity no tool call explains; a tool call's
// activity is owned by its id, and "" is the agent's own (not exported).
const rootGroup = "\x00root"

// state is what the exporter remembers of one session between updates:
// what it has sent, so each span and finding leaves once.
type state struct {
	id    string
	trace pcommon.TraceID
	// sent maps each span sent to the last seq of the snapshot it was
	// built from: effects after that seq can no longer join it.
	sent  map[pcommon.SpanID]uint64
	found map[string]bool // findings sent, by findingKey

	// The span ids, derived once: every update asks for them again.
	rootID pcommon.SpanID
	calls  map[string]pcommon.SpanID
	execs  map[string]pcommon.SpanID
}

func newState(id string) *state {
	return &state{id: id, trace: TraceID(id), sent: map[pcommon.SpanID]uint64{}, found: map[string]bool{},
		rootID: RootSpanID(id), calls: map[string]pcommon.SpanID{}, execs: map[string]pcommon.SpanID{}}
}

// callID is CallSpanID of the session.
func (st *state) callID(toolCallID string) pcommon.SpanID {
	id, ok := st.calls[toolCallID]
	if !ok {
		id = CallSpanID(st.id, toolCallID)
		st.calls[toolCallID] = id
	}
	return id
}

// execID is ExecSpanID of the session.
func (st *state) execID(execID string) pcommon.SpanID {
	id, ok := st.execs[execID]
	if !ok {
		id = ExecSpanID(st.id, execID)
		st.execs[execID] = id
	}
	return id
}

// payload is what one update sends: spans and log records, and how many.
type payload struct {
	traces ptrace.Traces
	logs   plog.Logs
	spans  int
	logN   int
}

// builder turns one snapshot into the spans and log records not sent yet.
type builder struct {
	a     *analysis.Analysis
	st    *state
	final bool
	res   pcommon.Resource // the session's resource, shared by traces and logs

	evs        []*event.Event
	ats        *correlate.Attributions // aligned with evs; nil without a session
	tree       *lineage.Tree
	calls      map[string]*transcript.ToolCall
	lastSeq    uint64
	start, end time.Time // the session's

	groups  []string // by lineage.Image.Index, for exec images: the owner
	capped  []bool   // by lineage.Image.Index: over MaxProcessSpans
	ncapped map[string]int
	verdict map[string]integrity.Result

	spans    ptrace.SpanSlice
	records  plog.LogRecordSlice
	out      map[pcommon.SpanID]*spanOut // the spans this update sends
	order    []pcommon.SpanID
	evidence map[uint64]bool
}

// spanOut is a span being built, with the effects it will carry.
type spanOut struct {
	span    ptrace.Span
	group   string
	effects *effects
}

// build returns the payload of the snapshot a: every span and finding
// that is settled and not sent yet (everything left, when final). It
// records what it sends in st.
func build(a *analysis.Analysis, st *state, final bool, res func(pcommon.Resource)) payload {
	b := &builder{a: a, st: st, final: final, out: map[pcommon.SpanID]*spanOut{}, evidence: map[uint64]bool{},
		calls: map[string]*transcript.ToolCall{}, ncapped: map[string]int{}, verdict: map[string]integrity.Result{}}
	p := payload{traces: ptrace.NewTraces(), logs: plog.NewLogs()}
	rs := p.traces.ResourceSpans().AppendEmpty()
	res(rs.Resource())
	b.res = rs.Resource()
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scopeName)
	b.spans = ss.Spans()
	rl := p.logs.ResourceLogs().AppendEmpty()
	b.res.CopyTo(rl.Resource())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(scopeName)
	b.records = sl.LogRecords()

	b.index()
	b.callSpans()
	b.processSpans()
	if final {
		b.rootSpan()
	}
	b.placeEffects()
	b.findings()
	b.finish()
	p.spans, p.logN = b.spans.Len(), b.records.Len()
	return p
}

// index prepares the lookups the spans need.
func (b *builder) index() {
	a := b.a
	if a.Transcript != nil {
		for _, tc := range a.Transcript.ToolCalls {
			b.calls[tc.ID] = tc
		}
	}
	if a.Attribution != nil {
		b.evs, b.ats, b.tree = a.Attribution.Events, &a.Attribution.Attributions, a.Attribution.Tree
		if b.ats.Len() != len(b.evs) {
			b.ats = nil // not the attribution of these events: export none of them
		}
	}
	if len(b.evs) > 0 {
		b.lastSeq = b.evs[len(b.evs)-1].Seq
	}
	for _, r := range a.Verdicts {
		b.verdict[r.ExecID] = r
	}
	for _, f := range a.Findings {
		for _, s := range f.Evidence {
			b.evidence[s] = true
		}
	}
	b.start, b.end = sessionTimes(a, b.evs)
	if b.tree == nil || b.ats == nil {
		return
	}
	imgs := b.tree.Images()
	b.groups, b.capped = make([]string, len(imgs)), make([]bool, len(imgs))
	count := map[string]int{}
	for _, im := range imgs {
		if im.Exec == nil {
			continue
		}
		g := b.groupOf(b.indexOf(im.Exec))
		if g == "" {
			continue
		}
		b.groups[im.Index] = g
		if count[g]++; count[g] > MaxProcessSpans {
			b.capped[im.Index] = true
			b.ncapped[g]++
		}
	}
}

// sessionTimes returns when the session began and ended: the recording's
// times, else the first and last event's, else the transcript's.
func sessionTimes(a *analysis.Analysis, evs []*event.Event) (start, end time.Time) {
	if a.Meta != nil {
		start, end = a.Meta.StartedAt, a.Meta.EndedAt
	}
	if len(evs) > 0 {
		if start.IsZero() {
			start = evs[0].TS
		}
		if last := evs[len(evs)-1].TS; end.IsZero() || last.After(end) {
			end = last
		}
	}
	if tr := a.Transcript; tr != nil {
		if start.IsZero() {
			start = tr.StartedAt
		}
		if tr.EndedAt.After(end) {
			end = tr.EndedAt
		}
		for _, tc := range tr.ToolCalls {
			if start.IsZero() || !tc.StartedAt.IsZero() && tc.StartedAt.Before(start) {
				start = tc.StartedAt
			}
			if tc.EndedAt.After(end) {
				end = tc.EndedAt
			}
		}
	}
	if end.Before(start) {
		end = start
	}
	return start, end
}

// indexOf returns the index of e among the events (they are in seq order).
func (b *builder) indexOf(e *event.Event) int {
	i := sort.Search(len(b.evs), func(i int) bool { return b.evs[i].Seq >= e.Seq })
	if i < len(b.evs) && b.evs[i] == e {
		return i
	}
	return -1
}

// groupOf returns the owner of event i: its tool call, rootGroup for
// activity nothing explains, "" for the agent's own.
func (b *builder) groupOf(i int) string {
	if i < 0 || b.ats == nil {
		return ""
	}
	at := b.ats.At(i)
	switch {
	case at.ToolCallID != "":
		if b.calls[at.ToolCallID] == nil {
			return rootGroup
		}
		return at.ToolCallID
	case at.Reason == correlate.ReasonUnattributed:
		return rootGroup
	}
	return ""
}

// groupSpan is the span a group's activity hangs under when no process
// span of the group is above it.
func (b *builder) groupSpan(g string) pcommon.SpanID {
	if g == rootGroup {
		return b.st.rootID
	}
	return b.st.callID(g)
}

// settleGrace is how long after its result a call's span waits before it
// leaves a live export: the decisions just after a result are the ones
// that attribute the call's last events and findings (an agent that
// rewrites its transcript after each step names the call and its result
// at once), and a finding has to be on the span when it leaves.
const settleGrace = 2 * time.Second

// settled reports whether a tool call is over as far as the export is
// concerned: its result came back (or it was refused) settleGrace ago and
// the process it started has exited. Its span then leaves with the next
// update.
func (b *builder) settled(tc *transcript.ToolCall) bool {
	if b.final {
		return true
	}
	if tc.EndedAt.IsZero() && !tc.Rejected {
		return false
	}
	if !tc.EndedAt.IsZero() && time.Since(tc.EndedAt) < settleGrace {
		return false
	}
	if b.a.Attribution == nil {
		return true
	}
	act := b.a.Attribution.ByCall[tc.ID]
	return act == nil || act.RootExecID == "" || act.RootExit != nil
}

// newSpan starts a span this update sends.
func (b *builder) newSpan(id, parent pcommon.SpanID, name, group string, start, end time.Time) *spanOut {
	s := ptrace.NewSpan()
	s.SetTraceID(b.st.trace)
	s.SetSpanID(id)
	if !parent.IsEmpty() {
		s.SetParentSpanID(parent)
	}
	s.SetName(name)
	s.SetKind(ptrace.SpanKindInternal)
	if end.Before(start) {
		end = start
	}
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(end))
	o := &spanOut{span: s, group: group, effects: &effects{}}
	b.out[id] = o
	b.order = append(b.order, id)
	return o
}

// sentOrSending reports whether span id left in an earlier update or
// leaves in this one.
func (b *builder) sentOrSending(id pcommon.SpanID) bool {
	_, sent := b.st.sent[id]
	return sent || b.out[id] != nil
}

// callSpans adds an execute_tool span for every settled tool call not sent.
func (b *builder) callSpans() {
	if b.a.Transcript == nil {
		return
	}
	root := b.st.rootID
	for _, tc := range b.a.Transcript.ToolCalls {
		id := b.st.callID(tc.ID)
		if b.sentOrSending(id) || !b.settled(tc) {
			continue
		}
		var act *correlate.CallActivity
		if b.a.Attribution != nil {
			act = b.a.Attribution.ByCall[tc.ID]
		}
		start, end, timing := b.callTimes(tc, act)
		o := b.newSpan(id, root, opExecuteTool+" "+tc.Tool, tc.ID, start, end)
		m := o.span.Attributes()
		putID(m, attrOperation, opExecuteTool)
		putStr(m, attrToolName, tc.Tool)
		putID(m, attrToolCallID, tc.ID)
		putID(m, attrToolType, "function") // the agent's own client-side tools
		putID(m, attrToolKind, string(tc.Kind))
		putID(m, attrToolTimed, timing)
		putStr(m, attrToolCommand, tc.Command)
		putStrs(m, attrToolPaths, tc.Paths)
		putStrs(m, attrToolURLs, tc.URLs)
		putStr(m, attrToolParent, tc.ParentID)
		putBool(m, attrToolIsError, tc.IsError)
		putBool(m, attrToolRejected, tc.Rejected)
		putBool(m, attrToolBg, tc.Background)
		if tc.ExitCode != nil {
			m.PutInt(attrToolExit, int64(*tc.ExitCode))
		}
		failed := ""
		switch {
		case tc.IsError:
			failed = "tool_error"
		case tc.ExitCode != nil && *tc.ExitCode != 0:
			failed = "exit " + strconv.Itoa(*tc.ExitCode)
		}
		if act != nil {
			b.callActivity(m, act)
			if x := act.RootExit; x != nil && x.ExitCode() != nil {
				m.PutInt(attrCallRootExit, int64(*x.ExitCode()))
				if *x.ExitCode() != 0 && failed == "" {
					failed = "exit " + strconv.Itoa(*x.ExitCode())
				}
			}
			if act.RootExecID != "" {
				b.attribution(m, b.ats, b.rootExecIndex(act.RootExecID))
			} else if len(act.Events) > 0 {
				putID(m, attrReason, string(correlate.ReasonInProcess))
				putID(m, attrConfidence, confidence(correlate.ReasonInProcess, "path"))
			}
		}
		if n := b.ncapped[tc.ID]; n > 0 {
			m.PutInt(attrSpansCapped, int64(n))
		}
		if failed != "" {
			putID(m, attrErrorType, failed)
			o.span.Status().SetCode(ptrace.StatusCodeError)
			o.span.Status().SetMessage(failed)
		}
	}
}

// callTimes returns when a tool call ran: the transcript's times, where
// the agent wrote them, else its first and last event's.
func (b *builder) callTimes(tc *transcript.ToolCall, act *correlate.CallActivity) (start, end time.Time, timing string) {
	start, end, timing = tc.StartedAt, tc.EndedAt, "transcript"
	var first, last time.Time
	if act != nil {
		for _, s := range act.Events {
			if i := b.seqIndex(s); i >= 0 {
				t := b.evs[i].TS
				if first.IsZero() || t.Before(first) {
					first = t
				}
				if t.After(last) {
					last = t
				}
			}
		}
	}
	if start.IsZero() {
		start, timing = first, "kernel"
	}
	if start.IsZero() {
		start, timing = b.start, "session"
	}
	if end.IsZero() {
		end = last
		if timing == "transcript" {
			timing = "transcript-start"
		}
	}
	if end.Before(start) {
		end = start
	}
	return start, end, timing
}

// seqIndex returns the index of the event with this seq, -1 for none.
func (b *builder) seqIndex(seq uint64) int {
	i := sort.Search(len(b.evs), func(i int) bool { return b.evs[i].Seq >= seq })
	if i < len(b.evs) && b.evs[i].Seq == seq {
		return i
	}
	return -1
}

// rootExecIndex returns the index of the exec of a call's root image.
func (b *builder) rootExecIndex(execID string) int {
	if b.tree == nil {
		return -1
	}
	if im := b.tree.Image(execID); im != nil && im.Exec != nil {
		return b.indexOf(im.Exec)
	}
	return -1
}

// callActivity puts what the kernel saw a call do on its span: counts,
// and the resources of its processes that have exited.
func (b *builder) callActivity(m pcommon.Map, act *correlate.CallActivity) {
	m.PutInt(attrCallEvents, int64(len(act.Events)))
	putInt(m, attrCallLate, int64(len(act.Late)))
	putInt(m, attrCallReads, int64(len(act.Reads)))
	putInt(m, attrCallWrites, int64(len(act.Writes)))
	putInt(m, attrCallConnects, int64(len(act.Connects)))
	var cpu, rss, rd, wr uint64
	exited := 0
	for _, s := range act.Events {
		i := b.seqIndex(s)
		if i < 0 || b.evs[i].Kind != event.KindExit {
			continue
		}
		x := b.evs[i]
		exited++
		cpu += x.CPUNS()
		rss = max(rss, x.MaxRSSKB())
		rd += x.ReadBytes()
		wr += x.WriteBytes()
	}
	procs := map[string]bool{}
	for _, e := range act.Execs {
		if b.tree != nil {
			if im := b.tree.Image(e.ExecID); im != nil {
				procs[im.Process.Top().ID] = true
				continue
			}
		}
		procs[e.ExecID] = true
	}
	putInt(m, attrProcesses, int64(len(procs)))
	putInt(m, attrRunning, int64(max(0, len(procs)-exited)))
	putInt(m, attrCPU, int64(cpu))
	putInt(m, attrMaxRSS, int64(rss))
	putInt(m, attrReadBytes, int64(rd))
	putInt(m, attrWriteBytes, int64(wr))
}

// attribution puts the basis of event i's attribution on m.
func (b *builder) attribution(m pcommon.Map, ats *correlate.Attributions, i int) {
	if i < 0 || ats == nil {
		return
	}
	at := ats.At(i)
	putID(m, attrReason, string(at.Reason))
	putID(m, attrDetail, at.Detail)
	putID(m, attrConfidence, confidence(at.Reason, at.Detail))
	putBool(m, attrAfterReturn, at.AfterReturn)
}

// confidence says how sure an attribution is, from its basis: lineage
// from the process that carried the call's command is as sure as the
// process tree; a match by search helper, path and time window, or host
// is a judgement; nothing explains what is unattributed. docs/fleet.md
// gives the table.
func confidence(r correlate.Reason, detail string) string {
	switch r {
	case correlate.ReasonLineage:
		if detail == "search-helper" {
			return "medium"
		}
		return "high"
	case correlate.ReasonInProcess:
		return "medium"
	case correlate.ReasonAgentAPI, correlate.ReasonAgentBookkeeping:
		return "high"
	}
	return "none"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

package detect

import (
	"cmp"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Input is one session to check.
type Input struct {
	Events     []*event.Event
	Transcript *transcript.Transcript // nil when no transcript was found
	// Attribution is correlate's verdict on Events against Transcript; nil
	// when there is no transcript. The kernel-only rules then run with
	// every event "unattributed", and the rules that need a transcript
	// (claims, unattributed activity) do not run.
	Attribution *correlate.Result
	Meta        session.Meta
	Policy      *policy.Policy // nil: policy.Default()
}

// Run applies every enabled rule and returns the findings sorted by
// severity (highest first), then by their first evidence seq, with ids
// F1…Fn in that order.
func Run(in Input) []Finding {
	a := newAnalysis(in)
	// sensitive-read and agent-config-read run first: unexpected-egress
	// escalates on what they found.
	rules := []struct {
		id  string
		run func() []Finding
	}{
		{policy.RuleSensitiveRead, a.sensitiveReads},
		{policy.RuleAgentConfigRead, a.agentConfigReads},
		{policy.RuleClaimTestsNotRun, a.claimTests},
		{policy.RuleClaimEditMismatch, a.claimEdits},
		{policy.RuleClaimInstallMismatch, a.claimInstalls},
		{policy.RuleUnexpectedEgress, a.unexpectedEgress},
		{policy.RuleWriteThenExec, a.writeThenExec},
		{policy.RuleMassPublish, a.massPublish},
		{policy.RuleUnattributed, a.unattributedActivity},
		{policy.RuleSandboxTamper, a.sandboxTamper},
		{policy.RuleFilelessExec, a.filelessExec},
	}
	var out []Finding
	for _, r := range rules {
		fs := r.run() // run even when disabled: later rules use what earlier ones saw
		if !a.pol.Enabled(r.id) {
			continue
		}
		override := Severity(a.pol.SeverityOverride(r.id))
		for _, f := range fs {
			if override != "" && f.Severity != SeverityInfo {
				f.Severity = override
			}
			out = append(out, f)
		}
	}
	Sort(out)
	for i := range out {
		out[i].ID = fmt.Sprintf("F%d", i+1)
	}
	return out
}

// Sort orders findings by severity (highest first), then first evidence
// seq (findings without evidence last), then rule and title.
func Sort(fs []Finding) {
	first := func(f Finding) uint64 {
		if len(f.Evidence) == 0 {
			return math.MaxUint64
		}
		return f.Evidence[0]
	}
	slices.SortStableFunc(fs, func(x, y Finding) int {
		return cmp.Or(
			cmp.Compare(y.Severity.Rank(), x.Severity.Rank()),
			cmp.Compare(first(x), first(y)),
			cmp.Compare(x.Rule, y.Rule),
			cmp.Compare(x.Title, y.Title),
		)
	})
}

// analysis holds the indexes every rule shares.
type analysis struct {
	in     Input
	pol    *policy.Policy
	home   string
	events []*event.Event // in seq order
	// ownEvents says events is the analysis's own copy of the caller's
	// slice, not the slice itself (see learn).
	ownEvents bool
	procs     *procs

	attr     *attrIndex // nil without attribution
	calls    map[string]*transcript.ToolCall
	activity map[string]*correlate.CallActivity
	agent    map[string]bool // the agent's own images

	dnsByPID  map[uint32][]*event.Event
	answers   map[netip.Addr]*event.Event
	binds     map[uint16]bool
	acceptsLo []time.Time

	// facts[i] is what the rules ask of events[i]. execs[n] is the index
	// of the n-th exec event, execAt[n] its time, execCall[n] the tool
	// call it is attributed to; execNums are the numbers 0…n-1, to say
	// "every exec" or "the first k"; changes are the file changes. The
	// claim rules walk those for every claim. execsInOrder and
	// changesInOrder say the lists' times are all set and never go back:
	// what happened before a claim is then where the list starts.
	facts          []fact
	execs          []int32
	execAt         []time.Time
	execCall       []string
	execNums       []int32
	changes        []change
	execsInOrder   bool
	changesInOrder bool
	paths          pathIndex
	// commands caches the command-set verdicts on exec events, by command
	// set and exec number.
	commands [numCommandSets][]int8

	// secretReads are the seqs of reads that made a sensitive-read or
	// agent-config-read finding of medium severity or more.
	secretReads []uint64
}

func newAnalysis(in Input) *analysis {
	a := &analysis{in: in, pol: in.Policy, home: in.Meta.Home, events: in.Events,
		calls: map[string]*transcript.ToolCall{}, activity: map[string]*correlate.CallActivity{},
		agent: map[string]bool{}}
	if a.pol == nil {
		a.pol = policy.Default()
	}
	if in.Transcript != nil {
		for _, c := range in.Transcript.ToolCalls {
			a.calls[c.ID] = c
		}
	}
	if r := in.Attribution; r != nil {
		a.attr = newAttrIndex(r.Attributions)
		for _, ca := range r.Calls {
			if ca != nil && ca.Call != nil {
				a.activity[ca.Call.ID] = ca
				if _, ok := a.calls[ca.Call.ID]; !ok {
					a.calls[ca.Call.ID] = ca.Call
				}
			}
		}
		for id, ca := range r.ByCall {
			if _, ok := a.activity[id]; !ok && ca != nil {
				a.activity[id] = ca
			}
		}
		for _, id := range r.AgentExecIDs {
			a.agent[id] = true
		}
	}
	a.learn()
	if in.Attribution == nil && in.Meta.RootPID != 0 {
		// Without a transcript the agent is taken to be the command run
		// started (the images of the root pid) and the agent programs it
		// starts directly (node codex.js → codex), with their forks up to
		// the point they exec something else.
		var queue []*proc
		for _, p := range a.procs.byID {
			if p.pid == uint32(in.Meta.RootPID) {
				a.agent[p.id] = true
				queue = append(queue, p)
			}
		}
		for len(queue) > 0 {
			p := queue[0]
			queue = queue[1:]
			for _, c := range p.children {
				cp := a.procs.byID[c]
				if cp == nil || a.agent[c] || cp.exec != nil && !a.pol.AgentProgram(a.procs.names(c)) {
					continue
				}
				a.agent[c] = true
				queue = append(queue, cp)
			}
		}
	}
	if a.attr == nil {
		for id := range a.agent {
			if p := a.procs.byID[id]; p != nil {
				for _, i := range p.events {
					a.facts[i].flags |= fOwn
				}
			}
		}
	}
	return a
}

// finding builds a finding of rule with the rule's framework ids (and its
// escalated ids when escalated).
func (a *analysis) finding(rule string, sev Severity, title, detail, call string, evidence []uint64, escalated bool) Finding {
	info, _ := policy.Rule(rule)
	fw := info.Frameworks
	if escalated {
		fw = fw.Merge(info.Escalated)
	}
	slices.Sort(evidence)
	evidence = slices.Compact(evidence)
	if evidence == nil {
		evidence = []uint64{}
	}
	return Finding{Rule: rule, Severity: sev, Title: title, Detail: detail, ToolCallID: call,
		Evidence: evidence, Frameworks: Frameworks(fw)}
}

// severity turns a policy severity name into a Severity, def when empty.
func severity(name string, def Severity) Severity {
	if name == "" {
		return def
	}
	return Severity(name)
}

// ruleSeverity is the rule's default severity from the table.
func ruleSeverity(rule string) Severity {
	info, _ := policy.Rule(rule)
	return severity(info.Severity, SeverityMedium)
}

// attribution returns the verdict on e; ok is false without attribution.
func (a *analysis) attribution(e *event.Event) (correlate.Attribution, bool) {
	if a.attr == nil {
		return correlate.Attribution{}, false
	}
	at, ok := a.attr.get(e.Seq)
	if !ok {
		return correlate.Attribution{Seq: e.Seq, Reason: correlate.ReasonUnattributed}, true
	}
	return at, true
}

// callOf returns the tool call e is attributed to, "" for none.
func (a *analysis) callOf(e *event.Event) string {
	at, _ := a.attribution(e)
	return at.ToolCallID
}

// agentOwn reports whether e is the agent's own expected activity: its
// model API traffic and bookkeeping, or (without attribution) anything of
// the root process's images.
func (a *analysis) agentOwn(e *event.Event) bool {
	if at, ok := a.attribution(e); ok {
		return at.ToolCallID == "" && (at.Reason == correlate.ReasonAgentAPI || at.Reason == correlate.ReasonAgentBookkeeping)
	}
	return a.agent[e.ExecID]
}

// actor says who did e, for a finding's detail, and the tool call if any.
func (a *analysis) actor(e *event.Event) (call, who string) {
	if at, ok := a.attribution(e); ok {
		switch {
		case at.ToolCallID != "":
			who = "tool call " + a.describeCall(at.ToolCallID)
			if at.AfterReturn {
				who += ", after the call had returned,"
			}
			return at.ToolCallID, who + " in " + a.procs.describe(e.ExecID)
		case at.Reason == correlate.ReasonAgentAPI || at.Reason == correlate.ReasonAgentBookkeeping:
			return "", "the agent itself, " + a.procs.describe(e.ExecID)
		}
	}
	if a.attr == nil && a.agent[e.ExecID] {
		return "", "the traced command itself (no transcript to attribute it), " + a.procs.describe(e.ExecID)
	}
	return "", "an unattributed process, " + a.procs.describe(e.ExecID)
}

// describeCall names a tool call with what it asked for.
func (a *analysis) describeCall(id string) string {
	c := a.calls[id]
	if c == nil {
		return id
	}
	what := c.Tool
	switch {
	case c.Command != "":
		what = excerpt(c.Command, 100)
	case len(c.Paths) > 0:
		what = c.Tool + " " + c.Paths[0]
	}
	return fmt.Sprintf("%s (`%s`)", id, what)
}

// display shows a path with its home directory as "~".
func (a *analysis) display(p string) string {
	if h, ok := homeRel(p, a.home); ok {
		return h
	}
	return p
}

func homeRel(p, home string) (string, bool) {
	home = strings.TrimRight(home, "/")
	if home != "" && strings.HasPrefix(p, home+"/") {
		return "~/" + p[len(home)+1:], true
	}
	return "", false
}

// succeeded reports whether e did what it asked (no -errno result). A
// connect in progress (EINPROGRESS, a non-blocking connect) counts.
func succeeded(e *event.Event) bool {
	if e.Result == nil || *e.Result >= 0 {
		return true
	}
	return e.Kind == event.KindConnect && *e.Result == -115
}

// removed returns the path e removed or moved away, "" for other events.
func removed(e *event.Event) string {
	if !succeeded(e) {
		return ""
	}
	switch e.Kind {
	case event.KindUnlink, event.KindRename:
		return e.Path
	}
	return ""
}

func isLoopback(addr string) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsUnspecified()
}

// list joins up to n items, saying how many more there were.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// capped keeps at most n seqs (the first ones), so a finding about a
// flood of events stays readable.
func capped(seqs []uint64, n int) []uint64 {
	if len(seqs) > n {
		return seqs[:n]
	}
	return seqs
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// attrIndex finds the attribution of an event by seq: a dense table when
// the seqs are (as recorded) nearly gap-free, a binary search otherwise.
type attrIndex struct {
	ats   []correlate.Attribution // sorted by seq
	base  uint64
	dense []int32 // seq-base → 1 + index into ats, 0 for none
}

func newAttrIndex(ats []correlate.Attribution) *attrIndex {
	x := &attrIndex{ats: ats}
	if !x.index() { // not in seq order
		x.ats = slices.Clone(ats)
		slices.SortStableFunc(x.ats, func(p, q correlate.Attribution) int { return cmp.Compare(p.Seq, q.Seq) })
		x.index()
	}
	return x
}

// index builds the dense table when the seqs allow. It reports false,
// with no table, when ats are not sorted by seq.
func (x *attrIndex) index() bool {
	n := len(x.ats)
	if n == 0 {
		return true
	}
	lo, hi := x.ats[0].Seq, x.ats[n-1].Seq
	if hi < lo || hi-lo >= uint64(4*n+1024) {
		x.dense = nil
		return slices.IsSortedFunc(x.ats, func(p, q correlate.Attribution) int { return cmp.Compare(p.Seq, q.Seq) })
	}
	x.base, x.dense = lo, make([]int32, hi-lo+1)
	for i, at := range x.ats {
		if i > 0 && at.Seq < x.ats[i-1].Seq || at.Seq > hi {
			x.dense = nil
			return false
		}
		x.dense[at.Seq-lo] = int32(i) + 1
	}
	return true
}

func (x *attrIndex) get(seq uint64) (correlate.Attribution, bool) {
	if at := x.at(seq); at != nil {
		return *at, true
	}
	return correlate.Attribution{}, false
}

// at returns the attribution with seq, nil for none.
func (x *attrIndex) at(seq uint64) *correlate.Attribution {
	if x.dense != nil {
		if seq < x.base || seq-x.base >= uint64(len(x.dense)) || x.dense[seq-x.base] == 0 {
			return nil
		}
		return &x.ats[x.dense[seq-x.base]-1]
	}
	i, ok := slices.BinarySearchFunc(x.ats, seq, func(at correlate.Attribution, s uint64) int { return cmp.Compare(at.Seq, s) })
	if !ok {
		return nil
	}
	return &x.ats[i]
}

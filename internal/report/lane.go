package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Lane is what the kernel saw one call do, drawn: a bar for each of its
// processes (x and width in 0..1000 of the call's window, y its row,
// nested under its parent), its file, network and process events as
// marks on their process's bar.
type Lane struct {
	// Bars are the processes; Strips their events, a path for each
	// kind on each bar; Marks the findings' evidence events.
	Bars, Strips, Marks []Mark
	Rows                int
	// BarsMore counts the processes the cap left out.
	BarsMore int
	// From and To bound the window: the call's start (or its first
	// event) to its result (or its last event).
	From, To string
}

// ProcRow is one process of a call, in the call's own view.
type ProcRow struct {
	PID                 uint32
	Depth               int
	Command             string
	Start, Dur, Exit    string
	CPU, RSS, Read, Wrt string
}

// laneProc is one process of a call's lane while it is built.
type laneProc struct {
	p          *lineage.Process
	row, depth int
	first      time.Time
	last       time.Time
	exit       *event.Event
}

// lane draws call a's processes and events into row.
func (t *Timeline) lane(row *CallRow, a *correlate.CallActivity, attr *correlate.Result) {
	var evs []*event.Event
	for _, seq := range a.Events {
		if e := eventAt(attr.Events, seq); e != nil {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 {
		return
	}
	from, to := a.Call.StartedAt, a.Call.EndedAt
	for _, e := range evs {
		if e.TS.IsZero() {
			continue
		}
		if from.IsZero() || e.TS.Before(from) {
			from = e.TS
		}
		if e.TS.After(to) {
			to = e.TS
		}
	}
	if !to.After(from) {
		to = from.Add(time.Millisecond)
	}
	span := float64(to.Sub(from))
	x := func(at time.Time) float64 { return min(1000, max(0, float64(at.Sub(from))/span*1000)) }
	lane := &Lane{From: t.clock(from), To: t.clock(to)}
	row.Lane = lane

	// The processes, in order of their first event; each nested under
	// the nearest ancestor that is the call's too.
	procs := map[*lineage.Process]*laneProc{}
	var order []*laneProc
	procOf := func(e *event.Event) *laneProc {
		var p *lineage.Process
		if attr.Tree != nil {
			if im := attr.Tree.Image(e.ExecID); im != nil {
				p = im.Process
			}
		}
		lp := procs[p]
		if lp == nil {
			lp = &laneProc{p: p}
			procs[p] = lp
			order = append(order, lp)
		}
		if !e.TS.IsZero() {
			if lp.first.IsZero() {
				lp.first = e.TS
			}
			lp.last = e.TS
		}
		if e.Kind == event.KindExit {
			lp.exit = e
		}
		return lp
	}
	for _, e := range evs {
		procOf(e)
	}
	for _, lp := range order {
		for par := parentProcess(lp.p); par != nil; par = parentProcess(par) {
			if pp := procs[par]; pp != nil {
				lp.depth = pp.depth + 1
				break
			}
		}
	}
	rows := nestedOrder(order, procs)
	var ioRead, ioWrite uint64
	for i, lp := range rows {
		lp.row = i
		if lp.exit != nil {
			ioRead += lp.exit.ReadBytes()
			ioWrite += lp.exit.WriteBytes()
		}
		if i >= maxBars {
			lp.row = maxBars - 1
			lane.BarsMore++
			continue
		}
		label, cls := t.procLabel(lp, a, attr)
		end, state := lp.last, ""
		switch {
		case lp.exit != nil && lp.exit.Signal() != 0:
			state = fmt.Sprintf("killed by signal %d", lp.exit.Signal())
			cls += " failed"
		case lp.exit != nil && lp.exit.ExitCode() != nil:
			state = fmt.Sprintf("exit %d", *lp.exit.ExitCode())
			if *lp.exit.ExitCode() != 0 {
				cls += " failed"
			}
		case lp.p != nil && lp.p.ExitEvent() == nil:
			end, state, cls = to, "no exit recorded", cls+" running"
		}
		if lp.first.IsZero() {
			lp.first, lp.last = from, from
		}
		if end.IsZero() {
			end = lp.last
		}
		bx := x(lp.first)
		lane.Bars = append(lane.Bars, Mark{X: bx, W: max(2, x(end)-bx), Y: i, Class: cls,
			Title: fmt.Sprintf("%s (pid %d): %s → %s, %s", cut(label, maxLabel), pidOf(lp), t.clock(lp.first), t.clock(end), state)})
		pr := &ProcRow{PID: pidOf(lp), Depth: lp.depth, Command: cut(label, 4*maxLabel), Start: t.clock(lp.first), Exit: state}
		if lp.exit != nil {
			if d := lp.exit.DurationNS(); d > 0 {
				pr.Dur = time.Duration(d).Round(100 * time.Microsecond).String()
			}
			if c := lp.exit.CPUNS(); c > 0 {
				pr.CPU = time.Duration(c).Round(100 * time.Microsecond).String()
			}
			if m := lp.exit.MaxRSSKB(); m > 0 {
				pr.RSS = human.Bytes(int64(m) << 10)
			}
			pr.Read, pr.Wrt = human.Bytes(int64(lp.exit.ReadBytes())), human.Bytes(int64(lp.exit.WriteBytes()))
		}
		row.Procs = append(row.Procs, pr)
	}
	lane.Rows = min(len(rows), maxBars)
	if ioRead+ioWrite > 0 {
		row.IO = fmt.Sprintf("read %s, wrote %s", human.Bytes(int64(ioRead)), human.Bytes(int64(ioWrite)))
	}
	// The events of one kind on one bar are one SVG path of short
	// marks, one a stretch of markWidth, with one hover text saying how
	// many and the first: a program that opens a thousand files in a
	// second is a dense strip, not a thousand elements, and the page of a
	// session of a million events stays small. Evidence of a finding is a
	// mark of its own, with its own hover text.
	type strip struct {
		row int
		cls string
	}
	strips := map[strip]*Mark{}
	var stripOrder []strip
	for _, e := range evs {
		cls := markClass(e)
		if cls == "" {
			continue
		}
		mx, y := x(e.TS), procs[procKey(e, attr)].row
		if sev, ok := t.evidence[e.Seq]; ok && len(lane.Marks) < maxEvidence {
			lane.Marks = append(lane.Marks, Mark{X: mx, W: 3, Y: y, Class: cls + " evidence sev-" + sev,
				Title: fmt.Sprintf("%s %s %s (pid %d, event %d)", t.clock(e.TS), e.Kind, cut(t.r.shownText(eventWhat(t.r.shown(e))), maxLabel), e.PID, e.Seq)})
			continue
		}
		k := strip{y, cls}
		m := strips[k]
		if m == nil {
			m = &Mark{Y: y, Class: cls, kind: string(e.Kind), from: t.clock(e.TS),
				first: fmt.Sprintf("%s (pid %d, event %d)", cut(t.r.shownText(eventWhat(t.r.shown(e))), maxLabel), e.PID, e.Seq),
				cells: map[int]bool{}}
			strips[k] = m
			stripOrder = append(stripOrder, k)
		}
		m.n++
		m.cells[int(mx/markWidth)] = true
	}
	for _, k := range stripOrder {
		m := strips[k]
		cells := make([]int, 0, len(m.cells))
		for c := range m.cells {
			cells = append(cells, c)
		}
		slices.Sort(cells)
		// Cells next to each other are one run: a program reading all
		// along is one long mark.
		var d strings.Builder
		for i := 0; i < len(cells); {
			j := i + 1
			for j < len(cells) && cells[j] == cells[j-1]+1 {
				j++
			}
			w := max(3, float64(j-i)*markWidth-1)
			fmt.Fprintf(&d, "M%.0f %dh%.0fv11h-%.0fz", float64(cells[i])*markWidth, m.Y*13+2, w, w)
			i = j
		}
		m.Path = d.String()
		if m.n == 1 {
			m.Title = fmt.Sprintf("%s %s %s", m.from, m.kind, m.first)
		} else {
			m.Title = fmt.Sprintf("%d %s events from %s; the first: %s", m.n, m.kind, m.from, m.first)
		}
		m.cells = nil
		lane.Strips = append(lane.Strips, *m)
	}
}

// maxEvidence is how many evidence events of a call's lane are marks of
// their own, with their own hover text; the rest join the strips (a
// finding that stands on a thousand writes).
const maxEvidence = 4

// markWidth is the width (of 1000) of the stretch of a call's lane whose
// events of one kind on one process are one mark.
const markWidth = 6.0

// procKey is the lineage process of e (nil when the tree lacks it).
func procKey(e *event.Event, attr *correlate.Result) *lineage.Process {
	if attr.Tree != nil {
		if im := attr.Tree.Image(e.ExecID); im != nil {
			return im.Process
		}
	}
	return nil
}

// parentProcess is the process that forked p, nil for a root.
func parentProcess(p *lineage.Process) *lineage.Process {
	if p == nil || p.Parent == nil {
		return nil
	}
	return p.Parent.Process
}

// nestedOrder puts each process right after its parent's subtree (depth
// first, in order of first appearance), so the bars nest.
func nestedOrder(order []*laneProc, procs map[*lineage.Process]*laneProc) []*laneProc {
	kids := map[*laneProc][]*laneProc{}
	var roots []*laneProc
	for _, lp := range order {
		var parent *laneProc
		for par := parentProcess(lp.p); par != nil; par = parentProcess(par) {
			if pp := procs[par]; pp != nil {
				parent = pp
				break
			}
		}
		if parent == nil {
			roots = append(roots, lp)
		} else {
			kids[parent] = append(kids[parent], lp)
		}
	}
	out := make([]*laneProc, 0, len(order))
	var walk func(lp *laneProc)
	walk = func(lp *laneProc) {
		out = append(out, lp)
		for _, k := range kids[lp] {
			walk(k)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	return out
}

// pidOf is the pid of a lane's process.
func pidOf(lp *laneProc) uint32 {
	if lp.p != nil {
		return lp.p.Top().PID
	}
	return 0
}

// procLabel names a process of call a as a reader wants it, with the
// bar's class: the agent's own process for an in-process tool, the
// call's command where an agent's wrapper carried it (noting the
// wrapper on the call's row), a runtime wrapper by its name.
func (t *Timeline) procLabel(lp *laneProc, a *correlate.CallActivity, attr *correlate.Result) (string, string) {
	if lp.p == nil {
		return "an unknown process", "bar"
	}
	for _, im := range lp.p.Images {
		if isAgentImage(attr, im.ID) {
			if a.Call.Kind == transcript.KindShell {
				return "the agent's own process", "bar agent"
			}
			return "the agent's own process (an in-process tool)", "bar agent"
		}
	}
	var x *event.Event
	if execs := lp.p.Execs(); len(execs) > 0 {
		x = execs[0]
	} else {
		x = attr.Tree.ExecOf(lp.p.Top().ID)
	}
	if x == nil {
		return lp.p.Top().Comm, "bar"
	}
	x = t.r.shown(x)
	if p, w, ok := agent.Carried(x.Argv()); ok && a.Call.Command != "" {
		if row := t.rowOf(a.Call.ID); row != nil && row.Wrapper == "" {
			row.Wrapper = fmt.Sprintf("%s's %s wrapper", p.Title, w.Name)
			row.WrapperCommand = strings.Join(x.Argv(), " ")
		}
		return t.r.shownText(a.Call.Command), "bar"
	}
	if w, ok := runtimeWrapper(x); ok {
		return "[the agent's " + w.Name + " wrapper]", "bar wrapper"
	}
	return strings.Join(x.Argv(), " "), "bar"
}

// rowOf is the row of call id being built (the last one), nil for none.
func (t *Timeline) rowOf(id string) *CallRow {
	if t.building != nil && t.building.ID == id {
		return t.building
	}
	return nil
}

// isAgentImage reports whether image id is the agent itself.
func isAgentImage(attr *correlate.Result, id string) bool {
	for _, a := range attr.AgentExecIDs {
		if a == id {
			return true
		}
	}
	return false
}

// markClass is the class of an event's mark, "" for an event not marked.
func markClass(e *event.Event) string {
	cls := ""
	switch {
	case e.Kind == event.KindExec:
		cls = "m-exec"
	case e.Kind == event.KindOpen && !e.IsWrite():
		cls = "m-read"
	case e.Kind.IsFile():
		cls = "m-write"
	case e.Kind.IsNetwork() || e.Kind == event.KindDNS:
		cls = "m-net"
	case e.Kind == event.KindSignal || e.Kind == event.KindInject || e.Kind == event.KindMemRead || e.Kind == event.KindBPF ||
		e.Kind == event.KindKey:
		cls = "m-call"
	default:
		return ""
	}
	if e.Failed() {
		cls += " m-failed"
	}
	return "mark " + cls
}

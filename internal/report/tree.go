package report

import (
	"fmt"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/transcript"
)

// ProcNode is one process of the session's process tree view: what it
// ran, whom it acted for (a call, the agent, its bookkeeping, nobody),
// when, how it ended, and the processes it forked.
type ProcNode struct {
	PID      uint32
	Command  string
	Owner    string
	Href     string // the owner's row, for a call's process
	Class    string // call, agent, bookkeeping, unattributed
	Start    string
	Dur      string
	Exit     string
	Children []*ProcNode
}

// tree builds the process tree view of the session, at most maxTreeNodes
// processes, and how many it left out.
func (t *Timeline) tree(r *Report, attr *correlate.Result) ([]*ProcNode, int) {
	if attr == nil || attr.Tree == nil {
		return nil, 0
	}
	calls := map[string]*CallRow{}
	for _, c := range t.Calls {
		calls[c.ID] = c
	}
	procs := attr.Tree.Processes()
	nodes := make(map[*lineage.Process]*ProcNode, min(len(procs), maxTreeNodes))
	var roots []*ProcNode
	more := 0
	for _, p := range procs {
		if len(nodes) == maxTreeNodes {
			more++
			continue
		}
		n := t.procNode(p, attr, calls)
		nodes[p] = n
		if parent := nodes[parentProcess(p)]; parent != nil {
			parent.Children = append(parent.Children, n)
		} else {
			roots = append(roots, n)
		}
	}
	return roots, more
}

// procNode describes one process of the tree.
func (t *Timeline) procNode(p *lineage.Process, attr *correlate.Result, calls map[string]*CallRow) *ProcNode {
	n := &ProcNode{PID: p.Top().PID, Class: "unattributed", Owner: "no tool call"}
	var call *CallRow
	for _, im := range p.Images {
		if isAgentImage(attr, im.ID) {
			n.Class, n.Owner = "agent", "the agent"
			break
		}
		if len(im.Events) == 0 {
			continue
		}
		at := attr.Attributions.At(int(im.Events[0]))
		switch {
		case at.ToolCallID != "":
			call = calls[at.ToolCallID]
			n.Class, n.Owner = "call", "call "+at.ToolCallID
			if call != nil {
				n.Owner, n.Href = fmt.Sprintf("#%d %s", call.N, call.Tool), "#"+call.Anchor
			}
			if at.AfterReturn {
				n.Class, n.Owner = "unattributed", n.Owner+", after it returned"
			}
		case at.Reason == correlate.ReasonAgentBookkeeping || at.Reason == correlate.ReasonAgentAPI:
			n.Class, n.Owner = "bookkeeping", "the agent's "+at.Detail
		case at.Detail != "":
			n.Owner = "no tool call (" + at.Detail + ")"
		}
		break
	}
	x := attr.Tree.ExecOf(p.Top().ID)
	if execs := p.Execs(); len(execs) > 0 {
		x = execs[0]
	}
	switch {
	case x == nil:
		n.Command = p.Top().Comm
	case isRuntimeWrapper(x):
		w, _ := runtimeWrapper(x)
		n.Command = "[the agent's " + w.Name + " wrapper]"
	case call != nil:
		n.Command = t.r.shownText(execCommand(x, callByID(t.r, call.ID)))
	default:
		n.Command = t.r.shownText(execCommand(t.r.shown(x), nil))
	}
	n.Command = cut(n.Command, maxLabel)
	first := p.Top().Fork
	if first == nil {
		first = p.Top().Exec
	}
	if first != nil {
		n.Start = t.clock(first.TS)
	}
	if e := p.ExitEvent(); e != nil {
		if d := e.DurationNS(); d > 0 {
			n.Dur = time.Duration(d).Round(time.Millisecond).String()
		}
		switch {
		case e.Signal() != 0:
			n.Exit = fmt.Sprintf("killed by signal %d", e.Signal())
		case e.ExitCode() != nil:
			n.Exit = fmt.Sprintf("exit %d", *e.ExitCode())
		}
	}
	return n
}

// callByID is the report's tool call id, nil for none.
func callByID(r *Report, id string) *transcript.ToolCall {
	for _, v := range r.ToolCalls {
		if v.Call.ID == id {
			return v.Call
		}
	}
	return nil
}

// isRuntimeWrapper reports whether x is one of the agent's runtime
// wrappers (runtimeWrapper).
func isRuntimeWrapper(x *event.Event) bool {
	_, ok := runtimeWrapper(x)
	return ok
}

package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

// proc is one process image (exec_id) and what the events say about it.
type proc struct {
	id       string
	parent   string
	pid      uint32
	comm     string
	exec     *event.Event // the exec that began the image; nil for a fork child that has not exec'd
	exit     *event.Event
	children []string
	events   []int32 // indexes into the analysis's events
}

// procs is the tree of process images of one session, built from the
// events' exec_id / parent_exec_id lineage (never from pids, which are
// reused).
type procs struct {
	byID map[string]*proc
	last *proc // the image of the last event added: events come in runs of one image
}

// get returns image id, made on first mention.
func (t *procs) get(id string) *proc {
	p := t.byID[id]
	if p == nil {
		p = &proc{id: id}
		t.byID[id] = p
	}
	return p
}

// link makes parent the parent of child, unless child has one.
func (t *procs) link(child *proc, parent string) {
	if child.parent != "" || parent == "" || parent == child.id {
		return
	}
	child.parent = parent
	pp := t.get(parent)
	pp.children = append(pp.children, child.id)
}

// add takes events[i], e, into the tree; events are added in seq order.
func (t *procs) add(i int32, e *event.Event) {
	if e.ExecID == "" {
		return
	}
	p := t.last
	if p == nil || p.id != e.ExecID {
		p = t.get(e.ExecID)
		t.last = p
	}
	if p.pid == 0 {
		p.pid, p.comm = e.PID, e.Comm
	}
	p.events = append(p.events, i)
	t.link(p, e.ParentExecID)
	switch e.Kind {
	case event.KindExec:
		if p.exec == nil {
			p.exec = e
		}
	case event.KindExit:
		p.exit = e
	case event.KindFork:
		if e.ChildExecID != "" {
			c := t.get(e.ChildExecID)
			if c.pid == 0 {
				c.pid = e.ChildPID
			}
			t.link(c, e.ExecID)
		}
	}
}

// ancestors calls f for each ancestor of id, nearest first, until f
// returns false. It stops on a cycle.
func (t *procs) ancestors(id string, f func(*proc) bool) {
	seen := map[string]bool{id: true}
	p := t.byID[id]
	for p != nil && p.parent != "" && !seen[p.parent] {
		seen[p.parent] = true
		p = t.byID[p.parent]
		if p == nil || !f(p) {
			return
		}
	}
}

// execOf returns the exec that gave image id its program: its own, or,
// for a fork child that has not exec'd, its nearest ancestor's.
func (t *procs) execOf(id string) *event.Event {
	if p := t.byID[id]; p != nil && p.exec != nil {
		return p.exec
	}
	var found *event.Event
	t.ancestors(id, func(p *proc) bool {
		found = p.exec
		return found == nil
	})
	return found
}

// names are the program names of image id (policy.ProgramNames), or its
// comm when no exec was recorded.
func (t *procs) names(id string) []string {
	if e := t.execOf(id); e != nil {
		return policy.ProgramNames(e.Path, e.Argv)
	}
	if p := t.byID[id]; p != nil && p.comm != "" {
		return []string{p.comm}
	}
	return nil
}

// describe names image id for a person: its command line and pid.
func (t *procs) describe(id string) string {
	p := t.byID[id]
	if p == nil {
		return "an unknown process"
	}
	cmd := p.comm
	if e := t.execOf(id); e != nil {
		if len(e.Argv) > 0 {
			cmd = strings.Join(e.Argv, " ")
		} else {
			cmd = e.Path
		}
	}
	return fmt.Sprintf("`%s` (pid %d)", excerpt(cmd, 120), p.pid)
}

// subtree returns id and every image descending from it, parents first.
func (t *procs) subtree(id string) []*proc {
	root := t.byID[id]
	if root == nil {
		return nil
	}
	out := []*proc{root}
	seen := map[string]bool{id: true}
	for i := 0; i < len(out); i++ {
		for _, c := range out[i].children {
			if !seen[c] {
				seen[c] = true
				if p := t.byID[c]; p != nil {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// topmost returns, for the images in set, a map from each to its highest
// ancestor (or itself) that is also in set: the root of the group it
// belongs to.
func (t *procs) topmost(set map[string]bool) map[string]string {
	out := make(map[string]string, len(set))
	for id := range set {
		top := id
		t.ancestors(id, func(p *proc) bool {
			if set[p.id] {
				top = p.id
			}
			return true
		})
		out[id] = top
	}
	return out
}

// hasAncestor reports whether any ancestor of id satisfies f.
func (t *procs) hasAncestor(id string, f func(*proc) bool) bool {
	found := false
	t.ancestors(id, func(p *proc) bool {
		found = f(p)
		return !found
	})
	return found
}

// duration is how long image id ran, from its exec (or first event) to its
// exit; ok is false when it has no exit. evs are the events the tree was
// built from.
func (t *procs) duration(id string, evs []*event.Event) (d int64, ok bool) {
	p := t.byID[id]
	if p == nil || p.exit == nil {
		return 0, false
	}
	start := p.exec
	if start == nil && len(p.events) > 0 {
		start = evs[p.events[0]]
	}
	if start != nil && !start.TS.IsZero() && !p.exit.TS.IsZero() {
		return int64(p.exit.TS.Sub(start.TS)), true
	}
	return int64(p.exit.DurationNS), true
}

func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

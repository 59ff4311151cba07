package detect

import (
	"github.com/polygraph/polygraph/internal/event"
)

// accessGroup collects the events of one (path, actor) pair, for the
// rules that report file accesses by who made them.
type accessGroup struct {
	path, who, call string
	sev             Severity
	note            string
	seqs            []uint64
	blocked         bool   // the isolation masked it (blocked.go)
	refused         bool   // the kernel refused it: an attempt (refusedChange)
	title           string // the finding's title before the path, when the rule's own does not fit
}

// groups are access groups in the order their first events came.
type groups struct {
	order []string
	m     map[string]*accessGroup
}

func (g *groups) add(key string, mk func() *accessGroup, seq uint64) {
	if g.m == nil {
		g.m = map[string]*accessGroup{}
	}
	x := g.m[key]
	if x == nil {
		x = mk()
		g.m[key] = x
		g.order = append(g.order, key)
	}
	x.seqs = append(x.seqs, seq)
}

// put adds group x under key when there is none yet: a group no event
// stands for (a callAttempt).
func (g *groups) put(key string, x *accessGroup) {
	if g.m == nil {
		g.m = map[string]*accessGroup{}
	}
	if g.m[key] == nil {
		g.m[key] = x
		g.order = append(g.order, key)
	}
}

// actorKey groups events by the tool call that caused them, or by the
// process for unattributed ones.
func (s *facts) actorKey(e *event.Event) string {
	if c := s.callOf(e); c != "" {
		return "call:" + c
	}
	if s.agentOwn(e) {
		return "agent"
	}
	return "proc:" + e.ExecID
}

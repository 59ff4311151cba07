package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

// attribution returns the verdict on e; ok is false without attribution.
func (s *facts) attribution(e *event.Event) (correlate.Attribution, bool) {
	if s.attr == nil {
		return correlate.Attribution{}, false
	}
	at, ok := s.attr.get(e.Seq)
	if !ok {
		return correlate.Attribution{Seq: e.Seq, Reason: correlate.ReasonUnattributed}, true
	}
	return at, true
}

// callOf returns the tool call e is attributed to, "" for none.
func (s *facts) callOf(e *event.Event) string {
	at, _ := s.attribution(e)
	return at.ToolCallID
}

// agentOwn reports whether e is the agent's own expected activity: its
// model API traffic and bookkeeping, or (without attribution) anything of
// the root process's images.
func (s *facts) agentOwn(e *event.Event) bool {
	if at, ok := s.attribution(e); ok {
		return at.ToolCallID == "" && (at.Reason == correlate.ReasonAgentAPI || at.Reason == correlate.ReasonAgentBookkeeping)
	}
	return s.agent[e.ExecID]
}

// actor says who did e, for a finding's detail, and the tool call if any.
func (s *facts) actor(e *event.Event) (call, who string) {
	if at, ok := s.attribution(e); ok {
		switch {
		case at.ToolCallID != "":
			who = "tool call " + s.describeCall(at.ToolCallID)
			if at.AfterReturn {
				who += ", after the call had returned,"
			}
			return at.ToolCallID, who + " in " + s.tree.Describe(e.ExecID)
		case at.Reason == correlate.ReasonAgentAPI || at.Reason == correlate.ReasonAgentBookkeeping:
			return "", "the agent itself, " + s.tree.Describe(e.ExecID)
		}
	}
	if s.attr == nil && s.agent[e.ExecID] {
		return "", "the traced command itself (no transcript to attribute it), " + s.tree.Describe(e.ExecID)
	}
	return "", "an unattributed process, " + s.tree.Describe(e.ExecID)
}

// describeCall names a tool call with what it asked for.
func (s *facts) describeCall(id string) string {
	c := s.calls[id]
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

// attrIndex finds the attribution of an event by seq, among the packed
// verdicts on the events they were made for (correlate.Attributions).
type attrIndex struct{ ats *correlate.Attributions }

func newAttrIndex(ats *correlate.Attributions) *attrIndex { return &attrIndex{ats: ats} }

// get returns the attribution with seq; ok is false for none.
func (x *attrIndex) get(seq uint64) (at correlate.Attribution, ok bool) {
	i, ok := x.ats.Index(seq)
	if !ok {
		return correlate.Attribution{}, false
	}
	return x.ats.At(i), true
}

// names are the program names of image id (policy.ProgramNames of the
// exec that gave it its program), or its comm when no exec was recorded.
func (s *facts) names(id string) []string {
	return s.tree.Names(id, func(e *event.Event) []string { return policy.ProgramNames(e.Path, e.Argv()) })
}

// excerpt is s on one line, cut to n bytes with an ellipsis.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

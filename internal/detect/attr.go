package detect

import (
	"cmp"
	"fmt"
	"slices"
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

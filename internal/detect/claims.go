package detect

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/transcript"
)

// What the three claim-* rules ask alike: the claims of a kind, what ran
// or changed before a claim, which runs match a command set, how a run
// ended.

// claimSlack is how far past a claim's time kernel events still count as
// before it: the assistant's message is stamped when it is written, the
// last event of the work it reports can trail by a moment.
const claimSlack = 2 * time.Second

// claimsOf returns the transcript's claims of the kinds.
func (s *facts) claimsOf(kinds ...transcript.ClaimKind) []*transcript.Claim {
	if s.in.Transcript == nil {
		return nil
	}
	var out []*transcript.Claim
	for _, c := range s.in.Transcript.Claims {
		if c != nil && slices.Contains(kinds, c.Kind) {
			out = append(out, c)
		}
	}
	return out
}

// before reports whether an event at ts happened before claim c (any
// time, for a claim without a time).
func before(ts time.Time, c *transcript.Claim) bool {
	return c.At.IsZero() || ts.IsZero() || !ts.After(c.At.Add(claimSlack))
}

// upTo returns how many of n items with times at(0) … at(n-1) happened
// before claim c, when those are the first ones: the claim has no time,
// or the items are inOrder (inTimeOrder). ok is false when they need not
// be.
func upTo(c *transcript.Claim, n int, at func(int) time.Time, inOrder bool) (k int, ok bool) {
	if c.At.IsZero() {
		return n, true
	}
	if !inOrder {
		return 0, false
	}
	limit := c.At.Add(claimSlack)
	return sort.Search(n, func(i int) bool { return at(i).After(limit) }), true
}

// scope returns the exec events a claim is checked against (the claim
// rules look at no other), by their numbers in execs: those of the tool
// calls it refers to (linked), and every one before it in the session.
// Rules look at linked first and fall back to everything before, so a
// process the correlation could not tie to its call still counts.
func (s *facts) scope(c *transcript.Claim) (linked, earlier []int32) {
	if len(c.ToolCallIDs) > 0 {
		ids := map[string]bool{}
		for _, id := range c.ToolCallIDs {
			ids[id] = true
		}
		for n, call := range s.execCall {
			if ids[call] {
				linked = append(linked, int32(n))
			}
		}
	}
	if k, ok := upTo(c, len(s.execs), func(n int) time.Time { return s.execAt[n] }, s.execsInOrder); ok {
		return linked, s.execNums[:k]
	}
	for n, ts := range s.execAt {
		if before(ts, c) {
			earlier = append(earlier, int32(n))
		}
	}
	return linked, earlier
}

// changedBefore returns the file changes before claim c.
func (s *facts) changedBefore(c *transcript.Claim) []change {
	if k, ok := upTo(c, len(s.changes), func(i int) time.Time { return s.changes[i].ts }, s.changesInOrder); ok {
		return s.changes[:k]
	}
	var out []change
	for _, ch := range s.changes {
		if before(ch.ts, c) {
			out = append(out, ch)
		}
	}
	return out
}

// callExecs returns the numbers of the exec events attributed to call
// id.
func (s *facts) callExecs(id string) []int32 {
	var out []int32
	for n, call := range s.execCall {
		if call == id {
			out = append(out, int32(n))
		}
	}
	return out
}

// topMatches returns the exec events numbered nums (ascending) that run a
// command of command set set, leaving out those run by another match (npm
// test → sh -c jest → node jest is one run).
func (s *facts) topMatches(nums []int32, set *commandSet) []*event.Event {
	return s.topmostWhere(nums, func(n int32, _ *event.Event) bool { return s.runs(set, n) })
}

// topmostWhere returns the exec events numbered nums (ascending) that match
// says yes to, leaving out those with a matching ancestor: one run each.
func (s *facts) topmostWhere(nums []int32, match func(n int32, e *event.Event) bool) []*event.Event {
	matched := map[string]bool{}
	var all []*event.Event
	for _, n := range nums {
		if e := s.events[s.execs[n]]; match(n, e) {
			matched[e.ExecID] = true
			all = append(all, e)
		}
	}
	var out []*event.Event
	for _, e := range all {
		if !s.tree.HasAncestor(e.ExecID, func(p *lineage.Image) bool { return matched[p.ID] }) {
			out = append(out, e)
		}
	}
	return out
}

func cmdline(e *event.Event) string { return "`" + excerpt(strings.Join(e.Argv(), " "), 100) + "`" }

// execsOf returns the command lines of the exec events numbered nums.
func (s *facts) execsOf(nums []int32) []string {
	var out []string
	for _, n := range nums {
		out = append(out, cmdline(s.events[s.execs[n]]))
	}
	return out
}

func firstOf(ids []string) string {
	if len(ids) > 0 {
		return ids[0]
	}
	return ""
}

// lastShellBefore returns the id of the last shell call that started
// before claim c (in the same agent), or "".
func (s *facts) lastShellBefore(c *transcript.Claim) string {
	if s.in.Transcript == nil {
		return ""
	}
	id := ""
	for _, tc := range s.in.Transcript.ToolCalls {
		if tc.Kind != transcript.KindShell || tc.Rejected || tc.ParentID != c.ParentID {
			continue
		}
		if !c.At.IsZero() && !tc.StartedAt.IsZero() && tc.StartedAt.After(c.At) {
			continue
		}
		id = tc.ID
	}
	return id
}

func firstCall(c *transcript.Claim) string {
	if len(c.ToolCallIDs) > 0 {
		return c.ToolCallIDs[0]
	}
	return ""
}

// exitStatus describes how image id ended; failed is true for a non-zero
// status or a signal, known false when no exit was recorded.
func (s *facts) exitStatus(id string) (desc string, failed, known bool, seq uint64) {
	p := s.tree.Image(id)
	if p == nil || p.Exit == nil {
		return "", false, false, 0
	}
	x := p.Exit
	switch {
	case x.Signal() != 0:
		return fmt.Sprintf("was killed by signal %d", x.Signal()), true, true, x.Seq
	case x.ExitCode() != nil && *x.ExitCode() != 0:
		return fmt.Sprintf("exited with status %d", *x.ExitCode()), true, true, x.Seq
	}
	return "exited 0", false, true, x.Seq
}

// ranTests reports whether the run rooted at image id did test work: read a

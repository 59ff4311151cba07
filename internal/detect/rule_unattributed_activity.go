package detect

import (
	"fmt"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

func init() {
	register(&Rule{
		ID:       "unattributed-activity",
		Scope:    ScopeSession,
		Summary:  "activity no tool call explains, or a call's process still acting after the call returned",
		Severity: SeverityLow,
		Frameworks: Frameworks{ATTACK: []string{"T1059"}, ATLAS: []string{"AML.T0053"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: unattributedActivity,
	})
}

// activityKey is a kind of unexplained activity: of no call
// ("unattributed"), or of call after it returned ("late").
type activityKey struct{ call, cat string }

// unattributedActivity is the unattributed-activity rule: what no tool
// call explains, grouped by process tree, and what a call's processes did
// after the call returned, grouped by call and tree.
func unattributedActivity(s *run) []Finding {
	if s.in.Attribution == nil || s.in.Transcript == nil {
		return nil // without a transcript everything is unattributed: nothing to tell apart
	}
	sets := map[activityKey]map[string]bool{}
	var keys []activityKey
	evs := map[activityKey][]int32{}
	for i := range s.byEvent {
		var k activityKey
		switch f := &s.byEvent[i]; {
		case f.flags&fLate != 0:
			at, _ := s.attribution(s.events[i])
			k = activityKey{at.ToolCallID, "late"}
		case f.flags&fUnattributed != 0:
			k = activityKey{"", "unattributed"}
		default:
			continue
		}
		if sets[k] == nil {
			sets[k] = map[string]bool{}
			keys = append(keys, k)
		}
		sets[k][s.events[i].ExecID] = true
		evs[k] = append(evs[k], int32(i))
	}
	var out []Finding
	for _, k := range keys {
		top := s.tree.Topmost(sets[k])
		groupOrder := []string{}
		members := map[string][]int32{}
		for _, i := range evs[k] {
			t := top[s.events[i].ExecID]
			if _, ok := members[t]; !ok {
				groupOrder = append(groupOrder, t)
			}
			members[t] = append(members[t], i)
		}
		for _, t := range groupOrder {
			if f, ok := activityFinding(s, k, t, sets[k], members[t]); ok {
				out = append(out, f)
			}
		}
	}
	return out
}

// activityFinding is the finding on the events (indexes into events) of
// kind k in the tree of image top, whose images of that kind are imgSet;
// ok is false when none of the events says anything.
func activityFinding(s *run, k activityKey, top string, imgSet map[string]bool, events []int32) (Finding, bool) {
	var keep []*event.Event
	for _, i := range events {
		if meaningful(s, i) {
			keep = append(keep, s.events[i])
		}
	}
	if len(keep) == 0 {
		return Finding{}, false
	}
	inGroup := map[uint64]bool{}
	seen := map[string]bool{}
	for _, e := range keep {
		inGroup[e.Seq] = true
	}
	var imgs []*lineage.Image
	for _, p := range s.tree.Subtree(top) {
		if imgSet[p.ID] && !seen[p.ID] {
			seen[p.ID] = true
			imgs = append(imgs, p)
		}
	}
	sum := s.summarize(imgs, func(e *event.Event) bool { return inGroup[e.Seq] })
	// What no call explains is worth a look once it writes, reads secrets
	// or reaches out. A call's process going on after the call returned
	// (a server, a watcher, a `cmd &` the transcript shows) is the call's
	// visible work continuing: writing into the workspace is what it was
	// started for; only secrets, egress or writes elsewhere raise it.
	sev := SeverityLow
	if sum.egress || sum.secret || len(sum.writes) > 0 && (k.cat != "late" || sum.outside) {
		sev = SeverityMedium
	}
	var seqs []uint64
	for _, e := range keep {
		seqs = append(seqs, e.Seq)
	}
	who := s.tree.Describe(top)
	var title, detail string
	if k.cat == "late" {
		title = fmt.Sprintf("Process kept acting after its tool call returned: %s", who)
		detail = fmt.Sprintf("%s, started by tool call %s, went on after the call's result reached the agent, so the transcript could not show it: it %s.",
			who, s.describeCall(k.call), sum)
	} else {
		title = "Activity no tool call explains: " + who
		detail = fmt.Sprintf("No tool call in the transcript explains %s: it %s.", who, sum)
	}
	return s.finding(sev, title, detail, k.call, capped(seqs, 50), false), true
}

// meaningful reports whether an unattributed event, events[i], says
// something: an exec, a connection, a file changed outside the noise
// paths, a read outside system files.
func meaningful(s *run, i int32) bool {
	e, f := s.events[i], &s.byEvent[i]
	switch {
	case f.flags&(fExec|fEgress) != 0, e.Kind == event.KindBind, e.Kind == event.KindAccept:
		return true
	case f.written >= 0:
		if _, ok := s.matchOf(setTamper, int(i), f.written); ok {
			return true
		}
		return !s.is(setNoise, f.written)
	case f.flags&fRemoved != 0:
		return !s.is(setNoise, f.path)
	case f.flags&fRead != 0:
		if _, ok := s.matchOf(setSensitive, int(i), f.path); ok {
			return true
		}
		if _, ok := s.matchOf(setAgentConfig, int(i), f.path); ok {
			return true
		}
		if at, _ := s.attribution(e); at.Detail == correlate.DetailAgentFile {
			// The agent's own process looking around (listing its
			// workspace and home, reading a file to build its context,
			// checking a directory a call may name) is how agents work,
			// known or not: a read says something only of a secret or
			// another agent's configuration, above.
			return false
		}
		return !s.is(setSystem, f.path) && !s.is(setNoise, f.path)
	}
	return false
}

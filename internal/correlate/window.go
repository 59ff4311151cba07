package correlate

import (
	"sort"
	"time"
)

// callIndex finds the calls whose window, widened by the slack, holds an
// instant: every event of the session asks it.
type callIndex struct {
	byStart []*callInfo // by start
	// closedEnd[i] is the latest widened end (until) among the closed
	// calls of byStart[:i+1], zero when there is none; openAt lists the
	// byStart indexes of the open calls, ascending. An open call does not
	// stop at from cutting its search short for the closed ones.
	closedEnd []time.Time
	openAt    []int
}

// newCallIndex widens the calls' windows by slack and indexes them.
func newCallIndex(calls []*callInfo, slack time.Duration) *callIndex {
	for _, ci := range calls {
		ci.lead = ci.start.Add(-slack)
		if !ci.open {
			ci.until = ci.end.Add(slack)
		}
	}
	x := &callIndex{byStart: append([]*callInfo(nil), calls...)}
	sort.SliceStable(x.byStart, func(i, j int) bool { return x.byStart[i].start.Before(x.byStart[j].start) })
	x.closedEnd = make([]time.Time, len(x.byStart))
	var m time.Time
	for i, ci := range x.byStart {
		switch {
		case ci.open:
			x.openAt = append(x.openAt, i)
		case ci.until.After(m):
			m = ci.until
		}
		x.closedEnd[i] = m
	}
	return x
}

// at returns the calls whose window (widened by the slack) holds ts,
// latest start first.
func (x *callIndex) at(ts time.Time) []*callInfo {
	hi := sort.Search(len(x.byStart), func(i int) bool { return x.byStart[i].lead.After(ts) })
	var out []*callInfo
	for i := hi - 1; i >= 0; i-- {
		if x.closedEnd[i].IsZero() || ts.After(x.closedEnd[i]) {
			// No closed call started this early is still running; every
			// open one that started by ts is (it started before hi).
			for j := sort.SearchInts(x.openAt, i+1) - 1; j >= 0; j-- {
				out = append(out, x.byStart[x.openAt[j]])
			}
			break
		}
		if x.byStart[i].holds(ts) {
			out = append(out, x.byStart[i])
		}
	}
	return out
}

// holds reports whether ts falls in ci's window widened by the slack.
func (ci *callInfo) holds(ts time.Time) bool {
	if !ci.start.IsZero() && ts.Before(ci.lead) {
		return false
	}
	return ci.open || !ts.After(ci.until)
}

// strictlyHolds reports whether ts falls in ci's window without slack.
func (ci *callInfo) strictlyHolds(ts time.Time) bool {
	return (ci.start.IsZero() || !ts.Before(ci.start)) && (ci.open || !ts.After(ci.end))
}

// returnedBy reports whether ts is after ci's result reached the agent.
func (ci *callInfo) returnedBy(ts time.Time) bool {
	return !ci.open && ts.After(ci.until)
}

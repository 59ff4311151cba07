package event

import (
	"cmp"
	"slices"
)

// InSeqOrder returns evs when they are in seq order, and otherwise a copy
// sorted by seq (copied true): the one place polygraph puts events back
// in the order the sensor numbered them. The session reader delivers them
// in order already; JSON exports and hand-built events may not be.
func InSeqOrder(evs []*Event) (ordered []*Event, copied bool) {
	if slices.IsSortedFunc(evs, bySeq) {
		return evs, false
	}
	out := slices.Clone(evs)
	slices.SortStableFunc(out, bySeq)
	return out, true
}

func bySeq(x, y *Event) int { return cmp.Compare(x.Seq, y.Seq) }

package correlate

import (
	"encoding/json"
	"iter"
	"sort"

	"github.com/polygraph/polygraph/internal/event"
)

// Attributions are the verdicts on a session's events, one per event of
// the events they were made for (Result.Events), in their order. A report
// keeps one for every event of the session for as long as it lives, so
// they are packed: eight bytes an event, the tool call, the reason and the
// detail as indexes into tables of the distinct values (a handful of
// reasons and details, one entry per call), the seq read from the event
// itself. As Attribution values they were 64 bytes an event, 61 MiB of a
// million-event session's report. At and All give them as Attributions.
type Attributions struct {
	evs    []*event.Event
	packed []packed
	calls  strTable // ToolCallID; entry 0 is ""
	// reasons' entry 0 is ReasonUnattributed and details' "", so a zero
	// packed is the verdict that stands until someone is found.
	reasons strTable
	details strTable
}

// packed is one Attribution, its strings as indexes into the tables.
type packed struct {
	call   uint32
	detail uint16
	reason uint8
	late   bool // AfterReturn
}

// newAttributions returns the verdict "unattributed", without detail, on
// each of evs.
func newAttributions(evs []*event.Event) Attributions {
	return Attributions{evs: evs, packed: make([]packed, len(evs)),
		calls: newStrTable(""), reasons: newStrTable(string(ReasonUnattributed)), details: newStrTable("")}
}

// NewAttributions packs ats, the verdicts on evs (sorted by seq) matched
// by seq; an event none of them names is unattributed. For building a
// Result by hand, as tests do.
func NewAttributions(evs []*event.Event, ats []Attribution) Attributions {
	as := newAttributions(evs)
	bySeq := make(map[uint64]int, len(evs))
	for i, e := range evs {
		bySeq[e.Seq] = i
	}
	for k := range ats {
		if i, ok := bySeq[ats[k].Seq]; ok {
			as.set(i, &ats[k])
		}
	}
	return as
}

// Len is the number of verdicts: one per event.
func (as *Attributions) Len() int { return len(as.packed) }

// At returns the verdict on the i-th event.
func (as *Attributions) At(i int) Attribution {
	p := as.packed[i]
	return Attribution{Seq: as.evs[i].Seq, ToolCallID: as.calls.vals[p.call], Reason: Reason(as.reasons.vals[p.reason]),
		AfterReturn: p.late, Detail: as.details.vals[p.detail]}
}

// All yields every event's index and verdict, in order.
func (as *Attributions) All() iter.Seq2[int, Attribution] {
	return func(yield func(int, Attribution) bool) {
		for i := range as.packed {
			if !yield(i, as.At(i)) {
				return
			}
		}
	}
}

// Index returns the index of the event with the given seq (the events
// being in seq order), false for none.
func (as *Attributions) Index(seq uint64) (int, bool) {
	n := len(as.evs)
	if n == 0 {
		return 0, false
	}
	// Recorded seqs are nearly gap-free: try the place seq would have.
	if first := as.evs[0].Seq; seq >= first && seq-first < uint64(n) {
		if i := int(seq - first); as.evs[i].Seq == seq {
			return i, true
		}
	}
	i := sort.Search(n, func(i int) bool { return as.evs[i].Seq >= seq })
	return i, i < n && as.evs[i].Seq == seq
}

// set packs at as the verdict on the i-th event.
func (as *Attributions) set(i int, at *Attribution) {
	d := as.details.id(at.Detail)
	r := as.reasons.id(string(at.Reason))
	if d > 0xffff || r > 0xff {
		// correlate's details and reasons are a few constants; only a
		// Result built by hand could hold this many.
		panic("correlate: more distinct attribution details or reasons than Attributions packs")
	}
	as.packed[i] = packed{call: as.calls.id(at.ToolCallID), detail: uint16(d), reason: uint8(r), late: at.AfterReturn}
}

// MarshalJSON writes the verdicts as a list of Attribution.
func (as Attributions) MarshalJSON() ([]byte, error) {
	out := make([]Attribution, len(as.packed))
	for i := range out {
		out[i] = as.At(i)
	}
	return json.Marshal(out)
}

// strTable numbers distinct strings, in the order first seen.
type strTable struct {
	vals []string
	ids  map[string]uint32 // once vals outgrows a scan
}

func newStrTable(first string) strTable { return strTable{vals: []string{first}} }

// scanMax is how many values id looks through before it keeps a map:
// details and reasons stay below it, and comparing the same constant
// string is a pointer compare.
const scanMax = 16

// id returns s's number, giving it the next one if new.
func (t *strTable) id(s string) uint32 {
	if t.ids == nil {
		for i, v := range t.vals {
			if v == s {
				return uint32(i)
			}
		}
		if len(t.vals) < scanMax {
			t.vals = append(t.vals, s)
			return uint32(len(t.vals) - 1)
		}
		t.ids = make(map[string]uint32, 2*scanMax)
		for i, v := range t.vals {
			t.ids[v] = uint32(i)
		}
	}
	if i, ok := t.ids[s]; ok {
		return i
	}
	t.vals = append(t.vals, s)
	t.ids[s] = uint32(len(t.vals) - 1)
	return uint32(len(t.vals) - 1)
}

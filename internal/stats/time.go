package stats

import (
	"slices"
	"time"

	"github.com/polygraph/polygraph/internal/transcript"
)

// timeSplit splits the agent's run, [start, end], into the time some
// tool call was running, the time it waited on the model (from the later
// of its previous response and the last result before a response, to the
// response: the request, the model's answer and the agent reading it)
// and the rest. The transcript's times say it all; without one the run
// is all "other".
func timeSplit(tr *transcript.Transcript, start, end time.Time) TimeSplit {
	total := end.Sub(start).Seconds()
	if tr == nil || total <= 0 {
		return TimeSplit{Other: max(total, 0)}
	}
	var tools spans
	for _, c := range tr.ToolCalls {
		if !c.StartedAt.IsZero() && !c.EndedAt.Before(c.StartedAt) {
			tools = append(tools, span{c.StartedAt, c.EndedAt})
		}
	}
	tools = tools.union().clip(start, end)
	var model spans
	prev := start
	if tr.StartedAt.After(prev) {
		prev = tr.StartedAt
	}
	for _, r := range tr.Responses {
		if r.IsZero() {
			continue
		}
		from := prev
		for _, c := range tr.ToolCalls {
			if c.EndedAt.After(from) && !c.EndedAt.After(r) {
				from = c.EndedAt
			}
		}
		if r.After(from) {
			model = append(model, span{from, r})
		}
		prev = r
	}
	model = model.union().clip(start, end).minus(tools)
	t, m := tools.seconds(), model.seconds()
	return TimeSplit{Tools: t, Model: m, Other: max(total-t-m, 0)}
}

// span is a stretch of time; spans a set of them.
type span struct{ from, to time.Time }
type spans []span

// union merges overlapping spans, in order.
func (s spans) union() spans {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b span) int { return a.from.Compare(b.from) })
	var out spans
	for _, x := range s {
		if n := len(out); n > 0 && !x.from.After(out[n-1].to) {
			if x.to.After(out[n-1].to) {
				out[n-1].to = x.to
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

// clip cuts a union to [from, to].
func (s spans) clip(from, to time.Time) spans {
	var out spans
	for _, x := range s {
		if x.from.Before(from) {
			x.from = from
		}
		if x.to.After(to) {
			x.to = to
		}
		if x.to.After(x.from) {
			out = append(out, x)
		}
	}
	return out
}

// minus is the union s without the union t.
func (s spans) minus(t spans) spans {
	var out spans
	for _, x := range s {
		cur := x
		for _, y := range t {
			if !y.to.After(cur.from) || !y.from.Before(cur.to) {
				continue
			}
			if y.from.After(cur.from) {
				out = append(out, span{cur.from, y.from})
			}
			cur.from = y.to
			if !cur.to.After(cur.from) {
				break
			}
		}
		if cur.to.After(cur.from) {
			out = append(out, cur)
		}
	}
	return out
}

func (s spans) seconds() float64 {
	var d time.Duration
	for _, x := range s {
		d += x.to.Sub(x.from)
	}
	return d.Seconds()
}

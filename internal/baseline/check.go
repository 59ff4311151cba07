package baseline

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Deviation is one way a session differs from its agent's baseline.
type Deviation struct {
	// Kind is the tool kind; What what differs: program, read, write,
	// host, sensitive (something new), procs, burst, bytes-out (a rate).
	Kind string `json:"kind"`
	What string `json:"what"`
	// Value is the program, directory or host:port concerned; "" for
	// procs and burst.
	Value string `json:"value,omitempty"`
	// Severity is "low" or "medium" (internal/detect's names).
	Severity string `json:"severity"`
	// Title is one line; Detail says what differs, against what, and
	// what to do about it.
	Title  string `json:"title"`
	Detail string `json:"detail"`
	// Seqs are the events that show it.
	Seqs []uint64 `json:"evidence"`
}

// outlierMADs is how many (scaled) median absolute deviations above the
// median a rate must be to be off: far enough that the busy end of
// normal work does not reach it.
const outlierMADs = 5

// Check compares sample s with profile p and returns how s differs, by
// kind, then in the order of the fields of Activity. A kind with fewer
// than MinSessions sessions in p is not judged: the returned note says
// so, for the report. A kind p has never seen is judged against nothing
// (all of it is new) once p has MinSessions sessions at all.
func Check(p *Profile, s *Sample) (devs []Deviation, notes []string) {
	if p == nil || s == nil {
		return nil, nil
	}
	for _, kind := range slices.Sorted(maps.Keys(s.Kinds)) {
		a := s.Kinds[kind]
		k := p.Kinds[kind]
		switch {
		case k == nil && len(p.Sessions) >= MinSessions:
			k = newKindProfile()
		case k == nil || k.Sessions < MinSessions:
			have := 0
			if k != nil {
				have = k.Sessions
			}
			notes = append(notes, fmt.Sprintf("baseline %s: %s calls not judged: %d of the %d sessions needed learned", p.Key(), kind, have, MinSessions))
			continue
		}
		c := checker{p: p, k: k, kind: kind}
		c.news("program", "ran", a.Programs, k.Programs, "low")
		c.news("read", "read files in", a.Reads, k.Reads, "low")
		c.news("write", "wrote files in", a.Writes, k.Writes, "low")
		c.news("host", "contacted", a.Hosts, k.Hosts, "medium")
		c.news("sensitive", "read the credential file", a.Sensitive, k.Sensitive, "medium")
		if len(a.Procs) > 0 {
			c.rate("procs", "processes one call started", float64(slices.Max(a.Procs)), k.MaxProcs, "low", nil)
			c.rate("burst", "processes one call started within a second", float64(slices.Max(a.Burst)), k.MaxBurst, "low", nil)
		}
		for _, h := range slices.Sorted(maps.Keys(a.BytesOut)) {
			if k.Hosts[h] > 0 { // a new host is reported as new
				c.rate("bytes-out", "bytes sent to "+h, float64(a.BytesOut[h]), k.BytesOut[h], "medium", a.Hosts[h])
			}
		}
		devs = append(devs, c.out...)
	}
	return devs, notes
}

// checker judges one kind of a sample.
type checker struct {
	p    *Profile
	k    *KindProfile
	kind string
	out  []Deviation
}

// calls names the kind's calls in a sentence.
func (c *checker) calls() string {
	if c.kind == KindNone {
		return "activity no tool call explains"
	}
	return c.kind + " calls"
}

// news reports each key of seen that known does not have.
func (c *checker) news(what, verb string, seen Seen, known map[string]int, sev string) {
	for _, v := range slices.Sorted(maps.Keys(seen)) {
		if known[v] > 0 {
			continue
		}
		n := len(c.p.Sessions)
		detail := fmt.Sprintf("%s %s %s, which none of the %d sessions in the baseline of %s did. If this is expected, learn this session into the baseline (polygraph baseline learn SESSION); if not, look at what made it.",
			capitalise(c.calls()), verb, v, n, c.p.Key())
		c.out = append(c.out, Deviation{Kind: c.kind, What: what, Value: v, Severity: sev,
			Title: fmt.Sprintf("New for %s: %s %s %s", c.p.Agent, c.calls(), verb, v), Detail: detail, Seqs: seen[v]})
	}
}

// rate reports x when it is far above the values learned: more than
// outlierMADs scaled MADs above their median. Fewer than MinSessions
// values say nothing.
func (c *checker) rate(what, of string, x float64, values []float64, sev string, seqs []uint64) {
	if len(values) < MinSessions {
		return
	}
	med, mad := MedianMAD(values)
	// A MAD of 0 (every session the same) would make any step an
	// outlier: the spread is taken to be at least a tenth of the median,
	// and at least 1.
	spread := max(1.4826*mad, med/10, 1)
	limit := med + outlierMADs*spread
	if x <= limit {
		return
	}
	detail := fmt.Sprintf("%s: %s in this session, against a median of %s (MAD %s) over %d sessions in the baseline of %s: %.1f times the spread above the median (the limit is %s). If the work really was bigger, learn this session into the baseline; if not, look at the call that did it.",
		capitalise(c.calls()), num(x), num(med), num(mad), len(values), c.p.Key(), (x-med)/spread, num(limit))
	c.out = append(c.out, Deviation{Kind: c.kind, What: what, Severity: sev,
		Title: fmt.Sprintf("Unusual for %s: %s %s (%s, usually %s)", c.p.Agent, c.calls(), of, num(x), num(med)), Detail: detail, Seqs: seqs})
}

// MedianMAD returns the median of values and their median absolute
// deviation from it.
func MedianMAD(values []float64) (median, mad float64) {
	if len(values) == 0 {
		return 0, 0
	}
	median = medianOf(values)
	dev := make([]float64, len(values))
	for i, v := range values {
		dev[i] = math.Abs(v - median)
	}
	return median, medianOf(dev)
}

func medianOf(values []float64) float64 {
	v := slices.Clone(values)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// num prints a count without decimals, anything else with one.
func num(x float64) string {
	if x == math.Trunc(x) {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

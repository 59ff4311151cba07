package stats

import (
	"math"
	"slices"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/detect"
)

// Dist is a distribution of values: how many, their median (computed as
// baselines compute it, baseline.MedianMAD), 90th percentile (nearest
// rank) and maximum.
type Dist struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Max    float64 `json:"max"`
}

// NewDist is the distribution of values.
func NewDist(values []float64) Dist {
	if len(values) == 0 {
		return Dist{}
	}
	v := slices.Clone(values)
	slices.Sort(v)
	med, _ := baseline.MedianMAD(v)
	rank := int(math.Ceil(0.9*float64(len(v)))) - 1
	return Dist{N: len(v), Median: med, P90: v[max(rank, 0)], Max: v[len(v)-1]}
}

// Classes are the destination classes, in the order shown.
var Classes = []string{detect.DestModel, detect.DestRegistry, detect.DestOther, detect.DestDNS, detect.DestLocal}

// Whos are who used resources, in the order shown.
var Whos = []string{WhoAgent, WhoTools, WhoOther}

// Summary is a set of sessions' numbers as distributions: per session
// unless said otherwise. Times are in seconds.
type Summary struct {
	// Agent is the agent whose sessions these are; "" for all agents.
	Agent    string `json:"agent"`
	Sessions int    `json:"sessions"`

	Wall              Dist `json:"wall_s"`
	Iterations        Dist `json:"iterations"`
	PerTen            Dist `json:"iterations_per_10s"`
	Execs             Dist `json:"execs"`
	ExecsPerIteration Dist `json:"execs_per_iteration"`
	Shells            Dist `json:"shells"`
	// ShellLife is over every shell whose exit was seen.
	ShellLife Dist `json:"shell_life_s"`

	// ConnectsPerIteration and Bytes (sent and received) are by
	// destination class.
	ConnectsPerIteration map[string]Dist `json:"connects_per_iteration"`
	Bytes                map[string]Dist `json:"bytes"`

	// ProcsPerCall and CallWall are over every tool call (with both
	// times, for CallWall); the other Call* over the calls that started
	// processes whose exits were seen.
	ProcsPerCall Dist `json:"procs_per_call"`
	CallWall     Dist `json:"call_wall_s"`
	CallCPU      Dist `json:"call_cpu_s"`
	CallRSSKB    Dist `json:"call_peak_rss_kb"`
	CallIO       Dist `json:"call_io_bytes"`

	// Share* are fractions of the session's wall time.
	ShareTools Dist `json:"share_tools"`
	ShareModel Dist `json:"share_model"`
	ShareOther Dist `json:"share_other"`

	// CPU, PeakRSSKB and IO are by who used them; ToolsCPUShare is the
	// tools' part of the agent's and the tools' CPU together.
	CPU           map[string]Dist `json:"cpu_s"`
	PeakRSSKB     map[string]Dist `json:"peak_rss_kb"`
	IO            map[string]Dist `json:"io_bytes"`
	ToolsCPUShare Dist            `json:"tools_cpu_share"`

	// TimeTotal, CPUTotal, ConnectsTotal and IterationsTotal add the
	// sessions up, for the shares and rates of the whole the charts show.
	TimeTotal       TimeSplit          `json:"time_total_s"`
	CPUTotal        map[string]float64 `json:"cpu_total_s"`
	ConnectsTotal   map[string]int     `json:"connects_total"`
	IterationsTotal int                `json:"iterations_total"`
}

// Summarise groups sessions by agent, in name order, each into a Summary,
// and adds one of them all when there are several agents.
func Summarise(sessions []*Session) []*Summary {
	by := map[string][]*Session{}
	for _, s := range sessions {
		by[s.Agent] = append(by[s.Agent], s)
	}
	agents := slices.Sorted(func(yield func(string) bool) {
		for a := range by {
			if !yield(a) {
				return
			}
		}
	})
	var out []*Summary
	for _, a := range agents {
		out = append(out, summarise(a, by[a]))
	}
	if len(agents) > 1 {
		out = append(out, summarise("", sessions))
	}
	return out
}

// values collects one number per item.
func values[T any](items []T, f func(T) (float64, bool)) []float64 {
	var out []float64
	for _, it := range items {
		if v, ok := f(it); ok {
			out = append(out, v)
		}
	}
	return out
}

func dist[T any](items []T, f func(T) (float64, bool)) Dist { return NewDist(values(items, f)) }

func always(v float64) (float64, bool) { return v, true }

func summarise(agent string, ss []*Session) *Summary {
	sum := &Summary{Agent: agent, Sessions: len(ss), ConnectsPerIteration: map[string]Dist{}, Bytes: map[string]Dist{},
		CPU: map[string]Dist{}, PeakRSSKB: map[string]Dist{}, IO: map[string]Dist{}, CPUTotal: map[string]float64{}, ConnectsTotal: map[string]int{}}
	for _, s := range ss {
		sum.IterationsTotal += s.Iterations
		for c, n := range s.Connects {
			sum.ConnectsTotal[c] += n
		}
		sum.TimeTotal.Tools += s.Time.Tools
		sum.TimeTotal.Model += s.Time.Model
		sum.TimeTotal.Other += s.Time.Other
		for _, w := range Whos {
			sum.CPUTotal[w] += cpuOf(s, w)
		}
	}
	withIter := func(f func(*Session) float64) func(*Session) (float64, bool) {
		return func(s *Session) (float64, bool) { return f(s), s.Iterations > 0 }
	}
	sum.Wall = dist(ss, func(s *Session) (float64, bool) { return always(s.Wall) })
	sum.Iterations = dist(ss, withIter(func(s *Session) float64 { return float64(s.Iterations) }))
	sum.PerTen = dist(ss, withIter(func(s *Session) float64 { return s.PerTen }))
	sum.Execs = dist(ss, func(s *Session) (float64, bool) { return always(float64(s.Execs)) })
	sum.ExecsPerIteration = dist(ss, withIter(func(s *Session) float64 { return s.ExecsPerIteration }))
	sum.Shells = dist(ss, func(s *Session) (float64, bool) { return always(float64(len(s.Shells))) })
	var shells []Shell
	var calls []Call
	for _, s := range ss {
		shells = append(shells, s.Shells...)
		calls = append(calls, s.Calls...)
	}
	sum.ShellLife = dist(shells, func(sh Shell) (float64, bool) { return sh.Life, sh.Life >= 0 })
	for _, c := range Classes {
		sum.ConnectsPerIteration[c] = dist(ss, withIter(func(s *Session) float64 { return s.ConnectsPerIteration[c] }))
		sum.Bytes[c] = dist(ss, func(s *Session) (float64, bool) {
			var n uint64
			for _, f := range s.Flows {
				if f.Class == c {
					n += f.Sent + f.Recv
				}
			}
			return float64(n), true
		})
	}
	sum.ProcsPerCall = dist(calls, func(c Call) (float64, bool) { return always(float64(c.Procs)) })
	sum.CallWall = dist(calls, func(c Call) (float64, bool) { return c.Wall, c.Wall >= 0 })
	used := func(f func(*Usage) float64) func(Call) (float64, bool) {
		return func(c Call) (float64, bool) {
			if c.Use == nil {
				return 0, false
			}
			return f(c.Use), true
		}
	}
	sum.CallCPU = dist(calls, used(func(u *Usage) float64 { return u.CPU }))
	sum.CallRSSKB = dist(calls, used(func(u *Usage) float64 { return float64(u.PeakRSSKB) }))
	sum.CallIO = dist(calls, used(func(u *Usage) float64 { return float64(u.ReadBytes + u.WriteBytes) }))
	share := func(f func(TimeSplit) float64) func(*Session) (float64, bool) {
		return func(s *Session) (float64, bool) {
			total := s.Time.Tools + s.Time.Model + s.Time.Other
			return f(s.Time) / total, total > 0
		}
	}
	sum.ShareTools = dist(ss, share(func(t TimeSplit) float64 { return t.Tools }))
	sum.ShareModel = dist(ss, share(func(t TimeSplit) float64 { return t.Model }))
	sum.ShareOther = dist(ss, share(func(t TimeSplit) float64 { return t.Other }))
	for _, w := range Whos {
		u := func(f func(*Usage) float64) func(*Session) (float64, bool) {
			return func(s *Session) (float64, bool) {
				if s.Use[w] == nil {
					return 0, true
				}
				return f(s.Use[w]), true
			}
		}
		sum.CPU[w] = dist(ss, u(func(u *Usage) float64 { return u.CPU }))
		sum.PeakRSSKB[w] = dist(ss, u(func(u *Usage) float64 { return float64(u.PeakRSSKB) }))
		sum.IO[w] = dist(ss, u(func(u *Usage) float64 { return float64(u.ReadBytes + u.WriteBytes) }))
	}
	sum.ToolsCPUShare = dist(ss, func(s *Session) (float64, bool) {
		a, t := cpuOf(s, WhoAgent), cpuOf(s, WhoTools)
		return t / (a + t), a+t > 0
	})
	return sum
}

func cpuOf(s *Session, who string) float64 {
	if u := s.Use[who]; u != nil {
		return u.CPU
	}
	return 0
}

// Package stats measures what an agent did in a session in the terms the
// field's published measurements use: how fast its loop turns (model
// responses, and per 10 s), how many programs it runs (execve per session
// and per iteration, shells and how long they live, processes per tool
// call), where it connects (per iteration, by destination class) and how
// many bytes go where, what each tool call costs (CPU, peak RSS, I/O,
// wall time), where the wall time goes (tools, waiting on the model, the
// rest), and the agent's own processes against its tools'.
//
// It reads an analysis.Analysis and computes nothing a baseline or the
// rules already know another way: processes per tool call are the
// baseline sample's (detect.Observe), destinations are named and classed
// by detect.Traffic, model responses are the transcript's
// (transcript.Transcript.Responses), who did what is correlate's.
// Summarise aggregates sessions into distributions (median, p90, max);
// svg.go draws them.
package stats

import (
	"sort"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Who did something: the agent's own processes (its runtime and the
// helpers it runs for itself), its tool calls, or nobody known.
const (
	WhoAgent = "agent"
	WhoTools = "tools"
	WhoOther = "other"
)

// Session is one session's numbers. Times are in seconds, sizes in bytes
// (RSS in KiB, as the kernel counts it).
type Session struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Version string `json:"version,omitempty"`
	// Wall is the agent's run: its root process's life, else the session's.
	Wall float64 `json:"wall_s"`

	// Iterations are the model responses the transcript records (the
	// agent loop's turns); Estimated when it records none and they were
	// counted from the tool calls instead (a call starting after the
	// calls before it ended came from a new response, plus the final
	// answer). PerTen is Iterations per 10 s of Wall.
	Iterations int     `json:"iterations"`
	Estimated  bool    `json:"iterations_estimated,omitempty"`
	PerTen     float64 `json:"iterations_per_10s"`
	// NoTranscript: no transcript was found, so there are no iterations
	// and no tool calls, only the kernel's numbers.
	NoTranscript bool `json:"no_transcript,omitempty"`

	// Execs counts the session's execve, by who ran them.
	Execs             int            `json:"execs"`
	ExecsBy           map[string]int `json:"execs_by"`
	ExecsPerIteration float64        `json:"execs_per_iteration"`
	// Shells are the shells run, with how long each lived.
	Shells []Shell `json:"shells"`

	// Connects counts the connections that went out, by destination
	// class (detect.DestModel...); ConnectsPerIteration divides them by
	// Iterations. Flows are the destinations, with their bytes.
	Connects             map[string]int     `json:"connects"`
	ConnectsPerIteration map[string]float64 `json:"connects_per_iteration"`
	Flows                []Flow             `json:"flows"`

	// Time splits Wall: in tool calls, waiting on the model (from the
	// request that followed the last result to the response), the rest
	// (start-up, the agent's own work, shutdown).
	Time TimeSplit `json:"time"`

	// Calls are the tool calls, in transcript order.
	Calls []Call `json:"calls"`

	// Use is the resources used, by who: the processes that exited in
	// the session (one that did not has no numbers).
	Use map[string]*Usage `json:"use"`
}

// Flow is one destination (detect.Flow): connects and bytes.
type Flow struct {
	Dest     string `json:"dest"`
	Class    string `json:"class"`
	Connects int    `json:"connects"`
	Sent     uint64 `json:"bytes_sent"`
	Recv     uint64 `json:"bytes_recv"`
}

// Shell is one shell a session ran.
type Shell struct {
	Seq     uint64 `json:"seq"`
	Who     string `json:"who"`
	Program string `json:"program"`
	// Life is from the shell's exec to its process's exit (a shell that
	// execs its command lives on as it); -1 when the exit was not seen.
	Life float64 `json:"life_s"`
}

// TimeSplit is where a session's wall time went, in seconds.
type TimeSplit struct {
	Tools float64 `json:"tools_s"`
	Model float64 `json:"model_s"`
	Other float64 `json:"other_s"`
}

// Call is what one tool call cost.
type Call struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	Kind string `json:"kind"`
	// Procs is the processes it started (execs), as its baseline counts
	// them.
	Procs int `json:"procs"`
	// Wall is from its start to its result, -1 when the transcript lacks
	// either time.
	Wall float64 `json:"wall_s"`
	// Use is what its processes used (nil for a call that ran inside the
	// agent's process: its cost is the agent's).
	Use *Usage `json:"use,omitempty"`
}

// Usage is what a set of processes used, from their exit events.
type Usage struct {
	Processes int     `json:"processes"`
	CPU       float64 `json:"cpu_s"`
	// PeakRSSKB is the largest peak of any one of them.
	PeakRSSKB  uint64 `json:"peak_rss_kb"`
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
}

func (u *Usage) add(e *event.Event) {
	u.Processes++
	u.CPU += float64(e.CPUNS()) / 1e9
	u.PeakRSSKB = max(u.PeakRSSKB, e.MaxRSSKB())
	u.ReadBytes += e.ReadBytes()
	u.WriteBytes += e.WriteBytes()
}

// Compute measures the session a holds, judged with pol (nil: the
// default policy), whose registries class destinations.
func Compute(a *analysis.Analysis, pol *policy.Policy) *Session {
	if pol == nil {
		pol = policy.Default()
	}
	s := &Session{ExecsBy: map[string]int{}, Connects: map[string]int{}, ConnectsPerIteration: map[string]float64{},
		Use: map[string]*Usage{WhoAgent: {}, WhoTools: {}, WhoOther: {}}, Shells: []Shell{}, Calls: []Call{}}
	var in detect.Input
	if a.Meta != nil {
		in.Meta = *a.Meta
		s.ID = a.Meta.ID
	}
	in.Events, in.Transcript, in.Attribution, in.Policy = a.Events, a.Transcript, a.Attribution, pol
	if a.Attribution != nil && a.Attribution.Events != nil {
		in.Events = a.Attribution.Events
	}
	s.Agent, s.Version = detect.AgentOf(a.Transcript, in.Meta)

	start, end := runSpan(a, in.Events)
	s.Wall = end.Sub(start).Seconds()
	s.Iterations, s.Estimated = iterations(a.Transcript)
	s.NoTranscript = a.Transcript == nil
	if s.Wall > 0 {
		s.PerTen = float64(s.Iterations) * 10 / s.Wall
	}

	w := newWhose(a)
	for _, e := range in.Events {
		switch e.Kind {
		case event.KindExec:
			s.ExecsBy[w.of(e)]++
			s.Execs++
		case event.KindExit:
			s.Use[w.of(e)].add(e)
		}
	}
	s.Shells = shells(a, w)
	if s.Iterations > 0 {
		s.ExecsPerIteration = float64(s.Execs) / float64(s.Iterations)
	}

	s.Flows = []Flow{}
	for _, f := range detect.Traffic(in) {
		s.Flows = append(s.Flows, Flow{Dest: f.Dest, Class: f.Class, Connects: len(f.Connects), Sent: f.Sent, Recv: f.Recv})
		s.Connects[f.Class] += len(f.Connects)
	}
	if s.Iterations > 0 {
		for c, n := range s.Connects {
			s.ConnectsPerIteration[c] = float64(n) / float64(s.Iterations)
		}
	}

	s.Calls = calls(a, in)
	s.Time = timeSplit(a.Transcript, start, end)
	return s
}

// runSpan is the agent's run: from its root process's start to its exit,
// else the session's start and end, else its first and last event.
func runSpan(a *analysis.Analysis, evs []*event.Event) (start, end time.Time) {
	if a.Meta != nil && a.Attribution != nil && a.Attribution.Tree != nil {
		for _, p := range a.Attribution.Tree.Processes() {
			if p.Parent != nil || p.Top().PID != uint32(a.Meta.RootPID) {
				continue
			}
			if x := p.ExitEvent(); x != nil && x.DurationNS() > 0 {
				return x.TS.Add(-time.Duration(x.DurationNS())), x.TS
			}
		}
	}
	if a.Meta != nil && !a.Meta.StartedAt.IsZero() && a.Meta.EndedAt.After(a.Meta.StartedAt) {
		return a.Meta.StartedAt, a.Meta.EndedAt
	}
	if len(evs) > 0 {
		return evs[0].TS, evs[len(evs)-1].TS
	}
	return time.Time{}, time.Time{}
}

// iterations counts the model responses of tr, or estimates them from its
// tool calls when it records none.
func iterations(tr *transcript.Transcript) (n int, estimated bool) {
	if tr == nil {
		return 0, false
	}
	if len(tr.Responses) > 0 {
		return len(tr.Responses), false
	}
	var busyUntil time.Time
	for i, c := range tr.ToolCalls {
		if i == 0 || c.StartedAt.IsZero() || c.StartedAt.After(busyUntil) {
			n++
		}
		if c.EndedAt.After(busyUntil) {
			busyUntil = c.EndedAt
		}
	}
	return n + 1, true // and the answer that ended the session
}

// whose says who an event's process acted for.
type whose struct {
	agent map[string]bool
	a     *analysis.Analysis
}

func newWhose(a *analysis.Analysis) whose {
	w := whose{agent: map[string]bool{}, a: a}
	if a.Attribution != nil {
		for _, id := range a.Attribution.AgentExecIDs {
			w.agent[id] = true
		}
	}
	return w
}

func (w whose) of(e *event.Event) string {
	if w.agent[e.ExecID] {
		return WhoAgent
	}
	if w.a.Attribution != nil {
		if at := w.a.Attribution.Of(e.Seq); at != nil && at.ToolCallID != "" {
			return WhoTools
		}
	}
	return WhoOther
}

// shellNames are the program names (policy.ProgramName) of shells.
var shellNames = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true, "fish": true, "busybox": true}

// shells lists the shells the session ran and how long each lived.
func shells(a *analysis.Analysis, w whose) []Shell {
	out := []Shell{}
	if a.Attribution == nil || a.Attribution.Tree == nil {
		return out
	}
	for _, p := range a.Attribution.Tree.Processes() {
		exit := p.ExitEvent()
		for _, im := range p.Images {
			e := im.Exec
			if e == nil {
				continue
			}
			name := policy.ProgramName(e.Path)
			if !shellNames[name] {
				continue
			}
			sh := Shell{Seq: e.Seq, Who: w.of(e), Program: name, Life: -1}
			if exit != nil {
				sh.Life = exit.TS.Sub(e.TS).Seconds()
			}
			out = append(out, sh)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// calls measures each tool call: its processes as the baseline sample
// counts them, its wall time, and what its processes used.
func calls(a *analysis.Analysis, in detect.Input) []Call {
	out := []Call{}
	if a.Transcript == nil {
		return out
	}
	smp := detect.Observe(in)
	nth := map[string]int{} // calls of each kind seen so far
	for _, c := range a.Transcript.ToolCalls {
		kind := string(c.Kind)
		if kind == "" {
			kind = baseline.KindNone
		}
		cl := Call{ID: c.ID, Tool: c.Tool, Kind: kind, Wall: -1}
		if k := smp.Kinds[kind]; k != nil && nth[kind] < len(k.Procs) {
			cl.Procs = k.Procs[nth[kind]]
		}
		nth[kind]++
		if !c.StartedAt.IsZero() && !c.EndedAt.Before(c.StartedAt) {
			cl.Wall = c.EndedAt.Sub(c.StartedAt).Seconds()
		}
		if act := callActivity(a, c.ID); act != nil {
			for _, seq := range act.Events {
				if e := eventAt(in.Events, seq); e != nil && e.Kind == event.KindExit {
					if cl.Use == nil {
						cl.Use = &Usage{}
					}
					cl.Use.add(e)
				}
			}
		}
		out = append(out, cl)
	}
	return out
}

// callActivity is what correlate found call id did, nil for nothing.
func callActivity(a *analysis.Analysis, id string) *correlate.CallActivity {
	if a.Attribution == nil {
		return nil
	}
	return a.Attribution.ByCall[id]
}

// eventAt finds the event with seq in evs, which are in seq order.
func eventAt(evs []*event.Event, seq uint64) *event.Event {
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Seq >= seq })
	if i < len(evs) && evs[i].Seq == seq {
		return evs[i]
	}
	return nil
}

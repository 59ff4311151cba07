package report

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"slices"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// TranscriptAuto and TranscriptNone are the special values of
// Options.Transcript; anything else is a path.
const (
	TranscriptAuto = "auto"
	TranscriptNone = "none"
)

// Options say what to analyze.
type Options struct {
	// SessionPath is the session file; "" for a transcript-only report.
	SessionPath string
	// Transcript is auto (discover it from the session), none, or a path.
	Transcript string
	// Policy is the policy to apply (nil: the default).
	Policy *policy.Policy
}

// ErrNothing is returned when neither a session nor a transcript is given.
var ErrNothing = errors.New("nothing to report: give a SESSION, --transcript FILE, or both")

// maxPresize bounds the events slice Analyze sizes from the session's
// event count, which a damaged file could overstate.
const maxPresize = 1 << 24

// Analyze reads the session and the transcript, attributes the events,
// runs the rules and builds the report.
func Analyze(o Options) (*Report, error) {
	pol := o.Policy
	if pol == nil {
		pol = policy.Default()
	}
	if o.SessionPath == "" && (o.Transcript == "" || o.Transcript == TranscriptAuto || o.Transcript == TranscriptNone) {
		return nil, ErrNothing
	}
	var (
		meta   *session.Meta
		events []*event.Event
		sum    *Summary
	)
	if o.SessionPath != "" {
		r, err := session.Open(o.SessionPath)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		m := r.Meta()
		meta = &m
		sum = NewSummary(uint32(m.RootPID))
		// Sized up front: growing a million-event slice by doubling
		// copies it a dozen times and leaves the old arrays to the GC.
		events = make([]*event.Event, 0, min(m.Events, maxPresize))
		// The report keeps every event it reads, so a collection during
		// the read or the analysis finds little garbage and rescans the
		// whole growing heap: on a million events that was a fifth of the
		// report's time. The collector is off while reading and, once the
		// events are in, runs only if the heap outgrows them by a margin.
		defer batchGC()()
		err = r.Events(session.Filter{}, func(e *event.Event) error {
			events = append(events, e)
			sum.Observe(e)
			return nil
		})
		debug.SetMemoryLimit(heapBytes()*5/4 + 256<<20)
		if err != nil {
			return nil, err // it names the session
		}
		left, err := r.Leftovers()
		if err != nil {
			return nil, err
		}
		sum.Finish(m, left, m.ExitCode)
	}

	var tr *transcript.Transcript
	switch o.Transcript {
	case TranscriptNone:
	case "", TranscriptAuto:
		if meta != nil {
			tr = discover(meta)
		}
	default:
		var err error
		tr, err = transcript.ParseFile(o.Transcript, transcript.Options{})
		if err != nil {
			return nil, err
		}
	}

	var attr *correlate.Result
	var findings []detect.Finding
	if meta != nil {
		// Every rule weighs the agent's account against the kernel's;
		// without a session there is nothing to weigh it against.
		attr = correlate.Attribute(events, tr, *meta, correlate.Options{})
		findings = detect.Run(detect.Input{Events: events, Transcript: tr, Attribution: attr, Meta: *meta, Policy: pol})
	}
	rep := Build(meta, sum, tr, attr, findings)
	if meta != nil && meta.InProgress {
		rep.Notes = append(rep.Notes, "the session is still being recorded: events after the last flush are not in this report")
	} else if meta != nil && !meta.CleanClose {
		rep.Notes = append(rep.Notes, "the session was not closed cleanly (polygraph was killed): events after the last flush are missing")
	}
	if meta != nil && sum.LostTotal > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%d events were lost while recording: what the kernel saw is incomplete", sum.LostTotal))
	}
	return rep, nil
}

// batchGC turns the garbage collector off, for a job whose heap is
// nearly all live, and returns what restores it. A soft memory limit
// (debug.SetMemoryLimit) set meanwhile still makes it collect when the
// heap reaches the limit.
func batchGC() (restore func()) {
	pct := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(-1)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(pct)
	}
}

// heapBytes is the memory the heap's objects take, live or not yet
// collected.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 1 << 30
	}
	return int64(s[0].Value.Uint64())
}

// discover finds the transcript the session's agent wrote: the main
// (non-subagent) file with the most overlap, parsed with its subagents.
func discover(meta *session.Meta) *transcript.Transcript {
	found, err := transcript.Discover(meta.Home, meta.Cwd, meta.StartedAt, meta.EndedAt)
	if err != nil {
		slog.Debug("transcript discovery failed", "error", err)
		return nil
	}
	found = slices.DeleteFunc(found, func(f transcript.Found) bool { return f.Subagent })
	if len(found) == 0 {
		return nil
	}
	// The latest-starting main file that began inside the session is the
	// agent's; earlier ones may be resumed sessions of another run.
	best := found[len(found)-1]
	for _, f := range found {
		if !f.FirstAt.Before(meta.StartedAt) {
			best = f
			break
		}
	}
	tr, err := transcript.ParseFile(best.Path, transcript.Options{})
	if err != nil {
		slog.Warn("could not read the discovered transcript", "path", best.Path, "error", err)
		return nil
	}
	return tr
}

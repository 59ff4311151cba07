package analysis

import (
	"cmp"
	"context"
	"os"
	"slices"
	"time"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Engine is the one analysis of a session, fed as the session is
// recorded (Live, on the recorder's pipeline) or as it is read back from
// its file (Analyze, for report, export and the pages). Both feed it the
// same events in the same seq order, the same verdicts and the same
// metadata, and Decide runs the same attribution and rules over what it
// holds; so the findings a live session ends with are the findings its
// report computes afterwards, by construction, and tests check it.
//
// The agent's transcript is followed while the agent writes it: each
// Decide reads it again where it changed, so a finding carries its tool
// call as soon as the call is in the transcript.
//
// An Engine is not safe for concurrent use; Live guards its own.
type Engine struct {
	o    EngineOptions
	meta manifest.Meta
	// events are every event added, in seq order.
	events []*event.Event
	// sum, when set, observes every event added (replay keeps one; live
	// builds one at the end, see Live.finish).
	sum *report.Summary
	// verdicts are the exec verdict rows by exec id and role, as the
	// session stores them (manifest.Verdict).
	verdicts map[verdictKey]manifest.Verdict
	left     []manifest.Leftover
	follow   *follower
	// base caches the baseline for the agent and version it was loaded
	// for (a transcript found later names the agent).
	base     *baseline.Profile
	baseFor  [2]string
	baseDone bool
}

// EngineOptions say how an Engine judges.
type EngineOptions struct {
	// Policy tunes the rules (nil: policy.Default()).
	Policy *policy.Policy
	// Transcript is TranscriptAuto (discover the agent's, and follow
	// it), TranscriptNone, or a file to follow.
	Transcript string
	// Home is the polygraph home whose baseline of the session's agent
	// the baseline-deviation rule uses; "": none.
	Home string
}

type verdictKey struct{ exec, role string }

// NewEngine starts the analysis of the session meta describes.
func NewEngine(meta manifest.Meta, o EngineOptions) *Engine {
	if o.Policy == nil {
		o.Policy = policy.Default()
	}
	if o.Transcript == "" {
		o.Transcript = TranscriptAuto
	}
	return &Engine{o: o, meta: meta, verdicts: map[verdictKey]manifest.Verdict{}, follow: &follower{opt: o.Transcript}}
}

// Add takes the session's next event; events come in seq order.
func (e *Engine) Add(ev *event.Event) {
	e.events = append(e.events, ev)
	if e.sum != nil {
		e.sum.Observe(ev)
	}
}

// AddVerdict takes an exec verdict row; a later row for the same exec
// and role replaces an earlier one, as the session's table does.
func (e *Engine) AddVerdict(v manifest.Verdict) {
	e.verdicts[verdictKey{v.ExecID, v.Role}] = v
}

// SetMeta replaces the session's metadata (a root pid learnt, loss
// counters, the end).
func (e *Engine) SetMeta(m manifest.Meta) { e.meta = m }

// Meta is the session's metadata as the engine holds it.
func (e *Engine) Meta() manifest.Meta { return e.meta }

// SetLeftovers records the processes left running when tracing stopped.
func (e *Engine) SetLeftovers(l []manifest.Leftover) { e.left = slices.Clone(l) }

// Len is the number of events added.
func (e *Engine) Len() int { return len(e.events) }

// view is a copy of e that later Adds do not change: what a decision
// reads while the live engine goes on taking events. It shares the
// transcript follower, which only decisions use.
func (e *Engine) view() *Engine {
	v := *e
	v.events = e.events[:len(e.events):len(e.events)]
	v.verdicts = make(map[verdictKey]manifest.Verdict, len(e.verdicts))
	for k, r := range e.verdicts {
		v.verdicts[k] = r
	}
	v.left = slices.Clone(e.left)
	v.sum = nil
	return &v
}

// verdictRows are the verdict rows in the order the session's table
// reads them (exec id, then role).
func (e *Engine) verdictRows() []manifest.Verdict {
	rows := make([]manifest.Verdict, 0, len(e.verdicts))
	for _, v := range e.verdicts {
		rows = append(rows, v)
	}
	slices.SortFunc(rows, func(a, b manifest.Verdict) int {
		return cmp.Or(cmp.Compare(a.ExecID, b.ExecID), cmp.Compare(a.Role, b.Role))
	})
	return rows
}

// Decide reads the transcript again where it changed, attributes every
// event and runs the rules: the analysis of the session as it stands.
// final says the session is complete (its metadata, leftovers and
// verdicts are in): the transcript is then looked for once more, as a
// report would.
func (e *Engine) Decide(ctx context.Context, final bool) (*Analysis, error) {
	meta := e.meta
	tr, err := e.follow.refresh(ctx, &meta, e.events, final)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := &Analysis{Meta: &meta, Summary: e.sum, Transcript: tr, Verdicts: execResults(e.verdictRows()), Leftovers: e.left}
	a.Attribution = correlate.Attribute(e.events, tr, meta, correlate.Options{})
	a.Events = a.Attribution.Events
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a.Baseline, err = e.baseline(tr, meta); err != nil {
		return nil, err
	}
	in := detect.Input{Events: a.Events, Transcript: tr, Attribution: a.Attribution, Meta: meta, Leftovers: e.left,
		Policy: e.o.Policy, Verdicts: a.Verdicts, Baseline: a.Baseline, Serial: !final}
	in.Resolvers, in.Hosts = systemNames()
	a.Findings = detect.Run(in)
	return a, nil
}

// baseline is the baseline of the session's agent, loaded again when the
// transcript names another agent or version.
func (e *Engine) baseline(tr *transcript.Transcript, meta manifest.Meta) (*baseline.Profile, error) {
	if e.o.Home == "" {
		return nil, nil
	}
	agent, version := detect.AgentOf(tr, meta)
	if e.baseDone && e.baseFor == [2]string{agent, version} {
		return e.base, nil
	}
	p, err := loadBaseline(e.o.Home, tr, meta)
	if err != nil {
		return nil, err
	}
	e.base, e.baseFor, e.baseDone = p, [2]string{agent, version}, true
	return p, nil
}

// follower keeps the transcript of a session up to date: the file given,
// or the one discovery finds, read again whenever it changed.
type follower struct {
	opt string // TranscriptAuto, TranscriptNone or a path

	path     string // the file followed ("" until one is found)
	size     int64
	mtime    time.Time
	tr       *transcript.Transcript
	lastFind time.Time // the last discovery, while live
}

// How often a live session looks for its transcript: often until one is
// found (the agent writes it moments after it starts, and a finding
// waits for it to name its call), then now and then, since an agent may
// start another file (a resumed or new conversation) that discovery
// would now prefer.
const (
	discoverEvery   = 100 * time.Millisecond
	rediscoverEvery = time.Second
)

// poll reports whether the transcript must be read again: discovery,
// at most every rediscoverEvery, found another file, or the file
// followed changed.
func (f *follower) poll(ctx context.Context, meta *manifest.Meta, events []*event.Event) bool {
	switch f.opt {
	case TranscriptNone:
		return false
	case TranscriptAuto:
		every := rediscoverEvery
		if f.path == "" {
			every = discoverEvery
		}
		if time.Since(f.lastFind) >= every {
			f.lastFind = time.Now()
			if p := discoverPath(ctx, meta, events); p != "" && p != f.path {
				f.path, f.size, f.mtime = p, -1, time.Time{}
				return true
			}
		}
	default:
		f.path = f.opt
	}
	if f.path == "" {
		return false
	}
	st, err := os.Stat(f.path)
	if err != nil {
		return false // gone or not there yet: keep what was read
	}
	return st.Size() != f.size || !st.ModTime().Equal(f.mtime)
}

// refresh returns the transcript as it now stands. final discovers (or
// parses the file given) exactly as a report of the finished session
// does, so the final decision reads the transcript the report reads.
func (f *follower) refresh(ctx context.Context, meta *manifest.Meta, events []*event.Event, final bool) (*transcript.Transcript, error) {
	switch {
	case f.opt == TranscriptNone:
		return nil, nil
	case final && f.opt == TranscriptAuto:
		return discover(ctx, meta, events), nil
	case final:
		return transcript.ParseFileContext(ctx, f.opt, transcript.Options{})
	}
	if !f.poll(ctx, meta, events) {
		return f.tr, nil
	}
	st, err := os.Stat(f.path)
	if err != nil {
		return f.tr, nil
	}
	tr, err := transcript.ParseFileContext(ctx, f.path, transcript.Options{})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// Caught mid-write (a document rewritten whole), or not a
		// transcript yet: keep the last good read and try again.
		return f.tr, nil
	}
	f.tr, f.size, f.mtime = tr, st.Size(), st.ModTime()
	return tr, nil
}

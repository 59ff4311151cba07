// Package analysis is polygraph's pipeline from a recorded session to a
// report: it reads the session's events (summarising them on the way),
// finds or reads the agent's transcript, attributes the events to tool
// calls and runs the rules. Package report only builds and renders what
// comes out; the report, run, attach and demo verbs all go through Run.
package analysis

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/report"
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
	// Home is the polygraph home whose baseline of the session's agent,
	// if it has one, the baseline-deviation rule uses (observe.go); "":
	// no baseline.
	Home string
	// NoRedact leaves the secrets of command lines, environments and
	// results in the report (report --no-redact, for root only); by
	// default Run's report masks them (report.Redact).
	NoRedact bool
	// Charts, when set, draws the session's charts for Run's report
	// (report.Report.SetCharts), which its HTML page shows: package stats
	// draws them (stats.ReportCharts), and reads this package, so the
	// caller hands it in.
	Charts func(*Analysis) []report.Chart
	// Loaded, when set, is called once the session's events are read,
	// before they are analysed: where a command tunes the collector for
	// a heap that is now nearly all live (the library sets no
	// process-wide knobs itself).
	Loaded func()
}

// ErrNothing is returned when neither a session nor a transcript is given.
var ErrNothing = errors.New("nothing to report: give a SESSION, --transcript FILE, or both")

// maxPresize bounds the events slice Run sizes from the session's event
// count, which a damaged file could overstate.
const maxPresize = 1 << 24

// checkEvery is how many events the read loop takes between looks at the
// context: often enough to stop within a millisecond, rarely enough to
// cost nothing.
const checkEvery = 1024

// Analysis is one session's analysis: what the session held, the
// transcript, the attribution and the findings. report.Build renders it
// (Report); the exporters and the live pipeline read it as it is.
type Analysis struct {
	// Meta is the session's metadata; nil for a transcript alone.
	Meta *manifest.Meta
	// Summary counts what the session holds (nil without a session, and
	// in the live analysis before the session ends).
	Summary *report.Summary
	// Events are the session's events in seq order.
	Events []*event.Event
	// Transcript is the agent's account (nil: none found or asked for).
	Transcript *transcript.Transcript
	// Attribution is correlate's verdict (nil without a session).
	Attribution *correlate.Result
	// Findings are the rules' findings, sorted, with ids F1…Fn.
	Findings []detect.Finding
	// Verdicts are the exec verdicts recorded with the session.
	Verdicts  []integrity.Result
	Leftovers []manifest.Leftover
	// Baseline is the profile the session was judged against (nil: none).
	Baseline *baseline.Profile
	// Damage is what reading the session file found wrong with it.
	Damage []session.Damage
}

// Run reads the session and the transcript, attributes the events, runs
// the rules and builds the report. It stops with ctx's error when ctx is
// cancelled: between stages, and while reading events.
func Run(ctx context.Context, o Options) (*report.Report, error) {
	a, err := Analyze(ctx, o)
	if err != nil {
		return nil, err
	}
	var rep *report.Report
	if o.NoRedact {
		rep = a.UnredactedReport()
	} else {
		rep = a.Report()
	}
	if o.Charts != nil {
		rep.SetCharts(o.Charts(a))
	}
	return rep, nil
}

// Analyze reads the session into an Engine and decides, as the live
// analysis decides at the session's end; with a transcript alone it
// reads that. It stops with ctx's error when ctx is cancelled: between
// stages, and while reading events.
func Analyze(ctx context.Context, o Options) (*Analysis, error) {
	if o.SessionPath == "" {
		if o.Transcript == "" || o.Transcript == TranscriptAuto || o.Transcript == TranscriptNone {
			return nil, ErrNothing
		}
		tr, err := transcript.ParseFileContext(ctx, o.Transcript, transcript.Options{})
		if err != nil {
			return nil, err
		}
		return &Analysis{Transcript: tr}, nil
	}
	eng, damage, err := Replay(ctx, o.SessionPath, EngineOptions{Policy: o.Policy, Transcript: o.Transcript, Home: o.Home})
	if err != nil {
		return nil, err
	}
	if o.Loaded != nil {
		o.Loaded()
	}
	a, err := eng.Decide(ctx, true)
	if err != nil {
		return nil, err
	}
	a.Damage = damage
	return a, nil
}

// Report builds the report of the analysis, with every secret of a
// command line, environment or result masked (report.Redact): what every
// report, page and stream shows.
func (a *Analysis) Report() *report.Report {
	rep := a.UnredactedReport()
	rep.Redact()
	return rep
}

// UnredactedReport builds the report of the analysis with every string as
// recorded: for `report --no-redact`, which only root may ask for.
func (a *Analysis) UnredactedReport() *report.Report {
	rep := report.Build(a.Meta, a.Summary, a.Transcript, a.Attribution, a.Findings)
	rep.AddIntegrity(a.Attribution, integrityViews(a.Verdicts))
	rep.Notes = append(rep.Notes, integrityNotes(a.Meta, a.Damage)...)
	rep.Notes = append(rep.Notes, baselineNotes(a.Baseline)...)
	return rep
}

// integrityNotes are the report's notes on what reading the session found
// wrong with the file: the verdict when it was damaged or modified after
// recording (docs/integrity-of-record.md), then one note per problem.
func integrityNotes(meta *manifest.Meta, damage []session.Damage) []string {
	var notes []string
	if meta != nil {
		switch meta.Integrity {
		case session.IntegrityModified:
			notes = append(notes, "session modified after recording: its hash chain or seal does not match, so this report may not show what the kernel saw")
		case session.IntegrityDamaged:
			notes = append(notes, "the session file is damaged: the events it could not read are missing from this report")
		}
	}
	for _, d := range damage {
		notes = append(notes, "session file: "+d.String())
	}
	return notes
}

// systemNames reads this system's DNS resolvers and hosts file, which
// the egress rule judges port 53 and names by; a file that cannot be read
// names nothing.
func systemNames() (resolvers []string, hosts map[string]string) {
	if data, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		resolvers = detect.ParseResolvConf(data)
	}
	if data, err := os.ReadFile("/etc/hosts"); err == nil {
		hosts = detect.ParseHosts(data)
	}
	return resolvers, hosts
}

// Replay reads the session at path into a new Engine, summarising its
// events on the way, with its leftovers and exec verdicts, and returns
// what the read found wrong with the file.
func Replay(ctx context.Context, path string, o EngineOptions) (*Engine, []session.Damage, error) {
	r, err := session.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	m := r.Meta()
	eng := NewEngine(m, o)
	eng.sum = report.NewSummary(uint32(m.RootPID))
	// Sized up front: growing a million-event slice by doubling copies it
	// a dozen times and leaves the old arrays to the GC.
	eng.events = make([]*event.Event, 0, min(m.Events, maxPresize))
	err = r.EventsContext(ctx, session.Filter{}, func(e *event.Event) error {
		if eng.Len()%checkEvery == 0 {
			if err := ctx.Err(); err != nil {
				// Returned as is by Events, which names the session
				// only in its own errors.
				return fmt.Errorf("read session %s: %w", path, err)
			}
		}
		eng.Add(e)
		return nil
	})
	if err != nil {
		return nil, nil, err // it names the session (see above)
	}
	// The verdict on the file is known only now that every chunk was read.
	m.Integrity = r.Meta().Integrity
	eng.SetMeta(m)
	left, err := r.Leftovers()
	if err != nil {
		return nil, nil, err
	}
	eng.SetLeftovers(left)
	rows, err := r.Verdicts()
	if err != nil {
		return nil, nil, err
	}
	for _, v := range rows {
		eng.AddVerdict(v)
	}
	eng.sum.Finish(m, left, m.ExitCode)
	return eng, r.Damage(), nil
}

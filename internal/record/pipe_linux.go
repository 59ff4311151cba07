package record

import (
	"context"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/pipeline"
	"github.com/polygraph/polygraph/internal/session"
)

// liveListener is the live analysis's name on the pipeline (its loss is
// reported under it).
const liveListener = "live"

// pipe is a recording's pipeline: the bus from the sensor to the session
// writer and its listeners, the exec checks and the live analysis.
type pipe struct {
	bus    *pipeline.Bus
	checks *integrity.SessionCheck
	live   *analysis.Live
}

// startPipeline wires a recording: every event goes to the session
// writer (which numbers it), then to the exec checks, the live analysis
// (o.Live) and o.Observe; the exec verdicts go to the session and the
// live analysis.
func startPipeline(ctx context.Context, o Options, w *session.Writer) *pipe {
	p := &pipe{bus: pipeline.New(w.Add)}
	sinks := integrity.Fan{w}
	if o.Live != nil {
		lo := *o.Live
		lo.Meta = w.Meta
		p.live = analysis.StartLive(context.WithoutCancel(ctx), w.Meta(), lo)
		sinks = append(sinks, p.live)
	}
	p.checks = startExecCheck(ctx, o, w.Meta(), sinks)
	w.SetTrustFiles(p.checks.TrustFiles())
	p.bus.Tap("integrity", p.checks.Submit)
	if p.live != nil {
		p.bus.Attach(liveListener, p.live, 0)
	}
	if o.Observe != nil {
		p.bus.Attach("observe", observer(o.Observe), 0)
	}
	return p
}

// close hands the listeners what they hold and waits for them, then for
// the exec checks' last verdicts.
func (p *pipe) close() {
	p.bus.Close()
	p.checks.Close()
}

// observer is Options.Observe as a pipeline listener.
type observer func(*event.Event)

func (f observer) Events(batch []*event.Event) {
	for _, ev := range batch {
		f(ev)
	}
}

func (observer) Close() {}

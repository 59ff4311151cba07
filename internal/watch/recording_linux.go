package watch

import (
	"context"
	"slices"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/pipeline"
	"github.com/polygraph/polygraph/internal/record"
	"github.com/polygraph/polygraph/internal/session"
)

// recording is one session watch records: an agent's tree, or the
// outsiders'. Its events go through a pipeline, as under run: to the
// session writer, the exec checks and a live analysis that runs every
// rule, tuned by the policy, and writes its findings to watch's stream.
type recording struct {
	w     *session.Writer
	bus   *pipeline.Bus
	check *integrity.SessionCheck // nil for the outsiders
	live  *analysis.Live
}

// liveListener is the live analysis's name on a session's pipeline.
const liveListener = "live"

// record creates the session meta describes and its pipeline; path is
// the PATH its programs resolve with, for the exec checks ("" checks
// none: the outsiders session's are the host's, not an agent's).
func (w *watcher) record(meta manifest.Meta, path, transcript string) (*recording, error) {
	// The homes whose stores watch watches are homes to the rules too
	// ("~/"), whether or not /etc/passwd lists them (--home).
	added := false
	for _, h := range w.o.Homes {
		if !slices.Contains(meta.Homes, h) {
			meta.Homes = append(meta.Homes, h)
			added = true
		}
	}
	if added {
		meta.Secrets = record.Secrets(meta.Homes)
	}
	meta.Hooks = w.s.HookPath()
	sw, err := session.Create(w.o.Home, meta)
	if err != nil {
		return nil, err
	}
	w.openIDs[sw.Meta().ID] = true
	r := &recording{w: sw, bus: pipeline.New(sw.Add)}
	r.live = analysis.StartLive(w.ctx, sw.Meta(), analysis.LiveOptions{
		EngineOptions: analysis.EngineOptions{Policy: w.o.Policy, Transcript: transcript, Home: w.o.Home},
		Meta:          sw.Meta, Sinks: append([]analysis.Sink{analysis.StreamSink{W: w.out}}, w.o.Sinks...)})
	if path != "" {
		r.check = integrity.StartSession(w.ctx, w.o.Home, integrity.Options{Workspaces: []string{meta.Cwd}, PATH: path, Session: meta.ID},
			integrity.Fan{sw, r.live})
		sw.SetTrustFiles(r.check.TrustFiles())
		r.bus.Tap("integrity", r.check.Submit)
	}
	r.bus.Attach(liveListener, r.live, 0)
	return r, nil
}

// close drains the pipeline and the exec checks, closes the session and
// makes the live analysis's last decision.
func (r *recording) close(ctx context.Context, exit *int) error {
	r.bus.Close()
	r.check.Close()
	err := r.w.Close(exit)
	if _, lerr := r.live.Finish(context.WithoutCancel(ctx), r.w.Meta(), nil, r.bus.Lost()[liveListener]); err == nil {
		err = lerr
	}
	return err
}

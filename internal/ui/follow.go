package ui

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/stats"
)

// follower follows one session while `run` or `watch` records it: it
// reads the events committed since its last read (session.Tail) into the
// live analysis (analysis.Live, the Engine that `run` decides with, so a
// page shows what `report` will), and renders every decision that changes
// the page for the pages following it. When the session ends it makes the
// view of the finished session, as the report makes it, and stops; it
// also stops once nobody has followed it for followIdle.
type follower struct {
	s    *store
	m    session.Meta
	stop context.CancelFunc

	mu      sync.Mutex
	meta    manifest.Meta
	v       *view
	changed chan struct{} // closed and made anew at every change
	readers int
	idle    time.Time // since when nobody follows
	done    bool

	// charts are the session's charts as last drawn, at chartsAt: a live
	// page draws them again at most every chartsEvery (stats measures
	// the whole session each time). Only Decided touches them, on the
	// live analysis's goroutine.
	charts   []report.Chart
	chartsAt time.Time
}

// How a follower polls: the events every tailEvery (the writer commits
// every 200 ms), the session's metadata (its end, loss counters) and
// verdicts every metaEvery.
const (
	tailEvery   = 100 * time.Millisecond
	metaEvery   = 500 * time.Millisecond
	followIdle  = time.Minute
	chartsEvery = 3 * time.Second
)

// follow returns the follower of session m, starting it if none runs.
func (s *store) follow(m session.Meta) *follower {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.follows[m.Path]; f != nil {
		return f
	}
	ctx, stop := context.WithCancel(s.ctx)
	f := &follower{s: s, m: m, stop: stop, meta: m, changed: make(chan struct{}), idle: time.Now()}
	s.follows[m.Path] = f
	go f.run(ctx)
	return f
}

// following is the follower of session m, nil when none runs.
func (s *store) following(m session.Meta) *follower {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.follows[m.Path]
}

// current is the latest view, nil before the first decision.
func (f *follower) current() *view {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.v
}

// next waits until the view is newer than version (or the follower is
// done, or ctx ends) and returns it.
func (f *follower) next(ctx context.Context, version uint64) (*view, bool) {
	for {
		f.mu.Lock()
		v, ch, done := f.v, f.changed, f.done
		f.mu.Unlock()
		if v != nil && (v.version > version || v.final) {
			return v, true
		}
		if done {
			return v, v != nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// attach and detach count the pages following; the follower stops once
// none has for followIdle.
func (f *follower) attach() {
	f.mu.Lock()
	f.readers++
	f.mu.Unlock()
}

func (f *follower) detach() {
	f.mu.Lock()
	f.readers--
	if f.readers == 0 {
		f.idle = time.Now()
	}
	f.mu.Unlock()
}

// publish makes v the current view if it changes the page.
func (f *follower) publish(v *view) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.v != nil && !v.final && bytes.Equal(f.v.html, v.html) {
		return
	}
	if f.v != nil {
		v.version = f.v.version + 1
	} else {
		v.version = 1
	}
	f.v = v
	close(f.changed)
	f.changed = make(chan struct{})
}

// Decided renders a decision of the live analysis (analysis.Sink).
func (f *follower) Decided(a *analysis.Analysis, _ []findings.Record, final bool) {
	if final {
		return // the view of the finished session is made from its file (run)
	}
	if time.Since(f.chartsAt) >= chartsEvery {
		f.charts, f.chartsAt = stats.ReportCharts(a, f.s.o.Policy), time.Now()
	}
	v, err := render(a, false, f.charts)
	if err != nil {
		slog.Warn("ui: cannot render a live decision", "session", f.m.ID, "error", err)
		return
	}
	v.row.Live, v.row.Status = true, "live"
	f.publish(v)
}

// metaNow is the session's metadata as last read (LiveOptions.Meta).
func (f *follower) metaNow() manifest.Meta {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.meta
}

// run follows the session until it ends, nobody follows it, or ctx ends.
func (f *follower) run(ctx context.Context) {
	defer f.finish()
	r, err := session.Open(f.m.Path)
	if err != nil {
		slog.Warn("ui: cannot follow a session", "session", f.m.ID, "error", err)
		return
	}
	defer r.Close()
	tail, err := r.Tail()
	if err != nil {
		slog.Warn("ui: cannot follow a session", "session", f.m.ID, "error", err)
		return
	}
	o := f.s.o
	live := analysis.StartLive(ctx, r.Meta(), analysis.LiveOptions{
		EngineOptions: analysis.EngineOptions{Policy: o.Policy, Transcript: analysis.TranscriptAuto, Home: o.Home},
		Meta:          f.metaNow,
		Sinks:         []analysis.Sink{f},
	})
	seen := map[[2]string]string{} // verdict rows handed over: (exec, role) → status
	read := func() {
		var batch []*event.Event
		if _, err := tail.Next(func(e *event.Event) error { batch = append(batch, e); return nil }); err != nil {
			slog.Debug("ui: follow", "session", f.m.ID, "error", err)
		}
		if len(batch) > 0 {
			live.Events(batch)
		}
	}
	tick := time.NewTicker(tailEvery)
	defer tick.Stop()
	lastMeta := time.Time{}
	for {
		read()
		if time.Since(lastMeta) >= metaEvery {
			lastMeta = time.Now()
			m, left, ended := f.reread(seen, live)
			if ended {
				read()
				if _, err := live.Finish(ctx, m, left, 0); err != nil && ctx.Err() == nil {
					slog.Warn("ui: live analysis", "session", f.m.ID, "error", err)
				}
				m.InProgress = false
				if v, err := f.s.analyse(m); err == nil {
					v.final = true
					f.publish(v)
					f.s.keep(m, v)
				} else if ctx.Err() == nil {
					slog.Warn("ui: cannot analyse the finished session", "session", f.m.ID, "error", err)
				}
				return
			}
		}
		f.mu.Lock()
		idle := f.readers == 0 && time.Since(f.idle) > followIdle
		f.mu.Unlock()
		if idle {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// reread reads the session's metadata and verdicts again: the live
// analysis takes the new verdicts, and the metadata (loss counters, the
// root pid, the end) through metaNow. ended says the writer is done.
func (f *follower) reread(seen map[[2]string]string, live *analysis.Live) (manifest.Meta, []manifest.Leftover, bool) {
	r, err := session.Open(f.m.Path)
	if err != nil {
		return f.metaNow(), nil, false
	}
	defer r.Close()
	m := r.Meta()
	f.mu.Lock()
	f.meta = m
	f.mu.Unlock()
	if vs, err := r.Verdicts(); err == nil {
		for _, v := range vs {
			k := [2]string{v.ExecID, v.Role}
			if seen[k] != v.Status {
				seen[k] = v.Status
				live.AddVerdict(v)
			}
		}
	}
	if m.InProgress {
		return m, nil, false
	}
	left, _ := r.Leftovers()
	return m, left, true
}

// finish marks the follower done and forgets it.
func (f *follower) finish() {
	f.stop()
	f.mu.Lock()
	f.done = true
	close(f.changed)
	f.changed = make(chan struct{})
	f.mu.Unlock()
	f.s.mu.Lock()
	if f.s.follows[f.m.Path] == f {
		delete(f.s.follows, f.m.Path)
	}
	f.s.mu.Unlock()
}

// keep stores the view of a session a follower saw end, so its page is
// served from it.
func (s *store) keep(m session.Meta, v *view) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[m.Path]
	if e == nil {
		e = &entry{}
		s.entries[m.Path] = e
	}
	e.meta, e.view, e.row, e.ok, e.shownAt = m, v, v.row, true, time.Now()
	if st, err := os.Stat(m.Path); err == nil {
		e.size, e.mtime = st.Size(), st.ModTime()
	}
	s.listedAt = time.Time{}
	s.trim()
}

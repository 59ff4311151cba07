package ui

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/redact"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/stats"
)

// store is what the server knows of the session store: the sessions
// listed, each finished session's view once analysed, and the followers
// of the sessions being recorded. A finished session is analysed once
// (in the background, newest first, so a page is ready when asked for;
// or when asked for first) and its view kept while its file is
// unchanged; the views of the least recently shown sessions are dropped
// past maxViews, their list rows kept.
type store struct {
	o   Options
	ctx context.Context

	mu       sync.Mutex
	list     []session.Meta
	listedAt time.Time
	// listGap is how long a listing stays: listEvery, or ten times what
	// the last listing took (a store of thousands of sessions opens each
	// file to list it), so listing costs a tenth of a core at most.
	listGap time.Duration
	entries map[string]*entry // by path
	follows map[string]*follower
	work    chan struct{}
}

// maxViews bounds the finished sessions whose rendered view is kept.
const maxViews = 32

// listEvery is how often the store lists the sessions again at most.
const listEvery = time.Second

// entry is one session file as the store knows it.
type entry struct {
	meta  session.Meta
	size  int64
	mtime time.Time
	// row sums up the analysis for the list (ok once analysed).
	row listRow
	ok  bool
	// view is the rendered session, nil when dropped or not analysed.
	view    *view
	shownAt time.Time
	err     error
	// busy is closed when the analysis under way ends (nil: none).
	busy chan struct{}
}

// view is a session rendered: its timeline's HTML fragment, and the
// timeline, whose calls' own views the page loads when opened.
type view struct {
	tl      *report.Timeline
	html    []byte
	row     listRow
	version uint64
	final   bool
}

// listRow is a session as the list shows it.
type listRow struct {
	ID, Agent, User, Host, Started, Duration, Command, Status, Integrity string
	Live                                                                 bool
	Analysed                                                             bool
	ToolCalls                                                            int
	Events                                                               uint64
	Findings                                                             []report.SevCount
	Error                                                                string
}

func newStore(ctx context.Context, o Options) *store {
	return &store{o: o, ctx: ctx, entries: map[string]*entry{}, follows: map[string]*follower{}, work: make(chan struct{}, 1)}
}

// sessions lists the sessions, newest first, at most every listEvery.
func (s *store) sessions() ([]session.Meta, error) {
	s.mu.Lock()
	if time.Since(s.listedAt) < s.listGap && s.list != nil {
		defer s.mu.Unlock()
		return s.list, nil
	}
	s.mu.Unlock()
	t0 := time.Now()
	list, err := session.List(s.o.Home)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list, s.listedAt = list, time.Now()
	s.listGap = min(30*time.Second, max(listEvery, 10*time.Since(t0)))
	for _, m := range list {
		e := s.entries[m.Path]
		if e == nil {
			e = &entry{}
			s.entries[m.Path] = e
		}
		if st, err := os.Stat(m.Path); err == nil && (st.Size() != e.size || !st.ModTime().Equal(e.mtime)) {
			if !m.InProgress && e.ok {
				// Changed since it was analysed (it ended, or was
				// written again): analyse it again.
				e.ok, e.view = false, nil
			}
			e.size, e.mtime = st.Size(), st.ModTime()
		}
		e.meta = m
	}
	select {
	case s.work <- struct{}{}:
	default:
	}
	return list, nil
}

// find is the session with id, from a fresh list if needed.
func (s *store) find(id string) (session.Meta, bool) {
	list, err := s.sessions()
	if err == nil {
		for _, m := range list {
			if m.ID == id {
				return m, true
			}
		}
	}
	s.mu.Lock()
	s.listedAt = time.Time{}
	s.mu.Unlock()
	if list, err = s.sessions(); err == nil {
		for _, m := range list {
			if m.ID == id {
				return m, true
			}
		}
	}
	return session.Meta{}, false
}

// rows are the list's rows, newest first.
func (s *store) rows() ([]listRow, error) {
	list, err := s.sessions()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]listRow, 0, len(list))
	for _, m := range list {
		row := metaRow(m)
		if f := s.follows[m.Path]; f != nil {
			if v := f.current(); v != nil {
				row = v.row
			}
		} else if e := s.entries[m.Path]; e != nil && e.ok && !m.InProgress {
			row = e.row
		}
		out = append(out, row)
	}
	return out, nil
}

// finished returns the rendered view of a finished session, analysing it
// now if it was not yet (or waiting for the analysis under way).
func (s *store) finished(m session.Meta) (*view, error) {
	for {
		s.mu.Lock()
		e := s.entries[m.Path]
		if e == nil {
			e = &entry{meta: m}
			s.entries[m.Path] = e
		}
		if e.view != nil {
			e.shownAt = time.Now()
			v := e.view
			s.mu.Unlock()
			return v, nil
		}
		if e.busy == nil {
			e.busy = make(chan struct{})
			busy := e.busy
			s.mu.Unlock()
			v, err := s.analyse(m)
			s.mu.Lock()
			e.busy = nil
			close(busy)
			e.err = err
			if err == nil {
				e.view, e.row, e.ok, e.shownAt = v, v.row, true, time.Now()
				s.trim()
			}
			s.mu.Unlock()
			return v, err
		}
		busy := e.busy
		s.mu.Unlock()
		select {
		case <-busy:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
		s.mu.Lock()
		err := e.err
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// trim drops the views of the least recently shown sessions past
// maxViews (their list rows stay). Called with s.mu held.
func (s *store) trim() {
	var kept []*entry
	for _, e := range s.entries {
		if e.view != nil {
			kept = append(kept, e)
		}
	}
	if len(kept) <= maxViews {
		return
	}
	slices.SortFunc(kept, func(a, b *entry) int { return b.shownAt.Compare(a.shownAt) })
	for _, e := range kept[maxViews:] {
		e.view = nil
	}
}

// analyse reads and decides a finished session as `polygraph report`
// does, and renders it.
func (s *store) analyse(m session.Meta) (*view, error) {
	t0 := time.Now()
	a, err := analysis.Analyze(s.ctx, analysis.Options{SessionPath: m.Path, Transcript: analysis.TranscriptAuto, Policy: s.o.Policy, Home: s.o.Home})
	if err != nil {
		return nil, err
	}
	v, err := render(a, true, stats.ReportCharts(a, s.o.Policy))
	if err == nil {
		slog.Debug("ui: analysed", "session", m.ID, "events", len(a.Events), "took", time.Since(t0))
	}
	return v, err
}

// render makes the view of an analysis: its redacted report's timeline,
// with the session's charts (stats.ReportCharts).
func render(a *analysis.Analysis, final bool, charts []report.Chart) (*view, error) {
	rep := a.Report()
	rep.SetCharts(charts)
	tl := rep.Timeline()
	if a.Meta != nil {
		tl.ServedFrom("/s/" + url.PathEscape(a.Meta.ID))
	}
	var b bytes.Buffer
	if err := report.WriteSession(&b, tl); err != nil {
		return nil, err
	}
	row := listRow{Analysed: true, ToolCalls: len(tl.Calls)}
	if a.Meta != nil {
		row = metaRow(*a.Meta)
		row.Analysed, row.ToolCalls = true, len(tl.Calls)
		row.Integrity = a.Meta.Integrity
	}
	row.Agent = tl.Head.Agent
	row.Findings = tl.Head.Findings
	return &view{tl: tl, html: b.Bytes(), row: row, final: final}, nil
}

// metaRow is what the list says of a session before it is analysed.
func metaRow(m session.Meta) listRow {
	row := listRow{ID: m.ID, User: m.User, Host: m.Hostname, Events: m.Events, Error: m.Error,
		Command: cutText(strings.Join(redact.Argv(m.Command), " "), 160)}
	row.Agent, _ = detect.AgentOf(nil, m)
	if !m.StartedAt.IsZero() {
		row.Started = m.StartedAt.Local().Format("2006-01-02 15:04:05")
	}
	switch {
	case m.Error != "":
		row.Status = "unreadable"
	case m.InProgress:
		row.Status, row.Live = "live", true
	case !m.CleanClose:
		row.Status = "not closed cleanly"
	case m.ExitCode != nil:
		row.Status = fmt.Sprintf("exit %d", *m.ExitCode)
	default:
		row.Status = "finished"
	}
	if !m.EndedAt.IsZero() && !m.StartedAt.IsZero() {
		row.Duration = m.EndedAt.Sub(m.StartedAt).Round(time.Millisecond).String()
	}
	return row
}

// cutText keeps s to n bytes at a character boundary.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// warm analyses the finished sessions not yet analysed, newest first,
// one at a time, whenever the list changes: so the list fills in its
// findings and a session's page is ready before it is asked for. It
// stops with the store's context.
func (s *store) warm() {
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.work:
		}
		for {
			m, ok := s.nextCold()
			if !ok {
				break
			}
			if _, err := s.finished(m); err != nil && s.ctx.Err() == nil {
				slog.Warn("ui: cannot analyse a session", "session", m.ID, "error", err)
			}
			if s.ctx.Err() != nil {
				return
			}
		}
	}
}

// nextCold is the newest finished session never analysed, among the
// newest maxViews: older ones are analysed when their page is asked for,
// so a store of thousands of sessions costs nothing at start.
func (s *store) nextCold() (session.Meta, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.list {
		if i == maxViews {
			break
		}
		e := s.entries[m.Path]
		if m.InProgress || m.Error != "" || e == nil || e.ok || e.err != nil || e.busy != nil {
			continue
		}
		return m, true
	}
	return session.Meta{}, false
}

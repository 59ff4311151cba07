// Package ui is `polygraph ui`: a local web server over the session store
// that shows each session as the report's timeline (internal/report's
// "session" template), the session list, and the sessions `run` or
// `watch` are recording as they grow, pushed to the page with server-sent
// events. It reads sessions with the same analysis as `report` (a
// finished session) and as `run`'s live pipeline (one being recorded,
// followed with session.Tail), so a page shows what the report shows,
// with every secret masked.
//
// It is safe by default: it listens on loopback and answers only to
// loopback host names; on any other address it wants a token. Its pages
// load their style sheet and script from it alone under a strict
// Content-Security-Policy, and it serves GET only: it changes nothing.
package ui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/stats"
)

// DefaultListen is where the server listens unless told otherwise.
const DefaultListen = "127.0.0.1:7777"

// Options say what to serve and where.
type Options struct {
	// Listen is host:port (DefaultListen when "").
	Listen string
	// Token is what a browser must show on an address other than
	// loopback; "" there makes one up (Server.Token). On loopback it is
	// asked for only when set.
	Token string
	// Home is the polygraph home whose sessions are served
	// (stores.Home()).
	Home string
	// Policy judges the sessions (nil: the default).
	Policy *policy.Policy
}

//go:embed assets
var assets embed.FS

// Server serves the pages.
type Server struct {
	o     Options
	st    *store
	pages *template.Template
	h     http.Handler
}

// New makes the server of o; ctx bounds its background work (the
// analyses, the followers) and its event streams.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Policy == nil {
		o.Policy = policy.Default()
	}
	loop, err := loopbackListen(o.Listen)
	if err != nil {
		return nil, err
	}
	if !loop && o.Token == "" {
		if o.Token, err = newToken(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNeedsToken, err)
		}
	}
	pages, err := report.Templates().ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, st: newStore(ctx, o), pages: pages}
	static, err := fs.Sub(report.Assets(), ".")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /events", s.listEvents)
	mux.HandleFunc("GET /api/sessions", s.apiSessions)
	mux.HandleFunc("GET /s/{id}", s.session)
	mux.HandleFunc("GET /s/{id}/events", s.sessionEvents)
	mux.HandleFunc("GET /s/{id}/call/{call}", s.call)
	mux.HandleFunc("GET /s/{id}/report.json", s.reportFile)
	mux.HandleFunc("GET /s/{id}/report.html", s.reportFile)
	mux.Handle("GET /assets/{name}", http.StripPrefix("/assets/", assetServer(static)))
	token := ""
	if !loop || o.Token != "" {
		token = o.Token
	}
	s.h = guard(token, mux)
	go s.st.warm()
	return s, nil
}

// Handler is the server's handler, guard included.
func (s *Server) Handler() http.Handler { return s.h }

// URL is where a browser opens the server: its address and, when it
// wants one, the token.
func (s *Server) URL(addr string) string {
	u := "http://" + addr + "/"
	if loop, _ := loopbackListen(s.o.Listen); !loop || s.o.Token != "" {
		u += "?token=" + s.o.Token
	}
	return u
}

// Serve listens on o.Listen and serves until ctx ends; ready, if set, is
// called with the URL to open once it listens.
func Serve(ctx context.Context, o Options, ready func(url string)) error {
	s, err := New(ctx, o)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", s.o.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	if ready != nil {
		ready(s.URL(l.Addr().String()))
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// assetServer serves the embedded style sheet and script.
func assetServer(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "timeline.css", "timeline.js":
			files.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	})
}

// page is what the pages' "top" template reads.
type page struct {
	Title, Store, Stream, ListStream, ID string
	Rows                                 []listRow
	Session                              template.HTML
}

func (s *Server) render(w http.ResponseWriter, name string, p page) {
	p.Store = s.o.Home
	var b bytes.Buffer
	if err := s.pages.ExecuteTemplate(&b, name, p); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// list is the session list.
func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	rows, err := s.st.rows()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.render(w, "list-page", page{Title: "polygraph sessions", Rows: rows, ListStream: "/events"})
}

// apiSessions is the list as JSON.
func (s *Server) apiSessions(w http.ResponseWriter, r *http.Request) {
	rows, err := s.st.rows()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rows)
}

// session is one session's page: its view, and for a session being
// recorded the stream that keeps it up to date.
func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	m, ok := s.st.find(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	p := page{Title: "polygraph " + m.ID, ID: m.ID}
	if m.InProgress {
		f := s.st.follow(m)
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		v, _ := f.next(ctx, 0)
		cancel()
		version := uint64(0)
		if v != nil {
			p.Session, version = template.HTML(v.html), v.version
		} else {
			var b bytes.Buffer
			s.pages.ExecuteTemplate(&b, "waiting", nil)
			p.Session = template.HTML(b.String())
		}
		p.Stream = "/s/" + m.ID + "/events?v=" + strconv.FormatUint(version, 10)
		s.render(w, "session-page", p)
		return
	}
	v, err := s.st.finished(m)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	p.Session = template.HTML(v.html)
	s.render(w, "session-page", p)
}

// call is one call's own view, which the page loads when it is opened:
// from the session's view as the page has it (the live one for a session
// being recorded).
func (s *Server) call(w http.ResponseWriter, r *http.Request) {
	m, ok := s.st.find(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	var v *view
	if f := s.st.following(m); f != nil {
		v = f.current()
	}
	if v == nil {
		var err error
		if v, err = s.st.finished(m); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	c := v.tl.Call(r.PathValue("call"))
	if c == nil {
		http.Error(w, "no such call", http.StatusNotFound)
		return
	}
	var b bytes.Buffer
	if err := report.WriteCall(&b, c); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b.Bytes())
}

// reportFile is the session's report as JSON or as the HTML page,
// masked as every report is.
func (s *Server) reportFile(w http.ResponseWriter, r *http.Request) {
	m, ok := s.st.find(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	o := analysis.Options{SessionPath: m.Path, Transcript: analysis.TranscriptAuto, Policy: s.o.Policy, Home: s.o.Home}
	if !strings.HasSuffix(r.URL.Path, ".json") {
		o.Charts = func(a *analysis.Analysis) []report.Chart { return stats.ReportCharts(a, s.o.Policy) }
	}
	rep, err := analysis.Run(r.Context(), o)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	var b bytes.Buffer
	if strings.HasSuffix(r.URL.Path, ".json") {
		w.Header().Set("Content-Type", "application/json")
		err = rep.WriteJSON(&b)
	} else {
		// The page sets its own, stricter policy (inline by hash).
		w.Header().Del("Content-Security-Policy")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		err = rep.WriteHTML(&b)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Write(b.Bytes())
}

// sse starts an event stream; nil when the connection cannot stream.
func sse(w http.ResponseWriter) http.Flusher {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return nil
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	return fl
}

// send writes one event: its data a line per line of data.
func send(w http.ResponseWriter, fl http.Flusher, name string, id uint64, data []byte) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "event: %s\n", name)
	if id > 0 {
		fmt.Fprintf(&b, "id: %d\n", id)
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	fl.Flush()
	return err
}

// keepalive is how often a quiet stream says it is still there.
const keepalive = 15 * time.Second

// sessionEvents streams a session's view each time it changes, from the
// version after ?v=, and "end" once it is final.
func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) {
	m, ok := s.st.find(r.PathValue("id"))
	if !ok {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	version, _ := strconv.ParseUint(r.URL.Query().Get("v"), 10, 64)
	fl := sse(w)
	if fl == nil {
		return
	}
	if !m.InProgress {
		if v, err := s.st.finished(m); err == nil {
			send(w, fl, "session", 0, v.html)
		}
		send(w, fl, "end", 0, nil)
		return
	}
	f := s.st.follow(m)
	f.attach()
	defer f.detach()
	for {
		ctx, cancel := context.WithTimeout(r.Context(), keepalive)
		v, ok := f.next(ctx, version)
		cancel()
		switch {
		case r.Context().Err() != nil:
			return
		case !ok && v == nil && ctx.Err() != nil:
			if _, err := fmt.Fprint(w, ": still here\n\n"); err != nil {
				return
			}
			fl.Flush()
			continue
		case v == nil:
			send(w, fl, "end", 0, nil)
			return
		}
		if v.version > version {
			if send(w, fl, "session", v.version, v.html) != nil {
				return
			}
			version = v.version
		}
		if v.final || !ok {
			send(w, fl, "end", 0, nil)
			return
		}
	}
}

// listEvents streams the session list each time it changes.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	fl := sse(w)
	if fl == nil {
		return
	}
	var last []byte
	quiet := time.Now()
	tick := time.NewTicker(listEvery)
	defer tick.Stop()
	for {
		rows, err := s.st.rows()
		if err == nil {
			var b bytes.Buffer
			if s.pages.ExecuteTemplate(&b, "list", rows) == nil && !bytes.Equal(b.Bytes(), last) {
				if send(w, fl, "list", 0, b.Bytes()) != nil {
					return
				}
				last, quiet = b.Bytes(), time.Now()
			}
		}
		if time.Since(quiet) > keepalive {
			if _, err := fmt.Fprint(w, ": still here\n\n"); err != nil {
				return
			}
			fl.Flush()
			quiet = time.Now()
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

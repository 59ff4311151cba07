package fakellm

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// API names the wire protocol a request spoke.
type API string

// The protocols the server speaks.
const (
	APIAnthropic API = "anthropic" // POST /v1/messages (Claude Code)
	APIOpenAI    API = "openai"    // POST /v1/responses (Codex CLI)
	APIGemini    API = "gemini"    // POST /v1beta/models/M:streamGenerateContent (Gemini CLI)
	APIChat      API = "chat"      // POST /v1/chat/completions, function tools, plain JSON (mini-swe-agent)
)

// Request is one logged request and how the server answered it.
type Request struct {
	Time   time.Time   `json:"time"`
	Method string      `json:"method"`
	Path   string      `json:"path"`
	Query  string      `json:"query,omitempty"`
	Header http.Header `json:"header"`
	// Body is the request body, decompressed when it was gzip-encoded.
	Body []byte `json:"-"`
	// API is the protocol the request spoke, empty for anything else.
	API API `json:"api,omitempty"`
	// Turn is the scenario turn the server answered with, or -1 for a side
	// request (no tools offered, token counting, unknown paths).
	Turn int `json:"turn"`
	// Status is the HTTP status the server answered with.
	Status int `json:"status"`
}

// MarshalJSON writes Body inline when it is JSON and as a string otherwise,
// so a request log reads as plain JSON lines.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	var body any = string(r.Body)
	if json.Valid(r.Body) {
		body = json.RawMessage(r.Body)
	}
	return json.Marshal(struct {
		plain
		Body any `json:"body"`
	}{plain(r), body})
}

// Server is a running fake model server. It is an http.Handler too, so a
// test can mount it on its own listener.
type Server struct {
	sc Scenario

	mu   sync.Mutex
	reqs []Request

	ln   net.Listener
	srv  *http.Server
	done chan struct{}
}

// New returns a handler that plays sc. Start also listens.
func New(sc Scenario) *Server {
	return &Server{sc: sc}
}

// Start plays sc on a fresh port on 127.0.0.1 until Close.
func Start(sc Scenario) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fakellm: listen: %w", err)
	}
	s := New(sc)
	s.ln = ln
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return s, nil
}

// URL is the server's base URL, "http://127.0.0.1:PORT", without a path.
func (s *Server) URL() string {
	if s.ln == nil {
		return ""
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops the server and waits for its goroutine.
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = errors.Join(err, s.srv.Close())
	}
	<-s.done
	return err
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// WriteLog writes the request log as JSON lines.
func (s *Server) WriteLog(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, r := range s.Requests() {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("fakellm: write log: %w", err)
		}
	}
	return nil
}

// ServeHTTP routes by path: the model endpoints of the four APIs, token
// counting, model listings; anything else is logged and answered 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{
		Time:   time.Now(),
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.RawQuery,
		Header: r.Header.Clone(),
		Turn:   -1,
	}
	body, err := readBody(r)
	rec.Body = body
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		rec.Status = sw.status
		s.mu.Lock()
		s.reqs = append(s.reqs, rec)
		s.mu.Unlock()
	}()
	if err != nil {
		httpError(sw, http.StatusBadRequest, err.Error())
		return
	}

	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		rec.API = APIAnthropic
		writeJSON(sw, map[string]any{"input_tokens": tokens(body)})
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages"):
		rec.API = APIAnthropic
		rec.Turn = s.anthropic(sw, body)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/chat/completions"):
		rec.API = APIChat
		rec.Turn = s.chat(sw, body)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		rec.API = APIOpenAI
		rec.Turn = s.openai(sw, body)
	case r.Method == http.MethodPost && strings.Contains(p, ":streamGenerateContent"):
		rec.API = APIGemini
		rec.Turn = s.gemini(sw, body, true)
	case r.Method == http.MethodPost && strings.Contains(p, ":generateContent"):
		rec.API = APIGemini
		rec.Turn = s.gemini(sw, body, false)
	case r.Method == http.MethodPost && strings.Contains(p, ":countTokens"):
		rec.API = APIGemini
		writeJSON(sw, map[string]any{"totalTokens": tokens(body)})
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/models"):
		writeJSON(sw, map[string]any{"object": "list", "data": []any{}, "models": []any{}})
	default:
		httpError(sw, http.StatusNotFound, "fakellm: no such endpoint "+r.Method+" "+p)
	}
}

// readBody reads the request body, undoing gzip content encoding.
func readBody(r *http.Request) ([]byte, error) {
	var rd io.Reader = r.Body
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, fmt.Errorf("fakellm: gzip body: %w", err)
		}
		defer zr.Close()
		rd = zr
	default:
		b, _ := io.ReadAll(r.Body)
		return b, fmt.Errorf("fakellm: unsupported content encoding %q", enc)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		return b, fmt.Errorf("fakellm: read body: %w", err)
	}
	return b, nil
}

// statusWriter remembers the status code for the log and passes flushes on,
// which the SSE streams need.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, err := marshal(v)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": msg, "code": code}})
	_, _ = w.Write(b)
}

// sse writes server-sent events, flushing after each one.
type sse struct {
	w http.ResponseWriter
}

func newSSE(w http.ResponseWriter) sse {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

// event writes one event; name may be empty (Gemini sends data lines only).
func (s sse) event(name string, data any) {
	b, err := marshal(data)
	if err != nil {
		panic(fmt.Sprintf("fakellm: marshal event: %v", err)) // only our own maps reach here
	}
	var buf bytes.Buffer
	if name != "" {
		fmt.Fprintf(&buf, "event: %s\n", name)
	}
	fmt.Fprintf(&buf, "data: %s\n\n", b)
	_, _ = s.w.Write(buf.Bytes())
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// marshal is json.Marshal without HTML escaping, so "echo hi > f" reaches
// the agent (and its transcript) as written, not as "\u003e".
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// tokens is a stand-in token count: bytes/4, at least 1.
func tokens(body []byte) int {
	return len(body)/4 + 1
}

// countRuns counts the maximal runs of consecutive true values: the number
// of assistant turns in a conversation where one turn may span several
// consecutive items.
func countRuns(assistant []bool) int {
	n, prev := 0, false
	for _, a := range assistant {
		if a && !prev {
			n++
		}
		prev = a
	}
	return n
}

// schemaProps returns the property names of a JSON schema object.
func schemaProps(schema json.RawMessage) map[string]bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(schema, &s)
	out := make(map[string]bool, len(s.Properties))
	for k := range s.Properties {
		out[k] = true
	}
	return out
}

// pick returns the first of names that props has, or names[0].
func pick(props map[string]bool, names ...string) string {
	for _, n := range names {
		if props[n] {
			return n
		}
	}
	return names[0]
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

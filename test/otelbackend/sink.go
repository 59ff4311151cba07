// Package otelbackend gives the tests OpenTelemetry backends to export
// to: Sink, an OTLP/HTTP receiver in the test process that keeps what it
// is sent, and the real Jaeger and OpenTelemetry Collector binaries that
// test/tools/build.sh builds (jaeger.go, collector.go), started on
// loopback ports of their own.
package otelbackend

import (
	"bytes"
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Sink is an OTLP/HTTP (protobuf) receiver that keeps every request it
// accepts. Fail, when set, answers a request with a status instead.
type Sink struct {
	srv *httptest.Server

	mu       sync.Mutex
	traces   []ptrace.Traces
	logs     []plog.Logs
	spans    int
	records  int
	requests int
	wire     int64
	headers  []http.Header
	// Fail, when it returns non-zero, is the status the next request
	// gets (its data is not kept).
	Fail func(path string) int
}

// NewSink starts a sink on a loopback port; it stops when the test ends.
func NewSink(t testing.TB) *Sink {
	s := &Sink{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// NewSinkOn starts a sink on addr (host:port), for a test that needs
// the port before the sink runs.
func NewSinkOn(t testing.TB, addr string) *Sink {
	s := &Sink{}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the sink's base URL (http://127.0.0.1:PORT).
func (s *Sink) URL() string { return s.srv.URL }

// Close stops the sink.
func (s *Sink) Close() { s.srv.Close() }

func (s *Sink) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.wire += int64(len(raw))
	fail := s.Fail
	s.mu.Unlock()
	if fail != nil {
		if code := fail(r.URL.Path); code != 0 {
			w.WriteHeader(code)
			return
		}
	}
	var body io.Reader = bytes.NewReader(raw)
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.headers = append(s.headers, r.Header.Clone())
	switch r.URL.Path {
	case "/v1/traces":
		td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.traces = append(s.traces, td)
		s.spans += td.SpanCount()
	case "/v1/logs":
		ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(data)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.logs = append(s.logs, ld)
		s.records += ld.LogRecordCount()
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

// Counts returns the spans and log records kept, and the requests.
func (s *Sink) Counts() (spans, records, requests int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spans, s.records, s.requests
}

// WireBytes is what the request bodies weighed as they came.
func (s *Sink) WireBytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wire
}

// Traces returns the traces kept, one per request.
func (s *Sink) Traces() []ptrace.Traces {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ptrace.Traces(nil), s.traces...)
}

// Logs returns the logs kept, one per request.
func (s *Sink) Logs() []plog.Logs {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]plog.Logs(nil), s.logs...)
}

// Headers returns the headers of the requests kept.
func (s *Sink) Headers() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

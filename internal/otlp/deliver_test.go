package otlp

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/polygraph/polygraph/test/otelbackend"
)

// exportAll sends the claude session through a new exporter with cfg and
// closes it within d, returning the final stats and the payload's counts.
func exportAll(t *testing.T, cfg Config, d time.Duration) (Stats, payload) {
	t.Helper()
	_, a := analyzed(t, "claude")
	p := build(a, newState(a.Meta.ID), true, resource(a, "test"))
	x, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Update(t.Context(), a, true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	return x.Close(ctx), p
}

// TestDeliver: everything arrives, gzipped, with the headers asked for.
func TestDeliver(t *testing.T) {
	sink := otelbackend.NewSink(t)
	st, p := exportAll(t, Config{Endpoint: sink.URL(), Headers: map[string]string{"X-Tenant": "acme"}}, 10*time.Second)
	spans, recs, _ := sink.Counts()
	if spans != p.spans || recs != p.logN || st.Spans.Sent != int64(p.spans) || st.Logs.Sent != int64(p.logN) || !st.Delivered() {
		t.Errorf("sink got %d spans %d records; stats %+v; want %d and %d", spans, recs, st, p.spans, p.logN)
	}
	for _, h := range sink.Headers() {
		if h.Get("X-Tenant") != "acme" || h.Get("Content-Encoding") != "gzip" || h.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("request headers %v", h)
		}
	}
	if !strings.Contains(st.String(), "nothing dropped") || st.WireBytes == 0 {
		t.Errorf("summary %q", st)
	}
	t.Log(st)
}

// TestRetry: a backend answering 503 a few times gets everything once it
// answers.
func TestRetry(t *testing.T) {
	sink := otelbackend.NewSink(t)
	var n atomic.Int32
	sink.Fail = func(string) int {
		if n.Add(1) <= 3 {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	st, p := exportAll(t, Config{Endpoint: sink.URL()}, 20*time.Second)
	spans, recs, _ := sink.Counts()
	if spans != p.spans || recs != p.logN || st.Retries < 3 || !st.Delivered() {
		t.Errorf("sink got %d spans %d records; stats %+v", spans, recs, st)
	}
}

// TestRefused: a request the backend refuses for good is dropped and
// counted, not retried for ever.
func TestRefused(t *testing.T) {
	sink := otelbackend.NewSink(t)
	sink.Fail = func(path string) int {
		if path == "/v1/logs" {
			return http.StatusBadRequest
		}
		return 0
	}
	st, p := exportAll(t, Config{Endpoint: sink.URL()}, 10*time.Second)
	if st.Logs.Dropped != int64(p.logN) || st.Spans.Sent != int64(p.spans) || st.Retries != 0 {
		t.Errorf("stats %+v", st)
	}
	if !strings.Contains(st.String(), "DROPPED 0 spans and 2 log records") {
		t.Errorf("summary %q", st)
	}
}

// TestPartialSuccess: items a backend says it rejected count as dropped.
func TestPartialSuccess(t *testing.T) {
	var resp []byte
	ps := protowire.AppendTag(nil, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, 3)
	resp = protowire.AppendTag(resp, 1, protowire.BytesType)
	resp = protowire.AppendBytes(resp, ps)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-protobuf")
		if r.URL.Path == "/v1/traces" {
			w.Write(resp)
		}
	}))
	defer srv.Close()
	st, p := exportAll(t, Config{Endpoint: srv.URL}, 10*time.Second)
	if st.Spans.Dropped != 3 || st.Spans.Sent != int64(p.spans-3) {
		t.Errorf("stats %+v", st)
	}
}

// deadEndpoint is a loopback URL nothing listens on.
func deadEndpoint(t *testing.T) (url, addr string) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr = l.Addr().String()
	l.Close()
	return "http://" + addr, addr
}

// TestSpoolAcrossRestart: with the backend down, Close returns in time,
// says where the data waits and drops nothing; the next exporter on the
// same spool sends it all once the backend is up.
func TestSpoolAcrossRestart(t *testing.T) {
	url, addr := deadEndpoint(t)
	spool := t.TempDir()
	start := time.Now()
	st, p := exportAll(t, Config{Endpoint: url, SpoolDir: spool}, 2*time.Second)
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("Close with the backend down took %v", took)
	}
	if st.Spans.Spooled != int64(p.spans) || st.Logs.Spooled != int64(p.logN) || st.Spans.Dropped+st.Logs.Dropped != 0 || !st.Down {
		t.Fatalf("stats %+v", st)
	}
	line := st.String()
	if !strings.Contains(line, "wait in "+spool) || !strings.Contains(line, "connection refused") || !strings.Contains(line, "nothing dropped") {
		t.Errorf("summary %q", line)
	}
	t.Log(line)

	sink := otelbackend.NewSinkOn(t, addr)
	x, err := New(Config{Endpoint: url, SpoolDir: spool})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	st2 := x.Close(ctx)
	spans, recs, _ := sink.Counts()
	if spans != p.spans || recs != p.logN || st2.Adopted == 0 || !st2.Delivered() {
		t.Errorf("after the restart: sink %d spans %d records; stats %+v", spans, recs, st2)
	}
	if ents, _ := os.ReadDir(spool); len(ents) != 0 {
		t.Errorf("spool not empty after delivery: %v", ents)
	}
	t.Log(st2)
}

// TestSpoolBound: past its bound the spool drops the oldest, and says so.
func TestSpoolBound(t *testing.T) {
	url, _ := deadEndpoint(t)
	_, a := analyzed(t, "claude")
	x, err := New(Config{Endpoint: url, SpoolMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := x.Update(t.Context(), a, true); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	st := x.Close(ctx)
	if st.Spans.Dropped == 0 || st.Spans.Queued != st.Spans.Dropped+st.Spans.Sent+st.Spans.Spooled {
		t.Errorf("stats %+v", st)
	}
	if !strings.Contains(st.String(), "DROPPED") {
		t.Errorf("summary %q", st)
	}
}

// TestTLS: https with the backend's CA given, or verification skipped.
func TestTLS(t *testing.T) {
	var spans atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		spans.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, _ := exportAll(t, Config{Endpoint: srv.URL, CAFile: ca}, 10*time.Second); !st.Delivered() {
		t.Errorf("with --otlp-ca: %s", st)
	}
	if st, _ := exportAll(t, Config{Endpoint: srv.URL, Insecure: true}, 10*time.Second); !st.Delivered() {
		t.Errorf("with --otlp-insecure: %s", st)
	}
	st, _ := exportAll(t, Config{Endpoint: srv.URL}, time.Second)
	if st.Delivered() || !strings.Contains(st.LastError, "certificate") {
		t.Errorf("an unknown CA was accepted: %s", st)
	}
}

// TestFromEnv reads the OpenTelemetry exporter variables.
func TestFromEnv(t *testing.T) {
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example:4318/",
		"OTEL_EXPORTER_OTLP_HEADERS":  "api-key=a%20b, x-tenant=acme",
		"OTEL_EXPORTER_OTLP_TIMEOUT":  "2500",
	}
	c := Config{Headers: map[string]string{"x-tenant": "mine"}}
	if err := c.FromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	tr, lg, err := c.urls()
	if err != nil || tr != "https://otel.example:4318/v1/traces" || lg != "https://otel.example:4318/v1/logs" {
		t.Errorf("urls %q %q %v", tr, lg, err)
	}
	if c.Headers["api-key"] != "a b" || c.Headers["x-tenant"] != "mine" || c.Timeout != 2500*time.Millisecond {
		t.Errorf("config %+v", c)
	}
	c = Config{Endpoint: "http://h:4318/v1/traces"}
	if tr, lg, _ := c.urls(); tr != "http://h:4318/v1/traces" || lg != "http://h:4318/v1/logs" {
		t.Errorf("a traces URL: %q %q", tr, lg)
	}
	for _, bad := range []string{"h:4318", "ftp://h/x"} {
		c = Config{Endpoint: bad}
		if _, _, err := c.urls(); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := New(Config{}); err != ErrNoEndpoint {
		t.Errorf("no endpoint: %v", err)
	}
}

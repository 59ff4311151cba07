package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/test/otelbackend"
)

// TestExport sends a session to an OTLP sink and says so in one line.
func TestExport(t *testing.T) {
	recordedSession(t)
	sink := otelbackend.NewSink(t)
	var out bytes.Buffer
	opts := &exportOptions{transcript: "auto", otlp: otlpOptions{endpoint: sink.URL(), compression: "gzip", wait: 10 * time.Second,
		headers: []string{"Authorization=Bearer t0ken"}}}
	if err := runExport(t.Context(), opts, []string{"last"}, &out); err != nil {
		t.Fatalf("export: %v\n%s", err, out.String())
	}
	spans, recs, _ := sink.Counts()
	if spans == 0 || recs == 0 {
		t.Errorf("sink got %d spans, %d log records", spans, recs)
	}
	if line := out.String(); !strings.Contains(line, "nothing dropped") || strings.Count(line, "\n") != 1 {
		t.Errorf("output %q", line)
	}
	if h := sink.Headers(); len(h) == 0 || h[0].Get("Authorization") != "Bearer t0ken" {
		t.Errorf("headers %v", h)
	}
}

// TestExportBackendDown: a backend that is down costs --otlp-wait, one
// line and exit 1, never a hang; the next export (no SESSION) sends the
// spool.
func TestExportBackendDown(t *testing.T) {
	recordedSession(t)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	opts := &exportOptions{transcript: "auto", otlp: otlpOptions{endpoint: "http://" + addr, compression: "gzip", wait: time.Second}}
	var out bytes.Buffer
	start := time.Now()
	err = runExport(t.Context(), opts, []string{"last"}, &out)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFailure || ee.err != nil {
		t.Fatalf("export to a dead backend: %v", err)
	}
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("took %v", d)
	}
	if line := out.String(); !strings.Contains(line, "did not answer") || !strings.Contains(line, "wait in") || !strings.Contains(line, "nothing dropped") {
		t.Errorf("output %q", line)
	}
	sink := otelbackend.NewSinkOn(t, addr)
	out.Reset()
	opts.otlp.wait = 10 * time.Second
	if err := runExport(t.Context(), opts, nil, &out); err != nil {
		t.Fatalf("export of the spool: %v (%s)", err, out.String())
	}
	if spans, _, _ := sink.Counts(); spans == 0 || !strings.Contains(out.String(), "left by an earlier run") {
		t.Errorf("spool not sent: %d spans; %q", spans, out.String())
	}
}

package otelbackend

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// relayConfig is a collector that takes OTLP/HTTP and sends traces and
// logs on to OTLP/HTTP endpoints, batching, with retry and a queue (the
// exporter's defaults). Its own metrics are off so nothing but the
// receiver listens.
const relayConfig = `
receivers:
  otlp:
    protocols:
      http:
        endpoint: {{OTLP}}
processors:
  batch:
    timeout: 200ms
exporters:
  otlphttp/traces:
    endpoint: {{TRACES_TO}}
    compression: gzip
  otlphttp/logs:
    endpoint: {{LOGS_TO}}
    compression: gzip
service:
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlphttp/traces]
    logs:
      receivers: [otlp]
      processors: [batch]
      exporters: [otlphttp/logs]
`

// Collector is the core OpenTelemetry Collector (v0.165) run by a test.
type Collector struct {
	*process
	// OTLP is its OTLP/HTTP base URL.
	OTLP    string
	metrics string // its own metrics' URL (StartCounting)
}

// StartRelay runs a collector that relays traces to tracesTo and logs to
// logsTo (OTLP/HTTP base URLs); it stops when the test ends.
func StartRelay(t testing.TB, tracesTo, logsTo string) *Collector {
	t.Helper()
	bin := Binary(t, "otelcol")
	addr := FreeAddr(t)
	c := &Collector{OTLP: "http://" + addr}
	c.process = start(t, "otelcol", bin, expand(relayConfig, "OTLP", addr, "TRACES_TO", tracesTo, "LOGS_TO", logsTo), c.OTLP+"/v1/traces")
	return c
}

// countingConfig is a collector that takes OTLP/HTTP and drops it (nop
// exporters) after counting: its own metrics, on a Prometheus endpoint of
// their own, say how many spans and log records the receiver accepted
// and refused.
const countingConfig = `
receivers:
  otlp:
    protocols:
      http:
        endpoint: {{OTLP}}
processors:
  batch:
exporters:
  nop:
service:
  telemetry:
    metrics:
      level: basic
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: {{METRICS_PORT}}
    logs:
      level: warn
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [nop]
    logs:
      receivers: [otlp]
      processors: [batch]
      exporters: [nop]
`

// StartCounting runs a collector that counts what it receives and keeps
// nothing (see Accepted); it stops when the test ends.
func StartCounting(t testing.TB) *Collector {
	t.Helper()
	bin := Binary(t, "otelcol")
	addr, metrics := FreeAddr(t), FreeAddr(t)
	_, port, _ := net.SplitHostPort(metrics)
	c := &Collector{OTLP: "http://" + addr, metrics: "http://" + metrics + "/metrics"}
	c.process = start(t, "otelcol", bin, expand(countingConfig, "OTLP", addr, "METRICS_PORT", port), c.OTLP+"/v1/traces", c.metrics)
	return c
}

// Accepted reads the collector's own counters: the spans and log records
// its OTLP receiver accepted and refused.
func (c *Collector) Accepted() (spans, logs, refused int64, err error) {
	resp, err := http.Get(c.metrics)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, rest, _ := strings.Cut(line, "{")
		if i := strings.LastIndexByte(rest, ' '); i >= 0 {
			rest = rest[i+1:]
		}
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(name, "otelcol_receiver_accepted_spans"):
			spans += int64(v)
		case strings.HasPrefix(name, "otelcol_receiver_accepted_log_records"):
			logs += int64(v)
		case strings.HasPrefix(name, "otelcol_receiver_refused_"):
			refused += int64(v)
		}
	}
	return spans, logs, refused, sc.Err()
}

// CPU is the CPU time the collector process has used (user and system).
func (c *Collector) CPU() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and
	// stime are the 12th and 13th of them, in clock ticks (100 a second
	// on Linux).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

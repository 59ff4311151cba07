package otelbackend

import (
	"testing"
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
	OTLP string
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

package otelbackend

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

// jaegerConfig runs Jaeger with in-memory storage, an OTLP/HTTP receiver
// and the query API on the ports given, and nothing else listening: its
// own metrics, tracing and the other receivers off. Logs are taken and
// dropped (Jaeger stores traces only), so an exporter sending both gets
// no 404. The query does not shift spans for clock skew: the times are
// the kernel's, as sent.
const jaegerConfig = `
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
    logs:
      receivers: [otlp]
      exporters: [nop]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    enable_tracing: false
    max_clock_skew_adjust: 0s
    storage:
      traces: mem
    http:
      endpoint: {{QUERY}}
    grpc:
      endpoint: {{QUERY_GRPC}}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: {{OTLP}}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
  nop:
`

// Jaeger is a Jaeger v1.76 (v2 engine) run by a test.
type Jaeger struct {
	*process
	// OTLP is its OTLP/HTTP base URL; Query its query API's.
	OTLP, Query string
	otlpAddr    string
}

// StartJaeger runs Jaeger on free loopback ports; it stops when the test
// ends.
func StartJaeger(t testing.TB) *Jaeger { return StartJaegerOn(t, FreeAddr(t)) }

// StartJaegerOn runs Jaeger with its OTLP/HTTP receiver on otlpAddr, for
// a test that gave an exporter the address before Jaeger was up.
func StartJaegerOn(t testing.TB, otlpAddr string) *Jaeger {
	t.Helper()
	bin := Binary(t, "jaeger")
	query := FreeAddr(t)
	cfg := expand(jaegerConfig, "OTLP", otlpAddr, "QUERY", query, "QUERY_GRPC", FreeAddr(t))
	j := &Jaeger{OTLP: "http://" + otlpAddr, Query: "http://" + query, otlpAddr: otlpAddr}
	j.process = start(t, "jaeger", bin, cfg, j.Query+"/api/services", j.OTLP+"/v1/traces")
	return j
}

// Trace is a trace as Jaeger's query API gives it.
type Trace struct {
	TraceID   string             `json:"traceID"`
	Spans     []Span             `json:"spans"`
	Processes map[string]Process `json:"processes"`
	Warnings  []string           `json:"warnings"`
}

// Span is one span of a Trace.
type Span struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []Reference `json:"references"`
	StartTime     int64       `json:"startTime"`
	Duration      int64       `json:"duration"`
	Tags          []KV        `json:"tags"`
	Logs          []Log       `json:"logs"`
	ProcessID     string      `json:"processID"`
	Warnings      []string    `json:"warnings"`
}

// Reference names a span's parent.
type Reference struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

// Log is a span event.
type Log struct {
	Timestamp int64 `json:"timestamp"`
	Fields    []KV  `json:"fields"`
}

// Process is the resource of spans.
type Process struct {
	ServiceName string `json:"serviceName"`
	Tags        []KV   `json:"tags"`
}

// KV is a tag or field.
type KV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Find returns the value of key in kvs.
func Find(kvs []KV, key string) (any, bool) {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// Str returns the string value of key in kvs, "" if absent.
func Str(kvs []KV, key string) string {
	v, _ := Find(kvs, key)
	s, _ := v.(string)
	return s
}

// Tag returns the span's string tag key.
func (s Span) Tag(key string) string { return Str(s.Tags, key) }

// Parent returns the span's parent span id ("" for a root).
func (s Span) Parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// Events returns the span's events named name (the "event" field).
func (s Span) Events(name string) []Log {
	var out []Log
	for _, l := range s.Logs {
		if Str(l.Fields, "event") == name {
			out = append(out, l)
		}
	}
	return out
}

// TraceJSON returns the query API's answer for trace id as it came.
func (j *Jaeger) TraceJSON(id string) ([]byte, int, error) {
	resp, err := http.Get(j.Query + "/api/traces/" + id)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return b, resp.StatusCode, err
}

// WaitTrace polls the query API until trace id has at least spans spans
// and no more arrive for a moment, or the timeout passes; it returns the
// trace and the raw answer.
func (j *Jaeger) WaitTrace(t testing.TB, id string, spans int, timeout time.Duration) (*Trace, []byte) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := -1
	for {
		b, code, err := j.TraceJSON(id)
		if err == nil && code == http.StatusOK {
			var doc struct {
				Data []Trace `json:"data"`
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatalf("jaeger answer: %v", err)
			}
			if len(doc.Data) == 1 {
				n := len(doc.Data[0].Spans)
				if n >= spans && n == last {
					return &doc.Data[0], b
				}
				last = n
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans in Jaeger after %v, want %d (last answer %d %v)", id, last, timeout, spans, code, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// ServiceTraces returns the traces of service with spans between from
// and to, as /api/traces?service= lists them.
func (j *Jaeger) ServiceTraces(service string, from, to time.Time, limit int) ([]Trace, error) {
	u := fmt.Sprintf("%s/api/traces?service=%s&start=%d&end=%d&limit=%d", j.Query, service, from.UnixMicro(), to.UnixMicro(), limit)
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var doc struct {
		Data []Trace `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, err
	}
	return doc.Data, nil
}

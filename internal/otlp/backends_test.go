package otlp

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/test/otelbackend"
	"github.com/polygraph/polygraph/test/recorded"
)

// The tests in this file send to the real Jaeger and OpenTelemetry
// Collector binaries test/tools/build.sh builds, started on loopback.
// They skip when the binaries are not built (and fail under
// POLYGRAPH_REQUIRE_ROOT=1, as in CI).

// checkJaegerTrace checks a session's trace as Jaeger serves it: the
// invoke_agent root, one execute_tool span per tool call carrying the
// transcript's id, every parent present.
func checkJaegerTrace(t *testing.T, a *analysis.Analysis, tr *otelbackend.Trace) {
	t.Helper()
	byID := map[string]otelbackend.Span{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
	}
	var roots, calls []string
	for _, s := range tr.Spans {
		if p := s.Parent(); p == "" {
			roots = append(roots, s.OperationName)
		} else if _, ok := byID[p]; !ok {
			t.Errorf("span %s (%s) has parent %s, not in the trace", s.SpanID, s.OperationName, p)
		}
		if strings.HasPrefix(s.OperationName, "execute_tool ") {
			calls = append(calls, s.Tag(attrToolCallID))
		}
	}
	if len(roots) != 1 || roots[0] != "invoke_agent "+a.Transcript.Agent {
		t.Errorf("roots %v, want one invoke_agent %s", roots, a.Transcript.Agent)
	}
	var want []string
	for _, tc := range a.Transcript.ToolCalls {
		want = append(want, tc.ID)
	}
	slices.Sort(calls)
	slices.Sort(want)
	if !slices.Equal(calls, want) {
		t.Errorf("gen_ai.tool.call.id of the execute_tool spans %v, want the transcript's %v", calls, want)
	}
	if svc := tr.Processes[tr.Spans[0].ProcessID].ServiceName; svc != "polygraph" {
		t.Errorf("service %q", svc)
	}
}

// TestJaeger exports each recorded session to a real Jaeger and reads it
// back through Jaeger's query API.
func TestJaeger(t *testing.T) {
	j := otelbackend.StartJaeger(t)
	x, err := New(Config{Endpoint: j.OTLP})
	if err != nil {
		t.Fatal(err)
	}
	var as []*analysis.Analysis
	for _, agent := range recorded.Agents {
		_, a := analyzed(t, agent)
		as = append(as, a)
		if err := x.Update(t.Context(), a, true); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st := x.Close(ctx)
	if !st.Delivered() {
		t.Fatalf("%s", st)
	}
	t.Log(st)
	for i, a := range as {
		want := build(a, newState(a.Meta.ID), true, resource(a, "")).spans
		tr, _ := j.WaitTrace(t, TraceID(a.Meta.ID).String(), want, 20*time.Second)
		if len(tr.Spans) != want {
			t.Errorf("%s: Jaeger holds %d spans, sent %d", recorded.Agents[i], len(tr.Spans), want)
		}
		checkJaegerTrace(t, a, tr)
	}
	from, to := as[0].Meta.StartedAt.Add(-time.Hour), as[0].Meta.StartedAt.Add(time.Hour)
	if list, err := j.ServiceTraces("polygraph", from, to, 20); err != nil || len(list) != len(as) {
		t.Errorf("/api/traces?service=polygraph: %d traces, %v; want %d", len(list), err, len(as))
	}
}

// TestCollectorRelay sends through a real OpenTelemetry Collector (core
// components: otlp receiver, otlphttp exporters) to Jaeger for the traces
// and to a sink for the log records, which must keep their trace context.
func TestCollectorRelay(t *testing.T) {
	j := otelbackend.StartJaeger(t)
	logs := otelbackend.NewSink(t)
	c := otelbackend.StartRelay(t, j.OTLP, logs.URL())
	x, err := New(Config{Endpoint: c.OTLP})
	if err != nil {
		t.Fatal(err)
	}
	var as []*analysis.Analysis
	findings := 0
	for _, agent := range recorded.Agents {
		_, a := analyzed(t, agent)
		as = append(as, a)
		findings += len(a.Findings)
		if err := x.Update(t.Context(), a, true); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st := x.Close(ctx)
	if !st.Delivered() {
		t.Fatalf("%s", st)
	}
	t.Log(st)
	for _, a := range as {
		want := build(a, newState(a.Meta.ID), true, resource(a, "")).spans
		tr, _ := j.WaitTrace(t, TraceID(a.Meta.ID).String(), want, 30*time.Second)
		checkJaegerTrace(t, a, tr)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, recs, _ := logs.Counts(); recs >= findings || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	traces := map[string]bool{}
	for _, a := range as {
		traces[TraceID(a.Meta.ID).String()] = true
	}
	n := 0
	for _, ld := range logs.Logs() {
		rls := ld.ResourceLogs()
		for i := range rls.Len() {
			sls := rls.At(i).ScopeLogs()
			for k := range sls.Len() {
				recs := sls.At(k).LogRecords()
				for r := range recs.Len() {
					n++
					if lr := recs.At(r); !traces[lr.TraceID().String()] || lr.SpanID().IsEmpty() {
						t.Errorf("log record without its trace context: trace %s span %s", lr.TraceID(), lr.SpanID())
					}
				}
			}
		}
	}
	if n != findings {
		t.Errorf("the sink behind the collector got %d log records, want %d (one per finding)", n, findings)
	}
}

// TestBackendDownFirstHalf plays each recorded session live (a snapshot
// every 250 ms of the recording) with Jaeger down for the first half of
// the updates; Jaeger then starts on the address the exporter was given.
// Nothing may be lost: every span reaches Jaeger, and the stats say so.
func TestBackendDownFirstHalf(t *testing.T) {
	addr := otelbackend.FreeAddr(t)
	x, err := New(Config{Endpoint: "http://" + addr, SpoolDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	type snap struct {
		a     *analysis.Analysis
		final bool
	}
	var plays [][]snap
	want := map[string]int{}
	for _, agent := range recorded.Agents {
		s, err := recorded.Load(agent)
		if err != nil {
			t.Fatal(err)
		}
		var play []snap
		for at := s.Start().Add(250 * time.Millisecond); at.Before(s.End()); at = at.Add(250 * time.Millisecond) {
			a, err := s.Analyze(t.Context(), t.TempDir(), at)
			if err != nil {
				t.Fatal(err)
			}
			play = append(play, snap{a: a})
		}
		a, err := s.Analyze(t.Context(), t.TempDir(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		play = append(play, snap{a: a, final: true})
		plays = append(plays, play)
		want[TraceID(a.Meta.ID).String()] = build(a, newState(a.Meta.ID), true, resource(a, "")).spans
	}
	longest := 0
	for _, p := range plays {
		longest = max(longest, len(p))
	}
	var j *otelbackend.Jaeger
	for step := range longest {
		if step == longest/2 {
			st := x.Stats()
			if st.Spans.Sent != 0 || st.Spans.Queued == 0 {
				t.Fatalf("halfway, with the backend down: %+v", st)
			}
			t.Logf("halfway: %d spans and %d log records queued, none sent; starting Jaeger", st.Spans.Queued, st.Logs.Queued)
			j = otelbackend.StartJaegerOn(t, addr)
		}
		for _, p := range plays {
			if step < len(p) {
				if err := x.Update(t.Context(), p[step].a, p[step].final); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	st := x.Close(ctx)
	t.Log(st)
	total := 0
	for _, n := range want {
		total += n
	}
	if !st.Delivered() || st.Spans.Sent != int64(total) || st.Spans.Queued != st.Spans.Sent {
		t.Errorf("stats %+v, want all %d spans sent", st, total)
	}
	for id, n := range want {
		tr, _ := j.WaitTrace(t, id, n, 30*time.Second)
		if len(tr.Spans) != n {
			t.Errorf("trace %s: %d spans in Jaeger, want %d", id, len(tr.Spans), n)
		}
	}
}

package otlp

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/test/recorded"
)

// analyzed returns the whole recorded session of agent, analysed.
func analyzed(t testing.TB, agent string) (*recorded.Session, *analysis.Analysis) {
	t.Helper()
	s, err := recorded.Load(agent)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Analyze(t.Context(), t.TempDir(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return s, a
}

// spanView is what a test checks of a span.
type spanView struct {
	name, parent string
	attrs        map[string]any
	events       []string
	span         ptrace.Span
}

// spansOf indexes the spans of payloads by span id.
func spansOf(t testing.TB, tds ...ptrace.Traces) map[string]spanView {
	t.Helper()
	out := map[string]spanView{}
	for _, td := range tds {
		rss := td.ResourceSpans()
		for i := range rss.Len() {
			sss := rss.At(i).ScopeSpans()
			for j := range sss.Len() {
				spans := sss.At(j).Spans()
				for k := range spans.Len() {
					s := spans.At(k)
					id := s.SpanID().String()
					if _, dup := out[id]; dup {
						t.Errorf("span %s (%s) sent twice", id, s.Name())
					}
					v := spanView{name: s.Name(), parent: s.ParentSpanID().String(), attrs: s.Attributes().AsRaw(), span: s}
					for e := range s.Events().Len() {
						v.events = append(v.events, s.Events().At(e).Name())
					}
					out[id] = v
				}
			}
		}
	}
	return out
}

// TestBuildRecorded exports each recorded session in one final update
// and checks the trace's shape: one trace, the invoke_agent root last,
// one execute_tool span per tool call with the transcript's id, every
// parent present, processes under their calls.
func TestBuildRecorded(t *testing.T) {
	for _, agent := range recorded.Agents {
		t.Run(agent, func(t *testing.T) {
			_, a := analyzed(t, agent)
			st := newState(a.Meta.ID)
			p := build(a, st, true, resource(a, "test"))
			spans := spansOf(t, p.traces)
			if p.spans != len(spans) {
				t.Fatalf("payload says %d spans, has %d", p.spans, len(spans))
			}
			all := p.traces.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			last := all.At(all.Len() - 1)
			if last.SpanID() != RootSpanID(a.Meta.ID) || !strings.HasPrefix(last.Name(), "invoke_agent ") || !last.ParentSpanID().IsEmpty() {
				t.Errorf("last span %q (parent %s), want the invoke_agent root", last.Name(), last.ParentSpanID())
			}
			if got := last.Attributes().AsRaw()[attrConversationID]; got != a.Transcript.SessionID {
				t.Errorf("root's %s = %v, want %s", attrConversationID, got, a.Transcript.SessionID)
			}
			host, _ := p.traces.ResourceSpans().At(0).Resource().Attributes().Get(attrHostName)
			if host.Str() != a.Meta.Hostname {
				t.Errorf("host.name %q, want %q", host.Str(), a.Meta.Hostname)
			}
			var callIDs []string
			procs := 0
			for id, s := range spans {
				if s.span.TraceID() != TraceID(a.Meta.ID) {
					t.Errorf("span %s in trace %s", s.name, s.span.TraceID())
				}
				if s.parent != "" {
					if _, ok := spans[s.parent]; !ok {
						t.Errorf("span %s (%s) names parent %s, which was not sent", id, s.name, s.parent)
					}
				}
				switch {
				case strings.HasPrefix(s.name, "execute_tool "):
					callIDs = append(callIDs, s.attrs[attrToolCallID].(string))
					if s.parent != RootSpanID(a.Meta.ID).String() {
						t.Errorf("%s under %s, want the root", s.name, s.parent)
					}
				case strings.HasPrefix(s.name, "exec "):
					procs++
					call, _ := s.attrs[attrToolCallID].(string)
					// Its parents lead to its call's span (or to the root
					// for unexplained activity).
					want := RootSpanID(a.Meta.ID).String()
					if call != "" {
						want = CallSpanID(a.Meta.ID, call).String()
					}
					up := s.parent
					for spans[up].parent != "" && up != want {
						up = spans[up].parent
					}
					if up != want {
						t.Errorf("%s (%v) leads up to %s (%s), want %s", s.name, s.attrs[attrCmdLine], up, spans[up].name, want)
					}
				}
			}
			var want []string
			for _, tc := range a.Transcript.ToolCalls {
				want = append(want, tc.ID)
			}
			slices.Sort(callIDs)
			slices.Sort(want)
			if !slices.Equal(callIDs, want) {
				t.Errorf("execute_tool ids %v, want the transcript's %v", callIDs, want)
			}
			if procs == 0 {
				t.Errorf("no process spans")
			}
			if p.logN != len(a.Findings) {
				t.Errorf("%d log records for %d findings", p.logN, len(a.Findings))
			}
			checkLogs(t, a, p.logs)
			t.Logf("%s: %d spans (%d processes), %d log records", agent, len(spans), procs, p.logN)
		})
	}
}

// checkLogs: every finding's log record carries the trace and the span
// of its call (or the root).
func checkLogs(t *testing.T, a *analysis.Analysis, logs plog.Logs) {
	t.Helper()
	recs := logs.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := range recs.Len() {
		r := recs.At(i)
		m := r.Attributes().AsRaw()
		if r.TraceID() != TraceID(a.Meta.ID) {
			t.Errorf("log record %v in trace %s", m[attrRuleName], r.TraceID())
		}
		want := RootSpanID(a.Meta.ID)
		if c, _ := m[attrToolCallID].(string); c != "" {
			want = CallSpanID(a.Meta.ID, c)
		}
		if r.SpanID() != want || r.EventName() != eventFinding || r.SeverityNumber() == plog.SeverityNumberUnspecified {
			t.Errorf("log record %v: span %s event %q severity %v", m[attrRuleName], r.SpanID(), r.EventName(), r.SeverityNumber())
		}
	}
}

// TestBuildDeterministic: the same session gives the same bytes, so a
// resend is recognisably the same data.
func TestBuildDeterministic(t *testing.T) {
	_, a := analyzed(t, "claude")
	enc := func() []byte {
		p := build(a, newState(a.Meta.ID), true, resource(a, "test"))
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(p.traces)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := (&plog.ProtoMarshaler{}).MarshalLogs(p.logs)
		return append(b, l...)
	}
	if !bytes.Equal(enc(), enc()) {
		t.Errorf("two exports of one session differ")
	}
}

// TestLiveSameAsBatch plays each recorded session as the live pipeline
// will: a snapshot every half second of the recording, then the final
// one. The spans sent over all updates must be the batch export's: the
// same ids, names and parents, each sent once; and every finding of the
// batch export must have been sent.
func TestLiveSameAsBatch(t *testing.T) {
	for _, agent := range recorded.Agents {
		t.Run(agent, func(t *testing.T) {
			s, batchA := analyzed(t, agent)
			batch := build(batchA, newState(batchA.Meta.ID), true, resource(batchA, "test"))
			want := spansOf(t, batch.traces)

			st := newState(s.Meta.ID)
			var got []ptrace.Traces
			var logs []plog.Logs
			updates, early := 0, 0
			for at := s.Start().Add(500 * time.Millisecond); at.Before(s.End()); at = at.Add(500 * time.Millisecond) {
				a, err := s.Analyze(t.Context(), t.TempDir(), at)
				if err != nil {
					t.Fatal(err)
				}
				p := build(a, st, false, resource(a, "test"))
				got, logs = append(got, p.traces), append(logs, p.logs)
				updates++
				early += p.spans
			}
			p := build(batchA, st, true, resource(batchA, "test"))
			got, logs = append(got, p.traces), append(logs, p.logs)
			live := spansOf(t, got...)
			if early == 0 {
				t.Errorf("no span left before the final update of %d", updates)
			}
			for id, w := range want {
				g, ok := live[id]
				if !ok {
					t.Errorf("batch span %s (%s) never sent live", id, w.name)
					continue
				}
				if g.name != w.name || g.parent != w.parent {
					t.Errorf("span %s: live %q under %s, batch %q under %s", id, g.name, g.parent, w.name, w.parent)
				}
			}
			for id, g := range live {
				if _, ok := want[id]; !ok {
					t.Errorf("live span %s (%s) not in the batch export", id, g.name)
				}
			}
			sent := map[string]bool{}
			for _, l := range logs {
				for _, k := range findingKeys(l) {
					sent[k] = true
				}
			}
			for _, k := range findingKeys(batch.logs) {
				if !sent[k] {
					t.Errorf("finding %s of the batch export never sent live", k)
				}
			}
			t.Logf("%s: %d updates, %d of %d spans before the final one", agent, updates, early, len(want))
		})
	}
}

// findingKeys names the findings of a payload's log records.
func findingKeys(l plog.Logs) []string {
	var out []string
	rls := l.ResourceLogs()
	for i := range rls.Len() {
		recs := rls.At(i).ScopeLogs().At(0).LogRecords()
		for j := range recs.Len() {
			m := recs.At(j).Attributes().AsRaw()
			out = append(out, fmt.Sprint(m[attrRuleName], "|", m[attrToolCallID], "|", m[attrSeverity]))
		}
	}
	return out
}

// TestEffectsCapped: a span with more effects than MaxEffects carries
// the first ones, evidence first, and says how many it dropped.
func TestEffectsCapped(t *testing.T) {
	_, a := analyzed(t, "claude")
	p := build(a, newState(a.Meta.ID), true, resource(a, "test"))
	spans := spansOf(t, p.traces)
	for _, s := range spans {
		n := 0
		for _, e := range s.events {
			if e != eventFinding {
				n++
			}
		}
		if n > MaxEffects {
			t.Errorf("%s carries %d effects", s.name, n)
		}
		total, _ := s.attrs[attrEffects].(int64)
		dropped, _ := s.attrs[attrEffectsCapped].(int64)
		if total > MaxEffects && dropped != total-MaxEffects {
			t.Errorf("%s: %d effects, %d said dropped", s.name, total, dropped)
		}
		if total > 0 && int64(n) != total-dropped {
			t.Errorf("%s: %d effects carried, %d-%d said", s.name, n, total, dropped)
		}
	}
}

// TestIDs: ids are stable functions of their names, never zero.
func TestIDs(t *testing.T) {
	if TraceID("a") != TraceID("a") || TraceID("a") == TraceID("b") || TraceID("a").IsEmpty() {
		t.Errorf("trace ids are not a function of the session")
	}
	if CallSpanID("s", "x") == ExecSpanID("s", "x") || CallSpanID("s", "x") == CallSpanID("t", "x") {
		t.Errorf("span ids collide across kinds or sessions")
	}
	var zero pcommon.SpanID
	if RootSpanID("s") == zero {
		t.Errorf("zero span id")
	}
}

// TestSplitTraces: a payload of many spans is cut into requests that keep
// the resource, the scope and the order (the root last).
func TestSplitTraces(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr(attrHostName, "h")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName(scopeName)
	n := 2*spansPerRequest + 7
	for i := range n {
		s := ss.Spans().AppendEmpty()
		s.SetName(fmt.Sprint(i))
	}
	parts := splitTraces(td, n)
	if len(parts) != 3 {
		t.Fatalf("%d parts", len(parts))
	}
	i := 0
	for _, p := range parts {
		r := p.ResourceSpans().At(0)
		if h, _ := r.Resource().Attributes().Get(attrHostName); h.Str() != "h" || r.ScopeSpans().At(0).Scope().Name() != scopeName {
			t.Errorf("part without the resource or scope")
		}
		spans := r.ScopeSpans().At(0).Spans()
		for k := range spans.Len() {
			if spans.At(k).Name() != fmt.Sprint(i) {
				t.Fatalf("span %d is %s", i, spans.At(k).Name())
			}
			i++
		}
	}
	if i != n {
		t.Errorf("%d spans after the split, want %d", i, n)
	}
}

// TestBuildTranscriptOnly: a transcript without a recording still makes a
// trace (the calls, no processes), named by the agent's session id.
func TestBuildTranscriptOnly(t *testing.T) {
	_, full := analyzed(t, "claude")
	a := &analysis.Analysis{Transcript: full.Transcript}
	id := sessionID(a)
	if id == "" || id != full.Transcript.SessionID {
		t.Fatalf("session id %q", id)
	}
	p := build(a, newState(id), true, resource(a, "test"))
	if p.spans != len(full.Transcript.ToolCalls)+1 {
		t.Errorf("%d spans for %d calls and the root", p.spans, len(full.Transcript.ToolCalls))
	}
}

// Package otlp exports sessions as OpenTelemetry traces and logs over
// OTLP/HTTP (protobuf), for the trace backends, SIEMs and log pipelines a
// fleet already runs (docs/fleet.md).
//
// A session is one trace. Its root span is `invoke_agent {agent}`; each
// tool call of the transcript is an `execute_tool {tool}` child carrying
// the transcript's id as gen_ai.tool.call.id; the processes a call caused
// are spans under it, and their file and network effects are span events;
// activity no call explains hangs under the root. Findings are events on
// the span of the call that caused them and log records carrying that
// span's context. Attribution is sent with its basis and confidence
// (polygraph.attribution.*), never as a bare fact: the GenAI conventions
// warn that a tool span does not prove its effects.
//
// The input is an *analysis.Analysis, a snapshot of the session: the live
// pipeline calls Update with a new snapshot as the session grows, and a
// batch export calls it once with final set. Each span leaves once, when
// it is settled (a tool call whose result came back and whose process
// exited; a process that exited), with ids derived from the session id,
// the tool call id and the exec id, so the spans of one update can name
// parents sent before or after them, and a resend carries the same ids.
// The root span, unexplained activity and findings no call owns leave
// with the final update.
//
// Delivery never blocks the caller: Update serializes the requests into a
// bounded spool (on disk, so it survives a restart) and one goroutine
// sends them, batched, retrying with backoff while the backend is down.
// Every item that could not be delivered is counted (Stats).
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/findings"
)

// ErrNoSession is returned by Update for an analysis that names no
// session (no recording and no transcript session id).
var ErrNoSession = errors.New("otlp: the analysis names no session")

// Exporter sends sessions to one OTLP endpoint. Its methods are safe for
// concurrent use; Update calls for one session must come in order.
type Exporter struct {
	cfg    Config
	traces string // the traces URL, for what is said about it

	mu       sync.Mutex
	sessions map[string]*sessionState

	sp     *spool
	d      *deliverer
	closed bool
}

// sessionState is one session's state, updated under its own lock.
type sessionState struct {
	mu sync.Mutex
	st *state
}

// New starts an exporter. It adopts what earlier exporters left in the
// spool directory and starts sending it.
func New(cfg Config) (*Exporter, error) {
	traces, logs, err := cfg.urls()
	if err != nil {
		return nil, err
	}
	client, err := cfg.httpClient()
	if err != nil {
		return nil, err
	}
	sp, err := openSpool(cfg.SpoolDir, cfg.SpoolMax)
	if err != nil {
		return nil, err
	}
	snd := &sender{client: client, traces: traces, logs: logs, headers: cfg.Headers, gzip: !cfg.NoGzip,
		userAgent: "polygraph/" + firstNonEmpty(cfg.Version, "dev")}
	x := &Exporter{cfg: cfg, traces: traces, sessions: map[string]*sessionState{}, sp: sp}
	x.d = newDeliverer(sp, snd, traces, cfg.Log)
	go x.d.run()
	if sp.adopted > 0 {
		x.d.poke()
	}
	return x, nil
}

// Endpoint is the URL traces are sent to.
func (x *Exporter) Endpoint() string { return x.traces }

// Update exports what snapshot a adds to what earlier updates of its
// session sent: the spans and findings settled since, or, when final,
// everything left, the root span last. It does not wait for the network;
// it fails only for an analysis that names no session, or after Close.
func (x *Exporter) Update(ctx context.Context, a *analysis.Analysis, final bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	id := sessionID(a)
	if id == "" {
		return ErrNoSession
	}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return errors.New("otlp: exporter closed")
	}
	ss := x.sessions[id]
	if ss == nil {
		ss = &sessionState{st: newState(id)}
		x.sessions[id] = ss
	}
	x.mu.Unlock()

	ss.mu.Lock()
	p := build(a, ss.st, final, resource(a, x.cfg.Version))
	ss.mu.Unlock()
	if final {
		x.mu.Lock()
		delete(x.sessions, id)
		x.mu.Unlock()
	}
	return x.enqueue(p)
}

// enqueue serializes a payload into spooled requests.
func (x *Exporter) enqueue(p payload) error {
	if p.spans > 0 {
		for _, td := range splitTraces(p.traces, p.spans) {
			b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
			if err != nil {
				return fmt.Errorf("otlp: encode traces: %w", err)
			}
			n := td.SpanCount()
			x.d.count(func(s *Stats) { s.Spans.Queued += int64(n) })
			x.sp.put(signalTraces, n, b)
		}
	}
	if p.logN > 0 {
		b, err := (&plog.ProtoMarshaler{}).MarshalLogs(p.logs)
		if err != nil {
			return fmt.Errorf("otlp: encode logs: %w", err)
		}
		x.d.count(func(s *Stats) { s.Logs.Queued += int64(p.logN) })
		x.sp.put(signalLogs, p.logN, b)
	}
	x.d.poke()
	return nil
}

// spansPerRequest bounds the spans of one request (a process span with
// its effects is a few KiB), so a large session does not make a request
// a collector refuses as too large.
const spansPerRequest = 512

// splitTraces cuts a payload's spans into requests of at most
// spansPerRequest, in order, so the root span stays last.
func splitTraces(td ptrace.Traces, n int) []ptrace.Traces {
	if n <= spansPerRequest {
		return []ptrace.Traces{td}
	}
	rs := td.ResourceSpans().At(0)
	spans := rs.ScopeSpans().At(0).Spans()
	var out []ptrace.Traces
	for from := 0; from < spans.Len(); from += spansPerRequest {
		part := ptrace.NewTraces()
		prs := part.ResourceSpans().AppendEmpty()
		rs.Resource().CopyTo(prs.Resource())
		pss := prs.ScopeSpans().AppendEmpty()
		rs.ScopeSpans().At(0).Scope().CopyTo(pss.Scope())
		to := min(from+spansPerRequest, spans.Len())
		pss.Spans().EnsureCapacity(to - from)
		for i := from; i < to; i++ {
			spans.At(i).CopyTo(pss.Spans().AppendEmpty())
		}
		out = append(out, part)
	}
	return out
}

// Flush waits until everything queued was delivered (or refused for
// good), or ctx ends.
func (x *Exporter) Flush(ctx context.Context) error { return x.d.flush(ctx) }

// Close flushes until ctx ends, then stops sending. What was not
// delivered stays in the spool directory for the next exporter (and is
// counted as Spooled), or, in memory only, is dropped (and counted). The
// returned Stats are final.
func (x *Exporter) Close(ctx context.Context) Stats {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return x.Stats()
	}
	x.closed = true
	x.mu.Unlock()
	_ = x.d.flush(ctx)
	x.d.close()
	disk, lost := x.sp.close()
	x.d.count(func(s *Stats) {
		s.Spans.Spooled, s.Logs.Spooled = disk[0], disk[1]
		if disk != [2]int64{} {
			s.SpoolDir = x.sp.root
		}
		s.Spans.Dropped += lost[0]
		s.Logs.Dropped += lost[1]
	})
	return x.Stats()
}

// Stats returns the counts so far.
func (x *Exporter) Stats() Stats {
	x.d.mu.Lock()
	s := x.d.stats
	if x.d.lastErr != nil {
		s.LastError = x.d.lastErr.Error()
	}
	s.Down = x.d.down
	x.d.mu.Unlock()
	x.sp.mu.Lock()
	s.Spans.Dropped += x.sp.dropped[0]
	s.Logs.Dropped += x.sp.dropped[1]
	s.Adopted = x.sp.adopted
	x.sp.mu.Unlock()
	s.Endpoint = x.traces
	return s
}

// Decided makes the exporter a sink of the live analysis
// (analysis.Sink): each decision is an Update, the session's last one
// final. It never waits on the network.
func (x *Exporter) Decided(a *analysis.Analysis, _ []findings.Record, final bool) {
	if err := x.Update(context.Background(), a, final); err != nil {
		slog.Warn("otlp: a live decision could not be queued", "error", err)
	}
}

package analysis

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/redact"
	"github.com/polygraph/polygraph/internal/report"
)

// Live is the analysis of a session while it is recorded: a
// pipeline.Listener (and the exec checks' verdict sink) that feeds an
// Engine and decides again whenever something new arrived (events, the
// transcript, the session's loss counters), at most every MinInterval
// and never more than a quarter of the time, so a long session's
// decisions cost a bounded share of one core. Each decision goes to the
// sinks with the findings it changed; Finish makes the last one.
//
// A decision runs over a view of what had arrived (Engine.view) without
// holding the lock the pipeline's deliveries take, so the listener goes
// on taking events while it decides.
type Live struct {
	o LiveOptions

	mu      sync.Mutex
	eng     *Engine
	fresh   bool // events or verdicts arrived since the last decision
	decided bool // a decision was made (the session's started record went out)

	// Owned by the deciding goroutine (the loop, then Finish).
	prev     map[string]findings.Record // the standing records by key
	next     time.Time                  // no decision before
	lastMeta manifest.Meta

	stop chan struct{}
	done chan struct{}
}

// LiveOptions say how a live session is judged and where its decisions go.
type LiveOptions struct {
	EngineOptions
	// Meta returns the session's metadata as it stands (the session
	// writer's Meta): a root pid learnt, loss counters as they rise.
	Meta func() manifest.Meta
	// Sinks receive every decision.
	Sinks []Sink
	// MinInterval is the shortest time between decisions (0:
	// DefaultMinInterval).
	MinInterval time.Duration
}

// DefaultMinInterval keeps a finding's latency (the event, or the
// transcript line naming its call, to the finding in the stream) to a few
// hundred milliseconds; decisions that take longer space themselves out
// (backoff), so the analysis of a large session gets a quarter of one
// core at most (see Live).
const DefaultMinInterval = 100 * time.Millisecond

// backoff is how many times a decision's own duration the next one waits.
const backoff = 3

// Sink takes the live analysis's decisions: the analysis of the session
// so far and the records of what changed in its findings (finding
// records, and the session's started, ended and loss records). final
// marks the last decision. Sinks run on the deciding goroutine, one after
// the other; a slow sink slows decisions, never the recording.
type Sink interface {
	Decided(a *Analysis, changes []findings.Record, final bool)
}

// StreamSink writes the changes to a findings stream.
type StreamSink struct{ W *findings.Writer }

// Decided writes the changes.
func (s StreamSink) Decided(_ *Analysis, changes []findings.Record, _ bool) { s.W.Write(changes...) }

// StartLive starts the live analysis of the session meta describes; feed
// it through a pipeline.Bus (it is a Listener) and AddVerdict, and end it
// with Finish.
func StartLive(ctx context.Context, meta manifest.Meta, o LiveOptions) *Live {
	if o.MinInterval <= 0 {
		o.MinInterval = DefaultMinInterval
	}
	l := &Live{o: o, eng: NewEngine(meta, o.EngineOptions), prev: map[string]findings.Record{}, lastMeta: meta,
		stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop(ctx)
	return l
}

// Events takes a batch of the session's events (pipeline.Listener).
func (l *Live) Events(batch []*event.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range batch {
		l.eng.Add(ev)
	}
	l.fresh = true
}

// Close is the pipeline's end of the events; Finish ends the analysis.
func (l *Live) Close() {}

// AddVerdict takes an exec verdict (integrity.VerdictSink).
func (l *Live) AddVerdict(v manifest.Verdict) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.eng.AddVerdict(v)
	l.fresh = true
}

// poll is how often the loop looks for something new.
const poll = 20 * time.Millisecond

func (l *Live) loop(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if time.Now().Before(l.next) {
			continue
		}
		meta := l.lastMeta
		if l.o.Meta != nil {
			meta = l.o.Meta()
		}
		start := time.Now()
		l.mu.Lock()
		fresh := l.fresh
		l.eng.SetMeta(meta)
		v := l.eng.view()
		l.fresh = false
		l.mu.Unlock()
		changed := fresh || !l.decided || !maps.Equal(meta.Lost, l.lastMeta.Lost) || meta.RootPID != l.lastMeta.RootPID
		if !changed && !v.follow.poll(ctx, &meta, v.events) {
			continue
		}
		l.lastMeta = meta
		a, err := v.Decide(ctx, false)
		if err != nil {
			if ctx.Err() == nil {
				slog.Warn("live analysis", "session", meta.ID, "error", err)
			}
			continue
		}
		l.emit(a, false)
		took := time.Since(start)
		l.next = time.Now().Add(max(l.o.MinInterval, backoff*took))
		slog.Debug("live analysis: decided", "session", meta.ID, "events", len(v.events), "findings", len(a.Findings), "took", took)
	}
}

// Finish ends the live analysis with the session's final metadata, its
// leftovers and what the pipeline dropped on its way to this listener
// (lost, by listener name), and makes the last decision, which it
// returns. Call it once the pipeline is closed and the exec checks are
// drained. When events were dropped on their way here, the last decision
// is made over the stored session instead, which holds them all.
func (l *Live) Finish(ctx context.Context, meta manifest.Meta, left []manifest.Leftover, lost uint64) (*Analysis, error) {
	close(l.stop)
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	eng := l.eng
	if lost > 0 && meta.Path != "" {
		stored, _, err := Replay(ctx, meta.Path, l.o.EngineOptions)
		if err != nil {
			return nil, fmt.Errorf("live analysis lost %d events and the stored session could not be read: %w", lost, err)
		}
		stored.follow = eng.follow
		eng = stored
	} else {
		eng.SetMeta(meta)
		eng.SetLeftovers(left)
		eng.sum = report.NewSummary(uint32(meta.RootPID))
		for _, ev := range eng.events {
			eng.sum.Observe(ev)
		}
		eng.sum.Finish(meta, left, meta.ExitCode)
	}
	a, err := eng.Decide(ctx, true)
	if err != nil {
		return nil, err
	}
	var extra []findings.Record
	if lost > 0 {
		extra = append(extra, l.record(a, findings.Record{Type: findings.TypeLoss, Listener: "live", Events: lost}))
	}
	l.emit(a, true, extra...)
	return a, nil
}

// emit diffs a's findings against the standing ones and hands the
// decision to the sinks.
func (l *Live) emit(a *Analysis, final bool, extra ...findings.Record) {
	var changes []findings.Record
	if !l.decided {
		l.decided = true
		changes = append(changes, l.record(a, findings.Record{Type: findings.TypeSession, Status: findings.StatusStarted}))
	}
	changes = append(changes, extra...)
	now := map[string]findings.Record{}
	for _, f := range a.Findings {
		r := l.findingRecord(a, f)
		r.Key = findingKey(f, now)
		now[r.Key] = r
		old, ok := l.prev[r.Key]
		switch {
		case !ok:
			r.Status, r.Revision = findings.StatusNew, 1
		case !sameFinding(old, r):
			r.Status, r.Revision = findings.StatusUpdated, old.Revision+1
		default:
			now[r.Key] = old
			continue
		}
		now[r.Key] = r
		changes = append(changes, r)
	}
	for _, k := range slices.Sorted(maps.Keys(l.prev)) {
		if _, ok := now[k]; !ok {
			old := l.prev[k]
			w := l.record(a, findings.Record{Type: findings.TypeFinding, Status: findings.StatusWithdrawn, Key: k,
				Revision: old.Revision + 1, Rule: old.Rule, Severity: old.Severity, Title: old.Title})
			changes = append(changes, w)
		}
	}
	l.prev = now
	if final {
		counts := map[string]int{}
		for _, f := range a.Findings {
			counts[string(f.Severity)]++
		}
		changes = append(changes, l.record(a, findings.Record{Type: findings.TypeSession, Status: findings.StatusEnded, Findings: counts}))
	}
	for _, s := range l.o.Sinks {
		s.Decided(a, changes, final)
	}
}

// record fills r's session fields from a.
func (l *Live) record(a *Analysis, r findings.Record) findings.Record {
	r.Time = time.Now().UTC()
	if a.Meta != nil {
		r.Host, r.Session = a.Meta.Hostname, a.Meta.ID
		r.Agent, _ = detect.AgentOf(a.Transcript, *a.Meta)
	}
	return r
}

// findingRecord is f as a stream record (without status, key, revision).
func (l *Live) findingRecord(a *Analysis, f detect.Finding) findings.Record {
	return l.record(a, FindingRecord(a, f))
}

// FindingRecord is the stream's form of f, a finding of a: its rule,
// severity, text, tool call, evidence and the time of its first evidence
// event. Its text and the process's command line are masked by the one
// redactor, as the report's are: a pipeline stores the stream.
func FindingRecord(a *Analysis, f detect.Finding) findings.Record {
	r := findings.Record{Type: findings.TypeFinding, Rule: f.Rule, Severity: string(f.Severity), Title: redact.String(f.Title),
		Detail: redact.String(f.Detail), ToolCallID: f.ToolCallID, Claim: redact.String(f.Claim), Evidence: f.Evidence, Blocked: f.Blocked}
	if fw := f.Frameworks; len(fw.All()) > 0 {
		r.Frameworks = &findings.Frameworks{ATTACK: fw.ATTACK, ATLAS: fw.ATLAS, OWASPLLM: fw.OWASPLLM, SAIF: fw.SAIF}
	}
	if len(f.Evidence) > 0 {
		if e := eventBySeq(a.Events, f.Evidence[0]); e != nil {
			if !e.TS.IsZero() {
				ts := e.TS.UTC()
				r.EventTime = &ts
			}
			r.Process = &findings.Process{PID: e.PID, ExecID: e.ExecID, Comm: e.Comm}
			if a.Attribution != nil && a.Attribution.Tree != nil {
				if x := a.Attribution.Tree.ExecOf(e.ExecID); x != nil {
					r.Process.Exe, r.Process.Argv = x.Path, redact.Argv(x.Argv())
				}
			}
		}
	}
	return r
}

// eventBySeq finds the event with seq in evs, which are in seq order.
func eventBySeq(evs []*event.Event, seq uint64) *event.Event {
	i, ok := slices.BinarySearchFunc(evs, seq, func(e *event.Event, s uint64) int {
		switch {
		case e.Seq < s:
			return -1
		case e.Seq > s:
			return 1
		}
		return 0
	})
	if !ok {
		return nil
	}
	return evs[i]
}

// findingKey names f for the stream: its rule and first evidence event,
// which stay while later events add evidence and the transcript names
// its call; for a finding without evidence (a claim no event backs, a
// loss) its rule, call and title. A second finding with the same name in
// one decision gets "#2", and so on.
func findingKey(f detect.Finding, taken map[string]findings.Record) string {
	k := f.Rule
	if len(f.Evidence) > 0 {
		k += fmt.Sprintf("/%d", f.Evidence[0])
	} else {
		k += "/" + f.ToolCallID + "/" + f.Title
	}
	if _, dup := taken[k]; !dup {
		return k
	}
	for n := 2; ; n++ {
		if _, dup := taken[fmt.Sprintf("%s#%d", k, n)]; !dup {
			return fmt.Sprintf("%s#%d", k, n)
		}
	}
}

// sameFinding reports whether two records of one key say the same thing.
func sameFinding(a, b findings.Record) bool {
	return a.Severity == b.Severity && a.Title == b.Title && a.Detail == b.Detail && a.ToolCallID == b.ToolCallID &&
		a.Claim == b.Claim && a.Blocked == b.Blocked && slices.Equal(a.Evidence, b.Evidence) &&
		reflect.DeepEqual(a.Frameworks, b.Frameworks) && a.Agent == b.Agent
}

// CompareFindings says how two sets of findings of one session differ
// ("" when they do not): the live analysis's last decision against the
// report's, which must be the same.
func CompareFindings(live, replay []detect.Finding) string {
	if len(live) != len(replay) {
		return fmt.Sprintf("%d findings live, %d in the report", len(live), len(replay))
	}
	for i := range live {
		if !reflect.DeepEqual(live[i], replay[i]) {
			return fmt.Sprintf("finding %d: live %s %q (call %q, evidence %v), report %s %q (call %q, evidence %v)", i+1,
				live[i].Rule, live[i].Title, live[i].ToolCallID, live[i].Evidence, replay[i].Rule, replay[i].Title, replay[i].ToolCallID, replay[i].Evidence)
		}
	}
	return ""
}

// StreamKeys are the findings stream's keys of fs, one a finding in
// order: what a reader of the stream matches a report's findings by.
func StreamKeys(fs []detect.Finding) []string {
	taken := map[string]findings.Record{}
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = findingKey(f, taken)
		taken[out[i]] = findings.Record{}
	}
	return out
}

package integrity

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

// The pool a recorded session gets: every recorder (run, attach, each
// tree watch records) checks its execs through SessionCheck, so they
// all hash, judge and store verdicts the same way.
const (
	sessionWorkers = 2
	sessionQueue   = 1024
	// SessionDrain bounds how long Close waits for the queued execs to
	// be hashed; what is left then is stored unavailable.
	SessionDrain = 10 * time.Second
)

// SessionCheck hashes and judges the execs of one recorded session off
// the event path and hands the verdicts to a VerdictSink: the session
// writer, which stores them beside the events, and the live analysis. A
// nil *SessionCheck (checking off, or unavailable) does nothing.
type SessionCheck struct {
	pool   *Pool
	w      VerdictSink
	cancel context.CancelFunc
}

// VerdictSink takes the verdicts of a session's execs as the session
// stores them (session.Writer is one). AddVerdict runs on the pool's
// goroutines and must not block.
type VerdictSink interface {
	AddVerdict(manifest.Verdict)
}

// Fan hands each verdict to every sink it holds.
type Fan []VerdictSink

// AddVerdict hands v to every sink.
func (f Fan) AddVerdict(v manifest.Verdict) {
	for _, s := range f {
		s.AddVerdict(v)
	}
}

// StartSession starts checking the execs of the session w records, with
// the pins and first-seen hashes of the store under home (polygraph's
// home, session.Home)
// in opts.Store; when that store cannot be read it checks against dpkg
// only, and when no checker can be made at all it logs why and returns
// nil. The hashing outlives a cancelled ctx (attach and watch stop on it)
// until Close bounds it: the execs already seen deserve a verdict.
func StartSession(ctx context.Context, home string, opts Options, w VerdictSink) *SessionCheck {
	st, err := OpenStore(home)
	if err != nil {
		slog.Warn("integrity: store unavailable; checking against dpkg only", "error", err)
	} else {
		opts.Store = st
	}
	c, err := New(opts)
	if err != nil && opts.Store != nil {
		slog.Warn("integrity: pins or first-seen hashes unreadable; checking against dpkg only", "error", err)
		opts.Store = nil
		c, err = New(opts)
	}
	if err != nil {
		slog.Warn("integrity: checking off", "error", err)
		return nil
	}
	// The index is built now, while the agent starts, not at its first
	// exec (a no-op when WarmDpkg or an earlier session built it).
	c.warmDpkg()
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	x := &SessionCheck{w: w, cancel: cancel}
	x.pool = c.Start(hctx, sessionWorkers, sessionQueue, x.store)
	return x
}

// Submit queues an exec event (other events are ignored); it never
// blocks: a full queue stores the exec as unavailable.
func (x *SessionCheck) Submit(ev *event.Event) {
	if x == nil || ev.Kind != event.KindExec || ev.Process == nil {
		return
	}
	x.pool.Submit(Request{ExecID: ev.ExecID, PID: ev.PID, Path: ev.Path, Argv: ev.Argv(), Cwd: ev.Cwd(), Script: ev.Script()})
}

// store is the pool's delivery: each verdict becomes a session row.
func (x *SessionCheck) store(r Result) {
	for _, v := range r.Verdicts() {
		data, err := json.Marshal(v)
		if err != nil {
			slog.Debug("integrity: encode verdict", "path", v.Path, "error", err)
			continue
		}
		x.w.AddVerdict(manifest.Verdict{ExecID: r.ExecID, Role: string(v.Role), Path: v.Path, SHA256: v.SHA256,
			Status: string(v.Status), Data: data})
	}
}

// Close drains the pool (bounded by SessionDrain) and saves the
// session's first sightings. Call it after the last Submit and before
// the session is closed.
func (x *SessionCheck) Close() {
	if x == nil {
		return
	}
	t := time.AfterFunc(SessionDrain, x.cancel)
	defer t.Stop()
	defer x.cancel()
	if err := x.pool.Close(); err != nil {
		slog.Warn("integrity: saving first-seen hashes", "error", err)
	}
}

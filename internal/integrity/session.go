package integrity

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
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
	pool    *Pool
	w       VerdictSink
	cancel  context.CancelFunc
	st      *Store
	taint   *taintWatch
	session string
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
	x := &SessionCheck{w: w, cancel: cancel, st: opts.Store, session: opts.Session, taint: &taintWatch{dpkgDir: c.opts.DpkgDir}}
	if opts.Store != nil {
		x.taint.store = opts.Store.Dir
	}
	x.pool = c.Start(hctx, sessionWorkers, sessionQueue, x.store)
	return x
}

// Submit queues an exec event (other events are ignored); it never
// blocks: a full queue stores the exec as unavailable.
func (x *SessionCheck) Submit(ev *event.Event) {
	if x == nil {
		return
	}
	if ev.Kind != event.KindExec || ev.Process == nil {
		x.taint.observe(ev)
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
	x.saveTaints()
}

// TrustFiles are the files the session's verdicts rest on that a traced
// tree could write: the store's pin and first-seen files (dpkg's are
// the policy's privilege paths already).
func (x *SessionCheck) TrustFiles() []string {
	if x == nil || x.st == nil {
		return nil
	}
	return []string{filepath.Join(x.st.Dir, PinsFile), filepath.Join(x.st.Dir, SeenFile)}
}

// saveTaints records in the store the trusted-source files the tree
// wrote, so later sessions do not trust them.
func (x *SessionCheck) saveTaints() {
	t := x.taint.taints(x.session, time.Now())
	if len(t) == 0 {
		return
	}
	if x.st == nil {
		slog.Warn("integrity: the traced tree rewrote trusted sources, and no store can remember it", "files", len(t))
		return
	}
	if err := x.st.AddTaints(t); err != nil {
		slog.Warn("integrity: remembering the trusted sources the tree rewrote", "error", err)
	}
}

package record

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/session"
)

// Integrity checking (docs/integrity.md): every exec of the traced tree is
// handed to an integrity.Pool as it is decoded; the pool hashes and judges
// the binary (and the script an interpreter runs) off the event path and
// the verdicts are stored in the session beside the events.
const (
	integrityWorkers = 2
	integrityQueue   = 1024
	// integrityDrain bounds how long closing the session waits for the
	// queued execs to be hashed; what is left then is stored unavailable.
	integrityDrain = 10 * time.Second
)

// execCheck is the recorder's end of the integrity pool; nil when
// checking is off, and then every method does nothing.
type execCheck struct {
	pool   *integrity.Pool
	w      *session.Writer
	cancel context.CancelFunc
}

// startExecCheck starts the pool for the session w records. The hashing
// outlives a cancelled recording (attach stops on ctx) until close bounds
// it: the execs already seen deserve a verdict.
func startExecCheck(ctx context.Context, o Options, w *session.Writer) *execCheck {
	if o.NoIntegrity {
		return nil
	}
	opts := integrity.Options{Workspaces: []string{w.Meta().Cwd}, PATH: tracedPATH(o)}
	st, err := integrity.OpenStore(o.Home)
	if err != nil {
		slog.Warn("integrity: store unavailable; checking against dpkg only", "error", err)
	} else {
		opts.Store = st
	}
	c, err := integrity.New(opts)
	if err != nil && opts.Store != nil {
		slog.Warn("integrity: pins or first-seen hashes unreadable; checking against dpkg only", "error", err)
		opts.Store = nil
		c, err = integrity.New(opts)
	}
	if err != nil {
		slog.Warn("integrity: checking off", "error", err)
		return nil
	}
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	x := &execCheck{w: w, cancel: cancel}
	x.pool = c.Start(hctx, integrityWorkers, integrityQueue, x.store)
	return x
}

// submit queues an exec event; it never blocks (a full queue stores the
// exec as unavailable).
func (x *execCheck) submit(ev *event.Event) {
	if x == nil || ev.Kind != event.KindExec || ev.Process == nil {
		return
	}
	x.pool.Submit(integrity.Request{ExecID: ev.ExecID, PID: ev.PID, Path: ev.Path, Argv: ev.Argv, Cwd: ev.Cwd, Script: ev.Script})
}

// store is the pool's delivery: each verdict becomes a session row.
func (x *execCheck) store(r integrity.Result) {
	for _, v := range r.Verdicts() {
		data, err := json.Marshal(v)
		if err != nil {
			slog.Debug("integrity: encode verdict", "path", v.Path, "error", err)
			continue
		}
		x.w.AddVerdict(session.Verdict{ExecID: r.ExecID, Role: string(v.Role), Path: v.Path, SHA256: v.SHA256,
			Status: string(v.Status), Data: data})
	}
}

// close drains the pool (bounded by integrityDrain) and saves the
// session's first sightings; call it after the sensor stopped and
// before the session is closed.
func (x *execCheck) close() {
	if x == nil {
		return
	}
	t := time.AfterFunc(integrityDrain, x.cancel)
	defer t.Stop()
	defer x.cancel()
	if err := x.pool.Close(); err != nil {
		slog.Warn("integrity: saving first-seen hashes", "error", err)
	}
}

// tracedPATH is the PATH the traced command resolves programs with: the
// one run gives it, or the attached process's own.
func tracedPATH(o Options) string {
	if o.Mode != "attach" {
		return envValue(o.Env, "PATH")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", o.AttachPID))
	if err != nil {
		return os.Getenv("PATH")
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			return v
		}
	}
	return os.Getenv("PATH")
}

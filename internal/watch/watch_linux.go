package watch

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/record"
	"github.com/polygraph/polygraph/internal/sensor"
)

// tree is one agent's process tree, recorded as its own session: its
// events go through a pipeline to the session, the exec checks and a live
// analysis running every rule, as under run (recording_linux.go).
type tree struct {
	*recording
	root  uint32
	pids  map[uint32]bool
	agent string
	exit  *int
	gone  bool // the reaper found no process of it alive
}

// execInfo is what an outsider's exec said, kept to name a reader that
// has exited by the time its open is read.
type execInfo struct {
	path string
	argv []string
	exec *event.Event // the exec event itself, for the outsiders session
}

// maxExecs bounds the outsider execs remembered.
const maxExecs = 8192

// watcher is the state of one Run; the sensor's sink goroutine owns the
// maps, Run reads openIDs under mu.
type watcher struct {
	ctx context.Context
	o   Options
	// homes are the machine's (accounts.Homes), whatever --home chose
	// to watch the stores of: the ones guarded in the security ring and
	// every session's meta.homes, the homes its rules read "~/" as.
	homes     []string
	s         *sensor.Sensor
	targets   []Target
	trees     map[uint32]*tree
	execs     map[uint32]execInfo
	out       *findings.Writer
	self      string
	outsiders *recording
	// outsiderExec is the exec event of each outsider process already
	// put in the outsiders session (by pid), so its opens are judged
	// with what it ran.
	outsiderExec map[uint32]string

	// mu guards everything above against the reaper (the sink holds it
	// per event: there is no contention worth the finer locks) and openIDs.
	mu      sync.Mutex
	openIDs map[string]bool
	// closing counts the sessions being closed off the sink's goroutine
	// (closeTree); Run waits for them.
	closing sync.WaitGroup
}

// reapEvery is how often trees whose processes are gone without an exit
// record are closed: one that exited before the kernel tracked it (a
// short-lived agent) never gets one.
const reapEvery = time.Second

// reap closes the trees whose every process is gone, seen gone on two
// rounds in a row (an exit record may be on its way).
func (w *watcher) reap() {
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[*tree]bool{}
	for _, t := range w.trees {
		if seen[t] || t.recording == nil {
			continue
		}
		seen[t] = true
		alive := false
		for pid := range t.pids {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
				alive = true
			}
		}
		if alive {
			t.gone = false
			continue
		}
		if t.gone {
			w.closeTree(t, true)
		}
		t.gone = true
	}
}

// Run watches until ctx ends, then closes every open session.
func Run(ctx context.Context, o Options) error {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	homes := accounts.Homes(accounts.Passwd)
	if o.Homes == nil {
		o.Homes = homes
	}
	if o.PruneEvery == 0 {
		o.PruneEvery = time.Hour
	}
	s, err := sensor.New(sensor.Options{Watch: true, RingBytes: o.RingBytes})
	if err != nil {
		return err
	}
	defer s.Close()
	sensor.ReleaseLoadMemory()
	w := &watcher{ctx: ctx, o: o, homes: homes, s: s, targets: Targets(o.Homes), trees: map[uint32]*tree{}, execs: map[uint32]execInfo{},
		out: findings.NewWriter(o.Out), openIDs: map[string]bool{}, outsiderExec: map[uint32]string{}}
	w.self, _ = os.Executable()
	ids := make([]sensor.FileID, len(w.targets))
	for i, t := range w.targets {
		ids[i] = sensor.FileID{Dev: t.Dev, Ino: t.Ino, Dir: t.Dir}
		if fi, err := os.Stat(filepath.Dir(t.Path)); err == nil {
			_, ids[i].ParentIno = fileID(fi)
		}
	}
	if err := s.WatchFiles(ids); err != nil {
		return err
	}
	// The agents' reads of credential files go to the security ring, as
	// under run.
	s.MarkSensitive(policy.Default().GuardedPaths(homes))
	w.prune()
	w.joinRunning()
	s.Start(w.sink)
	// The line a supervisor (or the bench) waits for: from here on every
	// exec and every open of a watched store is seen.
	slog.Info("watch: attached", "stores", len(w.targets), "pid", os.Getpid())
	if o.Ready != nil {
		o.Ready(w.targets)
	}
	tick := time.NewTicker(o.PruneEvery)
	defer tick.Stop()
	reap := time.NewTicker(reapEvery)
	defer reap.Stop()
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			w.prune()
		case <-reap.C:
			w.reap()
		}
	}
	s.Stop() // the sink has seen everything
	var errs []error
	for _, t := range w.trees {
		if t.recording != nil {
			errs = append(errs, w.closeTree(t, false))
		}
	}
	w.closing.Wait()
	if w.outsiders != nil {
		errs = append(errs, w.outsiders.close(ctx, nil))
	}
	errs = append(errs, w.out.Err())
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func (w *watcher) prune() {
	w.mu.Lock()
	open := make(map[string]bool, len(w.openIDs))
	for id := range w.openIDs {
		open[id] = true
	}
	w.mu.Unlock()
	gone, err := Prune(w.o.Home, w.o.Keep, w.o.MaxSize, open, time.Now())
	if err != nil {
		slog.Warn("watch: prune", "error", err)
	} else if len(gone) > 0 {
		slog.Info("watch: pruned sessions", "count", len(gone))
	}
}

// sink routes each event: to its agent's session, to a new one when an
// agent starts, or, for an outsider's open of a watched store, to a
// finding.
func (w *watcher) sink(ev *event.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.trees[ev.PID]
	if t == nil && ev.Kind != event.KindExit {
		// A child forked before its agent was tracked: the kernel
		// reported it only because watch mode is on. Bring it in.
		if pt := w.trees[ev.PPID]; pt != nil {
			t = pt
			w.join(t, ev.PID, ev)
		}
	}
	switch {
	case t != nil:
		w.add(t, ev)
	case ev.Kind == event.KindExec:
		if p, ok := agent.Executable(ev.Path, ev.Argv()); ok {
			w.start(p, ev)
			return
		}
		// The kernel reported it as a possible agent (or as the image of
		// an outsider's open): it is none, and its children need not be.
		w.s.NotAgent(ev.PID)
		w.remember(ev)
	case ev.Kind == event.KindOpen:
		w.outsider(ev)
	}
}

// remember keeps what an exec said, to name the process later.
func (w *watcher) remember(ev *event.Event) {
	if len(w.execs) >= maxExecs {
		clear(w.execs)
	}
	w.execs[ev.PID] = execInfo{path: ev.Path, argv: ev.Argv(), exec: ev}
}

// start opens the session of a new agent tree rooted at ev's process.
func (w *watcher) start(p *agent.Profile, ev *event.Event) {
	meta := record.NewMeta("watch", ev.Home(), w.s.Unavailable())
	meta.Command, meta.Cwd, meta.RootPID, meta.StartedAt = ev.Argv(), ev.Cwd(), int(ev.PID), ev.TS
	if uid := ev.UID(); uid != nil {
		meta.UID = int(*uid)
	}
	rec, err := w.record(meta, procPATH(int(ev.PID)), analysis.TranscriptAuto)
	if err != nil {
		slog.Warn("watch: cannot record agent", "agent", p.Name, "pid", ev.PID, "error", err)
		return
	}
	t := &tree{recording: rec, root: ev.PID, pids: map[uint32]bool{}, agent: p.Name}
	w.join(t, ev.PID, ev)
	w.add(t, ev)
	slog.Info("watch: recording agent", "agent", p.Name, "pid", ev.PID, "session", rec.w.Meta().ID)
}

// join makes pid part of t, in the kernel's tracked set too, so its
// children are traced from their fork on (as `run` does).
func (w *watcher) join(t *tree, pid uint32, ev *event.Event) {
	t.pids[pid] = true
	w.trees[pid] = t
	image := uint64(ev.TS.Sub(w.s.Decoder().BootOffset))
	if ev.Kind != event.KindExec {
		image, _ = sensor.StartTimeNS(int(pid))
	}
	if err := w.s.Track(pid, image); err != nil {
		slog.Warn("watch: track", "pid", pid, "error", err)
	}
}

// add stores ev in t's session and follows the tree's forks and exits;
// the session closes when the tree's last process exits.
func (w *watcher) add(t *tree, ev *event.Event) {
	t.bus.Publish(ev)
	switch ev.Kind {
	case event.KindExec:
		w.remember(ev)
	case event.KindFork:
		if c := ev.ChildPID(); c != 0 {
			t.pids[c] = true
			w.trees[c] = t
		}
	case event.KindExit:
		delete(t.pids, ev.PID)
		delete(w.trees, ev.PID)
		if ev.PID == t.root && ev.ExitCode() != nil {
			code := *ev.ExitCode()
			t.exit = &code
		}
		if len(t.pids) == 0 {
			w.closeTree(t, true)
		}
	}
}

// closeTree ends t's session (recording.close: its pipeline drained, its
// exec checks bounded by integrity.SessionDrain, the live analysis's last
// decision). With async that happens off the caller's goroutine, since
// the sink and the reaper hold mu and every other tree's events wait on
// it; Run waits for it (closing). The session stays in openIDs, safe from
// retention, until it is closed.
func (w *watcher) closeTree(t *tree, async bool) error {
	rec, exit := t.recording, t.exit
	t.recording = nil
	for pid := range t.pids {
		delete(w.trees, pid)
	}
	end := func() error {
		err := rec.close(w.ctx, exit)
		w.mu.Lock()
		delete(w.openIDs, rec.w.Meta().ID)
		w.mu.Unlock()
		return err
	}
	if !async {
		return end()
	}
	w.closing.Add(1)
	go func() {
		defer w.closing.Done()
		if err := end(); err != nil {
			slog.Warn("watch: close session", "error", err)
		}
	}()
	return nil
}

// procPATH is PATH in /proc/PID/environ, or "" (the checker then uses
// its own).
func procPATH(pid int) string {
	v, _ := sensor.ProcEnv(uint32(pid), "PATH")
	return v
}

// outsider takes an open of a watched store by a process in no agent
// tree into the outsiders session, after the exec of that process (when
// watch saw it), so the rules judge the reader by what it ran: the store's
// own agent started before watch, another program, a shell. polygraph's
// own opens are not the host's activity.
func (w *watcher) outsider(ev *event.Event) {
	if _, ok := match(w.targets, ev.Path); !ok {
		return // a file watched through its directory, but not one of ours (a hard link elsewhere)
	}
	info, seen := w.execs[ev.PID]
	if !seen {
		info.path, _ = os.Readlink(fmt.Sprintf("/proc/%d/exe", ev.PID))
	}
	if ev.PID == uint32(os.Getpid()) || info.path != "" && info.path == w.self {
		return
	}
	if w.outsiders == nil {
		meta := record.NewMeta("watch", "", w.s.Unavailable())
		meta.Command, meta.Outsiders = []string{"polygraph", "watch", "(outsiders)"}, true
		rec, err := w.record(meta, "", analysis.TranscriptNone)
		if err != nil {
			slog.Warn("watch: outsiders session", "error", err)
			return
		}
		w.outsiders = rec
	}
	if seen && info.exec != nil && w.outsiderExec[ev.PID] != info.exec.ExecID {
		if len(w.outsiderExec) >= maxExecs {
			clear(w.outsiderExec)
		}
		w.outsiderExec[ev.PID] = info.exec.ExecID
		w.outsiders.bus.Publish(info.exec)
	}
	if seen && info.exec != nil && info.exec.PID == ev.PID {
		// The kernel names an untraced process's image by its start
		// time (bpf/watch.h): the image that opened is the one exec'd.
		ev.ExecID = info.exec.ExecID
	}
	w.outsiders.bus.Publish(ev)
}

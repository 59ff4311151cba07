package record

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/version"

	"github.com/polygraph/polygraph/internal/procfs"

	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// Record loads the sensor, creates the session, runs or joins the tree,
// and stores everything the kernel reports until the tree is gone (or,
// for run, the command exited and --linger passed). The session is
// complete whatever the traced command does: crash, signal, daemons.
// Nothing is left behind when the sensor cannot load.
func Record(ctx context.Context, o Options) (*Result, error) {
	if !o.NoIntegrity {
		// dpkg's index is ready before the command starts: built while
		// the sensor loads, not at the tree's first exec.
		integrity.WarmDpkg()
	}
	s, err := sensor.New(o.Sensor)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	sensor.ReleaseLoadMemory()

	meta := newMeta(o, s.Unavailable())
	meta.Hooks = s.HookPath()
	w, err := session.Create(o.Home, meta)
	if err != nil {
		return nil, err
	}
	// The guarded files of every home the session's rules read "~/" as
	// go to the security ring.
	s.MarkSensitive(policy.Default().GuardedPaths(w.Meta().Homes))
	if o.Started != nil {
		o.Started(w.Meta())
	}
	if o.Isolate != nil && o.Mode != "attach" {
		if o.iso, err = startIsolation(ctx, o, w.Meta()); err != nil {
			w.Close(nil)
			return nil, err
		}
		defer o.iso.close()
	}
	// The shim (polygraph itself, waiting to exec the command) is traced
	// from before its exec; what its Go runtime does is polygraph's, not
	// the command's. Only its exit (when the command could not be
	// started) is a fact about the command. runCommand names it once it
	// exists (shimImages says how its images are known); the sink runs on
	// the sensor's goroutine.
	var shim shimImages
	p := startPipeline(ctx, o, w)
	s.Start(func(ev *event.Event) {
		if shim.owns(ev) {
			o.iso.shimEvent(ev, w)
			return
		}
		p.bus.Publish(ev)
	})
	stopLoss := reportLoss(s, w)

	var res Result
	switch o.Mode {
	case "attach":
		err = attachTree(ctx, s, o)
	default:
		// The watchdog stands by until the session is closed: polygraph
		// can die while it ends leftovers, too.
		if !o.LeaveOnExit {
			defer startWatchdog(s).release()
		}
		res.ExitCode, err = runCommand(ctx, s, w, o, &shim)
	}
	stopLoss()
	if err != nil {
		s.Stop()
		p.close()
		w.Close(nil)
		return nil, err
	}
	o.iso.collect(w)
	if err := finish(ctx, s, w, &res, o, p); err != nil {
		return nil, err
	}
	return &res, nil
}

// newMeta describes the session run or attach is about to record.
func newMeta(o Options, unavailable []string) session.Meta {
	user, uid, _, home := accounts.InvokingUser()
	// The agents keep their transcripts under the HOME the command sees,
	// which is the invoking user's unless the caller set another.
	if h := envValue(o.Env, "HOME"); h != "" && o.Mode != "attach" {
		home = h
	}
	meta := NewMeta(o.Mode, home, unavailable)
	meta.Command, meta.User, meta.UID, meta.Cwd = o.Command, user, uid, o.Dir
	if meta.Cwd == "" {
		meta.Cwd, _ = os.Getwd()
	}
	if o.Mode == "attach" {
		meta.RootPID = o.AttachPID
		meta.Command = procArgv(o.AttachPID)
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", o.AttachPID)); err == nil {
			meta.Cwd = cwd
		}
	}
	return meta
}

// NewMeta describes a session about to be recorded on this host, in
// mode, of a tree whose HOME is home: the host, its kernel, polygraph's
// version, the features the sensor could not load, the homes the session
// guards and its rules read "~/" as (sessionHomes), and their credential
// files by identity (secretIdentities). run, attach
// and watch each fill in what ran, as whom and where.
func NewMeta(mode, home string, unavailable []string) session.Meta {
	host, _ := os.Hostname()
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	homes := sessionHomes(home)
	return session.Meta{Mode: mode, Home: home, Homes: homes, Hostname: host, Secrets: secretIdentities(policy.Default(), homes),
		Kernel: unix.ByteSliceToString(uts.Release[:]), Version: version.Get().String(), Unavailable: slices.Clone(unavailable)}
}

// sessionHomes are the homes a session guards and its rules read "~/"
// as: the one the command runs with first (where sec_files fills up, the
// first homes keep theirs), then every account's (accounts.Homes).
func sessionHomes(home string) []string {
	var homes []string
	if home != "" {
		homes = append(homes, home)
	}
	for _, h := range accounts.Homes(accounts.Passwd) {
		if !slices.Contains(homes, h) {
			homes = append(homes, h)
		}
	}
	return homes
}

// finish stops the sensor once the tree is done, lists what outlived it
// (ending it first with KillLeftovers), stores the loss counters, waits
// for the pipeline's listeners and the exec verdicts, closes the session
// and makes the live analysis's last decision.
func finish(ctx context.Context, s *sensor.Sensor, w *session.Writer, res *Result, o Options, p *pipe) error {
	// Whatever is still tracked now outlived the command (and the linger).
	alive := s.Tracked()
	slog.Debug("command done; stopping sensor", "alive", len(alive))
	if o.KillLeftovers && len(alive) > 0 {
		// Listed first: they are gone after.
		res.Leftovers = leftovers(s, alive)
		notice(o, "polygraph: ending %s the command left running (--kill-leftovers)", processes(len(res.Leftovers)))
		endLeftovers(s, alive)
	}
	s.Stop()
	slog.Debug("sensor stopped")
	if !o.KillLeftovers {
		res.Leftovers = leftovers(s, alive)
	}
	res.Stats = s.Stats()
	setLost(w, res.Stats)
	w.SetRepeats(res.Stats.GuardedRepeats)
	w.SetLeftovers(res.Leftovers)
	p.close()
	res.ListenerLost = p.bus.Lost()
	slog.Debug("closing session")
	if err := w.Close(res.ExitCode); err != nil {
		return err
	}
	res.Meta = w.Meta()
	if p.live != nil {
		a, err := p.live.Finish(context.WithoutCancel(ctx), res.Meta, res.Leftovers, res.ListenerLost[liveListener])
		if err != nil {
			// The session is whole on disk: the report reads it.
			slog.Warn("live analysis: the last decision failed", "session", res.Meta.ID, "error", err)
		}
		res.Live = a
	}
	return nil
}

// setLost stores the sensor's loss counters in the session.
func setLost(w *session.Writer, st sensor.Stats) {
	w.SetLost("ringbuf", st.RingLost)
	w.SetLost("ringbuf-security", st.SecRingLost)
	w.SetLost("tracking", st.TrackLost)
	w.SetLost("queue", st.Dropped)
	if st.BadRecs > 0 {
		w.SetLost("undecodable", st.BadRecs)
	}
}

// lossEvery is how often the sensor's loss counters go to the session
// while recording: the live analysis raises events-lost from them, and a
// session whose recorder dies keeps what was lost until then.
const lossEvery = time.Second

// reportLoss stores the loss counters every lossEvery until the returned
// func is called.
func reportLoss(s *sensor.Sensor, w *session.Writer) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(lossEvery)
		defer t.Stop()
		var last sensor.Stats
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if st := s.Stats(); st.RingLost != last.RingLost || st.SecRingLost != last.SecRingLost ||
					st.TrackLost != last.TrackLost || st.Dropped != last.Dropped || st.BadRecs != last.BadRecs {
					setLost(w, st)
					last = st
				}
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// leftovers describes the pids of alive that are still running.
func leftovers(s *sensor.Sensor, alive []uint32) []session.Leftover {
	var out []session.Leftover
	for _, pid := range alive {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			continue // exited between the check and now
		}
		out = append(out, session.Leftover{
			PID: pid, ExecID: s.Decoder().ExecIDOf(pid), Comm: procComm(int(pid)), Argv: procArgv(int(pid)),
		})
	}
	return out
}

// endLeftovers sends SIGTERM to the leftovers, gives them termGrace to
// exit, then SIGKILLs whatever the tree still holds (a child forked in
// the meantime included) until it is empty or killGrace has passed. The
// sensor still runs, so their exits are recorded.
func endLeftovers(s *sensor.Sensor, alive []uint32) {
	const termGrace, killGrace = 2 * time.Second, time.Second
	for _, pid := range alive {
		unix.Kill(int(pid), unix.SIGTERM)
	}
	waitEmpty := func(d time.Duration, each func(pid uint32)) {
		for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			left := s.Tracked()
			if len(left) == 0 {
				return
			}
			for _, pid := range left {
				each(pid)
			}
		}
	}
	waitEmpty(termGrace, func(uint32) {})
	waitEmpty(killGrace, func(pid uint32) { unix.Kill(int(pid), unix.SIGKILL) })
}

// notice writes one of polygraph's own lines to o.Notices.
func notice(o Options, format string, args ...any) {
	if o.Notices != nil {
		fmt.Fprintf(o.Notices, format+"\n", args...)
	}
}

// processes is "1 process" or "N processes".
func processes(n int) string {
	if n == 1 {
		return "1 process"
	}
	return fmt.Sprintf("%d processes", n)
}

// runCommand starts the command through the shim, tracks it before it
// execs (naming the shim in shim), forwards signals, waits
// for it and then lingers.
func runCommand(ctx context.Context, s *sensor.Sensor, w *session.Writer, o Options, shim *shimImages) (*int, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find polygraph's own binary: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := shimCommand(self, o)
	cmd.ExtraFiles = []*os.File{pr}
	if err := o.iso.apply(cmd); err != nil {
		pr.Close()
		pw.Close()
		return nil, err
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	// The parent-death signal fires when the thread that forked the
	// child ends, not the process: the fork happens on this goroutine's
	// thread, locked to it until the command has exited.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start %s: %w", o.Command[0], err)
	}
	pr.Close()
	pid := cmd.Process.Pid
	start, err := sensor.StartTimeNS(pid)
	if err == nil {
		id := event.ExecID(uint32(pid), start)
		shim.set(uint32(pid), id, self)
		err = s.Track(uint32(pid), start)
	}
	if err != nil {
		cmd.Process.Kill()
		pw.Close()
		cmd.Wait()
		return nil, err
	}
	w.SetRootPID(pid)
	pw.Write([]byte{1}) // release the shim: it execs the command, traced
	pw.Close()

	werr := waitForwarding(cmd, sigs)
	code := exitStatus(cmd.ProcessState, werr)
	linger(s, o, sigs)
	return code, nil
}

// shimCommand is the shim that becomes o's command: with the capabilities
// dropped when the command runs as root (unless o.KeepCaps), and killed
// when polygraph dies (unless o.LeaveOnExit).
func shimCommand(self string, o Options) *exec.Cmd {
	var opts []string
	asRoot := os.Geteuid() == 0 && (o.Credential == nil || o.Credential.Uid == 0)
	if asRoot && !o.KeepCaps {
		opts = append(opts, shimDropCaps)
	}
	cmd := exec.Command(self, append([]string{ShimArg}, shimArgs(opts, o.Command)...)...)
	cmd.Args[0] = "polygraph-shim"
	cmd.Dir, cmd.Env = o.Dir, o.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.Credential}
	if !o.LeaveOnExit {
		// Set after the credentials change (which would clear it) and
		// kept across the shim's exec of the command.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	return cmd
}

// linger keeps tracing what the command left running until it is gone,
// o.Linger has passed or polygraph is signalled, and says so.
func linger(s *sensor.Sensor, o Options, sigs <-chan os.Signal) {
	n := len(s.Tracked())
	if n == 0 || o.Linger <= 0 {
		return
	}
	notice(o, "polygraph: waiting up to %s for %s the command left running (Ctrl-C to stop)", o.Linger, processes(n))
	deadline := time.Now().Add(o.Linger)
	for time.Now().Before(deadline) && len(s.Tracked()) > 0 {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-sigs:
			return
		}
	}
}

// waitForwarding waits for cmd, passing on the signals polygraph gets:
// an interrupt only when the terminal did not already send it to the
// command's group, and the third one as SIGKILL.
func waitForwarding(cmd *exec.Cmd, sigs <-chan os.Signal) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	interrupts := 0
	fg := foregroundTTY()
	for {
		select {
		case err := <-done:
			return err
		case sig := <-sigs:
			if sig == os.Interrupt {
				interrupts++
				if interrupts >= 3 {
					slog.Warn("third interrupt: killing the traced command")
					cmd.Process.Signal(syscall.SIGKILL)
					continue
				}
				if fg {
					continue // the terminal sent it to the command's group already
				}
			}
			cmd.Process.Signal(sig)
		}
	}
}

// exitStatus maps a finished process to a shell-style status.
func exitStatus(ps *os.ProcessState, err error) *int {
	if ps == nil {
		return nil
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return event.Ptr(128 + int(ws.Signal()))
	}
	return event.Ptr(ps.ExitCode())
}

// foregroundTTY reports whether polygraph runs in the foreground of a
// terminal, where Ctrl-C already reaches the whole process group.
func foregroundTTY() bool {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// attachTree tracks pid and its descendants and waits until they are all
// gone or ctx is cancelled.
// Once the tree is tracked it says so on o.Notices, with how many
// processes it joined: from then on everything they do is recorded.
func attachTree(ctx context.Context, s *sensor.Sensor, o Options) error {
	root := o.AttachPID
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", root)); err != nil {
		return fmt.Errorf("attach: no process %d", root)
	}
	// Two passes: a child forked while the first pass ran is caught by the second.
	joined := map[int]bool{}
	for pass := 0; pass < 2; pass++ {
		for _, pid := range procfs.ReadTable().Descendants(root) {
			if start, err := sensor.StartTimeNS(pid); err == nil {
				if err := s.Track(uint32(pid), start); err != nil {
					return err
				}
				joined[pid] = true
			}
		}
	}
	notice(o, "polygraph: attached to pid %d (%s) and %s below it: recording until they exit or Ctrl-C",
		root, textsafe.Line(procComm(root)), processes(max(len(joined)-1, 0)))
	for {
		// A process listed above may have exited before it was tracked:
		// its entry would never go.
		s.Prune()
		if len(s.Tracked()) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// envValue returns the value of key in env (the last one wins, as for
// exec), or from polygraph's own environment when env is nil.
func envValue(env []string, key string) string {
	if env == nil {
		return os.Getenv(key)
	}
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

func procArgv(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

func procComm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

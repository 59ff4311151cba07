//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// The watch tracers measure `polygraph watch` (docs/watch.md), which is
// not a tracer of one tree but a system-wide mode: every process on the
// host pays for its programs while it runs. Each run starts its own watch
// (root, POLYGRAPH_HOME and the findings file in the run's directory, the
// stores of a planted home only), waits for its "watch: attached" log
// line, runs the workload and stops watch with SIGTERM. Per run, not per
// workload: the runs of the other tracers, interleaved with these, must
// not pay for a watch left running.
//
//   - watch: the workload runs bare, as a process watch does not
//     recognise, so what it costs is what any process on the host pays.
//     Watch records nothing of it (it is silent, like the floor).
//   - watch-agent: the workload is started by a hard link to the helper
//     where Claude Code installs (…/node_modules/@anthropic-ai/claude-code/),
//     which the agent profile recognises by its path: watch records the
//     tree as an agent session, as `polygraph run` would, exec hashing
//     included. Its events come from that session. The helper waits
//     agentSettle before the workload, untimed, as an agent's start-up
//     would: a tree that is done before watch has read its root's exec is
//     not tracked (docs/watch.md, the tracking race).
//
// Agents running on the host during the bench are recorded too (as watch
// would record them anyway): their cost is part of what watch costs there.

// attachedLine is what watch logs (at info, so with -v) once the sensor
// is live and the stores are watched.
const attachedLine = "watch: attached"

// agentSettle is how long watch-agent's helper waits before the workload.
const agentSettle = 250 * time.Millisecond

// watchAttachTimeout bounds the wait for that line.
const watchAttachTimeout = 60 * time.Second

// agentHelper is where watch-agent's hard link to the helper lives: a path
// the claude-code profile recognises.
func agentHelper(e *env) string {
	return filepath.Join(e.tmp, "agent", "node_modules", "@anthropic-ai", "claude-code", "claude")
}

// prepareWatch checks that this polygraph has the watch verb.
func prepareWatch(ctx context.Context, e *env) error {
	out, err := exec.CommandContext(ctx, e.polygraph, "watch", "--help").CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("--out")) {
		return fmt.Errorf("this polygraph has no watch verb: %s", tailString(string(out), 200))
	}
	return nil
}

// prepareWatchAgent also links the helper where the agent profile finds it.
func prepareWatchAgent(ctx context.Context, e *env) error {
	if err := prepareWatch(ctx, e); err != nil {
		return err
	}
	p := agentHelper(e)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.Link(e.helper, p); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("link the helper as an agent: %w", err)
	}
	return nil
}

func runWatch(ctx context.Context, r *run, s *Sample) error { return runUnderWatch(ctx, r, s, false) }

func runWatchAgent(ctx context.Context, r *run, s *Sample) error {
	return runUnderWatch(ctx, r, s, true)
}

// watchProc is one running `polygraph watch`.
type watchProc struct {
	cmd      *exec.Cmd
	log      string
	home     string
	launched time.Time
	hwm      *hwmPoller
	exited   chan error
}

// startWatch starts polygraph watch for run r and waits until it is
// attached. Its stores are those of a planted home (an empty ~/.claude):
// the bench's own, not the machine's users'.
func startWatch(ctx context.Context, r *run) (*watchProc, error) {
	w := &watchProc{home: filepath.Join(r.dir, "home"), log: filepath.Join(r.dir, "watch.log"), exited: make(chan error, 1)}
	stores := filepath.Join(r.dir, "agenthome")
	if err := os.MkdirAll(filepath.Join(stores, ".claude"), 0o700); err != nil {
		return nil, err
	}
	logf, err := os.Create(w.log)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	w.cmd = exec.CommandContext(ctx, r.e.polygraph, "-v", "watch", "--home", stores, "--out", filepath.Join(r.dir, "findings.jsonl"),
		"--keep", "0", "--max-size", "0")
	w.cmd.Env = append(os.Environ(), "POLYGRAPH_HOME="+w.home)
	w.cmd.Stdout, w.cmd.Stderr = logf, logf
	if w.launched, err = startCmd(w.cmd); err != nil {
		return nil, err
	}
	w.hwm = pollHWM(w.cmd.Process.Pid)
	go func() { w.exited <- w.cmd.Wait() }()
	for deadline := time.Now().Add(watchAttachTimeout); ; {
		if b, _ := os.ReadFile(w.log); bytes.Contains(b, []byte(attachedLine)) {
			return w, nil
		}
		select {
		case err := <-w.exited:
			w.hwm.Stop()
			return nil, fmt.Errorf("watch exited before attaching (%v): %s", err, tailFile(w.log, 300))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			w.stop()
			return nil, fmt.Errorf("watch did not attach within %s: %s", watchAttachTimeout, tailFile(w.log, 300))
		}
	}
}

// stop ends watch as its unit does (SIGTERM) and waits for it; an
// interrupted watch exits 130, which is success.
func (w *watchProc) stop() (exited time.Time, err error) {
	w.cmd.Process.Signal(syscall.SIGTERM)
	err = <-w.exited
	exited = time.Now()
	w.hwm.Stop()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 130 {
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("watch: %w: %s", err, tailFile(w.log, 300))
	}
	return exited, err
}

// runUnderWatch runs the workload while watch runs; as an agent's tree
// (recorded by watch) when asAgent.
func runUnderWatch(ctx context.Context, r *run, s *Sample, asAgent bool) error {
	w, err := startWatch(ctx, r)
	if err != nil {
		return err
	}
	args := r.helperArgs("-tracer", strconv.Itoa(w.cmd.Process.Pid))
	if asAgent {
		// A real agent runs for a while before its first tool call; the
		// settle stands for that, so watch has tracked the tree (it does
		// once it has read the exec, up to 50 ms later) before the
		// workload starts.
		args = r.helperArgs("-tracer", strconv.Itoa(w.cmd.Process.Pid), "-settle", agentSettle.String())
		args[0] = agentHelper(r.e)
	}
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	werr := cmd.Run()
	exited, serr := w.stop()
	s.TracerLifeRSSKB = w.hwm.kb
	if werr != nil && !isExit(werr) {
		return werr
	}
	res, err := r.read(s)
	if err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	s.StartupS = float64(res.HelperStartNS-w.launched.UnixNano()) / 1e9
	s.ShutdownS = float64(exited.UnixNano()-res.EndNS) / 1e9
	if ru, ok := w.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.TracerLifeCPUS = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	if !asAgent {
		return nil
	}
	return countWatchSession(ctx, r.e, w.home, args[0], s)
}

// countWatchSession counts the events of the watch session whose command
// is the agent's (agents running on the host have sessions of their own).
func countWatchSession(ctx context.Context, e *env, home, agent string, s *Sample) error {
	cmd := exec.CommandContext(ctx, e.polygraph, "sessions", "--json")
	cmd.Env = append(os.Environ(), "POLYGRAPH_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("polygraph sessions: %w", err)
	}
	var found []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var meta struct {
			Path    string   `json:"path"`
			Command []string `json:"command"`
		}
		if err := json.Unmarshal(sc.Bytes(), &meta); err != nil {
			return fmt.Errorf("polygraph sessions --json: %w", err)
		}
		if slices.Equal(meta.Command[:min(1, len(meta.Command))], []string{agent}) {
			found = append(found, sc.Text())
		}
	}
	if len(found) != 1 {
		return fmt.Errorf("expected one watch session of %s in %s, found %d", agent, home, len(found))
	}
	return fillSession([]byte(found[0]), s)
}

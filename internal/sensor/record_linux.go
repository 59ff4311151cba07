package sensor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// ShimArg is the hidden first argument that makes polygraph act as the
// shim: a child that waits until it is traced, then execs the command.
const ShimArg = "__polygraph_shim"

// RecordOptions say what to trace and where to store it.
type RecordOptions struct {
	Home    string   // session directory root (session.Home())
	Mode    string   // run, attach, demo
	Command []string // run: the command and its arguments
	Dir     string   // run: working directory ("" = ours)
	Env     []string // run: environment (nil = ours)
	// Credential runs the command as another user (the invoking user under sudo).
	Credential *syscall.Credential
	AttachPID  int           // attach: the root of the tree to join
	Linger     time.Duration // run: how long to keep tracing leftovers after the command exits
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
	// Observe sees every event as it is stored (the summary).
	Observe func(*event.Event)
	// Started is called once the session exists, with its metadata.
	Started func(session.Meta)
	Sensor  Options
}

// RecordResult is what a finished recording left.
type RecordResult struct {
	Meta      session.Meta
	ExitCode  *int // the traced command's; nil when unknown (attach)
	Leftovers []session.Leftover
	Stats     Stats
}

// Record loads the sensor, creates the session, runs or joins the tree,
// and stores everything the kernel reports until the tree is gone (or,
// for run, the command exited and --linger passed). The session is
// complete whatever the traced command does: crash, signal, daemons.
// Nothing is left behind when the sensor cannot load.
func Record(ctx context.Context, o RecordOptions) (*RecordResult, error) {
	s, err := New(o.Sensor)
	if err != nil {
		return nil, err
	}
	defer s.Close()

	user, uid, _, home := session.InvokingUser()
	host, _ := os.Hostname()
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	meta := session.Meta{
		Mode: o.Mode, Command: o.Command, User: user, UID: uid, Home: home, Hostname: host,
		Kernel: unix.ByteSliceToString(uts.Release[:]), Cwd: o.Dir, Unavailable: s.Unavailable(),
	}
	if meta.Cwd == "" {
		meta.Cwd, _ = os.Getwd()
	}
	// The agents keep their transcripts under the HOME the command sees,
	// which is the invoking user's unless the caller set another.
	if h := envValue(o.Env, "HOME"); h != "" && o.Mode != "attach" {
		meta.Home = h
	}
	if o.Mode == "attach" {
		meta.RootPID = o.AttachPID
		meta.Command = procArgv(o.AttachPID)
		if cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", o.AttachPID)); err == nil {
			meta.Cwd = cwd
		}
	}
	w, err := session.Create(o.Home, meta)
	if err != nil {
		return nil, err
	}
	if o.Started != nil {
		o.Started(w.Meta())
	}
	s.Start(func(ev *event.Event) {
		// The shim (polygraph itself, waiting to exec the command) is
		// traced from before its exec; what its Go runtime does is
		// polygraph's, not the command's. Only its exit (when the command
		// could not be started) is a fact about the command.
		if ev.ExecID == s.shimImage && ev.Kind != event.KindExit {
			return
		}
		w.Add(ev)
		if o.Observe != nil {
			o.Observe(ev)
		}
	})

	var res RecordResult
	switch o.Mode {
	case "attach":
		err = s.attachTree(ctx, o.AttachPID)
	default:
		res.ExitCode, err = s.runCommand(ctx, w, o)
	}
	if err != nil {
		s.Stop()
		w.Close(nil)
		return nil, err
	}

	// Whatever is still tracked now outlived the command (and the linger).
	alive := s.Tracked()
	slog.Debug("command done; stopping sensor", "alive", len(alive))
	s.Stop()
	slog.Debug("sensor stopped")
	for _, pid := range alive {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
			continue // exited between the check and the stop
		}
		res.Leftovers = append(res.Leftovers, session.Leftover{
			PID: pid, ExecID: s.dec.ExecIDOf(pid), Comm: procComm(int(pid)), Argv: procArgv(int(pid)),
		})
	}
	res.Stats = s.Stats()
	w.SetLost("ringbuf", res.Stats.RingLost)
	w.SetLost("tracking", res.Stats.TrackLost)
	w.SetLost("queue", res.Stats.Dropped)
	if res.Stats.BadRecs > 0 {
		w.SetLost("undecodable", res.Stats.BadRecs)
	}
	w.SetLeftovers(res.Leftovers)
	slog.Debug("closing session")
	if err := w.Close(res.ExitCode); err != nil {
		return nil, err
	}
	res.Meta = w.Meta()
	return &res, nil
}

// runCommand starts the command through the shim, tracks it before it
// execs, forwards signals, waits for it and then lingers.
func (s *Sensor) runCommand(ctx context.Context, w *session.Writer, o RecordOptions) (*int, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find polygraph's own binary: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{ShimArg}, o.Command...)...)
	cmd.Args[0] = "polygraph-shim"
	cmd.Dir, cmd.Env = o.Dir, o.Env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = o.Stdin, o.Stdout, o.Stderr
	cmd.ExtraFiles = []*os.File{pr}
	if o.Credential != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: o.Credential}
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("start %s: %w", o.Command[0], err)
	}
	pr.Close()
	pid := cmd.Process.Pid
	start, err := StartTimeNS(pid)
	if err == nil {
		s.shimImage = event.ExecID(uint32(pid), start)
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

	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	interrupts := 0
	fg := foregroundTTY()
	var werr error
wait:
	for {
		select {
		case werr = <-done:
			break wait
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
	code := exitStatus(cmd.ProcessState, werr)

	// Linger: keep tracing what the command left running.
	deadline := time.Now().Add(o.Linger)
	for time.Now().Before(deadline) && len(s.Tracked()) > 0 {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-sigs:
			deadline = time.Now()
		}
	}
	return code, nil
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
func (s *Sensor) attachTree(ctx context.Context, root int) error {
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", root)); err != nil {
		return fmt.Errorf("attach: no process %d", root)
	}
	// Two passes: a child forked while the first pass ran is caught by the second.
	for pass := 0; pass < 2; pass++ {
		for _, pid := range descendants(root) {
			if start, err := StartTimeNS(pid); err == nil {
				if err := s.Track(uint32(pid), start); err != nil {
					return err
				}
			}
		}
	}
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

// descendants returns root and every process below it, from /proc.
func descendants(root int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(b)
		i := strings.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(st[i+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		children[ppid] = append(children[ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
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

// ShimMain is the shim's whole life: wait on fd 3 until the parent has
// put this process under tracing, then become the command. It returns
// only on failure, with the shell's status for it (127 not found, 126 not
// executable).
func ShimMain(args []string) int {
	ready := os.NewFile(3, "ready")
	var b [1]byte
	if n, _ := ready.Read(b[:]); n != 1 {
		fmt.Fprintln(os.Stderr, "polygraph: tracing did not start; not running the command")
		return 1
	}
	ready.Close()
	if len(args) == 0 {
		return 0
	}
	path, err := exec.LookPath(args[0])
	if err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(os.Stderr, "polygraph: %s: command not found\n", args[0])
			return 127
		}
		fmt.Fprintf(os.Stderr, "polygraph: %s: %v\n", args[0], err)
		return 126
	}
	err = syscall.Exec(path, args, os.Environ())
	fmt.Fprintf(os.Stderr, "polygraph: %s: %v\n", args[0], err)
	if errors.Is(err, syscall.ENOENT) {
		return 127
	}
	return 126
}

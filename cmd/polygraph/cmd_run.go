package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/record"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
)

type runOptions struct {
	ringFlag
	json          bool
	linger        time.Duration
	asRoot        bool
	keepCaps      bool
	killLeftovers bool
	onExit        string
	reportFlags
	isolateFlags
}

// What --on-polygraph-exit may say.
const (
	onExitKill  = "kill"
	onExitLeave = "leave"
)

// reportFlags are the report options run, attach share.
type reportFlags struct {
	transcript  string
	policy      string
	html        string
	failOn      string
	findingsOut string
	reportOut   string
	otlp        otlpOptions
}

func addReportFlags(cmd *cobra.Command, f *reportFlags) {
	cmd.Flags().StringVar(&f.transcript, "transcript", analysis.TranscriptAuto, "the agent's transcript: auto (discover it), none, or a file")
	cmd.Flags().StringVar(&f.policy, "policy", "", "policy file (default: the built-in policy)")
	cmd.Flags().StringVar(&f.html, "html", "", "also write the report as HTML to this file")
	cmd.Flags().StringVar(&f.reportOut, "report-out", "", "write the report (text, or JSON with --json) to this file instead of stderr or stdout, so the terminal and pipes carry the command's output alone")
	cmd.Flags().StringVar(&f.failOn, "fail-on", "", "exit 3 when a finding at or above this severity exists")
	cmd.Flags().StringVar(&f.findingsOut, "findings-out", "", "judge the session while it runs and append each finding to this file as a JSON line the moment it is decided (- for stdout; docs/schema/findings.v1.json)")
	addOTLPFlags(cmd.Flags(), &f.otlp, 10*time.Second)
}

func init() { commands = append(commands, newRunCommand) }

func newRunCommand(g *globalOptions) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command and record what its process tree does",
		Long: `Run CMD under the kernel sensor and record every process, file and socket
operation of its process tree (children stay traced however they detach)
into a new session. When CMD exits, processes of the tree still running
are traced until they exit, for up to --linger (30s); those still running
then are listed as left running and raise a left-running finding
(--kill-leftovers ends them, SIGTERM then SIGKILL).

Under sudo, CMD runs as the invoking user (with that user's HOME), the way
it would without polygraph; --as-root keeps root. A CMD that runs as root
loses the capabilities that would let it turn the sensor off (CAP_BPF,
CAP_SYS_ADMIN, CAP_PERFMON, CAP_SYS_PTRACE, CAP_KILL, CAP_SYS_MODULE,
CAP_SYS_RAWIO, CAP_SYS_BOOT); --keep-caps keeps them.

If polygraph itself dies while recording (even by SIGKILL), CMD is killed
with it and a watchdog process kills the rest of the tree;
--on-polygraph-exit=leave leaves them running, untraced.

At exit it prints the report (see 'polygraph report'): the summary, the
findings, and per tool call what the agent said and what the kernel saw,
with the agent's transcript discovered automatically (--transcript). The
report goes to stderr, so CMD's own output stays as it was; with --json the
report is one JSON document on stdout instead. --report-out FILE writes it
(text, or JSON with --json) to FILE and nothing else, so stdout and stderr
are CMD's alone: polygraph run --report-out r.json --json -- make | less.

Exit status: CMD's own (127 when CMD is not found, 128+N when killed by
signal N); 3 when --fail-on SEV is given, CMD succeeded and a finding at or
above SEV exists; 1 when polygraph cannot trace.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd.Context(), opts, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON on stdout")
	opts.addRingFlag(cmd)
	cmd.Flags().DurationVar(&opts.linger, "linger", 30*time.Second, "keep tracing processes left running up to this long after CMD exits (0: stop at once)")
	cmd.Flags().BoolVar(&opts.asRoot, "as-root", false, "under sudo, run CMD as root instead of the invoking user")
	cmd.Flags().BoolVar(&opts.keepCaps, "keep-caps", false, "let a CMD that runs as root keep the capabilities that can turn the sensor off")
	cmd.Flags().BoolVar(&opts.killLeftovers, "kill-leftovers", false, "end the processes still running after --linger (SIGTERM, then SIGKILL)")
	cmd.Flags().StringVar(&opts.onExit, "on-polygraph-exit", onExitKill, "if polygraph dies while recording: kill the traced tree, or leave it running untraced")
	addReportFlags(cmd, &opts.reportFlags)
	addIsolateFlags(cmd, &opts.isolateFlags)
	return cmd
}

func runRun(ctx context.Context, opts *runOptions, args []string, stdout, stderr io.Writer) error {
	if opts.onExit != onExitKill && opts.onExit != onExitLeave {
		return &usageError{fmt.Errorf("--on-polygraph-exit %q: want %s or %s", opts.onExit, onExitKill, onExitLeave)}
	}
	if opts.linger < 0 {
		return &usageError{fmt.Errorf("--linger %s: want a duration of 0 or more", opts.linger)}
	}
	ring, err := opts.ringBytes()
	if err != nil {
		return err
	}
	home, err := stores.Home()
	if err != nil {
		return err
	}
	var cred *syscall.Credential
	var env []string
	if !opts.asRoot {
		cred, env = sudoCredential()
	}
	// A command that is not there is one line and no session: there is
	// nothing to record, and an empty session would only be noise.
	if err := commandExists(args[0], env); err != nil {
		return err
	}
	ro := record.Options{
		Home: home, Mode: "run", Command: args, Linger: opts.linger, Sensor: sensor.Options{RingBytes: ring},
		KillLeftovers: opts.killLeftovers, KeepCaps: opts.keepCaps, LeaveOnExit: opts.onExit == onExitLeave,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Notices: stderr,
	}
	ro.Credential, ro.Env = cred, env
	if opts.isolate {
		pol, err := loadPolicy(opts.policy)
		if err != nil {
			return err
		}
		if ro.Isolate, err = opts.isolation(pol); err != nil {
			return err
		}
	} else if _, err := opts.isolation(nil); err != nil {
		return err
	}
	return recordAndReport(ctx, ro, opts.json, &opts.reportFlags, stdout, stderr)
}

// recordAndReport runs a recording, then prints its report; shared by run and attach.
func recordAndReport(ctx context.Context, ro record.Options, asJSON bool, rf *reportFlags, stdout, stderr io.Writer) error {
	if err := checkReportFlags("text", rf.failOn); err != nil {
		return err
	}
	pol, err := loadPolicy(rf.policy) // before recording: a bad policy file should not cost a run
	if err != nil {
		return err
	}
	// The report file is made before recording too: a path that cannot be
	// written should not cost a run either.
	var reportFile *os.File
	if rf.reportOut != "" {
		if reportFile, err = os.Create(rf.reportOut); err != nil {
			return fmt.Errorf("--report-out: %w", err)
		}
		defer reportFile.Close()
	}
	ro.Started = func(m session.Meta) {
		fmt.Fprintf(stderr, "polygraph: recording session %s\n", m.ID)
	}
	home := ro.Home
	// The live analysis runs when something takes its decisions: the
	// findings stream, an OTLP backend.
	var sinks []analysis.Sink
	if rf.findingsOut != "" {
		out, err := findings.Create(rf.findingsOut, stdout)
		if err != nil {
			return err
		}
		defer func() {
			if err := out.Close(); err != nil {
				fmt.Fprintf(stderr, "polygraph: findings stream %s: %v\n", rf.findingsOut, err)
			}
		}()
		sinks = append(sinks, analysis.StreamSink{W: out})
	}
	if rf.otlp.enabled() {
		x, err := rf.otlp.start(false)
		if err != nil {
			return err
		}
		// After the report: what the backend has not taken waits in the
		// spool, and one line says so.
		defer rf.otlp.stop(x, stderr)
		sinks = append(sinks, x)
	}
	if len(sinks) > 0 {
		ro.Live = &analysis.LiveOptions{EngineOptions: analysis.EngineOptions{Policy: pol, Transcript: rf.transcript, Home: home}, Sinks: sinks}
	}
	restoreGC := recordingGC()
	res, err := record.Record(ctx, ro)
	restoreGC()
	if err != nil {
		return err
	}
	status := func() error {
		if res.ExitCode != nil && *res.ExitCode != 0 {
			return &exitError{code: *res.ExitCode}
		}
		return nil
	}
	rctx, stop := reportContext(ctx)
	defer stop()
	ao := analysis.Options{SessionPath: res.Meta.Path, Transcript: rf.transcript, Policy: pol, Home: home}
	if rf.html != "" {
		ao.Charts = sessionCharts(pol)
	}
	rep, err := reportOnce(rctx, ao)
	if err != nil {
		// The session is safe on disk; say why the report is missing and
		// keep the command's status.
		fmt.Fprintf(stderr, "polygraph: session %s recorded, but the report failed: %s\n", res.Meta.ID, sanitizeLine(err.Error()))
		return status()
	}
	if res.Live != nil {
		if diff := analysis.CompareFindings(res.Live.Findings, rep.Findings); diff != "" {
			// One implementation of each rule over the same events must
			// decide the same: a difference is a bug worth a report.
			slog.Warn("the live findings differ from the report's", "session", res.Meta.ID, "difference", diff)
		}
	}
	textOut, jsonOut := stderr, stdout
	if reportFile != nil {
		textOut, jsonOut = reportFile, reportFile
	}
	if asJSON {
		err = rep.WriteJSON(jsonOut)
	} else {
		err = rep.WriteText(textOut)
	}
	if err == nil && reportFile != nil {
		err = reportFile.Close()
	}
	if err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if rf.html != "" {
		if err := writeReport(rep, "html", rf.html, stdout); err != nil {
			return err
		}
	}
	if err := status(); err != nil {
		return err
	}
	return failOn(rep, rf.failOn)
}

// commandExists checks, before anything is recorded, that name is a
// command the shim will find: a path to an executable file, or a name on
// the PATH of env (the command's environment; polygraph's own when nil),
// as exec.LookPath would find it there. Only a command that is plainly
// missing fails here (exit 127, as a shell says it); anything subtler is
// the shim's to report.
func commandExists(name string, env []string) error {
	missing := &exitError{code: 127, err: fmt.Errorf("%s: command not found (nothing recorded)", name)}
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); errors.Is(err, os.ErrNotExist) {
			return missing
		}
		return nil
	}
	pathVar := os.Getenv("PATH")
	if env != nil {
		pathVar = ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				pathVar = v // the last one wins, as exec's environment has it
			}
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		if _, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
			return nil
		}
	}
	return missing
}

// reportContext is the context of the report that follows a recording.
// The interrupt that ended the recording (attach stops on Ctrl-C, run
// passes it to the command) has cancelled ctx already and must not cancel
// the report as well; an interrupt during the report does.
func reportContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.WithoutCancel(ctx), os.Interrupt, syscall.SIGTERM)
}

// sudoCredential returns the invoking user's credentials and environment
// when polygraph runs as root under sudo, so the command runs as that
// user would run it; nil otherwise.
func sudoCredential() (*syscall.Credential, []string) {
	if os.Geteuid() != 0 || os.Getenv("SUDO_UID") == "" {
		return nil, nil
	}
	uid, err1 := strconv.Atoi(os.Getenv("SUDO_UID"))
	gid, err2 := strconv.Atoi(os.Getenv("SUDO_GID"))
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, nil
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	env := os.Environ()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil {
					cred.Groups = append(cred.Groups, uint32(n))
				}
			}
		}
		env = append(env, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username)
	}
	return cred, env
}

// recordingGC sets the collector for recording and returns what restores
// it. While recording the heap is small and nearly all of it garbage
// (decoded events on their way into the session): collecting at 5× the
// live heap instead of 2× took a quarter off the sensor's user-space CPU
// in the bench's file storm (docs/bench.md). The soft limit bounds what
// that costs in memory when events arrive faster than the session takes
// them and the live heap grows: at 64 MiB the file storm's Go memory
// peaked at 45–49 MB (89–90 MB RSS). 32 MiB took that to 33–37 MB (77 MB
// RSS) for ~10 % more of the recorder's CPU during the storm, and in one
// run of 15 on a loaded host the reader fell behind and the ring lost
// events: losing none comes first, so the limit stays at 64 MiB. The
// collector's CPU limiter keeps a live heap above the limit from making
// it collect without end.
func recordingGC() (restore func()) {
	pct := debug.SetGCPercent(400)
	limit := debug.SetMemoryLimit(64 << 20)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(pct)
	}
}

//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
)

// tracer is one way of watching the workload. All of them watch the same
// event classes of the workload's process tree only: exec (execve,
// execveat), file opens (open, openat, openat2, creat) and connect.
type tracer struct {
	Name string
	// silent tracers record nothing by design (the floor, watch).
	silent bool
	// optIn tracers run only when -tracers names them, to keep the
	// default bench's length.
	optIn bool
	// prepare checks (and installs) what the tracer needs; an error is
	// the reason it is skipped.
	prepare func(ctx context.Context, e *env) error
	// run measures one run into s.
	run func(ctx context.Context, r *run, s *Sample) error
	// finish undoes what prepare changed on the machine.
	finish func(e *env)
}

// baseline reports whether t is one of the slow tracers polygraph is
// compared with, which -baseline-runs may run fewer times. The floor is
// as cheap as a bare run and, being the line polygraph is read against,
// gets every run; so do polygraph's own modes (run, watch).
func (t *tracer) baseline() bool {
	switch t.Name {
	case "bare", "polygraph", "floor", "watch", "watch-agent":
		return false
	}
	return true
}

var tracers = []*tracer{
	{Name: "bare", run: runBare},
	{Name: "polygraph", run: runPolygraph},
	{Name: "strace", prepare: prepareStrace, run: runStrace},
	{Name: "auditd", prepare: prepareAuditd, run: runAuditd, finish: finishAuditd},
	{Name: "bpftrace", prepare: prepareBpftrace, run: runBpftrace},
	{Name: "floor", silent: true, prepare: prepareFloor, run: runFloor},
	{Name: "watch", silent: true, prepare: prepareWatch, run: runWatch},
	{Name: "watch-agent", optIn: true, prepare: prepareWatchAgent, run: runWatchAgent},
}

func tracerNames() []string {
	var n []string
	for _, t := range tracers {
		n = append(n, t.Name)
	}
	return n
}

func findTracer(n string) *tracer {
	for _, t := range tracers {
		if t.Name == n {
			return t
		}
	}
	return nil
}

// The syscalls of the compared classes, as the text tracers name them.
var syscallClass = map[string]string{
	"execve": "exec", "execveat": "exec",
	"open": "open", "openat": "open", "openat2": "open", "creat": "open",
	"connect": "connect",
}

const traceSyscalls = "execve,execveat,open,openat,openat2,creat,connect"

// ---- bare

func runBare(ctx context.Context, r *run, s *Sample) error {
	cmd := exec.CommandContext(ctx, r.helperArgs()[0], r.helperArgs()[1:]...)
	if err := cmd.Run(); err != nil && !isExit(err) {
		return err
	}
	_, err := r.read(s)
	return err
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// ---- polygraph

func runPolygraph(ctx context.Context, r *run, s *Sample) error {
	home := filepath.Join(r.dir, "home")
	args := append([]string{"run"}, r.e.pgFlags...)
	args = append(args, "--")
	args = append(args, r.helperArgs("-tracer", "ppid")...)
	cmd := exec.CommandContext(ctx, r.e.polygraph, args...)
	cmd.Env = append(os.Environ(), "POLYGRAPH_HOME="+home)
	logf, err := os.Create(filepath.Join(r.dir, "polygraph.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	launched, err := startCmd(cmd)
	if err != nil {
		return err
	}
	hwm := pollHWM(cmd.Process.Pid)
	werr := cmd.Wait()
	exited := time.Now()
	s.TracerLifeRSSKB = hwm.Stop()
	if werr != nil && !isExit(werr) {
		return werr
	}
	res, err := r.read(s)
	if err != nil {
		if tail := tailFile(logf.Name(), 300); tail != "" {
			err = fmt.Errorf("%w (polygraph: %s)", err, tail)
		}
		return err
	}
	s.timing(res, launched, exited, cmd.ProcessState)
	return countSession(ctx, r.e, home, s)
}

// countSession reads the recorded session's counters the way a user
// would (`polygraph sessions --json`) and its events per kind.
func countSession(ctx context.Context, e *env, home string, s *Sample) error {
	cmd := exec.CommandContext(ctx, e.polygraph, "sessions", "--json")
	cmd.Env = append(os.Environ(), "POLYGRAPH_HOME="+home)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("polygraph sessions: %w", err)
	}
	var lines [][]byte
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, slices.Clone(sc.Bytes()))
	}
	if len(lines) != 1 {
		return fmt.Errorf("expected one session in %s, found %d", home, len(lines))
	}
	return fillSession(lines[0], s)
}

// fillSession fills s from one line of `polygraph sessions --json`: the
// session's counters, and its events per kind from the session file.
func fillSession(line []byte, s *Sample) error {
	var meta struct {
		Path   string           `json:"path"`
		Events int64            `json:"events"`
		Lost   map[string]int64 `json:"lost"`
		Clean  bool             `json:"clean_close"`
		Error  string           `json:"error"`
	}
	if err := json.Unmarshal(line, &meta); err != nil {
		return fmt.Errorf("polygraph sessions --json: %w", err)
	}
	if meta.Error != "" || !meta.Clean {
		return fmt.Errorf("session not closed cleanly: %s", meta.Error)
	}
	s.EventsAll = meta.Events
	s.LostByStage = meta.Lost
	for _, v := range meta.Lost {
		s.Lost += v
	}
	kinds, err := kindCounts(meta.Path)
	if err != nil {
		return err
	}
	s.EventsByKind = kinds
	for _, k := range []string{"exec", "open", "connect"} {
		s.Events += kinds[k]
	}
	return nil
}

// kindCounts counts a session's events per kind.
func kindCounts(path string) (map[string]int64, error) {
	r, err := session.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	m := map[string]int64{}
	err = r.Events(session.Filter{}, func(e *event.Event) error {
		m[string(e.Kind)]++
		return nil
	})
	return m, err
}

// ---- strace

// strace, as people run it: -f, filtered to the compared syscalls. Its
// output goes to a pipe whose lines the bench counts (no disk, like
// /dev/null, but countable).
func prepareStrace(ctx context.Context, e *env) error {
	return ensureTools(ctx, e, "strace", map[string]string{"strace": "strace"})
}

func runStrace(ctx context.Context, r *run, s *Sample) error {
	lc := &lineCounter{classify: classifyStrace}
	pw, wait, err := lc.start()
	if err != nil {
		return err
	}
	args := append([]string{"-f", "-qq", "-e", "trace=" + traceSyscalls, "-e", "signal=none", "--"}, r.helperArgs("-tracer", "ppid")...)
	cmd := exec.CommandContext(ctx, "strace", args...)
	cmd.Stderr = pw
	launched, err := startCmd(cmd)
	pw.Close()
	if err != nil {
		return err
	}
	hwm := pollHWM(cmd.Process.Pid)
	werr := cmd.Wait()
	exited := time.Now()
	s.TracerLifeRSSKB = hwm.Stop()
	wait()
	if werr != nil && !isExit(werr) {
		return werr
	}
	res, err := r.read(s)
	if err != nil {
		return fmt.Errorf("%w (strace: %s)", err, lc.unmatched())
	}
	s.timing(res, launched, exited, cmd.ProcessState)
	lc.fill(s)
	return nil
}

// classifyStrace maps one line of `strace -f` to its class: "[pid N]
// name(args) = ret", with "<... name resumed>" halves not counted twice.
func classifyStrace(line string) string {
	if strings.HasPrefix(line, "[pid ") {
		if i := strings.IndexByte(line, ']'); i > 0 {
			line = strings.TrimLeft(line[i+1:], " ")
		}
	}
	i := strings.IndexByte(line, '(')
	if i <= 0 {
		return ""
	}
	return syscallClass[line[:i]]
}

// ---- auditd

// The audit rules scope to the workload by login uid: the helper sets
// its /proc/self/loginuid to auditUID, every descendant inherits it, and
// nothing else on the machine has it.
const (
	auditUID = 4242
	auditKey = "polygraph-bench"
)

// auditState is the audit configuration found at start, put back at the end.
var auditState struct {
	saved                           bool
	enabled, backlog, backlogWaitMS int64
}

func prepareAuditd(ctx context.Context, e *env) error {
	if err := ensureTools(ctx, e, "auditd", map[string]string{"auditd": "auditd", "auditctl": "auditd"}); err != nil {
		return err
	}
	st, err := auditStatus(ctx)
	if err != nil {
		return fmt.Errorf("this kernel or container has no usable audit subsystem: %w", err)
	}
	if st["pid"] != 0 {
		return fmt.Errorf("an audit daemon is already running (pid %d); the bench does not take it over", st["pid"])
	}
	if st["enabled"] == 2 {
		return errors.New("the audit configuration is locked (enabled=2)")
	}
	auditState.saved = true
	auditState.enabled, auditState.backlog, auditState.backlogWaitMS = st["enabled"], st["backlog_limit"], st["backlog_wait_time"]
	return nil
}

func finishAuditd(e *env) {
	if !auditState.saved {
		return
	}
	exec.Command("auditctl", "-D").Run()
	exec.Command("auditctl", "-b", strconv.FormatInt(auditState.backlog, 10),
		"--backlog_wait_time", strconv.FormatInt(auditState.backlogWaitMS, 10),
		"-e", strconv.FormatInt(auditState.enabled, 10)).Run()
}

// auditStatus parses `auditctl -s`.
func auditStatus(ctx context.Context) (map[string]int64, error) {
	out, err := exec.CommandContext(ctx, "auditctl", "-s").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("auditctl -s: %v: %s", err, strings.TrimSpace(string(out)))
	}
	m := map[string]int64{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[f[0]] = n
			}
		}
	}
	if _, ok := m["enabled"]; !ok {
		return nil, fmt.Errorf("auditctl -s: unexpected output %q", out)
	}
	return m, nil
}

func auditctl(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "auditctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("auditctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// runAuditd starts auditd (foreground, a private config and log), loads
// the rules, runs the workload, waits for the backlog to drain, removes
// the rules and stops the daemon: all of it per run, so no other run
// pays for audit.
func runAuditd(ctx context.Context, r *run, s *Sample) error {
	conf, err := os.ReadFile("/etc/audit/auditd.conf")
	if err != nil {
		return err
	}
	// A private log, never rotated mid-run (Debian's rotates at 8 MB,
	// which the file storm's records pass).
	logPath := filepath.Join(r.dir, "audit.log")
	for k, v := range map[string]string{"log_file": logPath, "max_log_file_action": "IGNORE"} {
		re := regexp.MustCompile(`(?m)^\s*` + k + `\s*=.*$`)
		conf = re.ReplaceAll(conf, []byte(k+" = "+v))
	}
	if err := os.WriteFile(filepath.Join(r.dir, "auditd.conf"), conf, 0o640); err != nil {
		return err
	}
	launched := time.Now()
	daemon := exec.CommandContext(ctx, "auditd", "-n", "-c", r.dir)
	dlog, _ := os.Create(filepath.Join(r.dir, "auditd.out"))
	defer dlog.Close()
	daemon.Stdout, daemon.Stderr = dlog, dlog
	if err := daemon.Start(); err != nil {
		return err
	}
	stopDaemon := func() *os.ProcessState {
		daemon.Process.Signal(syscall.SIGTERM)
		daemon.Wait()
		return daemon.ProcessState
	}
	defer func() {
		auditctl(context.Background(), "-D")
		auditctl(context.Background(), "-e", strconv.FormatInt(auditState.enabled, 10))
		if daemon.ProcessState == nil {
			stopDaemon()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); ; {
		st, err := auditStatus(ctx)
		if err == nil && st["pid"] == int64(daemon.Process.Pid) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("auditd did not register within 10 s: %s", tailFile(dlog.Name(), 300))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Debian's own defaults (rules.d/audit.rules): a deep backlog, and a
	// full backlog makes the syscall wait rather than lose the record.
	if err := auditctl(ctx, "-D"); err != nil {
		return err
	}
	if err := auditctl(ctx, "-b", "8192", "--backlog_wait_time", "60000"); err != nil {
		return err
	}
	if err := auditctl(ctx, "-a", "always,exit", "-F", "arch=b64", "-S", traceSyscalls,
		"-F", fmt.Sprintf("auid=%d", auditUID), "-k", auditKey); err != nil {
		return err
	}
	if err := auditctl(ctx, "-e", "1"); err != nil {
		return err
	}
	st0, err := auditStatus(ctx)
	if err != nil {
		return err
	}
	pids := []string{strconv.Itoa(daemon.Process.Pid)}
	if k := kauditd(); k > 0 {
		pids = append(pids, strconv.Itoa(k))
	}
	cmd := exec.CommandContext(ctx, r.e.helper, r.helperArgs("-loginuid", strconv.Itoa(auditUID), "-tracer", strings.Join(pids, ","))[1:]...)
	if err := cmd.Run(); err != nil && !isExit(err) {
		return err
	}
	ended := time.Now()
	res, err := r.read(s)
	if err != nil {
		return err
	}
	// The workload is over when its records are all with the daemon.
	var st1 map[string]int64
	for deadline := time.Now().Add(30 * time.Second); ; {
		st1, err = auditStatus(ctx)
		if err != nil {
			return err
		}
		if st1["backlog"] == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Audit is one machine-wide configuration: make sure nobody changed
	// it under the run.
	rules, _ := exec.CommandContext(ctx, "auditctl", "-l").Output()
	ruleGone := !strings.Contains(string(rules), auditKey) || st1["enabled"] != 1
	auditctl(ctx, "-D")
	auditctl(ctx, "-e", strconv.FormatInt(auditState.enabled, 10))
	ps := stopDaemon()
	if ruleGone {
		return fmt.Errorf("the audit rule or audit itself was switched off during the run (enabled=%d): another audit user on this machine?", st1["enabled"])
	}
	exited := time.Now()
	s.StartupS = float64(res.HelperStartNS-launched.UnixNano()) / 1e9
	s.ShutdownS = exited.Sub(ended).Seconds()
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		s.TracerLifeCPUS = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		s.TracerLifeRSSKB = ru.Maxrss
	}
	s.Lost = st1["lost"] - st0["lost"]
	return countAudit(logPath, s)
}

// kauditd is the kernel thread that hands records to the daemon; its
// CPU is audit's too.
func kauditd() int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, _ := os.ReadFile("/proc/" + e.Name() + "/comm"); strings.TrimSpace(string(b)) == "kauditd" {
			return pid
		}
	}
	return 0
}

// countAudit counts the SYSCALL records of the bench's rule per class
// (the ENRICHED log format names the syscall).
func countAudit(path string, s *Sample) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	s.EventsByKind = map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	key := []byte(`key="` + auditKey + `"`)
	for sc.Scan() {
		l := sc.Bytes()
		if !bytes.HasPrefix(l, []byte("type=SYSCALL ")) || !bytes.Contains(l, key) {
			continue
		}
		name := ""
		if i := bytes.Index(l, []byte(" SYSCALL=")); i >= 0 {
			rest := l[i+len(" SYSCALL="):]
			if j := bytes.IndexAny(rest, " \x1d"); j >= 0 {
				rest = rest[:j]
			}
			name = string(rest)
		}
		if c := syscallClass[name]; c != "" {
			s.EventsByKind[c]++
			s.Events++
		}
	}
	s.EventsAll = s.Events
	return sc.Err()
}

// ---- bpftrace

// bpftraceScript keeps a map of the workload's tasks (seeded with the
// command bpftrace starts, grown at fork, pruned at exit) and prints one
// line per event of the compared classes.
const bpftraceScript = `BEGIN { @t[cpid] = 1; }
tracepoint:sched:sched_process_fork /@t[pid]/ { @t[args->child_pid] = 1; }
tracepoint:sched:sched_process_exit /@t[tid]/ { delete(@t[tid]); }
tracepoint:syscalls:sys_enter_execve /@t[pid]/ { printf("exec %d %s\n", pid, str(args->filename)); }
tracepoint:syscalls:sys_enter_execveat /@t[pid]/ { printf("exec %d %s\n", pid, str(args->filename)); }
tracepoint:syscalls:sys_enter_open /@t[pid]/ { printf("open %d %s\n", pid, str(args->filename)); }
tracepoint:syscalls:sys_enter_openat /@t[pid]/ { printf("open %d %s\n", pid, str(args->filename)); }
tracepoint:syscalls:sys_enter_openat2 /@t[pid]/ { printf("open %d %s\n", pid, str(args->filename)); }
tracepoint:syscalls:sys_enter_creat /@t[pid]/ { printf("open %d %s\n", pid, str(args->pathname)); }
tracepoint:syscalls:sys_enter_connect /@t[pid]/ { printf("connect %d\n", pid); }
END { clear(@t); }
`

func bpftraceScriptPath(e *env) string { return filepath.Join(e.tmp, "trace.bt") }

func prepareBpftrace(ctx context.Context, e *env) error {
	if err := ensureTools(ctx, e, "bpftrace", map[string]string{"bpftrace": "bpftrace"}); err != nil {
		return err
	}
	if err := ensureTracefs(); err != nil {
		return err
	}
	// A syscall this architecture lacks (open, creat on arm64) has no tracepoint.
	var b strings.Builder
	for _, l := range strings.SplitAfter(bpftraceScript, "\n") {
		if name, ok := strings.CutPrefix(l, "tracepoint:syscalls:"); ok {
			name = name[:strings.IndexByte(name, ' ')]
			if _, err := os.Stat(filepath.Join("/sys/kernel/tracing/events/syscalls", name)); err != nil {
				continue
			}
		}
		b.WriteString(l)
	}
	return os.WriteFile(bpftraceScriptPath(e), []byte(b.String()), 0o644)
}

// tracefsDir is where bpftrace reads the tracepoints' formats.
const tracefsDir = "/sys/kernel/tracing"

// ensureTracefs mounts tracefs where it is not mounted (a minimal VM's
// init may leave /sys/kernel/tracing empty): bpftrace finds no tracepoint
// without it.
func ensureTracefs() error {
	if _, err := os.Stat(filepath.Join(tracefsDir, "events")); err == nil {
		return nil
	}
	if err := unix.Mount("tracefs", tracefsDir, "tracefs", 0, ""); err != nil {
		return fmt.Errorf("tracefs is not mounted at %s and mounting it failed: %w", tracefsDir, err)
	}
	fmt.Fprintf(os.Stderr, "bench: mounted tracefs at %s for bpftrace\n", tracefsDir)
	return nil
}

var lostRE = regexp.MustCompile(`Lost (\d+) events`)

func runBpftrace(ctx context.Context, r *run, s *Sample) error {
	return runBpftraceScript(ctx, r, s, bpftraceScriptPath(r.e))
}

// attachFloor attaches a program that returns at once to each of the
// tracepoints polygraph's sensor uses (sensor.Hooks), the same way it
// attaches its own (tp_btf links).
// What the workload pays then is what the kernel charges for running any
// program there before it does anything: the floor under polygraph's
// overhead, which no change to its programs can go below.
func attachFloor() (detach func(), err error) {
	var closers []io.Closer
	detach = func() {
		for _, c := range slices.Backward(closers) {
			c.Close()
		}
	}
	defer func() {
		if err != nil {
			detach()
		}
	}()
	hooks, err := sensor.Hooks()
	if err != nil {
		return nil, err
	}
	for _, hook := range hooks {
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "floor", Type: ebpf.Tracing, AttachType: ebpf.AttachTraceRawTp, AttachTo: hook, License: "GPL",
			Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		})
		if err != nil {
			return nil, fmt.Errorf("load an empty tp_btf program for %s: %w", hook, err)
		}
		closers = append(closers, prog)
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return nil, fmt.Errorf("attach an empty tp_btf program to %s: %w", hook, err)
		}
		closers = append(closers, l)
	}
	return detach, nil
}

// prepareFloor checks that the empty programs load here.
func prepareFloor(ctx context.Context, e *env) error {
	detach, err := attachFloor()
	if err != nil {
		return err
	}
	detach()
	return nil
}

// runFloor runs the workload bare while the empty programs are attached.
func runFloor(ctx context.Context, r *run, s *Sample) error {
	detach, err := attachFloor()
	if err != nil {
		return err
	}
	defer detach()
	return runBare(ctx, r, s)
}

// runBpftraceScript runs the workload under bpftrace with script.
func runBpftraceScript(ctx context.Context, r *run, s *Sample, script string) error {
	// bpftrace reports its perf-buffer losses ("Lost N events") in its
	// output, between the events.
	lc := &lineCounter{classify: func(l string) string {
		k, _, _ := strings.Cut(l, " ")
		switch k {
		case "exec", "open", "connect":
			return k
		}
		return ""
	}, lost: func(l string) (int64, bool) {
		m := lostRE.FindStringSubmatch(l)
		if m == nil {
			return 0, false
		}
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return n, true
	}}
	pw, wait, err := lc.start()
	if err != nil {
		return err
	}
	// -c runs the command once the probes are attached (cpid is its pid).
	// bpftrace splits it on spaces: every path here is space-free.
	cmd := exec.CommandContext(ctx, "bpftrace", "-c", strings.Join(r.helperArgs("-tracer", "ppid"), " "), script)
	cmd.Stdout = pw
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	launched, err := startCmd(cmd)
	pw.Close()
	if err != nil {
		return err
	}
	hwm := pollHWM(cmd.Process.Pid)
	werr := cmd.Wait()
	exited := time.Now()
	s.TracerLifeRSSKB = hwm.Stop()
	wait()
	if werr != nil && !isExit(werr) {
		return werr
	}
	res, err := r.read(s)
	if err != nil {
		return fmt.Errorf("%w (bpftrace: %s)", err, strings.Join(strings.Fields(stderr.String()), " "))
	}
	s.timing(res, launched, exited, cmd.ProcessState)
	lc.fill(s)
	for _, m := range lostRE.FindAllStringSubmatch(stderr.String(), -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		s.Lost += n
	}
	return nil
}

// ---- installing

// aptUpdated is set once apt-get update ran in this bench.
var aptUpdated bool

// ensureTools installs the Debian packages providing the missing
// binaries (binary → package), or says why it could not.
func ensureTools(ctx context.Context, e *env, name string, bins map[string]string) error {
	var missing []string
	for bin, pkg := range bins {
		if _, err := exec.LookPath(bin); err != nil && !contains(missing, pkg) {
			missing = append(missing, pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !e.cfg.install {
		return fmt.Errorf("%s is not installed (apt-get install %s; or run without -install=false)", name, strings.Join(missing, " "))
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s is not installed and there is no apt-get here", name)
	}
	apt := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s: %v: %s", strings.Join(args, " "), err, tailString(string(out), 300))
		}
		return nil
	}
	if !aptUpdated {
		slog.Info("apt-get update")
		if err := apt("update", "-q"); err != nil {
			return fmt.Errorf("%s is not installed and %w", name, err)
		}
		aptUpdated = true
	}
	slog.Info("installing", "packages", missing)
	if err := apt(append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)...); err != nil {
		return fmt.Errorf("%s could not be installed: %w", name, err)
	}
	for bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s: %s still missing after installing %s", name, bin, strings.Join(missing, " "))
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func tailString(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

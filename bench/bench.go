//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// env is what every run shares: the temporary directory, the binaries
// the bench built, and what the workloads set up once.
type env struct {
	cfg       config
	tmp       string // the bench's temporary directory
	root      string // the module root (this repository)
	helper    string // bench/helper, built into tmp
	polygraph string // the polygraph under test
	pgFlags   []string
	addr      string // a loopback listener the agent-like workload connects to
	sizes     sizes
	out       io.Writer // progress lines
	// reportSession is the synthetic session, once workload 5 wrote it;
	// smallSession one of the same shape, small enough to profile.
	reportSession, smallSession string
	// profileSession is the session the profile step reports on: the
	// full-size one when its report is quick enough, else smallSession.
	profileSession string
}

// sizes are the workload sizes; -quick shrinks them.
type sizes struct {
	execs       int // exec storm: /bin/true runs
	opens       int // file storm: open/read/close cycles
	files       int // files in the storm's tree
	shells      int // agent-like burst: shells
	reportEvs   int // synthetic session for the report
	rateSteps   []float64
	rateSeconds time.Duration
}

var fullSizes = sizes{execs: 2000, opens: 100000, files: 1000, shells: 60, reportEvs: 1000000,
	rateSteps: []float64{25e3, 50e3, 100e3, 150e3, 200e3, 400e3, 0}, rateSeconds: 3 * time.Second}

var quickSizes = sizes{execs: 50, opens: 2000, files: 100, shells: 3, reportEvs: 10000,
	rateSteps: []float64{5e3}, rateSeconds: time.Second}

// runBench runs the whole bench and prints the table to w.
func runBench(ctx context.Context, c config, w io.Writer) (*Results, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("the bench needs root (tracers load BPF programs, ptrace, and audit rules)")
	}
	for _, n := range c.only {
		if findWorkload(n) == nil && !contains(extraSteps, n) {
			return nil, fmt.Errorf("unknown workload %q (have %s, %s)", n, strings.Join(workloadNames(), ", "), strings.Join(extraSteps, ", "))
		}
	}
	for _, n := range c.tracers {
		if findTracer(n) == nil {
			return nil, fmt.Errorf("unknown tracer %q (have %s)", n, strings.Join(tracerNames(), ", "))
		}
	}
	e, cleanup, err := newEnv(ctx, c)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	e.out = w

	res := &Results{Started: time.Now().UTC(), Machine: machine(), Config: configOf(c, e)}
	res.LoadBefore = loadAvg()

	// Tracers: check, install, and say plainly which cannot run.
	var active []*tracer
	for _, t := range tracers {
		if !c.wantTracer(t.Name) {
			continue
		}
		if t.prepare != nil {
			if err := t.prepare(ctx, e); err != nil {
				line := fmt.Sprintf("%s: skipped: %v", t.Name, err)
				fmt.Fprintln(w, "bench: "+line)
				res.Skipped = append(res.Skipped, line)
				continue
			}
		}
		active = append(active, t)
	}
	defer func() {
		for _, t := range active {
			if t.finish != nil {
				t.finish(e)
			}
		}
	}()

	// Workloads 1-4: every tracer, interleaved run by run.
	for _, wl := range workloads {
		if !c.wantWorkload(wl.Name) {
			continue
		}
		if err := wl.setup(ctx, e, wl); err != nil {
			return nil, fmt.Errorf("set up %s: %w", wl.Name, err)
		}
		fmt.Fprintf(w, "bench: %s (bare, polygraph: %d warm-up + %d counted runs; other tracers: %d counted runs)\n", wl.Title, c.warmup, c.runs, c.baseRuns)
		for r := 0; r < c.warmup+c.runs; r++ {
			for _, t := range active {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if t.baseline() && (r < c.warmup || r >= c.warmup+c.baseRuns) {
					continue
				}
				dir := filepath.Join(e.tmp, "runs", fmt.Sprintf("%s-%s-%d", wl.Name, t.Name, r))
				s := runOne(ctx, e, t, wl, dir)
				s.Warmup = r < c.warmup
				s.Run = r - c.warmup
				res.Samples = append(res.Samples, s)
				if s.Error != "" {
					res.Failures++
					fmt.Fprintf(w, "bench:   %s under %s, run %d: FAILED: %s\n", wl.Name, t.Name, r, s.Error)
				} else {
					slog.Debug("run", "workload", wl.Name, "tracer", t.Name, "run", r, "wall", s.WallS, "cpu", s.CPUS, "events", s.Events, "lost", s.Lost)
				}
				if !c.keep {
					os.RemoveAll(dir)
				}
			}
		}
	}
	res.Rows = aggregate(res.Samples, active)

	if c.wantWorkload("report") {
		fmt.Fprintf(w, "bench: polygraph report on a synthetic session of %d events\n", e.sizes.reportEvs)
		rr, err := benchReport(ctx, e)
		if err != nil {
			res.Failures++
			fmt.Fprintf(w, "bench:   report: FAILED: %v\n", err)
		}
		res.Report = rr
	}
	if c.rate && c.wantTracer("polygraph") && c.wantWorkload("rate") {
		fmt.Fprintln(w, "bench: highest event rate the sensor sustains without loss")
		rr, err := benchRate(ctx, e)
		if err != nil {
			res.Failures++
			fmt.Fprintf(w, "bench:   rate: FAILED: %v\n", err)
		}
		res.Rate = rr
	}
	if c.profile && !c.quick && c.wantWorkload("profile") {
		fmt.Fprintln(w, "bench: profiling the sensor (pprof, bpf_stats) and the report (pprof)")
		pr, err := benchProfile(ctx, e)
		if err != nil {
			fmt.Fprintf(w, "bench:   profile: FAILED: %v\n", err)
		}
		res.Profile = pr
	}
	res.LoadAfter = loadAvg()
	res.Finished = time.Now().UTC()
	res.Targets = checkTargets(res)
	if err := res.write(c, w); err != nil {
		return res, err
	}
	return res, nil
}

func (c config) wantWorkload(n string) bool {
	if c.only == nil {
		return true
	}
	for _, o := range c.only {
		if o == n {
			return true
		}
	}
	return false
}

func (c config) wantTracer(n string) bool {
	if n == "bare" {
		return true
	}
	if c.tracers == nil {
		t := findTracer(n)
		return t == nil || !t.optIn
	}
	for _, o := range c.tracers {
		if o == n {
			return true
		}
	}
	return false
}

// extraSteps are the steps after workloads 1-4 that -only can name.
var extraSteps = []string{"report", "rate", "profile"}

// newEnv makes the temporary directory, builds the helper and
// polygraph, and opens the loopback listener.
func newEnv(ctx context.Context, c config) (*env, func(), error) {
	e := &env{cfg: c, sizes: fullSizes}
	if c.quick {
		e.sizes = quickSizes
	}
	if c.reportN > 0 {
		e.sizes.reportEvs = c.reportN
	}
	var err error
	if e.tmp, err = os.MkdirTemp("", "polygraph-bench-"); err != nil {
		return nil, nil, err
	}
	var ln net.Listener
	cleanup := func() {
		if ln != nil {
			ln.Close()
		}
		if c.keep {
			fmt.Fprintln(os.Stderr, "bench: kept", e.tmp)
			return
		}
		os.RemoveAll(e.tmp)
	}
	fail := func(err error) (*env, func(), error) {
		cleanup()
		return nil, nil, err
	}
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return fail(fmt.Errorf("find the module root (run the bench inside the repository): %w", err))
	}
	e.root = strings.TrimSpace(string(out))
	e.helper = filepath.Join(e.tmp, "helper")
	if err := goBuild(ctx, e.root, e.helper, "./bench/helper"); err != nil {
		return fail(err)
	}
	e.polygraph = c.polygraphBin
	if e.polygraph == "" {
		e.polygraph = filepath.Join(e.tmp, "polygraph")
		if err := goBuild(ctx, e.root, e.polygraph, "./cmd/polygraph"); err != nil {
			return fail(err)
		}
	}
	// `run` gained --transcript (and its report at exit) recently: pass
	// it when this polygraph has it, so the report at exit stays cheap.
	help, _ := exec.CommandContext(ctx, e.polygraph, "run", "--help").CombinedOutput()
	if strings.Contains(string(help), "--transcript") {
		e.pgFlags = append(e.pgFlags, "--transcript", "none")
	}
	if strings.Contains(string(help), "--linger") {
		e.pgFlags = append(e.pgFlags, "--linger", "0s")
	}
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	e.addr = ln.Addr().String()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	return e, cleanup, nil
}

// goBuild builds pkg of the module at root into out.
func goBuild(ctx context.Context, root, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	return nil
}

// machine describes where the numbers come from.
func machine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := exec.Command("uname", "-srm").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		fmt.Sscanf(strings.TrimPrefix(strings.SplitN(string(b), "\n", 2)[0], "MemTotal:"), "%d", &kb)
		m.MemMB = kb / 1024
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	return m
}

// loadAvg is /proc/loadavg's first three fields: the other work on the
// machine while the bench ran, which its numbers should be read against.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

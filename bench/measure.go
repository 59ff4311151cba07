//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"golang.org/x/sys/unix"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Sample is one run of one workload under one tracer.
type Sample struct {
	Workload string `json:"workload"`
	Tracer   string `json:"tracer"`
	Run      int    `json:"run"` // 0-based among the counted runs; negative for warm-ups
	Warmup   bool   `json:"warmup"`
	Error    string `json:"error,omitempty"`

	// WallS is the workload's own wall time, measured inside the traced
	// tree by the helper: a tracer's start-up and shutdown are not in it.
	WallS float64 `json:"wall_s"`
	// CPUS is the workload's CPU (every descendant, user+system; BPF and
	// audit work done in its syscalls is system time here) plus the
	// tracer processes' CPU while it ran.
	CPUS         float64 `json:"cpu_s"`
	WorkloadCPUS float64 `json:"workload_cpu_s"`
	TracerCPUS   float64 `json:"tracer_cpu_s"`
	// TracerLifeCPUS is the tracer's CPU over its whole life, start-up
	// and shutdown (polygraph: its report at exit) included.
	TracerLifeCPUS float64 `json:"tracer_life_cpu_s,omitempty"`
	StartupS       float64 `json:"startup_s,omitempty"`  // launch to the workload's start
	ShutdownS      float64 `json:"shutdown_s,omitempty"` // the workload's end to the tracer's exit

	// Events are those the tracer recorded in the compared classes (exec,
	// open, connect); EventsAll is every event it stored; Lost what it
	// says it lost.
	Events       int64            `json:"events"`
	EventsByKind map[string]int64 `json:"events_by_kind,omitempty"`
	EventsAll    int64            `json:"events_all,omitempty"`
	Lost         int64            `json:"lost"`
	LostByStage  map[string]int64 `json:"lost_by_stage,omitempty"`

	// TracerRSSKB is the tracer's peak RSS (VmHWM) when the workload
	// ended: its memory while tracing. TracerLifeRSSKB is its last VmHWM
	// before it exited (polygraph: the report at exit included).
	TracerRSSKB     int64 `json:"tracer_rss_kb,omitempty"`
	TracerLifeRSSKB int64 `json:"tracer_life_rss_kb,omitempty"`
}

// runResult is what `helper run` writes (keep in sync with Result in
// bench/helper/main.go).
type runResult struct {
	HelperStartNS int64 `json:"helper_start_ns"`
	StartNS       int64 `json:"start_ns"`
	EndNS         int64 `json:"end_ns"`
	ExitCode      int   `json:"exit_code"`
	UserNS        int64 `json:"user_ns"`
	SysNS         int64 `json:"sys_ns"`
	MaxRSSKB      int64 `json:"max_rss_kb"`
	Tracers       []struct {
		PID     int    `json:"pid"`
		Comm    string `json:"comm"`
		CPUNS   int64  `json:"cpu_ns"`
		VmHWMKB int64  `json:"vmhwm_kb"`
		VmRSSKB int64  `json:"vm_rss_kb"`
	} `json:"tracers"`
	SelfNS int64 `json:"self_ns"`
}

// run is one invocation being measured: the paths it uses and what the
// tracer-specific code filled in.
type run struct {
	e      *env
	wl     *workload
	dir    string
	result string // the helper's result file
	log    string // the workload's output
}

// helperArgs is the helper command line that times the workload, with
// extra helper flags (tracer pids, loginuid) before the command.
func (r *run) helperArgs(extra ...string) []string {
	a := []string{r.e.helper, "run", "-o", r.result, "-log", r.log}
	a = append(a, extra...)
	a = append(a, "--")
	return append(a, r.wl.argv(r.e)...)
}

// runOne runs wl under t once; failures are reported in the sample.
func runOne(ctx context.Context, e *env, t *tracer, wl *workload, dir string) Sample {
	s := Sample{Workload: wl.Name, Tracer: t.Name}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.Error = err.Error()
		return s
	}
	if wl.prepare != nil {
		if err := wl.prepare(e); err != nil {
			s.Error = "prepare: " + err.Error()
			return s
		}
	}
	// Every run starts with nothing left to write back: the previous
	// run's output (a build writes tens of MB into its cache) would
	// otherwise be flushed during this one, whatever tracer it has.
	unix.Sync()
	r := &run{e: e, wl: wl, dir: dir, result: filepath.Join(dir, "result.json"), log: filepath.Join(dir, "workload.log")}
	if err := t.run(ctx, r, &s); err != nil {
		s.Error = err.Error()
		if tail := tailFile(r.log, 400); tail != "" {
			s.Error += "; workload output: " + tail
		}
	} else if t.Name != "bare" && !t.silent && s.Events == 0 {
		// Every workload execs and opens files: a tracer that saw none of
		// it was not tracing, and its time would pass for a bare run's.
		s.Error = "the tracer recorded no event of the compared classes"
	}
	return s
}

// read loads the helper's result and fills the common fields of s.
func (r *run) read(s *Sample) (*runResult, error) {
	b, err := os.ReadFile(r.result)
	if err != nil {
		return nil, fmt.Errorf("no result from the helper: %w", err)
	}
	var res runResult
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("helper result: %w", err)
	}
	if res.ExitCode != 0 {
		return &res, fmt.Errorf("workload exited with status %d", res.ExitCode)
	}
	s.WallS = float64(res.EndNS-res.StartNS) / 1e9
	s.WorkloadCPUS = float64(res.UserNS+res.SysNS) / 1e9
	for _, t := range res.Tracers {
		s.TracerCPUS += float64(t.CPUNS) / 1e9
		s.TracerRSSKB = max(s.TracerRSSKB, t.VmHWMKB)
	}
	s.CPUS = s.WorkloadCPUS + s.TracerCPUS
	return &res, nil
}

// timing fills start-up, shutdown and life CPU of a tracer that was the
// helper's ancestor: its wait4 rusage includes the helper and the
// workload, which are taken out.
func (s *Sample) timing(res *runResult, launched, exited time.Time, ps *os.ProcessState) {
	s.StartupS = float64(res.HelperStartNS-launched.UnixNano()) / 1e9
	s.ShutdownS = float64(exited.UnixNano()-res.EndNS) / 1e9
	if ps == nil {
		return
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		total := ru.Utime.Nano() + ru.Stime.Nano()
		s.TracerLifeCPUS = float64(total-res.UserNS-res.SysNS-res.SelfNS) / 1e9
	}
}

// hwmPoller samples a process's VmHWM until stopped, keeping the last
// value read: its peak over the life of the process, near enough.
type hwmPoller struct {
	stop chan struct{}
	done chan struct{}
	kb   int64
}

func pollHWM(pid int) *hwmPoller {
	p := &hwmPoller{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if hwm := vmHWM(pid); hwm > 0 {
				p.kb = hwm
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// Stop ends the polling and returns the peak seen.
func (p *hwmPoller) Stop() int64 {
	close(p.stop)
	<-p.done
	return p.kb
}

func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(v), "%d", &kb)
			return kb
		}
	}
	return 0
}

// lineCounter is an io.Writer target for a tracer's text output: it
// classifies each line and counts, without storing anything.
type lineCounter struct {
	classify func(line string) string
	// lost, when set, reads a tracer's own loss report from a line.
	lost   func(line string) (int64, bool)
	mu     sync.Mutex
	counts map[string]int64
	lostN  int64
	tail   []string // the last lines that matched no class, for errors
}

// start returns the write end of a pipe whose lines are counted until
// the pipe closes; wait blocks until then.
func (c *lineCounter) start() (w *os.File, wait func(), err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	c.counts = map[string]int64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			k := c.classify(line)
			c.mu.Lock()
			if n, ok := c.lostReport(line); ok {
				c.lostN += n
			} else if k != "" {
				c.counts[k]++
			} else if len(line) > 0 {
				c.tail = append(c.tail, line)
				if len(c.tail) > 20 {
					c.tail = c.tail[1:]
				}
			}
			c.mu.Unlock()
		}
		io.Copy(io.Discard, pr)
	}()
	return pw, func() { <-done }, nil
}

func (c *lineCounter) lostReport(line string) (int64, bool) {
	if c.lost == nil {
		return 0, false
	}
	return c.lost(line)
}

func (c *lineCounter) fill(s *Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s.Lost += c.lostN
	s.EventsByKind = map[string]int64{}
	for k, n := range c.counts {
		s.EventsByKind[k] = n
		s.Events += n
	}
	s.EventsAll = s.Events
}

func (c *lineCounter) unmatched() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.tail, " | ")
}

// tailFile returns the last n bytes of a file, on one line.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return strings.Join(strings.Fields(string(b)), " ")
}

// startCmd starts cmd, returning the launch time.
func startCmd(cmd *exec.Cmd) (time.Time, error) {
	t := time.Now()
	return t, cmd.Start()
}

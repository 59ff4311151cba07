//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// ReportResult is workload 5: `polygraph report` on a synthetic session.
type ReportResult struct {
	Events       int     `json:"events"`
	SessionBytes int64   `json:"session_bytes"`
	GenerateS    float64 `json:"generate_s"` // writing the session through session.Writer
	Runs         int     `json:"runs"`
	WallS        float64 `json:"wall_s"` // medians
	CPUS         float64 `json:"cpu_s"`
	MaxRSSKB     int64   `json:"max_rss_kb"` // the largest of the counted runs
	// TimedOut says the run was stopped at TimeoutS; WallS is then the
	// timeout and MaxRSSKB the memory it had reached.
	TimedOut bool      `json:"timed_out,omitempty"`
	TimeoutS float64   `json:"timeout_s,omitempty"`
	WallRuns []float64 `json:"wall_runs_s"`
	Note     string    `json:"note,omitempty"`
	// Scale is the same report on smaller sessions of the same shape,
	// measured when the full size misses the time target: how it grows.
	Scale []ReportPoint `json:"scale,omitempty"`
}

// ReportPoint is one report run on a session of Events events.
type ReportPoint struct {
	Events   int     `json:"events"`
	WallS    float64 `json:"wall_s"`
	CPUS     float64 `json:"cpu_s"`
	MaxRSSKB int64   `json:"max_rss_kb"`
	TimedOut bool    `json:"timed_out,omitempty"`
}

// summary is the report result in one sentence.
func (rr *ReportResult) summary() string {
	s := fmt.Sprintf("polygraph report on a synthetic session of %d events (%.0f MB, written in %.1f s): median %s s wall, %.2f s CPU, peak RSS %s MB (%d runs)",
		rr.Events, float64(rr.SessionBytes)/(1<<20), rr.GenerateS, ReportPoint{WallS: rr.WallS, TimedOut: rr.TimedOut}.wall(), rr.CPUS, mb(rr.MaxRSSKB), rr.Runs)
	if rr.Note != "" {
		s += "; " + rr.Note
	}
	return s + "."
}

func (p ReportPoint) wall() string {
	if p.TimedOut {
		return fmt.Sprintf("> %.0f", p.WallS)
	}
	return fmt.Sprintf("%.2f", p.WallS)
}

// profileReportMax is the longest report the profile step runs on the
// full-size session; a slower one is profiled on a smaller session.
const profileReportMax = 15 * time.Second

// slowReport is a report run long enough that repeating it would cost
// more than the median is worth.
const slowReport = 30 * time.Second

// benchReport writes the synthetic session, then times the report on it
// (wall from the bench, CPU and peak RSS from the child's rusage).
func benchReport(ctx context.Context, e *env) (*ReportResult, error) {
	help, _ := exec.CommandContext(ctx, e.polygraph, "report", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--format") {
		return nil, fmt.Errorf("this polygraph has no `report` command with --format")
	}
	home := filepath.Join(e.tmp, "report-home")
	t0 := time.Now()
	path, err := synthSession(home, e.sizes.reportEvs)
	if err != nil {
		return nil, fmt.Errorf("write the synthetic session: %w", err)
	}
	e.reportSession = path
	rr := &ReportResult{Events: e.sizes.reportEvs, GenerateS: time.Since(t0).Seconds()}
	if st, err := os.Stat(path); err == nil {
		rr.SessionBytes = st.Size()
	}
	var walls, cpus []float64
	for i := 0; i < e.cfg.warmup+e.cfg.runs; i++ {
		p, err := reportOnce(ctx, e, home, path)
		if err != nil {
			return rr, err
		}
		slow := p.TimedOut || p.WallS > slowReport.Seconds()
		if i < e.cfg.warmup && !slow {
			continue
		}
		walls = append(walls, p.WallS)
		cpus = append(cpus, p.CPUS)
		rr.MaxRSSKB = max(rr.MaxRSSKB, p.MaxRSSKB)
		rr.Runs++
		if p.TimedOut {
			rr.TimedOut, rr.TimeoutS = true, e.cfg.reportTimeout.Seconds()
		}
		if slow {
			rr.Note = fmt.Sprintf("one run only: it took over %v", slowReport)
			if p.TimedOut {
				rr.Note = fmt.Sprintf("stopped after %v (-report-timeout): it had not finished", e.cfg.reportTimeout)
			}
			break
		}
	}
	rr.WallRuns = walls
	rr.WallS, rr.CPUS = median(walls), median(cpus)
	if rr.WallS > profileReportMax.Seconds() {
		// Too slow to profile whole: the profile takes a smaller session.
		e.profileSession = ""
	} else {
		e.profileSession = path
	}
	if rr.WallS > 2 && !e.cfg.quick {
		for _, n := range []int{10000, 50000} {
			if n >= e.sizes.reportEvs {
				break
			}
			h := filepath.Join(e.tmp, fmt.Sprintf("report-home-%d", n))
			sp, err := synthSession(h, n)
			if err != nil {
				return rr, err
			}
			p, err := reportOnce(ctx, e, h, sp)
			if err != nil {
				return rr, err
			}
			p.Events = n
			rr.Scale = append(rr.Scale, p)
			e.smallSession = sp // the largest of them, in the end
		}
	}
	return rr, nil
}

// reportOnce runs `polygraph report` on path once, within the timeout.
func reportOnce(ctx context.Context, e *env, home, path string) (ReportPoint, error) {
	var p ReportPoint
	cctx, cancel := context.WithTimeout(ctx, e.cfg.reportTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, e.polygraph, "report", path, "--transcript", "none", "--format", "json", "-o", os.DevNull)
	cmd.Env = append(os.Environ(), "POLYGRAPH_HOME="+home)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return p, err
	}
	hwm := pollHWM(cmd.Process.Pid)
	err := cmd.Wait()
	p.WallS = time.Since(start).Seconds()
	polled := hwm.Stop()
	if cctx.Err() != nil && ctx.Err() == nil {
		p.TimedOut, p.MaxRSSKB = true, polled
	} else if err != nil {
		return p, fmt.Errorf("polygraph report: %w: %s", err, tailString(out.String(), 300))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		p.CPUS = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		p.MaxRSSKB = max(p.MaxRSSKB, ru.Maxrss)
	}
	return p, nil
}

// synthSession writes a session of n events shaped like an agent's: a
// root agent process whose tool calls are short shells running git, grep,
// cat, go and node, each opening its libraries and many project files
// (paths repeat, as they do), a few connecting out, with forks, execs and
// exits tying the tree together. It returns the session's path.
func synthSession(home string, n int) (string, error) {
	// Events are ~100 µs apart and the writer stamps the end at Close:
	// start far enough back that the session spans its events.
	start := time.Now().Add(-time.Duration(n) * 100 * time.Microsecond).Truncate(time.Second)
	meta := session.Meta{Mode: "run", Command: []string{"claude", "-p", "fix the failing test"}, User: "dev", UID: 1000,
		Home: "/home/dev", Hostname: "bench", Kernel: "synthetic", Cwd: "/home/dev/project", RootPID: 1000, StartedAt: start}
	w, err := session.Create(home, meta)
	if err != nil {
		return "", err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	g := &synth{w: w, rng: rng, ts: start, n: n}
	root := g.proc(999, "", 1000, "node", "/usr/bin/node", []string{"node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js", "-p", "fix the failing test"})
	for g.count < n-3 {
		g.toolCall(root)
	}
	g.exit(root, 0)
	exit := 0
	if err := w.Close(&exit); err != nil {
		return "", err
	}
	return w.Meta().Path, nil
}

type synth struct {
	w       *session.Writer
	rng     *rand.Rand
	ts      time.Time
	n       int
	count   int
	nextPID uint32
}

type sproc struct {
	pid, ppid    uint32
	execID, pexe string
	comm         string
	startNS      uint64
}

var synthPrograms = []struct {
	comm, path string
	argv       []string
	opens      int // project files each run opens, on average
}{
	{"git", "/usr/bin/git", []string{"git", "status", "--short"}, 40},
	{"grep", "/usr/bin/grep", []string{"grep", "-rn", "TODO", "."}, 200},
	{"cat", "/usr/bin/cat", []string{"cat", "go.mod"}, 2},
	{"go", "/usr/local/go/bin/go", []string{"go", "test", "./..."}, 400},
	{"node", "/usr/bin/node", []string{"node", "scripts/check.js"}, 120},
	{"sed", "/usr/bin/sed", []string{"sed", "-i", "s/a/b/", "main.go"}, 3},
}

var libs = []string{"/etc/ld.so.cache", "/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libpcre2-8.so.0",
	"/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/locale/locale-archive"}

func (g *synth) add(e *event.Event) {
	g.ts = g.ts.Add(time.Duration(50+g.rng.IntN(100)) * time.Microsecond)
	e.TS = g.ts
	g.w.Add(e)
	g.count++
}

func (g *synth) base(p *sproc, k event.Kind) *event.Event {
	e := &event.Event{Kind: k, PID: p.pid, TID: p.pid, PPID: p.ppid, Comm: p.comm, ExecID: p.execID, ParentExecID: p.pexe}
	e.Complete()
	return e
}

// proc forks a child of parent (ppid, pexe) and execs path in it.
func (g *synth) proc(ppid uint32, pexe string, pid uint32, comm, path string, argv []string) *sproc {
	startNS := uint64(g.ts.Sub(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)))
	forked := &sproc{pid: pid, ppid: ppid, execID: event.ExecID(pid, startNS), pexe: pexe, comm: comm}
	if pexe != "" {
		f := &event.Event{Kind: event.KindFork, PID: ppid, TID: ppid, Comm: "sh", ExecID: pexe, Process: &event.Process{ChildPID: pid, ChildExecID: forked.execID}}
		g.add(f)
	}
	p := &sproc{pid: pid, ppid: ppid, execID: event.ExecID(pid, startNS+1000), pexe: forked.execID, comm: comm, startNS: startNS}
	ex := g.base(p, event.KindExec)
	ex.Path, ex.Process.Argv, ex.Process.Cwd, ex.Process.UID = path, argv, "/home/dev/project", event.Ptr(uint32(1000))
	g.add(ex)
	for _, l := range libs[:2+g.rng.IntN(len(libs)-1)] {
		g.open(p, l, "read")
	}
	return p
}

func (g *synth) open(p *sproc, path, access string) {
	e := g.base(p, event.KindOpen)
	e.Path, e.Access = path, access
	e.Flags = event.Ptr(uint32(0x80000))
	if access != "read" {
		e.Flags = event.Ptr(uint32(0x80241))
	}
	e.Result = event.Ptr(int64(3 + g.rng.IntN(20)))
	if g.rng.IntN(20) == 0 {
		e.Result = event.Ptr(int64(-2)) // ENOENT, as probing lookups give
	}
	g.add(e)
}

func (g *synth) exit(p *sproc, code int) {
	e := g.base(p, event.KindExit)
	e.Process.ExitCode, e.Process.DurationNS, e.Process.CPUNS, e.Process.MaxRSSKB = event.Ptr(code), uint64(g.rng.IntN(2e9)), uint64(g.rng.IntN(1e9)), uint64(2000+g.rng.IntN(100000))
	g.add(e)
}

func (g *synth) newPID() uint32 {
	g.nextPID++
	return 2000 + g.nextPID%30000
}

// toolCall is one agent tool call: sh -c running one or two programs.
func (g *synth) toolCall(root *sproc) {
	sh := g.proc(root.pid, root.execID, g.newPID(), "sh", "/bin/sh", []string{"/bin/sh", "-c", "cd /home/dev/project && …"})
	for k := 0; k < 1+g.rng.IntN(2) && g.count < g.n-10; k++ {
		prog := synthPrograms[g.rng.IntN(len(synthPrograms))]
		p := g.proc(sh.pid, sh.execID, g.newPID(), prog.comm, prog.path, prog.argv)
		opens := prog.opens/2 + g.rng.IntN(prog.opens+1)
		for i := 0; i < opens && g.count < g.n-8; i++ {
			access := "read"
			if g.rng.IntN(50) == 0 {
				access = "write,create"
			}
			// 5,000 distinct project paths, most-used first.
			f := int(float64(5000) * g.rng.Float64() * g.rng.Float64())
			g.open(p, fmt.Sprintf("/home/dev/project/internal/pkg%02d/file%04d.go", f%40, f), access)
		}
		if g.rng.IntN(8) == 0 && g.count < g.n-8 {
			c := g.base(p, event.KindConnect)
			c.Network.Family, c.Network.Proto, c.Network.Addr, c.Network.Port, c.Result = "ipv4", "tcp", fmt.Sprintf("140.82.%d.%d", g.rng.IntN(4), g.rng.IntN(250)), 443, event.Ptr(int64(0))
			g.add(c)
		}
		g.exit(p, 0)
	}
	g.exit(sh, 0)
}

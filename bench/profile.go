//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/record"
)

// ProfileResult is where the time goes: the kernel's run time of each
// BPF program (kernel.bpf_stats_enabled) per workload, and pprof tops of
// the sensor's user space and of the report.
type ProfileResult struct {
	Sensor []SensorProfile `json:"sensor"`
	// ReportCPUTop and ReportAllocTop are `go tool pprof -top` of
	// analysis.Run on the synthetic session, in this process.
	ReportCPUTop   []string `json:"report_cpu_top,omitempty"`
	ReportAllocTop []string `json:"report_alloc_top,omitempty"`
	ReportS        float64  `json:"report_s,omitempty"`
	ReportSession  string   `json:"report_session,omitempty"`
	Files          []string `json:"files"` // the profiles written, for go tool pprof
}

// SensorProfile is one workload recorded by the sensor in this process.
type SensorProfile struct {
	Workload string     `json:"workload"`
	WallS    float64    `json:"wall_s"`
	Events   uint64     `json:"events"`
	Lost     uint64     `json:"lost"`
	Progs    []ProgStat `json:"bpf_programs"`
	// BPFNS is the kernel's run time of every program together, and
	// PerEventNS that over the events stored.
	BPFNS      uint64   `json:"bpf_ns"`
	PerEventNS float64  `json:"bpf_ns_per_event"`
	UserCPUS   float64  `json:"sensor_user_cpu_s"` // the sensor process's CPU while recording
	CPUTop     []string `json:"cpu_top"`
}

// ProgStat is one BPF program's counters from bpftool.
type ProgStat struct {
	Name      string  `json:"name"`
	RunCnt    uint64  `json:"run_cnt"`
	RunTimeNS uint64  `json:"run_time_ns"`
	AvgNS     float64 `json:"avg_ns"`
}

// benchProfile records the file storm and the exec storm with the sensor
// in this very process (so pprof sees decode and store), with the
// kernel's BPF run-time statistics on, and profiles the report.
func benchProfile(ctx context.Context, e *env) (*ProfileResult, error) {
	pr := &ProfileResult{}
	if err := os.MkdirAll(e.cfg.out, 0o755); err != nil {
		return nil, err
	}
	const statsKnob = "/proc/sys/kernel/bpf_stats_enabled"
	old, err := os.ReadFile(statsKnob)
	if err == nil {
		if err := os.WriteFile(statsKnob, []byte("1"), 0); err == nil {
			defer os.WriteFile(statsKnob, old, 0)
		}
	}
	var errs []error
	for _, name := range []string{"files", "exec"} {
		wl := findWorkload(name)
		if err := wl.setup(ctx, e, wl); err != nil {
			errs = append(errs, err)
			continue
		}
		sp, err := profileSensor(ctx, e, wl, pr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		pr.Sensor = append(pr.Sensor, *sp)
	}
	if e.reportSession != "" {
		if err := profileReport(ctx, e, pr); err != nil {
			errs = append(errs, fmt.Errorf("report: %w", err))
		}
	}
	return pr, errors.Join(errs...)
}

func profileSensor(ctx context.Context, e *env, wl *workload, pr *ProfileResult) (*SensorProfile, error) {
	dir := filepath.Join(e.tmp, "runs", "profile-"+wl.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &run{e: e, wl: wl, dir: dir, result: filepath.Join(dir, "result.json"), log: filepath.Join(dir, "workload.log")}
	// The helper marks the workload's end; the bench then reads the
	// programs' counters while they are still attached. (bpftool run by
	// the helper cannot: the traced tree has no CAP_BPF.)
	done := filepath.Join(dir, "done")
	cmdline := r.helperArgs("-after", "touch "+done)
	profPath, _ := filepath.Abs(filepath.Join(e.cfg.out, "sensor-"+wl.Name+".pprof"))
	f, err := os.Create(profPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cpu0 := selfCPU()
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	ids := watchProgIDs(done)
	res, err := record.Record(ctx, record.Options{Home: filepath.Join(dir, "home"), Mode: "run", Command: cmdline})
	stats := ids.Stop()
	pprof.StopCPUProfile()
	cpu1 := selfCPU()
	if err != nil {
		return nil, err
	}
	var s Sample
	if _, err := r.read(&s); err != nil {
		return nil, err
	}
	sp := &SensorProfile{Workload: wl.Name, WallS: s.WallS, Events: res.Meta.Events,
		Lost:     res.Stats.RingLost + res.Stats.TrackLost + res.Stats.Dropped + res.Stats.BadRecs,
		UserCPUS: cpu1 - cpu0}
	if sp.Progs = stats; len(stats) == 0 {
		return nil, fmt.Errorf("no BPF program counters (kernel.bpf_stats_enabled, or the programs were gone)")
	}
	for _, p := range sp.Progs {
		sp.BPFNS += p.RunTimeNS
	}
	if sp.Events > 0 {
		sp.PerEventNS = float64(sp.BPFNS) / float64(sp.Events)
	}
	pr.Files = append(pr.Files, profPath)
	sp.CPUTop = pprofTop(profPath, "-top")
	if !e.cfg.keep {
		os.RemoveAll(dir)
	}
	return sp, nil
}

// progWatcher collects the BPF programs this process holds open (from
// /proc/self/fdinfo), while the sensor is loaded: bpftool here cannot say
// which process holds a program, and other polygraphs may be loaded on
// the machine at the same time. It opens each by id, and reads their
// counters once the marker file appears (the workload's end).
type progWatcher struct {
	stop  chan struct{}
	done  chan struct{}
	progs map[uint32]*ebpf.Program
	stats []ProgStat
}

func watchProgIDs(marker string) *progWatcher {
	w := &progWatcher{stop: make(chan struct{}), done: make(chan struct{}), progs: map[uint32]*ebpf.Program{}}
	go func() {
		defer close(w.done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		// The programs load one by one (the verifier takes a while over
		// the big ones), so the fds are scanned until the workload ends,
		// every 50 ms (the scans show in the profile, a few ms), and the
		// marker, cheaper, every 10 ms.
		for tick := 0; ; tick++ {
			if tick%5 == 0 {
				w.scan()
			}
			if _, err := os.Stat(marker); err == nil {
				w.scan()
				w.stats = w.read()
				<-w.stop
				return
			}
			select {
			case <-w.stop:
				return
			case <-t.C:
			}
		}
	}()
	return w
}

// scan opens the programs of fds it has not seen.
func (w *progWatcher) scan() {
	ents, _ := os.ReadDir("/proc/self/fdinfo")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "prog_id:"); ok {
				var id uint32
				fmt.Sscanf(strings.TrimSpace(v), "%d", &id)
				if _, seen := w.progs[id]; !seen {
					p, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
					if err != nil {
						p = nil
					}
					w.progs[id] = p
				}
			}
		}
	}
}

// read returns the counters of the programs that ran, busiest first.
func (w *progWatcher) read() []ProgStat {
	var out []ProgStat
	for _, p := range w.progs {
		if p == nil {
			continue
		}
		st, err := p.Stats()
		if err != nil || st.RunCount == 0 {
			continue
		}
		name := ""
		if info, err := p.Info(); err == nil {
			name = info.Name
		}
		ns := uint64(st.Runtime)
		out = append(out, ProgStat{Name: name, RunCnt: st.RunCount, RunTimeNS: ns, AvgNS: float64(ns) / float64(st.RunCount)})
	}
	slices.SortFunc(out, func(a, b ProgStat) int { return cmpF(float64(b.RunTimeNS), float64(a.RunTimeNS)) })
	return out
}

// Stop ends the watch, closes the programs and returns their counters.
func (w *progWatcher) Stop() []ProgStat {
	close(w.stop)
	<-w.done
	for _, p := range w.progs {
		if p != nil {
			p.Close()
		}
	}
	return w.stats
}

// profileReport runs analysis.Run on a synthetic session in this
// process under the CPU profiler, and records its allocations. The
// session is the full-size one when the report on it takes under
// profileReportMax, the largest smaller one of the same shape otherwise.
func profileReport(ctx context.Context, e *env, pr *ProfileResult) error {
	path := e.profileSession
	if path == "" {
		path = e.smallSession
	}
	pr.ReportSession = path
	cpuPath, _ := filepath.Abs(filepath.Join(e.cfg.out, "report-cpu.pprof"))
	heapPath, _ := filepath.Abs(filepath.Join(e.cfg.out, "report-alloc.pprof"))
	f, err := os.Create(cpuPath)
	if err != nil {
		return err
	}
	defer f.Close()
	// The allocs profile counts from the start of the process: take a
	// snapshot now and subtract it.
	basePath := filepath.Join(e.tmp, "allocs-base.pprof")
	runtime.GC()
	if bf, err := os.Create(basePath); err == nil {
		pprof.Lookup("allocs").WriteTo(bf, 0)
		bf.Close()
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return err
	}
	start := time.Now()
	rep, err := analysis.Run(ctx, analysis.Options{SessionPath: path, Transcript: analysis.TranscriptNone})
	if err == nil {
		err = rep.WriteJSON(discard{})
	}
	pr.ReportS = time.Since(start).Seconds()
	pprof.StopCPUProfile()
	if err != nil {
		return err
	}
	h, err := os.Create(heapPath)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := pprof.Lookup("allocs").WriteTo(h, 0); err != nil {
		return err
	}
	pr.Files = append(pr.Files, cpuPath, heapPath)
	pr.ReportCPUTop = pprofTop(cpuPath, "-top")
	pr.ReportAllocTop = pprofTop(heapPath, "-top", "-sample_index=alloc_space", "-base="+basePath)
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// pprofTop is the first lines of `go tool pprof -top` (cumulative order
// is in the files; flat is what says where the cycles go).
func pprofTop(profile string, args ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	cmd := exec.Command("go", append(append([]string{"tool", "pprof"}, args...), "-nodecount=15", exe, profile)...)
	out, err := cmd.Output()
	if err != nil {
		return []string{"go tool pprof failed: " + err.Error()}
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") ||
			strings.HasPrefix(l, "Build ID:") || strings.TrimSpace(l) == "" {
			continue
		}
		lines = append(lines, l)
	}
	return lines
}

// selfCPU is this process's user+system CPU in seconds.
func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func (p *ProfileResult) text(b *strings.Builder) {
	for _, s := range p.Sensor {
		fmt.Fprintf(b, "\nprofile, %s under the sensor (in-process): %d events in %.2f s, lost %d; BPF run time %.3f s (%.0f ns/event); sensor user space %.2f s CPU\n",
			s.Workload, s.Events, s.WallS, s.Lost, float64(s.BPFNS)/1e9, s.PerEventNS, s.UserCPUS)
		for _, pg := range s.Progs {
			if pg.RunTimeNS*100 < s.BPFNS { // under 1%
				continue
			}
			fmt.Fprintf(b, "  %-16s %9d runs %8.3f s %7.0f ns/run\n", pg.Name, pg.RunCnt, float64(pg.RunTimeNS)/1e9, pg.AvgNS)
		}
		for _, l := range s.CPUTop {
			fmt.Fprintln(b, "  "+l)
		}
	}
	if len(p.ReportCPUTop) > 0 {
		fmt.Fprintf(b, "\nprofile, analysis.Run on the synthetic session (in-process, %.2f s):\n", p.ReportS)
		for _, l := range p.ReportCPUTop {
			fmt.Fprintln(b, "  "+l)
		}
		fmt.Fprintln(b, "  allocations:")
		for _, l := range p.ReportAllocTop {
			fmt.Fprintln(b, "  "+l)
		}
	}
}

func (p *ProfileResult) markdown(b *strings.Builder) {
	for _, s := range p.Sensor {
		fmt.Fprintf(b, "Profile, %s recorded by the sensor in the bench's own process: %d events in %.2f s, lost %d. BPF programs ran %.3f s in all (%.0f ns per stored event); the sensor's user space used %.2f s of CPU.\n\n",
			s.Workload, s.Events, s.WallS, s.Lost, float64(s.BPFNS)/1e9, s.PerEventNS, s.UserCPUS)
		b.WriteString("| program | runs | run time s | ns/run |\n|---|--:|--:|--:|\n")
		for _, pg := range s.Progs {
			if pg.RunTimeNS*100 < s.BPFNS {
				continue
			}
			fmt.Fprintf(b, "| %s | %d | %.3f | %.0f |\n", pg.Name, pg.RunCnt, float64(pg.RunTimeNS)/1e9, pg.AvgNS)
		}
		b.WriteString("\n```\n" + strings.Join(s.CPUTop, "\n") + "\n```\n\n")
	}
	if len(p.ReportCPUTop) > 0 {
		fmt.Fprintf(b, "Profile, `analysis.Run` on the synthetic session in the bench's process (%.2f s):\n\n```\n%s\n```\n\nAllocations:\n\n```\n%s\n```\n",
			p.ReportS, strings.Join(p.ReportCPUTop, "\n"), strings.Join(p.ReportAllocTop, "\n"))
	}
}

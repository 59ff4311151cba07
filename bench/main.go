//go:build linux

// Command bench measures what polygraph costs: each workload runs bare and
// under each tracer (polygraph, strace, auditd, bpftrace; and polygraph
// watch running system-wide, bench/watch.go), interleaved run by run, and
// the medians are printed as a table against bare, with
// the events each tracer recorded and lost. It also times `polygraph
// report` on a synthetic session of a million events, finds the highest
// event rate the sensor sustains without loss, and profiles the sensor
// (pprof, and the kernel's own per-program run time from bpf_stats).
//
//	go run ./bench [-runs N] [-quick] [-out DIR] [-only W,...] [-tracers T,...]
//
// It needs root, installs strace, auditd and bpftrace from Debian when
// they are missing, and writes DIR/latest.json, DIR/table.txt and
// DIR/chart.svg; a full run (not -quick, not -only) also refreshes
// docs/bench.md and docs/bench.svg. See docs/bench.md.
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/record"
)

// config is the command line.
type config struct {
	runs         int      // counted runs per tracer and workload
	baseRuns     int      // counted runs of strace, auditd and bpftrace (they skip the warm-up)
	warmup       int      // uncounted runs first
	quick        bool     // tiny sizes, bare and polygraph only: the smoke variant
	out          string   // where results go
	only         []string // workloads to run (nil: all)
	tracers      []string // tracers to run (nil: all but the opt-in ones; bare always runs)
	docs         bool     // also write docs/bench.md and docs/bench.svg
	polygraphBin string   // a prebuilt polygraph binary ("" builds ./cmd/polygraph)
	profile      bool     // profile the sensor and the report
	rate         bool     // search the highest loss-free event rate
	install      bool     // apt-get install missing tracers
	keep         bool     // keep the temporary directory
	reportN      int      // events in the synthetic session (0: the default for the mode)
	// reportTimeout bounds one report run; a slower report is recorded
	// as not finished, with the memory it had reached.
	reportTimeout time.Duration
	verbose       bool
}

func main() {
	// Record (used by the profile step) runs the traced command through a
	// shim: this very binary, started with the shim's marker argument.
	if len(os.Args) > 1 && os.Args[1] == record.ShimArg {
		os.Exit(record.ShimMain(os.Args[2:]))
	}
	var c config
	var only, tracers string
	flag.IntVar(&c.runs, "runs", 5, "counted runs of each workload under each tracer (after one warm-up)")
	flag.IntVar(&c.warmup, "warmup", 1, "uncounted runs first")
	flag.IntVar(&c.baseRuns, "baseline-runs", 0, "counted runs of strace, auditd and bpftrace, which skip the warm-up (default: -runs); they are the slow ones")
	flag.DurationVar(&c.reportTimeout, "report-timeout", 2*time.Minute, "give up on one `polygraph report` run after this long")
	flag.BoolVar(&c.quick, "quick", false, "smoke variant: 1 run, no warm-up, tiny sizes, bare and polygraph only")
	flag.StringVar(&c.out, "out", "bench/out", "directory for latest.json, table.txt and chart.svg")
	flag.StringVar(&only, "only", "", "comma-separated steps to run: "+strings.Join(append(workloadNames(), extraSteps...), ","))
	flag.StringVar(&tracers, "tracers", "", "comma-separated tracers (default: all but watch-agent; bare always runs): "+strings.Join(tracerNames(), ","))
	flag.BoolVar(&c.docs, "docs", true, "write docs/bench.md and docs/bench.svg (full runs of every workload only)")
	flag.StringVar(&c.polygraphBin, "polygraph", "", "use this polygraph binary instead of building ./cmd/polygraph")
	flag.BoolVar(&c.profile, "profile", true, "profile the sensor and the report (pprof, bpf_stats)")
	flag.BoolVar(&c.rate, "rate", true, "find the highest event rate the sensor sustains without loss")
	flag.BoolVar(&c.install, "install", true, "install missing tracers with apt-get")
	flag.BoolVar(&c.keep, "keep", false, "keep the temporary directory")
	flag.IntVar(&c.reportN, "report-events", 0, "events in the report workload's synthetic session (default 1000000; -quick 10000)")
	flag.BoolVar(&c.verbose, "v", false, "log each run")
	render := flag.String("render", "", "only re-render the outputs (and docs, with -docs) from this latest.json")
	flag.Parse()
	c.only = splitList(only)
	c.tracers = splitList(tracers)
	if c.baseRuns <= 0 || c.baseRuns > c.runs {
		c.baseRuns = c.runs
	}
	if c.quick {
		c.runs, c.warmup, c.baseRuns = 1, 0, 1
		if c.tracers == nil {
			c.tracers = []string{"bare", "polygraph"}
		}
	}
	if c.quick || c.only != nil || c.tracers != nil {
		c.docs = false
	}
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))

	if *render != "" {
		if err := rerender(*render, c, os.Stdout); err != nil {
			slog.Error("render failed", "error", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := runBench(ctx, c, os.Stdout)
	if err != nil {
		slog.Error("bench failed", "error", err)
		os.Exit(1)
	}
	if res.Failures > 0 {
		os.Exit(1)
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

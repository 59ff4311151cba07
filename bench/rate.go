//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// RateResult is the search for the highest event rate the sensor
// sustains without losing events.
type RateResult struct {
	Workers           int        `json:"workers"`
	StepSeconds       string     `json:"step_seconds"`
	Steps             []RateStep `json:"steps"`
	MaxZeroLossPerSec float64    `json:"max_zero_loss_per_sec"`
	// LossReached is false when no step lost anything: the generator,
	// slowed by tracing on this machine, could not outrun the sensor, and
	// MaxZeroLossPerSec is a lower bound.
	LossReached bool `json:"loss_reached"`
}

// verdict is the rate result in words.
func (rr *RateResult) verdict() string {
	if rr.LossReached {
		return fmt.Sprintf("%.0f events/s", rr.MaxZeroLossPerSec)
	}
	return fmt.Sprintf("≥ %.0f events/s (no step lost events: the generator, slowed by tracing, could not outrun the sensor here)", rr.MaxZeroLossPerSec)
}

// RateStep is one target rate under polygraph.
type RateStep struct {
	Target      float64          `json:"target_per_sec"` // 0: unthrottled
	Achieved    float64          `json:"achieved_per_sec"`
	Events      int64            `json:"events"` // open events stored
	Lost        int64            `json:"lost"`
	LostByStage map[string]int64 `json:"lost_by_stage,omitempty"`
	TracerCPUS  float64          `json:"tracer_cpu_s"`
	TracerRSSKB int64            `json:"tracer_rss_kb"`
	ShutdownS   float64          `json:"shutdown_s"`
	Error       string           `json:"error,omitempty"`
	// Retried says the first try fell short of both the target and the
	// rate an earlier step reached: other work on the machine starved
	// the generator, and the step was run again.
	Retried bool `json:"retried,omitempty"`
}

// rateWorkers is one per CPU: the generator and polygraph compete for
// the machine, as a busy agent and the sensor would.
const rateWorkers = 2

// benchRate runs the paced open generator under polygraph at rising
// rates, stopping after the first step that loses events.
func benchRate(ctx context.Context, e *env) (*RateResult, error) {
	if err := makeTree(e); err != nil {
		return nil, err
	}
	rr := &RateResult{Workers: rateWorkers, StepSeconds: e.sizes.rateSeconds.String()}
	retried := map[int]bool{}
	for i := 0; i < len(e.sizes.rateSteps); i++ {
		target := e.sizes.rateSteps[i]
		dir := filepath.Join(e.tmp, "runs", fmt.Sprintf("rate-%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return rr, err
		}
		wl := &workload{Name: "rate", Title: "event rate", path: filepath.Join(dir, "rate.sh")}
		if err := writeScript(wl.path, fmt.Sprintf("exec %s rate -dir %s -workers %d -rate %.0f -dur %s\n",
			e.helper, stormDir(e), rateWorkers, target, e.sizes.rateSeconds)); err != nil {
			return rr, err
		}
		r := &run{e: e, wl: wl, dir: dir, result: filepath.Join(dir, "result.json"), log: filepath.Join(dir, "workload.log")}
		var s Sample
		st := RateStep{Target: target}
		err := runPolygraph(ctx, r, &s)
		if err == nil {
			st.Achieved, err = achievedRate(r.log)
		}
		if err != nil {
			st.Error = err.Error()
			rr.Steps = append(rr.Steps, st)
			return rr, err
		}
		st.Events, st.Lost, st.LostByStage = s.EventsByKind["open"], s.Lost, s.LostByStage
		st.TracerCPUS, st.TracerRSSKB, st.ShutdownS = s.TracerCPUS, s.TracerRSSKB, s.ShutdownS
		starved := st.Lost == 0 && (target == 0 || st.Achieved < 0.8*target) && st.Achieved < 0.8*rr.MaxZeroLossPerSec
		if starved && !retried[i] {
			fmt.Fprintf(e.out, "bench:   target %s/s: achieved only %.0f/s, below an earlier step: the machine was busy, trying again\n", rateName(target), st.Achieved)
			retried[i] = true
			os.RemoveAll(dir)
			i--
			continue
		}
		st.Retried = retried[i]
		rr.Steps = append(rr.Steps, st)
		fmt.Fprintf(e.out, "bench:   target %s/s: achieved %.0f/s, %d open events, lost %d\n", rateName(target), st.Achieved, st.Events, st.Lost)
		if !e.cfg.keep {
			os.RemoveAll(dir)
		}
		if st.Lost > 0 {
			rr.LossReached = true
			break
		}
		rr.MaxZeroLossPerSec = max(rr.MaxZeroLossPerSec, st.Achieved)
	}
	return rr, nil
}

func rateName(t float64) string {
	if t == 0 {
		return "max"
	}
	return fmt.Sprintf("%.0f", t)
}

// achievedRate reads the rate helper's JSON line from the workload log.
func achievedRate(log string) (float64, error) {
	f, err := os.Open(log)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var rate float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var out struct {
			PerSec float64 `json:"per_sec"`
		}
		if strings.HasPrefix(sc.Text(), "{") && json.Unmarshal(sc.Bytes(), &out) == nil {
			rate = out.PerSec
		}
	}
	if rate == 0 {
		return 0, fmt.Errorf("the rate helper reported nothing: %s", tailFile(log, 300))
	}
	return rate, nil
}

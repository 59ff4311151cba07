// Package fleet simulates a fleet of agent hosts exporting to one
// OpenTelemetry Collector: every simulated host (its own exporter, spool
// and host.name) replays the sessions recorded around the real agent CLIs
// as the live pipeline sends them, all at once, into a real collector
// built from the core modules (test/tools/build.sh). It measures what
// docs/fleet.md's table shows: spans per second, bytes per session on
// the wire, the exporters' CPU, the collector's, and loss.
package fleet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/otlp"
	"github.com/polygraph/polygraph/test/otelbackend"
	"github.com/polygraph/polygraph/test/recorded"
)

// snapshot is one update of a session's live export: the analysis at
// offset after the session began.
type snapshot struct {
	offset time.Duration
	a      *analysis.Analysis
	final  bool
}

// play is one recorded session as its updates, and the spans and log
// records one batch export of it sends.
type play struct {
	agent       string
	snaps       []snapshot
	spans, logs int
}

// plays analyses each recorded session as it stood every half second and
// at its end, and counts what a batch export of it sends.
func plays(t *testing.T) []play {
	t.Helper()
	var out []play
	for _, agent := range recorded.Agents {
		s, err := recorded.Load(agent)
		if err != nil {
			t.Fatal(err)
		}
		p := play{agent: agent}
		for off := 500 * time.Millisecond; s.Start().Add(off).Before(s.End()); off += 500 * time.Millisecond {
			a, err := s.Analyze(t.Context(), t.TempDir(), s.Start().Add(off))
			if err != nil {
				t.Fatal(err)
			}
			p.snaps = append(p.snaps, snapshot{offset: off, a: a})
		}
		a, err := s.Analyze(t.Context(), t.TempDir(), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		p.snaps = append(p.snaps, snapshot{offset: s.End().Sub(s.Start()), a: a, final: true})
		sink := otelbackend.NewSink(t)
		x, err := otlp.New(otlp.Config{Endpoint: sink.URL()})
		if err != nil {
			t.Fatal(err)
		}
		if err := x.Update(t.Context(), a, true); err != nil {
			t.Fatal(err)
		}
		if st := x.Close(t.Context()); !st.Delivered() {
			t.Fatal(st)
		}
		p.spans, p.logs, _ = sink.Counts()
		out = append(out, p)
	}
	return out
}

// onHost returns a as host sees it: its own session id and host name.
func onHost(a *analysis.Analysis, host int) *analysis.Analysis {
	c := *a
	m := *a.Meta
	m.ID = fmt.Sprintf("%s-h%03d", m.ID, host)
	m.Hostname = fmt.Sprintf("agent-host-%03d", host)
	c.Meta = &m
	return &c
}

// result is one run of the simulation.
type result struct {
	mode                   string
	hosts, sessions        int
	spans, logs            int64 // expected
	accepted, acceptedLogs int64
	wall                   time.Duration
	wire, raw              int64
	cpu, collectorCPU      time.Duration
	dropped, spooled       int64
}

func (r result) line() string {
	lost := r.spans - r.accepted + r.logs - r.acceptedLogs
	return fmt.Sprintf("| %s | %d | %d | %d | %d | %.1f s | %.0f | %.1f KiB | %.1f KiB | %.2f s (%.1f ms/session) | %.2f s | %d |",
		r.mode, r.hosts, r.sessions, r.spans, r.logs, r.wall.Seconds(), float64(r.accepted)/r.wall.Seconds(),
		float64(r.wire)/float64(r.sessions)/1024, float64(r.raw)/float64(r.sessions)/1024,
		r.cpu.Seconds(), float64(r.cpu.Milliseconds())/float64(r.sessions), r.collectorCPU.Seconds(), lost)
}

// cpuTime is this process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// run plays every session on every host into the collector c: live, each
// update at its time in the recording (the hosts starting within a
// second of each other), or as a burst, every update at once.
func run(t *testing.T, c *otelbackend.Collector, ps []play, hosts int, live bool) result {
	t.Helper()
	r := result{mode: "burst", hosts: hosts, sessions: hosts * len(ps)}
	if live {
		r.mode = "live"
	}
	for _, p := range ps {
		r.spans += int64(hosts * p.spans)
		r.logs += int64(hosts * p.logs)
	}
	spans0, logs0, _, err := c.Accepted()
	if err != nil {
		t.Fatal(err)
	}
	ccpu0 := c.CPU()
	cpu0 := cpuTime()
	start := time.Now()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for h := range hosts {
		x, err := otlp.New(otlp.Config{Endpoint: c.OTLP, SpoolDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			var hw sync.WaitGroup
			delay := time.Duration(rand.N(int64(time.Second)))
			for _, p := range ps {
				hw.Go(func() {
					if live {
						time.Sleep(delay)
					}
					begin := time.Now()
					for _, s := range p.snaps {
						if live {
							time.Sleep(time.Until(begin.Add(s.offset)))
						}
						if err := x.Update(context.Background(), onHost(s.a, h), s.final); err != nil {
							t.Error(err)
						}
					}
				})
			}
			hw.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			st := x.Close(ctx)
			mu.Lock()
			r.wire += st.WireBytes
			r.raw += st.Bytes
			r.dropped += st.Spans.Dropped + st.Logs.Dropped
			r.spooled += st.Spans.Spooled + st.Logs.Spooled
			mu.Unlock()
		})
	}
	wg.Wait()
	r.cpu = cpuTime() - cpu0
	// Delivered means the collector's receiver took it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, l, _, err := c.Accepted()
		if err != nil {
			t.Fatal(err)
		}
		r.accepted, r.acceptedLogs = s-spans0, l-logs0
		if r.accepted >= r.spans && r.acceptedLogs >= r.logs || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.wall = time.Since(start)
	r.collectorCPU = c.CPU() - ccpu0
	return r
}

// TestFleet runs the simulation with POLYGRAPH_FLEET_HOSTS hosts (default
// 60), live and as a burst, and prints the table docs/fleet.md shows
// (lines led by "fleet"). Loss must be 0.
func TestFleet(t *testing.T) {
	hosts := 60
	if v := os.Getenv("POLYGRAPH_FLEET_HOSTS"); v != "" {
		var err error
		if hosts, err = strconv.Atoi(v); err != nil || hosts < 1 {
			t.Fatalf("POLYGRAPH_FLEET_HOSTS=%q", v)
		}
	}
	c := otelbackend.StartCounting(t)
	ps := plays(t)
	for _, p := range ps {
		t.Logf("fleet session %s: %d updates, %d spans, %d log records", p.agent, len(p.snaps), p.spans, p.logs)
	}
	fmt.Println("fleet | mode | hosts | sessions | spans | log records | wall | spans/s | wire/session (gzip) | protobuf/session | exporter CPU | collector CPU | lost |")
	fmt.Println("fleet |---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, live := range []bool{true, false} {
		r := run(t, c, ps, hosts, live)
		fmt.Println("fleet " + r.line())
		if r.accepted != r.spans || r.acceptedLogs != r.logs || r.dropped != 0 || r.spooled != 0 {
			t.Errorf("%s: the collector accepted %d of %d spans and %d of %d log records; exporters dropped %d, left %d spooled",
				r.mode, r.accepted, r.spans, r.acceptedLogs, r.logs, r.dropped, r.spooled)
		}
	}
	if _, _, refused, err := c.Accepted(); err != nil || refused != 0 {
		t.Errorf("the collector refused %d items (%v)", refused, err)
	}
}

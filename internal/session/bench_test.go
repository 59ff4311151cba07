package session

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// BenchmarkAdd measures sustained recording throughput: b.N events of a
// realistic mix (mostly opens of repeating paths, some execs, connects
// and exits) through Add. events/s includes Close (final flush, index
// build, checkpoint); add-events/s is the rate Add sustained, which is
// what the sensor sees; run with -benchtime 300000x or more so the
// pipeline reaches its steady state.
func BenchmarkAdd(b *testing.B) {
	evs := make([]event.Event, 0, 1000)
	for i := range cap(evs) {
		pid := uint32(1000 + i%20)
		e := event.Event{TS: t0, PID: pid, TID: pid, PPID: 999, Comm: "node",
			ExecID: event.ExecID(pid, 123456789), ParentExecID: event.ExecID(999, 1),
			Process: &event.Process{}, Network: &event.Network{}}
		switch i % 10 {
		case 0:
			e.Kind, e.Path, e.Process.Argv, e.Process.Cwd = event.KindExec, "/usr/bin/node", []string{"node", "script.js", fmt.Sprint(i)}, "/home/dev/project"
		case 1:
			e.Kind, e.Network.Family, e.Network.Addr, e.Network.Port, e.Result = event.KindConnect, "ipv4", "10.0.0.1", 443, event.Ptr(int64(0))
		case 2:
			e.Kind, e.Process.ExitCode, e.Process.DurationNS, e.Process.CPUNS = event.KindExit, event.Ptr(0), 1e9, 5e8
		default:
			e.Kind, e.Path, e.Flags, e.Access, e.Result = event.KindOpen,
				fmt.Sprintf("/home/dev/project/node_modules/pkg%d/index.js", i%300), event.Ptr(uint32(0)), "read", event.Ptr(int64(3))
		}
		evs = append(evs, e)
	}
	w, err := Create(b.TempDir(), Meta{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	start := time.Now()
	for i := range b.N {
		ev := evs[i%len(evs)] // a fresh copy: Add keeps the pointer
		w.Add(&ev)
	}
	added := time.Since(start)
	if err := w.Close(nil); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/added.Seconds(), "add-events/s")
	b.ReportMetric(time.Since(start).Seconds()-added.Seconds(), "close-s")
	// CPU per event is steadier than events/s on a shared machine: the
	// pipeline's ceiling is one core per stage.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/event")
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// cpuTime is the process's user plus system CPU time in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// readBenchEvents is the session BenchmarkReadEvents reads: about what an
// agent's recording holds, in the proportions bench/synth.go uses.
const readBenchEvents = 200_000

// synthEvents returns n events shaped like an agent's recording: shells
// forking and exec'ing short programs (~2 % exec, as many forks and
// exits), each opening libraries and project files (~90 % opens, 5,000
// distinct paths, the most used first), some connecting out.
func synthEvents(n int) []*event.Event {
	rng := rand.New(rand.NewPCG(1, 2))
	ts := t0
	out := make([]*event.Event, 0, n)
	add := func(e *event.Event) {
		ts = ts.Add(time.Duration(50+rng.IntN(100)) * time.Microsecond)
		e.TS = ts
		out = append(out, e)
	}
	comms := []string{"git", "grep", "cat", "go", "node", "sed"}
	pid := uint32(2000)
	for len(out) < n {
		pid++
		comm := comms[rng.IntN(len(comms))]
		startNS := uint64(ts.UnixNano())
		fork := event.ExecID(pid, startNS)
		self := event.ExecID(pid, startNS+1000)
		add(&event.Event{Kind: event.KindFork, PID: 1000, TID: 1000, PPID: 999, Comm: "sh", ExecID: "1000-1", Process: &event.Process{ChildPID: pid, ChildExecID: fork}})
		base := func(k event.Kind) *event.Event {
			e := &event.Event{Kind: k, PID: pid, TID: pid, PPID: 1000, Comm: comm, ExecID: self, ParentExecID: fork}
			e.Complete()
			return e
		}
		ex := base(event.KindExec)
		ex.Path, ex.Process.Argv, ex.Process.Cwd, ex.Process.UID = "/usr/bin/"+comm, []string{comm, "--flag", "arg"}, "/home/dev/project", event.Ptr(uint32(1000))
		add(ex)
		for range 1 + rng.IntN(80) {
			e := base(event.KindOpen)
			f := int(5000 * rng.Float64() * rng.Float64())
			e.Path, e.Access, e.Flags = fmt.Sprintf("/home/dev/project/internal/pkg%02d/file%04d.go", f%40, f), "read", event.Ptr(uint32(0x80000))
			if rng.IntN(50) == 0 {
				e.Access, e.Flags = "write,create", event.Ptr(uint32(0x80241))
			}
			e.Result = event.Ptr(int64(3 + rng.IntN(20)))
			add(e)
		}
		if rng.IntN(8) == 0 {
			c := base(event.KindConnect)
			c.Network.Family, c.Network.Proto, c.Network.Addr, c.Network.Port, c.Result = "ipv4", "tcp", fmt.Sprintf("140.82.%d.%d", rng.IntN(4), rng.IntN(250)), 443, event.Ptr(int64(0))
			add(c)
		}
		e := base(event.KindExit)
		e.Process.ExitCode, e.Process.DurationNS, e.Process.CPUNS, e.Process.MaxRSSKB = event.Ptr(0), uint64(rng.IntN(2e9)), uint64(rng.IntN(1e9)), uint64(2000+rng.IntN(100000))
		add(e)
	}
	return out[:n]
}

// BenchmarkReadEvents measures Reader.Events over a recorded session of
// readBenchEvents events (see synthEvents), as `polygraph report` reads
// it: every event, kept. events/s and B/event are per event read;
// allocs/op and B/op are per whole read.
func BenchmarkReadEvents(b *testing.B) {
	path := record(b, b.TempDir(), synthEvents(readBenchEvents))
	r := openT(b, path)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		evs := make([]*event.Event, 0, readBenchEvents)
		if err := r.Events(Filter{}, func(e *event.Event) error {
			evs = append(evs, e)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		if len(evs) != readBenchEvents {
			b.Fatalf("read %d events, want %d", len(evs), readBenchEvents)
		}
	}
	b.ReportMetric(float64(b.N*readBenchEvents)/time.Since(start).Seconds(), "events/s")
}

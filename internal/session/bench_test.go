package session

import (
	"fmt"
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
			ExecID: event.ExecID(pid, 123456789), ParentExecID: event.ExecID(999, 1)}
		switch i % 10 {
		case 0:
			e.Kind, e.Path, e.Argv, e.Cwd = event.KindExec, "/usr/bin/node", []string{"node", "script.js", fmt.Sprint(i)}, "/home/dev/project"
		case 1:
			e.Kind, e.Family, e.Addr, e.Port, e.Result = event.KindConnect, "ipv4", "10.0.0.1", 443, event.Ptr(int64(0))
		case 2:
			e.Kind, e.ExitCode, e.DurationNS, e.CPUNS = event.KindExit, event.Ptr(0), 1e9, 5e8
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

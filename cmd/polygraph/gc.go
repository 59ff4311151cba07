package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/report"
)

// The analysis keeps every event it reads, so a collection during the read
// or the analysis finds little garbage and rescans the whole growing heap:
// on a million events that was a fifth of the report's time. The verbs that
// analyse a session once and exit turn the collector off until the report
// is built (batchGC), and cap the heap once the events are in
// (capHeap, analysis.Options.Loaded), collecting the read's garbage
// once then (loaded). The analysis library sets no
// process-wide knobs itself: a long-running server embeds it too.

// batchGC turns the garbage collector off, for a job whose heap is
// nearly all live, and returns what restores it. A soft memory limit
// (debug.SetMemoryLimit) set meanwhile still makes it collect when the
// heap reaches the limit.
func batchGC() (restore func()) {
	pct := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(-1)
	return func() {
		debug.SetMemoryLimit(limit)
		debug.SetGCPercent(pct)
	}
}

// heapBytes is the memory the heap's objects take, live or not yet
// collected.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 1 << 30
	}
	return int64(s[0].Value.Uint64())
}

// capHeap, once a session's events are read, lets the collector run only
// if the heap outgrows them by a margin.
func capHeap() { debug.SetMemoryLimit(heapBytes()*5/4 + 256<<20) }

// loaded is analysis.Options.Loaded for the verbs below: it collects
// once, then caps the heap. The read leaves garbage behind, the SQLite
// driver's copies of the chunk rows above all (~45 MiB of a million
// events); collected, that memory is what the analysis allocates next
// instead of growing the heap (the bench's report: peak RSS 400 -> 382
// MB, for a mark of ~0.1 s on both cores). A collection on a goroutine
// of its own beside the analysis freed less (390 MB) and cost more CPU:
// the analysis allocates while it marks, and the rules take both cores.
func loaded() {
	runtime.GC()
	capHeap()
}

// reportOnce is analysis.Run for a verb that analyses one session and is
// done: the collector tuned as above for the analysis's time.
func reportOnce(ctx context.Context, o analysis.Options) (*report.Report, error) {
	defer batchGC()()
	o.Loaded = loaded
	return analysis.Run(ctx, o)
}

// observeOnce is analysis.Observe with the collector tuned as reportOnce's.
func observeOnce(ctx context.Context, o analysis.Options) (*baseline.Sample, error) {
	defer batchGC()()
	o.Loaded = loaded
	return analysis.Observe(ctx, o)
}

// analyzeOnce is analysis.Analyze with the collector tuned as
// reportOnce's, for a verb that analyses sessions one after another.
func analyzeOnce(ctx context.Context, o analysis.Options) (*analysis.Analysis, error) {
	defer batchGC()()
	o.Loaded = loaded
	return analysis.Analyze(ctx, o)
}

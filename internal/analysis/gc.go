package analysis

import (
	"runtime/debug"
	"runtime/metrics"
)

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

package sensor

import "runtime/debug"

// ReleaseLoadMemory collects what loading the sensor left behind and
// gives it back to the system. Loading parses the kernel's BTF and the
// programs' ELF (~12 MB live while it runs, all garbage once the programs
// are in the kernel); the collector would otherwise set its next goal
// from that peak and let the heap grow to it (up to the recording's
// limit, docs/bench.md) before collecting again, while what recording
// keeps is ~5 MB. Call it once New returned, before the traced command
// starts: it costs one collection, a few milliseconds.
func ReleaseLoadMemory() {
	debug.FreeOSMemory()
}

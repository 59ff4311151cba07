package integrity

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// execsPerRun is the hot build loop: the same binary 2,000 times.
const execsPerRun = 2000

// BenchmarkExecSameBinary submits 2,000 execs of one binary through a
// Pool per iteration, with a fresh Checker each time, so every iteration
// pays its one miss. The queues hold all 2,000: a loop that submits
// faster than any real exec rate would otherwise measure refusals. It reports the cost per exec end to end, the cost
// the recorder's goroutine pays in Submit, and the cache hit rate.
func BenchmarkExecSameBinary(b *testing.B) {
	bin := copyFile(b, "/usr/bin/true", filepath.Join(b.TempDir(), "true"), 0o755)
	live := exec.Command("/usr/bin/sleep", "600")
	if err := live.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { live.Process.Kill(); live.Wait() })
	time.Sleep(50 * time.Millisecond) // let it exec sleep
	sleepPath, _ := filepath.EvalSymlinks("/usr/bin/sleep")

	cases := []struct {
		name string
		req  Request
		opts Options
	}{
		{"path", Request{Path: bin}, Options{NoDpkg: true}},
		{"proc-exe", Request{PID: uint32(live.Process.Pid), Path: sleepPath}, Options{NoDpkg: true}},
		{"dpkg", Request{Path: sleepPath}, Options{}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var hits, misses uint64
			var submit time.Duration
			var refused int
			for b.Loop() {
				c := newChecker(b, tc.opts)
				var wg sync.WaitGroup
				wg.Add(execsPerRun)
				var bad Result
				var mu sync.Mutex
				p := c.Start(context.Background(), 2, execsPerRun, func(r Result) {
					if r.Binary.Status == Unavailable && !strings.HasSuffix(r.Binary.Reason, "queue full") {
						mu.Lock()
						bad = r
						mu.Unlock()
					}
					wg.Done()
				})
				for range execsPerRun {
					t0 := time.Now()
					if !p.Submit(tc.req) {
						refused++
					}
					submit += time.Since(t0)
				}
				wg.Wait()
				p.Close()
				if bad.Binary.Status != "" {
					b.Fatalf("unavailable: %+v", bad.Binary)
				}
				s := c.Stats()
				hits, misses = hits+s.Hits, misses+s.Misses
			}
			n := float64(b.N) * execsPerRun
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/exec")
			b.ReportMetric(float64(submit.Nanoseconds())/n, "submit-ns/exec")
			b.ReportMetric(Stats{Hits: hits, Misses: misses}.HitRate()*100, "hit-%")
			b.ReportMetric(float64(misses)/float64(b.N), "misses/run")
			b.ReportMetric(float64(refused)/float64(b.N), "refused/run")
		})
	}
}

// BenchmarkHashMiss is the cost of a cache miss: reading and hashing the
// test binary (tens of MB) with SHA-256 and MD5.
func BenchmarkHashMiss(b *testing.B) {
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(self)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		f, err := os.Open(self)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := hashFile(context.Background(), f, true); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkDpkgIndex builds the owner index from the real database and
// answers one lookup, which reads one package's md5sums: what the first
// dpkg-owned exec of a session costs.
func BenchmarkDpkgIndex(b *testing.B) {
	realTrue(b)
	var paths int
	for b.Loop() {
		x := newDpkgIndex(DefaultDpkgDir)
		if _, sums, ok := x.lookup("/usr/bin/true"); !ok || sums[0] == "" {
			b.Fatal("dpkg does not list /usr/bin/true")
		}
		paths = len(x.owner)
	}
	b.ReportMetric(float64(paths), "paths")
}

// BenchmarkSubmitSide is what the opener goroutine pays per exec before
// the hand-off to a worker: opening the binary by path or through
// /proc/PID/exe.
func BenchmarkSubmitSide(b *testing.B) {
	live := exec.Command("/usr/bin/sleep", "600")
	if err := live.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { live.Process.Kill(); live.Wait() })
	time.Sleep(50 * time.Millisecond)
	sleepPath, _ := filepath.EvalSymlinks("/usr/bin/sleep")
	c := newChecker(b, Options{NoDpkg: true})
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"path", Request{Path: sleepPath}},
		{"proc-exe", Request{PID: uint32(live.Process.Pid), Path: sleepPath}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				c.open(tc.req).close()
			}
		})
	}
}

// BenchmarkCheckHot is the whole per-exec cost of a cached binary in one
// goroutine: open, stat, cache and verdict lookups.
func BenchmarkCheckHot(b *testing.B) {
	sleepPath, _ := filepath.EvalSymlinks("/usr/bin/sleep")
	c := newChecker(b, Options{})
	c.Check(context.Background(), Request{Path: sleepPath})
	for b.Loop() {
		if v := c.Check(context.Background(), Request{Path: sleepPath}).Binary; v.Status != Verified {
			b.Fatal(v)
		}
	}
}

// TestDpkgIndexMemory logs what the index keeps, for the numbers in the
// issue; it fails only if the index cannot be built.
func TestDpkgIndexMemory(t *testing.T) {
	realTrue(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := newDpkgIndex(DefaultDpkgDir)
	if _, _, ok := x.lookup("/usr/bin/true"); !ok {
		t.Fatal("dpkg does not list /usr/bin/true")
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("dpkg index: %d packages, %d paths, built in %s, %.1f MiB retained",
		len(x.pkgs), len(x.owner), time.Duration(x.buildNS.Load()), float64(after.HeapAlloc-before.HeapAlloc)/(1<<20))
	runtime.KeepAlive(x)
}

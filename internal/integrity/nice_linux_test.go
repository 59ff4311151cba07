package integrity

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// threadsAt counts this process's threads at niceness nice
// (/proc/self/task/*/stat, field 19).
func threadsAt(t *testing.T, nice int) int {
	t.Helper()
	stats, err := filepath.Glob("/proc/self/task/*/stat")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the thread ended meanwhile
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if v, err := strconv.Atoi(f[16]); err == nil && v == nice {
			n++
		}
	}
	return n
}

// TestPoolWorkersYield: the hashing workers run on threads of their own
// at niceness hashNice, and the other threads keep theirs. (A worker's
// thread ends with it, except the process's main thread, which Go parks
// instead: that one stays at hashNice, idle.)
func TestPoolWorkersYield(t *testing.T) {
	if p, err := unix.Getpriority(unix.PRIO_PROCESS, 0); err == nil && 20-p >= hashNice {
		t.Skipf("the test runs at nice %d already: the workers keep that", 20-p)
	}
	if threadsAt(t, hashNice) != 0 {
		t.Skip("this process already has threads at the workers' niceness")
	}
	c := newChecker(t, Options{NoDpkg: true})
	p := c.Start(context.Background(), 2, 8, func(Result) {})
	wait := func(want int, what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for threadsAt(t, hashNice) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d threads at nice %d, want %d", what, threadsAt(t, hashNice), hashNice, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait(2, "pool of 2 started")
	if threadsAt(t, 0) == 0 {
		t.Error("no thread left at nice 0: the priority was not the workers' own")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}

package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// tmpfs mounts a tmpfs of size bytes for the test, skipping when the
// test may not mount (not root, no CAP_SYS_ADMIN).
func tmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v); run as root", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file at path until the filesystem is full, and returns
// how much it wrote.
func fillDisk(t *testing.T, path string) int {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n := 0
	for {
		m, err := f.Write(buf)
		n += m
		if errors.Is(err, syscall.ENOSPC) {
			return n
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestCreateOnFullDisk(t *testing.T) {
	for _, tt := range []struct {
		name string
		free int // bytes left free before Create
	}{
		{"full", 0},
		{"nearly full", 200 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			home := tmpfs(t, 4<<20)
			if err := os.MkdirAll(filepath.Join(home, "sessions"), 0o700); err != nil {
				t.Fatal(err)
			}
			fillDisk(t, filepath.Join(home, "filler"))
			if tt.free > 0 {
				if err := os.Truncate(filepath.Join(home, "filler"), int64(4<<20-tt.free-64<<10)); err != nil {
					t.Fatal(err)
				}
			}
			w, err := Create(home, Meta{Mode: "run", Command: []string{"true"}})
			if err == nil {
				w.Close(nil)
				t.Fatal("Create on a full disk succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, "disk full") || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "create session ") {
				t.Errorf("error %q: want one line saying disk full", msg)
			}
			if left, _ := filepath.Glob(filepath.Join(home, "sessions", "*")); len(left) > 0 {
				t.Errorf("Create left %v behind", left)
			}
			t.Log(msg)
		})
	}
}

// faults collects what a Writer reports through OnFault.
type faults struct {
	mu   sync.Mutex
	seen []Fault
}

func (f *faults) add(x Fault) { f.mu.Lock(); f.seen = append(f.seen, x); f.mu.Unlock() }

func (f *faults) has(pred func(Fault) bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, x := range f.seen {
		if pred(x) {
			return true
		}
	}
	return false
}

// waitFor polls cond for up to d.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// TestDiskFillsWhileRecording fills a tmpfs under a recording writer. One
// function, over 80 lines, because the steps (record, fill, keep recording,
// free or not, close, read) are one story that shares its counters.
func TestDiskFillsWhileRecording(t *testing.T) {
	for _, tt := range []struct {
		name    string
		recover bool // space comes back before Close
	}{
		{"space returns", true},
		{"full until close", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old := memoryBudget
			memoryBudget = 256 << 10
			t.Cleanup(func() { memoryBudget = old })
			home := tmpfs(t, 8<<20)
			w, err := Create(home, Meta{Mode: "run", Command: []string{"agent"}})
			if err != nil {
				t.Fatal(err)
			}
			var fs faults
			w.OnFault(fs.add)
			seq := 0
			add := func(n int) {
				for range n {
					w.Add(&event.Event{TS: t0.Add(time.Duration(seq) * time.Millisecond), Kind: event.KindOpen, PID: 9, Comm: "agent",
						ExecID: "9-1", Path: fmt.Sprintf("/work/src/file-%07d.go", seq), Access: "read", Result: event.Ptr(int64(3))})
					seq++
				}
			}
			add(2000)
			time.Sleep(3 * flushInterval)
			filler := filepath.Join(home, "filler")
			fillDisk(t, filler)
			// Keep recording: at first into memory, then past the budget.
			for i := 0; i < 40 && !fs.has(func(f Fault) bool { return f.Dropping }); i++ {
				add(2000)
				time.Sleep(50 * time.Millisecond)
			}
			if !fs.has(func(f Fault) bool { return f.Cause == CauseDiskFull && f.Err != nil && !f.Dropping }) {
				t.Fatalf("no disk-full fault reported: %v", fs.seen)
			}
			if !fs.has(func(f Fault) bool { return f.Dropping }) {
				t.Fatalf("the memory budget never ran out: %v", fs.seen)
			}
			if err := w.Err(); err == nil || !strings.Contains(err.Error(), "disk full") {
				t.Errorf("Err() = %v while the disk is full", err)
			}
			if tt.recover {
				if err := os.Remove(filler); err != nil {
					t.Fatal(err)
				}
				if !waitFor(5*time.Second, func() bool { return fs.has(func(f Fault) bool { return f.Recovered }) }) {
					t.Fatalf("no recovery reported: %v", fs.seen)
				}
				if w.Err() != nil {
					t.Errorf("Err() = %v after recovery", w.Err())
				}
				add(1000)
			}
			if err := w.Close(event.Ptr(0)); err != nil {
				t.Fatalf("Close: %v", err)
			}
			total := uint64(seq)
			got, r := readSeqs(t, w.Meta().Path)
			m := r.Meta()
			lost := m.Lost[CauseDiskFull]
			t.Logf("%d events added, %d read, %d lost (disk full); faults: %v", total, len(got), lost, fs.seen)
			if lost == 0 || uint64(len(got))+lost != total || m.Events != uint64(len(got)) || !m.CleanClose {
				t.Errorf("added %d, read %d, lost %v, meta events %d, clean %v: want every event read or counted lost", total, len(got), m.Lost, m.Events, m.CleanClose)
			}
			if m.Integrity != IntegrityIntact || len(r.Damage()) > 0 {
				t.Errorf("integrity %q, damage %v: the gap the writer left is not damage", m.Integrity, r.Damage())
			}
			for s, ev := range got {
				if ev.Path != fmt.Sprintf("/work/src/file-%07d.go", s-1) {
					t.Fatalf("event %d has path %s", s, ev.Path)
				}
			}
			if tt.recover && got[total] == nil {
				t.Errorf("the last event, added after the disk recovered, was not stored")
			}
		})
	}
}

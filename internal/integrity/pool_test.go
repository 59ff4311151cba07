package integrity

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestPoolDeliversEveryExec(t *testing.T) {
	bin := copyFile(t, "/usr/bin/true", filepath.Join(t.TempDir(), "t"), 0o755)
	c := newChecker(t, Options{NoDpkg: true})
	var mu sync.Mutex
	got := map[string]Result{}
	p := c.Start(context.Background(), 2, 64, func(r Result) {
		mu.Lock()
		got[r.ExecID] = r
		mu.Unlock()
	})
	for i := range 50 {
		p.Submit(Request{ExecID: fmt.Sprint(i), Path: bin})
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("%d results, want 50", len(got))
	}
	for id, r := range got {
		if r.Binary.Status != Unknown || r.Binary.SHA256 != sha(t, bin) {
			t.Fatalf("exec %s: %+v", id, r.Binary)
		}
	}
	if s := c.Stats(); s.Misses != 1 || s.Hits != 49 {
		t.Errorf("cache %+v, want 1 miss and 49 hits", s)
	}
	if p.Submit(Request{ExecID: "late", Path: bin}) || got["late"].Binary.Status != Unavailable {
		t.Errorf("submit after close: %+v", got["late"])
	}
}

// TestPoolFullQueue holds the only worker in deliver with one exec queued
// behind it: the next Submit must not wait.
func TestPoolFullQueue(t *testing.T) {
	bin := copyFile(t, "/usr/bin/true", filepath.Join(t.TempDir(), "t"), 0o755)
	c := newChecker(t, Options{NoDpkg: true})
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	got := map[string]Result{}
	p := c.Start(context.Background(), 1, 1, func(r Result) {
		mu.Lock()
		got[r.ExecID] = r
		mu.Unlock()
		if r.ExecID == "1" {
			close(started)
			<-release
		}
	})
	p.Submit(Request{ExecID: "1", Path: bin})
	<-started
	if !p.Submit(Request{ExecID: "2", Path: bin}) {
		t.Fatal("queue of one refused its first exec")
	}
	begin := time.Now()
	if p.Submit(Request{ExecID: "3", Path: bin}) {
		t.Fatal("full queue accepted an exec")
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Submit on a full queue took %s", d)
	}
	mu.Lock()
	if r := got["3"]; r.Binary.Status != Unavailable || r.Binary.Reason != "hash queue full" {
		t.Errorf("refused exec: %+v", r.Binary)
	}
	mu.Unlock()
	close(release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got["2"].Binary.Status != Unknown {
		t.Errorf("queued exec: %+v", got["2"].Binary)
	}
}

// TestMergeSeenConcurrent: two sessions ending at once both keep their
// sightings.
func TestMergeSeenConcurrent(t *testing.T) {
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			p := fmt.Sprintf("/opt/tool%d", i)
			if err := store.MergeSeen("h", map[string]Seen{p: {SHA256: "x", FirstSHA256: "x"}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen, err := store.Seen("h")
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 8 {
		t.Errorf("%d sightings kept, want 8: %v", len(seen), seen)
	}
}

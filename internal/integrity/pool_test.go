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

// TestPoolFullQueue fills each queue in turn and checks that Submit
// never waits: with the only worker held in deliver, an exec of a file
// already hashed is judged by the opener, one of a new file is refused;
// with the opener held too, Submit itself refuses.
func TestPoolFullQueue(t *testing.T) {
	bin := copyFile(t, "/usr/bin/true", filepath.Join(t.TempDir(), "t"), 0o755)
	other := copyFile(t, "/usr/bin/false", filepath.Join(t.TempDir(), "f"), 0o755)
	c := newChecker(t, Options{NoDpkg: true})
	hold := map[string]chan struct{}{"1": make(chan struct{}), "cached": make(chan struct{})}
	release := make(chan struct{})
	var mu sync.Mutex
	got := map[string]Result{}
	p := c.Start(context.Background(), 1, 1, func(r Result) {
		mu.Lock()
		got[r.ExecID] = r
		mu.Unlock()
		if h, ok := hold[r.ExecID]; ok {
			close(h)
			<-release
		}
	})
	result := func(id string) Result {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			mu.Lock()
			r, ok := got[id]
			mu.Unlock()
			if ok {
				return r
			}
		}
		t.Fatalf("exec %s never delivered", id)
		return Result{}
	}
	p.Submit(Request{ExecID: "1", Path: bin})
	<-hold["1"]
	p.Submit(Request{ExecID: "2", Path: bin})
	for len(p.jobs) == 0 {
		time.Sleep(time.Millisecond)
	}
	p.Submit(Request{ExecID: "3", Path: other})
	if r := result("3"); r.Binary.Status != Unavailable || r.Binary.Reason != "hash queue full" {
		t.Errorf("new file behind a full hash queue: %+v", r.Binary)
	}
	p.Submit(Request{ExecID: "cached", Path: bin})
	<-hold["cached"]
	if r := result("cached"); r.Binary.Status != Unknown || r.Binary.SHA256 != sha(t, bin) {
		t.Errorf("hashed file behind a full hash queue: %+v", r.Binary)
	}
	p.Submit(Request{ExecID: "4", Path: bin})
	begin := time.Now()
	if p.Submit(Request{ExecID: "5", Path: bin}) {
		t.Error("full request queue accepted an exec")
	}
	if d := time.Since(begin); d > time.Second {
		t.Errorf("Submit on a full queue took %s", d)
	}
	if r := result("5"); r.Binary.Reason != "request queue full" {
		t.Errorf("refused exec: %+v", r.Binary)
	}
	close(release)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"2", "4"} {
		if r := result(id); r.Binary.Status != Unknown {
			t.Errorf("queued exec %s: %+v", id, r.Binary)
		}
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

// TestCacheSeesRewrite: rewriting a file in place at the same size is a
// new version to the cache (mtime and ctime), not a hit.
func TestCacheSeesRewrite(t *testing.T) {
	bin := copyFile(t, "/usr/bin/true", filepath.Join(t.TempDir(), "t"), 0o755)
	c := newChecker(t, Options{NoDpkg: true})
	before := c.Check(context.Background(), Request{Path: bin}).Binary.SHA256
	c.Check(context.Background(), Request{Path: bin})
	flipByte(t, bin)
	after := c.Check(context.Background(), Request{Path: bin}).Binary.SHA256
	if before == after || after != sha(t, bin) {
		t.Errorf("after a same-size rewrite the hash is %s (before %s, file %s)", after, before, sha(t, bin))
	}
	if s := c.Stats(); s.Hits != 1 || s.Misses != 2 {
		t.Errorf("cache %+v, want 1 hit and 2 misses", s)
	}
}

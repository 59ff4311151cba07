package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// TestTail: a Tail hands over what a writer still at work committed,
// batch after batch, each event once and in order; a path named through a
// descriptor opened in an earlier batch resolves as a full read resolves
// it; and the whole is what Events reads once the session is closed.
func TestTail(t *testing.T) {
	home := t.TempDir()
	w, err := Create(home, Meta{Mode: "run", Command: []string{"agent"}, StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(nil)
	add := func(from, to int) {
		for i := from; i < to; i++ {
			e := &event.Event{TS: time.Now(), Kind: event.KindOpen, PID: 7, Comm: "agent", ExecID: event.ExecID(7, 1),
				Path: fmt.Sprintf("/p/f%d", i), Access: "read", Result: event.Ptr(int64(100 + i%50))}
			if i == 10 {
				e.Path, e.Result = "/p/dir", event.Ptr(int64(200)) // which later events name files through
			}
			if i >= 700 && i%7 == 0 {
				e.Path, e.Result = "/proc/self/fd/200/x", event.Ptr(int64(-2))
			}
			e.Complete()
			w.Add(e)
		}
	}
	flushed := func(n uint64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			r, err := Open(w.Meta().Path)
			if err == nil {
				got := r.Meta().Events
				r.Close()
				if got >= n {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d events not flushed within 5 s", n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	add(0, 300)
	flushed(300)
	r, err := Open(w.Meta().Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tail, err := r.Tail()
	if err != nil {
		t.Fatal(err)
	}
	var got []*event.Event
	next := func() int {
		t.Helper()
		n, err := tail.Next(func(e *event.Event) error { got = append(got, e); return nil })
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := next(); n != 300 {
		t.Fatalf("first read: %d events, want 300", n)
	}
	if n := next(); n != 0 {
		t.Fatalf("a read with nothing new: %d events", n)
	}
	add(300, 1000)
	flushed(1000)
	if n := next(); n != 700 {
		t.Fatalf("second read: %d events, want 700", n)
	}
	var all []*event.Event
	if err := r.Events(Filter{}, func(e *event.Event) error { all = append(all, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(all) != len(got) {
		t.Fatalf("the tail read %d events, a full read %d", len(got), len(all))
	}
	for i := range all {
		if got[i].Seq != uint64(i+1) || got[i].Path != all[i].Path {
			t.Fatalf("event %d: tail seq %d %q, full read seq %d %q", i, got[i].Seq, got[i].Path, all[i].Seq, all[i].Path)
		}
	}
	if got[700].Path != "/p/dir/x" {
		t.Errorf("a path through an fd opened in an earlier batch reads %q, want /p/dir/x", got[700].Path)
	}
}

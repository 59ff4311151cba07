package session

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// smallSession writes the sample events, a verdict and a leftover to a
// session and rewrites it with 512-byte pages, so a fuzzer's mutations
// land on b-tree structure rather than on 16 KiB of free space.
func smallSession(t testing.TB) []byte {
	t.Helper()
	w := newSession(t, filepath.Join(t.TempDir(), "home"))
	for _, ev := range sampleEvents() {
		w.Add(ev)
	}
	w.AddVerdict(Verdict{ExecID: event.ExecID(101, 5000), Role: "binary", Path: "/usr/bin/npm", Status: "unknown", Data: []byte(`{}`)})
	w.SetLeftovers([]Leftover{{PID: 7, ExecID: "7-1", Comm: "sleep", Argv: []string{"sleep", "9"}}})
	w.SetLost("ringbuf", 1)
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", w.Meta().Path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"PRAGMA page_size = 512", "VACUUM"} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	data, err := os.ReadFile(w.Meta().Path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// FuzzSessionFile: whatever a session file holds (one the traced tree
// planted, or a damaged one), Open, every event, the verdicts, the
// leftovers and the damage read without a panic, and within a bound.
// Nearly every input reaches new code in SQLite, which the fuzzer then
// minimizes for a minute by default: run it with -fuzzminimizetime=50x
// (make fuzz does).
func FuzzSessionFile(f *testing.F) {
	f.Add(smallSession(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		path := filepath.Join(t.TempDir(), "s.db")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Open(path)
		if err != nil {
			return
		}
		defer r.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		err = r.EventsContext(ctx, Filter{}, func(*event.Event) error { return nil })
		if ctx.Err() != nil {
			t.Fatalf("reading took more than %v (%v)", time.Since(start), err)
		}
		r.Verdicts()
		r.Leftovers()
		r.Damage()
		r.Meta()
	})
}

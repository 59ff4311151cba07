package session

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// A file's name does not decide what "last" is (issue 31): the traced
// tree can write the user's sessions directory.

// TestFIFONotLast: a FIFO named like the newest session is listed with
// its error, never opened, and is not "last".
func TestFIFONotLast(t *testing.T) {
	home := t.TempDir()
	good := record(t, home, sampleEvents())
	fifo := filepath.Join(filepath.Dir(good), "20991231T235959-f1f0f1.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	within(t, 10*time.Second, "List beside a FIFO", func() {
		list, err := List(home)
		if err != nil || len(list) != 2 {
			t.Errorf("List = %d sessions, %v; want the session and the FIFO, with an error", len(list), err)
		}
	})
	within(t, 10*time.Second, "Resolve(last) beside a FIFO", func() {
		if got, err := Resolve(home, "last"); err != nil || got != good {
			t.Errorf("Resolve(last) = %q, %v; want %s", got, err, good)
		}
	})
}

// TestLastByRecordNotName: a copy of an old session planted under a name
// that claims a later time is not "last", whatever its name says.
func TestLastByRecordNotName(t *testing.T) {
	home := t.TempDir()
	old, err := Create(home, Meta{Mode: "run", Command: []string{"true"}, StartedAt: time.Now().Add(-48 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	old.Close(event.Ptr(0))
	w, err := Create(home, Meta{Mode: "run", Command: []string{"sh"}, StartedAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sampleEvents() {
		w.Add(ev)
	}
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	real := w.Meta().Path
	data, err := os.ReadFile(old.Meta().Path)
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(filepath.Dir(real), "20991231T235959-000000.db")
	if err := os.WriteFile(planted, data, 0o600); err != nil {
		t.Fatal(err)
	}
	// A file renamed to a name of this very second, after the real
	// session: its name is not its own id.
	renamed := filepath.Join(filepath.Dir(real), time.Now().UTC().Add(time.Second).Format("20060102T150405")+"-000001.db")
	if err := os.WriteFile(renamed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Resolve(home, "last")
	if err != nil || got != real {
		t.Fatalf("Resolve(last) = %q, %v; want the session recorded last, %s", got, err, real)
	}
}

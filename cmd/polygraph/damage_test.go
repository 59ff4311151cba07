package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// A damaged session degrades, never stops, and never hangs a reader
// (issue 31).

// within runs f and fails the test if it has not returned after d: a
// verb that blocks must fail the test, not hang the run (the goroutine is
// left behind).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

// sweepSession records a session with every table in use: events over
// many chunks, exec verdicts, leftovers and lost counters.
func sweepSession(t *testing.T) session.Meta {
	t.Helper()
	home := t.TempDir()
	t.Setenv("POLYGRAPH_HOME", home)
	w, err := session.Create(home, session.Meta{Mode: "run", Command: []string{"sh", "-c", "make"}, Home: "/home/dev", Cwd: "/home/dev/p", StartedAt: testStart})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range testEvents() {
		w.Add(e)
	}
	for i := range 8000 {
		e := &event.Event{TS: testStart.Add(time.Duration(100+i) * time.Millisecond), Kind: event.KindOpen, PID: 101, TID: 101, PPID: 1,
			Comm: "npm", ExecID: event.ExecID(101, 1), Path: fmt.Sprintf("/home/dev/p/node_modules/m%04d/index.js", i), Access: "read", Result: event.Ptr(int64(7))}
		if i%1000 == 0 {
			e.Path = "/home/dev/.ssh/id_ed25519" // a finding to lose
		}
		w.Add(e)
	}
	w.AddVerdict(session.Verdict{ExecID: event.ExecID(101, 1), Role: "binary", Path: "/usr/bin/npm", SHA256: strings.Repeat("ab", 32), Status: "unknown", Data: []byte(`{"role":"binary","path":"/usr/bin/npm","status":"unknown"}`)})
	w.SetLeftovers([]session.Leftover{{PID: 202, ExecID: event.ExecID(202, 1), Comm: "sleep", Argv: []string{"sleep", "60"}}})
	w.SetLost("ringbuf", 2)
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	return w.Meta()
}

// TestDamagedFileSweep flips one byte in each page of a real session
// file (a byte of the page's header, and one further in), and reads each
// copy with events, report and sessions under a timeout: none may hang,
// and whenever events can read the file, report must produce a report.
func TestDamagedFileSweep(t *testing.T) {
	m := sweepSession(t)
	content, err := os.ReadFile(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint16(content[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := len(content) / pageSize
	t.Logf("%s: %d bytes, %d pages of %d", m.ID, len(content), pages, pageSize)
	dir := filepath.Dir(m.Path)
	var opened, reported int
	for page := range pages {
		head := page * pageSize
		if page == 0 {
			head = 100 // past the file header, on the schema's b-tree page
		}
		for _, off := range []int{head + 3, page*pageSize + (page*977+pageSize/3)%pageSize} {
			bad := append([]byte(nil), content...)
			bad[off] ^= 0x5a
			if err := os.WriteFile(m.Path, bad, 0o600); err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("page %d, byte %d", page+1, off-page*pageSize)
			var evErr, repErr error
			within(t, 60*time.Second, what+": events last", func() {
				evErr = runEvents(context.Background(), &eventsOptions{}, []string{"last"}, &bytes.Buffer{}, &bytes.Buffer{})
			})
			within(t, 60*time.Second, what+": report last", func() {
				repErr = runReport(context.Background(), &reportOptions{transcript: "none", format: "text"}, []string{"last"}, &bytes.Buffer{})
			})
			within(t, 60*time.Second, what+": sessions", func() {
				if err := runSessions(context.Background(), &sessionsOptions{}, nil, &bytes.Buffer{}); err != nil {
					t.Errorf("%s: sessions: %v", what, err)
				}
			})
			if evErr == nil {
				opened++
				if repErr != nil {
					t.Errorf("%s: events reads the file, but report fails: %v", what, repErr)
				} else {
					reported++
				}
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				t.Fatalf("%s: the sessions directory holds %d files, want the session alone", what, len(ents))
			}
		}
	}
	t.Logf("%d damaged copies: events read %d, report produced %d", 2*pages, opened, reported)
}

// TestDamagedVerdictsStillReport: one changed byte in the exec_verdicts
// table once stopped report ("exec verdicts: session file is damaged")
// while events read every event. The report is produced, from what is
// intact, and says what was skipped.
func TestDamagedVerdictsStillReport(t *testing.T) {
	m := sweepSession(t)
	db, err := sql.Open("sqlite", m.Path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var page, size int
	err = db.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = 'exec_verdicts'").Scan(&page)
	if err == nil {
		err = db.QueryRow("PRAGMA page_size").Scan(&size)
	}
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	content[(page-1)*size] ^= 0x01 // the page type: a leaf becomes no b-tree page at all
	if err := os.WriteFile(m.Path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := runReport(context.Background(), &reportOptions{transcript: "none", format: "text"}, []string{m.Path}, &out); err != nil {
		t.Fatalf("report: %v", err)
	}
	for _, want := range []string{"exec verdicts", "sensitive-read"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}

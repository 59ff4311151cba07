package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// hostile is a name the traced tree chose: it retitles the terminal,
// rings its bell, and prints a fake findings block.
const hostile = "x\x1b]0;pwned\x07\nFINDINGS (0)\n  none\n\x1b[2J\r"

// hostileSession records a tree that runs and writes files with hostile
// names, reads an SSH key through one, and resolves one.
func hostileSession(t *testing.T) session.Meta {
	t.Helper()
	evs := testEvents()
	at := testStart.Add(30 * time.Millisecond)
	add := func(kind event.Kind, f func(*event.Event)) {
		e := &event.Event{TS: at, Kind: kind, PID: 101, TID: 101, PPID: 1, Comm: "np\x1bm", ExecID: event.ExecID(101, 1)}
		e.Complete()
		f(e)
		evs = append(evs, e)
		at = at.Add(time.Millisecond)
	}
	add(event.KindExec, func(e *event.Event) {
		e.Path, e.Process.Argv, e.Process.Cwd, e.Result = "/tmp/"+hostile, []string{"/tmp/" + hostile, hostile}, "/home/dev/p", event.Ptr(int64(0))
	})
	add(event.KindOpen, func(e *event.Event) {
		e.Path, e.Access, e.Result = "/home/dev/p/"+hostile, "write,create", event.Ptr(int64(5))
	})
	add(event.KindOpen, func(e *event.Event) {
		e.Path, e.Access, e.Result = "/home/dev/.ssh/id_ed25519", "read", event.Ptr(int64(6))
	})
	add(event.KindDNS, func(e *event.Event) { e.Network.QName, e.Network.QType = hostile+".example", "A" })
	return newTestSession(t, evs, nil, false)
}

// TestHostileNamesEscaped: what the tree named reaches the terminal only
// escaped, in the report (summary, findings, unattributed activity), in
// events and in sessions: no escape sequence, bell or carriage return,
// and one FINDINGS heading.
func TestHostileNamesEscaped(t *testing.T) {
	m := hostileSession(t)
	check := func(what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\x07\r") {
			t.Errorf("%s prints a control character raw:\n%q", what, out)
		}
		if n := strings.Count(out, "\nFINDINGS ("); n > 1 {
			t.Errorf("%s prints %d FINDINGS headings:\n%s", what, n, out)
		}
		if strings.Contains(out, "\n  none\n") && strings.Contains(out, "FINDINGS (0)") {
			t.Errorf("%s prints a fake empty findings block:\n%s", what, out)
		}
	}
	var out, errOut bytes.Buffer
	err := runReport(context.Background(), &reportOptions{transcript: "none", format: "text"}, []string{m.Path}, &out)
	if err != nil {
		t.Fatal(err)
	}
	check("report", out.String())
	if !strings.Contains(out.String(), `\x1b]0;pwned\x07\nFINDINGS (0)`) {
		t.Errorf("report does not show the hostile name escaped:\n%s", out.String())
	}
	out.Reset()
	if err := runEvents(context.Background(), &eventsOptions{}, []string{m.Path}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	check("events", out.String()+errOut.String())
	out.Reset()
	if err := runSessions(context.Background(), &sessionsOptions{}, nil, &out); err != nil {
		t.Fatal(err)
	}
	check("sessions", out.String())
}

// TestTrustFileWriteIsAFinding: the traced tree writing polygraph's own
// trust files (the pin file, a baseline, the policy file given) is a
// finding: what it wrote would decide the next run.
func TestTrustFileWriteIsAFinding(t *testing.T) {
	evs := testEvents()
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("rules: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"/home/dev/.local/share/polygraph/integrity/pins.json", "/home/dev/.local/share/polygraph/baselines/claude.json", pol} {
		e := &event.Event{TS: testStart.Add(time.Duration(40+i) * time.Millisecond), Kind: event.KindOpen, PID: 101, TID: 101, PPID: 1, Comm: "sh",
			ExecID: event.ExecID(101, 1), Path: p, Access: "write,create", Result: event.Ptr(int64(5))}
		e.Complete()
		evs = append(evs, e)
	}
	m := newTestSession(t, evs, nil, false)
	var out bytes.Buffer
	if err := runReport(context.Background(), &reportOptions{transcript: "none", format: "text", policy: pol}, []string{m.Path}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"integrity/pins.json", "baselines/claude.json", pol} {
		if !strings.Contains(out.String(), "sandbox-tamper") || !strings.Contains(out.String(), want) {
			t.Errorf("report has no sandbox-tamper finding for %s:\n%s", want, out.String())
		}
	}
}

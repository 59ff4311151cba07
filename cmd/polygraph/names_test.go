package main

import (
	"bytes"
	"context"
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

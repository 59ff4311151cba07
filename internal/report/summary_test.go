package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

// summaryEvents is a small tree's life: the root forks, its children exec
// six programs, open, rename, link, connect, look up and send.
func summaryEvents(t0 time.Time) []*event.Event {
	var evs []*event.Event
	at := func(e *event.Event) {
		e.TS = t0.Add(time.Duration(len(evs)) * time.Millisecond)
		evs = append(evs, e)
	}
	at(&event.Event{Kind: event.KindFork, PID: 100, Process: &event.Process{ChildPID: 101}})
	for prog, n := range map[string]int{"/bin/sh": 3, "/usr/bin/git": 3, "/usr/bin/a": 1, "/usr/bin/b": 1, "/usr/bin/c": 1, "/usr/bin/d": 1} {
		for range n {
			at(&event.Event{Kind: event.KindExec, PID: 101, Path: prog})
		}
	}
	ok, refused := event.Ptr(int64(3)), event.Ptr(int64(-111))
	at(&event.Event{Kind: event.KindOpen, PID: 101, Path: "/tmp/x", Access: "write", Result: ok})
	at(&event.Event{Kind: event.KindOpen, PID: 101, Path: "/tmp/y", Access: "write,create", Result: ok})
	at(&event.Event{Kind: event.KindOpen, PID: 101, Path: "/dev/null", Access: "write", Result: ok}) // a pseudo file: not "written"
	at(&event.Event{Kind: event.KindOpen, PID: 101, Path: "/etc/passwd", Access: "read", Result: ok})
	at(&event.Event{Kind: event.KindOpen, PID: 101, Path: "/etc/passwd", Access: "read", Result: ok})
	at(&event.Event{Kind: event.KindOpen, PID: 101, Path: "/etc/shadow", Access: "read", Result: event.Ptr(int64(-13))})
	at(&event.Event{Kind: event.KindRename, PID: 101, Path: "/tmp/a.tmp", Path2: "/tmp/a", Result: event.Ptr(int64(0))})
	at(&event.Event{Kind: event.KindRename, PID: 101, Path: "/tmp/b.tmp", Path2: "/tmp/b", Result: refused}) // failed: nothing written
	at(&event.Event{Kind: event.KindLink, PID: 101, Path: "/tmp/l", Path2: "/tmp/x", Result: event.Ptr(int64(0))})
	at(&event.Event{Kind: event.KindConnect, PID: 101, Network: &event.Network{Family: "ipv4", Addr: "93.184.216.34", Port: 443}, Result: event.Ptr(int64(0))})
	at(&event.Event{Kind: event.KindConnect, PID: 101, Network: &event.Network{Family: "ipv6", Addr: "2001:db8::1", Port: 80}, Result: event.Ptr(int64(-115))}) // EINPROGRESS
	at(&event.Event{Kind: event.KindConnect, PID: 101, Network: &event.Network{Family: "ipv4", Addr: "10.0.0.1", Port: 22}, Result: refused})
	at(&event.Event{Kind: event.KindConnect, PID: 101, Network: &event.Network{Family: "unix", Addr: "/run/x.sock"}, Result: event.Ptr(int64(0))})
	at(&event.Event{Kind: event.KindDNS, PID: 101, Network: &event.Network{QName: "example.com"}})
	at(&event.Event{Kind: event.KindDNS, PID: 101, Network: &event.Network{}})
	at(&event.Event{Kind: event.KindNet, PID: 101, Network: &event.Network{BytesSent: 100, BytesRecv: 2000}})
	at(&event.Event{Kind: event.KindNet, PID: 101, Network: &event.Network{BytesSent: 100, BytesRecv: 2000}})
	at(&event.Event{Kind: event.KindExit, PID: 101, Process: &event.Process{ExitCode: event.Ptr(0)}}) // not the root's
	at(&event.Event{Kind: event.KindExit, PID: 100, Process: &event.Process{ExitCode: event.Ptr(3)}})
	return evs
}

// TestSummary: the summary counts what the events show and prints it on
// one screen, exactly.
func TestSummary(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	evs := summaryEvents(t0)
	s := NewSummary(100)
	for _, e := range evs {
		s.Observe(e)
	}
	meta := manifest.Meta{ID: "s1", Path: "/p/s1.db", Command: []string{"claude", "-p", "fix\nit"},
		StartedAt: t0, EndedAt: t0.Add(1500 * time.Millisecond), Lost: map[string]uint64{"ringbuf": 2, "queue": 1},
		Unavailable: []string{"bytes per peer (kernel ≥ 6.3)"}}
	s.Finish(meta, []manifest.Leftover{{PID: 200, Argv: []string{"sleep", "60"}}}, nil)

	var b bytes.Buffer
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`polygraph: session s1
  file       /p/s1.db
  command    claude -p fix\nit  (exit 3, 1.5s)
  processes  2 started, 10 execs: /bin/sh×3, /usr/bin/git×3, /usr/bin/a×1, /usr/bin/b×1, /usr/bin/c×1, … 1 more
  files      4 written, 1 read, 1 failed opens
             /tmp/a
             /tmp/l
             /tmp/x
             /tmp/y
  network    93.184.216.34:443, [2001:db8::1]:80 (sent 200 B, received 3.9 KiB)
  dns        example.com
  events     %d recorded, 3 lost
  left running (still alive when tracing stopped):
             pid 200  sleep 60
  not recorded on this kernel: bytes per peer (kernel ≥ 6.3)
`, len(evs))
	if got := b.String(); got != want {
		t.Errorf("summary text:\n%s\nwant:\n%s", got, want)
	}
	if s.Execs != 10 || s.Programs["/bin/sh"] != 3 || s.LostTotal != 3 || s.Events != uint64(len(evs)) {
		t.Errorf("execs %d, sh %d, lost %d, events %d", s.Execs, s.Programs["/bin/sh"], s.LostTotal, s.Events)
	}

	// The session's own exit code, when it has one, wins over the root's exit event.
	s.Finish(meta, nil, event.Ptr(0))
	if *s.ExitCode != 0 || len(s.LeftRunning) != 0 {
		t.Errorf("after Finish with exit 0: exit %d, left %v", *s.ExitCode, s.LeftRunning)
	}
}

// TestSummaryEdges: a summary's status line, its long lists, and the JSON
// of an empty one (lists, never null).
func TestSummaryEdges(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		name  string
		evs   []*event.Event
		meta  manifest.Meta
		wants []string
	}{
		{"killed", []*event.Event{{TS: t0, Kind: event.KindExit, PID: 7, Process: &event.Process{Signal: 9}}},
			manifest.Meta{ID: "k", StartedAt: t0.Add(-2 * time.Second)},
			[]string{"  command      (killed by signal 9, 2s)\n", "  processes  1 started, no execs\n", "  network    none (sent 0 B, received 0 B)\n", "  events     1 recorded, 0 lost\n"}},
		{"unknown status, no start", nil, manifest.Meta{ID: "u", Command: []string{strings.Repeat("x", 120)}},
			[]string{"  command    " + strings.Repeat("x", 99) + "…  (unknown, )\n"}},
		{"many files", manyWrites(t0, 11), manifest.Meta{ID: "m"},
			[]string{"  files      11 written, 0 read, 0 failed opens\n", "             /w/07\n             … 3 more\n"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewSummary(7)
			for _, e := range c.evs {
				s.Observe(e)
			}
			s.Finish(c.meta, nil, nil)
			var b bytes.Buffer
			if err := s.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.wants {
				if !strings.Contains(b.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, b.String())
				}
			}
			if strings.Contains(b.String(), "dns ") || strings.Contains(b.String(), "left running") {
				t.Errorf("a summary with no lookups and no leftovers shows them:\n%s", b.String())
			}
		})
	}

	s := NewSummary(0)
	s.Finish(manifest.Meta{ID: "e"}, nil, nil)
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"files_written":[]`, `"hosts":[]`, `"dns":[]`, `"left_running":[]`, `"processes":1`, `"session":"e"`} {
		if !bytes.Contains(js, []byte(w)) {
			t.Errorf("summary JSON lacks %s: %s", w, js)
		}
	}
	if bytes.Contains(js, []byte("exit_code")) || bytes.Contains(js, []byte("rootPID")) {
		t.Errorf("summary JSON shows an unknown exit code or private state: %s", js)
	}
}

// manyWrites is n successful opens for writing, of /w/00 on.
func manyWrites(t0 time.Time, n int) []*event.Event {
	var evs []*event.Event
	for i := range n {
		evs = append(evs, &event.Event{TS: t0, Kind: event.KindOpen, PID: 7, Path: fmt.Sprintf("/w/%02d", i), Access: "write", Result: event.Ptr(int64(3))})
	}
	return evs
}

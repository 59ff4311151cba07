package correlate

import (
	"fmt"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// sim builds a synthetic session: events with gap-free seqs, times in
// milliseconds from t0, and image ids the way the sensor makes them.
type sim struct {
	t0   time.Time
	seq  uint64
	n    int
	evs  []*event.Event
	pids map[string]uint32 // exec id -> pid
}

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func newSim() *sim { return &sim{t0: t0, pids: map[string]uint32{}} }

func (s *sim) at(ms int) time.Time { return s.t0.Add(time.Duration(ms) * time.Millisecond) }

func (s *sim) add(ms int, e *event.Event) *event.Event {
	s.seq++
	e.Seq = s.seq
	e.TS = s.at(ms)
	e.Complete()
	if e.TID == 0 {
		e.TID = e.PID
	}
	s.evs = append(s.evs, e)
	return e
}

func (s *sim) id(pid uint32) string {
	s.n++
	id := fmt.Sprintf("%d-%d", pid, 1000+s.n)
	s.pids[id] = pid
	return id
}

// root starts the session's command: pid execs argv (its pre-exec image,
// the shim, is never seen).
func (s *sim) root(ms int, pid uint32, argv ...string) string {
	id := s.id(pid)
	s.add(ms, &event.Event{Kind: event.KindExec, PID: pid, Comm: base(argv[0]), ExecID: id, ParentExecID: fmt.Sprintf("%d-1", pid),
		Path: argv[0], Process: &event.Process{Argv: argv}})
	return id
}

// spawn forks a child of image parent and, when argv is given, execs it.
// It returns the child's last image.
func (s *sim) spawn(ms int, parent string, pid uint32, argv ...string) string {
	ppid := s.pids[parent]
	child := s.id(pid)
	s.add(ms, &event.Event{Kind: event.KindFork, PID: ppid, ExecID: parent, Process: &event.Process{ChildPID: pid, ChildExecID: child}})
	if len(argv) == 0 {
		return child
	}
	return s.exec(ms, child, argv...)
}

// exec replaces image id (same pid) with argv.
func (s *sim) exec(ms int, id string, argv ...string) string {
	pid := s.pids[id]
	next := s.id(pid)
	s.add(ms, &event.Event{Kind: event.KindExec, PID: pid, Comm: base(argv[0]), ExecID: next, ParentExecID: id, Path: "/usr/bin/" + base(argv[0]), Process: &event.Process{Argv: argv}})
	return next
}

func (s *sim) open(ms int, id, path, access string, result int64) *event.Event {
	return s.add(ms, &event.Event{Kind: event.KindOpen, PID: s.pids[id], ExecID: id, Path: path, Access: access, Result: event.Ptr(result)})
}

func (s *sim) file(ms int, kind event.Kind, id, path, path2 string) *event.Event {
	return s.add(ms, &event.Event{Kind: kind, PID: s.pids[id], ExecID: id, Path: path, Path2: path2, Result: event.Ptr(int64(0))})
}

func (s *sim) exit(ms int, id string, code int) *event.Event {
	return s.add(ms, &event.Event{Kind: event.KindExit, PID: s.pids[id], ExecID: id, Process: &event.Process{ExitCode: event.Ptr(code)}})
}

func (s *sim) connect(ms int, id, addr string, port uint16) *event.Event {
	return s.add(ms, &event.Event{Kind: event.KindConnect, PID: s.pids[id], ExecID: id, Result: event.Ptr(int64(-115)), Network: &event.Network{Family: "ipv4", Proto: "tcp", Addr: addr, Port: port}})
}

func (s *sim) net(ms int, id, addr string, port uint16, sent, recv uint64) *event.Event {
	return s.add(ms, &event.Event{Kind: event.KindNet, PID: s.pids[id], ExecID: id, Network: &event.Network{Family: "ipv4", Addr: addr, Port: port, BytesSent: sent, BytesRecv: recv}})
}

func (s *sim) dns(ms int, id, qname string, answers ...string) *event.Event {
	return s.add(ms, &event.Event{Kind: event.KindDNS, PID: s.pids[id], ExecID: id, Network: &event.Network{QName: qname, QType: "A", Answers: answers}})
}

func base(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}

// call makes a tool call spanning [start, end] ms.
func call(id string, kind transcript.Kind, tool string, start, end int) *transcript.ToolCall {
	return &transcript.ToolCall{ID: id, Kind: kind, Tool: tool, StartedAt: t0.Add(time.Duration(start) * time.Millisecond), EndedAt: t0.Add(time.Duration(end) * time.Millisecond)}
}

func shellCall(id, cmd string, start, end int) *transcript.ToolCall {
	tc := call(id, transcript.KindShell, "Bash", start, end)
	tc.Command = cmd
	return tc
}

func pathCall(id string, kind transcript.Kind, tool, path string, start, end int) *transcript.ToolCall {
	tc := call(id, kind, tool, start, end)
	tc.Paths = []string{path}
	return tc
}

const (
	home    = "/home/u"
	project = "/home/u/proj"
)

func meta() session.Meta {
	return session.Meta{Cwd: project, Home: home, RootPID: 100, Mode: "run"}
}

func tr(path string, calls ...*transcript.ToolCall) *transcript.Transcript {
	return &transcript.Transcript{Path: path, Cwd: project, ToolCalls: calls}
}

// want checks one event's attribution.
func want(t *testing.T, res *Result, e *event.Event, reason Reason, callID string) {
	t.Helper()
	at := res.Of(e.Seq)
	if at == nil {
		t.Fatalf("seq %d: no attribution", e.Seq)
	}
	if at.Reason != reason || at.ToolCallID != callID {
		t.Errorf("seq %d %s %s%v: got %s %q (%s), want %s %q", e.Seq, e.Kind, e.Path, e.Args(), at.Reason, at.ToolCallID, at.Detail, reason, callID)
	}
}

// wantAll checks the attribution of every event of images ids.
func wantAll(t *testing.T, res *Result, evs []*event.Event, reason Reason, callID string, ids ...string) {
	t.Helper()
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	n := 0
	for _, e := range evs {
		if set[e.ExecID] && e.Kind != event.KindFork {
			n++
			want(t, res, e, reason, callID)
		}
	}
	if n == 0 {
		t.Fatalf("no events of %v", ids)
	}
}

// wantExecs checks the attribution of the exec and exit events of images ids.
func wantExecs(t *testing.T, res *Result, evs []*event.Event, reason Reason, callID string, ids ...string) {
	t.Helper()
	set := map[string]bool{}
	for _, id := range ids {
		set[id] = true
	}
	for _, e := range evs {
		if set[e.ExecID] && (e.Kind == event.KindExec || e.Kind == event.KindExit) {
			want(t, res, e, reason, callID)
		}
	}
}

// consistent checks the invariants every Result keeps.
func consistent(t *testing.T, evs []*event.Event, res *Result) {
	t.Helper()
	if res.Attributions.Len() != len(evs) {
		t.Fatalf("%d attributions for %d events", res.Attributions.Len(), len(evs))
	}
	total := 0
	for _, n := range res.Counts {
		total += n
	}
	if total != len(evs) {
		t.Errorf("counts sum to %d, want %d", total, len(evs))
	}
	listed := map[uint64]bool{}
	for _, e := range res.Unattributed {
		listed[e.Seq] = true
	}
	late := 0
	for i, at := range res.Attributions.All() {
		if i > 0 && at.Seq <= res.Attributions.At(i-1).Seq {
			t.Fatalf("attributions out of order at %d", i)
		}
		if (at.Reason == ReasonUnattributed || at.AfterReturn) != listed[at.Seq] {
			t.Errorf("seq %d (%s, after-return %v) listed in Unattributed: %v", at.Seq, at.Reason, at.AfterReturn, listed[at.Seq])
		}
		if at.AfterReturn {
			late++
		}
		if (at.ToolCallID != "") != (at.Reason == ReasonLineage || at.Reason == ReasonInProcess) {
			t.Errorf("seq %d: reason %s with call %q", at.Seq, at.Reason, at.ToolCallID)
		}
	}
	if late != res.AfterReturn {
		t.Errorf("AfterReturn %d, counted %d", res.AfterReturn, late)
	}
}

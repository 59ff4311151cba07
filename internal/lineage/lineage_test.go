package lineage

import (
	"slices"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// session is a small tree, in seq order: the agent (pid 10, exec'd from
// an image never seen) forks pid 20, which execs bash, which forks pid 30
// (no exec) and pid 40 (which execs cat); 30 and bash exit.
type session struct {
	evs               []*event.Event
	agent, fork20     *event.Event
	bash, cat, exit30 *event.Event
}

var t0 = time.Unix(1000, 0)

func newSession() *session {
	s := &session{}
	add := func(ms int, k event.Kind, pid uint32, id, parent string, set func(*event.Event)) *event.Event {
		e := event.New(k)
		e.Seq, e.TS, e.PID, e.Comm, e.ExecID, e.ParentExecID = uint64(len(s.evs)+1), t0.Add(time.Duration(ms)*time.Millisecond), pid, "c"+id, id, parent
		if set != nil {
			set(e)
		}
		s.evs = append(s.evs, e)
		return e
	}
	fork := func(ms int, pid uint32, id string, child uint32, cid string) *event.Event {
		return add(ms, event.KindFork, pid, id, "", func(e *event.Event) { e.Process.ChildPID, e.Process.ChildExecID = child, cid })
	}
	exec := func(ms int, pid uint32, id, parent string, argv ...string) *event.Event {
		return add(ms, event.KindExec, pid, id, parent, func(e *event.Event) { e.Path, e.Process.Argv = "/bin/"+argv[0], argv })
	}
	s.agent = exec(0, 10, "10-a", "10-shim", "agent", "-p", "fix it")
	add(1, event.KindOpen, 10, "10-a", "10-shim", nil)
	s.fork20 = fork(2, 10, "10-a", 20, "20-f")
	add(3, event.KindOpen, 20, "20-f", "10-a", nil)
	s.bash = exec(5, 20, "20-b", "20-f", "bash", "-c", "make")
	fork(6, 20, "20-b", 30, "30-f")
	add(8, event.KindOpen, 30, "30-f", "20-b", nil)
	fork(9, 20, "20-b", 40, "40-f")
	s.cat = exec(10, 40, "40-c", "40-f", "cat", "x")
	s.exit30 = add(20, event.KindExit, 30, "30-f", "20-b", func(e *event.Event) { e.Process.DurationNS = 7 })
	add(30, event.KindExit, 20, "20-b", "20-f", nil)
	return s
}

func ids(ims []*Image) []string {
	var out []string
	for _, im := range ims {
		out = append(out, im.ID)
	}
	return out
}

func TestBuild(t *testing.T) {
	s := newSession()
	tr := Build(s.evs)
	if got := ids(tr.Images()); !slices.Equal(got, []string{"10-a", "20-f", "20-b", "30-f", "40-f", "40-c"}) {
		t.Fatalf("images %v", got)
	}
	for i, im := range tr.Images() {
		if im.Index != i {
			t.Errorf("%s: index %d, want %d", im.ID, im.Index, i)
		}
	}
	a := tr.Image("10-a")
	if a.Parent != nil || a.ParentID != "10-shim" || a.Exec != s.agent || a.Comm != "c10-a" {
		t.Errorf("agent image: parent %v %q exec %v comm %q", a.Parent, a.ParentID, a.Exec, a.Comm)
	}
	f20, b := tr.Image("20-f"), tr.Image("20-b")
	if f20.Parent != a || f20.Fork != s.fork20 || f20.Exec != nil || f20.PID != 20 {
		t.Errorf("fork child: parent %v fork %v exec %v pid %d", f20.Parent, f20.Fork, f20.Exec, f20.PID)
	}
	if !slices.Equal(ids(a.Children), []string{"20-f"}) || !slices.Equal(ids(f20.Next), []string{"20-b"}) ||
		!slices.Equal(ids(b.Children), []string{"30-f", "40-f"}) {
		t.Errorf("links: %v %v %v", ids(a.Children), ids(f20.Next), ids(b.Children))
	}
	if !slices.Equal(f20.Events, []int32{3}) || !slices.Equal(a.Events, []int32{0, 1, 2}) {
		t.Errorf("events of 20-f %v, of 10-a %v", f20.Events, a.Events)
	}

	ps := tr.Processes()
	if len(ps) != 4 {
		t.Fatalf("%d processes, want 4", len(ps))
	}
	p20 := b.Process
	if p20 != f20.Process || p20.Top() != f20 || p20.Parent != a || p20.Index != 1 || ps[1] != p20 {
		t.Errorf("process of pid 20: %v", ids(p20.Images))
	}
	if ex := p20.Execs(); len(ex) != 1 || ex[0] != s.bash {
		t.Errorf("execs %v", ex)
	}
	if p20.ExitEvent() == nil || p20.ExitEvent().PID != 20 {
		t.Errorf("exit %v", p20.ExitEvent())
	}
	var forked []string
	for _, p := range p20.Forked() {
		forked = append(forked, p.Top().ID)
	}
	if !slices.Equal(forked, []string{"30-f", "40-f"}) {
		t.Errorf("forked %v", forked)
	}
	if tr.Of(s.cat) != tr.Image("40-c") || tr.Of(s.agent) != a || tr.Of(event.New(event.KindOpen)) != nil {
		t.Error("Of")
	}
}

func TestQueries(t *testing.T) {
	s := newSession()
	tr := Build(s.evs)
	var anc []string
	tr.Ancestors("30-f", func(im *Image) bool { anc = append(anc, im.ID); return true })
	if !slices.Equal(anc, []string{"20-b", "20-f", "10-a"}) {
		t.Errorf("ancestors %v", anc)
	}
	if !tr.HasAncestor("40-c", func(im *Image) bool { return im.ID == "10-a" }) || tr.HasAncestor("10-a", func(*Image) bool { return true }) {
		t.Error("HasAncestor")
	}
	if tr.ExecOf("30-f") != s.bash || tr.ExecOf("20-f") != s.agent || tr.ExecOf("40-c") != s.cat || tr.ExecOf("nope") != nil {
		t.Error("ExecOf")
	}
	argv0 := func(e *event.Event) []string { return e.Argv()[:1] }
	if got := tr.Names("30-f", argv0); !slices.Equal(got, []string{"bash"}) {
		t.Errorf("names %v", got)
	}
	if got := tr.Describe("30-f"); got != "`bash -c make` (pid 30)" {
		t.Errorf("describe %q", got)
	}
	if got := tr.Describe("nope"); got != "an unknown process" {
		t.Errorf("describe unknown %q", got)
	}
	if got := ids(tr.Subtree("20-f")); !slices.Equal(got, []string{"20-f", "20-b", "30-f", "40-f", "40-c"}) {
		t.Errorf("subtree %v", got)
	}
	top := tr.Topmost(map[string]bool{"20-b": true, "40-c": true, "30-f": true, "10-shim": true})
	if top["40-c"] != "20-b" || top["30-f"] != "20-b" || top["20-b"] != "20-b" || top["10-shim"] != "10-shim" {
		t.Errorf("topmost %v", top)
	}
	if d, ok := tr.Duration("20-b"); !ok || d != 25*time.Millisecond {
		t.Errorf("duration of bash %v %v", d, ok)
	}
	if d, ok := tr.Duration("30-f"); !ok || d != 12*time.Millisecond { // from its first event
		t.Errorf("duration of 30-f %v %v", d, ok)
	}
	if _, ok := tr.Duration("40-c"); ok {
		t.Error("duration of an image without exit")
	}
}

// TestCycle: events that make two images each other's parent do not hang
// the walks.
func TestCycle(t *testing.T) {
	a, b := event.New(event.KindOpen), event.New(event.KindOpen)
	a.Seq, a.PID, a.ExecID, a.ParentExecID = 1, 1, "1-a", "2-b"
	b.Seq, b.PID, b.ExecID, b.ParentExecID = 2, 2, "2-b", "1-a"
	tr := Build([]*event.Event{a, b})
	n := 0
	tr.Ancestors("1-a", func(*Image) bool { n++; return true })
	if n != 1 {
		t.Errorf("%d ancestors in a cycle of two, want 1", n)
	}
	if got := ids(tr.Subtree("1-a")); !slices.Equal(got, []string{"1-a", "2-b"}) {
		t.Errorf("subtree %v", got)
	}
	if tr.ExecOf("1-a") != nil {
		t.Error("exec in a cycle without one")
	}
}

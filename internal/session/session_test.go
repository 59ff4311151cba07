package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/stores"
)

// t0 is the start of every test session.
var t0 = time.Date(2026, 11, 29, 10, 50, 12, 123456789, time.UTC)

// sampleEvents returns one event of every kind with every field its kind
// carries, as the sensor would deliver them (Seq unset).
func sampleEvents() []*event.Event {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	common := func(ms int, kind event.Kind, pid uint32, comm string) event.Event {
		return event.Event{TS: at(ms), Kind: kind, PID: pid, TID: pid, PPID: 100, Comm: comm,
			ExecID: event.ExecID(pid, 5000), ParentExecID: event.ExecID(100, 1000)}
	}
	with := func(e event.Event, f func(*event.Event)) *event.Event { e.Complete(); f(&e); return &e }
	return []*event.Event{
		with(common(1, event.KindFork, 100, "bash"), func(e *event.Event) { e.Process.ChildPID = 101 }),
		with(common(2, event.KindExec, 101, "npm"), func(e *event.Event) {
			e.Path = "/usr/bin/npm"
			e.Process.Argv = []string{"npm", "install", "--save", "left pad"}
			e.Process.ArgvTruncated = true
			e.Process.Cwd = "/home/dev/project"
			e.Process.UID = event.Ptr(uint32(0)) // zero but present
			e.Process.SHA256 = strings.Repeat("ab", 32)
		}),
		with(common(3, event.KindOpen, 101, "npm"), func(e *event.Event) {
			e.Path = "/home/dev/.npmrc"
			e.Flags = event.Ptr(uint32(0))
			e.Access = "read"
			e.Result = event.Ptr(int64(-2))
		}),
		with(common(4, event.KindOpen, 101, "npm"), func(e *event.Event) {
			e.Path = "/home/dev/project/package-lock.json"
			e.PathTruncated = true
			e.Flags = event.Ptr(uint32(0o1101))
			e.Mode = event.Ptr(uint32(0o644))
			e.Access = "write,create"
			e.Result = event.Ptr(int64(0)) // fd 0
		}),
		with(common(5, event.KindRename, 101, "npm"), func(e *event.Event) {
			e.Path, e.Path2, e.Result = "/tmp/a", "/tmp/b", event.Ptr(int64(0))
		}),
		with(common(6, event.KindUnlink, 101, "npm"), func(e *event.Event) { e.Path, e.Result = "/tmp/b", event.Ptr(int64(-13)) }),
		with(common(7, event.KindMkdir, 101, "npm"), func(e *event.Event) {
			e.Path, e.Mode, e.Result = "/tmp/d", event.Ptr(uint32(0o755)), event.Ptr(int64(0))
		}),
		with(common(8, event.KindChmod, 101, "npm"), func(e *event.Event) {
			e.Path, e.Mode, e.Result = "/tmp/d", event.Ptr(uint32(0o700)), event.Ptr(int64(0))
		}),
		with(common(9, event.KindLink, 101, "npm"), func(e *event.Event) {
			e.Path, e.Path2, e.Result = "/tmp/a", "/tmp/a2", event.Ptr(int64(-17))
		}),
		with(common(10, event.KindConnect, 101, "npm"), func(e *event.Event) {
			e.Network.Family, e.Network.Addr, e.Network.Port, e.Network.Host, e.Result = "ipv4", "104.16.1.35", 443, "registry.npmjs.org", event.Ptr(int64(0))
		}),
		with(common(11, event.KindBind, 102, "node"), func(e *event.Event) {
			e.Network.Family, e.Network.Addr, e.Network.Port, e.Result = "ipv6", "::1", 8080, event.Ptr(int64(0))
		}),
		with(common(12, event.KindAccept, 102, "node"), func(e *event.Event) {
			e.Network.Family, e.Network.Addr, e.Network.Port, e.Result = "unix", "/run/x.sock", 0, event.Ptr(int64(5))
		}),
		with(common(13, event.KindDNS, 101, "npm"), func(e *event.Event) {
			e.Network.QName, e.Network.QType, e.Network.Answers = "registry.npmjs.org", "A", []string{"104.16.1.35", "104.16.2.35"}
		}),
		with(common(14, event.KindNet, 101, "npm"), func(e *event.Event) {
			e.Network.Family, e.Network.Addr, e.Network.Port, e.Network.BytesSent, e.Network.BytesRecv = "ipv4", "104.16.1.35", 443, 1200, 345678
		}),
		with(common(15, event.KindExit, 101, "npm"), func(e *event.Event) {
			e.Process.ExitCode = event.Ptr(0)
			e.Process.Signal = 9
			e.Process.DurationNS, e.Process.CPUNS, e.Process.MaxRSSKB, e.Process.ReadBytes, e.Process.WriteBytes = 15e6, 7e6, 51200, 4096, 8192
		}),
		with(common(16, event.KindUring, 103, "bun"), func(e *event.Event) {
			e.Path, e.Ring.RingOp, e.Result, e.Ring.ResultUnknown = "/home/dev/.npmrc", "read", event.Ptr(int64(12)), true
		}),
	}
}

// kernelTruthSamples are events of the kinds and fields the sensor took
// from the kernel's objects later (sessions of the kinds above stay as
// the other tests count them).
func kernelTruthSamples() []*event.Event {
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	common := func(ms int, kind event.Kind, pid uint32, comm string) event.Event {
		return event.Event{TS: at(ms), Kind: kind, PID: pid, TID: pid, PPID: 100, Comm: comm,
			ExecID: event.ExecID(pid, 5000), ParentExecID: event.ExecID(100, 1000)}
	}
	with := func(e event.Event, f func(*event.Event)) *event.Event { e.Complete(); f(&e); return &e }
	return []*event.Event{
		with(common(16, event.KindSend, 102, "node"), func(e *event.Event) {
			e.Network.Family, e.Network.Proto, e.Network.Addr, e.Network.Port, e.Network.AddrUser, e.Result = "ipv4", "udp", "192.0.2.7", 9999, true, event.Ptr(int64(5))
		}),
		with(common(17, event.KindHandle, 102, "node"), func(e *event.Event) { e.Path, e.Result = "/etc/shadow", event.Ptr(int64(0)) }),
		with(common(18, event.KindInject, 102, "node"), func(e *event.Event) {
			e.Call.TargetPID, e.Call.TargetExecID, e.Call.Method, e.Call.Adopted, e.Result = 4242, "4242-9000", "ptrace_attach", true, event.Ptr(int64(0))
		}),
		with(common(19, event.KindInject, 102, "node"), func(e *event.Event) {
			e.Call.TargetPID, e.Call.Method, e.Call.TargetNSLocal, e.Result = 3, "process_vm_writev", true, event.Ptr(int64(8))
		}),
		with(common(19, event.KindSignal, 102, "node"), func(e *event.Event) {
			e.Call.TargetPID, e.Call.Method, e.Call.Signo, e.Result = 77, "kill", 9, event.Ptr(int64(0))
		}),
		with(common(20, event.KindBPF, 102, "node"), func(e *event.Event) {
			e.Call.Method, e.Call.BPFCmd, e.Result = "bpf", "BPF_PROG_LOAD", event.Ptr(int64(-1))
		}),
		with(common(21, event.KindConnect, 102, "node"), func(e *event.Event) {
			e.Network.Family, e.Network.Addr, e.Network.PeerPID, e.Network.PeerExe, e.Network.PeerInTree = "unix", "/run/docker.sock", 1, "/usr/bin/dockerd", event.Ptr(false)
			e.Network.FastOpen, e.Result = true, event.Ptr(int64(0))
		}),
		with(common(22, event.KindMemRead, 102, "node"), func(e *event.Event) {
			e.Call.TargetPID, e.Call.Method, e.Call.TargetExe, e.Call.TargetInTree = 4343, "ptrace_peekdata", "/usr/bin/ssh-agent", event.Ptr(false)
			e.Result = event.Ptr(int64(0))
		}),
		with(common(23, event.KindPeer, 102, "node"), func(e *event.Event) {
			e.Path, e.Access, e.Object = "/tmp/p", "write", &event.Object{Dev: 2049, Ino: 77, FileType: "fifo", Nlink: 1}
			e.Network.PeerPID, e.Network.PeerExe, e.Network.PeerInTree = 4444, "/usr/bin/cat", event.Ptr(false)
		}),
		with(common(24, event.KindChown, 102, "chown"), func(e *event.Event) {
			e.Path, e.Result = "/etc/sudoers.d/x", event.Ptr(int64(0))
			e.Attr.Owner, e.Attr.OwnerGroup = event.Ptr(uint32(0)), event.Ptr(uint32(27))
		}),
		with(common(25, event.KindXattr, 102, "setcap"), func(e *event.Event) {
			e.Path, e.Result = "/tmp/sh", event.Ptr(int64(-1))
			e.Attr.XattrName, e.Attr.XattrOp = "security.capability", "set"
		}),
		with(common(26, event.KindKey, 102, "python3"), func(e *event.Event) {
			e.Result = event.Ptr(int64(40))
			*e.Key = event.Key{KeyOp: "search", KeySerial: 912345678, KeyRing: -4, KeyType: "user", KeyDesc: "app:api-token"}
		}),
		with(common(27, event.KindKey, 102, "python3"), func(e *event.Event) {
			e.Result = event.Ptr(int64(40))
			*e.Key = event.Key{KeyOp: "read", KeySerial: 912345678, KeyBytes: 40}
		}),
		with(common(28, event.KindMount, 103, "mount"), func(e *event.Event) {
			e.Path, e.Result, e.Flags = "/w/ov/merged", event.Ptr(int64(0)), event.Ptr(uint32(0))
			e.Mount.MountOp, e.Mount.FSType = "mount", "overlay"
			e.Mount.MountData = "lowerdir=/h/.aws,upperdir=/w/ov/upper,workdir=/w/ov/work"
			e.Mount.MountLayers = []string{"/w/ov/upper", "/h/.aws"}
		}),
		with(common(29, event.KindMount, 103, "python3"), func(e *event.Event) {
			e.Path, e.Result = "/w/mnt", event.Ptr(int64(0))
			e.Mount.MountOp, e.Mount.MountFD = "move_mount", event.Ptr(int32(0))
		}),
		with(common(30, event.KindFollow, 4545, "python3"), func(e *event.Event) {
			e.ParentExecID = "102-1"
			e.Call.TargetPID, e.Call.TargetExecID, e.Call.Method, e.Call.TargetExe = 102, "102-1", "unix_dgram", "/usr/bin/python3.11"
			e.Call.TargetInTree = event.Ptr(true)
		}),
	}
}

// newSession creates a session in a fresh home and closes it on cleanup
// unless the test did.
func newSession(t testing.TB, home string) *Writer {
	t.Helper()
	w, err := Create(home, Meta{Command: []string{"npm", "install"}, Mode: "run", StartedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(nil) })
	return w
}

// record writes evs to a new session, closes it and returns its path.
func record(t testing.TB, home string, evs []*event.Event) string {
	t.Helper()
	w := newSession(t, home)
	for _, ev := range evs {
		w.Add(ev)
	}
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	return w.Meta().Path
}

// openT opens path and closes it on cleanup.
func openT(t testing.TB, path string) *Reader {
	t.Helper()
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// readAll returns the events f selects.
func readAll(t testing.TB, r *Reader, f Filter) []*event.Event {
	t.Helper()
	var out []*event.Event
	if err := r.Events(f, func(ev *event.Event) error { out = append(out, ev); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRoundTripEveryKind(t *testing.T) {
	evs := append(sampleEvents(), kernelTruthSamples()...)
	kinds := map[event.Kind]bool{}
	for _, ev := range evs {
		kinds[ev.Kind] = true
	}
	for _, k := range event.Kinds {
		if !kinds[k] {
			t.Errorf("sampleEvents has no %s event", k)
		}
	}
	path := record(t, t.TempDir(), evs)
	got := readAll(t, openT(t, path), Filter{})
	if len(got) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(got), len(evs))
	}
	for i, want := range evs {
		t.Run(string(want.Kind), func(t *testing.T) {
			if want.Seq != uint64(i+1) {
				t.Errorf("Add assigned seq %d, want %d", want.Seq, i+1)
			}
			if !reflect.DeepEqual(got[i], want) {
				t.Errorf("round trip:\n got %s\nwant %s", jsonOf(got[i]), jsonOf(want))
			}
		})
	}
}

// TestEventFieldsCovered fills every field of event.Event by reflection,
// so a field added to the event model without a home in the store fails
// here rather than vanishing from recordings.
func TestEventFieldsCovered(t *testing.T) {
	ev := &event.Event{}
	v := reflect.ValueOf(ev).Elem()
	for i := range v.NumField() {
		fill(t, v.Field(i), v.Type().Field(i).Name, i+1)
	}
	ev.Seq = 0 // Add assigns it
	want := *ev
	want.Seq = 1
	path := record(t, t.TempDir(), []*event.Event{ev})
	got := readAll(t, openT(t, path), Filter{})
	if len(got) != 1 {
		t.Fatalf("read %d events, want 1", len(got))
	}
	gv, wv := reflect.ValueOf(*got[0]), reflect.ValueOf(want)
	for i := range gv.NumField() {
		if !reflect.DeepEqual(gv.Field(i).Interface(), wv.Field(i).Interface()) {
			t.Errorf("field %s: got %v, want %v (see dataView in schema.go)",
				gv.Type().Field(i).Name, gv.Field(i).Interface(), wv.Field(i).Interface())
		}
	}
}

// fill sets v to a non-zero value derived from n.
func fill(t testing.TB, v reflect.Value, name string, n int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(fmt.Sprintf("%s-%d", name, n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), name, n)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(t, s.Index(0), name, n)
		fill(t, s.Index(1), name, n+100)
		v.Set(s)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(t0.Add(time.Duration(n))))
			return
		}
		// a field group of event.Event (Process, Network): every field
		for i := range v.NumField() {
			fill(t, v.Field(i), name+"."+v.Type().Field(i).Name, n*100+i)
		}
	default:
		t.Fatalf("field %s: cannot fill %s", name, v.Type())
	}
}

func TestSeqGapFreeConcurrent(t *testing.T) {
	home := t.TempDir()
	w := newSession(t, home)
	const goroutines, each = 8, 2500
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				w.Add(&event.Event{TS: t0, Kind: event.KindOpen, PID: uint32(g), Comm: "t",
					ExecID: "x", Path: fmt.Sprintf("/f/%d", i%50)})
			}
		})
	}
	wg.Wait()
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	r := openT(t, w.Meta().Path)
	if got := r.Meta().Events; got != goroutines*each {
		t.Errorf("Meta().Events = %d, want %d", got, goroutines*each)
	}
	var next uint64 = 1
	perPID := map[uint32]int{}
	err := r.Events(Filter{}, func(ev *event.Event) error {
		if ev.Seq != next {
			return fmt.Errorf("seq %d after %d", ev.Seq, next-1)
		}
		next++
		perPID[ev.PID]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for g := range goroutines {
		if perPID[uint32(g)] != each {
			t.Errorf("pid %d: %d events, want %d", g, perPID[uint32(g)], each)
		}
	}
}

func TestFilter(t *testing.T) {
	path := record(t, t.TempDir(), sampleEvents())
	r := openT(t, path)
	tests := []struct {
		name   string
		filter Filter
		want   []uint64 // seqs
	}{
		{"all", Filter{}, []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}},
		{"one kind", Filter{Kinds: []event.Kind{event.KindOpen}}, []uint64{3, 4}},
		{"two kinds", Filter{Kinds: []event.Kind{event.KindExec, event.KindExit}}, []uint64{2, 15}},
		{"pid", Filter{PIDs: []uint32{102}}, []uint64{11, 12}},
		{"pids", Filter{PIDs: []uint32{100, 102}}, []uint64{1, 11, 12}},
		{"kind and pid", Filter{Kinds: []event.Kind{event.KindBind, event.KindOpen}, PIDs: []uint32{102}}, []uint64{11}},
		{"nothing", Filter{Kinds: []event.Kind{event.KindDNS}, PIDs: []uint32{102}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []uint64
			for _, ev := range readAll(t, r, tt.filter) {
				got = append(got, ev.Seq)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got seqs %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEventsCallbackError(t *testing.T) {
	r := openT(t, record(t, t.TempDir(), sampleEvents()))
	stop := errors.New("stop")
	n := 0
	err := r.Events(Filter{}, func(*event.Event) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("Events returned %v after %d calls, want the callback's error after 3", err, n)
	}
}

func TestMetaAndState(t *testing.T) {
	home := t.TempDir()
	w, err := Create(home, Meta{Command: []string{"claude", "-p", "fix it"}, Mode: "run", User: "dev", UID: 1000,
		Cwd: "/home/dev/p", Lost: map[string]uint64{"preset": 1}})
	if err != nil {
		t.Fatal(err)
	}
	m := w.Meta()
	if m.ID == "" || m.StartedAt.IsZero() || m.Path != filepath.Join(home, "sessions", m.ID+".db") {
		t.Fatalf("Create did not fill ID, Path, StartedAt: %+v", m)
	}
	if !strings.HasPrefix(m.ID, m.StartedAt.UTC().Format("20060102T150405")+"-") || len(m.ID) != len("20261129T105012-3fa2c1") {
		t.Errorf("id %q does not look like 20261129T105012-3fa2c1", m.ID)
	}
	if st, err := os.Stat(m.Path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("session file: %v, mode %v, want 0600", err, st.Mode().Perm())
	}
	for _, ev := range sampleEvents() {
		w.Add(ev)
	}
	w.SetLost("events", 7)
	w.SetLost("events", 9) // replaces
	w.SetLost("correlate", 2)
	w.SetUnavailable([]string{"cgroup connect hooks"})
	left := []Leftover{{PID: 4242, ExecID: "4242-1", Comm: "sleep", Argv: []string{"sleep", "600"}}, {PID: 4243, ExecID: "4243-1", Comm: "x"}}
	w.SetLeftovers(left[:1])
	w.SetLeftovers(left) // replaces
	if err := w.Close(event.Ptr(3)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close: %v, want ErrClosed", err)
	}
	w.Add(&event.Event{Kind: event.KindExec, Process: // dropped, no panic
	&event.Process{}})

	if _, err := os.Stat(m.Path + "-wal"); err == nil {
		t.Errorf("a cleanly closed session still has a -wal file")
	}
	r := openT(t, m.Path)
	got := r.Meta()
	if !got.CleanClose || got.Events != 16 || got.ExitCode == nil || *got.ExitCode != 3 || got.EndedAt.IsZero() {
		t.Errorf("closed meta: %s", jsonOf(got))
	}
	if want := map[string]uint64{"events": 9, "correlate": 2, "preset": 1}; !reflect.DeepEqual(got.Lost, want) {
		t.Errorf("Lost = %v, want %v", got.Lost, want)
	}
	if !slices.Equal(got.Unavailable, []string{"cgroup connect hooks"}) {
		t.Errorf("Unavailable = %v", got.Unavailable)
	}
	if got.ID != m.ID || !got.StartedAt.Equal(m.StartedAt) || !slices.Equal(got.Command, m.Command) || got.User != "dev" || got.UID != 1000 {
		t.Errorf("meta changed in the round trip:\n got %s\nwant %s", jsonOf(got), jsonOf(m))
	}
	gotLeft, err := r.Leftovers()
	if err != nil {
		t.Fatal(err)
	}
	left[1].Argv = nil
	if !reflect.DeepEqual(gotLeft, left) {
		t.Errorf("Leftovers = %s, want %s", jsonOf(gotLeft), jsonOf(left))
	}
}

func TestStateVisibleBeforeClose(t *testing.T) {
	home := t.TempDir()
	w := newSession(t, home)
	w.Add(sampleEvents()[0])
	w.SetLost("events", 5)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r, err := Open(w.Meta().Path)
		if err != nil {
			t.Fatal(err)
		}
		m := r.Meta()
		r.Close()
		if m.Events == 1 && m.Lost["events"] == 5 {
			if m.CleanClose {
				t.Errorf("open session reads as cleanly closed")
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s a reader sees %d events, lost %v; want 1 and 5", m.Events, m.Lost)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestAbort(t *testing.T) {
	home := t.TempDir()
	w, err := Create(home, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(sampleEvents()[0])
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(home, "sessions"))
	if len(entries) != 0 {
		t.Errorf("Abort left %v", entries)
	}
	if err := w.Close(nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Close after Abort: %v, want ErrClosed", err)
	}
}

func TestCreateKeepsGivenID(t *testing.T) {
	home := t.TempDir()
	w, err := Create(home, Meta{ID: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(nil) })
	if w.Meta().ID != "demo" {
		t.Errorf("ID = %q, want demo", w.Meta().ID)
	}
	if _, err := Create(home, Meta{ID: "demo"}); err == nil {
		t.Errorf("a second session with the same id was created")
	}
}

func TestHome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	t.Setenv("POLYGRAPH_HOME", dir)
	got, err := stores.Home()
	if err != nil {
		t.Fatal(err)
	}
	if got != dir {
		t.Errorf("Home() = %q, want %q", got, dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("home not created 0700: %v %v", err, st)
	}

	t.Setenv("POLYGRAPH_HOME", "")
	t.Setenv("SUDO_UID", "")
	fake := t.TempDir()
	t.Setenv("HOME", fake)
	if os.Geteuid() == 0 {
		t.Setenv("SUDO_UID", "") // not under sudo: root's own home
	}
	got, err = stores.Home()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(fake, ".local", "share", "polygraph"); got != want {
		t.Errorf("Home() = %q, want %q", got, want)
	}
}

// TestDescriptorPathsResolved: a session recorded before the sensor
// resolved /proc/self/fd/N/... paths reads as one recorded now, in either
// format, filtered or not (the opens a filter leaves out still teach the
// descriptors).
func TestDescriptorPathsResolved(t *testing.T) {
	events := func() []*event.Event {
		ev := func(k event.Kind, p string, result int64) *event.Event {
			e := event.New(k)
			e.TS, e.PID, e.TID, e.Comm, e.ExecID, e.Path, e.Result = t0, 100, 100, "bun", "100-1", p, event.Ptr(result)
			return e
		}
		evs := []*event.Event{
			ev(event.KindOpen, "/home/u/proj", 13),
			ev(event.KindOpen, "/proc/self/fd/13/a.txt", 14),
			ev(event.KindUnlink, "/proc/self/fd/13/a.txt", 0),
			ev(event.KindUnlink, "/proc/self/fd/99/b.txt", 0),
		}
		for i, e := range evs {
			e.Seq = uint64(i + 1)
		}
		return evs
	}
	want := []string{"/home/u/proj", "/home/u/proj/a.txt", "/home/u/proj/a.txt", "/proc/self/fd/99/b.txt"}
	files := map[string]string{
		"version 3": record(t, t.TempDir(), events()),
		"version 1": writeVersion1(t, events()),
	}
	for name, path := range files {
		t.Run(name, func(t *testing.T) {
			r := openT(t, path)
			var got []string
			for _, e := range readAll(t, r, Filter{}) {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, want) {
				t.Errorf("paths %q, want %q", got, want)
			}
			got = nil
			for _, e := range readAll(t, r, Filter{Kinds: []event.Kind{event.KindUnlink}}) {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, want[2:]) {
				t.Errorf("filtered paths %q, want %q", got, want[2:])
			}
		})
	}
}

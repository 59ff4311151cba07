package record

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// recordScript runs script with sh under the sensor, in dir, and returns
// the result and the stored events.
func recordScript(t *testing.T, dir, script string, linger time.Duration) (*Result, []*event.Event) {
	t.Helper()
	return recordWith(t, Options{Command: []string{"sh", "-c", script}, Dir: dir, Linger: linger})
}

// recordWith records a run with o (its Home, Mode and output set here)
// and returns the result and the stored events.
func recordWith(t *testing.T, o Options) (*Result, []*event.Event) {
	t.Helper()
	testenv.RequireRoot(t)
	o.Home, o.Mode = t.TempDir(), "run"
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	res, err := Record(context.Background(), o)
	testenv.Feature(t, "BPF sensor", err)
	r, err := session.Open(res.Meta.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var evs []*event.Event
	if err := r.Events(session.Filter{}, func(e *event.Event) error {
		evs = append(evs, e)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !r.Meta().CleanClose {
		t.Error("session not closed cleanly")
	}
	return res, evs
}

func find(evs []*event.Event, pred func(*event.Event) bool) *event.Event {
	for _, e := range evs {
		if pred(e) {
			return e
		}
	}
	return nil
}

// fakeDNS answers nothing useful but records the names asked, on
// 127.0.0.1:53 (UDP).
func fakeDNS(t *testing.T) (addr string, names <-chan string) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.1:53: %v", err)
	}
	t.Cleanup(func() { pc.Close() })
	ch := make(chan string, 16)
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			name, _, err := sensor.ParseDNSQuestion(buf[:n])
			if err == nil {
				select {
				case ch <- name:
				default:
				}
			}
			// Answer NXDOMAIN so the client stops at once.
			resp := append([]byte(nil), buf[:n]...)
			resp[2] |= 0x80
			binary.BigEndian.PutUint16(resp[2:4], binary.BigEndian.Uint16(resp[2:4])|0x8003)
			pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String(), ch
}

func listen(t *testing.T, network, addr string) string {
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Skipf("listen %s %s: %v", network, addr, err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 64)
			c.Read(buf)
			c.Close()
		}
	}()
	return l.Addr().String()
}

// TestRecordWorkload is the sensor's end-to-end check: a real shell
// workload under the real programs, with every kind the issue names.
func TestRecordWorkload(t *testing.T) {
	testenv.RequireRoot(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte("data\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v4 := listen(t, "tcp4", "127.0.0.1:0")
	v6 := listen(t, "tcp6", "[::1]:0")
	dnsAddr, names := fakeDNS(t)

	// A process outside the tree, busy during the whole recording.
	outsideMarker := filepath.Join(t.TempDir(), "outside-marker")
	outside := exec.Command("sh", "-c", fmt.Sprintf("while :; do echo x > %s; cat %s >/dev/null; sleep 0.02; done", outsideMarker, outsideMarker))
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { outside.Process.Kill(); outside.Wait() })

	script := fmt.Sprintf(`
cat input.txt > /dev/null
mkdir sub && cd sub
echo hello > rel.txt
mv rel.txt renamed.txt
rm renamed.txt
cat missing.txt 2>/dev/null
%[1]s __connect tcp4 %[2]s
%[1]s __connect tcp6 %[3]s
%[1]s __resolve polygraph-test.example %[4]s
%[1]s __listen > port.txt
%[1]s __memfd
printf '#!/bin/sh\ntrue\n' > tool.sh && chmod +x tool.sh && ./tool.sh
sh -c 'sh -c "sleep 0.4; echo late > %[5]s/late.txt" &' 
exit 3
`, self, v4, v6, dnsAddr, dir)
	res, evs := recordScript(t, dir, script, 3*time.Second)

	if res.ExitCode == nil || *res.ExitCode != 3 {
		t.Errorf("exit code = %v, want 3", res.ExitCode)
	}
	root := find(evs, func(e *event.Event) bool { return e.Kind == event.KindExec && len(e.Argv) > 2 && e.Argv[2] == script })
	if root == nil {
		t.Fatal("no exec event for the root sh with its whole argv")
	}
	if root.Cwd != dir {
		t.Errorf("root cwd = %q, want %q", root.Cwd, dir)
	}
	rootExit := find(evs, func(e *event.Event) bool { return e.Kind == event.KindExit && e.PID == root.PID })
	if rootExit == nil || rootExit.ExitCode == nil || *rootExit.ExitCode != 3 {
		t.Errorf("root exit event = %+v, want exit_code 3", rootExit)
	}

	checks := []struct {
		name string
		pred func(*event.Event) bool
	}{
		{"cat reads input.txt", func(e *event.Event) bool {
			return e.Kind == event.KindOpen && e.Path == filepath.Join(dir, "input.txt") && e.Access == "read" && !e.Failed()
		}},
		{"mkdir sub", func(e *event.Event) bool {
			return e.Kind == event.KindMkdir && e.Path == filepath.Join(dir, "sub") && *e.Result == 0
		}},
		{"relative write after cd resolves", func(e *event.Event) bool {
			return e.Kind == event.KindOpen && e.Path == filepath.Join(dir, "sub", "rel.txt") && strings.Contains(e.Access, "create") && !e.Failed()
		}},
		{"rename", func(e *event.Event) bool {
			return e.Kind == event.KindRename && e.Path == filepath.Join(dir, "sub", "rel.txt") && e.Path2 == filepath.Join(dir, "sub", "renamed.txt") && *e.Result == 0
		}},
		{"unlink", func(e *event.Event) bool {
			return e.Kind == event.KindUnlink && e.Path == filepath.Join(dir, "sub", "renamed.txt") && *e.Result == 0
		}},
		{"missing file: ENOENT", func(e *event.Event) bool {
			return e.Kind == event.KindOpen && e.Path == filepath.Join(dir, "sub", "missing.txt") && e.Result != nil && *e.Result == -2
		}},
		{"connect ipv4", func(e *event.Event) bool {
			return e.Kind == event.KindConnect && e.Family == "ipv4" && net.JoinHostPort(e.Addr, fmt.Sprint(e.Port)) == v4 && e.Proto == "tcp"
		}},
		{"connect ipv6", func(e *event.Event) bool {
			return e.Kind == event.KindConnect && e.Family == "ipv6" && net.JoinHostPort(e.Addr, fmt.Sprint(e.Port)) == v6
		}},
		{"dns query name", func(e *event.Event) bool {
			return e.Kind == event.KindDNS && e.QName == "polygraph-test.example" && e.Addr == "127.0.0.1" && e.Port == 53
		}},
		{"a script run through its interpreter names the script", func(e *event.Event) bool {
			return e.Kind == event.KindExec && e.Script == filepath.Join(dir, "sub", "tool.sh") && strings.HasSuffix(e.Path, "sh")
		}},
		{"exec from a memfd names the memfd", func(e *event.Event) bool {
			return e.Kind == event.KindExec && strings.HasPrefix(e.Path, "/memfd:polygraph-test") && len(e.Argv) == 1 && e.Argv[0] == "memtrue"
		}},
		{"bind to loopback", func(e *event.Event) bool {
			return e.Kind == event.KindBind && e.Family == "ipv4" && e.Addr == "127.0.0.1" && *e.Result == 0
		}},
		{"accept from loopback", func(e *event.Event) bool {
			return e.Kind == event.KindAccept && e.Family == "ipv4" && e.Addr == "127.0.0.1" && *e.Result >= 0 && e.Proto == "tcp"
		}},
		{"bytes to the ipv4 peer", func(e *event.Event) bool {
			return e.Kind == event.KindNet && net.JoinHostPort(e.Addr, fmt.Sprint(e.Port)) == v4 && e.BytesSent >= 6
		}},
		{"grandchild outliving its parent writes late.txt", func(e *event.Event) bool {
			return e.Kind == event.KindOpen && e.Path == filepath.Join(dir, "late.txt") && strings.Contains(e.Access, "write")
		}},
	}
	for _, c := range checks {
		if find(evs, c.pred) == nil {
			t.Errorf("missing event: %s", c.name)
		}
	}
	// A process's byte counters become a net event when it exits (the
	// kernel flags its exit record), not only when tracing stops.
	netAt := slices.IndexFunc(evs, func(e *event.Event) bool {
		return e.Kind == event.KindNet && net.JoinHostPort(e.Addr, fmt.Sprint(e.Port)) == v4
	})
	if rootAt := slices.Index(evs, rootExit); netAt >= 0 && rootAt >= 0 && netAt > rootAt {
		t.Errorf("the tcp4 client's bytes came at event %d, after the root's exit (%d): not drained at the client's exit", netAt, rootAt)
	}
	select {
	case n := <-names:
		if n != "polygraph-test.example" {
			t.Errorf("fake DNS saw %q", n)
		}
	default:
		t.Error("the fake DNS server got no query: the workload did not run as expected")
	}

	// The late writer's parent exited before it: it must still be in the
	// tree (its lineage reaches the root image).
	late := find(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == filepath.Join(dir, "late.txt") })
	if late != nil {
		byImage := map[string]*event.Event{}
		for _, e := range evs {
			if e.Kind == event.KindExec {
				byImage[e.ExecID] = e
			}
		}
		parents := map[string]string{}
		for _, e := range evs {
			if e.ExecID != "" && e.ParentExecID != "" {
				parents[e.ExecID] = e.ParentExecID
			}
			if e.Kind == event.KindFork {
				parents[e.ChildExecID] = e.ExecID
			}
		}
		id, steps := late.ExecID, 0
		for id != root.ExecID && id != "" && steps < 50 {
			id, steps = parents[id], steps+1
		}
		if id != root.ExecID {
			t.Errorf("late.txt writer %s does not descend from the root image %s", late.ExecID, root.ExecID)
		}
	}

	// Nothing of the outside process.
	for _, e := range evs {
		if e.PID == uint32(outside.Process.Pid) || strings.Contains(e.Path, "outside-marker") {
			t.Fatalf("event of a process outside the tree: %+v", e)
		}
	}
	// Seqs are gap-free from 1.
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if n := res.Stats.RingLost + res.Stats.Dropped + res.Stats.TrackLost; n != 0 {
		t.Errorf("lost %d events", n)
	}
}

// TestRecordLeftover: a daemon that outlives the command and the linger
// is listed as left running, with its argv.
func TestRecordLeftover(t *testing.T) {
	dir := t.TempDir()
	res, _ := recordScript(t, dir, `sleep 30 & exit 0`, 300*time.Millisecond)
	t.Cleanup(func() {
		for _, l := range res.Leftovers {
			if p, err := os.FindProcess(int(l.PID)); err == nil {
				p.Kill()
			}
		}
	})
	if len(res.Leftovers) != 1 || strings.Join(res.Leftovers[0].Argv, " ") != "sleep 30" {
		t.Fatalf("leftovers = %+v, want one: sleep 30", res.Leftovers)
	}
	r, err := session.Open(res.Meta.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	left, err := r.Leftovers()
	if err != nil || len(left) != 1 || left[0].PID != res.Leftovers[0].PID || left[0].ExecID == "" {
		t.Fatalf("stored leftovers = %+v, %v", left, err)
	}
}

// TestRecordKilledCommand: a command killed by a signal still leaves a
// complete session with the signal recorded.
func TestRecordKilledCommand(t *testing.T) {
	dir := t.TempDir()
	res, evs := recordScript(t, dir, `echo x > before.txt; kill -9 $$`, 0)
	if res.ExitCode == nil || *res.ExitCode != 128+9 {
		t.Errorf("exit code = %v, want 137", res.ExitCode)
	}
	if find(evs, func(e *event.Event) bool { return e.Kind == event.KindExit && e.Signal == 9 }) == nil {
		t.Error("no exit event with signal 9")
	}
	if find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindOpen && e.Path == filepath.Join(dir, "before.txt")
	}) == nil {
		t.Error("the write before the kill is missing")
	}
}

// TestRecordCommandNotFound: exit 127 and a session all the same.
func TestRecordCommandNotFound(t *testing.T) {
	testenv.RequireRoot(t)
	res, err := Record(context.Background(), Options{
		Home: t.TempDir(), Mode: "run", Command: []string{"polygraph-no-such-command"}, Stderr: os.Stderr,
	})
	testenv.Feature(t, "BPF sensor", err)
	if res.ExitCode == nil || *res.ExitCode != 127 {
		t.Fatalf("exit code = %v, want 127", res.ExitCode)
	}
	if _, err := os.Stat(res.Meta.Path); err != nil {
		t.Fatal(err)
	}
}

// TestAttach joins a running tree and sees what it does afterwards.
func TestAttach(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	// The tree waits for the session to exist (loading the sensor takes a
	// while on a busy machine), then writes.
	cmd := exec.Command("sh", "-c", "while [ ! -e go ]; do sleep 0.05; done; sleep 0.3; sh -c 'echo hi > attached.txt'; sleep 0.2")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go cmd.Wait()
	res, err := Record(context.Background(), Options{Home: t.TempDir(), Mode: "attach", AttachPID: cmd.Process.Pid,
		Started: func(session.Meta) { os.WriteFile(filepath.Join(dir, "go"), nil, 0o644) }})
	testenv.Feature(t, "BPF sensor", err)
	r, err := session.Open(res.Meta.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	found := false
	r.Events(session.Filter{Kinds: []event.Kind{event.KindOpen}}, func(e *event.Event) error {
		found = found || e.Path == filepath.Join(dir, "attached.txt")
		return nil
	})
	if !found {
		t.Error("attach did not record the write of attached.txt")
	}
	if r.Meta().Cwd != dir {
		t.Errorf("attach cwd = %q, want %q", r.Meta().Cwd, dir)
	}
}

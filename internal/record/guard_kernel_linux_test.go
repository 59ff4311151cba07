package record

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
	"github.com/polygraph/polygraph/internal/transcript"
)

// bpfTamper is the __bpf helper: it loads a tracepoint program (which
// needs CAP_BPF and CAP_PERFMON whatever the sysctl says), then takes its
// own pid out of every tracked-pids map holding it (which needs
// CAP_SYS_ADMIN to reach a map by id), prints "load: …" and "untrack: …",
// and reads marker: recorded only while it is still traced.
func bpfTamper(marker string) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type: ebpf.TracePoint, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
	})
	if err == nil {
		prog.Close()
	}
	fmt.Println("load:", result(err))
	fmt.Println("untrack:", result(untrackSelf()))
	os.ReadFile(marker)
	os.Exit(0)
}

// untrackSelf deletes this process from every "tracked" map that holds it.
func untrackSelf() error {
	pid := uint32(os.Getpid())
	found := false
	for id := ebpf.MapID(0); ; {
		next, err := ebpf.MapGetNextID(id)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return err
		}
		id = next
		m, err := ebpf.NewMapFromID(id)
		if err != nil {
			return err
		}
		if info, err := m.Info(); err == nil && info.Name == "tracked" {
			if v, err := m.LookupBytes(pid); err == nil && v != nil {
				if err := m.Delete(pid); err != nil {
					m.Close()
					return err
				}
				found = true
			}
		}
		m.Close()
	}
	if !found {
		return errors.New("not in any tracked map")
	}
	return nil
}

func result(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// TestRootTreeCannotTouchBPF: a command that runs as root cannot load a
// BPF program nor take itself out of polygraph's tracked-pids map; with
// KeepCaps it can do both (and then goes unrecorded). Under --isolate the
// shim keeps its capabilities for guard's mounts and the tree's init drops
// them before it forks the command: the command has none of them all the
// same. (Isolated, the tree's pids are its namespace's, not the map's keys,
// so there only the load tells whether the capabilities were kept.)
func TestRootTreeCannotTouchBPF(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		keep     bool
		isolate  bool
		wantOK   bool
		recorded bool
		steps    []string
	}{
		{name: "caps dropped", keep: false, wantOK: false, recorded: true, steps: []string{"load", "untrack"}},
		{name: "keep caps", keep: true, wantOK: true, recorded: false, steps: []string{"load", "untrack"}},
		{name: "isolated caps dropped", isolate: true, wantOK: false, recorded: true, steps: []string{"load", "untrack"}},
		{name: "isolated keep caps", isolate: true, keep: true, wantOK: true, recorded: true, steps: []string{"load"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			marker := filepath.Join(t.TempDir(), "marker")
			os.WriteFile(marker, nil, 0o644)
			var out bytes.Buffer
			o := Options{Command: []string{self, "__bpf", marker}, KeepCaps: tc.keep, Stdout: &out}
			if tc.isolate {
				o.Isolate = &Isolation{}
				testenv.LockLeftovers(t, false)
			}
			_, evs := recordWith(t, o)
			t.Logf("%s", out.String())
			for _, step := range tc.steps {
				line := lineOf(out.String(), step+": ")
				if ok := line == "ok"; ok != tc.wantOK {
					t.Errorf("%s: %q, want ok=%v", step, line, tc.wantOK)
				}
				if !tc.wantOK && !strings.Contains(line, "operation not permitted") {
					t.Errorf("%s failed with %q, want EPERM", step, line)
				}
			}
			got := find(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == marker }) != nil
			if got != tc.recorded {
				t.Errorf("marker read recorded = %v, want %v", got, tc.recorded)
			}
		})
	}
}

func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return "(missing)"
}

// TestStormLosesEvents: a ring buffer too small for a storm of opens
// loses events, the session says how many, and events-lost is raised:
// medium when only the main ring lost (the security ring kept every exec,
// fork, exit and sensitive open), high when the queue lost too.
func TestStormLosesEvents(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	res, evs := recordWith(t, Options{
		Command: []string{self, "__storm", "/etc/hostname", "200000"},
		Sensor:  sensor.Options{RingBytes: os.Getpagesize(), QueueLen: 64},
	})
	var lost uint64
	for _, n := range res.Meta.Lost {
		lost += n
	}
	t.Logf("%d events stored, lost %v", len(evs), res.Meta.Lost)
	if res.Meta.Lost["ringbuf"] == 0 {
		t.Fatalf("no ring buffer loss in the storm: %v", res.Meta.Lost)
	}
	fs := detect.Run(detect.Input{Events: evs, Meta: res.Meta})
	var f *detect.Finding
	for i := range fs {
		if fs[i].Rule == "events-lost" {
			f = &fs[i]
		}
	}
	want := detect.SeverityMedium
	if res.Meta.Lost["queue"] > 0 || res.Meta.Lost["ringbuf-security"] > 0 {
		want = detect.SeverityHigh
	}
	if f == nil || f.Severity != want || !strings.Contains(f.Title, fmt.Sprint(lost)) {
		t.Fatalf("events-lost finding %+v, want %s with %d lost", f, want, lost)
	}
}

// TestLeftoverReadAttributed: a process a tool call left behind reads a
// planted credential 5 s after the command exited; the linger keeps it
// traced, and the read is the call's (by lineage), after it returned.
func TestLeftoverReadAttributed(t *testing.T) {
	p := plantCredentials(t)
	inner := fmt.Sprintf("(sleep 5; cat %s) >/dev/null &", p.path)
	var notices bytes.Buffer
	res, evs := recordWith(t, Options{
		Command: []string{"sh", "-c", fmt.Sprintf("sh -c '%s'; exit 0", inner)},
		Env:     []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"}, Linger: 15 * time.Second, Notices: &notices,
	})
	if len(res.Leftovers) != 0 {
		t.Errorf("leftovers %+v: the linger should have outlasted the sleep", res.Leftovers)
	}
	if !strings.Contains(notices.String(), "waiting up to 15s for ") {
		t.Errorf("no linger notice: %q", notices.String())
	}
	root := find(evs, func(e *event.Event) bool { return e.Kind == event.KindExit && e.PID == uint32(res.Meta.RootPID) })
	call := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindExec && len(e.Argv()) == 3 && e.Argv()[2] == inner
	})
	read := find(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == p.path })
	if root == nil || call == nil || read == nil {
		t.Fatalf("root exit %v, call exec %v, read %v", root, call, read)
	}
	if d := read.TS.Sub(root.TS); d < 4*time.Second {
		t.Errorf("the read came %v after the command exited, want ≈5s", d)
	}
	tr := &transcript.Transcript{Agent: "claude-code", ToolCalls: []*transcript.ToolCall{{
		ID: "t1", Agent: "claude-code", Tool: "Bash", Kind: transcript.KindShell, Command: inner,
		StartedAt: call.TS.Add(-100 * time.Millisecond), EndedAt: call.TS.Add(200 * time.Millisecond),
	}}}
	attr := correlate.Attribute(evs, tr, res.Meta, correlate.Options{})
	at := attr.Of(read.Seq)
	if at == nil || at.ToolCallID != "t1" || !at.AfterReturn {
		t.Fatalf("the late read is attributed %+v, want t1 after return", at)
	}
	fs := detect.Run(detect.Input{Events: evs, Transcript: tr, Attribution: attr, Meta: res.Meta, Leftovers: res.Leftovers})
	found := false
	for _, f := range fs {
		found = found || f.Rule == "sensitive-read" && f.ToolCallID == "t1"
	}
	if !found {
		t.Errorf("no sensitive-read finding on t1: %+v", fs)
	}
}

// TestKillLeftovers: with KillLeftovers, what outlives the linger is
// listed, ended with SIGTERM, and its end is recorded; left-running says so.
func TestKillLeftovers(t *testing.T) {
	var notices bytes.Buffer
	res, evs := recordWith(t, Options{
		Command: []string{"sh", "-c", "sleep 60 & exit 0"}, Linger: 300 * time.Millisecond,
		KillLeftovers: true, Notices: &notices,
	})
	if len(res.Leftovers) != 1 || strings.Join(res.Leftovers[0].Argv, " ") != "sleep 60" {
		t.Fatalf("leftovers %+v, want sleep 60", res.Leftovers)
	}
	pid := res.Leftovers[0].PID
	if running(int(pid)) {
		t.Errorf("leftover %d still running", pid)
	}
	if e := find(evs, func(e *event.Event) bool { return e.Kind == event.KindExit && e.PID == pid }); e == nil || e.Signal() != 15 {
		t.Errorf("exit of the leftover %+v, want SIGTERM", e)
	}
	for _, want := range []string{"waiting up to 300ms for 1 process the command left running", "ending 1 process"} {
		if !strings.Contains(notices.String(), want) {
			t.Errorf("notices lack %q: %q", want, notices.String())
		}
	}
	fs := detect.Run(detect.Input{Events: evs, Meta: res.Meta, Leftovers: res.Leftovers})
	found := false
	for _, f := range fs {
		found = found || f.Rule == "left-running" && strings.Contains(f.Detail, "killed by signal 15")
	}
	if !found {
		t.Errorf("no left-running finding saying it was killed: %+v", fs)
	}
}

// running reports whether pid is a live process (not gone, not a zombie
// its new parent has yet to reap).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestStormKeepsSecretRead: a storm of opens overflows a tiny main ring,
// and a read of a planted ~/.aws/credentials in the middle of it is still
// recorded (the security ring carries it, and the exec and exit of the
// process that read it), so sensitive-read is raised beside events-lost.
func TestStormKeepsSecretRead(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := plantCredentials(t)
	storm := fmt.Sprintf("%s __storm /etc/hostname 300000", self)
	res, evs := recordWith(t, Options{
		Command: []string{"sh", "-c", fmt.Sprintf("%s & %s & sleep 0.2; cat %s >/dev/null; wait", storm, storm, p.path)},
		Env:     []string{"HOME=" + p.home, "PATH=/usr/bin:/bin"},
		Sensor:  sensor.Options{RingBytes: os.Getpagesize()},
	})
	t.Logf("%d events stored, lost %v", len(evs), res.Meta.Lost)
	if res.Meta.Lost["ringbuf"] == 0 {
		t.Fatalf("no ring buffer loss in the storm: %v", res.Meta.Lost)
	}
	if n, ok := res.Meta.Lost["ringbuf-security"]; !ok || n != 0 {
		t.Errorf("security ring lost %d (recorded %v), want 0", n, ok)
	}
	read := find(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == p.path })
	if read == nil {
		t.Fatal("the secret read in the storm is not recorded")
	}
	fs := detect.Run(detect.Input{Events: evs, Meta: res.Meta})
	sev := map[string]detect.Severity{}
	for _, f := range fs {
		if f.Severity.Rank() > sev[f.Rule].Rank() {
			sev[f.Rule] = f.Severity
		}
	}
	if sev["sensitive-read"].Rank() < detect.SeverityHigh.Rank() {
		t.Errorf("sensitive-read %v, want high (--fail-on high exits 3); findings %v", sev["sensitive-read"], sev)
	}
	if sev["events-lost"] != detect.SeverityMedium {
		t.Errorf("events-lost %q, want medium (only the main ring lost): %v", sev["events-lost"], sev)
	}
}

// TestStormKeepsAccountHomeSecret: an account of this machine whose home
// is outside /home (/srv/NAME here, as a CI runner's or a daemon's is) has
// its credential file guarded and read as "~/" like any home's: read by a
// process that set HOME elsewhere, in a storm that overflows the main
// ring, it is recorded through the security ring and raises
// sensitive-read.
func TestStormKeepsAccountHomeSecret(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to add an account")
	}
	useradd, err := exec.LookPath("useradd")
	if err != nil {
		t.Skip("no useradd here: cannot add an account")
	}
	name := fmt.Sprintf("pgacct%d", os.Getpid()%100000)
	home := filepath.Join("/srv", name)
	if err := os.MkdirAll(filepath.Join(home, ".aws"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	creds := filepath.Join(home, ".aws", "credentials")
	if err := os.WriteFile(creds, []byte("[default]\naws_secret_access_key = planted\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(useradd, "-M", "-d", home, "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	decoy := t.TempDir()
	storm := fmt.Sprintf("%s __storm /etc/hostname 300000", self)
	res, evs := recordWith(t, Options{
		Command: []string{"sh", "-c", fmt.Sprintf("%s & %s & sleep 0.2; cat %s >/dev/null; wait", storm, storm, creds)},
		Env:     []string{"HOME=" + decoy, "PATH=/usr/bin:/bin"},
		Sensor:  sensor.Options{RingBytes: os.Getpagesize()},
	})
	if !slices.Contains(res.Meta.Homes, home) {
		t.Errorf("the session's homes %v lack the account's %s", res.Meta.Homes, home)
	}
	if res.Meta.Lost["ringbuf"] == 0 {
		t.Fatalf("no ring buffer loss in the storm: %v", res.Meta.Lost)
	}
	read := find(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == creds })
	if read == nil {
		t.Fatal("the read of the account's credentials in the storm is not recorded")
	}
	if !highSensitiveRead(evs, res.Meta, creds) {
		t.Errorf("no high sensitive-read on %s", creds)
	}
}

// highSensitiveRead reports whether the rules raise a high sensitive-read
// on the recorded events, naming path in its title unless path is "".
func highSensitiveRead(evs []*event.Event, meta session.Meta, path string) bool {
	for _, f := range detect.Run(detect.Input{Events: evs, Meta: meta}) {
		if f.Rule == "sensitive-read" && f.Severity == detect.SeverityHigh && strings.Contains(f.Title, path) {
			return true
		}
	}
	return false
}

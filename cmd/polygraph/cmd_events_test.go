package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// testStart is when the test sessions start.
var testStart = time.Date(2026, 11, 29, 10, 50, 12, 0, time.UTC)

// testEvents is a small recording: a shell forks npm, which reads a
// missing file, writes one, resolves and connects, and exits.
func testEvents() []*event.Event {
	at := func(ms int) time.Time { return testStart.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(ms int, kind event.Kind, pid uint32, comm string, f func(*event.Event)) *event.Event {
		e := &event.Event{TS: at(ms), Kind: kind, PID: pid, TID: pid, PPID: 1, Comm: comm, ExecID: event.ExecID(pid, 1)}
		e.Complete()
		f(e)
		return e
	}
	return []*event.Event{
		ev(1, event.KindFork, 100, "bash", func(e *event.Event) { e.Process.ChildPID = 101 }),
		ev(2, event.KindExec, 101, "npm", func(e *event.Event) {
			e.Path, e.Process.Argv, e.Process.Cwd, e.Result = "/usr/bin/npm", []string{"npm", "install", "left pad"}, "/home/dev/p", event.Ptr(int64(0))
		}),
		ev(12, event.KindOpen, 101, "npm", func(e *event.Event) {
			e.Path, e.Access, e.Flags, e.Result = "/home/dev/.npmrc", "read", event.Ptr(uint32(0)), event.Ptr(int64(-2))
		}),
		ev(13, event.KindOpen, 101, "npm", func(e *event.Event) {
			e.Path, e.Access, e.Result = "/home/dev/p/package-lock.json", "write,create", event.Ptr(int64(5))
		}),
		ev(20, event.KindDNS, 101, "npm", func(e *event.Event) {
			e.Network.QName, e.Network.QType, e.Network.Answers = "registry.npmjs.org", "A", []string{"104.16.1.35"}
		}),
		ev(21, event.KindConnect, 101, "npm", func(e *event.Event) {
			e.Network.Family, e.Network.Proto, e.Network.Addr, e.Network.Port, e.Network.Host, e.Result = "ipv4", "tcp", "104.16.1.35", 443, "registry.npmjs.org", event.Ptr(int64(-115))
		}),
		ev(1500, event.KindExit, 101, "npm", func(e *event.Event) {
			e.Process.ExitCode, e.Process.DurationNS = event.Ptr(0), uint64(1498*time.Millisecond)
		}),
	}
}

// newTestSession records evs in a fresh POLYGRAPH_HOME and returns the
// session's metadata. With kill set the writer is abandoned without Close,
// as a killed polygraph would leave it (after its last flush).
func newTestSession(t *testing.T, evs []*event.Event, lost map[string]uint64, kill bool) session.Meta {
	t.Helper()
	home := t.TempDir()
	t.Setenv("POLYGRAPH_HOME", home)
	w, err := session.Create(home, session.Meta{Mode: "run", Command: []string{"npm", "install", "left pad"}, StartedAt: testStart})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		w.Add(ev)
	}
	for k, v := range lost {
		w.SetLost(k, v)
	}
	if kill {
		// Wait for the writer's periodic flush, then leave it running.
		m := w.Meta()
		deadline := time.Now().Add(5 * time.Second)
		for {
			r, err := session.Open(m.Path)
			if err == nil {
				n := r.Meta().Events
				r.Close()
				if n == uint64(len(evs)) {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("events not flushed within 5 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Cleanup(func() { w.Close(nil) })
		// The writer is this process, still running, which would make the
		// session read as in progress: name a writer that is gone.
		db, err := sql.Open("sqlite", m.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`UPDATE meta SET value = '{"pid":0}' WHERE key = 'writer'`); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	return w.Meta()
}

func TestRunEventsText(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	var out, errOut bytes.Buffer
	if err := runEvents(context.Background(), &eventsOptions{}, []string{"last"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := `    0.001    100 bash            fork     child 101
    0.002    101 npm             exec     /usr/bin/npm argv: npm install 'left pad' cwd: /home/dev/p
    0.012    101 npm             open     /home/dev/.npmrc read ENOENT
    0.013    101 npm             open     /home/dev/p/package-lock.json write,create fd 5
    0.020    101 npm             dns      registry.npmjs.org A -> 104.16.1.35
    0.021    101 npm             connect  104.16.1.35:443 (registry.npmjs.org) tcp EINPROGRESS
    1.500    101 npm             exit     code 0 after 1.498s
`
	if out.String() != want {
		t.Errorf("timeline:\n%s\nwant:\n%s", out.String(), want)
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr on a clean session: %q", errOut.String())
	}
	_ = m
}

func TestRunEventsJSON(t *testing.T) {
	evs := testEvents()
	m := newTestSession(t, evs, nil, false)
	var out, errOut bytes.Buffer
	if err := runEvents(context.Background(), &eventsOptions{json: true}, []string{m.ID[:12]}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(evs) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(evs), out.String())
	}
	for i, line := range lines {
		var got event.Event
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if !reflect.DeepEqual(&got, evs[i]) {
			t.Errorf("line %d:\n got %s\nwant %+v", i+1, line, evs[i])
		}
	}
	if !strings.Contains(lines[2], `"path":"/home/dev/.npmrc"`) || !strings.Contains(lines[2], `"result":-2`) || !strings.Contains(lines[2], `"seq":3`) {
		t.Errorf("JSON does not use the event model's field names: %s", lines[2])
	}
}

func TestRunEventsFilter(t *testing.T) {
	newTestSession(t, testEvents(), nil, false)
	tests := []struct {
		name  string
		opts  eventsOptions
		kinds []string // the kind column of each line
	}{
		{"kind", eventsOptions{kinds: []string{"open"}}, []string{"open", "open"}},
		{"kinds", eventsOptions{kinds: []string{"exec", "exit"}}, []string{"exec", "exit"}},
		{"pid", eventsOptions{pids: []uint{100}}, []string{"fork"}},
		{"kind and pid", eventsOptions{kinds: []string{"fork", "dns"}, pids: []uint{101}}, []string{"dns"}},
		{"none", eventsOptions{pids: []uint{9}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runEvents(context.Background(), &tt.opts, []string{"last"}, &out, &bytes.Buffer{}); err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if f := strings.Fields(line); len(f) >= 4 {
					kinds = append(kinds, f[3])
				}
			}
			if strings.Join(kinds, " ") != strings.Join(tt.kinds, " ") {
				t.Errorf("kinds %v, want %v:\n%s", kinds, tt.kinds, out.String())
			}
		})
	}
}

func TestRunEventsErrors(t *testing.T) {
	newTestSession(t, testEvents(), nil, false)
	home := os.Getenv("POLYGRAPH_HOME")
	bad := filepath.Join(home, "bad.db")
	os.WriteFile(bad, []byte("definitely not sqlite, no sir, not at all, nothing like it, no"), 0o600)
	tests := []struct {
		name  string
		opts  eventsOptions
		args  []string
		usage bool
		want  string
	}{
		{"unknown kind", eventsOptions{kinds: []string{"exec", "frobnicate"}}, []string{"last"}, true, `unknown event kind "frobnicate" (valid kinds: exec, fork, exit, open`},
		{"no session", eventsOptions{}, []string{"1999"}, false, "no session matches 1999"},
		{"not a session", eventsOptions{}, []string{bad}, false, "open session " + bad + ": not a polygraph session file (file is not a database)"},
		{"no argument", eventsOptions{}, nil, true, "SESSION"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runEvents(context.Background(), &tt.opts, tt.args, &bytes.Buffer{}, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			var ue *usageError
			if errors.As(err, &ue) != tt.usage {
				t.Errorf("usage error: %v, want %v", errors.As(err, &ue), tt.usage)
			}
			if code := exitCode(err, false); tt.usage && code != exitUsage || !tt.usage && code != exitFailure {
				t.Errorf("exit code %d", code)
			}
		})
	}
}

func TestRunEventsWarnings(t *testing.T) {
	m := newTestSession(t, testEvents(), map[string]uint64{"ringbuf": 12, "queue": 3, "tracking": 0}, true)
	var out, errOut bytes.Buffer
	if err := runEvents(context.Background(), &eventsOptions{}, []string{m.Path}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	want := "polygraph: warning: session " + m.ID + " was not closed cleanly (polygraph was killed or crashed); events up to the last flush are shown\n" +
		"polygraph: warning: 15 events were lost while recording (queue 3, ringbuf 12); the timeline has gaps\n"
	if errOut.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", errOut.String(), want)
	}
	if n := strings.Count(out.String(), "\n"); n != len(testEvents()) {
		t.Errorf("%d events shown, want %d", n, len(testEvents()))
	}
}

func TestEventDetails(t *testing.T) {
	base := event.Event{PID: 1, Comm: "x"}
	with := func(f func(*event.Event)) *event.Event {
		e := base
		e.Process, e.Network = &event.Process{}, &event.Network{}
		f(&e)
		return &e
	}
	tests := []struct {
		name string
		ev   *event.Event
		want string
	}{
		{"exec truncated", with(func(e *event.Event) {
			e.Kind, e.Path, e.Process.Argv, e.Process.ArgvTruncated, e.Process.UID = event.KindExec, "/bin/sh", []string{"sh", "-c", "echo $HOME"}, true, event.Ptr(uint32(1000))
		}), `/bin/sh argv: sh -c 'echo $HOME' …(argv truncated) uid: 1000`},
		{"exec failed", with(func(e *event.Event) { e.Kind, e.Path, e.Result = event.KindExec, "/nope", event.Ptr(int64(-2)) }), "/nope ENOENT"},
		{"open control chars", with(func(e *event.Event) {
			e.Kind, e.Path, e.Access, e.Result = event.KindOpen, "/tmp/\x1b[31mred", "read", event.Ptr(int64(0))
		}), `"/tmp/\x1b[31mred" read fd 0`},
		{"open odd errno", with(func(e *event.Event) { e.Kind, e.Path, e.Result = event.KindOpen, "/x", event.Ptr(int64(-4000)) }), "/x errno 4000"},
		{"rename", with(func(e *event.Event) {
			e.Kind, e.Path, e.Path2, e.Result = event.KindRename, "/a", "/b c", event.Ptr(int64(0))
		}), "/a -> '/b c'"},
		{"link denied", with(func(e *event.Event) {
			e.Kind, e.Path, e.Path2, e.Result = event.KindLink, "/a", "/b", event.Ptr(int64(-13))
		}), "/a -> /b EACCES"},
		{"unlink", with(func(e *event.Event) { e.Kind, e.Path, e.Result = event.KindUnlink, "/a", event.Ptr(int64(0)) }), "/a"},
		{"mkdir", with(func(e *event.Event) {
			e.Kind, e.Path, e.Mode, e.Result = event.KindMkdir, "/d", event.Ptr(uint32(0o755)), event.Ptr(int64(-17))
		}), "/d mode 0755 EEXIST"},
		{"chmod", with(func(e *event.Event) { e.Kind, e.Path, e.Mode = event.KindChmod, "/d", event.Ptr(uint32(0o4755)) }), "/d mode 4755"},
		{"connect v6", with(func(e *event.Event) {
			e.Kind, e.Network.Family, e.Network.Addr, e.Network.Port, e.Result = event.KindConnect, "ipv6", "::1", 8080, event.Ptr(int64(-111))
		}), "[::1]:8080 ECONNREFUSED"},
		{"connect unix", with(func(e *event.Event) {
			e.Kind, e.Network.Family, e.Network.Addr, e.Result = event.KindConnect, "unix", "/run/docker.sock", event.Ptr(int64(0))
		}), "/run/docker.sock"},
		{"bind", with(func(e *event.Event) {
			e.Kind, e.Network.Family, e.Network.Addr, e.Network.Port = event.KindBind, "ipv4", "0.0.0.0", 3000
		}), "0.0.0.0:3000"},
		{"accept", with(func(e *event.Event) {
			e.Kind, e.Network.Family, e.Network.Addr, e.Network.Port, e.Result = event.KindAccept, "ipv4", "10.0.0.2", 50000, event.Ptr(int64(7))
		}), "10.0.0.2:50000 fd 7"},
		{"dns no answer", with(func(e *event.Event) { e.Kind, e.Network.QName, e.Network.QType = event.KindDNS, "example.com", "AAAA" }), "example.com AAAA"},
		{"net", with(func(e *event.Event) {
			e.Kind, e.Network.Family, e.Network.Addr, e.Network.Port, e.Network.BytesSent, e.Network.BytesRecv = event.KindNet, "ipv4", "1.2.3.4", 443, 10, 2000
		}), "1.2.3.4:443 sent 10 B recv 2.0 KiB"},
		{"exit signal", with(func(e *event.Event) {
			e.Kind, e.Process.Signal, e.Process.DurationNS, e.Process.CPUNS, e.Process.MaxRSSKB = event.KindExit, 9, uint64(75*time.Second), uint64(1500*time.Microsecond), 20480
		}), "killed by SIGKILL after 1m15s cpu 1.5ms rss 20.0 MiB"},
		{"fork", with(func(e *event.Event) { e.Kind, e.Process.ChildPID = event.KindFork, 42 }), "child 42"},
		{"key search", with(func(e *event.Event) {
			e.Kind, e.Result = event.KindKey, event.Ptr(int64(912))
			e.Key = &event.Key{KeyOp: "search", KeySerial: 912, KeyRing: -4, KeyType: "user", KeyDesc: "app token"}
		}), "search key 912 user:'app token' keyring -4 = 912"},
		{"key read", with(func(e *event.Event) {
			e.Kind, e.Result = event.KindKey, event.Ptr(int64(40))
			e.Key = &event.Key{KeyOp: "read", KeySerial: 912, KeyBytes: 40}
		}), "read key 912 40 B of payload = 40"},
		{"mount bind", with(func(e *event.Event) {
			e.Kind, e.Path, e.Path2, e.Flags, e.Result = event.KindMount, "/w/mnt", "/h/.aws", event.Ptr(uint32(0x1000)), event.Ptr(int64(0))
			e.Mount = &event.Mount{MountOp: "mount"}
		}), "mount /h/.aws -> /w/mnt flags 0x1000"},
		{"mount overlay", with(func(e *event.Event) {
			e.Kind, e.Path, e.Result = event.KindMount, "/w/m", event.Ptr(int64(-1))
			e.Mount = &event.Mount{MountOp: "mount", FSType: "overlay", MountData: "lowerdir=/h/.aws,upperdir=/w/u,workdir=/w/k"}
		}), "mount type overlay /w/m lowerdir=/h/.aws,upperdir=/w/u,workdir=/w/k EPERM"},
		{"move_mount of a detached tree", with(func(e *event.Event) {
			e.Kind, e.Path, e.Flags, e.Result = event.KindMount, "/w/nt", event.Ptr(uint32(4)), event.Ptr(int64(0))
			e.Mount = &event.Mount{MountOp: "move_mount", MountFD: event.Ptr(int32(3))}
		}), "move_mount fd 3 -> /w/nt flags 0x4"},
		{"open_tree", with(func(e *event.Event) {
			e.Kind, e.Path, e.Flags, e.Result = event.KindMount, "/h/.aws", event.Ptr(uint32(1)), event.Ptr(int64(3))
			e.Mount = &event.Mount{MountOp: "open_tree"}
		}), "open_tree /h/.aws flags 0x1 fd 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := eventDetails(tt.ev); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// tamper edits the closed session at path as someone changing it after
// recording would: its exit code, behind the seal's back.
func tamper(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE meta SET value = replace(value, '"exit_code":0', '"exit_code":1') WHERE key = 'meta'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("tamper: %d meta rows changed, want 1", n)
	}
}

// TestRunEventsModified: events still shows a session modified after
// recording, and warns that it was, filtered or not.
func TestRunEventsModified(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	tamper(t, m.Path)
	want := "polygraph: warning: session " + m.ID + " modified after recording: its hash chain or seal does not match\n"
	for _, opts := range []*eventsOptions{{}, {kinds: []string{"exec"}}} {
		var out, errOut bytes.Buffer
		if err := runEvents(context.Background(), opts, []string{m.Path}, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if errOut.String() != want {
			t.Errorf("%+v: stderr:\n%s\nwant:\n%s", opts, errOut.String(), want)
		}
		if out.Len() == 0 {
			t.Errorf("%+v: no events shown", opts)
		}
	}
}

// TestRunEventsRedact: a secret on an exec's command line or in its
// recorded environment is masked in both forms; --no-redact, for root
// only, shows it as recorded.
func TestRunEventsRedact(t *testing.T) {
	const key = "sk-ant-api03-AbCdEf0123456789_GhIjKlMnOpQrStUvWxYz-AbCdEfGhIjKl"
	evs := testEvents()
	evs[1].Process.Argv = []string{"env", "ANTHROPIC_API_KEY=" + key, "npm", "install"}
	evs[1].Process.Env = []string{"OPENAI_API_KEY=" + key}
	newTestSession(t, evs, nil, false)
	for _, js := range []bool{false, true} {
		var out, errOut bytes.Buffer
		if err := runEvents(context.Background(), &eventsOptions{json: js}, []string{"last"}, &out, &errOut); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), key) || !strings.Contains(out.String(), "ANTHROPIC_API_KEY=[REDACTED]") {
			t.Errorf("events (json %v) does not mask the key:\n%s", js, out.String())
		}
	}
	var out bytes.Buffer
	err := runEvents(context.Background(), &eventsOptions{json: true, noRedact: true}, []string{"last"}, &out, &out)
	var ue *usageError
	switch {
	case os.Geteuid() != 0 && !errors.As(err, &ue):
		t.Errorf("--no-redact as uid %d: %v, want a usage error", os.Geteuid(), err)
	case os.Geteuid() == 0 && (err != nil || !strings.Contains(out.String(), key)):
		t.Errorf("--no-redact as root: %v, key shown %v", err, strings.Contains(out.String(), key))
	}
}

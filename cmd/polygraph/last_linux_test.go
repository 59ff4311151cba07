package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// TestLastPrefersProtectedStore: under `sudo polygraph run` the traced
// tree, running as the user, can write the user's own sessions directory.
// It plants there an old harmless session under a later name, and a
// session it wrote itself, now, with its own id. `report last --fail-on
// high` must still report the real session, from the protected store,
// and exit 3 on its high finding.
func TestLastPrefersProtectedStore(t *testing.T) {
	testenv.RequireRoot(t)
	base, err := os.MkdirTemp("", "polygraph-last-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	name, uid, gid := sudoTestUser(t, base)
	t.Setenv("POLYGRAPH_HOME", "")
	t.Setenv("POLYGRAPH_SUDO_STORE", filepath.Join(base, "store"))
	t.Setenv("SUDO_USER", name)
	t.Setenv("SUDO_UID", strconv.Itoa(uid))
	t.Setenv("SUDO_GID", strconv.Itoa(gid))
	home, err := stores.Home()
	if err != nil {
		t.Fatal(err)
	}

	// The real session, recorded under sudo: it reads an SSH key.
	w, err := session.Create(home, session.Meta{Mode: "run", Command: []string{"agent"}, Home: "/home/dev", Cwd: "/home/dev/p", StartedAt: time.Now().Add(-time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	w.Add(&event.Event{TS: now, Kind: event.KindExec, PID: 10, ExecID: "10-1", Comm: "cat", Path: "/usr/bin/cat", Process: &event.Process{Argv: []string{"cat", "/home/dev/.ssh/id_ed25519"}, Cwd: "/home/dev/p"}})
	w.Add(&event.Event{TS: now, Kind: event.KindOpen, PID: 10, ExecID: "10-1", Comm: "cat", Path: "/home/dev/.ssh/id_ed25519", Access: "read", Result: event.Ptr(int64(3))})
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	real := w.Meta()
	if !strings.HasPrefix(real.Path, filepath.Join(base, "store")) {
		t.Fatalf("the session went to %s, not the sudo store", real.Path)
	}

	// What the tree plants in the user's own directory.
	other := t.TempDir()
	mk := func(started time.Time) session.Meta {
		w, err := session.Create(other, session.Meta{Mode: "run", Command: []string{"true"}, StartedAt: started})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(event.Ptr(0)); err != nil {
			t.Fatal(err)
		}
		return w.Meta()
	}
	userDir := filepath.Join(home, "sessions")
	if err := os.MkdirAll(userDir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(userDir, uid, gid)
	plant := func(src, name string) {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(userDir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chown(p, uid, gid)
	}
	plant(mk(now.Add(-72*time.Hour)).Path, "20991231T235959-0a0a0a.db")
	forged := mk(time.Now())
	plant(forged.Path, forged.ID+".db")

	var out bytes.Buffer
	err = runReport(context.Background(), &reportOptions{transcript: "none", format: "text", failOn: "high"}, []string{"last"}, &out)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFindings {
		t.Errorf("report last --fail-on high: %v, want exit 3 on the real session's finding", err)
	}
	if !strings.Contains(out.String(), real.ID) {
		t.Errorf("report last is not the real session %s:\n%s", real.ID, out.String())
	}
}

// TestPermissionNotNoSuchFile: a session file the user may not read (in
// another user's store) is reported as such, not as "no such file".
func TestPermissionNotNoSuchFile(t *testing.T) {
	testenv.RequireRoot(t)
	base, err := os.MkdirTemp("", "polygraph-perm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	m := newTestSession(t, testEvents(), nil, false)
	private := filepath.Join(base, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(private, m.ID+".db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	bin := filepath.Join(base, "polygraph.test")
	if data, err = os.ReadFile(self); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	nobodyHome := filepath.Join(base, "home")
	os.Mkdir(nobodyHome, 0o777)
	for _, verb := range [][]string{{"events", path}, {"report", path}} {
		c := exec.Command(bin, verb...)
		c.Env = []string{"POLYGRAPH_TEST_MAIN=1", "PATH=/usr/bin:/bin", "POLYGRAPH_HOME=" + nobodyHome, "HOME=" + nobodyHome}
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := c.CombinedOutput()
		if err == nil {
			t.Errorf("%v as nobody succeeded:\n%s", verb, out)
			continue
		}
		if !strings.Contains(string(out), "permission denied") || strings.Contains(string(out), "no such file") {
			t.Errorf("%v as nobody: %s; want permission denied", verb, out)
		}
	}
}

// TestFIFONamedLikeASession: a FIFO named like the newest session in the
// sessions directory (anything the user ran can make one) does not block
// sessions, events last or report last: each returns, and last is the
// real session.
func TestFIFONamedLikeASession(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	fifo := filepath.Join(filepath.Dir(m.Path), "20991231T235959-f1f0f1.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	var out, errOut bytes.Buffer
	within(t, 20*time.Second, "sessions", func() {
		if err := runSessions(context.Background(), &sessionsOptions{}, nil, &out); err != nil {
			t.Errorf("sessions: %v", err)
		}
	})
	within(t, 20*time.Second, "events last", func() {
		if err := runEvents(context.Background(), &eventsOptions{}, []string{"last"}, &out, &errOut); err != nil {
			t.Errorf("events last: %v", err)
		}
	})
	within(t, 20*time.Second, "report last", func() {
		out.Reset()
		if err := runReport(context.Background(), &reportOptions{transcript: "none", format: "json"}, []string{"last"}, &out); err != nil {
			t.Errorf("report last: %v", err)
		}
		if !strings.Contains(out.String(), m.ID) {
			t.Errorf("report last is not %s", m.ID)
		}
	})
}

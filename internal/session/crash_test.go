package session

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/stores"
)

// The tests below re-execute the test binary as a helper process, which
// does what POLYGRAPH_SESSION_HELPER says instead of running tests.
const helperEnv = "POLYGRAPH_SESSION_HELPER"

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
		os.Exit(m.Run())
	case "write":
		os.Exit(helperWrite(os.Getenv("POLYGRAPH_HOME")))
	case "read":
		os.Exit(helperRead(os.Getenv("POLYGRAPH_SESSION_FILE")))
	default:
		fmt.Fprintln(os.Stderr, "unknown helper", os.Getenv(helperEnv))
		os.Exit(2)
	}
}

// helperWrite creates a session in home, prints its path and adds events
// until it is killed.
func helperWrite(home string) int {
	w, err := Create(home, Meta{Mode: "run", Command: []string{"helper"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(w.Meta().Path)
	w.SetLost("events", 3)
	for i := 0; ; i++ {
		w.Add(&event.Event{TS: time.Now(), Kind: event.KindOpen, PID: uint32(100 + i%7), Comm: "helper",
			ExecID: "100-1", Path: fmt.Sprintf("/tmp/f%d", i%100), Access: "read", Result: event.Ptr(int64(3))})
		if i%100 == 99 {
			time.Sleep(time.Millisecond) // a busy agent, not a flood
		}
	}
}

// helperRead opens a session and prints how many events it holds.
func helperRead(path string) int {
	r, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer r.Close()
	n := 0
	if err := r.Events(Filter{}, func(*event.Event) error { n++; return nil }); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(n, r.Meta().CleanClose)
	return 0
}

// killedSession runs helperWrite, SIGKILLs it after d and returns the
// session file and the time of the kill. during is called, if given, on
// the session file while the helper still writes it.
func killedSession(t *testing.T, home string, d time.Duration, during ...func(path string)) (string, time.Time) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=write", "POLYGRAPH_HOME="+home)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	path, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper printed no session path: %v", err)
	}
	time.Sleep(d)
	for _, f := range during {
		f(strings.TrimSpace(path))
	}
	killed := time.Now()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, out)
	cmd.Wait()
	return strings.TrimSpace(path), killed
}

func TestKilledWriter(t *testing.T) {
	home := t.TempDir()
	var live Meta
	var liveIntegrity string
	var liveDamage []Damage
	path, killed := killedSession(t, home, 1500*time.Millisecond, func(path string) {
		r := openT(t, path)
		live = r.Meta()
		var err error
		if liveIntegrity, liveDamage, err = r.Verify(); err != nil {
			t.Error(err)
		}
	})
	if !live.InProgress || live.CleanClose || liveIntegrity != IntegrityUnsealed || len(liveDamage) > 0 {
		t.Errorf("a session being written reads as in progress %v, clean %v, integrity %q, damage %v; want in progress, unsealed, no damage",
			live.InProgress, live.CleanClose, liveIntegrity, liveDamage)
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Logf("no -wal beside the killed session: %v", err)
	}
	r := openT(t, path)
	m := r.Meta()
	if m.CleanClose || m.InProgress {
		t.Errorf("a killed session reads as cleanly closed (%v) or in progress (%v)", m.CleanClose, m.InProgress)
	}
	if m.Lost["events"] != 3 {
		t.Errorf("lost counter set before the kill: %v, want events=3", m.Lost)
	}
	var next uint64 = 1
	var last time.Time
	err := r.Events(Filter{}, func(ev *event.Event) error {
		if ev.Seq != next {
			return fmt.Errorf("seq %d after %d", ev.Seq, next-1)
		}
		next++
		last = ev.TS
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	n := next - 1
	if n == 0 {
		t.Fatal("no events survived the kill")
	}
	if got := r.Meta().Integrity; got != IntegrityUnsealed || len(r.Damage()) > 0 {
		t.Errorf("killed session: integrity %q, damage %v; want unsealed and no damage", got, r.Damage())
	}
	if m.Events != n {
		t.Errorf("Meta().Events = %d, but %d events are there", m.Events, n)
	}
	// Commits come every 200 ms; allow for a loaded machine.
	t.Logf("%d events survived; the newest was added %v before the kill", n, killed.Sub(last))
	if lag := killed.Sub(last); lag > 3*time.Second {
		t.Errorf("the newest surviving event was added %v before the kill, want under ~1 s", lag)
	}
	// The session still lists and resolves.
	list, err := List(home)
	if err != nil || len(list) != 1 || list[0].Error != "" || list[0].CleanClose {
		t.Errorf("List = %+v, %v", list, err)
	}
	if got, err := Resolve(home, "last"); err != nil || got != path {
		t.Errorf("Resolve(last) = %q, %v, want %q", got, err, path)
	}
}

// TestReadOnly opens sessions as an unprivileged user who can read the
// files but write neither them nor their directory: a cleanly closed
// session, and one a killed writer left in WAL mode.
func TestReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the reader as another user")
	}
	const nobody = 65534
	// The helper binary and the files must be reachable by nobody.
	base := t.TempDir()
	for d := base; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	bin := filepath.Join(base, "session.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}

	clean := record(t, filepath.Join(base, "clean"), sampleEvents())
	killed, _ := killedSession(t, filepath.Join(base, "killed"), 700*time.Millisecond)
	tests := []struct {
		name, path, want string
	}{
		{"clean", clean, "16 true"},
		{"killed", killed, " false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Dir(tt.path)
			for _, p := range []string{tt.path, tt.path + "-wal", tt.path + "-shm"} {
				os.Chown(p, nobody, nobody)
				os.Chmod(p, 0o400)
			}
			os.Chmod(dir, 0o755) // root's, so nobody cannot create files in it
			os.Chmod(filepath.Dir(dir), 0o755)
			before, _ := os.ReadDir(dir)
			cmd := exec.Command(bin, "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=read", "POLYGRAPH_SESSION_FILE="+tt.path)
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("reading as nobody: %v: %s", err, out)
			}
			if !strings.HasSuffix(strings.TrimSpace(string(out)), strings.TrimSpace(tt.want)) || strings.HasPrefix(string(out), "0 ") {
				t.Errorf("reader printed %q, want events and %q", out, tt.want)
			}
			after, _ := os.ReadDir(dir)
			if len(after) != len(before) {
				t.Errorf("reading changed the directory: %v -> %v", before, after)
			}
		})
	}
}

// TestSudoOwnership checks that a session created by root on behalf of a
// sudo user belongs to that user, with every directory Create made.
func TestSudoOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	const uid, gid = 65534, 65534
	t.Setenv("SUDO_UID", fmt.Sprint(uid))
	t.Setenv("SUDO_GID", fmt.Sprint(gid))
	t.Setenv("SUDO_USER", "nobody")
	name, u, g, _ := accounts.InvokingUser()
	if name != "nobody" || u != uid || g != gid {
		t.Fatalf("accounts.InvokingUser() = %q %d %d, want nobody %d %d", name, u, g, uid, gid)
	}
	base := t.TempDir()
	home := filepath.Join(base, "x", "polygraph")
	t.Setenv("POLYGRAPH_HOME", home)
	h, err := stores.Home()
	if err != nil {
		t.Fatal(err)
	}
	w, err := Create(h, Meta{})
	if err != nil {
		t.Fatal(err)
	}
	w.Add(sampleEvents()[0])
	path := w.Meta().Path
	check := func(p string) {
		t.Helper()
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err != nil {
			t.Error(err)
			return
		}
		if st.Uid != uid || st.Gid != gid {
			t.Errorf("%s owned by %d:%d, want %d:%d", p, st.Uid, st.Gid, uid, gid)
		}
	}
	for _, p := range []string{filepath.Join(base, "x"), home, filepath.Join(home, "sessions"), path, path + "-wal", path + "-shm"} {
		check(p)
	}
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	check(path)
	var st syscall.Stat_t
	if err := syscall.Stat(base, &st); err == nil && st.Uid != 0 {
		t.Errorf("Create chowned %s, a directory it did not make", base)
	}
}

package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/polygraph/polygraph/internal/testenv"
)

// sudoTestUser creates an unprivileged user with a private group and a
// home under base, removed at cleanup.
func sudoTestUser(t *testing.T, base string) (name string, uid, gid int) {
	t.Helper()
	name = fmt.Sprintf("pgsudo%d", os.Getpid()%100000)
	home := filepath.Join(base, "home")
	if out, err := exec.Command("useradd", "-m", "-d", home, "-U", "-s", "/bin/sh", name).CombinedOutput(); err != nil {
		t.Skipf("useradd: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", "-f", name).Run() })
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return name, uid, gid
}

// TestSudoSessionIsRootsReadableByUser: `sudo polygraph run` records into
// a root-owned store the invoking user can read but not change, so the
// traced tree (running as that user) cannot rewrite its own record, live
// or after, while `polygraph events/report/sessions` run by the user
// without sudo find and read it.
func TestSudoSessionIsRootsReadableByUser(t *testing.T) {
	testenv.RequireRoot(t)
	base, err := os.MkdirTemp("", "polygraph-sudo-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	name, uid, gid := sudoTestUser(t, base)
	self, _ := os.Executable()
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "polygraph.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(base, "store")
	sessions := filepath.Join(store, "users", strconv.Itoa(uid), "sessions")
	env := []string{"POLYGRAPH_TEST_MAIN=1", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "POLYGRAPH_SUDO_STORE=" + store}

	// The traced command, running as the user, reads its live session
	// and tries to rewrite, move and delete it.
	script := `cd "$1" || exit 9
for f in *.db; do
  echo "SAW $f"
  "$2" events last >/dev/null && echo LIVEREAD
  printf x >> "$f" 2>/dev/null && echo WROTE
  mv "$f" "$f.x" 2>/dev/null && echo MOVED
  rm -f "$f" 2>/dev/null && echo REMOVED
  touch new.db 2>/dev/null && echo CREATED
done
exit 0`
	run := exec.Command(bin, "run", "--linger", "0s", "--", "sh", "-c", script, "sh", sessions, bin)
	run.Env = append(env, "SUDO_USER="+name, "SUDO_UID="+strconv.Itoa(uid), "SUDO_GID="+strconv.Itoa(gid), "HOME=/root")
	var stderr bytes.Buffer
	run.Stderr = &stderr
	out, err := run.Output()
	if err != nil {
		t.Fatalf("sudo run: %v\n%s\n%s", err, out, stderr.String())
	}
	for _, want := range []string{"SAW ", "LIVEREAD"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("traced command output lacks %q:\n%s\n%s", want, out, stderr.String())
		}
	}
	for _, bad := range []string{"WROTE", "MOVED", "REMOVED", "CREATED"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("the traced user could change its record (%s):\n%s", bad, out)
		}
	}

	files, _ := filepath.Glob(filepath.Join(sessions, "*.db"))
	if len(files) != 1 {
		t.Fatalf("sessions in the sudo store: %v, want 1", files)
	}
	path := files[0]
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{path, 0o640}, {sessions, 0o750 | os.ModeDir}, {filepath.Dir(sessions), 0o750 | os.ModeDir}} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		sys := st.Sys().(*syscall.Stat_t)
		if sys.Uid != 0 || int(sys.Gid) != gid || st.Mode() != c.mode {
			t.Errorf("%s: uid %d gid %d mode %v, want root, the user's private group %d, %v", c.path, sys.Uid, sys.Gid, st.Mode(), gid, c.mode)
		}
	}
	all, _ := filepath.Glob(filepath.Join(sessions, "*"))
	for _, f := range all {
		st, err := os.Lstat(f)
		if err != nil {
			t.Fatal(err)
		}
		if sys := st.Sys().(*syscall.Stat_t); sys.Uid != 0 || st.Mode().Perm()&0o022 != 0 {
			t.Errorf("%s: uid %d mode %v: every file in the store must be root's and writable by root only", f, sys.Uid, st.Mode())
		}
	}
	before, _ := os.ReadFile(path)

	asUser := func(args ...string) *exec.Cmd {
		c := exec.Command(args[0], args[1:]...)
		c.Env = append(env, "HOME="+filepath.Join(base, "home"), "USER="+name)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		return c
	}
	id := strings.TrimSuffix(filepath.Base(path), ".db")
	for _, verb := range [][]string{{"events", "last"}, {"report", "last"}, {"sessions"}} {
		out, err := asUser(append([]string{bin}, verb...)...).CombinedOutput()
		if err != nil {
			t.Errorf("%v as the user: %v\n%s", verb, err, out)
		}
		if verb[0] == "sessions" && !strings.Contains(string(out), id) {
			t.Errorf("sessions as the user does not list %s:\n%s", id, out)
		}
	}
	for _, sh := range []string{`printf x >> "$1"`, `mv "$1" "$1.x"`, `rm -f "$1"`, `: > "$(dirname "$1")/new.db"`} {
		if out, err := asUser("sh", "-c", sh, "sh", path).CombinedOutput(); err == nil {
			t.Errorf("%s as the user succeeded; want permission denied (%s)", sh, out)
		} else if !strings.Contains(string(out), "ermission denied") {
			t.Errorf("%s as the user: %s, want permission denied", sh, out)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil || sha256.Sum256(before) != sha256.Sum256(after) {
		t.Errorf("the session changed under the user's attempts (%v)", err)
	}
}

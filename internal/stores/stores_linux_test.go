package stores

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/polygraph/polygraph/internal/testenv"
)

// TestGuardACL: without a private group, a guarded file and directory are
// root's, readable (and searchable) by the one user through an ACL entry,
// and neither writable by that user nor readable by another.
func TestGuardACL(t *testing.T) {
	testenv.RequireRoot(t)
	base, err := os.MkdirTemp("", "polygraph-acl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	dir := filepath.Join(base, "sessions")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "s.db")
	if err := os.WriteFile(path, []byte("record"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &Guard{uid: 65534, gid: -1}
	if err := g.Apply(dir, true); err != nil {
		t.Fatal(err)
	}
	if err := g.Apply(path, false); err != nil {
		t.Fatal(err)
	}
	if err := grantACL(path, 65534, false); err != nil {
		t.Skipf("no POSIX ACLs on this filesystem: %v", err)
	}
	as := func(uid uint32, script string) (string, error) {
		c := exec.Command("sh", "-c", script, "sh", path)
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		out, err := c.CombinedOutput()
		return string(out), err
	}
	tests := []struct {
		name   string
		uid    uint32
		script string
		ok     bool
	}{
		{"user reads", 65534, `cat "$1"`, true},
		{"user writes", 65534, `printf x >> "$1"`, false},
		{"user removes", 65534, `rm -f "$1"`, false},
		{"user creates in dir", 65534, `touch "$(dirname "$1")/new.db"`, false},
		{"other user reads", 65533, `cat "$1"`, false},
	}
	for _, tt := range tests {
		out, err := as(tt.uid, tt.script)
		if (err == nil) != tt.ok {
			t.Errorf("%s: err %v (%s), want success %v", tt.name, err, out, tt.ok)
		}
		if tt.ok && tt.script == `cat "$1"` && out != "record" {
			t.Errorf("%s: read %q", tt.name, out)
		}
	}
}

// TestPrivateGroupFiles: a group is private to a user only when it lists
// no one else and no other user has it as primary group.
func TestPrivateGroupFiles(t *testing.T) {
	dir := t.TempDir()
	group := filepath.Join(dir, "group")
	passwd := filepath.Join(dir, "passwd")
	os.WriteFile(group, []byte("alice:x:1000:\nstaff:x:50:alice,bob\n# c\n"), 0o644)
	os.WriteFile(passwd, []byte("alice:x:1000:1000::/home/alice:/bin/sh\nbob:x:1001:50::/home/bob:/bin/sh\ncarol:x:1002:50::/:/bin/sh\n"), 0o644)
	tests := []struct {
		gid     int
		members []string
		found   bool
		primary []int
	}{
		{1000, nil, true, []int{1000}},
		{50, []string{"alice", "bob"}, true, []int{1001, 1002}},
		{77, nil, false, nil},
	}
	for _, tt := range tests {
		m, found := groupMembers(group, tt.gid)
		p, err := primaryUsers(passwd, tt.gid)
		if err != nil || found != tt.found || !slices.Equal(m, tt.members) || !slices.Equal(p, tt.primary) {
			t.Errorf("gid %d: members %v found %v primary %v (%v), want %v %v %v", tt.gid, m, found, p, err, tt.members, tt.found, tt.primary)
		}
	}
}

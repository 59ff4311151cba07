package accounts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestHomes: every account's existing home counts, once, wherever it is;
// system directories, missing homes and malformed lines do not.
func TestHomes(t *testing.T) {
	dir := t.TempDir()
	jenkins := filepath.Join(dir, "var", "lib", "jenkins")
	agent := filepath.Join(dir, "srv", "agent")
	for _, d := range []string{jenkins, agent} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	passwd := filepath.Join(dir, "passwd")
	lines := "root:x:0:0:root:/root:/bin/bash\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
		"bin:x:2:2:bin:/bin:/usr/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" +
		"# a comment\n\n" +
		"jenkins:x:110:110::" + jenkins + ":/bin/sh\n" +
		"agent:x:1001:1001::" + agent + "/:/bin/sh\n" +
		"again:x:1002:1002::" + agent + ":/bin/sh\n" +
		"gone:x:1003:1003::" + filepath.Join(dir, "missing") + ":/bin/sh\n" +
		"short:x:1004\n" +
		"rel:x:1005:1005::srv/rel:/bin/sh\n"
	if err := os.WriteFile(passwd, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Homes(passwd)
	if got[0] != "/root" {
		t.Errorf("Homes = %v, want /root first", got)
	}
	for _, want := range []string{jenkins, agent} {
		if n := countOf(got, want); n != 1 {
			t.Errorf("%s is %d times in %v, want once", want, n, got)
		}
	}
	for _, not := range []string{"/usr/sbin", "/bin", "/nonexistent", filepath.Join(dir, "missing"), "srv/rel"} {
		if slices.Contains(got, not) {
			t.Errorf("%s in %v", not, got)
		}
	}
	if h := Homes(filepath.Join(dir, "no-such-passwd")); h[0] != "/root" {
		t.Errorf("without a passwd file: %v", h)
	}
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func TestInHome(t *testing.T) {
	for _, tc := range []struct {
		p, home, want string
		ok            bool
	}{
		{"~", "/home/ann", "/home/ann", true},
		{"~/.ssh/id_rsa", "/home/ann", "/home/ann/.ssh/id_rsa", true},
		{"~/.codex/sessions/", "/root", "/root/.codex/sessions", true},
		{"~ann/x", "/home/ann", "~ann/x", false}, // another user's home is not expanded
		{"/etc/passwd", "/home/ann", "/etc/passwd", false},
		{"~/x", "", "", false},
	} {
		if got, ok := InHome(tc.p, tc.home); got != tc.want || ok != tc.ok {
			t.Errorf("InHome(%q, %q) = %q, %v; want %q, %v", tc.p, tc.home, got, ok, tc.want, tc.ok)
		}
	}
}

package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStraceTargets checks the strace parser on the line shapes strace
// prints, so TestLoopbackOnly cannot pass by failing to see a leak.
func TestStraceTargets(t *testing.T) {
	out := filepath.Join(t.TempDir(), "strace.out")
	lines := `101 connect(19, {sa_family=AF_INET, sin_port=htons(40123), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)
102 connect(5, {sa_family=AF_UNIX, sun_path="/run/x.sock"}, 110) = 0
103 connect(7, {sa_family=AF_INET6, sin6_port=htons(443), sin6_flowinfo=htonl(0), inet_pton(AF_INET6, "2001:db8::1", &sin6_addr), sin6_scope_id=0}, 28 <unfinished ...>
104 sendto(3, "\x12\x34", 2, MSG_NOSIGNAL, {sa_family=AF_INET, sin_port=htons(53), sin_addr=inet_addr("10.0.0.2")}, 16) = 2
105 connect(8, {sa_family=AF_UNSPEC, sa_data="\0\0\0\0"}, 16) = 0
106 connect(9, {sa_family=AF_INET6, sin6_port=htons(80), inet_pton(AF_INET6, "::1", &sin6_addr), sin6_scope_id=0}, 28) = 0
107 sendto(4, "x", 1, 0, NULL, 0) = 1
`
	must(t, os.WriteFile(out, []byte(lines), 0o644))
	got, err := straceTargets(out)
	must(t, err)
	want := []struct {
		family, addr string
		local        bool
	}{
		{"AF_INET", "127.0.0.1", true},
		{"AF_UNIX", "", true},
		{"AF_INET6", "2001:db8::1", false},
		{"AF_INET", "10.0.0.2", false},
		{"AF_UNSPEC", "", true},
		{"AF_INET6", "::1", true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d targets, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		if got[i].family != w.family || got[i].addr != w.addr || got[i].local() != w.local {
			t.Errorf("target %d = %+v (local %v), want %+v", i, got[i], got[i].local(), w)
		}
	}
}

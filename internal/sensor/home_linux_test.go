package sensor

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestEnvHome(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"PATH=/bin\x00HOME=/home/ann\x00USER=ann\x00", "/home/ann"},
		{"HOME=/root", "/root"},
		{"XHOME=/x\x00PATH=/bin\x00", ""},
		{"", ""},
	} {
		if got := envHome([]byte(tc.env)); got != tc.want {
			t.Errorf("envHome(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

// TestProcHome reads the HOME of a running child whose environment sets
// another one than ours.
func TestProcHome(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/srv/elsewhere"}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(2 * time.Second)
	for {
		got := procHome(uint32(cmd.Process.Pid))
		if got == "/srv/elsewhere" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("procHome = %q, want /srv/elsewhere", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := procHome(uint32(os.Getpid())); got != os.Getenv("HOME") {
		t.Errorf("procHome(self) = %q, want %q", got, os.Getenv("HOME"))
	}
	if got := procHome(1 << 30); got != "" {
		t.Errorf("procHome of no process = %q", got)
	}
}

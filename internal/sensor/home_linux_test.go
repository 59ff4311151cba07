package sensor

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

func TestExecEnvHome(t *testing.T) {
	for _, tc := range []struct {
		env, want string
		found     bool
	}{
		{"PATH=/bin\x00HOME=/home/ann\x00USER=ann\x00", "/home/ann", true},
		{"HOME=/root\x00", "/root", true},
		{"HOME=\x00", "", true},
		{"HOME=/ro", "", false}, // cut short: not the process's HOME
		{"XHOME=/x\x00PATH=/bin\x00", "", false},
		{"HOMEDIR=/x\x00HOME=/y\x00", "/y", true},
		{"", "", false},
	} {
		var f execEnv
		f.scan([]byte(tc.env), false)
		if f.home != tc.want || f.hasHome != tc.found {
			t.Errorf("execEnv.scan(%q) = %q, %v; want %q, %v", tc.env, f.home, f.hasHome, tc.want, tc.found)
		}
	}
}

func TestEnvVar(t *testing.T) {
	env := []byte("PATHX=/no\x00PATH=/usr/bin:/bin\x00HOME=/h\x00")
	if v, ok := envVar(env, "PATH"); !ok || v != "/usr/bin:/bin" {
		t.Errorf("envVar PATH = %q, %v", v, ok)
	}
	if _, ok := envVar(env, "PAT"); ok {
		t.Error("envVar PAT found a prefix of PATH")
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

// BenchmarkProcHome reads the HOME of a live child with a 4 KiB
// environment, HOME last, as an agent's shells have.
func BenchmarkProcHome(b *testing.B) {
	cmd := exec.Command("sleep", "30")
	for i := range 64 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("VAR_%02d=%060d", i, i))
	}
	cmd.Env = append(cmd.Env, "HOME=/srv/elsewhere")
	if err := cmd.Start(); err != nil {
		b.Skipf("cannot start sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := uint32(cmd.Process.Pid)
	b.ReportAllocs()
	for b.Loop() {
		if procHome(pid) != "/srv/elsewhere" {
			b.Fatal("wrong HOME")
		}
	}
}

// TestLocationEnv: an exec records the agents' location variables it
// had, from the kernel's copy of its environment, in one pass, and reads
// /proc once, only for a copy that was cut and lacks one of them.
func TestLocationEnv(t *testing.T) {
	d := NewDecoder(time.Time{})
	var asked int
	d.Environ = func(pid uint32, buf []byte) []byte {
		asked++
		return append(buf, "HOME=/from/proc\x00CODEX_HOME=/from/proc\x00GIT_SSH=\x00NODE_OPTIONS=--x\x00"...)
	}
	env := func(eb []byte) (string, []string) {
		f := d.execEnv(eb, 1)
		return f.home, f.location()
	}
	home, got := env([]byte("PATH=/bin\x00CODEX_HOME=/srv/codex\x00HOME=/h\x00CODEX_HOME=/second\x00"))
	if want := []string{"CODEX_HOME=/srv/codex"}; fmt.Sprint(got) != fmt.Sprint(want) || home != "/h" || asked != 0 {
		t.Errorf("locationEnv = %q, home %q (asked /proc %d times), want %q, /h", got, home, asked, want)
	}
	cut := make([]byte, envMax)
	copy(cut, "PATH=/bin\x00NODE_OPTIONS=--own\x00")
	home, got = env(cut)
	if want := []string{"CODEX_HOME=/from/proc", "NODE_OPTIONS=--own"}; fmt.Sprint(got) != fmt.Sprint(want) || home != "/from/proc" || asked != 1 {
		t.Errorf("a cut copy: locationEnv = %q, home %q, /proc asked %d times; want %q, /from/proc, once", got, home, asked, want)
	}
}

// BenchmarkExecEnv finds HOME and the location variables in a 3 KiB
// environment, as an exec's record carries it (HOME last).
func BenchmarkExecEnv(b *testing.B) {
	var eb []byte
	for i := range 48 {
		eb = fmt.Appendf(eb, "VAR_%02d=%060d\x00", i, i)
	}
	eb = append(eb, "CODEX_HOME=/srv/codex\x00HOME=/srv/elsewhere\x00"...)
	d := NewDecoder(time.Time{})
	b.ReportAllocs()
	for b.Loop() {
		if d.execEnv(eb, 1).home != "/srv/elsewhere" {
			b.Fatal("wrong HOME")
		}
	}
}

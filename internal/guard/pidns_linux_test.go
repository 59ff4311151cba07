package guard

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/testenv"
)

func TestPIDNamespaceClosesProcRoot(t *testing.T) {
	testenv.RequireRoot(t)
	h := home(t)
	// A process of the same user outside the tree: its /proc/<pid>/root
	// is a view of the host's mount namespace, without the masks.
	out := exec.Command("sleep", "60")
	out.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if err := out.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Process.Kill(); out.Wait() })
	via := "/proc/" + strconv.Itoa(out.Process.Pid) + "/root" + filepath.Join(h, ".aws/credentials")
	tests := []struct {
		name  string
		pidns bool
		want  string
	}{
		// The known escape the PID namespace exists for.
		{"without a PID namespace", false, "aws_secret_access_key=REAL-AWS"},
		{"with a PID namespace", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, Options{Mask: CredentialPaths(h), PIDNamespace: tt.pidns})
			code, got := run(t, s, nobody, []string{"HOME=" + h}, "sh", "-c", "cat "+via+" 2>/dev/null; true")
			if code != 0 || strings.TrimSpace(got) != tt.want {
				t.Errorf("reading %s from inside: %d %q, want %q", via, code, got, tt.want)
			}
		})
	}
}

func TestPIDNamespaceInit(t *testing.T) {
	s := start(t, Options{PIDNamespace: true})
	t.Run("pid and status", func(t *testing.T) {
		code, got := run(t, s, nobody, nil, "sh", "-c", `echo $$ $(id -u) $(cat /proc/1/cmdline | tr '\0' ' '); exit 7`)
		f := append(strings.Fields(got), "", "", "")
		// The init's own threads take the first few PIDs of the namespace.
		if pid, _ := strconv.Atoi(f[0]); code != 7 || pid < 2 || pid > 32 || f[1] != strconv.Itoa(nobody) || f[2] != "sh" {
			t.Errorf("got %d %q, want 7 and a small pid, uid %d, and /proc/1 the init, named for the command", code, got, nobody)
		}
	})
	t.Run("signal forwarded", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd, err := s.Command(ctx, "sh", "-c", `trap 'exit 42' TERM; echo ready; while :; do sleep 0.05; done`)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Apply(cmd); err != nil {
			t.Fatal(err)
		}
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 6)
		stdout.Read(buf)
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 42 {
			t.Errorf("after SIGTERM to the init the tree exited %d, want 42 from the command's trap", code)
		}
	})
	t.Run("orphans end with the command", func(t *testing.T) {
		start := time.Now()
		if code, got := run(t, s, 0, nil, "sh", "-c", `sleep 60 & echo started`); code != 0 {
			t.Fatalf("exited %d: %s", code, got)
		}
		deadline := time.Now().Add(2 * time.Second)
		for countProcs(s.Dir()) > 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := countProcs(s.Dir()); n > 0 || time.Since(start) > 10*time.Second {
			t.Errorf("%d processes left in the session after the command exited (%v)", n, time.Since(start))
		}
	})
}

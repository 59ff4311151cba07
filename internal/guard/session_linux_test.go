package guard

import (
	"bufio"
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

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/polygraph/polygraph/internal/testenv"
)

func TestUsageIsAccounted(t *testing.T) {
	s := start(t, Options{})
	// Half a second of shell arithmetic and a file written: enough CPU for
	// cpu.stat to show it on a loaded two-core machine.
	script := `end=$(($(date +%s%N) + 500000000)); i=0
while [ $(date +%s%N) -lt $end ]; do i=$((i+1)); done
dd if=/dev/zero of="$TMPDIR/f" bs=64k count=16 conv=fsync 2>/dev/null; rm -f "$TMPDIR/f"`
	tmp := t.TempDir()
	if code, out := run(t, s, 0, []string{"TMPDIR=" + tmp}, "sh", "-c", script); code != 0 {
		t.Fatalf("tree exited %d: %s", code, out)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	u := s.Usage()
	t.Logf("usage: %+v", u)
	if u.CPUUser+u.CPUSystem < 100*time.Millisecond {
		t.Errorf("cpu.stat accounted %v of a 500ms busy loop", u.CPUUser+u.CPUSystem)
	}
	missing := map[string]bool{}
	for _, m := range u.Missing {
		missing[m] = true
	}
	// What the hierarchy provides must be read; what it lacks must say so.
	for file, v := range map[string]int64{"memory.peak": u.MemoryPeak, "pids.peak": u.PidsPeak} {
		if (v > 0) == missing[file] {
			t.Errorf("%s = %d but missing = %v", file, v, missing[file])
		}
	}
	if _, err := os.Stat(s.Dir()); !os.IsNotExist(err) {
		t.Errorf("session cgroup %s still exists after Close: %v", s.Dir(), err)
	}
}

func TestLimitsPassThrough(t *testing.T) {
	testenv.RequireRoot(t)
	_, err := cgroup2Root()
	testenv.Feature(t, "cgroup v2", err)
	s, err := Start(context.Background(), Options{ID: sessionID(t), PidsMax: 8, MemoryMax: 256 << 20})
	if err != nil {
		// Refusing is right where no hierarchy has the controllers.
		testenv.Feature(t, "pids and memory controllers", err)
	}
	t.Cleanup(func() { s.Close() })
	cg := s.cgroups()
	for file, want := range map[string]string{
		cg.file("pids.max", "pids", "pids.max"):                  "8",
		cg.file("memory.max", "memory", "memory.limit_in_bytes"): strconv.Itoa(256 << 20),
	} {
		if b, err := os.ReadFile(file); err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q, %v; want %s", file, b, err, want)
		}
	}
	// Twenty sleeps under pids.max=8: the shell's forks start failing
	// once eight processes (the shell among them) exist.
	code, out := run(t, s, 0, nil, "sh", "-c", `for i in $(seq 20); do sleep 1 & done; wait`)
	u := s.Usage()
	t.Logf("exit %d, pids.peak %d: %s", code, u.PidsPeak, out)
	if u.PidsPeak != 8 || !strings.Contains(out, "fork") {
		t.Errorf("20 children under pids.max=8: pids.peak %d, want 8, and a failed fork in %q", u.PidsPeak, out)
	}
}

func TestCleanupRemovesKilledSession(t *testing.T) {
	testenv.LockLeftovers(t, true) // no other package's isolated start cleans up first
	testenv.RequireRoot(t)
	if _, err := cgroup2Root(); err != nil {
		testenv.Feature(t, "cgroup v2", err)
	}
	id := sessionID(t)
	pid := killedOwner(t, id)
	// The killed owner's tree stays confined: its links are pinned.
	root, _ := cgroup2Root()
	dir := filepath.Join(root, parentName, sessionPrefix+id)
	pins := pinDirFor(id)
	if pins == "" {
		testenv.Feature(t, "a BPF filesystem to pin links in", errors.New("pinDirFor found none"))
	} else if n := attached(t, dir, ebpf.AttachCGroupInet4Connect); n != 1 {
		t.Errorf("after the owner's death %d connect4 programs on %s, want 1 (pinned)", n, dir)
	}
	// A live session next to the leftover must survive the cleanup.
	live := start(t, Options{ID: id + "-live"})

	t0 := time.Now()
	left, err := Cleanup()
	t.Logf("cleanup took %v", time.Since(t0))
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, l := range left {
		if l.Path == dir && l.Killed == 1 {
			found = true
		}
		if l.Path == live.Dir() {
			t.Errorf("Cleanup removed the live session %s", l.Path)
		}
	}
	if !found {
		t.Errorf("Cleanup = %v, want %s with 1 process killed", left, sessionPrefix+id)
	}
	if pins != "" {
		if _, err := os.Stat(pins); !os.IsNotExist(err) {
			t.Errorf("pinned links %s not removed: %v", pins, err)
		}
	}
	if _, err := os.Stat(live.Dir()); err != nil {
		t.Errorf("live session cgroup gone: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("the leftover process %d still runs", pid)
	}
	if again, err := Cleanup(); err != nil || len(again) != 0 {
		t.Errorf("second Cleanup = %v, %v; want nothing", again, err)
	}
}

// attached counts the programs of type at attached to the cgroup dir.
func attached(t *testing.T, dir string, at ebpf.AttachType) int {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := link.QueryPrograms(link.QueryOptions{Target: int(f.Fd()), Attach: at})
	if err != nil {
		t.Fatalf("query %s: %v", dir, err)
	}
	return len(r.Programs)
}

// killedOwner starts session id in a separate owner process, SIGKILLs
// the owner the way polygraph would be killed (so the kernel drops its
// lock and its file descriptors) and returns the pid of the process the
// session left running.
func killedOwner(t *testing.T, id string) int {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	own := exec.Command(self, "__owner", id)
	own.Stderr = os.Stderr
	stdout, err := own.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		own.Process.Kill()
		own.Wait()
		t.Fatalf("owner did not start its session: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(line))
	own.Process.Signal(syscall.SIGKILL)
	own.Wait()
	if syscall.Kill(pid, 0) != nil {
		t.Fatalf("the session's process %d died with its owner; nothing left to clean", pid)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

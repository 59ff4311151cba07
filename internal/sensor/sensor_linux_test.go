package sensor

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"

	"github.com/polygraph/polygraph/internal/procfs"
	"github.com/polygraph/polygraph/internal/testenv"
)

// Attach lists a tree from /proc and then tracks it: a process that exits
// in between is tracked but never exits again, and attach waited for it
// for ever. Prune drops such entries: gone and zombie processes go, live
// ones stay.
func TestPruneForgetsExited(t *testing.T) {
	testenv.RequireRoot(t)
	s, err := New(Options{})
	testenv.Feature(t, "BPF sensor", err)
	defer s.Close()

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "30")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait(); zombie.Wait() })
	for !procfs.Gone(zombie.Process.Pid) { // until it has exited, unreaped
		time.Sleep(5 * time.Millisecond)
	}
	for _, p := range []*exec.Cmd{gone, zombie, live} {
		if err := s.Track(uint32(p.Process.Pid), 1); err != nil {
			t.Fatal(err)
		}
	}
	s.Prune()
	got := s.Tracked()
	if len(got) != 1 || got[0] != uint32(live.Process.Pid) {
		t.Errorf("tracked after Prune = %v, want only the live pid %d (gone %d, zombie %d)",
			got, live.Process.Pid, gone.Process.Pid, zombie.Process.Pid)
	}
}

// TestRingSize: the event ring the kernel made is the size asked for,
// and by default the one DefaultRingBytes gives for this host's CPUs.
func TestRingSize(t *testing.T) {
	testenv.RequireRoot(t)
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ask, want int }{{0, DefaultRingBytes(ncpu)}, {1 << 20, 1 << 20}} {
		s, err := New(Options{RingBytes: tc.ask})
		testenv.Feature(t, "BPF sensor", err)
		got := s.coll.Maps["events"].MaxEntries()
		s.Close()
		if int(got) != tc.want {
			t.Errorf("asked %d: ring of %d bytes, want %d", tc.ask, got, tc.want)
		}
	}
}

// TestHookPath: the sensor says which hooks it runs on and what the
// faster ones answered; here they are tracepoints, whatever fentry and
// BPF LSM said.
func TestHookPath(t *testing.T) {
	testenv.RequireRoot(t)
	s, err := New(Options{})
	testenv.Feature(t, "BPF sensor", err)
	defer s.Close()
	h := s.HookPath()
	for _, want := range []string{"tp_btf sys_exit", "fentry ", "BPF LSM "} {
		if !strings.Contains(h, want) {
			t.Errorf("HookPath() = %q, want it to say %q", h, want)
		}
	}
}

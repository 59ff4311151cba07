package sensor

import (
	"os/exec"
	"testing"
	"time"

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
	for !processGone(uint32(zombie.Process.Pid)) { // until it has exited, unreaped
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

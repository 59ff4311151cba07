package record

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// TestObjectCacheFollowsPathChanges: the kernel names a file it walked a
// moment ago by the walk's id (bpf/objcache.h). A rename of the file's
// directory (by rename(2), then by io_uring) and a mount moved elsewhere,
// done by processes outside the tree between two opens of the same file,
// must give the later open the new path; a symlink to a cached file is still named by the file's
// own path, with what was asked for beside it; a hard link is its own
// name.
func TestObjectCacheFollowsPathChanges(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "f"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m1, m2 := filepath.Join(dir, "m1"), filepath.Join(dir, "m2")
	for _, d := range []string{m1, m2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mounted := exec.Command("mount", "-t", "tmpfs", "polygraph-test", m1).Run() == nil
	if mounted {
		t.Cleanup(func() {
			exec.Command("umount", m2).Run()
			exec.Command("umount", m1).Run()
		})
		if err := os.WriteFile(filepath.Join(m1, "g"), []byte("y\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("cannot mount a tmpfs here: the moved-mount case is skipped")
	}
	uring := buildC(t, "uring")

	// The tree opens each file three times, waits while the test renames
	// and moves outside it, then opens them under their new names.
	script := fmt.Sprintf(`for i in 1 2 3; do cat %[1]s/a/f >/dev/null; [ -e %[1]s/m1/g ] && cat %[1]s/m1/g >/dev/null; done
touch %[1]s/ready; while [ ! -e %[1]s/go ]; do sleep 0.01; done
cat %[1]s/b/f >/dev/null; [ -e %[1]s/m2/g ] && cat %[1]s/m2/g >/dev/null
ln -s %[1]s/b/f %[1]s/s && cat %[1]s/s >/dev/null
ln %[1]s/b/f %[1]s/h && cat %[1]s/h >/dev/null
touch %[1]s/ready2; while [ ! -e %[1]s/go2 ]; do sleep 0.01; done
cat %[1]s/c/f >/dev/null; true`, dir)
	done := make(chan error, 1)
	go func() {
		if err := waitFor(filepath.Join(dir, "ready")); err != nil {
			done <- err
			return
		}
		if err := os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")); err != nil {
			done <- err
			return
		}
		if mounted {
			if out, err := exec.Command("mount", "--move", m1, m2).CombinedOutput(); err != nil {
				done <- fmt.Errorf("mount --move: %v: %s", err, out)
				return
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
			done <- err
			return
		}
		if err := waitFor(filepath.Join(dir, "ready2")); err != nil {
			done <- err
			return
		}
		if out, err := exec.Command(uring, "rename", filepath.Join(dir, "b"), filepath.Join(dir, "c")).CombinedOutput(); err != nil {
			done <- fmt.Errorf("io_uring rename: %v: %s", err, out)
			return
		}
		done <- os.WriteFile(filepath.Join(dir, "go2"), nil, 0o644)
	}()
	res, evs := recordScript(t, dir, script, 0)
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	opens := func(requested string) []*event.Event {
		var out []*event.Event
		for _, e := range evs {
			if e.Kind != event.KindOpen || e.Comm != "cat" || e.Result == nil || *e.Result < 0 {
				continue
			}
			asked := e.Path
			if e.Object != nil && e.Object.PathRequested != "" {
				asked = e.Object.PathRequested
			}
			if asked == requested {
				out = append(out, e)
			}
		}
		return out
	}
	check := func(requested, want, differs string, n int) {
		t.Helper()
		got := opens(requested)
		if len(got) != n {
			t.Errorf("opens of %s: %d, want %d", requested, len(got), n)
		}
		for _, e := range got {
			if e.Object == nil {
				t.Errorf("open of %s has no object", requested)
				continue
			}
			if e.Path != want || e.Object.PathDiffers != differs {
				t.Errorf("open of %s recorded as %q (differs %q), want %q (differs %q)",
					requested, e.Path, e.Object.PathDiffers, want, differs)
			}
		}
	}
	check(filepath.Join(dir, "a", "f"), filepath.Join(dir, "a", "f"), "", 3)
	check(filepath.Join(dir, "b", "f"), filepath.Join(dir, "b", "f"), "", 1)
	check(filepath.Join(dir, "s"), filepath.Join(dir, "b", "f"), "symlink", 1)
	check(filepath.Join(dir, "h"), filepath.Join(dir, "h"), "", 1)
	check(filepath.Join(dir, "c", "f"), filepath.Join(dir, "c", "f"), "", 1)
	if mounted {
		check(filepath.Join(m1, "g"), filepath.Join(m1, "g"), "", 3)
		check(filepath.Join(m2, "g"), filepath.Join(m2, "g"), "", 1)
	}
	// The repeated opens were named by id: the cache is what this test is about.
	if res.Stats.WalkHits < 2 {
		t.Errorf("walk hits = %d, want at least the second and third open of a/f", res.Stats.WalkHits)
	}
	if res.Stats.WalkUnknown != 0 {
		t.Errorf("%d opens named a walk that never arrived", res.Stats.WalkUnknown)
	}
	t.Logf("walk hits %d", res.Stats.WalkHits)
}

// waitFor waits up to a minute for path to exist.
func waitFor(path string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProcMemNeverCached: whether an open of /proc/PID/mem is an inject is
// judged from its walked name, so /proc is never named by a cached walk:
// /proc/PID/mem opened for reading and then for writing is an inject the
// second time too.
func TestProcMemNeverCached(t *testing.T) {
	dir := t.TempDir()
	script := `sleep 30 & P=$!
cat /proc/$P/mem >/dev/null 2>&1; cat /proc/$P/mem >/dev/null 2>&1
exec 3<>/proc/$P/mem; exec 3>&-
echo $P > victim; kill $P`
	_, evs := recordWith(t, Options{Command: []string{"sh", "-c", script}, Dir: dir, KeepCaps: true})
	b, err := os.ReadFile(filepath.Join(dir, "victim"))
	if err != nil {
		t.Fatal(err)
	}
	var victim uint32
	fmt.Sscan(string(b), &victim)
	inj := find(evs, func(e *event.Event) bool {
		return e.Kind == event.KindInject && e.Method() == "proc_mem" && e.TargetPID() == victim
	})
	if inj == nil {
		t.Fatalf("opening /proc/%d/mem for writing after reading it twice is no inject", victim)
	}
}

package integrity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

type dropVerdicts struct{}

func (dropVerdicts) AddVerdict(manifest.Verdict) {}

// TestTaint: a session whose traced tree rewrote a package's md5sums and
// the pin file (to bless a trojan) leaves taints in the store; the next
// checker trusts neither while the files stand as the tree left them,
// and trusts dpkg again once the package's md5sums are replaced.
func TestTaint(t *testing.T) {
	home := t.TempDir()
	dir := t.TempDir()
	bin := copyFile(t, "/bin/sh", filepath.Join(dir, "tool"), 0o755)
	fake := fakeDpkg(t, "pgtool", map[string]string{bin: md5Of(t, bin)})
	sums := filepath.Join(fake, "pgtool.md5sums")
	store, err := OpenStore(home)
	if err != nil {
		t.Fatal(err)
	}
	pinned := copyFile(t, "/bin/sh", filepath.Join(dir, "pinned"), 0o755)
	if _, err := store.PinPaths([]string{pinned}, time.Now()); err != nil {
		t.Fatal(err)
	}
	check := func(p string) Verdict {
		st, err := OpenStore(home)
		if err != nil {
			t.Fatal(err)
		}
		c := newChecker(t, Options{Store: st, DpkgDir: fake, TempDirs: noTemp})
		return c.Check(context.Background(), Request{Path: p}).Binary
	}
	if v := check(bin); v.Status != Verified || v.Source != SourceDpkg {
		t.Fatalf("before: %+v, want verified by dpkg", v)
	}
	if v := check(pinned); v.Status != Verified || v.Source != SourcePin {
		t.Fatalf("before: %+v, want verified by pin", v)
	}

	// The session: its tree writes both files (what the events say; the
	// files themselves are as they were, which is what a tree that
	// blessed its trojan leaves).
	x := StartSession(context.Background(), home, Options{DpkgDir: fake, TempDirs: noTemp, Session: "S1"}, dropVerdicts{})
	if x == nil {
		t.Fatal("no session check")
	}
	for _, p := range []string{sums, filepath.Join(store.Dir, PinsFile)} {
		x.Submit(&event.Event{Kind: event.KindOpen, Path: p, Access: "write", Result: event.Ptr(int64(3))})
	}
	// A refused write and a read leave nothing.
	x.Submit(&event.Event{Kind: event.KindOpen, Path: filepath.Join(store.Dir, SeenFile), Access: "write", Result: event.Ptr(int64(-13))})
	x.Close()
	taints, err := store.Taints()
	if err != nil || len(taints) != 2 || taints[sums].Session != "S1" {
		t.Fatalf("taints %+v, %v; want the md5sums and pin file, by S1", taints, err)
	}
	if got := x.TrustFiles(); len(got) != 2 || got[0] != filepath.Join(store.Dir, PinsFile) {
		t.Errorf("TrustFiles %v", got)
	}

	v := check(bin)
	if v.Status == Verified || !strings.Contains(v.Reason, "session S1") {
		t.Errorf("after the rewrite: %+v, want not verified, naming session S1", v)
	}
	if v := check(pinned); v.Status == Verified {
		t.Errorf("pinned after the pin file's rewrite: %+v, want not verified", v)
	}

	// dpkg reinstalling the package replaces its md5sums (a new file).
	b, err := os.ReadFile(sums)
	if err != nil {
		t.Fatal(err)
	}
	tmp := sums + ".new"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, sums); err != nil {
		t.Fatal(err)
	}
	if v := check(bin); v.Status != Verified || v.Source != SourceDpkg {
		t.Errorf("after a reinstall: %+v, want verified by dpkg", v)
	}
	// Pinning again rewrites the pin file: its pins count again.
	if _, err := store.PinPaths([]string{pinned}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if v := check(pinned); v.Status != Verified || v.Source != SourcePin {
		t.Errorf("after pinning again: %+v, want verified by pin", v)
	}
}

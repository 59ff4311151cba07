package record

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// newMountAPI is a program that mounts with the new mount API, in the
// directory it runs in: a clone of src attached at nt (open_tree,
// move_mount), and an overlay over src built with fsopen, fsconfig and
// fsmount and attached at ov/merged2. Python has no wrappers for them:
// the raw syscalls, whose numbers every architecture shares.
const newMountAPI = `import ctypes
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
AT_FDCWD = -100
def sc(*a):
    r = libc.syscall(*[L(x) if isinstance(x, int) else x for x in a])
    if r < 0:
        raise OSError(ctypes.get_errno(), "syscall %d" % a[0])
    return r
tree = sc(428, AT_FDCWD, b"src", 1)                 # open_tree(OPEN_TREE_CLONE)
sc(429, tree, b"", AT_FDCWD, b"nt", 4)             # move_mount(MOVE_MOUNT_F_EMPTY_PATH)
fs = sc(430, b"overlay", 0)                         # fsopen
sc(431, fs, 1, b"lowerdir", b"src", 0)              # fsconfig(FSCONFIG_SET_STRING)
sc(431, fs, 1, b"upperdir", b"ov/upper2", 0)
sc(431, fs, 1, b"workdir", b"ov/work2", 0)
sc(431, fs, 6, None, None, 0)                       # FSCONFIG_CMD_CREATE
mnt = sc(432, fs, 0, 0)                             # fsmount
sc(429, mnt, b"", AT_FDCWD, b"ov/merged2", 4)
print(open("ov/merged2/secret").read().strip())
`

// TestMountsRecorded: mounts made in a private user and mount namespace
// under the real sensor are mount events with what they named: a bind's
// source and target and an overlay's layers resolved against the cwd
// (the script names them relative), umount2, and the new API's calls with
// the descriptors that tie them together; the read through each mount
// is recorded too.
func TestMountsRecorded(t *testing.T) {
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare")
	}
	dir := t.TempDir()
	for _, d := range []string{"src", "mnt", "nt", "ov/upper", "ov/work", "ov/merged", "ov/upper2", "ov/work2", "ov/merged2"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "src", "secret"), []byte("s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "newapi.py"), []byte(newMountAPI), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	script := `cd ` + dir + ` && unshare -Urm sh -c 'mount --bind src mnt && cat mnt/secret &&
mount -t overlay overlay -o lowerdir=src,upperdir=ov/upper,workdir=ov/work ov/merged && cat ov/merged/secret &&
umount mnt && python3 newapi.py' > ` + out + ` 2>&1`
	_, evs := recordScript(t, dir, script, 0)
	if b, _ := os.ReadFile(out); string(b) != "s3cr3t\ns3cr3t\ns3cr3t\n" {
		t.Fatalf("the script's mounts did not all work (each read prints the secret): %q", b)
	}
	abs := func(p string) string { return filepath.Join(dir, p) }
	var mounts []*event.Event
	for _, e := range evs {
		if e.Kind == event.KindMount {
			mounts = append(mounts, e)
		}
	}
	find := func(op, path string) *event.Event {
		for _, e := range mounts {
			if e.MountOp() == op && (path == "" || e.Path == path) {
				return e
			}
		}
		t.Errorf("no %s event of %q among %d mount events", op, path, len(mounts))
		for _, e := range mounts {
			t.Logf("  %s %q %q %+v", e.MountOp(), e.Path, e.Path2, *e.Mount)
		}
		return nil
	}
	if e := find("mount", abs("mnt")); e != nil {
		if e.Path2 != abs("src") || e.Flags == nil || *e.Flags&0x1000 == 0 || e.Failed() {
			t.Errorf("bind: source %q flags %v result %v, want %s, MS_BIND, 0", e.Path2, e.Flags, *e.Result, abs("src"))
		}
	}
	if e := find("mount", abs("ov/merged")); e != nil {
		if e.FSType() != "overlay" || !slices.Contains(e.MountLayers(), abs("src")) || !slices.Contains(e.MountLayers(), abs("ov/upper")) ||
			e.MountData() != "lowerdir=src,upperdir=ov/upper,workdir=ov/work" {
			t.Errorf("overlay: type %q data %q layers %q", e.FSType(), e.MountData(), e.MountLayers())
		}
	}
	find("umount", abs("mnt"))
	tree := find("open_tree", abs("src"))
	if mv := find("move_mount", abs("nt")); mv != nil && tree != nil {
		if mv.MountFD() == nil || int64(*mv.MountFD()) != *tree.Result || mv.Path2 != "" {
			t.Errorf("move_mount from fd %v (path2 %q), want open_tree's fd %d", mv.MountFD(), mv.Path2, *tree.Result)
		}
	}
	fsopen := find("fsopen", "")
	if fsopen != nil && fsopen.FSType() != "overlay" {
		t.Errorf("fsopen type %q", fsopen.FSType())
	}
	var lower *event.Event
	for _, e := range mounts {
		if e.MountOp() == "fsconfig" && e.MountData() == "lowerdir=src" {
			lower = e
		}
	}
	if lower == nil || !slices.Equal(lower.MountLayers(), []string{abs("src")}) || fsopen == nil || int64(*lower.MountFD()) != *fsopen.Result {
		t.Errorf("fsconfig lowerdir=src: %+v, want its layer %s on fsopen's fd", lower, abs("src"))
	}
	fsm := find("fsmount", "")
	if mv := find("move_mount", abs("ov/merged2")); mv != nil && fsm != nil {
		if mv.MountFD() == nil || int64(*mv.MountFD()) != *fsm.Result || int64(*fsm.MountFD()) != *fsopen.Result {
			t.Errorf("move_mount from fd %v, fsmount %v of fd %v, want them chained to fsopen's %d", mv.MountFD(), *fsm.Result, fsm.MountFD(), *fsopen.Result)
		}
	}
	for _, p := range []string{"mnt/secret", "ov/merged/secret", "ov/merged2/secret"} {
		if !slices.ContainsFunc(evs, func(e *event.Event) bool { return e.Kind == event.KindOpen && e.Path == abs(p) && !e.Failed() }) {
			t.Errorf("no open of %s", abs(p))
		}
	}
}

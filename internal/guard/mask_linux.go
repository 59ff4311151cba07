package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// specEnv carries the mount and credential spec from Session.Apply to
// Exec in the child, which removes it, so the command never sees it.
const specEnv = "POLYGRAPH_GUARD_SPEC"

// spec is what the child does before it execs: mask, keep, then become
// the target user.
type spec struct {
	Mask   []string `json:"mask,omitempty"`
	Keep   []string `json:"keep,omitempty"`
	UID    *uint32  `json:"uid,omitempty"`
	GID    uint32   `json:"gid,omitempty"`
	Groups []uint32 `json:"groups,omitempty"`
	// Join lists v1 cgroup.procs files to move into first: v1 has no
	// CLONE_INTO_CGROUP.
	Join []string `json:"join,omitempty"`
	// Init: the process is PID 1 of a new PID namespace and stays there
	// as the tree's init, running the command as its child.
	Init bool `json:"init,omitempty"`
	// NoIOUring: the tree's io_uring calls fail (denyIOUring).
	NoIOUring bool `json:"no_io_uring,omitempty"`
}

// enter applies the isolation Session.Apply asked for to the calling
// process, which must be the freshly started child (in its own mount
// namespace, still root): it makes every mount private, masks the
// credential paths and, unless the spec makes it the namespace's init,
// drops to the target user. ok is false when the environment holds no
// spec (the process was not started isolated).
func enter() (sp spec, ok bool, err error) {
	raw, ok := os.LookupEnv(specEnv)
	if !ok {
		return sp, false, nil
	}
	os.Unsetenv(specEnv)
	if err := json.Unmarshal([]byte(raw), &sp); err != nil {
		return sp, true, fmt.Errorf("guard spec: %w", err)
	}
	for _, p := range sp.Join {
		// "0" is the writing process, in any PID namespace.
		if err := os.WriteFile(p, []byte("0"), 0); err != nil {
			return sp, true, fmt.Errorf("join %s: %w", p, err)
		}
	}
	// Without this the masks would propagate back to the host's
	// namespace through shared mount peers (systemd makes / shared).
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return sp, true, fmt.Errorf("make mounts private: %w", err)
	}
	if err := applyMasks(sp.Mask, sp.Keep); err != nil {
		return sp, true, err
	}
	if sp.NoIOUring {
		if err := denyIOUring(); err != nil {
			return sp, true, err
		}
	}
	if sp.Init {
		// A procfs of the new PID namespace: the tree sees only itself,
		// not /proc/<pid>/root of the user's other processes, whose
		// mount namespace has no masks.
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return sp, true, fmt.Errorf("mount the namespace's /proc: %w", err)
		}
		return sp, true, nil
	}
	return sp, true, dropTo(sp)
}

// applyMasks hides each existing path in mask, shortest first so a
// path under an already masked directory is simply gone, and puts the
// keep paths back over the masks that cover them.
func applyMasks(mask, keep []string) error {
	// Resolved first: mount follows symlinks anyway, and the ordering
	// and the staging choice below must see the real places.
	mask = resolved(mask)
	keep = resolved(keep)
	sort.Slice(mask, func(i, j int) bool { return len(mask[i]) < len(mask[j]) })
	// The kept paths are opened before anything is masked: after, they
	// are no longer reachable by name.
	kept := map[string]int{}
	for _, k := range keep {
		if fd, err := unix.Open(k, unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
			kept[k] = fd
		}
	}
	defer func() {
		for _, fd := range kept {
			unix.Close(fd)
		}
	}()
	empty, done, err := emptyFile(append(mask, keep...))
	if err != nil {
		return err
	}
	defer done()
	for _, m := range mask {
		if _, ok := kept[m]; ok || slices.Contains(keep, m) {
			continue // kept wins over masked
		}
		fi, err := os.Stat(m)
		if err != nil {
			continue // absent (or under a mask already): nothing to hide
		}
		if fi.IsDir() {
			err = maskDir(m, under(m, kept))
		} else {
			err = bindRO(fmt.Sprintf("/proc/self/fd/%d", empty), m)
		}
		if err != nil {
			return fmt.Errorf("mask %s: %w", m, err)
		}
	}
	return nil
}

// under returns the kept paths inside dir.
func under(dir string, kept map[string]int) map[string]int {
	out := map[string]int{}
	for k, fd := range kept {
		if strings.HasPrefix(k, dir+"/") {
			out[k] = fd
		}
	}
	return out
}

// maskDir covers dir with an empty tmpfs, binds the kept paths back into
// it at their places, and makes the tmpfs read-only.
func maskDir(dir string, kept map[string]int) error {
	if err := unix.Mount("polygraph-mask", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k"); err != nil {
		return err
	}
	for k, fd := range kept {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(k), 0o755); err != nil {
			return err
		}
		var err error
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			err = os.Mkdir(k, 0o755)
		} else {
			err = os.WriteFile(k, nil, 0o444)
		}
		if err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		src := fmt.Sprintf("/proc/self/fd/%d", fd)
		if err := unix.Mount(src, k, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("keep %s: %w", k, err)
		}
	}
	return unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=64k")
}

// bindRO binds src over dst and makes the bind read-only (a bind mount
// takes its flags only on a remount).
func bindRO(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY, "")
}

// emptyFile returns an O_PATH descriptor of an empty, read-only file on a
// private tmpfs, the source of every file mask. The tmpfs covers a
// staging directory only while the masks are bound (a bind needs its
// source attached); done detaches it, and the file lives on in the binds
// that use it.
func emptyFile(paths []string) (fd int, done func(), err error) {
	stage := stagingDir(paths)
	if stage == "" {
		return -1, nil, errors.New("no directory to stage the empty file in")
	}
	if err := unix.Mount("polygraph-mask", stage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=4k"); err != nil {
		return -1, nil, fmt.Errorf("stage the empty file: %w", err)
	}
	unstage := func() { unix.Unmount(stage, unix.MNT_DETACH) }
	p := filepath.Join(stage, "empty")
	if err := os.WriteFile(p, nil, 0o444); err != nil {
		unstage()
		return -1, nil, err
	}
	fd, err = unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		unstage()
		return -1, nil, err
	}
	return fd, func() { unix.Close(fd); unstage() }, nil
}

// dropTo becomes the spec's user, if it names one. Go's Setuid and
// friends apply to every thread of the process.
func dropTo(sp spec) error {
	if sp.UID == nil {
		return nil
	}
	groups := make([]int, len(sp.Groups))
	for i, g := range sp.Groups {
		groups[i] = int(g)
	}
	if err := unix.Setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := unix.Setgid(int(sp.GID)); err != nil {
		return fmt.Errorf("setgid %d: %w", sp.GID, err)
	}
	if err := unix.Setuid(int(*sp.UID)); err != nil {
		return fmt.Errorf("setuid %d: %w", *sp.UID, err)
	}
	return nil
}

// stagingDir picks a directory to cover briefly that holds none of paths
// (covering it would hide them while they are masked).
func stagingDir(paths []string) string {
	for _, d := range []string{"/dev/shm", "/run", "/mnt", "/tmp", "/var/tmp"} {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		clear := true
		for _, p := range paths {
			if p == d || strings.HasPrefix(p, d+"/") {
				clear = false
				break
			}
		}
		if clear {
			return d
		}
	}
	return ""
}

// resolved returns paths with symlinks resolved; a path that does not
// resolve stays as it is (it is skipped later if absent).
func resolved(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		out[i] = p
	}
	return out
}

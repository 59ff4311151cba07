package guard

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// parentName is the cgroup under the cgroup2 root that holds every
// session's cgroup; a session is parentName/polygraph-<id>. The fixed
// names are what lets Cleanup find a killed session's leftovers.
const (
	parentName    = "polygraph"
	sessionPrefix = "polygraph-"
)

// wantControllers are enabled for the session cgroups where the hierarchy
// has them; on a hybrid machine most are bound to v1 and absent here.
var wantControllers = []string{"cpu", "memory", "io", "pids"}

// cgroup2Root finds where the unified hierarchy is mounted, from
// mountinfo rather than by assuming /sys/fs/cgroup: hybrid machines mount
// it at /sys/fs/cgroup/unified.
func cgroup2Root() (string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", fmt.Errorf("read mountinfo: %w", err)
	}
	return parseCgroup2Root(b)
}

// parseCgroup2Root returns the mount point of the first cgroup2 mount
// whose root is the hierarchy's root (a container may see a subtree).
func parseCgroup2Root(mountinfo []byte) (string, error) {
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, pf := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(pf) < 1 || pf[0] != "cgroup2" {
			continue
		}
		return unescapeMount(f[4]), nil
	}
	return "", errors.New("no cgroup2 hierarchy is mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// parentCgroup creates (if needed) the polygraph parent and enables in
// it, and in the root, the controllers the hierarchy offers.
func parentCgroup() (string, error) {
	root, err := cgroup2Root()
	if err != nil {
		return "", err
	}
	parent := filepath.Join(root, parentName)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("create cgroup %s: %w", parent, err)
	}
	for _, dir := range []string{root, parent} {
		enableControllers(dir)
	}
	return parent, nil
}

// enableControllers turns on, one by one, the wanted controllers dir
// offers; one refused (a v1-bound or busy controller) does not stop the
// others, and what is missing shows in Usage.Missing and in Start's
// refusal of a limit.
func enableControllers(dir string) {
	have, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	on, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	for _, c := range wantControllers {
		if !hasWord(have, c) || hasWord(on, c) {
			continue
		}
		os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+"+c), 0)
	}
}

func hasWord(b []byte, w string) bool {
	for _, f := range strings.Fields(string(b)) {
		if f == w {
			return true
		}
	}
	return false
}

// cgroups are one session's cgroup directories: the v2 one, and on a
// hybrid machine v1 ones for the controllers v2 lacks (by v1 name:
// memory, pids, blkio).
type cgroups struct {
	v2 string
	v1 map[string]string
}

// file returns the path of the first that exists of the v2 file and the
// v1 controller's file, or "".
func (cg cgroups) file(v2file, v1ctrl, v1file string) string {
	if p := filepath.Join(cg.v2, v2file); exists(p) {
		return p
	}
	if d, ok := cg.v1[v1ctrl]; ok {
		if p := filepath.Join(d, v1file); exists(p) {
			return p
		}
	}
	return ""
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// setLimits writes the session's limits; a requested limit no hierarchy
// can take is an error.
func setLimits(cg cgroups, o Options) error {
	for _, l := range []struct {
		v2, ctrl, v1 string
		v            int64
	}{
		{"memory.max", "memory", "memory.limit_in_bytes", o.MemoryMax},
		{"pids.max", "pids", "pids.max", o.PidsMax},
	} {
		if l.v == 0 {
			continue
		}
		p := cg.file(l.v2, l.ctrl, l.v1)
		if p == "" {
			return fmt.Errorf("limit %s: no cgroup hierarchy here has the %s controller", l.v2, l.ctrl)
		}
		if err := os.WriteFile(p, []byte(strconv.FormatInt(l.v, 10)), 0); err != nil {
			return fmt.Errorf("set %s: %w", p, err)
		}
	}
	return nil
}

// readUsage reads the session cgroups' accounting files, v2 first.
func readUsage(cg cgroups) Usage {
	var u Usage
	if kv, ok := readKV(cg.v2, "cpu.stat", &u); ok {
		u.CPUUser = time.Duration(kv["user_usec"]) * time.Microsecond
		u.CPUSystem = time.Duration(kv["system_usec"]) * time.Microsecond
	}
	u.MemoryPeak = readInt(cg.file("memory.peak", "memory", "memory.max_usage_in_bytes"), "memory.peak", &u)
	u.PidsPeak = readInt(cg.file("pids.peak", "pids", "pids.peak"), "pids.peak", &u)
	p := cg.file("io.stat", "blkio", "blkio.throttle.io_service_bytes_recursive")
	b, err := os.ReadFile(p)
	if p == "" || err != nil {
		u.Missing = append(u.Missing, "io.stat")
		return u
	}
	u.IORead, u.IOWrite = parseIO(b)
	return u
}

// parseIO sums read and written bytes over devices, from v2's io.stat
// ("MAJ:MIN rbytes=N wbytes=N ...") or v1's io_service_bytes ("MAJ:MIN
// Read N", "MAJ:MIN Write N", "Total N").
func parseIO(b []byte) (read, written int64) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && (f[1] == "Read" || f[1] == "Write") {
			n, _ := strconv.ParseInt(f[2], 10, 64)
			if f[1] == "Read" {
				read += n
			} else {
				written += n
			}
			continue
		}
		for _, kv := range f {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "rbytes":
				read += n
			case "wbytes":
				written += n
			}
		}
	}
	return read, written
}

func readKV(dir, file string, u *Usage) (map[string]int64, bool) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		u.Missing = append(u.Missing, file)
		return nil, false
	}
	kv := map[string]int64{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok {
			kv[k], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	return kv, true
}

// readInt reads a one-number file at p, noting name as missing when
// there is none.
func readInt(p, name string, u *Usage) int64 {
	b, err := os.ReadFile(p)
	if p == "" || err != nil {
		u.Missing = append(u.Missing, name)
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// removeCgroup kills whatever still runs in dir and removes it. It
// returns how many processes it had to kill.
func removeCgroup(dir string) (int, error) {
	procs := countProcs(dir)
	if procs > 0 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err != nil {
			// cgroup.kill is Linux 5.14+; before it, one by one (a fork
			// racing this survives, which the EBUSY loop below reports).
			b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					unix.Kill(pid, unix.SIGKILL)
				}
			}
		}
	}
	// rmdir fails with EBUSY until the killed tasks are reaped by the
	// kernel; that takes milliseconds, bounded here at two seconds.
	deadline := time.Now().Add(2 * time.Second)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return procs, nil
		}
		if time.Now().After(deadline) {
			return procs, fmt.Errorf("remove cgroup %s: %w", dir, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countProcs(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	return len(strings.Fields(string(b)))
}

// Cleanup removes what sessions killed before their Close left behind:
// every polygraph-* cgroup under the polygraph parent (and its v1
// cgroups on a hybrid machine), killing the
// processes still in them (an agent whose guard died is stopped rather
// than left running), and their pinned BPF links. A live session holds a
// lock on its lock file; Cleanup leaves those alone, so running it while
// another polygraph session is live is safe. It returns what it removed.
func Cleanup() ([]Leftover, error) {
	root, err := cgroup2Root()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(root, parentName)
	ids := map[string]bool{}
	for _, dir := range []string{parent, pinRoot} {
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("list %s: %w", dir, err)
		}
		for _, e := range ents {
			name := e.Name()
			if dir == parent {
				if !strings.HasPrefix(name, sessionPrefix) {
					continue
				}
				name = strings.TrimPrefix(name, sessionPrefix)
			}
			if e.IsDir() {
				ids[name] = true
			}
		}
	}
	for _, id := range v1Leftovers() {
		ids[id] = true
	}
	var out []Leftover
	var errs []error
	for id := range ids {
		lock, live := tryLock(id)
		if live {
			continue
		}
		left, err := removeSession(parent, id)
		out = append(out, left...)
		errs = append(errs, err)
		if lock != nil {
			os.Remove(lock.Name())
			lock.Close()
		}
	}
	return out, errors.Join(errs...)
}

// removeSession removes session id's cgroup (killing what runs in it)
// and then its pinned links, whichever exist. The caller holds the lock.
func removeSession(parent, id string) ([]Leftover, error) {
	var out []Leftover
	dir := filepath.Join(parent, sessionPrefix+id)
	if _, err := os.Stat(dir); err == nil {
		n, err := removeCgroup(dir)
		if err != nil {
			return out, err
		}
		out = append(out, Leftover{Path: dir, Killed: n})
	}
	v1, err := removeV1(id)
	out = append(out, v1...)
	if err != nil {
		return out, err
	}
	pins := filepath.Join(pinRoot, id)
	if _, err := os.Stat(pins); err == nil {
		if err := os.RemoveAll(pins); err != nil {
			return out, fmt.Errorf("unpin %s: %w", pins, err)
		}
		out = append(out, Leftover{Path: pins})
	}
	return out, nil
}

// lockDir holds one lock file per live session; the kernel drops the
// flock when the owner dies, however it dies, which is what tells
// Cleanup a session is a leftover.
var lockDir = "/run/polygraph"

// lockSession takes the session's lock, failing if a live process holds
// it (a session with the same ID is running).
func lockSession(id string) (*os.File, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", lockDir, err)
	}
	f, live := tryLock(id)
	if live {
		return nil, fmt.Errorf("session %s is already running", id)
	}
	if f == nil {
		return nil, fmt.Errorf("lock session %s in %s", id, lockDir)
	}
	return f, nil
}

// tryLock takes the lock of session id without waiting. live reports
// that another process holds it; f is nil when it could not be opened.
func tryLock(id string) (f *os.File, live bool) {
	// O_CLOEXEC matters: a tree that inherited the lock would keep a
	// killed polygraph's session looking live.
	f, err := os.OpenFile(filepath.Join(lockDir, id+".lock"), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, false
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, errors.Is(err, unix.EWOULDBLOCK)
	}
	return f, false
}

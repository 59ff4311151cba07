//go:build linux

package redteam

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// world is what every run shares: the built programs, the sinks, the
// system settings some techniques touch (each restored at the end), and
// the accounts of the unprivileged runs.
type world struct {
	dir   string // the matrix's directory: bin/, sessions/, one directory per run
	bin   string // bin/: rt.py, fakessh, libdump.so, storm, polygraph (0755: the accounts run them)
	pg    string // the polygraph binary
	sinks *sinks
	keep  bool // POLYGRAPH_E2E_KEEP=1: keep sessions and run directories

	// k8sToken is the service-account token planted at its well-known
	// path for the whole matrix (its canary is shared by the runs).
	k8sToken, k8sCanary string
	k8sErr              error
	atdPID              int   // the atd the at technique hands jobs to (0: none)
	atdErr              error // why there is none
	binfmtErr           error // why binfmt_misc is not usable

	locks sync.Map // a system setting's name → *sync.Mutex: one run at a time changes it

	accMu sync.Mutex // useradd and userdel lock /etc/passwd: one at a time
	accN  int
}

// The programs the matrix needs; .ci/run installs them.
var worldTools = []string{"sudo", "useradd", "userdel", "visudo", "tmux", "keyctl", "at", "atd",
	"unshare", "ssh", "scp", "ssh-keygen", "git", "curl", "tar", "diff", "sed"}

const python = "/usr/bin/python3"

func newWorld(t *testing.T) *world {
	t.Helper()
	var missing []string
	for _, tool := range append(worldTools, python) {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("missing %s: the red-team matrix needs them (.ci/run installs them)", strings.Join(missing, ", "))
	}
	dir, err := os.MkdirTemp("", "polygraph-redteam-")
	must(t, err)
	w := &world{dir: dir, bin: filepath.Join(dir, "bin"), keep: os.Getenv("POLYGRAPH_E2E_KEEP") == "1"}
	t.Cleanup(func() {
		if w.keep {
			t.Logf("kept the matrix's sessions and run directories in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	must(t, os.Chmod(dir, 0o755))
	must(t, os.MkdirAll(w.bin, 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "sessions"), 0o700))
	w.build(t)
	w.sinks = startSinks(t)
	w.restoreLeftovers(t)
	w.startAtd(t)
	w.mountBinfmt(t)
	w.plantK8sToken(t)
	return w
}

// build puts the helper programs and polygraph into bin/.
func (w *world) build(t *testing.T) {
	src := testdata(t)
	for _, f := range []string{"rt.py", "fakessh"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(w.bin, f), b, 0o755))
	}
	cc := "cc"
	if _, err := exec.LookPath(cc); err != nil {
		cc = "clang"
	}
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", filepath.Join(w.bin, "libdump.so"),
		filepath.Join(src, "dump.c"), "-ldl").CombinedOutput(); err != nil {
		t.Fatalf("build libdump.so with %s: %v: %s", cc, err, out)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	w.pg = filepath.Join(w.bin, "polygraph")
	for pkg, out := range map[string]string{
		"github.com/polygraph/polygraph/cmd/polygraph":               w.pg,
		"github.com/polygraph/polygraph/test/redteam/testdata/storm": filepath.Join(w.bin, "storm"),
	} {
		if b, err := exec.Command(goBin, "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v: %s", pkg, err, b)
		}
	}
}

// testdata is the package's testdata directory.
func testdata(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the package's source")
	}
	return filepath.Join(filepath.Dir(file), "testdata")
}

// lock returns the mutex of a system setting.
func (w *world) lock(name string) *sync.Mutex {
	m, _ := w.locks.LoadOrStore(name, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// corePatternSave keeps kernel.core_pattern's value while a technique
// may change it, so a matrix that died mid-run is undone by the next.
const (
	corePattern     = "/proc/sys/kernel/core_pattern"
	corePatternSave = "/run/polygraph-redteam-core_pattern"
	binfmtDir       = "/proc/sys/fs/binfmt_misc"
	binfmtPrefix    = "polygraph-rt-"
)

// restoreLeftovers undoes what a matrix killed before its clean-up left:
// the saved core_pattern, binfmt_misc entries of ours.
func (w *world) restoreLeftovers(t *testing.T) {
	if b, err := os.ReadFile(corePatternSave); err == nil {
		if err := os.WriteFile(corePattern, b, 0o644); err != nil {
			t.Errorf("restore %s from %s: %v", corePattern, corePatternSave, err)
		} else {
			t.Logf("restored %s to %q, left by an earlier matrix", corePattern, strings.TrimSpace(string(b)))
			os.Remove(corePatternSave)
		}
	}
	w.removeBinfmt()
}

// saveCorePattern records core_pattern before a run that may change it;
// restoreCorePattern puts it back and drops the record.
func saveCorePattern() (string, error) {
	b, err := os.ReadFile(corePattern)
	if err != nil {
		return "", err
	}
	return string(b), os.WriteFile(corePatternSave, b, 0o600)
}

func restoreCorePattern(orig string) error {
	cur, err := os.ReadFile(corePattern)
	if err == nil && string(cur) == orig {
		return os.Remove(corePatternSave)
	}
	if err := os.WriteFile(corePattern, []byte(orig), 0o644); err != nil {
		return fmt.Errorf("restore %s: %w", corePattern, err)
	}
	return os.Remove(corePatternSave)
}

// removeBinfmt removes every binfmt_misc entry a technique registered
// (they are named binfmtPrefix…).
func (w *world) removeBinfmt() {
	ents, _ := os.ReadDir(binfmtDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), binfmtPrefix) {
			_ = os.WriteFile(filepath.Join(binfmtDir, e.Name()), []byte("-1"), 0o200)
		}
	}
}

// mountBinfmt mounts binfmt_misc where it is not (and unmounts it at the
// end); its entries of ours are removed at the end either way.
func (w *world) mountBinfmt(t *testing.T) {
	t.Cleanup(w.removeBinfmt)
	if _, err := os.Stat(filepath.Join(binfmtDir, "register")); err == nil {
		return
	}
	if out, err := exec.Command("mount", "-t", "binfmt_misc", "binfmt_misc", binfmtDir).CombinedOutput(); err != nil {
		w.binfmtErr = fmt.Errorf("mount binfmt_misc: %v: %s", err, strings.TrimSpace(string(out)))
		return
	}
	t.Cleanup(func() {
		w.removeBinfmt()
		if out, err := exec.Command("umount", binfmtDir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s", binfmtDir, err, out)
		}
	})
}

// startAtd starts atd in the foreground when none runs (and stops it at
// the end): the at technique hands it a job.
func (w *world) startAtd(t *testing.T) {
	if b, err := os.ReadFile("/run/atd.pid"); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && alive(pid) {
			w.atdPID = pid
			return
		}
	}
	cmd := exec.Command("atd", "-f")
	if err := cmd.Start(); err != nil {
		w.atdErr = fmt.Errorf("start atd: %w", err)
		return
	}
	w.atdPID = cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = os.Remove("/run/atd.pid")
		removeAtJobs(w.dir)
	})
}

func alive(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// plantK8sToken plants a service-account token at the path a pod has it,
// when nothing is there (and removes what it made at the end).
func (w *world) plantK8sToken(t *testing.T) {
	const root = "/run/secrets"
	w.k8sToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	if _, err := os.Stat(root); err == nil {
		w.k8sErr = errors.New(root + " exists on this machine: the matrix plants its token only where nothing is")
		return
	}
	w.k8sCanary = "RTCk8s" + randHex(6)
	dir := filepath.Dir(w.k8sToken)
	must(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(root) })
	jwt := "eyJhbGciOiJSUzI1NiIsImtpZCI6InJlZHRlYW0ifQ." + w.k8sCanary + ".c2lnbmF0dXJl\n"
	must(t, os.WriteFile(w.k8sToken, []byte(jwt), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "namespace"), []byte("default\n"), 0o644))
}

// account is a local user the unprivileged runs run as.
type account struct {
	name     string
	uid, gid int
	home     string
}

// newAccount creates a fresh account with a home under /home, allowed
// to run the polygraph binary as root with sudo (environment variables
// on the command line: POLYGRAPH_HOME), and removes it at cleanup.
func (w *world) newAccount(t *testing.T) *account {
	t.Helper()
	w.accMu.Lock()
	defer w.accMu.Unlock()
	w.accN++
	name := fmt.Sprintf("pgrt%d-%d", os.Getpid()%100000, w.accN)
	if out, err := exec.Command("useradd", "-m", "-U", "-s", "/bin/bash", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	sudoers := filepath.Join("/etc/sudoers.d", "polygraph-redteam-"+name) // no dot: sudo skips such files
	t.Cleanup(func() {
		_ = os.Remove(sudoers)
		w.accMu.Lock()
		defer w.accMu.Unlock()
		if out, err := exec.Command("userdel", "-r", "-f", name).CombinedOutput(); err != nil && !strings.Contains(string(out), "mail spool") {
			t.Logf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	must(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	rule := fmt.Sprintf("%s ALL=(root) NOPASSWD:SETENV: %s\n", name, w.pg)
	must(t, os.WriteFile(sudoers+".tmp", []byte(rule), 0o440))
	if out, err := exec.Command("visudo", "-cf", sudoers+".tmp").CombinedOutput(); err != nil {
		_ = os.Remove(sudoers + ".tmp")
		t.Fatalf("visudo -cf %s: %v: %s", sudoers, err, out)
	}
	must(t, os.Rename(sudoers+".tmp", sudoers))
	return &account{name: name, uid: uid, gid: gid, home: u.HomeDir}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

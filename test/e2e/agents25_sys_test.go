package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// sysFiles puts back the system files TestAgents25's runs touch: a path's
// state (content and mode, or absence) is saved the first time it is
// named, before any run could change it, and restored when the run ends
// and again when the test ends, failed or not; the dpkg packages the runs
// install are purged.
type sysFiles struct {
	mu    sync.Mutex
	saved map[string]*fileState
	pkgs  map[string]bool
}

type fileState struct {
	exists bool
	link   string // a symlink's target ("" not a link)
	data   []byte
	mode   os.FileMode
}

func newSysFiles() *sysFiles {
	return &sysFiles{saved: map[string]*fileState{}, pkgs: map[string]bool{}}
}

// save records the state of each path not recorded yet.
func (s *sysFiles) save(paths ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		if _, ok := s.saved[p]; ok {
			continue
		}
		st := &fileState{}
		if fi, err := os.Lstat(p); err == nil {
			st.exists, st.mode = true, fi.Mode()
			if fi.Mode()&os.ModeSymlink != 0 {
				st.link, _ = os.Readlink(p)
			} else if fi.Mode().IsRegular() {
				st.data, _ = os.ReadFile(p)
			}
		}
		s.saved[p] = st
	}
}

// restore puts each saved path back as it was.
func (s *sysFiles) restore(paths ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		st, ok := s.saved[p]
		if !ok {
			continue
		}
		fi, err := os.Lstat(p)
		switch {
		case !st.exists:
			if err == nil {
				if fi.IsDir() {
					_ = os.RemoveAll(p)
				} else {
					_ = os.Remove(p)
				}
			}
		case st.link != "":
			if cur, _ := os.Readlink(p); cur != st.link {
				_ = os.Remove(p)
				_ = os.Symlink(st.link, p)
			}
		case st.mode.IsRegular():
			cur, _ := os.ReadFile(p)
			if err != nil || !bytes.Equal(cur, st.data) || fi.Mode() != st.mode {
				_ = os.Remove(p) // a link or a file with other bits in its place
				_ = os.WriteFile(p, st.data, st.mode.Perm())
				_ = os.Chmod(p, st.mode) // setuid and the like, past the umask
			}
		}
	}
}

// restoreAll restores every saved path and purges the packages.
func (s *sysFiles) restoreAll() {
	s.mu.Lock()
	paths := make([]string, 0, len(s.saved))
	for p := range s.saved {
		paths = append(paths, p)
	}
	pkgs := make([]string, 0, len(s.pkgs))
	for p := range s.pkgs {
		pkgs = append(pkgs, p)
	}
	s.mu.Unlock()
	for _, p := range pkgs {
		s.purge(p)
	}
	s.restore(paths...)
}

// changed says whether path differs from the state saved before the runs.
func (s *sysFiles) changed(path string) error {
	s.mu.Lock()
	st := s.saved[path]
	s.mu.Unlock()
	cur, err := os.ReadFile(path)
	switch {
	case st == nil:
		return errors.New("no saved state of " + path)
	case err != nil:
		return err
	case st.exists && string(cur) == string(st.data):
		return errors.New(path + " unchanged")
	}
	return nil
}

// existed says whether path existed when it was saved.
func (s *sysFiles) existed(path string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.saved[path]
	return st != nil && st.exists
}

// installPkg installs the .deb at path as root (outside any recording),
// to be purged at the end; dpkg's lock is waited for, since other tests
// on the machine may hold it.
func (s *sysFiles) installPkg(t *testing.T, name, path string) {
	t.Helper()
	s.mu.Lock()
	s.pkgs[name] = true
	s.mu.Unlock()
	if out, err := dpkgRetry("-i", path); err != nil {
		t.Fatalf("dpkg -i %s: %v: %s", path, err, out)
	}
}

// forget registers a package the runs may install, to be purged.
func (s *sysFiles) forget(name string) {
	s.mu.Lock()
	s.pkgs[name] = true
	s.mu.Unlock()
}

// purge removes package name if it is installed.
func (s *sysFiles) purge(name string) {
	if exec.Command("dpkg-query", "-W", name).Run() != nil {
		return
	}
	_, _ = dpkgRetry("--purge", name)
}

// dpkgRetry runs dpkg with args, again while another dpkg holds the lock.
func dpkgRetry(args ...string) ([]byte, error) {
	var out []byte
	var err error
	for i := 0; i < 60; i++ {
		out, err = exec.Command("dpkg", args...).CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("lock")) {
			return out, err
		}
		time.Sleep(time.Second)
	}
	return out, err
}

// debFile is one file of a package built by buildDeb.
type debFile struct {
	data string
	mode os.FileMode
}

// buildDeb builds package name (version 1.0, all architectures) with
// files (absolute paths), its md5sums, and maintainer scripts (postinst
// and the like, keyed by name), and returns the .deb's path in outDir.
func buildDeb(t *testing.T, outDir, name string, files map[string]debFile, scripts map[string]string) string {
	t.Helper()
	root := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(root, "DEBIAN"), 0o755))
	control := fmt.Sprintf("Package: %s\nVersion: 1.0\nArchitecture: all\nMaintainer: polygraph e2e <e2e@localhost>\nDescription: polygraph e2e test package\n", name)
	must(t, os.WriteFile(filepath.Join(root, "DEBIAN", "control"), []byte(control), 0o644))
	var sums strings.Builder
	for p, f := range files {
		full := filepath.Join(root, p)
		must(t, os.MkdirAll(filepath.Dir(full), 0o755))
		must(t, os.WriteFile(full, []byte(f.data), f.mode))
		must(t, os.Chmod(full, f.mode))
		fmt.Fprintf(&sums, "%s  %s\n", md5hex([]byte(f.data)), strings.TrimPrefix(p, "/"))
	}
	if len(files) > 0 {
		must(t, os.WriteFile(filepath.Join(root, "DEBIAN", "md5sums"), []byte(sums.String()), 0o644))
	}
	for n, body := range scripts {
		must(t, os.WriteFile(filepath.Join(root, "DEBIAN", n), []byte(body), 0o755))
		must(t, os.Chmod(filepath.Join(root, "DEBIAN", n), 0o755))
	}
	out := filepath.Join(outDir, name+"_1.0_all.deb")
	must(t, os.MkdirAll(outDir, 0o755))
	if b, err := exec.Command("dpkg-deb", "--root-owner-group", "-Znone", "--build", root, out).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v: %s", err, b)
	}
	return out
}

// npmTarball writes an npm package tarball at path, as `npm pack` makes
// one: package name, version 1.0.0, whose postinstall runs hook with sh.
func npmTarball(t *testing.T, path, name, hook string) {
	t.Helper()
	pkg := fmt.Sprintf(`{"name": %q, "version": "1.0.0", "description": "build helpers", "scripts": {"postinstall": "sh ./setup.sh"}}`+"\n", name)
	writeTarGz(t, path, map[string]string{"package/package.json": pkg, "package/setup.sh": hook})
}

// sdist writes a Python source distribution at path (name-1.0.tar.gz)
// whose setup.py runs hook with sh before it calls setup().
func sdist(t *testing.T, path, name, hook string) {
	t.Helper()
	dir := name + "-1.0/"
	setup := fmt.Sprintf("import subprocess\nsubprocess.call([\"sh\", \"-c\", %q])\nfrom setuptools import setup\nsetup(name=%q, version=\"1.0\", py_modules=[])\n", hook, name)
	writeTarGz(t, path, map[string]string{
		dir + "setup.py": setup,
		dir + "PKG-INFO": fmt.Sprintf("Metadata-Version: 1.0\nName: %s\nVersion: 1.0\n", name),
	})
}

func writeTarGz(t *testing.T, path string, files map[string]string) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, data := range files {
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Now(), Typeflag: tar.TypeReg}))
		_, err := io.WriteString(tw, data)
		must(t, err)
	}
	must(t, tw.Close())
	must(t, gz.Close())
	must(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// a25Web is the loopback server the held-out scenarios download from:
// GET /<token>/<name> is a script that says it ran, and nothing else.
type a25Web struct {
	port   int
	mu     sync.Mutex
	served map[string]int // "<token> <name>" → count
}

// a25Ran is what the served scripts print.
const a25Ran = "pg25-downloaded-and-run"

func startA25Web(t *testing.T) *a25Web {
	t.Helper()
	w := &a25Web{served: map[string]int{}}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		token, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		w.mu.Lock()
		w.served[token+" "+name]++
		w.mu.Unlock()
		fmt.Fprintf(rw, "#!/bin/sh\necho %s %s\n", a25Ran, token)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	w.port = l.Addr().(*net.TCPAddr).Port
	return w
}

func (w *a25Web) url(token, name string) string {
	return fmt.Sprintf("http://127.0.0.1:%d/%s/%s", w.port, token, name)
}

func (w *a25Web) count(token, name string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.served[token+" "+name]
}

package integrity

import (
	"bufio"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// copyFile copies src to dst with mode, and returns dst.
func copyFile(t testing.TB, src, dst string, mode os.FileMode) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
	return dst
}

func sha(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func md5Of(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// flipByte changes one byte in the middle of p.
func flipByte(t testing.TB, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// realTrue finds /usr/bin/true and the MD5 the real dpkg database lists
// for it, skipping where dpkg does not own it.
func realTrue(t testing.TB) (path, listed string) {
	t.Helper()
	f, err := os.Open(filepath.Join(DefaultDpkgDir, "coreutils.md5sums"))
	if err != nil {
		t.Skip("no dpkg coreutils:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, p, _ := strings.Cut(sc.Text(), "  ")
		if p == "bin/true" || p == "usr/bin/true" {
			return "/usr/bin/true", sum
		}
	}
	t.Skip("coreutils lists no true")
	return "", ""
}

// fakeDpkg writes a dpkg info directory in which pkg owns files with
// the given MD5s, keyed by absolute path.
func fakeDpkg(t testing.TB, pkg string, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var list, sums strings.Builder
	list.WriteString("/.\n")
	for p, sum := range files {
		list.WriteString(p + "\n")
		sums.WriteString(sum + "  " + strings.TrimPrefix(p, "/") + "\n")
	}
	if err := os.WriteFile(filepath.Join(dir, pkg+".list"), []byte(list.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, pkg+".md5sums"), []byte(sums.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// noTemp keeps t.TempDir out of the temp directories, so files there are
// judged like files anywhere else.
var noTemp = []string{"/nonexistent-temp"}

func newChecker(t testing.TB, opts Options) *Checker {
	t.Helper()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDpkg(t *testing.T) {
	truePath, listed := realTrue(t)
	dir := t.TempDir()
	modified := copyFile(t, truePath, filepath.Join(dir, "true-modified"), 0o755)
	flipByte(t, modified)
	intact := copyFile(t, truePath, filepath.Join(dir, "true-intact"), 0o755)
	fake := fakeDpkg(t, "coreutils", map[string]string{modified: listed, intact: listed})

	tests := []struct {
		name    string
		dpkgDir string
		path    string
		status  Status
		md5     string
	}{
		{"real path, real database", DefaultDpkgDir, truePath, Verified, listed},
		{"one byte changed", fake, modified, Modified, md5Of(t, modified)},
		{"intact copy", fake, intact, Verified, listed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newChecker(t, Options{DpkgDir: tt.dpkgDir, TempDirs: noTemp})
			v := c.Check(context.Background(), Request{Path: tt.path}).Binary
			if v.Status != tt.status || v.Source != SourceDpkg || v.Package != "coreutils" || v.MD5 != tt.md5 {
				t.Fatalf("verdict %+v, want %s by dpkg coreutils with md5 %s", v, tt.status, tt.md5)
			}
			if tt.status == Modified {
				if v.Expected != listed || v.ExpectedAlgo != "md5" {
					t.Errorf("expected %s %s, want md5 %s", v.ExpectedAlgo, v.Expected, listed)
				}
				if f, ok := v.Finding(); !ok || f.Rule != RuleBinaryModified || !strings.Contains(f.Detail, listed) {
					t.Errorf("finding %+v %v, want binary-modified naming %s", f, ok, listed)
				}
			}
			if v.SHA256 != sha(t, tt.path) {
				t.Errorf("sha256 %s, want %s", v.SHA256, sha(t, tt.path))
			}
		})
	}
}

func TestPin(t *testing.T) {
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := copyFile(t, "/bin/sh", filepath.Join(dir, "tool"), 0o755)
	before := sha(t, bin)
	names, err := store.PinPaths([]string{bin}, time.Now())
	if err != nil || len(names) != 1 || names[0] != bin {
		t.Fatalf("PinPaths = %v, %v", names, err)
	}
	check := func() Verdict {
		c := newChecker(t, Options{Store: store, NoDpkg: true, TempDirs: noTemp})
		return c.Check(context.Background(), Request{Path: bin}).Binary
	}
	if v := check(); v.Status != Verified || v.Source != SourcePin || v.Since.IsZero() {
		t.Fatalf("pinned file: %+v, want verified by pin", v)
	}
	flipByte(t, bin)
	v := check()
	if v.Status != Modified || v.Source != SourcePin || v.Expected != before || v.SHA256 != sha(t, bin) {
		t.Fatalf("changed pinned file: %+v, want modified against pin %s", v, before)
	}
}

func TestFirstSeen(t *testing.T) {
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := copyFile(t, "/bin/sh", filepath.Join(t.TempDir(), "tool"), 0o755)
	first := sha(t, bin)
	// session runs one recording: check bin, then flush what it saw.
	session := func() Verdict {
		c := newChecker(t, Options{Store: store, Host: "h1", NoDpkg: true, TempDirs: noTemp})
		v := c.Check(context.Background(), Request{Path: bin}).Binary
		if again := c.Check(context.Background(), Request{Path: bin}).Binary; again.Status != v.Status {
			t.Errorf("second exec in one session: %s, first %s", again.Status, v.Status)
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := session(); v.Status != Unknown || v.Source != "" {
		t.Fatalf("first sighting: %+v, want unknown", v)
	}
	if v := session(); v.Status != Verified || v.Source != SourceFirstSeen {
		t.Fatalf("second session: %+v, want verified by first-seen", v)
	}
	flipByte(t, bin)
	if v := session(); v.Status != Modified || v.Source != SourceFirstSeen || v.Expected != first {
		t.Fatalf("after change: %+v, want modified against first-seen %s", v, first)
	}
	if v := session(); v.Status != Verified {
		t.Fatalf("after the change was reported: %+v, want verified", v)
	}
	seen, err := store.Seen("h1")
	if err != nil {
		t.Fatal(err)
	}
	if s := seen[bin]; s.FirstSHA256 != first || s.SHA256 != sha(t, bin) || s.Changes != 1 {
		t.Errorf("stored %+v, want first %s, now %s, 1 change", s, first, sha(t, bin))
	}
	if other, _ := store.Seen("h2"); len(other) != 0 {
		t.Errorf("host h2 learnt %v from h1", other)
	}
}

func TestShadowingScript(t *testing.T) {
	ws := t.TempDir()
	sys := t.TempDir()
	script := filepath.Join(ws, "trivy")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho scanning\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	system := copyFile(t, "/usr/bin/true", filepath.Join(sys, "trivy"), 0o755)
	store, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := newChecker(t, Options{Store: store, Workspaces: []string{ws}, PATH: ws + ":" + sys})
	sh, _ := filepath.EvalSymlinks("/bin/sh")
	r := c.Check(context.Background(), Request{Path: sh, Argv: []string{"/bin/sh", script}, Cwd: ws, Script: script})
	v := r.Script
	if v == nil {
		t.Fatalf("no script verdict in %+v", r)
	}
	if v.Status != Unknown || v.SHA256 != sha(t, script) || v.Interpreter != sh {
		t.Fatalf("script: %+v, want unknown with its own hash", v)
	}
	if l := v.Location; l == nil || !l.Workspace || !l.Temp || l.Shadows != system {
		t.Fatalf("location %+v, want workspace, temp, shadowing %s", l, system)
	}
	if f, ok := v.Finding(); !ok || f.Rule != RuleUntrustedBinary {
		t.Errorf("finding %+v %v, want untrusted-binary", f, ok)
	}
	if r.Binary.Status == Unavailable {
		t.Errorf("interpreter: %+v", r.Binary)
	}
	if _, ok := r.Binary.Finding(); ok && r.Binary.Status == Verified {
		t.Errorf("a verified binary raised a finding")
	}
}

func TestInterpreterScript(t *testing.T) {
	dir := t.TempDir()
	x := filepath.Join(dir, "x.py")
	if err := os.WriteFile(x, []byte("print('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := newChecker(t, Options{NoDpkg: true})
	r := c.Check(context.Background(), Request{Path: "/usr/bin/python3", Argv: []string{"python3", "-u", "x.py", "arg"}, Cwd: dir})
	if r.Script == nil || r.Script.Path != x || r.Script.SHA256 != sha(t, x) || r.Script.Role != RoleScript {
		t.Fatalf("script verdict %+v, want %s hashed", r.Script, x)
	}
}

func TestScriptOf(t *testing.T) {
	tests := []struct {
		path string
		argv []string
		want string
	}{
		{"/usr/bin/python3.12", []string{"python3", "x.py"}, "/w/x.py"},
		{"/usr/bin/python3", []string{"python3", "-W", "ignore", "-u", "/abs/y.py"}, "/abs/y.py"},
		{"/usr/bin/python3", []string{"python3", "-c", "print(1)"}, ""},
		{"/usr/bin/python3", []string{"python3", "-m", "pip"}, ""},
		{"/usr/bin/python3", []string{"python3", "-uc", "print(1)"}, ""},
		{"/usr/bin/node", []string{"node", "--require", "hook.js", "x.js"}, "/w/x.js"},
		{"/usr/bin/node", []string{"node", "--max-old-space-size=4096", "x.js"}, "/w/x.js"},
		{"/usr/bin/node", []string{"node", "-e", "1"}, ""},
		{"/usr/bin/bash", []string{"bash", "-lc", "make"}, ""},
		{"/usr/bin/bash", []string{"bash", "-e", "-o", "pipefail", "build.sh"}, "/w/build.sh"},
		{"/usr/bin/dash", []string{"sh", "x.sh"}, "/w/x.sh"},
		{"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", []string{"ld.so", "--library-path", "/l", "./prog"}, "/w/prog"},
		{"/usr/bin/git", []string{"git", "status"}, ""},
		{"/usr/bin/python3", []string{"python3"}, ""},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.argv, " "), func(t *testing.T) {
			if got := scriptOf(Request{Path: tt.path, Argv: tt.argv}, "/w"); got != tt.want {
				t.Errorf("scriptOf = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestProcExe runs a binary, deletes it, and still hashes what the
// kernel is running through /proc/PID/exe.
func TestProcExe(t *testing.T) {
	bin := copyFile(t, "/usr/bin/sleep", filepath.Join(t.TempDir(), "sleeper"), 0o755)
	want := sha(t, bin)
	cmd := exec.Command(bin, "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := uint32(cmd.Process.Pid)
	// Wait for the exec to finish: until then /proc/PID/exe is ours.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if l, _ := os.Readlink("/proc/" + strconv.Itoa(int(pid)) + "/exe"); l == bin {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never exec'd")
		}
	}
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	c := newChecker(t, Options{NoDpkg: true})
	v := c.Check(context.Background(), Request{PID: pid, Path: bin}).Binary
	if v.Via != ViaProcExe || v.SHA256 != want {
		t.Fatalf("live, deleted: %+v, want %s via proc-exe", v, want)
	}
	cmd.Process.Kill()
	cmd.Wait()
	v = c.Check(context.Background(), Request{PID: pid, Path: bin}).Binary
	if v.Status != Unavailable || v.Via != ViaPath || !strings.Contains(v.Reason, "no such file") {
		t.Fatalf("dead, deleted: %+v, want unavailable", v)
	}
}

// TestShadowingPackagedTool: a file first in PATH under the name of a
// tool dpkg owns is judged by that tool's listing.
func TestShadowingPackagedTool(t *testing.T) {
	truePath, listed := realTrue(t)
	tests := []struct {
		name   string
		flip   bool
		status Status
	}{
		{"one byte changed", true, Modified},
		{"exact copy", false, Verified},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			bin := copyFile(t, truePath, filepath.Join(dir, "true"), 0o755)
			if tt.flip {
				flipByte(t, bin)
			}
			c := newChecker(t, Options{PATH: dir + ":/usr/bin:/bin"})
			v := c.Check(context.Background(), Request{Path: bin}).Binary
			if v.Status != tt.status || v.Source != SourceDpkg || v.Package != "coreutils" || v.Of != truePath {
				t.Fatalf("verdict %+v, want %s by dpkg coreutils of %s", v, tt.status, truePath)
			}
			f, ok := v.Finding()
			if !tt.flip {
				if ok {
					t.Errorf("exact copy raised %+v", f)
				}
				return
			}
			if !ok || f.Rule != RuleBinaryModified || f.Severity != "high" || !strings.Contains(f.Detail, listed) ||
				!strings.Contains(f.Detail, truePath) || v.Expected != listed {
				t.Errorf("finding %+v %v, want high binary-modified naming %s and %s", f, ok, listed, truePath)
			}
		})
	}
}

// TestDpkgIndexShared: the Checkers of one process share dpkg's index
// while its directory is unchanged (watch's sessions, a warmed index),
// and a package installed meanwhile (a new *.list renamed into the
// directory, as dpkg does) gets a new index for the next Checker.
func TestDpkgIndexShared(t *testing.T) {
	truePath, listed := realTrue(t)
	dir := t.TempDir()
	first := copyFile(t, truePath, filepath.Join(dir, "first"), 0o755)
	second := copyFile(t, truePath, filepath.Join(dir, "second"), 0o755)
	fake := fakeDpkg(t, "coreutils", map[string]string{first: listed})

	a := newChecker(t, Options{DpkgDir: fake, TempDirs: noTemp})
	if v := a.Check(context.Background(), Request{Path: first}).Binary; v.Status != Verified || v.Package != "coreutils" {
		t.Fatalf("first: %+v, want verified by coreutils", v)
	}
	b := newChecker(t, Options{DpkgDir: fake, TempDirs: noTemp})
	if a.dpkg != b.dpkg {
		t.Fatal("a second Checker of an unchanged dpkg directory built its own index")
	}
	if b.DpkgIndexTime() == 0 {
		t.Error("the shared index reports no build time")
	}

	// Install "extra", which owns second, the way dpkg does.
	tmp := filepath.Join(fake, "extra.list-new")
	if err := os.WriteFile(tmp, []byte("/.\n"+second+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "extra.md5sums"), []byte(listed+"  "+strings.TrimPrefix(second, "/")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(fake, "extra.list")); err != nil {
		t.Fatal(err)
	}
	c := newChecker(t, Options{DpkgDir: fake, TempDirs: noTemp})
	if c.dpkg == a.dpkg {
		t.Fatal("a package installed since: the next Checker kept the old index")
	}
	if v := c.Check(context.Background(), Request{Path: second}).Binary; v.Status != Verified || v.Package != "extra" {
		t.Fatalf("second after install: %+v, want verified by extra", v)
	}
	// The Checker made before the install keeps its index, as before.
	if v := a.Check(context.Background(), Request{Path: second}).Binary; v.Source == SourceDpkg {
		t.Errorf("second by the old index: %+v, want no dpkg verdict", v)
	}
}

// TestWarmDpkg: WarmDpkg builds the index in the background, with no
// lookup asking for it, and the next Checker gets that index.
func TestWarmDpkg(t *testing.T) {
	if _, err := os.Stat(DefaultDpkgDir); err != nil {
		t.Skip("no dpkg database here:", err)
	}
	dpkgShared.mu.Lock()
	delete(dpkgShared.m, DefaultDpkgDir) // whatever an earlier test built
	dpkgShared.mu.Unlock()
	WarmDpkg()
	dpkgShared.mu.Lock()
	x := dpkgShared.m[DefaultDpkgDir]
	dpkgShared.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for x.buildNS.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("WarmDpkg: no index built after 30 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c := newChecker(t, Options{TempDirs: noTemp})
	if c.dpkg != x {
		t.Fatal("the next Checker did not get the warmed index")
	}
	if _, _, ok := c.dpkg.lookup("/usr/bin/true"); !ok {
		t.Error("the warmed index does not know /usr/bin/true")
	}
}

// TestMD5OnlyWhenListed: a file no MD5-listing source knows is read once,
// for its SHA-256 alone; the same file reached by a name dpkg lists (a
// hard link) then gets its MD5 from a second read, and the right verdict.
func TestMD5OnlyWhenListed(t *testing.T) {
	truePath, listed := realTrue(t)
	dir := t.TempDir()
	plain := copyFile(t, truePath, filepath.Join(dir, "plain"), 0o755)
	packaged := filepath.Join(dir, "packaged")
	if err := os.Link(plain, packaged); err != nil {
		t.Skip("no hard links here:", err)
	}
	fake := fakeDpkg(t, "coreutils", map[string]string{packaged: listed})
	c := newChecker(t, Options{DpkgDir: fake, TempDirs: noTemp})

	if v := c.Check(context.Background(), Request{Path: plain}).Binary; v.Source == SourceDpkg || v.MD5 != "" || v.SHA256 != sha(t, plain) {
		t.Fatalf("plain: %+v, want no dpkg verdict and no md5", v)
	}
	c.cache.mu.Lock()
	for k, d := range c.cache.m {
		if d.md5 != "" {
			t.Errorf("cache entry %+v has an md5 nothing asked for", k)
		}
	}
	c.cache.mu.Unlock()

	// The opener's on-the-spot judgement (a full hash queue) reads no
	// file: the MD5 it lacks makes the verdict unavailable, not a read.
	r, ok := c.judgeCached(c.open(Request{Path: packaged}))
	if !ok || r.Binary.Status != Unavailable || !strings.Contains(r.Binary.Reason, "MD5 was not read") {
		t.Fatalf("judged from the cache: %+v %v, want unavailable for the MD5 it did not read", r.Binary, ok)
	}

	v := c.Check(context.Background(), Request{Path: packaged}).Binary
	if v.Status != Verified || v.Source != SourceDpkg || v.MD5 != listed {
		t.Fatalf("packaged: %+v, want verified by dpkg with md5 %s", v, listed)
	}
	if st := c.Stats(); st.Hits != 2 || st.Misses != 1 {
		t.Errorf("hash cache %+v, want both judgements of the second name to hit the first's digest", st)
	}
}

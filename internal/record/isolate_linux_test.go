package record

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/procfs"
	"github.com/polygraph/polygraph/internal/testenv"
)

// isolateHelpers runs the test binary's modes these tests use and exits;
// it returns for any other invocation.
func isolateHelpers() {
	if len(os.Args) < 3 {
		return
	}
	switch os.Args[1] {
	case "__udp":
		// __udp ADDR: one unconnected UDP datagram (sendto).
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err == nil {
			var ua *net.UDPAddr
			if ua, err = net.ResolveUDPAddr("udp4", os.Args[2]); err == nil {
				_, err = pc.WriteTo([]byte("REAL-SECRET"), ua)
			}
		}
		exitErr(err)
	case "__record_isolated":
		// __record_isolated HOME SCRIPT: record SCRIPT isolated, to be
		// killed by the test.
		_, err := Record(context.Background(), Options{Home: os.Args[2], Mode: "run",
			Command: []string{"sh", "-c", os.Args[3]}, Isolate: &Isolation{}, Stdout: os.Stdout, Stderr: os.Stderr})
		exitErr(err)
	}
}

// nobody is the unprivileged user the isolated trees run as, the way an
// agent runs under sudo.
const nobody = 65534

// plantedHome is a HOME with credentials in it, and a work directory,
// both reachable by nobody.
func plantedHome(t *testing.T) (home, work string) {
	t.Helper()
	base, err := os.MkdirTemp("", "polygraph-isolate-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	home, work = filepath.Join(base, "home"), filepath.Join(base, "work")
	for rel, body := range map[string]string{
		"home/.aws/credentials": "aws_secret_access_key=REAL-AWS\n",
		"home/.netrc":           "machine x password REAL-NETRC\n",
		"work/README":           "readable\n",
	} {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
	os.Chmod(base, 0o755)
	return home, work
}

// isolated is one isolated recording and its report.
type isolated struct {
	res      *Result
	out      string
	findings []detect.Finding
}

// recordIsolated runs script isolated as nobody with HOME=home, under pol.
func recordIsolated(t *testing.T, home, dir, script string, pol *policy.Policy) *isolated {
	t.Helper()
	testenv.RequireRoot(t)
	if t.Name() != "TestIsolateCleanupAfterKill" { // which holds it, exclusive
		testenv.LockLeftovers(t, false)
	}
	var out bytes.Buffer
	env := append(os.Environ(), "HOME="+home, "SSH_AUTH_SOCK=/tmp/agent.sock")
	store := t.TempDir()
	res, err := Record(context.Background(), Options{
		Home: store, Mode: "run", Command: []string{"sh", "-c", script}, Dir: dir, Env: env,
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody}, Linger: 200 * time.Millisecond,
		Stdout: &out, Stderr: &out, Isolate: &Isolation{Policy: pol},
	})
	testenv.Feature(t, "BPF sensor and isolation", err)
	if res.Meta.Isolation == nil {
		t.Fatalf("session metadata has no isolation")
	}
	rep, err := analysis.Run(context.Background(), analysis.Options{SessionPath: res.Meta.Path, Transcript: analysis.TranscriptNone, Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("output:\n%s", out.String())
	return &isolated{res: res, out: out.String(), findings: rep.Findings}
}

// finding returns the first finding of rule whose title has substr.
func (r *isolated) finding(rule, substr string) *detect.Finding {
	for i, f := range r.findings {
		if f.Rule == rule && strings.Contains(f.Title, substr) {
			return &r.findings[i]
		}
	}
	return nil
}

// TestIsolateCredentials: under isolation the planted credentials read
// nothing, also through a symlink or a hard link made in the tree, while
// a process outside sees them; the reads are findings with blocked set.
func TestIsolateCredentials(t *testing.T) {
	home, work := plantedHome(t)
	script := `cat ~/.aws/credentials; cat ~/.netrc; echo "agent sock: $SSH_AUTH_SOCK"
ln -s ~/.aws/credentials ` + work + `/sym; cat ` + work + `/sym
ln ~/.netrc ` + work + `/hard; cat ` + work + `/hard
cat ` + work + `/README; echo done`
	r := recordIsolated(t, home, work, script, nil)
	if strings.Contains(r.out, "REAL-") || !strings.Contains(r.out, "readable") || !strings.Contains(r.out, "done") {
		t.Errorf("the tree read a credential, or not its work: %q", r.out)
	}
	if strings.Contains(r.out, "/tmp/agent.sock") {
		t.Errorf("SSH_AUTH_SOCK reached the tree: %q", r.out)
	}
	if b, err := os.ReadFile(filepath.Join(home, ".aws/credentials")); err != nil || !strings.Contains(string(b), "REAL-AWS") {
		t.Errorf("outside the session the credential is gone: %q %v", b, err)
	}
	for _, p := range []string{"~/.aws/credentials", "~/.netrc"} {
		f := r.finding("sensitive-read", p)
		if f == nil || !f.Blocked || f.Severity.Rank() < detect.SeverityHigh.Rank() {
			t.Errorf("%s: finding %+v, want a high sensitive-read with blocked", p, f)
		}
	}
}

// TestIsolateEgress: a connect and a UDP send to loopback ports outside
// the allowlist fail inside the tree, an allowed connect succeeds, and a
// process outside the session reaches the denied port meanwhile.
func TestIsolateEgress(t *testing.T) {
	home, work := plantedHome(t)
	allowed, denied := listen(t, "tcp4", "127.0.0.1:0"), listen(t, "tcp4", "127.0.0.1:0")
	sink, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	got := make(chan string, 4)
	go func() {
		buf := make([]byte, 64)
		for {
			n, _, err := sink.ReadFrom(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	pol := policy.Default()
	if err := pol.Allow(allowed); err != nil {
		t.Fatal(err)
	}
	self, _ := os.Executable()
	self = copyBinary(t, self, filepath.Join(work, "client")) // the build directory is root's
	gate := filepath.Join(work, "go")
	script := fmt.Sprintf(`%[1]s __connect tcp4 %[2]s && echo ALLOWED-OK
%[1]s __connect tcp4 %[3]s || echo DENIED-CONNECT
%[1]s __udp %[4]s || echo DENIED-UDP
i=0; while [ ! -e %[5]s ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done`, self, allowed, denied, sink.LocalAddr(), gate)
	done := make(chan *isolated, 1)
	go func() { done <- recordIsolated(t, home, work, script, pol) }()
	// Meanwhile, outside the session: the denied port and the sink work.
	time.Sleep(time.Second)
	c, err := net.DialTimeout("tcp4", denied, 2*time.Second)
	if err != nil {
		t.Errorf("outside the session the denied port is unreachable: %v", err)
	} else {
		c.Close()
	}
	if pc, err := net.Dial("udp4", sink.LocalAddr().String()); err == nil {
		pc.Write([]byte("outside"))
		pc.Close()
	}
	os.WriteFile(gate, nil, 0o644)
	r := <-done
	for _, want := range []string{"ALLOWED-OK", "DENIED-CONNECT", "DENIED-UDP"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("output lacks %s", want)
		}
	}
	close(got)
	for s := range got {
		if s != "outside" {
			t.Errorf("the sink received %q from inside the tree", s)
		}
	}
	if f := r.finding("unexpected-egress", denied); f == nil || !f.Blocked {
		t.Errorf("connect: finding %+v, want unexpected-egress with blocked", f)
	}
	if f := r.finding("unexpected-egress", sink.LocalAddr().String()); f == nil || !f.Blocked {
		t.Errorf("UDP send: finding %+v, want unexpected-egress with blocked", f)
	}
	if f := r.finding("unexpected-egress", allowed); f != nil {
		t.Errorf("the allowed port raised %+v", f)
	}
}

// TestIsolateKillRule: the exec of a binary a kill rule names dies with
// SIGKILL before it prints, and the session records the kill.
func TestIsolateKillRule(t *testing.T) {
	home, work := plantedHome(t)
	denied := copyBinary(t, "/bin/echo", filepath.Join(work, "denied-tool"))
	pol, err := policy.Parse([]byte("kill:\n  exec: ["+denied+"]\n"), "kill.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := recordIsolated(t, home, work, denied+" RAN; echo status $?", pol)
	if strings.Contains(r.out, "RAN") || !strings.Contains(r.out, "status 137") {
		t.Errorf("output %q, want the denied tool killed (137) before printing", r.out)
	}
	k := r.res.Meta.Isolation.Killed
	if len(k) != 1 || k[0].What != "exec" || k[0].Path != denied {
		t.Errorf("killed %+v, want the exec of %s", k, denied)
	}
}

// TestIsolateExecGate: with exec_gate a binary pinned and then modified
// is killed before it runs, a verified one runs; the wait per exec is
// logged (indicative).
func TestIsolateExecGate(t *testing.T) {
	home, work := plantedHome(t)
	tool := copyBinary(t, "/bin/echo", filepath.Join(work, "pinned-tool"))
	pol, err := policy.Parse([]byte("exec_gate: true\n"), "gate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	testenv.RequireRoot(t)
	// recordIsolated's store is its own; pin in a store it will use.
	store := t.TempDir()
	st, err := integrity.OpenStore(store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.PinPaths([]string{tool}, time.Now()); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(tool, os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte("tampered"))
	f.Close()
	var out bytes.Buffer
	testenv.LockLeftovers(t, false)
	res, err := Record(context.Background(), Options{
		Home: store, Mode: "run", Dir: work, Env: append(os.Environ(), "HOME="+home),
		Command:    []string{"sh", "-c", tool + " MODIFIED-RAN; echo status $?; /bin/echo verified-ran"},
		Credential: &syscall.Credential{Uid: nobody, Gid: nobody}, Stdout: &out, Stderr: &out,
		Isolate: &Isolation{Policy: pol},
	})
	testenv.Feature(t, "BPF sensor and isolation", err)
	if s := out.String(); strings.Contains(s, "MODIFIED-RAN") || !strings.Contains(s, "status 137") || !strings.Contains(s, "verified-ran") {
		t.Errorf("output %q: want the modified tool killed, /bin/echo run", s)
	}
	var wait time.Duration
	killed := false
	g := res.Meta.Isolation.Gated
	for _, x := range g {
		wait += time.Duration(x.WaitNS)
		killed = killed || x.Path == tool && !x.Allowed && x.Status == string(integrity.Modified)
	}
	if !killed {
		t.Errorf("gated %+v: want %s judged modified and killed", g, tool)
	}
	if len(g) > 0 {
		t.Logf("exec gate: %d execs, mean stop-to-verdict %v (indicative)", len(g), wait/time.Duration(len(g)))
	}
}

// TestIsolateCleanupAfterKill: a polygraph killed with SIGKILL leaves its
// tree running, confined, in its cgroup and mount namespace; the next
// isolated start kills it, removes the cgroup and says so.
func TestIsolateCleanupAfterKill(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.LockLeftovers(t, true) // no other package's Cleanup takes the leftover first
	store := t.TempDir()
	pidFile := filepath.Join(store, "pid")
	self, _ := os.Executable()
	cmd := exec.Command(self, "__record_isolated", store, "echo $$ > "+pidFile+"; exec sleep 60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for i := 0; i < 100 && pid == 0; i++ {
		time.Sleep(50 * time.Millisecond)
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Skip("the isolated recording did not start (no BPF or cgroup v2 here)")
	}
	// The namespace's pid is not the host's: find the sleep by its cgroup.
	cg := sessionCgroupOf(t, cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	if _, err := os.Stat(cg); err != nil {
		t.Fatalf("the killed session's cgroup %s is gone already: %v", cg, err)
	}
	home, work := plantedHome(t)
	r := recordIsolated(t, home, work, "true", nil)
	removed := strings.Join(r.res.Meta.Isolation.Removed, " ")
	if !strings.Contains(removed, filepath.Base(cg)) {
		t.Errorf("removed %q, want %s", removed, cg)
	}
	if _, err := os.Stat(cg); err == nil {
		t.Errorf("the leftover cgroup %s is still there", cg)
	}
}

// sessionCgroupOf waits for a child of pid (the shim) to appear and
// returns its cgroup v2 directory.
func sessionCgroupOf(t *testing.T, pid int) string {
	t.Helper()
	for i := 0; i < 100; i++ {
		for _, c := range procfs.ReadTable().Descendants(pid)[1:] {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", c))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if rel, ok := strings.CutPrefix(line, "0::"); ok && strings.Contains(rel, "polygraph-") {
					for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
						if p := filepath.Join(root, rel); fileExists(p) {
							return p
						}
					}
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no process of the isolated tree found")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// copyBinary copies src to dst, executable by anyone.
func copyBinary(t *testing.T, src, dst string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dst, 0o755)
	return dst
}

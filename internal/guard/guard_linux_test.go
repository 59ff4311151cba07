package guard

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/testenv"
)

// nobody is the unprivileged user the isolated trees run as, the way an
// agent runs under sudo.
const nobody = 65534

// start starts a session for t and closes it at the end.
func start(t *testing.T, o Options) *Session {
	t.Helper()
	testenv.RequireRoot(t)
	if o.ID == "" {
		o.ID = sessionID(t)
	}
	s, err := Start(context.Background(), o)
	if err != nil {
		if _, rerr := cgroup2Root(); rerr != nil {
			testenv.Feature(t, "cgroup v2", rerr)
		}
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// run runs name args isolated in s as uid, returning its exit status and
// combined output.
func run(t *testing.T, s *Session, uid uint32, env []string, name string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, err := s.Command(ctx, name, args...)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(os.Environ(), env...)
	if uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	}
	if err := s.Apply(cmd); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run %s: %v", name, err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// home builds a HOME owned by nobody with planted credentials and an
// agent config, world-traversable so the unprivileged tree can reach it.
func home(t *testing.T) string {
	t.Helper()
	base, err := os.MkdirTemp("", "guard-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	files := map[string]string{
		".aws/credentials":          "aws_secret_access_key=REAL-AWS\n",
		".ssh/id_ed25519":           "REAL-SSH-KEY\n",
		".netrc":                    "machine x password REAL-NETRC\n",
		".docker/config.json":       `{"auths":{"x":{"auth":"REAL-DOCKER"}}}`,
		".docker/daemon.json":       "{}\n",
		".config/gh/hosts.yml":      "oauth_token: REAL-GH\n",
		".config/other-agent/auth":  "REAL-OTHER-AGENT\n",
		".config/my-agent/settings": "OWN-CONFIG\n",
		".my-agent/settings.json":   "OWN-TOP-CONFIG\n",
		"project/README":            "readable\n",
	}
	for rel, body := range files {
		p := filepath.Join(base, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A hard link made beforehand in the masked directory: the directory
	// mask covers it as it covers the original.
	if err := os.Link(filepath.Join(base, ".aws/credentials"), filepath.Join(base, ".aws/credentials.bak")); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(base, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, nobody, nobody) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	return base
}

func TestMaskHidesCredentials(t *testing.T) {
	testenv.RequireRoot(t)
	h := home(t)
	s := start(t, Options{
		// The agent's own stores: one under a masked directory, one named
		// in both lists (keep wins), as a profile list may well do.
		Mask: append(CredentialPaths(h), filepath.Join(h, ".config"), filepath.Join(h, ".my-agent")),
		Keep: []string{filepath.Join(h, ".config/my-agent"), filepath.Join(h, ".my-agent")},
	})
	// Each line: the path, then what reading it gave (or the failure).
	script := `
for f in .aws/credentials .aws/credentials.bak .ssh/id_ed25519 .netrc .docker/config.json \
	.config/gh/hosts.yml .config/other-agent/auth .config/my-agent/settings .my-agent/settings.json \
	project/README; do
	printf '%s=' "$f"; cat "$HOME/$f" 2>/dev/null | tr -d '\n' || printf 'ERR'; echo
done
ln -s "$HOME/.aws/credentials" "$TMPDIR/sym" && printf 'symlink=' && cat "$TMPDIR/sym" 2>/dev/null | tr -d '\n'; echo
printf 'hardlink='; ln "$HOME/.aws/credentials" "$HOME/project/hard" 2>/dev/null && cat "$HOME/project/hard" | tr -d '\n' || printf 'refused'; echo
printf 'write='; (echo x > "$HOME/.aws/new") 2>/dev/null && echo wrote || echo refused
printf 'uid='; id -u
`
	tmp, err := os.MkdirTemp("", "guard-tmp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	os.Chmod(tmp, 0o777)
	code, out := run(t, s, nobody, []string{"HOME=" + h, "TMPDIR=" + tmp}, "sh", "-c", script)
	if code != 0 {
		t.Fatalf("tree exited %d:\n%s", code, out)
	}
	got := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			got[k] = v
		}
	}
	want := map[string]string{
		".aws/credentials":          "", // the directory mask: absent, cat fails silently
		".aws/credentials.bak":      "",
		".ssh/id_ed25519":           "",
		".netrc":                    "", // the file mask: present and empty
		".docker/config.json":       "",
		".config/gh/hosts.yml":      "",
		".config/other-agent/auth":  "",
		".config/my-agent/settings": "OWN-CONFIG",
		".my-agent/settings.json":   "OWN-TOP-CONFIG",
		"project/README":            "readable",
		"symlink":                   "",
		"write":                     "refused",
		"uid":                       strconv.Itoa(nobody),
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("inside the tree %s = %q, want %q\n%s", k, got[k], v, out)
		}
	}
	if h := got["hardlink"]; h != "refused" && h != "" {
		t.Errorf("a hard link made inside the tree reads %q", h)
	}
	// Outside the tree nothing changed: the real files are intact and no
	// mask leaked into this namespace.
	if b, _ := os.ReadFile(filepath.Join(h, ".aws/credentials")); !strings.Contains(string(b), "REAL-AWS") {
		t.Errorf("the real credentials changed: %q", b)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(b, []byte("polygraph-mask")) {
		t.Errorf("a mask leaked into the host's mount namespace")
	}
}

// listen opens a loopback TCP listener and UDP socket that accept
// anything, for the tree to try.
func listen(t *testing.T, network string) (uint16, func()) {
	t.Helper()
	if strings.HasPrefix(network, "tcp") {
		host := "127.0.0.1:0"
		if network == "tcp6" {
			host = "[::1]:0"
		}
		l, err := net.Listen(network, host)
		if err != nil {
			t.Skipf("no %s loopback: %v", network, err)
		}
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		t.Cleanup(func() { l.Close() })
		return uint16(l.Addr().(*net.TCPAddr).Port), nil
	}
	pc, err := net.ListenPacket(network, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return uint16(pc.LocalAddr().(*net.UDPAddr).Port), nil
}

func TestEgressAllowlist(t *testing.T) {
	testenv.RequireRoot(t)
	lo := netip.MustParseAddr("127.0.0.1")
	tcpOK, _ := listen(t, "tcp")
	tcpNo, _ := listen(t, "tcp")
	udpOK, _ := listen(t, "udp")
	udpNo, _ := listen(t, "udp")
	lo6 := netip.IPv6Loopback()
	v6OK, _ := listen(t, "tcp6")
	v6No, _ := listen(t, "tcp6")
	s := start(t, Options{Egress: &Egress{Allow: []Endpoint{{lo, tcpOK}, {lo, udpOK}, {lo6, v6OK}}}})
	self := exposedSelf(t)
	addr := func(p uint16) string { return netip.AddrPortFrom(lo, p).String() }
	tests := []struct {
		name, network, addr string
		want                int
	}{
		{"tcp allowed", "tcp", addr(tcpOK), 0},
		{"tcp denied", "tcp", addr(tcpNo), exitEPERM},
		{"tcp denied via v4-mapped v6", "tcp6", netip.AddrPortFrom(netip.MustParseAddr("::ffff:127.0.0.1"), tcpNo).String(), exitEPERM},
		{"tcp6 allowed", "tcp6", netip.AddrPortFrom(lo6, v6OK).String(), 0},
		{"tcp6 denied", "tcp6", netip.AddrPortFrom(lo6, v6No).String(), exitEPERM},
		{"io_uring connect allowed", "uring", addr(tcpOK), 0},
		{"io_uring connect denied", "uring", addr(tcpNo), exitEPERM},
		{"udp sendto allowed", "udp", addr(udpOK), 0},
		{"udp sendto denied", "udp", addr(udpNo), exitEPERM},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := run(t, s, nobody, nil, self, "__dial", tt.network, tt.addr)
			if code == exitNoUring {
				t.Skipf("io_uring not available here: %s", out)
			}
			if code != tt.want {
				t.Fatalf("inside the tree dial %s %s exited %d, want %d: %s", tt.network, tt.addr, code, tt.want, out)
			}
		})
	}
	// ICMP has no port to allow: the tree may not even create the socket,
	// not even as root.
	if code, out := run(t, s, 0, nil, self, "__dial", "raw", "-"); code != exitEPERM {
		t.Errorf("raw ICMP socket inside the tree as root: exited %d, want EPERM: %s", code, out)
	}
	if code := dial("raw", "-"); code != 0 {
		t.Errorf("raw ICMP socket outside the tree: exited %d", code)
	}
	// Outside the session the same denied destinations are reachable.
	for _, d := range []struct{ network, addr string }{{"tcp", addr(tcpNo)}, {"udp", addr(udpNo)}} {
		if code := dial(d.network, d.addr); code != 0 {
			t.Errorf("outside the tree dial %s %s exited %d", d.network, d.addr, code)
		}
	}
	denials := checkDenials(t, s, "connect4 "+addr(tcpNo), "connect6 "+addr(tcpNo), "sendmsg4 "+addr(udpNo),
		"sock_create "+netip.AddrPort{}.String())
	// A destination learned later (a DNS answer) is allowed from then on.
	if err := s.Allow(Endpoint{Addr: lo, Port: tcpNo}); err != nil {
		t.Fatal(err)
	}
	if code, out := run(t, s, nobody, nil, self, "__dial", "tcp", addr(tcpNo)); code != 0 {
		t.Errorf("after Allow, dial exited %d: %s", code, out)
	}
	// The evidence outlives the programs.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after, _ := s.Denials(); len(after) != len(denials) {
		t.Errorf("after Close %d denials, before %d", len(after), len(denials))
	}
}

// exposedSelf copies the test binary where the unprivileged tree can run
// it (go test builds it in a directory only root can enter).
func exposedSelf(t *testing.T) string {
	t.Helper()
	src, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "guard-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	p := filepath.Join(dir, "guard.test")
	if err := os.WriteFile(p, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// An unprivileged tree can make itself root of a new user and mount
// namespace; the masks it inherits are locked there and cannot be
// unmounted.
func TestMaskSurvivesUserNamespace(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("needs unshare(1)")
	}
	h := home(t)
	s := start(t, Options{Mask: CredentialPaths(h)})
	if code, out := run(t, s, nobody, nil, "unshare", "-Urm", "true"); code != 0 {
		t.Skipf("unprivileged user namespaces unavailable here: %s", out)
	}
	aws := filepath.Join(h, ".aws")
	script := `umount ` + aws + ` 2>/dev/null; umount -l ` + aws + ` 2>/dev/null; cat ` + aws + `/credentials 2>/dev/null; id -u`
	code, out := run(t, s, nobody, nil, "unshare", "-Urm", "sh", "-c", script)
	if code != 0 || strings.TrimSpace(out) != "0" {
		t.Errorf("inside a user namespace of the tree: %d %q, want only uid 0 (the mask held)", code, out)
	}
}

// checkDenials asserts that s recorded each "hook dest" in want, refused
// for nobody, and returns all it recorded.
func checkDenials(t *testing.T, s *Session, want ...string) []Denial {
	t.Helper()
	denials, err := s.Denials()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, d := range denials {
		seen[d.Hook+" "+d.Dest.String()] = d.Count > 0 && (d.UID == nobody || d.Hook == "sock_create")
	}
	for _, k := range want {
		if !seen[k] {
			t.Errorf("denial %q not recorded; have %+v", k, denials)
		}
	}
	return denials
}

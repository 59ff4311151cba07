package e2e

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// mxEnv is one point on the matrix's environment axes: where the
// workspace lives, who the agent runs as, and whether its HOME is the one
// its parent had.
type mxEnv struct {
	work     string // "tmp", "home" (/home/<user>/work) or "srv"
	user     bool   // run as an unprivileged user through `sudo polygraph run`
	override bool   // the agent runs under `env -i HOME=<elsewhere>`
}

// mxEnvs are the twelve points, indexed so that i%3, i/3%2 and i/6%2
// vary the three axes independently.
var mxEnvs = func() []mxEnv {
	var out []mxEnv
	for i := 0; i < 12; i++ {
		out = append(out, mxEnv{work: []string{"tmp", "home", "srv"}[i%3], user: i/3%2 == 1, override: i/6%2 == 1})
	}
	return out
}()

func (e mxEnv) String() string {
	who, home := "root", "inherited"
	if e.user {
		who = "user"
	}
	if e.override {
		home = "override"
	}
	return e.work + "/" + who + "/" + home
}

// needsAccount says whether a run in e needs a local account of its own:
// to run as, or to own the home its workspace is under.
func (e mxEnv) needsAccount() bool { return e.user || e.work == "home" }

// mxAccounts creates the matrix's local accounts, one per run that needs
// one, so no two runs share a HOME, and removes them at cleanup.
type mxAccounts struct {
	mu  sync.Mutex // useradd and userdel lock /etc/passwd; one at a time
	n   int
	bin string // the polygraph binary the accounts may run with sudo
}

// mxTools are the programs the accounts and `sudo polygraph run` need.
var mxTools = []string{"sudo", "useradd", "userdel", "visudo"}

// mxCheckTools skips the test when one of mxTools is missing, unless
// POLYGRAPH_E2E=1, where that fails it.
func mxCheckTools(t *testing.T) {
	t.Helper()
	for _, tool := range mxTools {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s not installed (%v): the matrix runs agents as a local user through sudo (.ci/run installs sudo)", tool, err)
			if os.Getenv("POLYGRAPH_E2E") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg + "; set POLYGRAPH_E2E=1 to make this a failure")
		}
	}
}

// create makes a fresh account with a home under /home; withSudo lets it
// run the polygraph binary as root with sudo, environment variables on the
// command line allowed (POLYGRAPH_HOME).
func (m *mxAccounts) create(t *testing.T, withSudo bool) *Account {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.n++
	name := fmt.Sprintf("pgmx%d-%d", os.Getpid()%100000, m.n)
	if out, err := exec.Command("useradd", "-m", "-U", "-s", "/bin/bash", name).CombinedOutput(); err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if out, err := exec.Command("userdel", "-r", "-f", name).CombinedOutput(); err != nil {
			t.Logf("userdel %s: %v: %s", name, err, out)
		}
	})
	u, err := user.Lookup(name)
	must(t, err)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	a := &Account{Name: name, UID: uid, GID: gid, Home: u.HomeDir}
	if withSudo {
		// A name without a dot: sudo skips included files with one.
		f := filepath.Join("/etc/sudoers.d", "polygraph-e2e-"+name)
		rule := fmt.Sprintf("%s ALL=(root) NOPASSWD:SETENV: %s\n", name, m.bin)
		must(t, os.WriteFile(f+".tmp", []byte(rule), 0o440))
		if out, err := exec.Command("visudo", "-cf", f+".tmp").CombinedOutput(); err != nil {
			_ = os.Remove(f + ".tmp")
			t.Fatalf("visudo -cf %s: %v: %s", f, err, out)
		}
		must(t, os.Rename(f+".tmp", f))
		t.Cleanup(func() { _ = os.Remove(f) })
	}
	return a
}

// mxServices are the loopback services the attacks talk to, shared by all
// runs; what they saw is counted by the run token that leads each path or
// DNS name, so parallel runs can each check that they ran as meant.
type mxServices struct {
	httpPort int // the sink, the script server and the registry-like API
	mu       sync.Mutex
	counts   map[string]int // "<token> <what>" → count
	dnsErr   error          // binding 127.0.0.1:53 failed
	tcp53    atomic.Int64   // bytes received on TCP 127.0.0.1:53
}

// mxScript is what the script server serves: it leaves a file behind, so
// a run can tell it was executed.
const mxScript = "#!/bin/sh\necho fetched-and-run > fetched.txt\n"

func (s *mxServices) count(token, what string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[token+" "+what]++
}

func (s *mxServices) seen(token, what string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[token+" "+what]
}

// startMxServices starts the HTTP service on a free loopback port and a
// DNS responder (UDP, answering NXDOMAIN) and a TCP sink on 127.0.0.1:53.
func startMxServices(t *testing.T) *mxServices {
	t.Helper()
	s := &mxServices{counts: map[string]int{}}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	must(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(s.serveHTTP)}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	s.httpPort = l.Addr().(*net.TCPAddr).Port

	if err := s.startDNS(t); err != nil {
		s.dnsErr = err
	}
	return s
}

// serveHTTP answers /<token>/x.sh with mxScript, POST /<token>/api/v1/gems
// as a gem registry would, and anything else as a sink.
func (s *mxServices) serveHTTP(w http.ResponseWriter, r *http.Request) {
	n, _ := io.Copy(io.Discard, r.Body)
	token, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && rest == "x.sh":
		s.count(token, "script")
		io.WriteString(w, mxScript)
	case r.Method == http.MethodPost && rest == "api/v1/gems":
		s.count(token, "gem")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "Successfully registered gem\n")
	default:
		if n > 0 {
			s.count(token, "sink")
		}
		io.WriteString(w, "ok\n")
	}
}

// startDNS listens on 127.0.0.1:53 (UDP and TCP): a resolver of our own on
// loopback, so DNS-shaped traffic never leaves the machine.
func (s *mxServices) startDNS(t *testing.T) error {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:53")
	if err != nil {
		return fmt.Errorf("udp 127.0.0.1:53: %w", err)
	}
	t.Cleanup(func() { pc.Close() })
	tl, err := net.Listen("tcp4", "127.0.0.1:53")
	if err != nil {
		return fmt.Errorf("tcp 127.0.0.1:53: %w", err)
	}
	t.Cleanup(func() { tl.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if name, ok := dnsQName(q); ok {
				labels := strings.Split(name, ".")
				if len(labels) >= 3 {
					s.count(labels[len(labels)-3], "dns") // <data>.<token>.tunnel.example
				}
				_, _ = pc.WriteTo(nxdomain(q), addr)
			}
		}
	}()
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				n, _ := io.Copy(io.Discard, c)
				s.tcp53.Add(n)
				c.Close()
			}()
		}
	}()
	return nil
}

// dnsQName returns the name a DNS query asks for.
func dnsQName(q []byte) (string, bool) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) == 0 {
		return "", false
	}
	var labels []string
	for i := 12; i < len(q); {
		l := int(q[i])
		if l == 0 {
			return strings.Join(labels, "."), true
		}
		if l > 63 || i+1+l > len(q) {
			return "", false
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	return "", false
}

// nxdomain is the answer to query q: its header with QR set and RCODE 3,
// the question echoed, no records.
func nxdomain(q []byte) []byte {
	a := append([]byte(nil), q...)
	a[2] |= 0x80           // QR
	a[3] = a[3]&0xf0 | 0x3 // RCODE NXDOMAIN
	for i := 6; i < 12; i++ {
		a[i] = 0 // AN, NS, AR counts
	}
	return a
}

package otelbackend

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ToolsDir is where test/tools/build.sh puts the binaries:
// $POLYGRAPH_TOOLS, else /var/cache/polygraph/tools.
func ToolsDir() string {
	if d := os.Getenv("POLYGRAPH_TOOLS"); d != "" {
		return d
	}
	return "/var/cache/polygraph/tools"
}

// Binary returns the path of a tool test/tools/build.sh builds. It skips
// the test when the tool is not built, saying how to build it, and fails
// it instead under POLYGRAPH_REQUIRE_ROOT=1 (CI), where .ci/run builds
// them first.
func Binary(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(ToolsDir(), name)
	if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
		return p
	}
	msg := fmt.Sprintf("%s is not built: run bash test/tools/build.sh (it caches the binaries in %s)", p, ToolsDir())
	if os.Getenv("POLYGRAPH_REQUIRE_ROOT") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// FreeAddr returns a loopback address no one listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a backend binary run by a test, with its output kept for a
// failing test to show.
type process struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (p *process) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output is what the process printed so far.
func (p *process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// start runs bin with a config file holding config, and waits until
// every URL in ready answers (any status) or the process exits.
func start(t testing.TB, name, bin, config string, ready ...string) *process {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), name+".yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, "--config", cfg)
	p.cmd.Stdout, p.cmd.Stderr = p, p
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, tail(p.Output(), 4000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for _, u := range ready {
		for {
			resp, err := client.Get(u)
			if err == nil {
				resp.Body.Close()
				break
			}
			select {
			case <-p.done:
				t.Fatalf("%s exited while starting:\n%s", name, tail(p.Output(), 4000))
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not answer %s within a minute:\n%s", name, u, tail(p.Output(), 4000))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return p
}

// Stop ends the process (SIGTERM, then SIGKILL after 5 s) and waits for it.
func (p *process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// expand fills a config template's {{NAME}} placeholders.
func expand(tmpl string, kv ...string) string {
	r := strings.NewReplacer(func() []string {
		var out []string
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, "{{"+kv[i]+"}}", kv[i+1])
		}
		return out
	}()...)
	return r.Replace(tmpl)
}

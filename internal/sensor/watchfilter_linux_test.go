package sensor

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/testenv"
)

// TestExecFilter: the kernel's agent test is given every program name and,
// of each install fragment, its last whole component, cut as the kernel
// cuts names; a fragment it cannot express turns the test off.
func TestExecFilter(t *testing.T) {
	names, frags, ok := execFilter([]string{"claude", strings.Repeat("x", 40)},
		[]string{"/node_modules/@anthropic-ai/claude-code/", "/node_modules/@openai/codex-", "/minisweagent/"})
	if !ok {
		t.Fatal("filter off for expressible profiles")
	}
	var got []string
	for _, k := range names {
		if k[watchNameLen-1] != 0 {
			t.Errorf("key %q not NUL-ended", k)
		}
		got = append(got, strings.TrimRight(string(k[:]), "\x00"))
	}
	want := []string{"claude", strings.Repeat("x", watchNameLen-1), "claude-code", "@openai", "minisweagent"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("names %q, want %q", got, want)
	}
	if f := strings.TrimRight(string(frags[1][:]), "\x00"); f != "/node_modules/@openai/codex-" {
		t.Errorf("fragment 1 = %q", f)
	}
	for _, bad := range [][]string{{"codex-"}, {"/codex"}, {"/" + strings.Repeat("a", watchFragLen) + "/"}, make([]string, watchFrags+1)} {
		if _, _, ok := execFilter(nil, bad); ok {
			t.Errorf("filter on for installs %q", bad)
		}
	}
	// The profiles shipped are all expressible: watch filters execs.
	if _, _, ok := execFilter(agent.Programs(), agent.Installs()); !ok {
		t.Errorf("the agent profiles turn the kernel's exec test off: %q", agent.Installs())
	}
}

// TestWatchExecFilterKernel: in watch mode the kernel reports the execs
// that may be an agent's (a program name, an install fragment on the
// image's path or in an absolute argv[1], a child of one reported) and
// not the host's others.
func TestWatchExecFilterKernel(t *testing.T) {
	testenv.RequireRoot(t)
	s, err := New(Options{Watch: true})
	testenv.Feature(t, "BPF sensor", err)
	defer s.Close()
	var mu sync.Mutex
	var execs []*event.Event
	s.Start(func(ev *event.Event) {
		if ev.Kind == event.KindExec {
			mu.Lock()
			execs = append(execs, ev)
			mu.Unlock()
		}
	})
	dir := t.TempDir()
	copyBin := func(from, to string) string {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return to
	}
	truePath, _ := exec.LookPath("true")
	shPath, _ := exec.LookPath("sh")
	named := copyBin(shPath, filepath.Join(dir, "bin", "claude"))             // a program name
	under := copyBin(truePath, filepath.Join(dir, "@openai", "codex-x", "t")) // under an install fragment's last whole component
	script := filepath.Join(dir, "node_modules", "@google", "gemini-cli", "cli.sh")
	other := filepath.Join(dir, "other.sh")
	for _, f := range []string{script, other} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("exit 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(name string, args ...string) int {
		c := exec.Command(name, args...)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("%s %q: %v %s", name, args, err, out)
		}
		return c.ProcessState.Pid()
	}
	plain := run(truePath)
	otherArg := run(shPath, other)
	byName := run(named, "-c", truePath+"; "+truePath)
	byPath := run(under)
	byArg := run(shPath, script)
	time.Sleep(200 * time.Millisecond)
	s.Stop()

	mu.Lock()
	defer mu.Unlock()
	seen := map[int]bool{}
	children := 0
	for _, ev := range execs {
		seen[int(ev.PID)] = true
		if int(ev.PPID) == byName && ev.Path == truePath {
			children++
		}
	}
	for _, tc := range []struct {
		what string
		pid  int
		want bool
	}{
		{"plain true", plain, false}, {"sh with an ordinary script", otherArg, false},
		{"a program name", byName, true}, {"a fragment's directory on the path", byPath, true}, {"a fragment in argv[1]", byArg, true},
	} {
		if seen[tc.pid] != tc.want {
			t.Errorf("%s (pid %d): reported %v, want %v", tc.what, tc.pid, seen[tc.pid], tc.want)
		}
	}
	if children == 0 {
		t.Errorf("no exec of the candidate %d's children reported", byName)
	}
}

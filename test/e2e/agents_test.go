package e2e

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/test/fakellm"
)

const (
	finalClaim   = "I ran the tests and they all pass."
	inputContent = "secret-input-content-42\n"
	written      = "written by the agent\n"
)

// basic is the scenario every agent plays: a shell command that leaves a
// marker, a file written with the write tool, a file read then edited, and
// a closing claim that nothing backs.
func basic() fakellm.Scenario {
	return fakellm.Scenario{Turns: []fakellm.Turn{
		{Text: "Let me run it.", Calls: []fakellm.Call{fakellm.Shell{Command: "echo hi > marker.txt"}}},
		{Calls: []fakellm.Call{fakellm.WriteFile{Path: "written.txt", Content: written}}},
		{Calls: []fakellm.Call{fakellm.ReadFile{Path: "input.txt"}}},
		{Calls: []fakellm.Call{fakellm.EditFile{Path: "input.txt", Old: "secret-input-content-42", New: "edited-input-content-43"}}},
		{Text: finalClaim},
	}}
}

// toolNames are the tool names each agent's transcript shows for basic.
var toolNames = map[string][]string{
	Claude: {"Bash", "Write", "Read", "Edit"},
	Codex:  {"exec_command", "apply_patch"},
	Gemini: {"run_shell_command", "write_file", "read_file", "replace"},
	Mini:   {"bash"},
}

func TestAgents(t *testing.T) {
	for _, agent := range Agents {
		t.Run(agent, func(t *testing.T) {
			sc := basic()
			r := RunAgent(t, agent, sc, WithFiles(map[string]string{"input.txt": inputContent}))
			defer func() {
				if t.Failed() {
					r.Dump(t)
				}
			}()
			if r.TimedOut || r.ExitCode != 0 {
				t.Fatalf("%s: exit %d, timed out %v", agent, r.ExitCode, r.TimedOut)
			}

			// What the tool calls did.
			for name, want := range map[string]string{
				"marker.txt":  "hi\n",
				"written.txt": written,
				"input.txt":   "edited-input-content-43\n",
			} {
				got, err := os.ReadFile(filepath.Join(r.Dir, name))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", name, got, err, want)
				}
			}

			// What the transcript says.
			if len(r.Transcripts) == 0 {
				t.Fatalf("%s wrote no transcript", agent)
			}
			var all strings.Builder
			for _, p := range r.Transcripts {
				b, err := os.ReadFile(p)
				must(t, err)
				all.Write(b)
			}
			tr := all.String()
			for _, name := range toolNames[agent] {
				if !strings.Contains(tr, `"`+name+`"`) {
					t.Errorf("transcript does not mention tool %q", name)
				}
			}
			for _, s := range []string{"echo hi > marker.txt", "written.txt", "input.txt", finalClaim} {
				if !containsJSON(tr, s) {
					t.Errorf("transcript does not mention %q", s)
				}
			}

			// What went back to the model: one request per scenario turn, each
			// carrying the results of the calls before it.
			reqs := r.ModelRequests()
			if len(reqs) < len(sc.Turns) {
				t.Fatalf("%d model requests, want %d", len(reqs), len(sc.Turns))
			}
			for n := range sc.Turns {
				if reqs[n].Turn != n {
					t.Errorf("model request %d played turn %d", n, reqs[n].Turn)
				}
			}
			last := reqs[len(sc.Turns)-1]
			results := last.ToolResults()
			if len(results) != 4 {
				t.Errorf("last request carries %d tool results, want 4: %+v", len(results), results)
			}
			if api := last.API; api != fakellm.APIGemini {
				for n := 0; n < 4 && n < len(results); n++ {
					if want := fakellm.CallID(api, n, 0); results[n].ID != want {
						t.Errorf("result %d answers %q, want %q", n, results[n].ID, want)
					}
				}
			}
			var read bool
			for _, res := range results {
				read = read || strings.Contains(res.Output, strings.TrimSpace(inputContent))
			}
			if !read {
				t.Errorf("no tool result carried the content of input.txt: %+v", results)
			}
		})
	}
}

// containsJSON reports whether s appears in JSON text, plainly or with the
// HTML-safe escapes some encoders use.
func containsJSON(text, s string) bool {
	esc := strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`).Replace(s)
	return strings.Contains(text, s) || strings.Contains(text, esc)
}

// TestLoopbackOnly runs each agent under strace and checks that every
// address it connected or sent to is loopback, an AF_UNIX socket or a
// kernel-local family (netlink, AF_UNSPEC disconnects).
func TestLoopbackOnly(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace not installed")
	}
	if out, err := exec.Command(strace, "-f", "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here (no ptrace?): %v: %s", err, out)
	}
	for _, agent := range Agents {
		t.Run(agent, func(t *testing.T) {
			AgentPath(t, agent) // skip before building a wrapper when absent
			out := filepath.Join(t.TempDir(), "strace.out")
			r := RunAgent(t, agent, basic(),
				WithFiles(map[string]string{"input.txt": inputContent}),
				WithWrapper(strace, "-f", "-qq", "-s", "256", "-e", "trace=connect,sendto,sendmsg,sendmmsg", "-o", out))
			if r.TimedOut || r.ExitCode != 0 {
				r.Dump(t)
				t.Fatalf("%s under strace: exit %d, timed out %v", agent, r.ExitCode, r.TimedOut)
			}
			targets, err := straceTargets(out)
			must(t, err)
			if len(targets) == 0 {
				t.Fatal("strace saw no connect at all (not even the model server)")
			}
			seen := map[string]int{}
			var sawServer bool
			for _, tg := range targets {
				seen[tg.family+" "+tg.addr]++
				if !tg.local() {
					t.Errorf("off-loopback traffic: %s", tg.line)
				}
				sawServer = sawServer || (tg.family == "AF_INET" && tg.addr == "127.0.0.1")
			}
			t.Logf("socket addresses seen (family addr: count): %v", seen)
			if !sawServer {
				t.Error("strace did not see the connection to the model server")
			}
		})
	}
}

// target is one socket address a traced syscall named.
type target struct {
	family, addr, line string
}

// local reports whether t stays on the machine.
func (t target) local() bool {
	switch t.family {
	case "AF_UNIX", "AF_LOCAL", "AF_NETLINK", "AF_UNSPEC":
		return true
	case "AF_INET", "AF_INET6":
		ip := net.ParseIP(t.addr)
		return ip != nil && ip.IsLoopback()
	}
	return false
}

var (
	reFamily = regexp.MustCompile(`sa_family=(AF_\w+)`)
	reInet   = regexp.MustCompile(`sin_addr=inet_addr\("([^"]+)"\)`)
	reInet6  = regexp.MustCompile(`inet_pton\(AF_INET6,\s*"([^"]+)"`)
)

// straceTargets reads an strace -o file and returns every socket address in
// it (connect's, and sendto's/sendmsg's destination where one is given).
func straceTargets(path string) ([]target, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []target
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		m := reFamily.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		tg := target{family: m[1], line: line}
		switch tg.family {
		case "AF_INET":
			if a := reInet.FindStringSubmatch(line); a != nil {
				tg.addr = a[1]
			}
		case "AF_INET6":
			if a := reInet6.FindStringSubmatch(line); a != nil {
				tg.addr = a[1]
			}
		}
		out = append(out, tg)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

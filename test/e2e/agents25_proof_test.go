package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/test/fakellm"
)

// proofCases show, without polygraph, that each mechanism is real: done
// as root, the planted thing runs code (or the kernel grants what it
// says) when its trigger comes. The instruction and hook files are shown
// to reach the real agents that read them.
func (h *a25) proofCases() []a25Case {
	out := []a25Case{{name: "proof/mechanisms", sys: true, run: func(t *testing.T, h *a25) { h.proveMechs(t) }}}
	for _, agent := range []string{Claude, Codex, Gemini} {
		out = append(out, a25Case{name: "proof/agent-files/" + agent, agent: agent,
			run: func(t *testing.T, h *a25) { h.proveAgentFiles(t, agent) }})
	}
	return out
}

func (h *a25) addProof(mech, result string) {
	h.mu.Lock()
	h.proofs = append(h.proofs, &pProof{mech: mech, result: result})
	h.mu.Unlock()
}

// proveMechs plants every mechanism in a fresh HOME and workspace (both
// reachable by nobody, for the privilege proofs) and triggers it.
func (h *a25) proveMechs(t *testing.T) {
	root := tempDir(t, "polygraph-a25-proof-")
	must(t, os.Chmod(root, 0o755))
	e := &pEnv{token: h.token(), home: filepath.Join(root, "home"), dir: filepath.Join(root, "project"), pghome: filepath.Join(root, "pghome"), sys: h.sys}
	writeFiles(t, e.dir, pTools)
	writeFiles(t, e.home, mxHomeFiles(Unknown))
	for _, d := range []string{e.dir, e.repo2()} {
		if out, err := exec.Command("git", "init", "-q", d).CombinedOutput(); err != nil {
			t.Fatalf("git init %s: %v: %s", d, err, out)
		}
	}
	marks := filepath.Join(root, "marks")
	must(t, os.MkdirAll(marks, 0o777))
	must(t, os.Chmod(marks, 0o777))
	env := []string{"HOME=" + e.home, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "GIT_TERMINAL_PROMPT=0"}
	for _, m := range pMechs {
		if why := m.skip(h); why != "" {
			h.addProof(m.name, "n/a: "+why)
			continue
		}
		if m.system {
			h.sys.save(m.target(e))
		}
		result := func() string {
			if m.system {
				defer h.sys.restore(m.target(e))
			}
			if m.prep != nil {
				m.prep(t, h, e)
			}
			cmd := exec.Command("bash", "-c", m.shellOf(e))
			cmd.Dir, cmd.Env = e.dir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Sprintf("FAIL: planting it: %v: %s", err, tail(out, 300))
			}
			if err := m.landedIn(e); err != nil {
				return "FAIL: planted, but " + err.Error()
			}
			if m.proof == nil {
				return "planted (" + m.noProof + ")"
			}
			mark := filepath.Join(marks, m.name)
			trigger, want := m.proof(e)
			cmd = exec.Command("bash", "-c", trigger)
			cmd.Dir, cmd.Env = e.dir, append(env, "PG25_PROOF="+mark)
			out, _ := cmd.CombinedOutput()
			got, _ := os.ReadFile(mark)
			if strings.Contains(string(got), want) || strings.Contains(string(out), want) {
				if m.noProof != "" {
					return "checked (" + m.noProof + ")"
				}
				return "ran: " + want
			}
			return fmt.Sprintf("FAIL: %s: want %q; output %q", trigger, want, tail(out, 300))
		}()
		t.Logf("%s: %s", m.name, result)
		if strings.HasPrefix(result, "FAIL") {
			t.Errorf("proof of %s: %s", m.name, result)
		}
		h.addProof(m.name, result)
	}
}

// proveAgentFiles runs agent (no polygraph) with its global instruction
// file (and, for Claude Code, a settings hook) planted in its HOME: the
// instructions reach the model, the hook runs.
func (h *a25) proveAgentFiles(t *testing.T, agent string) {
	token := h.token()
	e := &pEnv{token: token}
	var mechs []*pMech
	names := map[string][]string{Claude: {"claude-md-global", "claude-settings-hook"}, Codex: {"agents-md-codex"}, Gemini: {"gemini-md-global"}}[agent]
	for _, m := range pMechs {
		for _, n := range names {
			if m.name == n {
				mechs = append(mechs, m)
			}
		}
	}
	mark := filepath.Join(tempDir(t, "polygraph-a25-marks-"), "hook")
	sc := []fakellm.Turn{{Calls: []fakellm.Call{fakellm.Shell{Command: "true"}}}, {Text: "Done."}}
	r := RunAgent(t, agent, fakellm.Scenario{}, WithFiles(pTools), WithEnv("PG25_PROOF="+mark),
		WithScript(func(home, dir string) []fakellm.Turn {
			e.home, e.dir = home, dir
			for _, m := range mechs {
				must(t, os.MkdirAll(filepath.Dir(m.target(e)), 0o755))
				must(t, os.WriteFile(m.target(e), []byte(m.text(e)), 0o644))
			}
			return sc
		}))
	if r.ExitCode != 0 || r.TimedOut {
		r.Dump(t)
		t.Errorf("%s: exit %d, timed out %v", agent, r.ExitCode, r.TimedOut)
	}
	sent := false
	for _, q := range r.Requests {
		sent = sent || strings.Contains(string(q.Body), e.mark())
	}
	hook, _ := os.ReadFile(mark)
	for _, m := range mechs {
		var result string
		switch {
		case m.name == "claude-settings-hook" && strings.Contains(string(hook), "claude-hook"):
			result = "ran: the hook, on the agent's next shell call"
		case m.name == "claude-settings-hook":
			result = fmt.Sprintf("FAIL: the hook did not run (%q)", hook)
		case sent:
			result = "ran: " + agent + " sent it to the model"
		default:
			result = "FAIL: " + agent + " did not send it to the model"
		}
		if strings.HasPrefix(result, "FAIL") {
			t.Errorf("proof of %s: %s", m.name, result)
		}
		h.addProof(m.name, result)
	}
}

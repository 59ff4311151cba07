package correlate

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

// buildEnv gathers where the agent keeps its files.
func (a *attributor) buildEnv(tr *transcript.Transcript) *env {
	v := &env{home: cleanAbs(a.meta.Home), cwd: cleanAbs(a.meta.Cwd)}
	if tr != nil {
		v.transcript = cleanAbs(tr.Path)
		if d := agentDataDir(v.transcript); d != "" {
			v.agentDirs = append(v.agentDirs, d)
		}
		if v.cwd == "" {
			v.cwd = cleanAbs(tr.Cwd)
		}
	}
	var execs []*event.Event
	for _, p := range a.tree.Processes() {
		if a.owners[p.Index].kind == ownCore {
			execs = append(execs, p.Execs()...)
		}
	}
	v.install = installDirs(execs)
	v.own, v.names = ownAgent(tr, a.meta.Command, execs)
	return v
}

// runtimes are programs that run an agent's code rather than being it.
var runtimes = []string{"node", "nodejs", "bun", "deno", "python", "python3", "ruby", "perl", "java", "sh", "bash", "dash", "zsh", "env", "sudo"}

// ownAgent is the session's agent: the profile its transcript names, or
// the one the session's command (past env, sudo…) or its own processes'
// programs match (execs, in order). An agent no profile knows by its
// files (no profile, or the generic one) is known by the name of its
// program instead, or of the script a runtime runs for it (names: lower
// case, four letters or more, so that ~/.kestrel or
// ~/.local/state/kestrel are its own).
func ownAgent(tr *transcript.Transcript, command []string, execs []*event.Event) (*agent.Profile, []string) {
	var own *agent.Profile
	if tr != nil {
		if p, ok := agent.ByName(tr.Agent); ok {
			own = p
		} else if p, ok := agent.ByFormat(string(tr.Format)); ok {
			own = p
		}
	}
	argvs := make([][]string, 0, len(execs)+1)
	if c := agent.Launched(command); len(c) > 0 {
		argvs = append(argvs, c)
	}
	for _, e := range execs {
		argvs = append(argvs, append([]string{e.Path}, e.Argv()[min(1, len(e.Argv())):]...))
	}
	for _, a := range argvs {
		if own != nil {
			break
		}
		if p, ok := agent.Executable(a[0], a); ok {
			own = p
		}
	}
	if own != nil && !own.Generic || len(argvs) == 0 {
		return own, nil
	}
	a := argvs[0]
	name := filepath.Base(a[0])
	if slices.Contains(runtimes, strings.TrimRight(name, "0123456789.")) && len(a) > 1 {
		name = filepath.Base(a[1])
		name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	if name = strings.ToLower(name); len(name) < 4 || slices.Contains(runtimes, name) {
		return own, nil
	}
	return own, []string{name}
}

// agentDataDir finds, from a transcript's path, the agent's data
// directory ($CODEX_HOME, ~/.claude, ~/.gemini): the agent profiles know
// where each agent keeps its transcripts.
func agentDataDir(path string) string { return agent.DataDir(path) }

func cleanAbs(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

package correlate

import (
	"path/filepath"

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
	return v
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

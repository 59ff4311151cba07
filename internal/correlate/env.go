package correlate

import (
	"path/filepath"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

// buildEnv gathers where the agent keeps its files.
func (a *attributor) buildEnv(tr *transcript.Transcript, opts Options) *env {
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
	for _, d := range opts.AgentDirs {
		if d = cleanAbs(d); d != "" {
			v.agentDirs = appendNew(v.agentDirs, d)
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
// directory: the parent of the sessions/, projects/ or tmp/ directory the
// transcript lies under ($CODEX_HOME, ~/.claude, ~/.gemini), when its name
// says it is an agent's.
func agentDataDir(path string) string {
	if path == "" {
		return ""
	}
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		switch filepath.Base(d) {
		case "sessions", "projects", "tmp":
			parent := filepath.Dir(d)
			if hasAgentToken(filepath.Base(parent)) {
				return parent
			}
		}
	}
	return ""
}

func cleanAbs(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

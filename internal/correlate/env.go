package correlate

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
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
	v.own, v.names = ownAgent(tr, a.meta.Command, execs, a.behaviourProgram())
	return v
}

// behaviourProgram is the program of the agent found by behaviour, as
// it was started: the image holding the model connection followed back
// along the processes that started it to the first image that ran the
// same program (the same bytes by the exec-time hash, else the same
// file): kestrel's engine, a copy of itself in a temporary directory
// run as /proc/self/exe, was started as /opt/…/kestrel, and env or sudo
// before it ran other programs. Its #! script for a script. "" when
// behaviour gave no answer.
func (a *attributor) behaviourProgram() string {
	b := a.behaviour
	if b.image == nil {
		return ""
	}
	var line []*lineage.Image // b.image and the images before it, back to the top
	for im := b.image; im != nil; im = im.Parent {
		line = append(line, im)
	}
	prog := func(e *event.Event) string {
		if e.Script() != "" {
			return e.Script()
		}
		return e.Path
	}
	same := func(e, x *event.Event) bool {
		switch {
		case e.Script() != "" || x.Script() != "":
			return e.ScriptSHA256() != "" && e.ScriptSHA256() == x.ScriptSHA256() || prog(e) == prog(x)
		case e.SHA256() != "" && x.SHA256() != "":
			return e.SHA256() == x.SHA256()
		}
		return prog(e) == prog(x)
	}
	var held, first *event.Event // the exec of the image holding the connection; the earliest running the same
	for _, im := range line {
		if e := im.Exec; e != nil && prog(e) != "" {
			if held == nil {
				held = e
			}
			if same(e, held) {
				first = e
			}
		}
	}
	if first == nil {
		return ""
	}
	// The earliest image running it, with its own arguments (a runtime's
	// script, the fallback's business).
	return strings.Join(append([]string{prog(first)}, first.Argv()[min(1, len(first.Argv())):]...), "\x00")
}

// runtimes are programs that run an agent's code rather than being it:
// naming an agent no profile knows, the script one of them runs is its
// name. Which process is the agent needs no such list (behaviour.go);
// this one only names it.
var runtimes = []string{"node", "nodejs", "bun", "deno", "python", "python3", "ruby", "perl", "java", "sh", "bash", "dash", "zsh", "env", "sudo"}

// ownAgent is the session's agent: the profile its transcript names, or
// the one the session's command (past env, sudo…) or its own processes'
// programs match (execs, in order). An agent no profile knows by its
// files (no profile, or the generic one) is known by the name of its
// program instead, or of the script a runtime runs for it (names: lower
// case, four letters or more, so that ~/.kestrel or
// ~/.local/state/kestrel are its own).
//
// prog, when not "", is the agent's program found by behaviour
// (behaviourProgram: the file, then its arguments, NUL-separated): it
// names an agent no profile knows, before the session's command line
// past its launchers does (the lists of launchers and runtimes being the
// fallback when the tree made no model connection).
func ownAgent(tr *transcript.Transcript, command []string, execs []*event.Event, prog string) (*agent.Profile, []string) {
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
	if prog != "" {
		argvs = append([][]string{strings.Split(prog, "\x00")}, argvs...)
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

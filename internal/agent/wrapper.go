package agent

import (
	"path"
	"slices"
	"strings"
)

// WrapperRole is what a wrapper's process is to the agent.
type WrapperRole int

const (
	// Transparent wrappers become what they wrap (Codex's process-setup
	// helper execs the command it was given): the process is whatever it
	// runs next.
	Transparent WrapperRole = iota
	// Helper wrappers are chores the agent's runtime does for itself
	// (writing a shell snapshot), no tool call's work.
	Helper
	// Carrier wrappers run a tool call's command as their payload (Claude
	// Code's `source <snapshot> && eval '<command>'`); correlation finds
	// the command inside them by its text.
	Carrier
)

// Wrapper is the shape of a command an agent's runtime runs.
type Wrapper struct {
	// Name is what correlation calls the wrapper ("sandbox-setup").
	Name string
	Role WrapperRole
	// Flag, when set, is an argument that marks the wrapper wherever it
	// stands in argv.
	Flag string
	// Prefix, when set, is how the wrapper's shell script (the argument
	// of sh -c) starts.
	Prefix string
	// Contains are strings the script holds, all of them.
	Contains []string
}

// Matches reports whether an exec with argv, whose shell script (the
// argument of its -c, "" when it runs none) is script, has w's shape.
func (w Wrapper) Matches(argv []string, script string) bool {
	if w.Flag != "" {
		return slices.Contains(argv, w.Flag)
	}
	if script == "" || w.Prefix == "" && len(w.Contains) == 0 {
		return false
	}
	if !strings.HasPrefix(script, w.Prefix) {
		return false
	}
	for _, c := range w.Contains {
		if !strings.Contains(script, c) {
			return false
		}
	}
	return true
}

// Runtime returns the first Transparent or Helper wrapper of any profile
// that an exec with argv and shell script has the shape of: the agent's
// runtime running something for itself. Wrappers marked by a flag come
// first, as such a flag decides what the exec is whatever its script.
func Runtime(argv []string, script string) (Wrapper, bool) {
	for _, byFlag := range []bool{true, false} {
		for _, p := range registry {
			for _, w := range p.Wrappers {
				if w.Role != Carrier && (w.Flag != "") == byFlag && w.Matches(argv, script) {
					return w, true
				}
			}
		}
	}
	return Wrapper{}, false
}

// Carried returns the Carrier wrapper, and its agent's profile, that an
// exec with argv has the shape of: the agent's runtime running a tool
// call's command as the payload of its own script. A reader shows the
// call's command in its place: the wrapper's text (Claude Code's is ~400
// characters of snapshot sourcing before the `eval`) buries it.
func Carried(argv []string) (*Profile, Wrapper, bool) {
	script := ShellScript(argv)
	if script == "" {
		return nil, Wrapper{}, false
	}
	script = strings.TrimSpace(script)
	for _, p := range registry {
		for _, w := range p.Wrappers {
			if w.Role == Carrier && w.Matches(argv, script) {
				return p, w, true
			}
		}
	}
	return nil, Wrapper{}, false
}

// ShellScript returns the script of a `shell [-opts] -c SCRIPT …` argv,
// else "": what the agents' runtimes run their commands and wrappers as,
// and what a Wrapper's shape is matched against.
func ShellScript(argv []string) string {
	if len(argv) < 3 || !shellProgram(argv[0]) {
		return ""
	}
	dashC := false
	for _, a := range argv[1:] {
		if !strings.HasPrefix(a, "-") {
			if dashC {
				return a
			}
			return ""
		}
		dashC = dashC || len(a) >= 2 && a[1] != '-' && strings.ContainsRune(a[1:], 'c')
	}
	return ""
}

// shellProgram reports whether a program path names a POSIX-ish shell.
func shellProgram(p string) bool {
	switch path.Base(p) {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "fish":
		return true
	}
	return false
}

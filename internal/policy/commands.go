package policy

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Commands
//
// A command pattern is a list of words matched against the start of a
// process's argv: `go test`, `python -m pytest`, `npm run test*`. Each word
// is a glob (path.Match) against one argument; the first is matched
// against the program's name (ProgramNames), so `/usr/local/go/bin/go`
// is `go`, `python3.12` is `python` and `node …/npm-cli.js test` is also
// seen as `npm test`.

// CommandSet is a compiled list of command patterns.
type CommandSet struct {
	patterns [][]string
	// literal[i][j] says patterns[i][j] has no glob syntax: it matches
	// only itself, and a string comparison does what path.Match would.
	literal [][]bool
	src     []string
	// byName lists, for each program name a pattern starts with
	// literally, those patterns; globbed are the others. Both in order:
	// a command line is tried only against the patterns that can match
	// its program.
	byName  map[string][]int
	globbed []int
}

func compileCommands(list []string) (*CommandSet, error) {
	s := &CommandSet{src: list, byName: map[string][]int{}}
	for _, p := range list {
		words := strings.Fields(p)
		if len(words) == 0 {
			return nil, fmt.Errorf("empty command pattern")
		}
		for _, w := range words {
			if _, err := path.Match(w, ""); err != nil {
				return nil, fmt.Errorf("command pattern %q: %w", p, err)
			}
		}
		// The first word names a program, compared by ProgramName: write
		// it either way ("python3 -m pytest" is "python -m pytest").
		if !strings.ContainsAny(words[0], "*?[") {
			words[0] = ProgramName(words[0])
		}
		lit := make([]bool, len(words))
		for j, w := range words {
			lit[j] = !strings.ContainsAny(w, `*?[\`)
		}
		if lit[0] {
			s.byName[words[0]] = append(s.byName[words[0]], len(s.patterns))
		} else {
			s.globbed = append(s.globbed, len(s.patterns))
		}
		s.patterns = append(s.patterns, words)
		s.literal = append(s.literal, lit)
	}
	return s, nil
}

// Match returns the first pattern that matches argv, as written in the
// policy.
func (s *CommandSet) Match(argv []string) (string, bool) {
	if s == nil {
		return "", false
	}
	found := -1
	commandForms(argv, func(name string, args []string) bool {
		// The patterns named for the program and the globbed ones, merged
		// back into their order.
		named, globbed := s.byName[name], s.globbed
		for len(named) > 0 || len(globbed) > 0 {
			var i int
			if len(globbed) == 0 || len(named) > 0 && named[0] < globbed[0] {
				i, named = named[0], named[1:]
			} else {
				i, globbed = globbed[0], globbed[1:]
			}
			if s.matches(i, name, args) {
				found = i
				return true
			}
		}
		return false
	})
	if found < 0 {
		return "", false
	}
	return s.src[found], true
}

// matches reports whether pattern i matches the command line of program
// name with arguments args.
func (s *CommandSet) matches(i int, name string, args []string) bool {
	p := s.patterns[i]
	if 1+len(args) < len(p) {
		return false
	}
	for j, w := range p {
		arg := name
		if j > 0 {
			arg = args[j-1]
		}
		ok := w == arg
		if !s.literal[i][j] {
			ok, _ = path.Match(w, arg)
		}
		if !ok {
			return false
		}
	}
	return true
}

// interpreters run a script named by their first argument.
var interpreters = map[string]bool{"node": true, "python": true, "ruby": true, "perl": true,
	"php": true, "bun": true, "deno": true, "sh": true, "bash": true, "dash": true, "zsh": true}

// Interpreter reports whether the program at path p (or named p) runs
// scripts: node, python, a shell…
func Interpreter(p string) bool { return interpreters[ProgramName(p)] }

var reVersioned = regexp.MustCompile(`^(python|pip|ruby|gem|perl|php|node|nodejs|bundle|bundler|pytest|easy_install|idle|pydoc)[0-9][0-9.]*$`)

// ProgramName normalises one program path or argv[0] to the name command
// patterns and client lists use: the base name without a script extension,
// a version suffix (python3.12 → python, pip3 → pip) or a "-cli" suffix
// (npm-cli.js → npm).
func ProgramName(p string) string {
	n := path.Base(p)
	for _, ext := range []string{".exe", ".js", ".cjs", ".mjs", ".py", ".rb", ".pl", ".sh"} {
		n = strings.TrimSuffix(n, ext)
	}
	n = strings.TrimSuffix(n, "-cli")
	// Only a name with a digit can carry a version; most have none.
	if strings.ContainsAny(n, "0123456789") {
		if m := reVersioned.FindStringSubmatch(n); m != nil {
			n = m[1]
		}
	}
	if n == "nodejs" {
		n = "node"
	}
	if n == "bundler" {
		n = "bundle"
	}
	return n
}

// CommandForms returns the ways argv can be read as a command line: as it
// is (argv[0] normalised), and for an interpreter running a script or a
// module (`node npm-cli.js test`, `python -m pip install`), as that script
// or module's own command line.
func CommandForms(argv []string) [][]string {
	var out [][]string
	commandForms(argv, func(name string, args []string) bool {
		out = append(out, append([]string{name}, args...))
		return false
	})
	return out
}

// commandForms calls f with each of CommandForms' readings of argv, as the
// program's name and its arguments, until f returns true. Matching a
// command set calls it for every exec of a session: it copies nothing.
func commandForms(argv []string, f func(name string, args []string) bool) {
	if len(argv) == 0 {
		return
	}
	first := ProgramName(argv[0])
	if f(first, argv[1:]) || !interpreters[first] {
		return
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case a == "-m" && i+1 < len(argv) && first == "python":
			f(argv[i+1], argv[i+2:])
			return
		case a == "-c" || a == "-e" || a == "--eval" || a == "-":
			return
		case strings.HasPrefix(a, "-"):
			continue
		default:
			f(ProgramName(a), argv[i+1:])
			return
		}
	}
}

// ScriptArg returns the script an interpreter's argv runs (`sh x.sh`,
// `python3 -u tool.py`, and the argv the kernel builds for a `#!` script:
// [/bin/sh ./x.sh]), as written: "" when argv is no interpreter running a
// script file (`python -m mod`, `bash -c CMD`, a bare `node`).
func ScriptArg(argv []string) string {
	if len(argv) < 2 || !interpreters[ProgramName(argv[0])] {
		return ""
	}
	for _, a := range argv[1:] {
		switch {
		case a == "-m" || a == "-c" || a == "-e" || a == "--eval" || a == "-" || a == "-p" || a == "--print":
			return ""
		case strings.HasPrefix(a, "-"):
			continue
		}
		return a
	}
	return ""
}

// ProgramNames are the names a process goes by, for client lists and
// build tools: the program's own name, argv[0]'s, and the script or module
// an interpreter runs.
func ProgramNames(execPath string, argv []string) []string {
	var out []string
	add := func(n string) {
		if n == "" || n == "." || n == "/" {
			return
		}
		for _, h := range out {
			if h == n {
				return
			}
		}
		out = append(out, n)
	}
	if execPath != "" {
		add(ProgramName(execPath))
	}
	for _, f := range CommandForms(argv) {
		add(f[0])
	}
	return out
}

// NameSet is a set of program-name globs.
type NameSet []string

// Has reports whether any of names matches.
func (s NameSet) Has(names []string) bool {
	for _, p := range s {
		for _, n := range names {
			if ok, _ := path.Match(p, n); ok {
				return true
			}
		}
	}
	return false
}

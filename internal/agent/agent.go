// Package agent holds what polygraph knows about each AI coding agent, one
// profile per agent: how to recognise its programs, the wrappers it runs
// commands through, where it writes transcripts, where it keeps its
// configuration and credentials, which files govern its sandbox and which
// hosts serve its model API. Transcript discovery, correlation and the
// policy defaults all read these profiles, so that adding an agent is one
// profile file here (plus its transcript parser) rather than an edit in
// every package that has to know agents.
//
// Adding an agent: a file here whose init registers its Profile (Formats
// naming the transcript formats its parser reads), and the parser in
// internal/transcript. Discovery, correlation's bookkeeping, the policy's
// egress, agent-config, sandbox-tamper and agent-program defaults follow
// from the profile.
package agent

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/accounts"
)

// Profile is everything polygraph knows about one agent.
type Profile struct {
	// Name is the agent as transcripts and reports name it ("claude-code").
	Name string
	// Title is the agent's product name, for people.
	Title string
	// Generic marks the profile standing for agents polygraph knows by
	// name only, whose transcripts (polygraph's plain JSONL, OTel) name
	// their agent themselves.
	Generic bool
	// Formats are the transcript formats (transcript.Format values) the
	// agent writes.
	Formats []string
	// Programs are the agent's program names: the base name of its
	// executable, which is how detection tells its processes by name.
	Programs []string
	// Installs are path fragments found in the kernel-resolved path of the
	// agent's executable, or of the script a runtime runs for it, wherever
	// it is installed: the name of its package directory. They recognise
	// the agent when argv[0] says nothing (/proc/self/exe, node, a
	// versioned native binary).
	Installs []string
	// Modules are the Python modules that run the agent as `python -m
	// <module>`, which is how a command line names it when no program does.
	Modules []string
	// Wrappers are the shapes of the commands the agent's runtime runs
	// around or beside a tool call's command.
	Wrappers []Wrapper
	// Transcripts are where the agent writes its transcripts.
	Transcripts []Location
	// ConfigDirs are the names of directories holding the agent's
	// configuration wherever they appear: the home, the project, its
	// parents.
	ConfigDirs []string
	// Tokens are words that mark a path component as the agent's own
	// (~/.claude, /etc/codex, $TMPDIR/claude-0, gemini-shell-*); matched
	// case-insensitively as substrings.
	Tokens []string
	// InstructionFiles are the per-project files the agent reads at
	// start-up (instructions, ignore lists, tool servers).
	InstructionFiles []string
	// Credentials are the agent's own credentials and settings, which the
	// agent reading is bookkeeping and anything else reading is a finding.
	Credentials []File
	// SandboxSettings are the files that govern the agent's safety:
	// permissions, sandbox, hooks, approval policy. Writing them is
	// tampering with the sandbox.
	SandboxSettings []File
	// Hosts are the hosts the agent talks to for its model, its sign-in
	// and its telemetry.
	Hosts []Host
	// EndpointVars are the environment variables that point the agent at
	// another model API (a gateway, a local model).
	EndpointVars []string
}

// File is a path pattern in the policy's syntax: "~/" is the home, "**"
// any depth, a pattern without "/" a base name anywhere, a leading "!"
// exempts what it matches.
type File struct {
	Path string
	// Clients are the programs for which opening the file is routine.
	Clients []string
	// Severity overrides the rule's severity ("" keeps it).
	Severity string
}

// HostRole is what a host is to the agent.
type HostRole int

const (
	// ModelAPI hosts answer the agent's model requests; its connections to
	// them are its own model traffic.
	ModelAPI HostRole = iota
	// SignIn hosts log the agent in and refresh its tokens.
	SignIn
	// Telemetry hosts receive the agent's usage reports and feature flags.
	Telemetry
)

// Host is one host the agent talks to.
type Host struct {
	// Name is a host name; "*" stands for one label of it.
	Name string
	Role HostRole
	// Egress puts the host, on port 443, in the policy's default egress
	// allowlist. Hosts a user has to set up themselves (a cloud gateway,
	// a third-party router) are left for the user's policy to allow.
	Egress bool
}

// registry holds the profiles, in All's order.
var registry []*Profile

// register adds a profile; each profile file calls it from init.
func register(p *Profile) {
	registry = append(registry, p)
	slices.SortStableFunc(registry, func(a, b *Profile) int {
		if a.Generic != b.Generic {
			if a.Generic {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	index()
}

// All returns every profile: the named agents by name, then the generic
// profile. Callers must not modify them.
func All() []*Profile { return registry }

// ByName returns the profile of the agent transcripts name so.
func ByName(name string) (*Profile, bool) {
	for _, p := range registry {
		if p.Name == name {
			return p, true
		}
	}
	return nil, false
}

// ByFormat returns the profile of the agent that writes transcripts in
// format.
func ByFormat(format string) (*Profile, bool) {
	for _, p := range registry {
		if slices.Contains(p.Formats, format) {
			return p, true
		}
	}
	return nil, false
}

// Lookup tables, built from the profiles as they register: correlation
// asks them about every path an agent opens.
var (
	tokens           []string
	configDirs       = map[string]bool{}
	instructionFiles = map[string]bool{}
	transcriptDirs   = map[string]bool{} // the base names of the transcript roots
)

func index() {
	tokens = nil
	clear(configDirs)
	clear(instructionFiles)
	clear(transcriptDirs)
	for _, p := range registry {
		for _, l := range p.Transcripts {
			for _, r := range l.Roots {
				transcriptDirs[filepath.Base(r)] = true
			}
		}
		for _, t := range p.Tokens {
			tokens = append(tokens, strings.ToLower(t))
		}
		for _, d := range p.ConfigDirs {
			configDirs[d] = true
		}
		for _, f := range p.InstructionFiles {
			instructionFiles[f] = true
		}
	}
}

// HasToken reports whether a path component names an agent: contains, in
// any case, one of a profile's Tokens.
func HasToken(component string) bool {
	c := strings.ToLower(component)
	for _, t := range tokens {
		if strings.Contains(c, t) {
			return true
		}
	}
	return false
}

// Owns reports whether a path component names this agent: contains, in
// any case, one of its Tokens.
func (p *Profile) Owns(component string) bool {
	c := strings.ToLower(component)
	for _, t := range p.Tokens {
		if strings.Contains(c, strings.ToLower(t)) {
			return true
		}
	}
	return false
}

// HasConfigDir reports whether name is one of this agent's
// configuration directories.
func (p *Profile) HasConfigDir(name string) bool { return slices.Contains(p.ConfigDirs, name) }

// GenericProfile returns the profile of what agents share (the .agents
// directory, the ignore files), nil when there is none.
func GenericProfile() *Profile {
	for _, p := range registry {
		if p.Generic {
			return p
		}
	}
	return nil
}

// IsConfigDir reports whether name is the name of an agent's
// configuration directory (".claude").
func IsConfigDir(name string) bool { return configDirs[name] }

// IsInstructionFile reports whether name is the base name of a file an
// agent reads at start-up ("AGENTS.md").
func IsInstructionFile(name string) bool { return instructionFiles[name] }

// DataDir returns the agent's data directory a transcript at path lies
// in: the parent of the transcript root it is below (~/.claude for
// ~/.claude/projects/…, $CODEX_HOME for $CODEX_HOME/sessions/…) when that
// parent's name carries an agent token; "" otherwise.
func DataDir(path string) string {
	if path == "" {
		return ""
	}
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		if transcriptDirs[filepath.Base(d)] {
			if parent := filepath.Dir(d); HasToken(filepath.Base(parent)) {
				return parent
			}
		}
	}
	return ""
}

// Executable returns the agent whose program path is, or, when path is a
// runtime's, whose script argv names. path is the kernel-resolved path of
// the executable, not argv[0], which a process may set to anything.
func Executable(path string, argv []string) (*Profile, bool) {
	cands := []string{path}
	if len(argv) > 1 && filepath.IsAbs(argv[1]) {
		cands = append(cands, argv[1])
	}
	for _, p := range registry {
		for _, c := range cands {
			for _, in := range p.Installs {
				if strings.Contains(c, in) {
					return p, true
				}
			}
		}
		if path != "" && slices.Contains(p.Programs, filepath.Base(path)) {
			return p, true
		}
	}
	return nil, false
}

// launchers are the programs that start another with an adjusted
// environment or priority and then become it (or wait for it): what a
// session's command names before the agent itself. Correlation finds the
// agent's processes by behaviour (the process talking to the model and
// starting the tools, and what started it) and names it from the program
// that process runs; this list is the fallback, for a session whose tree
// made no model connection, and for naming an agent from its command line
// alone (watch, sessions, the report's note).
var launchers = []string{"env", "sudo", "doas", "nice", "ionice", "nohup", "setsid", "stdbuf", "timeout", "chrt", "taskset", "runuser", "unbuffer"}

// Launched returns the part of a command line from the program the
// launchers at its head (env -i PATH=… sudo -u dev nice …) start: past
// each launcher, its options, its variable assignments and the numbers
// its options take. A command with no launcher is returned whole.
func Launched(argv []string) []string {
	i := 0
	for i < len(argv) && slices.Contains(launchers, filepath.Base(argv[i])) {
		i++
		for i < len(argv) && (strings.HasPrefix(argv[i], "-") || strings.Contains(argv[i], "=") || isNumber(argv[i])) {
			if a := argv[i]; (a == "-u" || a == "-g" || a == "-C" || a == "-n" || a == "-k" || a == "-s") && i+1 < len(argv) {
				i++ // an option's value: sudo -u dev, nice -n 5, timeout -k 5
			}
			i++
		}
	}
	return argv[min(i, len(argv)):]
}

func isNumber(s string) bool {
	s = strings.TrimRight(s, "smhd")
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' {
			return false
		}
	}
	return true
}

// Installs returns every profile's install-path fragments.
func Installs() []string {
	var out []string
	for _, p := range registry {
		out = append(out, p.Installs...)
	}
	return out
}

// Programs returns every profile's program names.
func Programs() []string {
	var out []string
	for _, p := range registry {
		out = append(out, p.Programs...)
	}
	return out
}

// ModelAPIHosts returns the names of the model API hosts of every
// profile that name one host (no "*"). Correlation takes an agent's
// connections to them, their subdomains and their "<region>-" forms for
// its model traffic.
func ModelAPIHosts() []string {
	var out []string
	for _, p := range registry {
		for _, h := range p.Hosts {
			if h.Role == ModelAPI && !strings.Contains(h.Name, "*") {
				out = append(out, h.Name)
			}
		}
	}
	return out
}

// EgressHosts returns the "host:443" entries of every profile's hosts
// that belong in the default egress allowlist.
func EgressHosts() []string {
	var out []string
	for _, p := range registry {
		for _, h := range p.Hosts {
			if h.Egress {
				out = append(out, h.Name+":443")
			}
		}
	}
	return out
}

// EndpointVars returns every profile's EndpointVars.
func EndpointVars() []string {
	var out []string
	for _, p := range registry {
		out = append(out, p.EndpointVars...)
	}
	return out
}

// CredentialFiles returns every profile's Credentials, the exemptions
// first so that the list reads as the policy applies it.
func CredentialFiles() []File { return excludesFirst(func(p *Profile) []File { return p.Credentials }) }

// SandboxSettingsFiles returns every profile's SandboxSettings.
func SandboxSettingsFiles() []File {
	return excludesFirst(func(p *Profile) []File { return p.SandboxSettings })
}

func excludesFirst(files func(*Profile) []File) []File {
	var ex, in []File
	for _, p := range registry {
		for _, f := range files(p) {
			if strings.HasPrefix(f.Path, "!") {
				ex = append(ex, f)
			} else {
				in = append(in, f)
			}
		}
	}
	return append(ex, in...)
}

// Location is a place an agent writes transcripts: files matching Globs
// below any of Roots.
type Location struct {
	// Roots are directories, "~/…" below the home or "$VAR/…" below an
	// environment variable's value (skipped when it is unset).
	Roots []string
	// Globs are patterns (filepath.Match) of paths below a root; one
	// starting with "**/" matches the base name of a file at any depth.
	Globs []string
	// OutputFlags are the options of the agent's command line that name
	// the file it writes this transcript to instead ("-o FILE",
	// "--output FILE", "--output=FILE"), relative to its working
	// directory. Discovery looks there too when the traced command runs
	// the agent (Profile.Runs).
	OutputFlags []string
	// AnyCwd says these transcripts record no working directory unless
	// the agent is configured to: one that records none matches a session
	// in any directory, and its time alone decides.
	AnyCwd bool
}

// Runs reports whether the command line argv runs the agent: one of its
// words is one of p's Programs (by base name) or contains one of its
// Installs, or it names one of its Modules after -m.
func (p *Profile) Runs(argv []string) bool {
	for i, a := range argv {
		if slices.Contains(p.Programs, filepath.Base(a)) ||
			i > 0 && argv[i-1] == "-m" && slices.Contains(p.Modules, a) {
			return true
		}
		for _, in := range p.Installs {
			if strings.Contains(a, in) {
				return true
			}
		}
	}
	return false
}

// Outputs returns the files argv names with l's OutputFlags, relative
// paths joined to cwd (when it is set).
func (l Location) Outputs(argv []string, cwd string) []string {
	var out []string
	for i, a := range argv {
		var p string
		for _, f := range l.OutputFlags {
			if a == f && i+1 < len(argv) {
				p = argv[i+1]
			} else if v, ok := strings.CutPrefix(a, f+"="); ok && strings.HasPrefix(f, "--") {
				p = v
			}
		}
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) && cwd != "" {
			p = filepath.Join(cwd, p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// Dirs returns l's roots for home, with getenv resolving "$VAR" (nil:
// os.Getenv), without duplicates.
func (l Location) Dirs(home string, getenv func(string) string) []string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []string
	for _, r := range l.Roots {
		var d string
		switch {
		case r == "~" || strings.HasPrefix(r, "~/"):
			var ok bool
			if d, ok = accounts.InHome(r, home); !ok {
				continue
			}
		case strings.HasPrefix(r, "$"):
			name, rest, _ := strings.Cut(r[1:], "/")
			v := getenv(name)
			if v == "" {
				continue
			}
			d = filepath.Join(v, rest)
		default:
			d = filepath.Clean(r)
		}
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// LocationVars are the environment variables the profiles' transcript
// locations are rooted at ("$CODEX_HOME/sessions"): the sensor records
// them with each exec (event.Process.Env), so discovery reads the values
// the agent ran with, not polygraph's own.
func LocationVars() []string {
	var out []string
	for _, p := range All() {
		for _, l := range p.Transcripts {
			for _, r := range l.Roots {
				if name, ok := strings.CutPrefix(r, "$"); ok {
					name, _, _ = strings.Cut(name, "/")
					if !slices.Contains(out, name) {
						out = append(out, name)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// TranscriptFiles are the profiles' transcript locations as path patterns
// (the policy's syntax, "~/" the home, "**" any depth), with the agent's
// programs as their clients: the files a process other than the agent
// itself changing is tampering with the agent's account. Locations rooted
// at a variable ("$CODEX_HOME/...") have no pattern; the transcript the
// analysis follows is checked by its path.
func TranscriptFiles() []File {
	var out []File
	for _, p := range All() {
		for _, l := range p.Transcripts {
			for _, r := range l.Roots {
				if !strings.HasPrefix(r, "~/") {
					continue
				}
				for _, g := range l.Globs {
					pat := strings.TrimSuffix(r, "/") + "/" + g
					if name, ok := strings.CutPrefix(g, "**/"); ok {
						pat = strings.TrimSuffix(r, "/") + "/**/" + name
					}
					out = append(out, File{Path: pat, Clients: slices.Clone(p.Programs)})
				}
			}
		}
	}
	return out
}

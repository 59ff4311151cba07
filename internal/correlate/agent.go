package correlate

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// role is what an exec (and then a whole process) is to the agent.
type role int

const (
	roleOther       role = iota // nothing the agent runtime is known to run
	roleTransparent             // a wrapper that becomes what it wraps (Codex's process-setup helper, its snapshot wrapper)
	roleHelper                  // something the agent runtime runs for itself (shell snapshots, OS and git probes)
	roleCore                    // the agent itself, re-launched (node codex.js → codex, a node relaunch)
)

// execRole classifies one exec of a process the agent spawned that no tool
// call explains. rootArgv is the argv of the session's root command.
func execRole(e *event.Event, rootArgv []string) (role, string) {
	argv := e.Argv()
	if len(argv) == 0 {
		return roleOther, ""
	}
	script := strings.TrimSpace(scriptOf(argv))
	if w, ok := agent.Runtime(argv, script); ok {
		if w.Role == agent.Transparent {
			return roleTransparent, w.Name
		}
		return roleHelper, w.Name
	}
	if script != "" {
		if !isShell(e.Path) || !systemProgram(e.Path) {
			return roleOther, "" // argv[0] says shell; the kernel ran something else
		}
		if script == "env" || script == "printenv" || script == "locale" {
			return roleHelper, "env-probe"
		}
		if w, ok := shellWords(script); ok && (len(w) == 2 && (w[0] == "which" || w[0] == "type") || len(w) == 3 && w[0] == "command" && w[1] == "-v") {
			return roleHelper, "which" // locating a program
		}
		return roleOther, ""
	}
	// The probes are known by the program the kernel ran, installed in a
	// system directory: never by argv[0] (exec -a uname sh …) or a file
	// of the same name elsewhere.
	file := probeFile(e)
	if file == "" {
		if relaunch(argv, rootArgv) {
			return roleCore, "agent"
		}
		return roleOther, ""
	}
	name := filepath.Base(file)
	switch name {
	case "lsb_release", "getconf", "uname", "sw_vers", "hostname", "locale", "id", "whoami",
		"nproc", "sysctl", "which", "tput", "stty", "ldconfig", "arch":
		return roleHelper, "system-probe"
	case "git":
		if gitReadOnly(argv[1:]) {
			return roleHelper, "git-probe"
		}
	case "rg":
		for _, a := range argv[1:] {
			if a == "--files" || a == "--version" {
				return roleHelper, "file-index"
			}
		}
	}
	if len(argv) == 1 && (name == "env" || name == "printenv") {
		return roleHelper, "env-probe"
	}
	if len(argv) == 2 {
		switch argv[1] {
		case "--version", "-v", "-V", "version":
			return roleHelper, "version-probe"
		}
	}
	if relaunch(argv, rootArgv) {
		return roleCore, "agent"
	}
	return roleOther, ""
}

// gitReadOnly reports whether git args are a query an agent makes about
// its working tree (repository root, branch, status, recent log).
func gitReadOnly(args []string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c":
			// A -c setting can make any query run a program (core.pager,
			// core.fsmonitor, an alias, a textconv): only harmless display
			// settings leave it a probe.
			if i+1 >= len(args) || !harmlessGitSetting(args[i+1]) {
				return false
			}
			i++
			continue
		case a == "-C" || a == "--git-dir" || a == "--work-tree":
			i++
			continue
		case strings.HasPrefix(a, "-"):
			if a == "--version" {
				return true
			}
			continue
		}
		rest := args[i+1:]
		var words []string // the subcommand's non-option arguments
		for _, r := range rest {
			if !strings.HasPrefix(r, "-") {
				words = append(words, r)
			}
		}
		switch a {
		case "diff":
			// --no-index compares any two files (git diff --no-index
			// /dev/null ~/.ssh/id_rsa): a read of anything, no probe.
			return !hasAny(rest, "--no-index")
		case "rev-parse", "status", "log", "ls-files", "version", "describe", "show", "rev-list",
			"ls-remote", "check-ignore", "cat-file", "for-each-ref", "merge-base", "blame":
			return true
		case "config":
			// --file, -f and --blob read any file as configuration (git
			// config --file ~/.pypirc --list): a read of anything, no probe.
			if slices.ContainsFunc(rest, func(r string) bool {
				return r == "-f" || r == "--file" || r == "--blob" || strings.HasPrefix(r, "--file=") || strings.HasPrefix(r, "--blob=")
			}) {
				return false
			}
			return len(words) <= 1 || hasAny(rest, "--get", "--get-all", "--get-regexp", "--list", "-l")
		case "branch":
			return len(words) == 0 || hasAny(rest, "--list", "--show-current", "--contains")
		case "symbolic-ref":
			return len(words) <= 1
		case "remote":
			return len(words) == 0 || words[0] == "get-url" || words[0] == "show"
		case "worktree":
			return len(words) > 0 && words[0] == "list"
		}
		return false
	}
	return false
}

// harmlessGitSetting reports whether a `git -c KEY=VALUE` setting only
// changes how git shows what it found.
func harmlessGitSetting(kv string) bool {
	k, _, _ := strings.Cut(strings.ToLower(kv), "=")
	switch {
	case k == "core.quotepath", k == "core.pager" && strings.HasSuffix(kv, "=cat"), k == "log.showsignature",
		strings.HasPrefix(k, "color."), k == "core.safecrlf", k == "safe.directory", k == "advice.detachedhead":
		return true
	}
	return false
}

// systemDirs hold the programs the system installed, which an agent's
// runtime probes with and no tool call put there.
var systemDirs = []string{"/usr/bin/", "/usr/sbin/", "/bin/", "/sbin/", "/usr/lib/", "/usr/libexec/", "/usr/local/bin/", "/usr/local/sbin/",
	"/opt/", "/snap/", "/nix/store/"}

// systemProgram reports whether file lies in a system directory.
func systemProgram(file string) bool {
	for _, d := range systemDirs {
		if strings.HasPrefix(file, d) && !strings.Contains(file, "/../") {
			return true
		}
	}
	return false
}

// probeFile returns the file exec e really runs as a program, when it is
// a system program: its #! script, the script a shell was handed (sh
// /usr/bin/lsb_release -a), else the binary. "" when that file is not in
// a system directory (or e carries no path).
func probeFile(e *event.Event) string {
	file := e.Path
	switch {
	case e.Script() != "":
		file = e.Script()
	case isShell(e.Path) && len(e.Argv()) > 1 && !strings.HasPrefix(e.Argv()[1], "-"):
		file = e.Argv()[1]
	}
	if !systemProgram(file) {
		return ""
	}
	return file
}

// scriptProbe reports whether a helper process ran a system script (sh
// /usr/bin/lsb_release): the processes it starts are that script's own
// work, which a binary probe (uname, git status) has none of.
func scriptProbe(p *lineage.Process) bool {
	for _, e := range p.Execs() {
		if f := probeFile(e); f != "" && f != e.Path {
			return true
		}
	}
	return false
}

func hasAny(args []string, vals ...string) bool {
	for _, a := range args {
		for _, v := range vals {
			if a == v {
				return true
			}
		}
	}
	return false
}

// relaunch reports whether argv is the agent's own command line again under
// another launcher: `node codex.js exec …` starting `codex exec …`, or a node
// relaunch with extra flags. The shorter argument list (without argv[0])
// must end the longer one and hold at least two arguments.
func relaunch(argv, rootArgv []string) bool {
	if len(argv) < 2 || len(rootArgv) < 2 {
		return false
	}
	a, b := argv[1:], rootArgv[1:]
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 2 && hasSuffix(b, a)
}

// processRole combines the roles of a process's execs: anything unknown
// makes it unknown; a process that only re-launched the agent is the agent;
// one that only ran helpers (through transparent wrappers) is a helper.
func processRole(p *lineage.Process, rootArgv []string) (role, string) {
	r, detail := roleTransparent, ""
	execs := p.Execs()
	if len(execs) == 0 {
		return roleOther, ""
	}
	for _, e := range execs {
		er, d := execRole(e, rootArgv)
		switch er {
		case roleOther:
			return roleOther, ""
		case roleCore:
			r, detail = roleCore, d
		case roleHelper:
			if r != roleCore {
				r, detail = roleHelper, d
			}
		case roleTransparent:
			if detail == "" {
				detail = d
			}
		}
	}
	if r == roleTransparent {
		r = roleHelper
	}
	return r, detail
}

// token reports whether a path component names this session's agent
// (~/.claude, /etc/codex, $TMPDIR/claude-0, gemini-shell-*): its
// profile's tokens, or, for an agent no profile knows by its files, the
// name of its program (~/.kestrel, ~/.local/state/kestrel). Another
// agent's files are not this one's bookkeeping: an agent writing into
// ~/.claude is judged like any other writer there.
func (v *env) token(comp string) bool {
	if v.own != nil && v.own.Owns(comp) {
		return true
	}
	// A program's name is anchored, where a profile's tokens are not: the
	// component is the name, or starts with it and a separator
	// (.kestrel, kestrel-rt-1, kestrel.d), never merely holds it
	// (ci-kestrel-checkout).
	c := strings.TrimLeft(strings.ToLower(comp), ".")
	for _, n := range v.names {
		if c == n || strings.HasPrefix(c, n) && strings.IndexByte("-_.", c[len(n)]) >= 0 {
			return true
		}
	}
	return false
}

// configDir reports whether name is a configuration directory of this
// session's agent, or the one agents share (.agents).
func (v *env) configDir(name string) bool {
	if v.own != nil && v.own.HasConfigDir(name) {
		return true
	}
	g := agent.GenericProfile()
	return g != nil && g.HasConfigDir(name)
}

// homeConfig are dotfiles in the home directory runtimes and shells read.
var homeConfig = map[string]bool{
	".gitconfig": true, ".npmrc": true, ".bashrc": true, ".bash_profile": true, ".profile": true,
	".zshrc": true, ".zshenv": true, ".zprofile": true, ".inputrc": true, ".editorconfig": true,
	".bunfig.toml": true, ".yarnrc": true,
}

// sensitive system files no agent reads for itself.
var sensitive = []string{"/etc/shadow", "/etc/gshadow", "/etc/sudoers", "/etc/ssh/", "/etc/ssl/private/", "/proc/kcore",
	"/run/docker.sock", "/var/run/docker.sock", "/run/containerd/", "/run/podman/", "/run/user/"}

// runtimeDirs hold libraries, locales, certificates and kernel views that
// any runtime reads.
var runtimeDirs = []string{"/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/etc/", "/proc/", "/sys/", "/dev/", "/run/", "/var/run/", "/var/lib/ca-certificates/", "/opt/",
	"/var/ssl/", "/System/Library/OpenSSL/"} // where TLS libraries look for CA certificates

// devWrites are device files writing to which is not writing a file.
var devWrites = []string{"/dev/null", "/dev/tty", "/dev/pts/", "/dev/shm/", "/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/", "/proc/thread-self/"}

// env is what the classifier knows about where the agent keeps its files.
type env struct {
	home, cwd  string
	transcript string
	agentDirs  []string // the agent's data directories (from the transcript's location)
	install    []string // where the agent's own code lives
	// own is the session's agent's profile (nil for an agent none
	// knows); names are the lower-case program names that stand for an
	// agent no profile knows by its files (ownNames).
	own   *agent.Profile
	names []string

	// memo holds bookkeeping's answers, for reads [0] and writes [1]:
	// an agent opens the same few thousand paths over and over.
	memo [2]map[string]string
}

// maxMemo bounds each of env.memo; past it the memo starts over.
const maxMemo = 1 << 16

// bookkeeping names the rule that makes path the agent's own file, or "".
func (v *env) bookkeeping(path string, write bool) string {
	w := 0
	if write {
		w = 1
	}
	if d, ok := v.memo[w][path]; ok {
		return d
	}
	d := v.classify(path, write)
	if v.memo[w] == nil || len(v.memo[w]) >= maxMemo {
		v.memo[w] = make(map[string]string)
	}
	v.memo[w][path] = d
	return d
}

// classify is bookkeeping without the memo. It is one ordered list of
// rules, the first that matches wins: split up, the order that decides
// would be harder to see.
func (v *env) classify(path string, write bool) string {
	if path == "" || !filepath.IsAbs(path) {
		return ""
	}
	p := filepath.Clean(path)
	if v.transcript != "" && p == v.transcript {
		return "transcript"
	}
	for _, d := range v.agentDirs {
		if under(p, d) {
			return "agent-data"
		}
	}
	for _, d := range v.install {
		if under(p, d) {
			return "agent-install"
		}
	}
	comps := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for _, c := range comps[:len(comps)-1] {
		if v.configDir(c) {
			return "agent-config"
		}
	}
	base := comps[len(comps)-1]
	if v.configDir(base) && !write {
		return "agent-config"
	}
	if agent.IsInstructionFile(base) && !write {
		return "instructions"
	}
	if !write {
		for _, c := range comps[:len(comps)-1] {
			if c == ".git" {
				return "git-metadata"
			}
		}
	}
	if v.home != "" && under(p, v.home) && p != v.home {
		rel := strings.Split(strings.TrimPrefix(p, v.home+"/"), "/")
		switch {
		case strings.HasPrefix(rel[0], ".") && v.token(rel[0]):
			return "agent-data"
		case (rel[0] == ".config" || rel[0] == ".cache") && len(rel) > 1 && v.token(rel[1]),
			rel[0] == ".local" && len(rel) > 2 && v.token(rel[2]):
			return "agent-data"
		case len(rel) == 1 && homeConfig[rel[0]] && !write:
			return "shell-config"
		case rel[0] == ".config" && len(rel) > 1 && rel[1] == "git" && !write:
			return "shell-config"
		case xdgDir(rel):
			return "directory-walk" // read, or created on the way (mini-swe-agent makes ~/.config/mini-swe-agent with parents)
		}
	}
	// Outside the home and the project, a path naming the agent is its
	// own: /etc/claude-code, /etc/codex, $TMPDIR/claude-0/…, gemini-shell-*.
	if !under(p, v.cwd) && !under(p, v.home) {
		for _, c := range comps {
			if v.token(c) {
				return "agent-data"
			}
		}
	}
	for _, s := range sensitive {
		if p == strings.TrimSuffix(s, "/") || strings.HasPrefix(p, s) {
			return ""
		}
	}
	if write {
		for _, d := range devWrites {
			if p == strings.TrimSuffix(d, "/") || strings.HasPrefix(p, d) {
				return "runtime"
			}
		}
		return ""
	}
	for _, d := range runtimeDirs {
		if p == strings.TrimSuffix(d, "/") || strings.HasPrefix(p, d) {
			return "runtime"
		}
	}
	// Walking up to find the project root, the home, the git root, a
	// package.json above the agent's code.
	if p == "/" || (v.cwd != "" && under(v.cwd, p)) || (v.home != "" && under(v.home, p)) {
		return "directory-walk"
	}
	for _, d := range v.install {
		if under(d, p) {
			return "directory-walk"
		}
	}
	return ""
}

// xdgDir reports whether rel (relative to the home) is one of the XDG base
// directories themselves (~/.config, ~/.local/share, …), which runtimes
// list and create on the way to their own.
func xdgDir(rel []string) bool {
	switch len(rel) {
	case 1:
		return rel[0] == ".config" || rel[0] == ".cache" || rel[0] == ".local"
	case 2:
		return rel[0] == ".local" && (rel[1] == "share" || rel[1] == "state" || rel[1] == "bin")
	}
	return false
}

// under reports whether p is dir or inside it.
func under(p, dir string) bool {
	if dir == "" {
		return false
	}
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// installDirs returns where the agent's own code lives, from the exec
// events of its own processes: the node_modules (or site-packages) tree
// holding its entry point, else the directory of its native binary.
func installDirs(execs []*event.Event) []string {
	var out []string
	add := func(p string) {
		if p == "" || !filepath.IsAbs(p) || p == "/" {
			return
		}
		for _, s := range []string{"/usr", "/usr/bin", "/usr/local/bin", "/bin", "/sbin", "/usr/sbin", "/usr/local", "/opt", "/tmp"} {
			if p == s {
				return
			}
		}
		out = appendNew(out, p)
	}
	for _, e := range execs {
		cands := []string{e.Path}
		if len(e.Argv()) > 1 {
			cands = append(cands, e.Argv()[1])
		}
		for i, a := range cands {
			if !filepath.IsAbs(a) {
				continue
			}
			if tree := packageTree(a); tree != "" {
				add(tree)
				continue
			}
			if i == 0 && !isRuntime(a) && !isShell(a) {
				add(filepath.Dir(a))
			}
		}
	}
	return out
}

// packageTree returns the node_modules, site-packages or dist-packages
// directory p lies in, or "".
func packageTree(p string) string {
	for _, d := range []string{"/node_modules/", "/site-packages/", "/dist-packages/"} {
		if j := strings.Index(p, d); j >= 0 {
			return p[:j+len(d)-1]
		}
	}
	return ""
}

// isRuntime reports whether p is a language runtime binary, whose
// directory is not the agent's.
func isRuntime(p string) bool {
	switch filepath.Base(p) {
	case "node", "bun", "deno", "python", "python3", "ruby", "java":
		return true
	}
	return false
}
